//! Real pytest on small projects: outcomes, ids, no tests, collection
//! errors, timeouts and cancels.

use std::time::{Duration, Instant};

use swarm::cancel::Cancel;
use swarm::tools::*;

use crate::support::*;

const CALC: &str =
    "def add(a, b):\n    return a + b\n\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n";

const CALC_TESTS: &str = r#"import pytest
from calc import add, mean


def test_add():
    assert add(1, 2) == 3


def test_mean_empty():
    assert mean([]) == 0


class TestMean:
    @pytest.mark.parametrize("xs,expected", [([2], 2), ([1, 2], 2)])
    def test_values(self, xs, expected):
        assert mean(xs) == expected


@pytest.fixture
def broken():
    raise RuntimeError("fixture exploded")


def test_uses_broken(broken):
    pass


@pytest.mark.skip(reason="not yet")
def test_later():
    pass
"#;

fn outcome_of<'a>(run: &'a swarm::tools::TestRun, id: &str) -> &'a swarm::tools::TestCase {
    run.cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id} in {:#?}", run.cases))
}

#[test]
fn pytest_reports_every_outcome_with_node_ids() {
    let dir = project(&[("calc.py", CALC), ("tests/test_calc.py", CALC_TESTS)]);
    let before = list_files(dir.path());
    let run = run_pytest(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        Duration::from_secs(60),
        &Cancel::new(),
    )
    .expect("pytest runs");
    assert_eq!(run.exit_code, Some(1));
    assert!(!run.timed_out && !run.no_tests);
    let ids: Vec<&str> = run.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "tests/test_calc.py::test_add",
            "tests/test_calc.py::test_mean_empty",
            "tests/test_calc.py::TestMean::test_values[xs0-2]",
            "tests/test_calc.py::TestMean::test_values[xs1-2]",
            "tests/test_calc.py::test_uses_broken",
            "tests/test_calc.py::test_later",
        ]
    );
    assert_eq!(
        outcome_of(&run, "tests/test_calc.py::test_add").outcome,
        TestOutcome::Passed
    );
    let empty = outcome_of(&run, "tests/test_calc.py::test_mean_empty");
    assert_eq!(empty.outcome, TestOutcome::Failed);
    assert_eq!(
        empty.message.as_deref(),
        Some("ZeroDivisionError: division by zero")
    );
    let details = empty.details.as_deref().expect("traceback");
    assert!(
        details.contains("calc.py:6: ZeroDivisionError"),
        "{details}"
    );
    assert!(
        !details.contains(&dir.path().display().to_string()),
        "paths are relative"
    );
    let broken = outcome_of(&run, "tests/test_calc.py::test_uses_broken");
    assert_eq!(broken.outcome, TestOutcome::Error);
    assert!(broken
        .message
        .as_deref()
        .unwrap_or("")
        .contains("fixture exploded"));
    let later = outcome_of(&run, "tests/test_calc.py::test_later");
    assert_eq!(later.outcome, TestOutcome::Skipped);
    assert_eq!(later.message.as_deref(), Some("not yet"));
    assert!(run.command.contains("-m pytest -q -p no:cacheprovider"));
    assert!(run.output.contains("failed"), "{}", run.output);
    // Nothing written into the tested tree: no cache, no bytecode, no report.
    assert_eq!(list_files(dir.path()), before);
}

#[test]
fn pytest_ids_are_stable_across_roots() {
    let a = project(&[("calc.py", CALC), ("tests/test_calc.py", CALC_TESTS)]);
    let b = project(&[("calc.py", CALC), ("tests/test_calc.py", CALC_TESTS)]);
    let run = |root: &std::path::Path| {
        run_pytest(
            &system_env(),
            &sandbox_for(root),
            root,
            Duration::from_secs(60),
            &Cancel::new(),
        )
        .expect("pytest runs")
        .cases
    };
    let (first, second) = (run(a.path()), run(b.path()));
    let strip = |cases: Vec<swarm::tools::TestCase>| {
        cases
            .into_iter()
            .map(|c| (c.id, c.outcome, c.message))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(first), strip(second));
}

#[test]
fn pytest_without_tests_is_not_a_crash() {
    let dir = project(&[("calc.py", CALC)]);
    let run = run_pytest(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        Duration::from_secs(60),
        &Cancel::new(),
    )
    .expect("pytest runs");
    assert_eq!(run.exit_code, Some(5));
    assert!(run.no_tests);
    assert!(run.cases.is_empty());
}

#[test]
fn a_test_file_with_a_syntax_error_is_an_error_case() {
    let dir = project(&[
        ("calc.py", CALC),
        (
            "tests/test_calc.py",
            "from calc import add\n\ndef test_add():\n    assert add(1, 1) == 2\n",
        ),
        ("tests/test_broken.py", "def test_x(:\n    pass\n"),
    ]);
    let run = run_pytest(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        Duration::from_secs(60),
        &Cancel::new(),
    )
    .expect("pytest runs");
    assert_eq!(
        run.exit_code,
        Some(2),
        "collection errors interrupt the session"
    );
    let broken = outcome_of(&run, "tests/test_broken.py");
    assert_eq!(broken.outcome, TestOutcome::Error);
    assert_eq!(broken.message.as_deref(), Some("collection failure"));
    let details = broken.details.as_deref().expect("traceback");
    assert!(details.contains("SyntaxError"), "{details}");
    assert!(details.contains("tests/test_broken.py"), "{details}");
}

#[test]
fn an_infinite_loop_times_out_and_leaves_nothing_running() {
    let dir = project(&[]);
    let pid_file = dir.path().join("pytest.pid");
    let root = dir.path().join("proj");
    write(
        &root,
        "tests/test_loop.py",
        &format!(
            "import os\n\ndef test_ok():\n    pass\n\ndef test_forever():\n    open({:?}, 'w').write(os.readlink('/proc/self'))\n    while True:\n        pass\n",
            pid_file.display().to_string()
        ),
    );
    let started = Instant::now();
    let run = run_pytest(
        &system_env(),
        &sandbox_for(dir.path()),
        &root,
        Duration::from_secs(3),
        &Cancel::new(),
    )
    .expect("a timeout is a value");
    let elapsed = started.elapsed();
    assert!(run.timed_out);
    assert_eq!(run.exit_code, None);
    assert!(
        elapsed >= Duration::from_secs(3) && elapsed < Duration::from_secs(6),
        "{elapsed:?}"
    );
    assert!(
        run.output.contains("did not finish within 3s"),
        "{}",
        run.output
    );
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("the test started")
        .parse()
        .expect("a pid");
    assert!(wait_gone(pid), "pytest {pid} is still running");
}

#[test]
fn cancelling_pytest_is_an_error_and_kills_it() {
    let dir = project(&[(
        "tests/test_slow.py",
        "import time\n\ndef test_slow():\n    time.sleep(60)\n",
    )]);
    let cancel = Cancel::new();
    let flag = cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        flag.cancel();
    });
    let started = Instant::now();
    let result = run_pytest(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        Duration::from_secs(60),
        &cancel,
    );
    canceller.join().expect("canceller thread");
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn pytest_that_cannot_start_is_an_error() {
    let env = PythonEnv {
        python: "/nonexistent/python3".into(),
        ..system_env()
    };
    let dir = project(&[]);
    let err = run_pytest(
        &env,
        &sandbox_for(dir.path()),
        dir.path(),
        Duration::from_secs(5),
        &Cancel::new(),
    )
    .expect_err("no interpreter");
    assert!(
        matches!(
            err,
            ToolError::Run {
                source: ProcessError::Spawn { .. },
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_relative_root_works_like_an_absolute_one() {
    // Integration tests run in the package root; a folder under the target
    // dir is reachable by a relative path that means nothing inside itself.
    let dir = tempfile::Builder::new()
        .prefix("swarm-it-rel-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("temp dir");
    write(dir.path(), "calc.py", CALC);
    write(dir.path(), "tests/test_calc.py", CALC_TESTS);
    let cwd = std::env::current_dir().expect("cwd");
    let relative = dir
        .path()
        .strip_prefix(&cwd)
        .expect("under the package root");
    assert!(relative.is_relative());
    let run = run_pytest(
        &system_env(),
        &sandbox_for(relative),
        relative,
        Duration::from_secs(60),
        &Cancel::new(),
    )
    .expect("pytest runs");
    assert_eq!(run.cases.len(), 6, "{}", run.output);
    assert_eq!(run.cases[0].id, "tests/test_calc.py::test_add");
}

/// A folder standing for the user's checkout (`checkout/`) and one for the
/// run's worktree (`worktree/`), each holding the src-layout package `calc`:
/// the checkout's `add` is wrong, the worktree's right.
fn checkout_and_worktree(tests: &str) -> tempfile::TempDir {
    let wrong = "def add(a, b):\n    return a - b\n";
    project(&[
        ("checkout/src/calc/__init__.py", "from .ops import add\n"),
        ("checkout/src/calc/ops.py", wrong),
        ("worktree/src/calc/__init__.py", "from .ops import add\n"),
        ("worktree/src/calc/ops.py", CALC),
        ("worktree/tests/test_calc.py", tests),
    ])
}

#[test]
fn the_worktree_s_code_is_imported_where_the_environment_points_at_the_checkout() {
    // The checkout's `src` first on the path, as an editable install's
    // `.pth` file or a conftest would put it.
    let dir = checkout_and_worktree(
        "import sys\nsys.path.insert(0, __file__.replace('worktree/tests/test_calc.py', 'checkout/src'))\n\
         from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    );
    let worktree = dir.path().join("worktree");
    let mut sandbox = sandbox_for(&worktree);
    sandbox.set_checkout(dir.path().join("checkout"));
    let run = run_pytest(
        &system_env(),
        &sandbox,
        &worktree,
        Duration::from_secs(120),
        &Cancel::new(),
    )
    .expect("pytest runs");
    assert_eq!(run.exit_code, Some(0), "{}", run.output);
}

#[test]
fn code_loaded_from_the_checkout_is_refused_loudly_never_judged() {
    // A test that loads the checkout's file by its path: nothing redirects
    // that, so the run's result is not the worktree's.
    let dir = checkout_and_worktree(
        "import importlib.util\nimport pathlib\n\n\
         ROOT = pathlib.Path(__file__).resolve().parents[2] / 'checkout' / 'src' / 'calc' / 'ops.py'\n\
         SPEC = importlib.util.spec_from_file_location('calc.ops', ROOT)\n\
         OPS = importlib.util.module_from_spec(SPEC)\nimport sys\nsys.modules['calc.ops'] = OPS\n\
         SPEC.loader.exec_module(OPS)\n\n\ndef test_add():\n    assert OPS.add(2, 3) == 5\n",
    );
    let worktree = dir.path().join("worktree");
    let mut sandbox = swarm::tools::Sandbox::new(
        {
            let mut policy = SandboxPolicy::for_worktree(&worktree);
            policy.readable = vec![dir.path().join("checkout")];
            policy
        },
        &system_env(),
    )
    .expect("the sandbox can be set up");
    sandbox.set_checkout(dir.path().join("checkout"));
    let err = run_pytest(
        &system_env(),
        &sandbox,
        &worktree,
        Duration::from_secs(120),
        &Cancel::new(),
    )
    .expect_err("the run is refused");
    let text = err.to_string();
    assert!(matches!(err, ToolError::OutsideWorktree { .. }), "{text}");
    assert!(
        text.contains("imported from outside the run's worktree: calc.ops from")
            && text.contains("checkout/src/calc/ops.py"),
        "{text}"
    );
}

/// A sandbox for `worktree` that can read `readable` and stands for the
/// checkout `checkout`.
fn sandbox_reading(
    worktree: &std::path::Path,
    readable: &std::path::Path,
    checkout: &std::path::Path,
) -> swarm::tools::Sandbox {
    let mut policy = SandboxPolicy::for_worktree(worktree);
    policy.readable = vec![readable.to_path_buf()];
    let mut sandbox =
        swarm::tools::Sandbox::new(policy, &system_env()).expect("the sandbox can be set up");
    sandbox.set_checkout(checkout);
    sandbox
}

#[test]
fn a_third_party_module_aliased_into_the_project_namespace_is_not_refused() {
    // requests' packages.py: `sys.modules["requests.packages.x"] = x`.
    let dir = checkout_and_worktree(
        "import json\nimport sys\n\nimport calc\n\nsys.modules['calc.packages.json'] = json\n\
         calc.packages_json = json\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n",
    );
    let worktree = dir.path().join("worktree");
    let sandbox = sandbox_reading(&worktree, dir.path(), &dir.path().join("checkout"));
    let run = run_pytest(
        &system_env(),
        &sandbox,
        &worktree,
        Duration::from_secs(120),
        &Cancel::new(),
    )
    .expect("not refused: json is no file of the project");
    assert_eq!(run.exit_code, Some(0), "{}", run.output);
}

#[test]
fn an_installed_copy_of_a_project_file_is_refused_with_its_cause() {
    // A copy of the package elsewhere (as a regular install puts one in
    // site-packages), loaded under the project's own name.
    let dir = checkout_and_worktree(
        "import importlib.util\nimport pathlib\nimport sys\n\n\
         ROOT = pathlib.Path(__file__).resolve().parents[2] / 'installed' / 'calc' / 'ops.py'\n\
         SPEC = importlib.util.spec_from_file_location('calc.ops', ROOT)\n\
         OPS = importlib.util.module_from_spec(SPEC)\nsys.modules['calc.ops'] = OPS\n\
         SPEC.loader.exec_module(OPS)\nimport calc\n\n\ndef test_add():\n    assert OPS.add(2, 3) == 5\n",
    );
    let installed = dir.path().join("installed/calc");
    std::fs::create_dir_all(&installed).expect("mkdir");
    std::fs::write(installed.join("ops.py"), CALC).expect("write");
    let worktree = dir.path().join("worktree");
    let sandbox = sandbox_reading(&worktree, dir.path(), &dir.path().join("checkout"));
    let err = run_pytest(
        &system_env(),
        &sandbox,
        &worktree,
        Duration::from_secs(120),
        &Cancel::new(),
    )
    .expect_err("the run is refused");
    let text = err.to_string();
    assert!(
        text.contains("calc.ops from")
            && text.contains("installed/calc/ops.py (an installed copy of the project's file"),
        "{text}"
    );
}
