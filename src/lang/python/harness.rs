//! What in a change would alter how pytest runs rather than the code under
//! test: the pytest sections of `setup.cfg`, `tox.ini` and `pyproject.toml`,
//! `pytest11` entry points, plugin or hook code in an ordinary module, and
//! the docstring examples pytest runs with `--doctest-modules`.
//! Pure functions over the text before and after; the Reviewer's rules ask
//! them through [`crate::lang::Language`]. Which whole files are test
//! configuration is decided by path ([`super::files::PYTEST_CONFIG_FILES`]
//! and friends), not here.
//!
//! These checks are conservative and textual: they may refuse a harmless
//! change that merely mentions pytest, never the other way round for the
//! forms they know. The Judge's final re-check with the base commit's test
//! harness is what holds regardless of them.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;

/// The pytest parts of a shared config file (`setup.cfg`, `tox.ini`,
/// `pyproject.toml`) that differ between `before` and `after`, described
/// for a sentence (`the [tool:pytest] section`), or `None` when they are
/// the same. A file that does not exist is empty.
pub fn changed_pytest_sections(name: &str, before: &str, after: &str) -> Option<String> {
    let (old, new) = (pytest_sections(before), pytest_sections(after));
    let mut names: Vec<&String> = old
        .keys()
        .chain(new.keys())
        .filter(|section| old.get(*section) != new.get(*section))
        .collect();
    names.sort();
    names.dedup();
    if let Some(first) = names.first() {
        return Some(format!("the [{first}] section"));
    }
    if name == "pyproject.toml" {
        return changed_pyproject_tables(before, after);
    }
    None
}

/// The sections whose name mentions pytest, by normalised name (lowercase,
/// no spaces), with their lines (trailing whitespace removed). Any line
/// starting with `[` after optional indentation counts as a header: more
/// than iniconfig and TOML accept, so nothing pytest reads is missed.
fn pytest_sections(text: &str) -> BTreeMap<String, Vec<&str>> {
    let mut sections: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(header) = trimmed.strip_prefix('[') {
            let name: String = header
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or_default()
                .chars()
                .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
                .collect::<String>()
                .to_ascii_lowercase();
            current = name.contains("pytest").then_some(name);
            if let Some(name) = &current {
                sections.entry(name.clone()).or_default();
            }
            continue;
        }
        if let Some(name) = &current {
            sections
                .get_mut(name)
                .expect("the section was entered above")
                .push(line.trim_end());
        }
    }
    sections
}

/// `tool.pytest` and pytest entry points of two `pyproject.toml` texts,
/// compared as TOML values (so dotted keys and inline tables count too).
fn changed_pyproject_tables(before: &str, after: &str) -> Option<String> {
    let parse = |text: &str| text.parse::<toml::Table>().ok();
    let (old, new) = (parse(before), parse(after));
    let new = match (old.is_some() || before.trim().is_empty(), new) {
        (_, Some(new)) => new,
        (true, None) => {
            return Some("pyproject.toml as a whole (it no longer parses as TOML)".to_string());
        }
        (false, None) => return None,
    };
    let old = old.unwrap_or_default();
    let get = |table: &toml::Table, path: &[&str]| -> Option<toml::Value> {
        let mut value = table.get(path[0])?;
        for key in &path[1..] {
            value = value.get(key)?;
        }
        Some(value.clone())
    };
    for (path, what) in [
        (&["tool", "pytest"][..], "the [tool.pytest] table"),
        (
            &["project", "entry-points", "pytest11"][..],
            "a pytest11 entry point",
        ),
        (
            &["tool", "poetry", "plugins", "pytest11"][..],
            "a pytest11 entry point",
        ),
    ] {
        if get(&old, path) != get(&new, path) {
            return Some(what.to_string());
        }
    }
    None
}

/// Whether a line added or removed by the change mentions `pytest11`, the
/// entry-point group of pytest plugins (`setup.py`, `setup.cfg`,
/// `pyproject.toml`, anywhere).
pub fn touches_pytest11(before: &str, after: &str) -> bool {
    similar::TextDiff::from_lines(before, after)
        .iter_all_changes()
        .any(|c| c.tag() != similar::ChangeTag::Equal && c.value().contains("pytest11"))
}

/// What makes a module a pytest plugin or brings pytest into code under
/// test: `pytest_plugins`, a `pytest_*` hook function, `hookimpl`, or an
/// import of `pytest`, `_pytest` or `pluggy`.
const PLUGIN_FORMS: &[(&str, &str)] = &[
    (r"\bpytest_plugins\b", "`pytest_plugins`"),
    (
        r"^\s*(?:async\s+)?def\s+pytest_\w+",
        "a pytest hook function (`def pytest_…`)",
    ),
    (
        r"\b[Hh]ookimpl(?:Marker)?\b",
        "a pytest hook implementation (`hookimpl`)",
    ),
    (
        r"^\s*import\s+[\w., ]*\b(?:pytest|_pytest|pluggy)\b",
        "an import of pytest or pluggy",
    ),
    (
        r"^\s*from\s+(?:pytest|_pytest|pluggy)\b",
        "an import of pytest or pluggy",
    ),
];

/// A plugin form of [`PLUGIN_FORMS`] that `after` has more often than
/// `before`: its description and the 1-based line of the first new one.
pub fn new_plugin_form(before: &str, after: &str) -> Option<(&'static str, usize)> {
    static PATTERNS: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        PLUGIN_FORMS
            .iter()
            .map(|(re, what)| (Regex::new(re).expect("static regex"), *what))
            .collect()
    });
    for (pattern, what) in patterns {
        let mut old: BTreeMap<&str, usize> = BTreeMap::new();
        for line in before.lines().filter(|l| pattern.is_match(l)) {
            *old.entry(line.trim()).or_default() += 1;
        }
        for (index, line) in after.lines().enumerate() {
            if !pattern.is_match(line) {
                continue;
            }
            match old.get_mut(line.trim()) {
                Some(count) if *count > 0 => *count -= 1,
                _ => return Some((what, index + 1)),
            }
        }
    }
    None
}

/// The doctest examples of a module's text: each `>>>` prompt with its
/// `...` continuation lines and the expected output after it, up to a blank
/// line, the next prompt or the end of the docstring; whitespace at the
/// line ends and the indentation do not count. With the line of its prompt
/// (1-based).
pub fn doctest_examples(text: &str) -> Vec<(usize, String)> {
    let mut examples: Vec<(usize, String)> = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let code = line.trim();
        let ends = code.is_empty() || code.starts_with("\"\"\"") || code.starts_with("\'\'\'");
        if code.starts_with(">>>") {
            examples.extend(current.take());
            current = Some((i + 1, code.to_string()));
        } else if ends {
            examples.extend(current.take());
        } else if let Some((_, example)) = current.as_mut() {
            example.push('\n');
            example.push_str(code.trim_end_matches("\"\"\"").trim_end());
        }
    }
    examples.extend(current);
    examples
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETUP_CFG: &str = "[metadata]\nname = shop\n\n[tool:pytest]\ntestpaths = tests\n";

    #[test]
    fn ini_pytest_sections_are_compared_and_others_are_not() {
        let metadata = SETUP_CFG.replace("name = shop", "name = shop2");
        assert_eq!(
            changed_pytest_sections("setup.cfg", SETUP_CFG, &metadata),
            None
        );
        let addopts = format!("{SETUP_CFG}addopts = -p helper\n");
        assert_eq!(
            changed_pytest_sections("setup.cfg", SETUP_CFG, &addopts).as_deref(),
            Some("the [tool:pytest] section")
        );
        let deselect = "[tool:pytest]\naddopts = --deselect test_stats.py::test_mean\n";
        assert!(changed_pytest_sections("setup.cfg", "", deselect).is_some());
        let spaced = "[ tool:pytest ]\naddopts = -p helper\n";
        assert!(changed_pytest_sections("setup.cfg", "", spaced).is_some());
        let tox = "[tox]\nenvlist = py3\n";
        let tox_pytest = format!("{tox}[pytest]\naddopts = -x\n");
        assert_eq!(
            changed_pytest_sections("tox.ini", tox, &tox_pytest).as_deref(),
            Some("the [pytest] section")
        );
    }

    #[test]
    fn pyproject_tables_are_compared_as_toml() {
        let base = "[project]\nname = \"shop\"\n";
        let dotted = format!("{base}\n[tool]\npytest.ini_options.addopts = \"-p helper\"\n");
        assert!(changed_pytest_sections("pyproject.toml", base, &dotted).is_some());
        let table = format!("{base}[tool.pytest.ini_options]\naddopts = \"-x\"\n");
        assert_eq!(
            changed_pytest_sections("pyproject.toml", base, &table).as_deref(),
            Some("the [tool.pytest.ini_options] section")
        );
        let inline = "tool = { pytest = { ini_options = { addopts = \"-x\" } } }\n";
        assert!(changed_pytest_sections("pyproject.toml", base, inline).is_some());
        let entry = format!("{base}[project.entry-points]\npytest11 = {{ h = \"helper\" }}\n");
        assert!(changed_pytest_sections("pyproject.toml", base, &entry).is_some());
        let version = base.replace("shop", "shop-2");
        assert_eq!(
            changed_pytest_sections("pyproject.toml", base, &version),
            None
        );
        assert!(changed_pytest_sections("pyproject.toml", base, "[project\n").is_some());
    }

    #[test]
    fn pytest11_lines_are_noticed() {
        assert!(touches_pytest11(
            "setup(name='x')\n",
            "setup(name='x', entry_points={'pytest11': ['h = helper']})\n"
        ));
        assert!(!touches_pytest11(
            "# pytest11 stays\nx = 1\n",
            "# pytest11 stays\nx = 2\n"
        ));
    }

    #[test]
    fn plugin_forms_are_found_only_when_new() {
        let hook = "def pytest_collection_modifyitems(items):\n    items.clear()\n";
        assert_eq!(
            new_plugin_form("", hook),
            Some(("a pytest hook function (`def pytest_…`)", 1))
        );
        assert_eq!(new_plugin_form(hook, hook), None);
        let plugins = "x = 1\npytest_plugins = ['helper']\n";
        assert_eq!(new_plugin_form("x = 1\n", plugins).map(|f| f.1), Some(2));
        for form in [
            "import pytest\n",
            "import os, pytest\n",
            "from _pytest import nodes\n",
            "import pluggy\n",
            "@pytest.hookimpl(tryfirst=True)\ndef f(): pass\n",
        ] {
            assert!(new_plugin_form("", form).is_some(), "{form}");
        }
        for harmless in [
            "import os\n",
            "import pytest_helpers_lib\n",
            "from pytestish import x\n",
            "def run_pytest_later(): pass\n",
        ] {
            assert_eq!(new_plugin_form("", harmless), None, "{harmless}");
        }
        let moved = "import os\nimport pytest\n";
        assert_eq!(new_plugin_form("import pytest\nimport os\n", moved), None);
    }
}
