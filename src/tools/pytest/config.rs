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
pub(crate) fn locate(root: &Path, ceiling: &Path) -> Option<PathBuf> {
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

/// The pytest options a configuration file named `name` sets, with their
/// values split as pytest splits its `args` options (shell words for an
/// INI text or a TOML string, the items of a TOML array). Empty when the
/// file holds no pytest configuration or does not parse.
pub(crate) fn pytest_options(name: &str, text: &str) -> Vec<(String, Vec<String>)> {
    match name {
        "pyproject.toml" | "pytest.toml" | ".pytest.toml" => {
            let Ok(document) = text.parse::<toml::Table>() else {
                return Vec::new();
            };
            let table = if name == "pyproject.toml" {
                let pytest = document.get("tool").and_then(|t| t.get("pytest"));
                pytest
                    .and_then(|p| p.get("ini_options"))
                    .or(pytest)
                    .and_then(|t| t.as_table())
            } else {
                document.get("pytest").and_then(|t| t.as_table())
            };
            table
                .map(|table| {
                    table
                        .iter()
                        .filter_map(|(key, value)| {
                            let values = match value {
                                toml::Value::String(s) => shell_words(s),
                                toml::Value::Array(items) => items
                                    .iter()
                                    .filter_map(|i| i.as_str().map(str::to_string))
                                    .collect(),
                                _ => return None,
                            };
                            Some((key.clone(), values))
                        })
                        .collect()
                })
                .unwrap_or_default()
        }
        _ => {
            let wanted: &[&str] = if name == "setup.cfg" {
                &["tool:pytest"]
            } else {
                &["pytest"]
            };
            ini_values(text, wanted)
                .into_iter()
                .map(|(key, value)| (key, shell_words(&value)))
                .collect()
        }
    }
}

/// `key = value` pairs of the INI sections named `wanted`; continuation
/// lines join the value.
fn ini_values(text: &str, wanted: &[&str]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(section) = trimmed.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            inside = wanted.contains(&section.trim());
            continue;
        }
        if !inside || trimmed.is_empty() || trimmed.starts_with(['#', ';']) {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some(last) = out.last_mut() {
                last.1.push(' ');
                last.1.push_str(trimmed);
            }
            continue;
        }
        if let Some((key, value)) = trimmed.split_once(['=', ':']) {
            out.push((key.trim().to_string(), value.trim().to_string()));
        }
    }
    out
}

/// Shell words, as Python's `shlex.split` makes them: whitespace apart,
/// quotes kept together and removed.
fn shell_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => word.push(c),
        }
    }
    if started || !word.is_empty() {
        words.push(word);
    }
    words
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
    fn options_read_as_pytest_splits_them() {
        let ini = "[pytest]\naddopts = -q --doctest-glob='*.rst'\ntestpaths =\n    tests\n    docs\n[other]\nx = 1\n";
        assert_eq!(
            pytest_options("tox.ini", ini),
            vec![
                (
                    "addopts".to_string(),
                    vec!["-q".to_string(), "--doctest-glob=*.rst".to_string()]
                ),
                (
                    "testpaths".to_string(),
                    vec!["tests".to_string(), "docs".to_string()]
                ),
            ]
        );
        let toml = "[tool.pytest.ini_options]\ntestpaths = [\"test.py\"]\naddopts = \"--cov=x\"\n";
        assert_eq!(
            pytest_options("pyproject.toml", toml),
            vec![
                ("addopts".to_string(), vec!["--cov=x".to_string()]),
                ("testpaths".to_string(), vec!["test.py".to_string()]),
            ]
        );
        assert!(pytest_options("setup.cfg", "[pytest]\naddopts = -q\n").is_empty());
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
