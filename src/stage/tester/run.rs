//! The running steps of the validation chain: the generated file, already
//! in place in the worktree at the original code, is run by pytest three
//! times (three processes, only its still-kept tests, each with a short
//! per-test timeout so a hang costs seconds): the first run says whether a
//! test runs and passes on the original code, the next two whether it is
//! flaky. Reads results only; the orchestrator writes and removes the file.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{Generated, Step, StepResult};
use crate::cancel::Cancel;
use crate::pipeline::{TestCase, TestOutcome};
use crate::stage::judge::{Limits, Tools};
use crate::stage::prompt::one_line;
use crate::tools::{self, TestLimits, ToolError};

/// Runs in a row a kept test must pass.
pub const RUNS: usize = 3;
/// The longest one generated test may take (capped by `--test-case-timeout`).
pub const CASE_TIMEOUT: Duration = Duration::from_secs(5);

/// Runs the still-kept tests of `generated` (whose file is in place under
/// `root`) and records the running steps on each.
pub fn check(
    tools: Tools<'_>,
    root: &Path,
    generated: &mut Generated,
    limits: Limits,
    cancel: &Cancel,
) -> Result<(), ToolError> {
    let started = Instant::now();
    for round in 1..=RUNS {
        let Some(selected) = run_kept(tools, root, generated, limits, cancel)? else {
            break;
        };
        let cases = by_id(&selected.run);
        let output = one_line(last_error_line(&selected.run.output));
        for fate in generated.tests.iter_mut().filter(|t| t.kept) {
            let id = format!("{}::{}", generated.test_file, fate.test);
            let steps = judge_run(round, cases.get(id.as_str()).copied(), &output);
            fate.fails_on_original = steps
                .iter()
                .any(|s| s.step == Step::PassesOnOriginal && !s.passed);
            fate.steps.extend(steps);
            if let Some(failed) = fate.steps.iter().find(|s| !s.passed) {
                fate.kept = false;
                fate.reason = Some(reason(failed, fate.fails_on_original));
            }
        }
    }
    for fate in generated.tests.iter_mut().filter(|t| t.kept) {
        fate.steps.push(StepResult::pass(
            Step::NotFlaky,
            format!("passed {RUNS} runs in a row"),
        ));
    }
    generated.seconds = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
    Ok(())
}

/// Runs the tests `names` of `test_file` (in place under `root`) [`RUNS`]
/// times: per name, `None` when it passed every run, else why not.
pub fn rerun(
    tools: Tools<'_>,
    root: &Path,
    test_file: &str,
    names: &[String],
    limits: Limits,
    cancel: &Cancel,
) -> Result<BTreeMap<String, Option<String>>, ToolError> {
    let mut verdicts: BTreeMap<String, Option<String>> =
        names.iter().map(|n| (n.clone(), None)).collect();
    for round in 1..=RUNS {
        let ids: Vec<String> = verdicts
            .iter()
            .filter(|(_, failed)| failed.is_none())
            .map(|(name, _)| format!("{test_file}::{name}"))
            .collect();
        let Some(selected) = run_ids(tools, root, &ids, limits, cancel)? else {
            break;
        };
        for (name, failed) in verdicts.iter_mut().filter(|(_, f)| f.is_none()) {
            let id = format!("{test_file}::{name}");
            let case = selected.run.cases.iter().find(|c| c.id == id);
            *failed = match case {
                Some(c) if c.outcome == TestOutcome::Passed => None,
                Some(c) => Some(format!("run {round}: {}", one_line(c.message.as_deref()))),
                None => Some(format!("run {round}: pytest did not run it")),
            };
        }
    }
    Ok(verdicts)
}

/// The kept tests of `generated` (in place under `root`), run once by id
/// (see [`run_ids`]); `None` when none is kept.
pub(super) fn run_kept(
    tools: Tools<'_>,
    root: &Path,
    generated: &Generated,
    limits: Limits,
    cancel: &Cancel,
) -> Result<Option<tools::SelectedRun>, ToolError> {
    let ids: Vec<String> = generated
        .tests
        .iter()
        .filter(|t| t.kept)
        .map(|t| format!("{}::{}", generated.test_file, t.test))
        .collect();
    run_ids(tools, root, &ids, limits, cancel)
}

/// The tests `ids` run once by id under the generated tests' limits
/// ([`case_limits`]); `None` when there are none.
pub(super) fn run_ids(
    tools: Tools<'_>,
    root: &Path,
    ids: &[String],
    limits: Limits,
    cancel: &Cancel,
) -> Result<Option<tools::SelectedRun>, ToolError> {
    if ids.is_empty() {
        return Ok(None);
    }
    let selected = tools::run_pytest_only(
        tools.env,
        tools.sandbox,
        root,
        case_limits(limits),
        ids,
        cancel,
    )?;
    Ok(Some(selected))
}

/// A run's cases by id.
pub(super) fn by_id(run: &crate::pipeline::TestRun) -> BTreeMap<&str, &TestCase> {
    run.cases.iter().map(|c| (c.id.as_str(), c)).collect()
}

/// The run's limits with the short per-test timeout of generated tests.
pub(super) fn case_limits(limits: Limits) -> TestLimits {
    TestLimits {
        run: limits.tests,
        case: Some(
            limits
                .test_case
                .unwrap_or(tools::DEFAULT_TEST_CASE_TIMEOUT)
                .min(CASE_TIMEOUT),
        ),
    }
}

/// The steps run `round` (1-based) shows for one test's `case`.
fn judge_run(round: usize, case: Option<&TestCase>, output: &str) -> Vec<StepResult> {
    let message = |c: &TestCase| one_line(c.message.as_deref());
    if round > 1 {
        return match case {
            Some(c) if c.outcome == TestOutcome::Passed => Vec::new(),
            Some(c) => vec![StepResult::fail(
                Step::NotFlaky,
                format!("passed on run 1, not on run {round}: {}", message(c)),
            )],
            None => vec![StepResult::fail(
                Step::NotFlaky,
                format!("passed on run 1, missing from run {round}: {output}"),
            )],
        };
    }
    let Some(c) = case else {
        return vec![StepResult::fail(
            Step::Runs,
            format!("pytest did not run it: {output}"),
        )];
    };
    match c.outcome {
        TestOutcome::Passed => vec![
            StepResult::pass(Step::Runs, "ran"),
            StepResult::pass(Step::PassesOnOriginal, "passed on the original code"),
        ],
        TestOutcome::Failed => vec![
            StepResult::pass(Step::Runs, "ran"),
            StepResult::fail(Step::PassesOnOriginal, message(c)),
        ],
        TestOutcome::Error => vec![StepResult::fail(Step::Runs, message(c))],
        TestOutcome::Skipped => vec![StepResult::fail(Step::Runs, "skipped")],
        TestOutcome::NotRun => vec![StepResult::fail(
            Step::Runs,
            "not run: the test run hit its time limit",
        )],
    }
}

/// The reason a test is dropped, from its first failing step.
fn reason(failed: &StepResult, fails_on_original: bool) -> String {
    if fails_on_original {
        format!(
            "fails on the original code ({}); set aside as possible evidence of a bug, not committed",
            failed.detail
        )
    } else if failed.step == Step::NotFlaky {
        format!("flaky: {}", failed.detail)
    } else {
        format!("{}: {}", failed.step.as_str(), failed.detail)
    }
}

/// The last line of pytest's output that names an error, for a test that
/// never ran (`E   ModuleNotFoundError: …`), else its last line.
fn last_error_line(output: &str) -> Option<&str> {
    let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
    lines
        .iter()
        .rev()
        .find(|l| l.trim_start().starts_with("E ") || l.contains("Error"))
        .or(lines.last())
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(outcome: TestOutcome, message: &str) -> TestCase {
        TestCase {
            id: "tests/test_stats_swarm.py::test_mean".into(),
            outcome,
            message: Some(message.into()),
            details: None,
        }
    }

    #[test]
    fn the_first_run_tells_running_from_failing_on_the_original() {
        let passed = judge_run(1, Some(&case(TestOutcome::Passed, "")), "");
        assert!(passed.iter().all(|s| s.passed));
        let failed = judge_run(1, Some(&case(TestOutcome::Failed, "assert 2.0 == 5")), "");
        assert_eq!(failed[1].step, Step::PassesOnOriginal);
        assert!(!failed[1].passed);
        assert_eq!(failed[1].detail, "assert 2.0 == 5");
        let missing = judge_run(1, None, "E   ModuleNotFoundError: No module named 'x'");
        assert_eq!(missing[0].step, Step::Runs);
        assert!(missing[0].detail.contains("ModuleNotFoundError"));
    }

    #[test]
    fn a_later_failure_is_flakiness() {
        assert!(judge_run(2, Some(&case(TestOutcome::Passed, "")), "").is_empty());
        let flaky = judge_run(3, Some(&case(TestOutcome::Failed, "assert False")), "");
        assert_eq!(flaky[0].step, Step::NotFlaky);
        assert_eq!(
            reason(&flaky[0], false),
            "flaky: passed on run 1, not on run 3: assert False"
        );
    }

    #[test]
    fn the_error_line_is_picked_from_the_output() {
        let output =
            "collected 0 items\nE   ImportError: cannot import name 'x'\n\n1 error in 0.1s\n";
        assert_eq!(
            last_error_line(output),
            Some("E   ImportError: cannot import name 'x'")
        );
    }
}
