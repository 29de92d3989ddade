//! The floors of the house, checked from the code: every `crate::…` path
//! in `src/` is read, and a module that reaches a module above its floor,
//! or two files that import each other (directly or round a loop), fail
//! here with the file and line that does it.
//!
//! The table [`MAY_USE`] is the layering as meant: a module may use the
//! modules it names and nothing else of the crate. A new module gets its
//! row here; an arrow that climbs back up is a design change to discuss,
//! not a row to widen.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module of the crate, with the modules it may use, from
/// the face down to the leaves. `lib`, `main` and the root's own helpers
/// (`atomic`, `cancel`, `lockfile`) are listed like the others.
const MAY_USE: &[(&str, &[&str])] = &[
    // The face: flags, printing, exit codes, hints.
    ("main", &["cli"]),
    ("lib", &["*"]),
    (
        "cli",
        &[
            "orchestrator",
            "stage",
            "lang",
            "report",
            "tools",
            "git",
            "llm",
            "log",
            "pipeline",
            "analysis",
            "config",
            "error",
            "harden",
            "cancel",
            "secrets",
        ],
    ),
    // The loop: hands values from stage to stage.
    (
        "orchestrator",
        &[
            "stage", "lang", "report", "tools", "git", "llm", "log", "pipeline", "analysis",
            "patch", "config", "error", "harden", "cancel", "atomic", "secrets",
        ],
    ),
    // The top-level error wraps the facts the layers below state.
    ("error", &["git", "llm", "tools", "log", "config"]),
    // The report reads the log through its types.
    ("report", &["log", "llm", "pipeline", "atomic"]),
    // The stages: values in, values out; none drives the loop or prints.
    (
        "stage",
        &[
            "lang", "tools", "llm", "patch", "analysis", "git", "log", "pipeline", "cancel",
            "atomic", "secrets",
        ],
    ),
    // The language boundary, one folder per language: what it knows of its
    // files, tools and rules; processes only through `tools`.
    (
        "lang",
        &[
            "pipeline", "tools", "analysis", "patch", "config", "cancel", "atomic",
        ],
    ),
    // The only place that spawns processes.
    (
        "tools",
        &[
            "pipeline", "analysis", "config", "llm", "git", "cancel", "atomic", "harden",
        ],
    ),
    ("config", &["llm", "harden"]),
    ("harden", &["config"]),
    // The chat client knows no stage and no loop; it reports through events.
    ("llm", &["log", "secrets"]),
    // The log's format and events name the pipeline's values, nothing above.
    ("log", &["pipeline", "lockfile", "atomic", "secrets"]),
    // The vocabulary: values the stages hand on.
    ("pipeline", &["patch", "git"]),
    // The leaves.
    ("git", &["lockfile"]),
    ("patch", &[]),
    // What counts as a secret, and the run's placeholders for them.
    ("secrets", &[]),
    ("analysis", &[]),
    ("atomic", &[]),
    ("cancel", &[]),
    ("lockfile", &[]),
];

/// One `crate::…` path in a source file.
#[derive(Debug)]
struct Reference {
    file: PathBuf,
    line: usize,
    /// The path's segments after `crate::` (or resolved from `super::`).
    segments: Vec<String>,
}

fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `src/stage/judge/early.rs` is
/// `stage::judge::early`, `src/stage/mod.rs` is `stage`, `src/lib.rs` is
/// `lib`.
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs").to_string();
    if stem != "mod" {
        parts.push(stem);
    }
    parts
}

/// The text of `line` without its comment and string literals, so a path
/// named in prose or in a message is not an import.
fn code_of(line: &str) -> String {
    let mut out = String::new();
    let mut in_string = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            if c == '\\' {
                chars.next();
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        if c == '"' {
            in_string = true;
            continue;
        }
        if c == '/' && chars.peek() == Some(&'/') {
            break;
        }
        out.push(c);
    }
    out
}

/// The paths a line names, absolute from the crate root: `crate::a::b`,
/// and `super::x` / `self::x` resolved against the file's module. Grouped
/// imports (`crate::a::{b, c::d}`) give one path per member (the group's
/// prefix is enough to place it).
fn paths_in(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    // The leaf crates are named by their own names; they count as the
    // modules they were.
    for (krate, module) in [("swarm_patch", "patch"), ("swarm_analysis", "analysis")] {
        let mut from = 0;
        while let Some(at) = code[from..].find(krate) {
            let at = from + at;
            from = at + krate.len();
            let before = at.checked_sub(1).map(|i| bytes[i]);
            if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
                continue;
            }
            found.push(vec![module.to_string()]);
        }
    }
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(start) {
            let at = from + at;
            from = at + start.len();
            if at > 0 {
                let before = bytes[at - 1];
                if before.is_ascii_alphanumeric() || before == b'_' || before == b':' {
                    continue;
                }
            }
            let mut base: Vec<String> = match start {
                "crate::" => Vec::new(),
                // In `a/mod.rs` (module `a`), `super` is a's parent; in
                // `a/b.rs` (module `a::b`), `super` is `a`.
                "super::" => {
                    let mut m = module.to_vec();
                    m.pop();
                    m
                }
                _ => module.to_vec(),
            };
            let mut rest = &code[at + start.len()..];
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            let tail: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let mut segments = base;
            segments.extend(
                tail.split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            );
            if !segments.is_empty() {
                found.push(segments);
            }
        }
    }
    found
}

/// Every `crate::`, `super::` and `self::` path in `src/`, outside
/// comments, strings and `#[cfg(test)]` modules at the end of a file.
fn references() -> Vec<Reference> {
    let root = source_root();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut refs = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read");
        let module = module_of(&root, &file);
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            for segments in paths_in(&code_of(line), &module) {
                refs.push(Reference {
                    file: file.clone(),
                    line: i + 1,
                    segments,
                });
            }
        }
    }
    refs
}

fn top_of(root: &Path, file: &Path) -> String {
    module_of(root, file)
        .first()
        .cloned()
        .unwrap_or_else(|| "lib".to_string())
}

#[test]
fn no_module_reaches_above_its_floor() {
    let root = source_root();
    let table: BTreeMap<&str, &[&str]> = MAY_USE.iter().copied().collect();
    let mut broken = Vec::new();
    let mut unknown = BTreeSet::new();
    for r in references() {
        let from = top_of(&root, &r.file);
        let Some(to) = r.segments.first() else {
            continue;
        };
        if *to == from || !table.contains_key(to.as_str()) {
            continue;
        }
        let Some(allowed) = table.get(from.as_str()) else {
            unknown.insert(from);
            continue;
        };
        if !allowed.contains(&"*") && !allowed.contains(&to.as_str()) {
            broken.push(format!(
                "{}:{}: {from} uses {} ({})",
                r.file.strip_prefix(&root).unwrap_or(&r.file).display(),
                r.line,
                to,
                r.segments.join("::")
            ));
        }
    }
    assert!(
        unknown.is_empty(),
        "modules with no row in MAY_USE: {unknown:?}"
    );
    assert!(
        broken.is_empty(),
        "imports that climb above their floor:\n{}",
        broken.join("\n")
    );
}

/// The modules that name no language: what a language is lives behind
/// `lang`, and these only ask it.
const LANGUAGE_BLIND: &[&str] = &["orchestrator", "git", "llm", "log", "report"];

/// Words that name a language, its files or its tools, as they appear in
/// identifiers and strings (split at anything but letters and digits).
const LANGUAGE_WORDS: &[&str] = &[
    "python",
    "py",
    "pytest",
    "pylint",
    "conftest",
    "javascript",
    "typescript",
    "js",
    "mjs",
    "cjs",
    "jsx",
    "tsx",
    "vitest",
    "jest",
    "eslint",
    "npm",
    "tsc",
];

/// `line` without its comment; string literals are kept.
fn without_comment(line: &str) -> String {
    let mut out = String::new();
    let mut in_string = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        if c == '/' && chars.peek() == Some(&'/') {
            break;
        }
        in_string = c == '"';
        out.push(c);
    }
    out
}

/// Every word of [`LANGUAGE_WORDS`] in the code (not comments, not tests)
/// of `files`, as `file:line: word`. The log's format names the tools it
/// records (`#[serde(rename = "pytest")]`): those attributes are the
/// format's data, not knowledge of a language.
fn language_words_in(root: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_default();
        if name == "tests.rs"
            || name.ends_with("_tests.rs")
            || file.components().any(|c| c.as_os_str() == "tests")
        {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("read");
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("#[cfg(test)]") {
                break;
            }
            if trimmed.starts_with("#[serde(rename") {
                continue;
            }
            let code = without_comment(line).to_lowercase();
            for word in code.split(|c: char| !c.is_ascii_alphanumeric()) {
                if LANGUAGE_WORDS.contains(&word) {
                    found.push(format!(
                        "{}:{}: {word}",
                        file.strip_prefix(root).unwrap_or(file).display(),
                        i + 1
                    ));
                }
            }
        }
    }
    found
}

#[test]
fn the_loop_git_patch_llm_log_and_report_name_no_language() {
    let root = source_root();
    let mut files = Vec::new();
    for module in LANGUAGE_BLIND {
        rust_files(&root.join(module), &mut files);
    }
    let mut found = language_words_in(&root, &files);
    let patch = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/patch/src");
    let mut patch_files = Vec::new();
    rust_files(&patch, &mut patch_files);
    found.extend(language_words_in(&patch, &patch_files));
    assert!(
        found.is_empty(),
        "language knowledge outside the language boundary (src/lang):\n{}",
        found.join("\n")
    );
}

/// The check above finds what it looks for: a line naming a language's
/// tool, file or runner is found; its comment is not.
#[test]
fn the_language_check_sees_code_and_strings_not_comments() {
    let dir = tempfile::tempdir().expect("temp");
    let file = dir.path().join("a.rs");
    std::fs::write(
        &file,
        "// pytest in a comment\nlet a = f(\"x.py\"); // node\nlet b = run_pylint();\n#[cfg(test)]\nmod tests { const T: &str = \"python\"; }\n",
    )
    .expect("write");
    let found = language_words_in(dir.path(), &[file]);
    assert_eq!(found, ["a.rs:2: py", "a.rs:3: pylint"]);
}

/// The file a module path lives in: the longest prefix of `segments` that
/// names a file (`a/b.rs` or `a/b/mod.rs`).
fn file_of(root: &Path, segments: &[String]) -> Option<PathBuf> {
    for n in (1..=segments.len()).rev() {
        let rel: PathBuf = segments[..n].iter().collect();
        for candidate in [
            root.join(&rel).with_extension("rs"),
            root.join(&rel).join("mod.rs"),
        ] {
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

#[test]
fn no_two_files_import_each_other() {
    let root = source_root();
    // file -> files it imports, leaving out a file's own ancestors (a
    // child naming its parent module's items is how modules nest, not a
    // loop) and itself.
    let mut graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for r in references() {
        let Some(to) = file_of(&root, &r.segments) else {
            continue;
        };
        let from_module = module_of(&root, &r.file);
        let to_module = module_of(&root, &to);
        if to == r.file
            || from_module.starts_with(&to_module)
            || to_module.starts_with(&from_module)
        {
            continue;
        }
        graph.entry(r.file.clone()).or_default().insert(to);
    }
    let loops = cycles(&graph);
    let shown: Vec<String> = loops
        .iter()
        .map(|cycle| {
            cycle
                .iter()
                .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
                .collect::<Vec<_>>()
                .join(" -> ")
        })
        .collect();
    assert!(
        shown.is_empty(),
        "files that import each other:\n{}",
        shown.join("\n")
    );
}

/// The strongly connected groups of more than one file (Tarjan's
/// algorithm), each as its files in order.
fn cycles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'g PathBuf, usize>,
        low: BTreeMap<&'g PathBuf, usize>,
        stack: Vec<&'g PathBuf>,
        on_stack: BTreeSet<&'g PathBuf>,
        found: Vec<Vec<PathBuf>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g PathBuf) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            if let Some(next) = self.graph.get(v) {
                for w in next {
                    if !self.index.contains_key(w) {
                        self.visit(w);
                        let low = self.low[w].min(self.low[v]);
                        self.low.insert(v, low);
                    } else if self.on_stack.contains(w) {
                        let low = self.index[w].min(self.low[v]);
                        self.low.insert(v, low);
                    }
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    group.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn the_checks_see_an_import_that_climbs_and_a_loop() {
    // The reader finds paths in code, not in comments or strings.
    let module = vec!["log".to_string(), "events".to_string()];
    let code =
        code_of("use crate::stage::judge::Verdict; // crate::cli::x \"crate::orchestrator\"");
    assert_eq!(
        paths_in(&code, &module),
        vec![vec!["stage", "judge", "Verdict"]]
    );
    let sup = paths_in("use super::store::OpenLog;", &module);
    assert_eq!(sup, vec![vec!["log", "store", "OpenLog"]]);
    let leaf = paths_in("use swarm_patch::{self as patch, FileEdit};", &module);
    assert_eq!(leaf, vec![vec!["patch"]]);
    // A loop of two files is found, a chain is not.
    let a = PathBuf::from("a.rs");
    let b = PathBuf::from("b.rs");
    let c = PathBuf::from("c.rs");
    let mut graph = BTreeMap::new();
    graph.insert(a.clone(), BTreeSet::from([b.clone()]));
    graph.insert(b.clone(), BTreeSet::from([c.clone()]));
    assert!(cycles(&graph).is_empty());
    graph.insert(c.clone(), BTreeSet::from([a.clone()]));
    assert_eq!(cycles(&graph), vec![vec![a, b, c]]);
}
