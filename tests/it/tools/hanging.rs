//! Real pytest with swarm's per-test time limit: a test stuck in a loop or
//! in `time.sleep` fails alone with its stack, and when the whole run's
//! limit fires, the tests that finished keep their outcomes.

use std::time::Duration;

use swarm::cancel::Cancel;
use swarm::tools::*;

use crate::support::*;

/// A small module whose `countdown` never ends for odd numbers.
const LOOP: &str = r#""""Counting down in steps of two."""
import time


def countdown(n):
    """Counts down to zero in steps of two."""
    while n != 0:
        n -= 2
    return n


def nap(seconds):
    """Sleeps, in C."""
    time.sleep(seconds)


def stubborn():
    """Swallows every interruption."""
    while True:
        try:
            while True:
                pass
        except BaseException:  # pylint: disable=broad-exception-caught
            pass
"#;

fn case<'a>(run: &'a TestRun, id: &str) -> &'a TestCase {
    run.cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id} in {:#?}\n{}", run.cases, run.output))
}

fn limits(run_secs: u64, case_secs: Option<f64>) -> TestLimits {
    TestLimits {
        run: Duration::from_secs(run_secs),
        case: case_secs.map(Duration::from_secs_f64),
    }
}

#[test]
fn a_test_past_its_limit_fails_with_its_stack_and_the_others_still_run() {
    let dir = project(&[
        ("pkg/__init__.py", ""),
        ("pkg/loop.py", LOOP),
        (
            "tests/test_loop.py",
            "from pkg.loop import countdown, nap\n\n\ndef test_even():\n    assert countdown(4) == 0\n\n\n\
             def test_odd():\n    assert countdown(3) == 0\n\n\ndef test_nap():\n    nap(100)\n\n\n\
             def test_last():\n    assert countdown(2) == 0\n",
        ),
    ]);
    let run = run_pytest_with(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        limits(60, Some(1.0)),
        &Cancel::new(),
    )
    .expect("pytest runs");
    assert!(!run.timed_out, "{}", run.output);
    assert_eq!(run.exit_code, Some(1), "{}", run.output);
    for id in [
        "tests/test_loop.py::test_even",
        "tests/test_loop.py::test_last",
    ] {
        assert_eq!(case(&run, id).outcome, TestOutcome::Passed);
    }
    for (id, frame, line) in [
        (
            "tests/test_loop.py::test_odd",
            "in countdown",
            "while n != 0:",
        ),
        (
            "tests/test_loop.py::test_nap",
            "in nap",
            "time.sleep(seconds)",
        ),
    ] {
        let stopped = case(&run, id);
        assert_eq!(stopped.outcome, TestOutcome::Failed);
        assert_eq!(stopped.message.as_deref(), Some("timed out after 1 s"));
        let stack = stopped.details.as_deref().expect("a stack");
        assert!(stack.contains("File \"pkg/loop.py\""), "{stack}");
        assert!(stack.contains(frame) && stack.contains(line), "{stack}");
        assert!(stack.contains("File \"tests/test_loop.py\""), "{stack}");
        assert!(!stack.contains("_pytest"), "{stack}");
    }
    // Nothing of the plugin is left in the tested tree.
    assert!(list_files(dir.path()).iter().all(|f| !f.contains("swarm")));
}

#[test]
fn without_a_per_test_limit_a_slow_test_passes() {
    let dir = project(&[
        ("pkg/__init__.py", ""),
        ("pkg/loop.py", LOOP),
        (
            "tests/test_nap.py",
            "from pkg.loop import nap\n\n\ndef test_nap():\n    nap(1.5)\n",
        ),
    ]);
    let run_with = |case: Option<f64>| {
        run_pytest_with(
            &system_env(),
            &sandbox_for(dir.path()),
            dir.path(),
            limits(60, case),
            &Cancel::new(),
        )
        .expect("pytest runs")
    };
    let id = "tests/test_nap.py::test_nap";
    assert_eq!(case(&run_with(None), id).outcome, TestOutcome::Passed);
    let limited = run_with(Some(0.5));
    assert_eq!(case(&limited, id).outcome, TestOutcome::Failed);
    assert_eq!(
        case(&limited, id).message.as_deref(),
        Some("timed out after 0.5 s")
    );
}

#[test]
fn when_the_whole_run_is_killed_finished_tests_keep_their_outcomes() {
    let dir = project(&[
        ("pkg/__init__.py", ""),
        ("pkg/loop.py", LOOP),
        (
            "tests/test_order.py",
            "from pkg.loop import countdown, stubborn\n\n\ndef test_a_passes():\n    assert countdown(2) == 0\n\n\n\
             def test_b_fails():\n    assert countdown(2) == 1\n\n\ndef test_c_stubborn():\n    stubborn()\n\n\n\
             def test_d_after():\n    assert countdown(4) == 0\n\n\ndef test_e_after():\n    assert True\n",
        ),
    ]);
    let run = run_pytest_with(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        limits(4, Some(1.0)),
        &Cancel::new(),
    )
    .expect("a timeout is a value");
    assert!(run.timed_out, "{}", run.output);
    let outcomes: Vec<(&str, TestOutcome)> = run
        .cases
        .iter()
        .map(|c| (c.id.as_str(), c.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("tests/test_order.py::test_a_passes", TestOutcome::Passed),
            ("tests/test_order.py::test_b_fails", TestOutcome::Failed),
            ("tests/test_order.py::test_c_stubborn", TestOutcome::Failed),
            ("tests/test_order.py::test_d_after", TestOutcome::NotRun),
            ("tests/test_order.py::test_e_after", TestOutcome::NotRun),
        ],
        "{}",
        run.output
    );
    let failed = case(&run, "tests/test_order.py::test_b_fails");
    assert!(failed.message.as_deref().unwrap_or("").contains("assert"));
    let stuck = case(&run, "tests/test_order.py::test_c_stubborn");
    assert!(
        stuck
            .message
            .as_deref()
            .is_some_and(|m| m.starts_with("did not finish") && m.contains("4 s")),
        "{stuck:?}"
    );
    let stack = stuck.details.as_deref().expect("faulthandler's stack");
    assert!(
        stack.contains("File \"pkg/loop.py\"") && stack.contains("in stubborn"),
        "{stack}"
    );
    assert!(run.output.contains("2 not run"), "{}", run.output);
}

#[test]
fn a_test_that_ends_pytest_leaves_the_finished_outcomes_and_says_why_the_rest_did_not_run() {
    let dir = project(&[(
        "tests/test_exit.py",
        "import os\n\n\ndef test_a_passes():\n    pass\n\n\ndef test_b_exits():\n    os._exit(3)\n\n\n\
         def test_c_after():\n    pass\n",
    )]);
    let run = run_pytest_with(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        limits(60, Some(5.0)),
        &Cancel::new(),
    )
    .expect("pytest runs");
    assert!(!run.timed_out);
    assert_eq!(run.exit_code, Some(3));
    let outcomes: Vec<(&str, TestOutcome)> = run
        .cases
        .iter()
        .map(|c| (c.id.as_str(), c.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("tests/test_exit.py::test_a_passes", TestOutcome::Passed),
            ("tests/test_exit.py::test_b_exits", TestOutcome::Failed),
            ("tests/test_exit.py::test_c_after", TestOutcome::NotRun),
        ],
        "{}",
        run.output
    );
    assert_eq!(
        case(&run, "tests/test_exit.py::test_b_exits")
            .message
            .as_deref(),
        Some("did not finish: pytest ended early with exit code 3")
    );
}
