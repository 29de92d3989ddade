//! The Reviewer's rules, one behaviour each, matched by variant.

use super::*;
use crate::pipeline::Unusable;
use swarm_patch::{EditOp, FileEdit, ReplyContext};

const STATS: &str = "def mean(xs):\n    return sum(xs) / len(xs)\n";
const FIXED: &str = "def mean(xs):\n    \"\"\"The mean; 0.0 for no values.\"\"\"\n    return sum(xs) / len(xs) if xs else 0.0\n";
const SETUP_CFG: &str = "[metadata]\nname = stats\n\n[tool:pytest]\ntestpaths = tests\n";

struct Fixture {
    dir: tempfile::TempDir,
    severities: BTreeMap<String, Severity>,
    seen: HashSet<String>,
    submodules: Vec<String>,
    limits: SizeLimits,
    shown: ShownVersions,
    tests: crate::tools::TestFiles,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("stats.py", STATS);
        write("tests/test_stats.py", "def test_x():\n    assert True\n");
        write("setup.cfg", SETUP_CFG);
        write("vendor/lib/mod.py", "x = 1\n");
        let severities = [("stats.py".to_string(), Severity::Low)]
            .into_iter()
            .collect();
        Self {
            dir,
            severities,
            seen: HashSet::new(),
            submodules: vec!["vendor/lib".into()],
            limits: SizeLimits::default(),
            shown: ShownVersions::default(),
            tests: crate::tools::TestFiles::default(),
        }
    }

    fn review_proposal(&self, proposal: &Proposal, allow_tests: bool) -> Review {
        review(
            proposal,
            &ReviewContext {
                root: self.dir.path(),
                target: &TargetDir::new("svc"),
                severities: &self.severities,
                limits: self.limits,
                allow_test_edits: allow_tests,
                seen: &self.seen,
                base: "abc",
                submodules: &self.submodules,
                shown: &self.shown,
                task: None,
                tests: &self.tests,
            },
        )
    }

    fn review(&self, reply: &str, allow_tests: bool) -> Review {
        let ctx = ReplyContext {
            target_prefix: "svc".into(),
            requested: vec!["stats.py".into()],
            language: crate::lang::code_language(&[]),
        };
        let proposal = Proposal {
            file: "stats.py".into(),
            reply: reply.into(),
            edits: patch::parse_reply(reply, &ctx).map_err(|e| ReplyProblem::Patch(e).into()),
            debugging: true,
            excerpts: None,
        };
        self.review_proposal(&proposal, allow_tests)
    }

    fn review_file(&self, file: &str, reply: &str, allow_tests: bool) -> Review {
        let ctx = ReplyContext {
            target_prefix: "svc".into(),
            requested: vec![file.into()],
            language: crate::lang::code_language(&[]),
        };
        let proposal = Proposal {
            file: file.into(),
            reply: reply.into(),
            edits: patch::parse_reply(reply, &ctx).map_err(|e| ReplyProblem::Patch(e).into()),
            debugging: true,
            excerpts: None,
        };
        self.review_proposal(&proposal, allow_tests)
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(rel)).unwrap()
    }
}

fn diff(path: &str, before: &str, after: &str) -> String {
    format!("```diff\n{}```\n", patch::unified_diff(path, before, after))
}

fn rejected(review: Review) -> Rejection {
    match review {
        Review::Rejected(rejection) => rejection,
        Review::Accepted(c) => panic!("accepted {:?}", c.files),
    }
}

fn accepted(review: Review) -> Change {
    match review {
        Review::Accepted(change) => change,
        Review::Rejected(r) => panic!("rejected ({}): {r}", r.rule()),
    }
}

#[test]
fn accepts_a_good_change_with_repo_relative_writes() {
    let fx = Fixture::new();
    let change = accepted(fx.review(&diff("stats.py", STATS, FIXED), false));
    assert_eq!(change.files, vec!["stats.py"]);
    assert_eq!(change.writes[0].path, "svc/stats.py");
    assert_eq!(change.writes[0].content.as_deref(), Some(FIXED.as_bytes()));
    assert_eq!(change.changed_lines, 3);
    assert!(change.diff.contains("+    \"\"\"The mean"));
}

#[test]
fn paths_must_stay_inside_the_target() {
    let fx = Fixture::new();
    let escape = "```diff\n--- a/../outside.py\n+++ b/../outside.py\n@@ -0,0 +1 @@\n+x = 1\n```\n";
    assert_eq!(
        rejected(fx.review(escape, false)),
        Rejection::OutsideTarget {
            path: "../outside.py".into()
        }
    );
    let absolute = "```diff\n--- /etc/passwd\n+++ /etc/passwd\n@@ -0,0 +1 @@\n+x = 1\n```\n";
    assert_eq!(
        rejected(fx.review(absolute, false)),
        Rejection::AbsolutePath {
            path: "/etc/passwd".into()
        }
    );
    let git = "```diff\n--- a/.git/config\n+++ b/.git/config\n@@ -0,0 +1 @@\n+x = 1\n```\n";
    assert_eq!(
        rejected(fx.review(git, false)),
        Rejection::InsideGit {
            path: ".git/config".into()
        }
    );
    let upper = "```diff\n--- a/pkg/.GIT/hooks/x\n+++ b/pkg/.GIT/hooks/x\n@@ -0,0 +1 @@\n+x\n```\n";
    assert!(matches!(
        rejected(fx.review(upper, false)),
        Rejection::InsideGit { .. }
    ));
    let proposal = Proposal {
        file: "stats.py".into(),
        reply: String::new(),
        edits: Ok(vec![FileEdit {
            path: " ".into(),
            op: EditOp::Replace("x = 1\n".into()),
        }]),
        debugging: false,
        excerpts: None,
    };
    assert_eq!(
        rejected(fx.review_proposal(&proposal, false)),
        Rejection::EmptyPath
    );
}

#[test]
fn a_whole_file_labelled_with_a_hook_path_is_refused_by_name_not_applied_elsewhere() {
    let fx = Fixture::new();
    let reply = format!("FILE: .git/hooks/post-merge\n```python\n{FIXED}```\n");
    assert_eq!(
        rejected(fx.review(&reply, false)),
        Rejection::InsideGit {
            path: ".git/hooks/post-merge".into()
        }
    );
    assert_eq!(fx.read("stats.py"), STATS);
}

#[test]
fn symlinks_leading_out_are_refused() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.py"), "a = 1\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), fx.dir.path().join("link")).unwrap();
    let reply = diff("link/x.py", "a = 1\n", "a = 2\n");
    assert_eq!(
        rejected(fx.review(&reply, false)),
        Rejection::SymlinkOut {
            path: "link/x.py".into()
        }
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("x.py")).unwrap(),
        "a = 1\n"
    );
}

#[test]
fn submodules_are_never_changed() {
    let fx = Fixture::new();
    let reply = diff("vendor/lib/mod.py", "x = 1\n", "x = 2\n");
    assert_eq!(
        rejected(fx.review(&reply, true)),
        Rejection::InsideSubmodule {
            path: "vendor/lib/mod.py".into(),
            submodule: "vendor/lib".into()
        }
    );
    // A sibling whose name starts the same is not inside it.
    let reply = diff("vendor/library.py", "", "x = 2\n");
    accepted(fx.review(&reply, false));
}

#[test]
fn tests_are_left_alone_unless_allowed() {
    let fx = Fixture::new();
    let before = "def test_x():\n    assert True\n";
    let reply = diff(
        "tests/test_stats.py",
        before,
        "def test_x():\n    assert 1\n",
    );
    assert_eq!(
        rejected(fx.review(&reply, false)),
        Rejection::TestFile {
            path: "tests/test_stats.py".into()
        }
    );
    accepted(fx.review(&reply, true));
}

#[test]
fn javascript_tests_are_left_alone_unless_allowed() {
    let fx = Fixture::new();
    let before = "test('adds', () => {\n  expect(1).toBe(1);\n});\n";
    let after = "test('adds', () => {\n  expect(1).toBe(2);\n});\n";
    for path in [
        "src/money.test.ts",
        "lib/cart.spec.js",
        "__tests__/inventory.test.js",
    ] {
        std::fs::create_dir_all(fx.dir.path().join(path).parent().unwrap()).unwrap();
        std::fs::write(fx.dir.path().join(path), before).unwrap();
        let reply = diff(path, before, after);
        assert_eq!(
            rejected(fx.review(&reply, false)),
            Rejection::TestFile { path: path.into() },
            "{path}"
        );
        accepted(fx.review(&reply, true));
    }
}

#[test]
fn a_file_the_project_s_pytest_collects_is_a_test_whatever_its_name() {
    // `testpaths = ["test.py"]`: the root `test.py` holds the tests.
    let mut fx = Fixture::new();
    std::fs::write(
        fx.dir.path().join("test.py"),
        "def test_x():\n    assert True\n",
    )
    .unwrap();
    fx.tests.testpaths = vec!["test.py".into()];
    let reply = diff(
        "test.py",
        "def test_x():\n    assert True\n",
        "def test_x():\n    assert 1\n",
    );
    assert_eq!(
        rejected(fx.review(&reply, false)),
        Rejection::TestFile {
            path: "test.py".into()
        }
    );
    accepted(fx.review(&reply, true));
}

#[test]
fn doctest_examples_are_tests_when_pytest_runs_them() {
    let mut fx = Fixture::new();
    let before = "def half(x):\n    \"\"\"Half of x.\n\n    >>> half(4)\n    2\n    \"\"\"\n    return x // 2\n";
    std::fs::write(fx.dir.path().join("calc.py"), before).unwrap();
    fx.severities.insert("calc.py".into(), Severity::Low);
    let altered = diff(
        "calc.py",
        before,
        &before
            .replace("    2\n", "    2.0\n")
            .replace("x // 2", "x / 2"),
    );
    let fixed = diff("calc.py", before, &before.replace("x // 2", "int(x / 2)"));
    let added = diff(
        "calc.py",
        before,
        &before.replace(
            "    2\n    \"\"\"",
            "    2\n    >>> half(5)\n    2\n    \"\"\"",
        ),
    );
    // Without --doctest-modules a docstring is the code's to change.
    accepted(fx.review_file("calc.py", &altered, false));
    fx.tests.doctest_modules = true;
    assert_eq!(
        rejected(fx.review_file("calc.py", &altered, false)),
        Rejection::Doctest {
            path: "calc.py".into(),
            line: 4
        }
    );
    accepted(fx.review_file("calc.py", &fixed, false));
    accepted(fx.review_file("calc.py", &added, false));
    accepted(fx.review_file("calc.py", &altered, true));
}

#[test]
fn pytest_config_files_are_protected_anywhere_unless_allowed() {
    let fx = Fixture::new();
    for (path, part) in [
        ("conftest.py", "conftest.py"),
        ("pkg/conftest.py", "conftest.py"),
        ("pytest.ini", "pytest.ini"),
        (".pytest.ini", ".pytest.ini"),
        ("pytest.toml", "pytest.toml"),
    ] {
        let reply = diff(path, "", "[pytest]\naddopts = -p helper\n");
        assert_eq!(
            rejected(fx.review(&reply, false)),
            Rejection::TestConfig {
                path: path.into(),
                part: part.into(),
                runner: "pytest".into(),
            },
            "{path}"
        );
    }
    let reply = diff("conftest.py", "", "import pytest\n");
    accepted(fx.review(&reply, true));
}

#[test]
fn a_plugin_loaded_through_setup_cfg_addopts_is_refused() {
    let fx = Fixture::new();
    let addopts = format!("{SETUP_CFG}addopts = -p helper\n");
    let reply = format!(
        "{}{}",
        diff(
            "helper.py",
            "",
            "def pytest_collection_modifyitems(items):\n    items.clear()\n"
        ),
        diff("setup.cfg", SETUP_CFG, &addopts)
    );
    // The path rules pass; setup.cfg's pytest section is the first file rule.
    assert_eq!(
        rejected(fx.review(&reply, false)),
        Rejection::TestConfig {
            path: "setup.cfg".into(),
            part: "the [tool:pytest] section".into(),
            runner: "pytest".into(),
        }
    );
    // The plugin alone is refused as well.
    let reply = diff(
        "helper.py",
        "",
        "def pytest_collection_modifyitems(items):\n    items.clear()\n",
    );
    assert_eq!(
        rejected(fx.review(&reply, false)),
        Rejection::PytestPlugin {
            path: "helper.py".into(),
            line: 1,
            what: "a pytest hook function (`def pytest_…`)"
        }
    );
    accepted(fx.review(&reply, true));
}

#[test]
fn a_deselect_in_setup_cfg_is_refused_but_metadata_may_change() {
    let fx = Fixture::new();
    let deselect = format!("{SETUP_CFG}addopts = --deselect tests/test_stats.py::test_x\n");
    let reply = format!(
        "{}{}",
        diff("stats.py", STATS, FIXED),
        diff("setup.cfg", SETUP_CFG, &deselect)
    );
    assert!(matches!(
        rejected(fx.review(&reply, false)),
        Rejection::TestConfig { path, .. } if path == "setup.cfg"
    ));
    let renamed = SETUP_CFG.replace("name = stats", "name = statistics");
    accepted(fx.review(&diff("setup.cfg", SETUP_CFG, &renamed), false));
}

#[test]
fn pytest11_entry_points_and_pytest_imports_are_refused() {
    let fx = Fixture::new();
    let setup_py = "from setuptools import setup\nsetup(name='s', entry_points={'pytest11': ['h = helper']})\n";
    assert_eq!(
        rejected(fx.review(&diff("setup.py", "", setup_py), false)),
        Rejection::TestConfig {
            path: "setup.py".into(),
            part: "a pytest11 entry point".into(),
            runner: "pytest".into(),
        }
    );
    let import = format!("import pytest\n{STATS}");
    assert!(matches!(
        rejected(fx.review(&diff("stats.py", STATS, &import), false)),
        Rejection::PytestPlugin { line: 1, .. }
    ));
}

#[test]
fn interpreter_startup_files_are_refused() {
    let fx = Fixture::new();
    for path in ["sitecustomize.py", "pkg/usercustomize.py", "evil.pth"] {
        let reply = diff(path, "", "import os\n");
        assert_eq!(
            rejected(fx.review(&reply, false)),
            Rejection::StartupFile { path: path.into() },
            "{path}"
        );
    }
}

#[test]
fn changed_lines_and_changed_bytes_are_limited_by_severity() {
    let mut fx = Fixture::new();
    let big: String = (0..50).map(|i| format!("X{i} = {i}\n")).collect();
    assert_eq!(
        rejected(fx.review(&diff("stats.py", STATS, &format!("{STATS}{big}")), false)),
        Rejection::TooManyLines {
            path: "stats.py".into(),
            lines: 50,
            limit: 40,
            severity: Severity::Low
        }
    );
    // One line, 10,000 bytes: within 40 lines, over 40 × 120 bytes.
    let long = format!("{STATS}BLOB = '{}'\n", "x".repeat(10_000));
    let reason = rejected(fx.review(&diff("stats.py", STATS, &long), false));
    assert_eq!(
        reason,
        Rejection::TooManyBytes {
            path: "stats.py".into(),
            bytes: 10_010,
            limit: 4_800,
            severity: Severity::Low
        }
    );
    assert_eq!(reason.rule(), "too_many_bytes");
    fx.limits.bytes_per_line = 300;
    accepted(fx.review(&diff("stats.py", STATS, &long), false));
}

#[test]
fn syntax_danger_whitespace_and_repeats() {
    let mut fx = Fixture::new();
    let broken = "def mean(xs)\n    return sum(xs) / len(xs)\n";
    assert!(matches!(
        rejected(fx.review(&diff("stats.py", STATS, broken), false)),
        Rejection::SyntaxError { line: 1, .. }
    ));

    let evil =
        "import os\n\ndef mean(xs):\n    os.system('rm -rf /')\n    return sum(xs) / len(xs)\n";
    assert_eq!(
        rejected(fx.review(&diff("stats.py", STATS, evil), false)),
        Rejection::DangerousCall {
            path: "stats.py".into(),
            call: "os.system".into(),
            line: 4
        }
    );

    let spaced = "def mean(xs):\n    return sum(xs)  /  len(xs)\n";
    assert_eq!(
        rejected(fx.review(&diff("stats.py", STATS, spaced), false)),
        Rejection::WhitespaceOnly
    );

    let good = diff("stats.py", STATS, FIXED);
    let change = accepted(fx.review(&good, false));
    fx.seen.insert(change.hash);
    assert_eq!(rejected(fx.review(&good, false)), Rejection::Repeat);
}

#[test]
fn a_file_that_does_not_parse_is_told_its_language() {
    let fx = Fixture::new();
    let broken_ts = "export function total(xs: number[]): number {\n  return xs.reduce((a, b) => a + b, 0;\n}\n";
    let reply = diff("src/money.ts", "", broken_ts).replace("--- a/src/money.ts", "--- /dev/null");
    let rejection = rejected(fx.review_file("src/money.ts", &reply, false));
    assert!(
        matches!(
            &rejection,
            Rejection::SyntaxError { path, language: "JavaScript/TypeScript", .. } if path == "src/money.ts"
        ),
        "{rejection:?}"
    );
    assert!(
        rejection
            .to_string()
            .starts_with("after the change src/money.ts does not parse as JavaScript/TypeScript ("),
        "{rejection}"
    );
    let broken_py = "def mean(xs)\n    return sum(xs) / len(xs)\n";
    let rejection = rejected(fx.review(&diff("stats.py", STATS, broken_py), false));
    assert_eq!(
        rejection.to_string(),
        "after the change stats.py does not parse as Python (syntax error at line 1, column 1)"
    );
}

#[test]
fn dynamic_imports_are_dangerous_calls() {
    let fx = Fixture::new();
    let dynamic = "import importlib\n\ndef mean(xs):\n    importlib.import_module('os').system('id')\n    return sum(xs) / len(xs)\n";
    assert_eq!(
        rejected(fx.review(&diff("stats.py", STATS, dynamic), false)),
        Rejection::DangerousCall {
            path: "stats.py".into(),
            call: "importlib.import_module".into(),
            line: 4
        }
    );
}

#[test]
fn unusable_replies_and_bad_hunks_carry_their_reason() {
    let fx = Fixture::new();
    assert_eq!(
        rejected(fx.review("Looks fine to me.", false)),
        Rejection::Unusable(Unusable::from(ReplyProblem::Patch(PatchError::NoChange)))
    );
    let wrong = "```diff\n--- a/stats.py\n+++ b/stats.py\n@@ -1,2 +1,2 @@\n-def median(xs):\n-    pass\n+def median(xs):\n+    return 1\n```\n";
    let reason = rejected(fx.review(wrong, false));
    assert!(
        matches!(&reason, Rejection::DoesNotApply(PatchError::Apply(m)) if m.contains("stats.py")),
        "{reason}"
    );
    assert_eq!(fx.read("stats.py"), STATS);
}

#[test]
fn path_rules_come_before_applying_and_in_a_fixed_order() {
    let fx = Fixture::new();
    // A test edit plus an escape: `outside_target` runs before `test_file`.
    let reply = format!(
        "{}{}",
        diff("tests/test_stats.py", "", "x = 1\n"),
        "```diff\n--- a/../x.py\n+++ b/../x.py\n@@ -0,0 +1 @@\n+x = 1\n```\n"
    );
    assert_eq!(rejected(fx.review(&reply, false)).rule(), "outside_target");
    // A hunk that would not apply to a test file: the path rule decides first.
    let reply =
        "```diff\n--- a/tests/test_stats.py\n+++ b/tests/test_stats.py\n@@ @@\n-nothing\n+x\n```\n";
    assert_eq!(rejected(fx.review(reply, false)).rule(), "test_file");
}

#[test]
fn a_size_rejection_says_what_to_do() {
    let path = || "p.py".to_string();
    let sentence = Rejection::TooManyBytes {
        path: path(),
        bytes: 2,
        limit: 1,
        severity: Severity::High,
    }
    .to_string();
    assert_eq!(
        sentence,
        "the change to p.py adds or removes 2 bytes; the limit for a high-severity file is 1 \
         bytes: make a smaller change, with lines of ordinary length"
    );
}

impl Fixture {
    /// Reviews `reply` as a task's change, with `taken` as the names a new
    /// module may not take.
    fn review_task(&self, reply: &str, taken: &std::collections::BTreeSet<String>) -> Review {
        let ctx = ReplyContext {
            target_prefix: "svc".into(),
            requested: vec!["stats.py".into()],
            language: crate::lang::code_language(&[]),
        };
        let proposal = Proposal {
            file: "stats.py".into(),
            reply: reply.into(),
            edits: patch::parse_reply(reply, &ctx).map_err(|e| ReplyProblem::Patch(e).into()),
            debugging: false,
            excerpts: None,
        };
        review(
            &proposal,
            &ReviewContext {
                root: self.dir.path(),
                target: &TargetDir::new("svc"),
                severities: &self.severities,
                limits: self.limits,
                allow_test_edits: false,
                seen: &self.seen,
                base: "abc",
                submodules: &self.submodules,
                shown: &self.shown,
                tests: &self.tests,
                task: Some(TaskReview {
                    max_changed_lines: 20,
                    max_changed_bytes: 20 * 120,
                    taken_names: taken,
                }),
            },
        )
    }
}

#[test]
fn a_task_may_move_code_past_a_file_limit_but_not_shadow_a_module() {
    let fx = Fixture::new();
    let taken: std::collections::BTreeSet<String> =
        ["json".to_string(), "statistics".to_string()].into();
    // stats.py is low severity (40 lines): moving 60 lines out of it and
    // into a new module is a task's move, not 120 changed lines.
    let body: String = (0..60).map(|i| format!("x{i} = {i}\n")).collect();
    let big = format!("{STATS}{body}");
    std::fs::write(fx.dir.path().join("stats.py"), &big).unwrap();
    let reply = format!(
        "{}{}",
        diff("stats.py", &big, STATS),
        diff("numbers.py", "", &body).replace("--- a/numbers.py", "--- /dev/null")
    );
    let change = accepted(fx.review_task(&reply, &taken));
    assert_eq!(change.files.len(), 2);
    // The same move into a module named after the standard library is refused.
    let reply = format!(
        "{}{}",
        diff("stats.py", &big, STATS),
        diff("json.py", "", &body).replace("--- a/json.py", "--- /dev/null")
    );
    let rejection = rejected(fx.review_task(&reply, &taken));
    assert_eq!(rejection.rule(), "shadows_module", "{rejection}");
    // A rewrite of that size is not a move.
    let rewritten: String = (0..60).map(|i| format!("y{i} = {i} * 2\n")).collect();
    let reply = diff("stats.py", &big, &format!("{STATS}{rewritten}"));
    let rejection = rejected(fx.review_task(&reply, &taken));
    assert_eq!(rejection.rule(), "too_many_lines", "{rejection}");
}
