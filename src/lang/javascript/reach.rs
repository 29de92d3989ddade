//! Which JavaScript/TypeScript sources the tests reach: the test files'
//! relative imports (`import`, `export … from`, `require`, `import()`),
//! followed through the sources they import in turn. What a change to a
//! source no test reaches was verified by is said as such.
//!
//! Only relative specifiers (`./`, `../`) are followed, resolved as node
//! and the TypeScript compiler do: the exact file, the file with a source
//! extension, a folder's `index`, and a `.js` specifier naming its `.ts`
//! source. Package imports and path aliases are not followed.

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::path::Path;

use super::project::{has_source_extension, is_test_path, SOURCE_EXTENSIONS};

/// The target's sources (target-relative, among `files`) that a test
/// among `files` reaches, reading each file under `root`.
pub fn reached_by_tests(root: &Path, files: &[String]) -> BTreeSet<String> {
    let known: HashSet<&str> = files
        .iter()
        .filter(|f| has_source_extension(f))
        .map(String::as_str)
        .collect();
    let mut queue: VecDeque<String> = files
        .iter()
        .filter(|f| has_source_extension(f) && is_test_path(f))
        .cloned()
        .collect();
    let mut seen: HashSet<String> = queue.iter().cloned().collect();
    let mut reached = BTreeSet::new();
    while let Some(file) = queue.pop_front() {
        let Ok(text) = std::fs::read_to_string(root.join(&file)) else {
            continue;
        };
        for specifier in swarm_analysis::javascript::imported_modules(&file, &text) {
            let Some(target) = resolve(&file, &specifier, &known) else {
                continue;
            };
            if !is_test_path(&target) {
                reached.insert(target.clone());
            }
            if seen.insert(target.clone()) {
                queue.push_back(target);
            }
        }
    }
    reached
}

/// The file among `known` a relative `specifier` in `importer` names.
fn resolve(importer: &str, specifier: &str, known: &HashSet<&str>) -> Option<String> {
    resolve_with(importer, specifier, &|c| known.contains(c))
}

/// The file a relative `specifier` in `importer` names, of those `exists`
/// says are there.
pub(super) fn resolve_with(
    importer: &str,
    specifier: &str,
    exists: &dyn Fn(&str) -> bool,
) -> Option<String> {
    if !(specifier.starts_with("./") || specifier.starts_with("../")) {
        return None;
    }
    let folder = importer.rsplit_once('/').map_or("", |(dir, _)| dir);
    let joined = normalize(&format!("{folder}/{specifier}"))?;
    let mut candidates = vec![joined.clone()];
    for ext in SOURCE_EXTENSIONS {
        candidates.push(format!("{joined}.{ext}"));
    }
    for ext in SOURCE_EXTENSIONS {
        candidates.push(format!("{joined}/index.{ext}"));
    }
    // `./money.js` in TypeScript names `money.ts`.
    if let Some((stem, ext)) = joined.rsplit_once('.') {
        if matches!(ext, "js" | "jsx" | "mjs" | "cjs") {
            for ts in ["ts", "tsx", "mts", "cts"] {
                candidates.push(format!("{stem}.{ts}"));
            }
        }
    }
    candidates.into_iter().find(|c| exists(c))
}

/// `a/./b/../c` as `a/c`; `None` when it climbs above the target.
fn normalize(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_reach_what_they_import_and_what_that_imports() {
        let dir = tempfile::tempdir().expect("temp dir");
        let write = |rel: &str, text: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        };
        write(
            "tests/money.test.ts",
            "import { cents } from '../src/money.js';\n",
        );
        write(
            "src/money.ts",
            "import { round } from './math';\nexport const cents = 1;\n",
        );
        write("src/math/index.ts", "export const round = 1;\n");
        write("src/unused.ts", "export const x = 1;\n");
        write("lib/cart.test.js", "const lib = require('vitest');\n");
        let files: Vec<String> = [
            "lib/cart.test.js",
            "src/math/index.ts",
            "src/money.ts",
            "src/unused.ts",
            "tests/money.test.ts",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let reached = reached_by_tests(dir.path(), &files);
        assert_eq!(
            reached,
            BTreeSet::from(["src/math/index.ts".to_string(), "src/money.ts".to_string()])
        );
        assert_eq!(normalize("a/./b/../c"), Some("a/c".to_string()));
        assert_eq!(normalize("../x"), None);
    }
}
