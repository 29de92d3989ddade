//! Which of a project's files are tests: what its pytest collects, not name
//! patterns alone.
//!
//! A file is a test when swarm's name rule says so ([`super::is_test_path`]:
//! `test_*.py`, `*_test.py`, `conftest.py`, anything under `tests/` or
//! `test/`), when the project's pytest configuration makes it one (a file
//! named in `testpaths`, such as a root `test.py`; a module matching its
//! `python_files` under its `testpaths`; a text file matching
//! `--doctest-glob`, `test*.txt` by default), or when the baseline's pytest
//! run collected tests from it. With `--doctest-modules` in `addopts`, the
//! docstring examples of every module are tests too
//! ([`TestFiles::doctest_modules`]); the module itself stays code.
//!
//! The configuration is the file pytest would read for the tested folder
//! (found as the runs find it, never above the worktree); it is read here as
//! text, never run. Every rule that protects tests (the Reviewer, the final
//! check, where the Tester writes) asks [`TestFiles::contains`].

use std::collections::BTreeSet;
use std::path::Path;

use super::pytest::config;
use crate::pipeline::measure::{TestOutcome, TestRun};

/// pytest's `python_files` when the project sets none.
const DEFAULT_PYTHON_FILES: &[&str] = &["test_*.py", "*_test.py"];
/// pytest's `--doctest-glob` when the project sets none.
const DEFAULT_DOCTEST_GLOB: &str = "test*.txt";

/// The project's test files, as its pytest configuration and its baseline
/// collection say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestFiles {
    /// `python_files` globs.
    pub python_files: Vec<String>,
    /// `testpaths`, relative to the tested folder (`/`-separated).
    pub testpaths: Vec<String>,
    /// Text files collected as doctests (`--doctest-glob`).
    pub doctest_globs: Vec<String>,
    /// `--doctest-modules`: every module's docstring examples are tests.
    pub doctest_modules: bool,
    /// Files the baseline's pytest run collected tests from (relative to
    /// the tested folder), doctest modules aside.
    pub collected: BTreeSet<String>,
}

impl Default for TestFiles {
    fn default() -> Self {
        Self {
            python_files: DEFAULT_PYTHON_FILES.iter().map(|s| s.to_string()).collect(),
            testpaths: Vec::new(),
            doctest_globs: vec![DEFAULT_DOCTEST_GLOB.to_string()],
            doctest_modules: false,
            collected: BTreeSet::new(),
        }
    }
}

impl TestFiles {
    /// The rules of the pytest configuration for `root` (the tested folder),
    /// looked for no higher than `ceiling` (the worktree); pytest's
    /// defaults without one.
    pub fn read(root: &Path, ceiling: &Path) -> Self {
        let mut files = TestFiles::default();
        let Some(path) = config::locate(root, ceiling) else {
            return files;
        };
        let Ok(text) = std::fs::read_to_string(&path) else {
            return files;
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let options = config::pytest_options(&name, &text);
        let base = path
            .parent()
            .and_then(|dir| dir.strip_prefix(root).ok().map(Path::to_path_buf));
        for (key, values) in options {
            match key.as_str() {
                "python_files" if !values.is_empty() => files.python_files = values,
                "testpaths" => {
                    files.testpaths = values
                        .iter()
                        .map(|p| relative_to_root(p, base.as_deref()))
                        .collect();
                }
                "addopts" => files.read_addopts(&values),
                _ => {}
            }
        }
        files
    }

    /// Reads the doctest options of `addopts`.
    fn read_addopts(&mut self, args: &[String]) {
        let mut globs = Vec::new();
        let mut iter = args.iter().peekable();
        while let Some(arg) = iter.next() {
            if arg == "--doctest-modules" {
                self.doctest_modules = true;
            } else if let Some(glob) = arg.strip_prefix("--doctest-glob=") {
                globs.push(glob.to_string());
            } else if arg == "--doctest-glob" {
                if let Some(glob) = iter.next() {
                    globs.push(glob.clone());
                }
            }
        }
        if !globs.is_empty() {
            self.doctest_globs = globs;
        }
    }

    /// These rules, with the files `run` (the baseline) collected tests from.
    pub fn with_collected(mut self, run: Option<&TestRun>) -> Self {
        let Some(run) = run else {
            return self;
        };
        for case in &run.cases {
            if case.outcome == TestOutcome::NotRun && case.id.is_empty() {
                continue;
            }
            let Some((file, _)) = case.id.split_once("::") else {
                continue;
            };
            // With --doctest-modules a module's docstrings are collected
            // too: that makes the module no test file.
            let doctest_module =
                self.doctest_modules && file.ends_with(".py") && !self.matches_config(file);
            if !doctest_module && !file.is_empty() {
                self.collected.insert(file.to_string());
            }
        }
        self
    }

    /// Whether the target-relative `rel` is a test file.
    pub fn contains(&self, rel: &str) -> bool {
        super::is_test_path(rel) || self.collected.contains(rel) || self.matches_config(rel)
    }

    /// Whether the configuration makes `rel` a test file.
    fn matches_config(&self, rel: &str) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if self
            .testpaths
            .iter()
            .any(|p| p.trim_end_matches('/') == rel)
        {
            return true;
        }
        if rel.ends_with(".py") {
            let under_testpaths = self.testpaths.is_empty()
                || self.testpaths.iter().any(|p| {
                    let p = p.trim_end_matches('/');
                    p == "." || p.is_empty() || rel.starts_with(&format!("{p}/"))
                });
            return under_testpaths
                && self
                    .python_files
                    .iter()
                    .any(|pattern| pattern_matches(pattern, rel, name));
        }
        self.doctest_globs
            .iter()
            .any(|pattern| pattern_matches(pattern, rel, name))
    }

    /// Where a new test file for the module `stem` (`pkg_money`) goes so
    /// that the project's pytest collects it: the first folder of
    /// `testpaths` (`tests/` without any), named after the first
    /// `python_files` pattern that has one `*`. `None` when `testpaths`
    /// names files only (nothing new would be collected) or no pattern
    /// makes a name.
    pub fn place_for(&self, stem: &str) -> Option<String> {
        let folder = if self.testpaths.is_empty() {
            Some("tests".to_string())
        } else {
            self.testpaths
                .iter()
                .map(|p| p.trim_end_matches('/'))
                .find(|p| !p.ends_with(".py") && !p.contains('*'))
                .map(|p| {
                    if p == "." {
                        String::new()
                    } else {
                        p.to_string()
                    }
                })
        }?;
        let name = self.python_files.iter().find_map(|pattern| {
            let pattern = pattern.rsplit('/').next().unwrap_or(pattern);
            (pattern.matches('*').count() == 1
                && pattern.ends_with(".py")
                && !pattern.contains(['?', '[']))
            .then(|| pattern.replacen('*', &format!("{stem}_swarm"), 1))
        })?;
        Some(if folder.is_empty() {
            name
        } else {
            format!("{folder}/{name}")
        })
    }
}

/// A `testpaths` entry relative to the tested folder, given the folder of
/// the configuration file relative to it (`None`: above it).
fn relative_to_root(entry: &str, base: Option<&Path>) -> String {
    let entry = entry.trim_start_matches("./");
    match base {
        Some(base) if !base.as_os_str().is_empty() => {
            format!("{}/{entry}", base.to_string_lossy())
        }
        _ => entry.to_string(),
    }
}

/// pytest's `fnmatch_ex`: a pattern without `/` matches the file's name,
/// one with `/` the whole path (its tail, as pytest does for relative
/// patterns).
fn pattern_matches(pattern: &str, rel: &str, name: &str) -> bool {
    if pattern.contains('/') {
        let pattern = if pattern.starts_with('/') || pattern.starts_with("**") {
            pattern.to_string()
        } else {
            format!("*{pattern}")
        };
        glob_match(&pattern, rel)
    } else {
        glob_match(pattern, name)
    }
}

/// fnmatch: `*` any run of characters (`/` included), `?` one character,
/// `[...]` a set (`[!...]` its complement).
fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
            continue;
        }
        if pi < p.len() {
            if let Some((matched, next)) = one_char(&p, pi, t[ti]) {
                if matched {
                    pi = next;
                    ti += 1;
                    continue;
                }
            }
        }
        match star {
            Some(s) => {
                pi = s + 1;
                mark += 1;
                ti = mark;
            }
            None => return false,
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Whether the pattern element at `at` matches `c`, and where the next
/// element starts; `None` when the pattern is malformed there.
fn one_char(p: &[char], at: usize, c: char) -> Option<(bool, usize)> {
    match p[at] {
        '?' => Some((true, at + 1)),
        '[' => {
            let mut i = at + 1;
            let negate = matches!(p.get(i), Some('!' | '^'));
            if negate {
                i += 1;
            }
            let mut matched = false;
            let start = i;
            while i < p.len() && (p[i] != ']' || i == start) {
                if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
                    matched |= p[i] <= c && c <= p[i + 2];
                    i += 3;
                } else {
                    matched |= p[i] == c;
                    i += 1;
                }
            }
            (i < p.len()).then_some((matched != negate, i + 1))
        }
        other => Some((other == c, at + 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::measure::TestCase;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for (path, text) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
            std::fs::write(full, text).expect("write");
        }
        dir
    }

    #[test]
    fn a_root_test_py_named_by_testpaths_is_a_test_and_where_new_tests_go_is_said() {
        let dir = tree(&[(
            "pyproject.toml",
            "[tool.pytest.ini_options]\ntestpaths = [\"test.py\"]\n",
        )]);
        let files = TestFiles::read(dir.path(), dir.path());
        assert!(files.contains("test.py"));
        assert!(!files.contains("semver.py"));
        // No folder pytest would look in for a new file.
        assert_eq!(files.place_for("semver"), None);
        // Django's tests.py, collected at the baseline.
        let run = TestRun {
            cases: vec![TestCase {
                id: "app/tests.py::TestViews::test_home".into(),
                outcome: TestOutcome::Passed,
                message: None,
                details: None,
            }],
            ..TestRun::default()
        };
        let files = TestFiles::default().with_collected(Some(&run));
        assert!(files.contains("app/tests.py"));
        assert!(!files.contains("app/views.py"));
    }

    #[test]
    fn python_files_and_testpaths_decide_and_the_tester_follows_them() {
        let dir = tree(&[(
            "setup.cfg",
            "[tool:pytest]\ntestpaths =\n    checks\npython_files = check_*.py\naddopts = --doctest-modules --doctest-glob='*.rst'\n",
        )]);
        let files = TestFiles::read(dir.path(), dir.path());
        assert!(files.contains("checks/check_money.py"));
        assert!(!files.contains("lib/check_money.py"));
        assert!(files.contains("docs/usage.rst"));
        assert!(files.doctest_modules);
        assert_eq!(
            files.place_for("pkg_money").as_deref(),
            Some("checks/check_pkg_money_swarm.py")
        );
        assert_eq!(
            TestFiles::default().place_for("stats").as_deref(),
            Some("tests/test_stats_swarm.py")
        );
        // A doctest item collected from a module leaves the module code.
        let run = TestRun {
            cases: vec![TestCase {
                id: "lib/money.py::lib.money.to_cents".into(),
                outcome: TestOutcome::Passed,
                message: None,
                details: None,
            }],
            ..TestRun::default()
        };
        assert!(!files.with_collected(Some(&run)).contains("lib/money.py"));
    }

    #[test]
    fn globs_match_as_fnmatch_does() {
        assert!(glob_match("test_*.py", "test_a.py"));
        assert!(!glob_match("test_*.py", "atest_a.py"));
        assert!(glob_match("*_test.py", "a_test.py"));
        assert!(glob_match("test[0-9].py", "test3.py"));
        assert!(!glob_match("test[!0-9].py", "test3.py"));
        assert!(glob_match("test?.txt", "test1.txt"));
        assert!(pattern_matches(
            "tests/**/check_*.py",
            "tests/a/b/check_x.py",
            "check_x.py"
        ));
    }
}
