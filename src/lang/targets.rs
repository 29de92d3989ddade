//! The independent targets of a repository, for fanning one instruction
//! out over them on a CI's matrix (`swarm targets --json`): every package
//! with tests of its own and a runner that would judge them, each a
//! `--target_dir` of its own run.
//!
//! A package is a folder holding a language's project file (Python:
//! `pyproject.toml`, `setup.py`, `setup.cfg`; JavaScript/TypeScript:
//! `package.json`), or the repository's root. Each tracked test file
//! belongs to the nearest such folder above it of its language; a folder
//! that owns no test is not a target (nothing would tell a fix from a
//! break), so a workspace root whose tests all live in its packages is
//! not one. Only committed files count, as in a run; nothing is run or
//! installed, so the list can be made before a CI job installs anything.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::{Language, LANGUAGES};

/// One target: a folder and what judges it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Target {
    /// The folder, relative to the folder listed (`.` for itself).
    pub target: String,
    /// The language's name ("Python", "JavaScript/TypeScript").
    pub language: &'static str,
    /// The test runner that would judge it ("pytest", "vitest").
    pub runner: String,
    /// Test files it owns.
    pub tests: usize,
}

/// The targets under `root` (a checkout's folder) among `tracked` (its
/// committed files, relative to `root`, `/`-separated), sorted by folder,
/// then language.
pub fn find(root: &Path, tracked: &[String]) -> Vec<Target> {
    let mut targets: Vec<Target> = LANGUAGES
        .iter()
        .flat_map(|language| of_language(*language, root, tracked))
        .collect();
    targets.sort_by(|a, b| (&a.target, a.language).cmp(&(&b.target, b.language)));
    targets
}

/// One language's targets.
fn of_language(language: &'static dyn Language, root: &Path, tracked: &[String]) -> Vec<Target> {
    let manifests = language.package_files();
    if manifests.is_empty() {
        return Vec::new();
    }
    let mut packages: Vec<String> = tracked
        .iter()
        .filter(|rel| !rel.split('/').any(is_ignored_dir))
        .filter_map(|rel| {
            let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
            manifests.contains(&name).then(|| dir.to_string())
        })
        .collect();
    packages.push(String::new());
    packages.sort();
    packages.dedup();
    let mut owned: BTreeMap<&str, usize> = BTreeMap::new();
    for rel in tracked {
        if rel.split('/').any(is_ignored_dir) || !language.is_source(rel) {
            continue;
        }
        let Some(owner) = nearest(&packages, rel) else {
            continue;
        };
        let inside = rel
            .strip_prefix(owner)
            .unwrap_or(rel)
            .trim_start_matches('/');
        if language.is_test(inside) {
            *owned.entry(owner).or_default() += 1;
        }
    }
    owned
        .into_iter()
        .filter_map(|(dir, tests)| {
            let runner = language.package_runner(&root.join(dir), root)?;
            Some(Target {
                target: if dir.is_empty() {
                    ".".into()
                } else {
                    dir.into()
                },
                language: language.name(),
                runner,
                tests,
            })
        })
        .collect()
}

/// The deepest package folder that holds `rel`.
fn nearest<'a>(packages: &'a [String], rel: &str) -> Option<&'a str> {
    packages
        .iter()
        .filter(|dir| dir.is_empty() || rel.starts_with(&format!("{dir}/")))
        .max_by_key(|dir| dir.len())
        .map(String::as_str)
}

/// Folders no target lives in: installed dependencies, environments, caches
/// and the tests' own fixtures are not packages of the repository.
fn is_ignored_dir(part: &str) -> bool {
    matches!(
        part,
        "node_modules" | ".venv" | "venv" | "site-packages" | "__pycache__" | "dist" | "build"
    )
}

/// The listing as a CI matrix: `{"include": [{"target": …}, …]}`, which
/// GitHub Actions takes as `strategy.matrix` and GitLab's
/// `parallel:matrix` can be made from.
pub fn matrix_json(targets: &[Target]) -> serde_json::Value {
    serde_json::json!({ "include": targets })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracked(files: &[&str]) -> Vec<String> {
        files.iter().map(|f| f.to_string()).collect()
    }

    #[test]
    fn a_test_belongs_to_the_nearest_package_and_a_root_without_tests_is_no_target() {
        let dir = tempfile::tempdir().unwrap();
        let files = tracked(&[
            "pyproject.toml",
            "packages/api/pyproject.toml",
            "packages/api/src/api/core.py",
            "packages/api/tests/test_core.py",
            "packages/cli/setup.py",
            "packages/cli/cli/main.py",
            "packages/cli/tests/test_main.py",
            "packages/cli/tests/test_args.py",
            "packages/docs/pyproject.toml",
            "packages/docs/docs/build.py",
            "packages/api/.venv/lib/site-packages/x/test_x.py",
        ]);
        let targets = find(dir.path(), &files);
        let listed: Vec<(&str, usize)> = targets
            .iter()
            .map(|t| (t.target.as_str(), t.tests))
            .collect();
        assert_eq!(listed, [("packages/api", 1), ("packages/cli", 2)]);
        assert!(targets.iter().all(|t| t.runner == "pytest"));
    }

    #[test]
    fn tests_outside_every_package_make_the_root_a_target() {
        let dir = tempfile::tempdir().unwrap();
        let files = tracked(&["calc.py", "test_calc.py"]);
        let targets = find(dir.path(), &files);
        assert_eq!(targets.len(), 1);
        assert_eq!(targets[0].target, ".");
        let json = matrix_json(&targets);
        assert_eq!(json["include"][0]["target"], ".");
        assert_eq!(json["include"][0]["language"], "Python");
    }
}
