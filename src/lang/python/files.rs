//! Which of a target's files are Python's: its sources (committed `.py`
//! files outside virtual environments, build output and caches), its tests,
//! the files that configure pytest, and the files the interpreter runs at
//! start-up. Paths only: nothing here reads a file or runs a tool.

use crate::pipeline::TargetDir;
use crate::tools::is_test_path;

/// Folders never treated as the project's own code.
const SKIPPED_DIRS: &[&str] = &[
    ".venv",
    "venv",
    "env",
    ".env",
    ".tox",
    ".nox",
    "build",
    "dist",
    "site-packages",
    "node_modules",
    "__pycache__",
    ".eggs",
    ".mypy_cache",
    ".pytest_cache",
];

/// Target-relative Python files among `tracked` (repo-relative) paths.
pub fn sources(tracked: &[String], target: &TargetDir) -> Vec<String> {
    let mut files: Vec<String> = tracked
        .iter()
        .filter_map(|p| target.relative(p))
        .filter(|p| p.ends_with(".py"))
        .filter(|p| {
            let dirs: Vec<&str> = p.split('/').collect();
            !dirs[..dirs.len() - 1]
                .iter()
                .any(|d| SKIPPED_DIRS.contains(d) || d.ends_with(".egg-info"))
        })
        .map(str::to_string)
        .collect();
    files.sort();
    files
}

/// Files that configure pytest wherever they are: their whole content
/// counts as test configuration.
pub const PYTEST_CONFIG_FILES: &[&str] = &[
    "conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
];

/// Files that may configure pytest in one of their sections (`[pytest]`,
/// `[tool:pytest]`, `[tool.pytest.ini_options]`, `[tool.pytest]`) or name
/// pytest plugins as `pytest11` entry points.
pub const SHARED_CONFIG_FILES: &[&str] = &["setup.cfg", "tox.ini", "pyproject.toml"];

/// Whether the Python interpreter runs this file at start-up when it sits
/// on the path: `sitecustomize.py`, `usercustomize.py` and `*.pth` files.
pub fn is_startup_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    matches!(name, "sitecustomize.py" | "usercustomize.py") || name.ends_with(".pth")
}

/// Whether a path (relative to the target, or to the repository: only
/// file names and folder names count) belongs to the test harness — what
/// decides which tests run and how — so that its BASE-commit version must
/// be restored before the final verdict: every test file ([`is_test_path`]),
/// the pytest configuration files ([`PYTEST_CONFIG_FILES`]: `conftest.py`,
/// `pytest.ini`, `.pytest.ini`, `pytest.toml`, `.pytest.toml`), the files
/// that may hold pytest configuration ([`SHARED_CONFIG_FILES`]: `setup.cfg`,
/// `tox.ini`, `pyproject.toml`) and start-up files ([`is_startup_file`]:
/// `sitecustomize.py`, `usercustomize.py`, `*.pth`).
///
/// Whole files: the Reviewer refuses only changes to the pytest parts of
/// `setup.cfg`, `tox.ini` and `pyproject.toml`, but restoring those files
/// whole is what makes the final check independent of any rule.
pub fn is_test_harness_path(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    is_test_path(rel)
        || PYTEST_CONFIG_FILES.contains(&name)
        || SHARED_CONFIG_FILES.contains(&name)
        || is_startup_file(rel)
}

#[cfg(test)]
mod tests {
    use super::sources as python_files;
    use super::*;

    #[test]
    fn the_test_harness_is_tests_config_and_startup_files() {
        for p in [
            "tests/helpers.py",
            "test_a.py",
            "conftest.py",
            "pkg/conftest.py",
            "pytest.ini",
            ".pytest.ini",
            "pytest.toml",
            "setup.cfg",
            "tox.ini",
            "pyproject.toml",
            "sub/pyproject.toml",
            "sitecustomize.py",
            "lib/usercustomize.py",
            "site/evil.pth",
        ] {
            assert!(is_test_harness_path(p), "{p}");
        }
        for p in [
            "a.py",
            "setup.py",
            "pytest_helpers.txt",
            "pkg/config.cfg",
            "pth.py",
        ] {
            assert!(!is_test_harness_path(p), "{p}");
        }
    }

    #[test]
    fn keeps_python_files_under_the_target_only() {
        let tracked: Vec<String> = [
            "README.md",
            "tools/x.py",
            "svc/a.py",
            "svc/.venv/lib/site.py",
            "svc/pkg/b.py",
            "svc/build/lib/c.py",
            "svc/tests/test_a.py",
            "svc/notes.txt",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            python_files(&tracked, &TargetDir::new("svc")),
            vec!["a.py", "pkg/b.py", "tests/test_a.py"]
        );
        assert_eq!(python_files(&tracked, &TargetDir::default()).len(), 4);
    }
}
