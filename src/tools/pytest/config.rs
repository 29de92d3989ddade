//! Which configuration file pytest uses, found the way pytest 9 finds it
//! but never above the sandbox's writable folder that holds the tests.
//!
//! pytest walks from the folder it tests up to `/` looking for
//! `pytest.toml`, `.pytest.toml`, `pytest.ini`, `.pytest.ini`,
//! `pyproject.toml` (with `[tool.pytest]`/`[tool.pytest.ini_options]`),
//! `tox.ini` (with `[pytest]`) and `setup.cfg` (with `[tool:pytest]`), in
//! that order per folder. Above the run's worktree lie the user's files: a
//! `pyproject.toml` in the home folder would configure the Judge, and under
//! Landlock it cannot even be read, which crashes pytest. So swarm does the
//! walk itself, stops at the worktree, and hands pytest the result with
//! `-c`; pytest then parses the file as usual.

use std::path::{Path, PathBuf};

/// pytest 9's configuration file names, in its order of precedence.
const CONFIG_NAMES: [&str; 7] = [
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
];

/// The file pytest would take as its configuration when testing `root`,
/// looking no higher than `ceiling` (inclusive): the first file that holds
/// pytest configuration, else the first `pyproject.toml` seen, else none.
pub(super) fn locate(root: &Path, ceiling: &Path) -> Option<PathBuf> {
    let mut first_pyproject = None;
    for base in root.ancestors() {
        for name in CONFIG_NAMES {
            let path = base.join(name);
            if !path.is_file() {
                continue;
            }
            if name == "pyproject.toml" && first_pyproject.is_none() {
                first_pyproject = Some(path.clone());
            }
            if holds_pytest_config(name, &path) {
                return Some(path);
            }
        }
        if base == ceiling || !base.starts_with(ceiling) {
            break;
        }
    }
    first_pyproject
}

/// Whether pytest would take the file as its configuration. A file that
/// cannot be parsed counts, so pytest reports the problem itself.
fn holds_pytest_config(name: &str, path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return true;
    };
    match name {
        "pyproject.toml" => match text.parse::<toml::Table>() {
            Ok(document) => document
                .get("tool")
                .and_then(|tool| tool.get("pytest"))
                .and_then(|pytest| pytest.as_table())
                .is_some_and(|table| !table.is_empty()),
            Err(_) => true,
        },
        "tox.ini" => ini_sections(&text).any(|s| s == "pytest"),
        // `[pytest]` in setup.cfg is an error pytest reports itself.
        "setup.cfg" => ini_sections(&text).any(|s| s == "tool:pytest" || s == "pytest"),
        _ => true,
    }
}

/// The section names of an INI text.
fn ini_sections(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|line| {
        let line = line.trim();
        line.strip_prefix('[')?.strip_suffix(']').map(str::trim)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_nearest_file_with_pytest_config_wins_in_pytest_order() {
        let dir = tree(&[
            ("repo/setup.cfg", "[tool:pytest]\naddopts = -q\n"),
            ("repo/pyproject.toml", "[project]\nname = 'x'\n"),
            ("repo/tox.ini", "[tox]\nenv_list = py\n"),
            ("repo/svc/tox.ini", "[pytest]\n"),
            ("repo/svc/setup.cfg", "[tool:pytest]\n"),
            ("repo/svc/pkg/README", ""),
        ]);
        let repo = dir.path().join("repo");
        let found = locate(&repo.join("svc/pkg"), &repo).expect("found");
        assert_eq!(found, repo.join("svc/tox.ini"));
        // The repository root's pyproject has no pytest table; setup.cfg does.
        assert_eq!(locate(&repo, &repo), Some(repo.join("setup.cfg")));
    }

    #[test]
    fn nothing_above_the_ceiling_is_considered() {
        let dir = tree(&[
            ("pytest.ini", "[pytest]\naddopts = -p evil\n"),
            ("work/tests/test_x.py", ""),
        ]);
        let work = dir.path().join("work");
        assert_eq!(locate(&work.join("tests"), &work), None);
        assert_eq!(
            locate(&work, dir.path()),
            Some(dir.path().join("pytest.ini"))
        );
    }

    #[test]
    fn a_pyproject_without_pytest_tables_is_the_fallback() {
        let dir = tree(&[
            ("pyproject.toml", "[project]\nname = 'x'\n[tool.pytest]\n"),
            (
                "sub/pyproject.toml",
                "[tool.pytest.ini_options]\naddopts = '-q'\n",
            ),
            ("other/pyproject.toml", "[tool.black]\n"),
        ]);
        let root = dir.path();
        assert_eq!(locate(root, root), Some(root.join("pyproject.toml")));
        assert_eq!(
            locate(&root.join("sub"), root),
            Some(root.join("sub/pyproject.toml"))
        );
        assert_eq!(
            locate(&root.join("other"), root),
            Some(root.join("other/pyproject.toml"))
        );
        assert!(holds_pytest_config(
            "pyproject.toml",
            &root.join("sub/pyproject.toml")
        ));
        assert!(!holds_pytest_config(
            "pyproject.toml",
            &root.join("pyproject.toml")
        ));
    }
}
