//! The files of `src/git/` import each other one way: no file reaches back,
//! through others, to a file that imports it. `mod.rs` is not counted: it
//! holds the module's own vocabulary (`GitError`, `Repo`, `CommitId`…)
//! that every file uses, and only declares and re-exports the others.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

type Imports = BTreeMap<String, BTreeSet<String>>;

/// The first path segments a `use super::{…}` group names at its top level
/// (`a::b`, `c` → `a`, `c`).
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let (mut depth, mut item) = (0, String::new());
    for c in group.chars().chain([',']) {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                let head = item.trim().split("::").next().unwrap_or("").to_string();
                heads.push(head);
                item.clear();
                continue;
            }
            _ => {}
        }
        item.push(c);
    }
    heads
}

/// The sibling files `source` names through `super::`, outside its tests
/// and comments.
fn siblings_named(source: &str, files: &BTreeSet<String>) -> BTreeSet<String> {
    let code = source
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or(source)
        .lines()
        .map(|line| line.split("//").next().unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n");
    let mut named = BTreeSet::new();
    for (at, _) in code.match_indices("super::") {
        let rest = &code[at + "super::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(group.len(), |(i, _)| i);
            named.extend(group_heads(&group[..end]));
        } else {
            let head: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if rest[head.len()..].starts_with("::") {
                named.insert(head);
            }
        }
    }
    named.retain(|name| files.contains(name));
    named
}

/// Each file of `src/git/` (but `mod.rs`) with the siblings it imports.
fn imports() -> Imports {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/git");
    let sources: BTreeMap<String, String> = fs::read_dir(&dir)
        .expect("src/git")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .filter_map(|path| {
            let name = path.file_stem()?.to_string_lossy().into_owned();
            (name != "mod").then(|| (name, fs::read_to_string(&path).expect("read")))
        })
        .collect();
    let files: BTreeSet<String> = sources.keys().cloned().collect();
    sources
        .iter()
        .map(|(name, source)| {
            let mut named = siblings_named(source, &files);
            named.remove(name);
            (name.clone(), named)
        })
        .collect()
}

/// A loop in `graph` as the files along it (first and last the same).
fn find_loop(graph: &Imports) -> Option<Vec<String>> {
    fn visit(
        graph: &Imports,
        file: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|f| f == file) {
            let mut found = path[start..].to_vec();
            found.push(file.to_string());
            return Some(found);
        }
        if done.contains(file) {
            return None;
        }
        path.push(file.to_string());
        for next in graph.get(file).into_iter().flatten() {
            if let Some(found) = visit(graph, next, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(file.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|file| visit(graph, file, &mut Vec::new(), &mut done))
}

#[test]
fn the_files_of_git_import_each_other_without_loops() {
    let graph = imports();
    // The reading sees the imports there are.
    assert!(graph["workspace"].contains("spare"), "{graph:?}");
    assert!(graph["spare"].contains("remove"), "{graph:?}");
    assert!(graph["undo"].contains("fastforward"), "{graph:?}");
    if let Some(found) = find_loop(&graph) {
        panic!(
            "import loop between files of src/git: {}",
            found.join(" -> ")
        );
    }
}

#[test]
fn the_reading_finds_a_loop_and_counts_only_code_outside_tests() {
    let graph: Imports = [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]
        .into_iter()
        .map(|(from, to)| (from.to_string(), BTreeSet::from([to.to_string()])))
        .collect();
    assert_eq!(
        find_loop(&graph),
        Some(["a", "b", "c", "a"].map(String::from).to_vec())
    );
    let source = "use super::a::x;\nuse super::{b::{y, z}, c, Repo};\nfn f() { super::d::g() }\n\
                  /// See [`super::e::h`].\n#[cfg(test)]\nmod tests { use super::e::h; }\n";
    let files = ["a", "b", "c", "d", "e"].map(String::from).into();
    assert_eq!(
        siblings_named(source, &files),
        ["a", "b", "c", "d"].map(String::from).into()
    );
}
