//! Loads and runs the patch corpus (`tests/patch_corpus/<case>/`): shared by
//! the corpus test and the `patch` bench.
//!
//! A case holds `reply.md`, the files before (`original.py`, which is
//! `app.py`, or a `files/` tree), and either the files after (`expected.py`
//! or an `expected/` tree; `expected/.empty` marks an empty tree) or
//! `expected_error.txt`, whose every non-empty line must occur in the error.
//! An optional `case.toml` sets `target_prefix` and `requested` (default:
//! every file of the case).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use swarm::patch::{apply, parse_reply, PatchError, ReplyContext};

/// Path of the single file of `original.py` cases.
pub const SINGLE: &str = "app.py";

/// The corpus directory.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/patch_corpus")
}

/// What a case expects.
#[derive(Debug)]
pub enum Expect {
    Files(BTreeMap<String, Vec<u8>>),
    Error(Vec<String>),
}

/// One corpus case.
#[derive(Debug)]
pub struct Case {
    pub name: String,
    pub reply: String,
    pub files: BTreeMap<String, Vec<u8>>,
    pub ctx: ReplyContext,
    pub expect: Expect,
}

#[derive(serde::Deserialize, Default)]
struct CaseToml {
    target_prefix: Option<String>,
    requested: Option<Vec<String>>,
}

/// Every file under `dir`, by `/`-separated relative path.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in fs::read_dir(dir).expect("readable corpus dir") {
            let path = entry.expect("readable entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.file_name().is_some_and(|n| n != ".empty") {
                let rel = path.strip_prefix(root).expect("under root");
                let rel = rel.to_string_lossy().replace('\\', "/");
                out.insert(rel, fs::read(&path).expect("readable file"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Loads every case, sorted by name.
pub fn load_cases() -> Vec<Case> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(corpus_dir())
        .expect("the corpus exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.iter().map(|d| load_case(d)).collect()
}

fn load_case(dir: &Path) -> Case {
    let name = dir
        .file_name()
        .expect("case dir has a name")
        .to_string_lossy()
        .into_owned();
    let reply = fs::read_to_string(dir.join("reply.md"))
        .unwrap_or_else(|e| panic!("{name}: reply.md: {e}"));
    let files = if dir.join("files").is_dir() {
        tree(&dir.join("files"))
    } else {
        let original = fs::read(dir.join("original.py"))
            .unwrap_or_else(|e| panic!("{name}: original.py: {e}"));
        BTreeMap::from([(SINGLE.to_string(), original)])
    };
    let config: CaseToml = match fs::read_to_string(dir.join("case.toml")) {
        Ok(text) => toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: case.toml: {e}")),
        Err(_) => CaseToml::default(),
    };
    let requested: Vec<String> = config
        .requested
        .unwrap_or_else(|| files.keys().cloned().collect());
    // The fence tags of the requested files' languages, as the Fixer reads
    // a reply.
    let ctx = ReplyContext {
        target_prefix: config.target_prefix.unwrap_or_default(),
        language: swarm::lang::code_language(&requested),
        requested,
    };
    let expect = if let Ok(text) = fs::read_to_string(dir.join("expected_error.txt")) {
        Expect::Error(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string)
                .collect(),
        )
    } else if dir.join("expected").is_dir() {
        Expect::Files(tree(&dir.join("expected")))
    } else {
        let expected = fs::read(dir.join("expected.py"))
            .unwrap_or_else(|e| panic!("{name}: expected.py: {e}"));
        Expect::Files(BTreeMap::from([(SINGLE.to_string(), expected)]))
    };
    Case {
        name,
        reply,
        files,
        ctx,
        expect,
    }
}

/// Parses and applies a case's reply; returns the resulting tree.
pub fn run(case: &Case) -> Result<BTreeMap<String, Vec<u8>>, PatchError> {
    let edits = parse_reply(&case.reply, &case.ctx)?;
    let read = |p: &str| case.files.get(p).cloned();
    let outcomes = apply(&edits, &read)?;
    let mut after = case.files.clone();
    for outcome in outcomes {
        match outcome.after {
            Some(bytes) => after.insert(outcome.path, bytes),
            None => after.remove(&outcome.path),
        };
    }
    Ok(after)
}

/// `None` when the case passes, else why it failed.
pub fn check(case: &Case) -> Option<String> {
    let result = run(case);
    match (&case.expect, result) {
        (Expect::Files(want), Ok(got)) if *want == got => None,
        (Expect::Files(want), Ok(got)) => Some(describe_tree_mismatch(want, &got)),
        (Expect::Files(_), Err(e)) => Some(format!("expected success, got error: {e}")),
        (Expect::Error(_), Ok(_)) => Some("expected an error, but the reply applied".into()),
        (Expect::Error(needles), Err(e)) => {
            let text = e.to_string();
            let missing: Vec<&String> = needles
                .iter()
                .filter(|n| !text.contains(n.as_str()))
                .collect();
            (!missing.is_empty())
                .then(|| format!("error lacks {missing:?}; the error was:\n{text}"))
        }
    }
}

fn describe_tree_mismatch(
    want: &BTreeMap<String, Vec<u8>>,
    got: &BTreeMap<String, Vec<u8>>,
) -> String {
    let mut out = String::new();
    let paths: std::collections::BTreeSet<&String> = want.keys().chain(got.keys()).collect();
    for path in paths {
        let (w, g) = (want.get(path), got.get(path));
        if w != g {
            out.push_str(&format!(
                "{path}: want {:?}\n got {:?}\n",
                w.map(|b| String::from_utf8_lossy(b).into_owned()),
                g.map(|b| String::from_utf8_lossy(b).into_owned())
            ));
        }
    }
    out
}
