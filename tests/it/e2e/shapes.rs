//! Real projects' shapes, end to end: a CLI module whose `main` exits, a
//! root `test.py` that `testpaths` names, a test that calls through a
//! wrapper re-exported by its package, a fix that spans two files — each
//! built in a temp folder and run with the real binary, git, pytest and
//! pylint, and a loopback model (helpers in `as_they_are.rs`).

use super::as_they_are::{asked, run, run_with_model, FLAT_TESTS};
use super::summary_of;
use crate::support::fixture::{prompt_of, read_log};
use crate::support::llm_server::{LlmServer, RecordedRequest, Reply};
use crate::support::repo::TestRepo;

/// A command-line module with no tests: ruff removes its unused import,
/// and its `main()` ends the interpreter the way argparse and `sys.exit`
/// do.
const CLI: &str = r#"import json
import os
import sys


def greet(name):
    return "hello " + name


def main():
    print(greet("world"))
    sys.exit(0)


def fail():
    raise SystemExit(2)


def stop():
    raise KeyboardInterrupt


def vanish():
    os._exit(0)
"#;

#[test]
fn a_module_whose_main_exits_is_reported_not_checked_and_the_fix_is_delivered() {
    let repo = TestRepo::with_files(&[("cli.py", CLI)]);
    let start = repo.head();
    let out = run(&repo, &["--offline"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    assert_ne!(repo.head(), start, "the fix was delivered");
    assert!(!repo.read("cli.py").contains("import json\n"));

    // The Judge's behaviour check says what it could not compare, and why.
    let log = read_log(&repo.tmp().join("cwd/logs/experiment_data.json"));
    let checks: Vec<String> = log
        .iter()
        .filter(|e| e["agent"] == "Judge" && !e["details"]["behaviour"].is_null())
        .map(|e| e["details"]["behaviour"].to_string())
        .collect();
    let all = checks.join("\n");
    for (function, why) in [
        ("main()", "SystemExit"),
        ("fail()", "SystemExit"),
        ("stop()", "KeyboardInterrupt"),
        ("vanish()", "os._exit"),
    ] {
        assert!(all.contains(function) && all.contains(why), "{all}");
    }
}

/// A flat module with one root `test.py` (`testpaths = ["test.py"]`), as
/// small libraries have it: `bump` has a bug.
const SEMVER: &str = "\"\"\"Version numbers.\"\"\"\n\n\ndef bump(version):\n    \
\"\"\"The next patch version.\"\"\"\n    major, minor, patch = version.split(\".\")\n    \
return f\"{major}.{minor}.{int(patch)}\"\n";
const SEMVER_TESTS: &str = "from semver import bump\n\n\ndef test_bump():\n    \
assert bump(\"1.2.3\") == \"1.2.4\"\n";

#[test]
fn a_root_test_py_that_pytest_collects_is_a_test_never_the_fixer_s() {
    let repo = TestRepo::with_files(&[
        (
            "pyproject.toml",
            "[tool.pytest.ini_options]\ntestpaths = [\"test.py\"]\n",
        ),
        ("semver.py", SEMVER),
        ("test.py", SEMVER_TESTS),
    ]);
    // A model that, asked about `test.py`, rewrites its failing assertion,
    // and asked about `semver.py`, fixes the bug; its plan blames `test.py`.
    let server = LlmServer::start(|request: &RecordedRequest| {
        let prompt = prompt_of(request);
        if prompt.starts_with("Write a refactoring plan") {
            let plan = "# Refactoring plan\n\n## Summary\n\nThe test fails.\n\n## test.py\n\n\
                        - **Type**: bug\n  **Severity**: high\n  **Location**: `test_bump`\n  \
                        **Description**: the expected value is wrong.\n  \
                        **Suggested fix**: expect what bump returns.\n";
            return Reply::text_for(request, plan);
        }
        let (file, current) = asked(&prompt).unwrap_or_default();
        let after = match file.as_str() {
            "test.py" => current.replace("\"1.2.4\"", "\"1.2.3\""),
            "semver.py" => current.replace("{int(patch)}", "{int(patch) + 1}"),
            _ => current.clone(),
        };
        if after == current {
            return Reply::text_for(request, "NO CHANGE: looks right.");
        }
        let body = similar::TextDiff::from_lines(current.as_str(), after.as_str())
            .unified_diff()
            .header(&format!("a/{file}"), &format!("b/{file}"))
            .to_string();
        Reply::text_for(request, &format!("```diff\n{body}```\n"))
    });
    let out = run_with_model(&repo, &server, &["--max-iterations", "3"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        repo.read("test.py"),
        SEMVER_TESTS,
        "the tests are untouched"
    );
    assert!(repo.read("semver.py").contains("{int(patch) + 1}"));
    let asked_files: Vec<String> = server
        .requests()
        .iter()
        .filter_map(|r| asked(&prompt_of(r)).map(|(file, _)| file))
        .collect();
    assert!(
        !asked_files.iter().any(|f| f == "test.py"),
        "{asked_files:?}"
    );
}

#[test]
fn a_test_calling_through_a_wrapper_reaches_the_module_that_defines_the_code() {
    // python-semver's shape: `semver.cmd_compare` is `_deprecated.py`'s
    // `deprecated(cli.cmd_compare)`; the bug is in `cli.py`, and no
    // traceback names it (the test's assertion fails on a wrong value).
    let repo = TestRepo::with_files(&[
        (
            "pyproject.toml",
            "[project]\nname = \"semver\"\nversion = \"3.0.0\"\n\n\
             [tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
        ),
        (
            "src/semver/__init__.py",
            "\"\"\"Semantic versions.\"\"\"\nfrom ._deprecated import cmd_compare\nfrom .version import parse\n",
        ),
        (
            "src/semver/_deprecated.py",
            "\"\"\"Deprecated entry points.\"\"\"\nimport functools\n\nfrom . import cli\n\n\n\
             def deprecated(func):\n    \"\"\"Marks func deprecated.\"\"\"\n\n    \
             @functools.wraps(func)\n    def wrapper(*args, **kwargs):\n        \
             return func(*args, **kwargs)\n\n    return wrapper\n\n\n\
             cmd_compare = deprecated(cli.cmd_compare)\n",
        ),
        (
            "src/semver/cli.py",
            "\"\"\"The command line.\"\"\"\nfrom .version import parse\n\n\n\
             def cmd_compare(first, second):\n    \"\"\"-1, 0 or 1 as first is lower, equal or higher.\"\"\"\n    \
             a, b = parse(first), parse(second)\n    return str((a > b) - (a < b) + 1)\n",
        ),
        (
            "src/semver/version.py",
            "\"\"\"Parsing.\"\"\"\n\n\ndef parse(text):\n    \"\"\"The version's numbers.\"\"\"\n    \
             return tuple(int(p) for p in text.split(\".\"))\n",
        ),
        (
            "tests/test_cli.py",
            "import semver\n\n\ndef test_compare():\n    assert semver.cmd_compare(\"1.0.0\", \"2.0.0\") == \"-1\"\n\n\n\
             def test_parse():\n    assert semver.parse(\"1.2.3\") == (1, 2, 3)\n",
        ),
    ]);
    let server = LlmServer::start(|request: &RecordedRequest| {
        let prompt = prompt_of(request);
        if prompt.starts_with("Write a refactoring plan") {
            let plan = "# Refactoring plan\n\n## Summary\n\nA comparison test fails; the package needs a look.\n";
            return Reply::text_for(request, plan);
        }
        match asked(&prompt) {
            Some((file, current)) if file == "src/semver/cli.py" => {
                let after = current.replace(" + 1)\n", ")\n");
                let body = similar::TextDiff::from_lines(current.as_str(), after.as_str())
                    .unified_diff()
                    .header(&format!("a/{file}"), &format!("b/{file}"))
                    .to_string();
                Reply::text_for(request, &format!("```diff\n{body}```\n"))
            }
            _ => Reply::text_for(request, "NO CHANGE: looks right."),
        }
    });
    let out = run_with_model(&repo, &server, &["--max-iterations", "3"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!repo.read("src/semver/cli.py").contains(" + 1)"));
    // `cli.py` was the first file the Fixer was asked about.
    let first = server
        .requests()
        .iter()
        .find_map(|r| asked(&prompt_of(r)).map(|(file, _)| file));
    assert_eq!(first.as_deref(), Some("src/semver/cli.py"), "{stderr}");
}

#[test]
fn a_commit_that_changes_two_files_names_both_in_its_subject() {
    let helpers =
        "\"\"\"Helpers.\"\"\"\n\n\ndef negate(x):\n    \"\"\"Minus x.\"\"\"\n    return -x\n";
    let calc = "\"\"\"Arithmetic.\"\"\"\nfrom helpers import negate\n\n\n\
                def add(a, b):\n    \"\"\"The sum.\"\"\"\n    return a + negate(b)\n";
    let repo = TestRepo::with_files(&[
        ("helpers.py", helpers),
        ("calc.py", calc),
        ("tests/test_calc.py", FLAT_TESTS),
    ]);
    let fixed_helpers = helpers.replace("def negate(x):\n    \"\"\"Minus x.\"\"\"\n    return -x\n",
        "def negate(x):\n    \"\"\"Minus x.\"\"\"\n    return -x\n\n\ndef same(x):\n    \"\"\"x itself.\"\"\"\n    return x\n");
    let fixed_calc = calc
        .replace("from helpers import negate", "from helpers import same")
        .replace("negate(b)", "same(b)");
    let reply = format!(
        "Fix add() with a helper of its own.\n\n```diff\n{}{}```\n",
        similar::TextDiff::from_lines(calc, fixed_calc.as_str())
            .unified_diff()
            .header("a/calc.py", "b/calc.py"),
        similar::TextDiff::from_lines(helpers, fixed_helpers.as_str())
            .unified_diff()
            .header("a/helpers.py", "b/helpers.py"),
    );
    let server = LlmServer::start(move |request: &RecordedRequest| {
        let prompt = prompt_of(request);
        if prompt.starts_with("Fix and improve `calc.py`") {
            Reply::text_for(request, &reply)
        } else if prompt.starts_with("Write a refactoring plan") {
            Reply::text_for(
                request,
                "# Refactoring plan\n\n## Summary\n\nadd() is wrong.\n",
            )
        } else {
            Reply::text_for(request, "NO CHANGE: looks right.")
        }
    });
    let out = run_with_model(&repo, &server, &["--max-iterations", "2"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let subject = repo.git(&["log", "-1", "--format=%s"]);
    assert!(subject.ends_with("(calc.py, helpers.py)"), "{subject}");
}
