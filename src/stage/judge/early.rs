//! The Judge's early stop: when the best state has failing tests and the
//! one suite judging the target can rerun chosen tests (see
//! [`crate::lang::suite::Rerun`]; pytest can, the JavaScript runners
//! cannot), an attempt is first measured on those tests alone (plus the
//! suite's lint), and the full suite runs only when the attempt could still
//! be accepted.
//!
//! [`crate::pipeline::Bar::verdict`] accepts an attempt that loses nothing and either
//! gains a passing test or, with the same tests passing, raises the lint
//! score. The stop is taken only when neither can happen, which is certain
//! when all of these hold:
//!
//! - every test that failed at the best state ran again and still failed
//!   (a per-test timeout is a failure);
//! - every test the full suite collects passed or failed at the best state,
//!   so no new, previously skipped or previously unrun test can pass now
//!   (pytest collects the whole suite and deselects the rest, see
//!   [`crate::tools::run_pytest_only`]);
//! - the lint score is not higher than the best state's (see
//!   [`bar::early_stop`], which gives the verdict);
//! - the best state itself was a complete run: it did not hit the whole
//!   run's limit, left no test unrun, lost no baseline test.
//!
//! What it cannot see: a failing test that passes only after other tests
//! ran (order-dependent state) is judged by its run alone. A stopped
//! attempt is never accepted; its verdict is `pipeline::bar`'s.
//! Everything else gets the full suite through [`super::measure`] (with the
//! lint already made: the linter does not run twice).

use std::collections::BTreeSet;
use std::path::Path;

use super::{measure, measure_linted, Limits, Tools};
use crate::cancel::Cancel;
use crate::lang::suite::{self, Rerun, Suite};
use crate::pipeline::bar;
use crate::pipeline::{EarlyStop, Measurement, Snapshot, TestState};
use crate::pipeline::{LintReport, TestOutcome};
use crate::tools::{SelectedRun, ToolError};

/// Measures an attempt against `best`: the previously failing tests first,
/// and the full suite (see [`measure`]) unless the attempt is certain not
/// to be accepted (see the module docs). `baseline` as in [`measure`].
pub fn measure_attempt(
    tools: Tools<'_>,
    root: &Path,
    files: &[String],
    limits: Limits,
    cancel: &Cancel,
    baseline: Option<&TestState>,
    best: &Snapshot,
) -> Result<Measurement, ToolError> {
    // Several suites' runs are merged: a rerun of one proves nothing.
    let judging = suite::judging(tools.suites, files);
    let first = match judging.as_slice() {
        [(suite, mine)] => suite
            .rerun()
            .zip(rerun_ids(best, suite.runner()))
            .map(|r| (*suite, mine, r)),
        _ => None,
    };
    let Some((suite, mine, (rerun, ids))) = first else {
        return measure(tools, root, files, limits, cancel, baseline);
    };
    let pass = FirstPass { suite, rerun };
    let (selected, lint) = pass.run(tools, root, mine, limits, cancel, &ids)?;
    match stop_reason(best, &ids, &selected, lint.score) {
        Some(stop) => Ok(stopped(selected, lint, stop)),
        // The lint of this state is done: only the tests run again.
        None => {
            let mut full =
                measure_linted(tools, root, files, limits, cancel, baseline, Some(lint))?;
            full.first_pass = Some(selected.run.duration);
            Ok(full)
        }
    }
}

/// The ids of the best state's failing tests, when it is a state an early
/// stop can be judged against: a complete run whose failures are tests,
/// not the runner itself (its case named `runner`: it could not run).
fn rerun_ids(best: &Snapshot, runner: &str) -> Option<Vec<String>> {
    let tests = best.tests.as_ref()?;
    let complete = !tests.timed_out && tests.not_run.is_empty() && tests.vanished.is_empty();
    let ids: Vec<String> = tests.failing.iter().map(|c| c.id.clone()).collect();
    let usable = complete && !ids.is_empty() && !ids.iter().any(|id| id == runner);
    usable.then_some(ids)
}

/// The suite judging the target and its run of chosen tests.
struct FirstPass<'s> {
    suite: &'s dyn Suite,
    rerun: &'s dyn Rerun,
}

impl FirstPass<'_> {
    /// The runner over `rerun` only, beside the linter over the suite's
    /// files `mine`.
    fn run(
        &self,
        tools: Tools<'_>,
        root: &Path,
        mine: &[String],
        limits: Limits,
        cancel: &Cancel,
        rerun: &[String],
    ) -> Result<(SelectedRun, LintReport), ToolError> {
        let suite = self.suite;
        let (selected, lint) = std::thread::scope(|scope| {
            let lint = scope.spawn(|| super::lint(tools, suite, root, mine, limits, cancel));
            let step = tools.step(&format!("{} (the failing tests first)", suite.runner()));
            let selected = self.rerun.run_only(root, limits.test_run(), rerun, cancel);
            drop(step);
            let lint = lint
                .join()
                .unwrap_or_else(|_| Err(super::panicked(suite.linter())));
            (selected, lint)
        });
        Ok((selected?, lint?))
    }
}

/// Why the attempt cannot be accepted, when that is certain (see the module
/// docs); `None` when the full suite must decide.
fn stop_reason(
    best: &Snapshot,
    rerun: &[String],
    selected: &SelectedRun,
    lint_score: Option<f64>,
) -> Option<EarlyStop> {
    let tests = best.tests.as_ref()?;
    if selected.run.timed_out {
        return None;
    }
    let verdict = bar::early_stop(best, lint_score)?;
    let still_failing =
        rerun.iter().all(|id| {
            selected.run.cases.iter().any(|c| {
                &c.id == id && matches!(c.outcome, TestOutcome::Failed | TestOutcome::Error)
            })
        });
    let collected = selected.collected.as_ref()?;
    let known: BTreeSet<&String> = tests.passed.iter().chain(rerun).collect();
    let nothing_new = collected.iter().all(|id| known.contains(id));
    if !(still_failing && nothing_new) {
        return None;
    }
    Some(EarlyStop {
        rerun: rerun.to_vec(),
        collected: collected.len(),
        verdict,
    })
}

/// The measurement of an attempt stopped early: the partial run's test
/// state, marked as such.
fn stopped(selected: SelectedRun, lint: LintReport, stop: EarlyStop) -> Measurement {
    let mut tests = TestState::from_run(&selected.run, None);
    // The tests not run were not measured: none counts as vanished, and the
    // total is the whole suite's.
    tests.total = stop.collected.max(tests.total);
    tests.stopped_early = true;
    Measurement {
        snapshot: Snapshot {
            tests: Some(tests),
            checks: None,
            lint_score: lint.score,
            lint,
        },
        test_run: Some(selected.run),
        import_check: None,
        cached: false,
        early_stop: Some(stop),
        first_pass: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::state::PYTEST_ITSELF;
    use crate::pipeline::{TestCase, TestRun, Verdict};

    fn case(id: &str, outcome: TestOutcome) -> TestCase {
        TestCase {
            id: id.into(),
            outcome,
            message: None,
            details: None,
        }
    }

    fn best(passed: &[&str], failing: &[&str], pylint: f64) -> Snapshot {
        Snapshot {
            tests: Some(TestState {
                passed: passed.iter().map(|s| s.to_string()).collect(),
                failing: failing
                    .iter()
                    .map(|id| case(id, TestOutcome::Failed))
                    .collect(),
                total: passed.len() + failing.len(),
                ..TestState::default()
            }),
            checks: None,
            lint_score: Some(pylint),
            lint: LintReport::default(),
        }
    }

    fn selected(cases: &[(&str, TestOutcome)], collected: &[&str]) -> SelectedRun {
        SelectedRun {
            run: TestRun {
                cases: cases.iter().map(|(id, o)| case(id, *o)).collect(),
                exit_code: Some(1),
                ..TestRun::default()
            },
            collected: Some(collected.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn stops_only_when_no_verdict_but_a_rejection_is_possible() {
        use TestOutcome::*;
        let best = best(&["t::a", "t::b"], &["t::c"], 5.0);
        let rerun = rerun_ids(&best, PYTEST_ITSELF).expect("best has failing tests");
        let all = ["t::a", "t::b", "t::c"];

        let still = selected(&[("t::c", Failed)], &all);
        let stop = stop_reason(&best, &rerun, &still, Some(5.0)).expect("certain");
        assert_eq!(stop.verdict, Verdict::NotImproved);
        assert_eq!(stop.collected, 3);
        let lower = stop_reason(&best, &rerun, &still, Some(4.0)).expect("certain");
        assert_eq!(lower.verdict, Verdict::Regressed);

        // A better pylint score could make it accepted with the same tests.
        assert!(stop_reason(&best, &rerun, &still, Some(6.0)).is_none());
        // The failing test passes now: the full suite decides.
        let fixed = selected(&[("t::c", Passed)], &all);
        assert!(stop_reason(&best, &rerun, &fixed, Some(5.0)).is_none());
        // A test never seen at the best state could pass.
        let grown = selected(&[("t::c", Failed)], &["t::a", "t::b", "t::c", "t::d"]);
        assert!(stop_reason(&best, &rerun, &grown, Some(5.0)).is_none());
        // The failing test did not run (not found, deselected): unknown.
        let missing = selected(&[], &all);
        assert!(stop_reason(&best, &rerun, &missing, Some(5.0)).is_none());
        // Collection unknown: no stop.
        let unknown = SelectedRun {
            collected: None,
            ..still.clone()
        };
        assert!(stop_reason(&best, &rerun, &unknown, Some(5.0)).is_none());
        // A run cut short by the whole run's limit proves nothing.
        let mut cut = still.clone();
        cut.run.timed_out = true;
        assert!(stop_reason(&best, &rerun, &cut, Some(5.0)).is_none());
    }

    #[test]
    fn a_best_state_that_is_not_a_complete_run_gets_the_full_suite() {
        assert!(
            rerun_ids(&best(&["t::a"], &[], 5.0), PYTEST_ITSELF).is_none(),
            "all pass"
        );
        let mut cut = best(&["t::a"], &["t::b"], 5.0);
        if let Some(t) = cut.tests.as_mut() {
            t.not_run.insert("t::c".into());
        }
        assert!(rerun_ids(&cut, PYTEST_ITSELF).is_none());
        let hung = best(&["t::a"], &[PYTEST_ITSELF], 5.0);
        assert!(rerun_ids(&hung, PYTEST_ITSELF).is_none());
    }

    #[test]
    fn a_stopped_measurement_says_so_and_is_never_accepted() {
        use TestOutcome::*;
        let best = best(&["t::a", "t::b"], &["t::c"], 5.0);
        let rerun = rerun_ids(&best, PYTEST_ITSELF).expect("failing tests");
        let run = selected(&[("t::c", Failed)], &["t::a", "t::b", "t::c"]);
        let stop = stop_reason(&best, &rerun, &run, Some(5.0)).expect("certain");
        let lint = LintReport {
            score: Some(5.0),
            ..LintReport::default()
        };
        let m = stopped(run, lint, stop);
        let tests = m.snapshot.tests.as_ref().expect("tests");
        assert!(tests.stopped_early);
        assert!(tests.describe().contains("stopped early"));
        let verdict = crate::pipeline::Bar::of(&best).verdict(&best, &m.snapshot);
        assert!(!verdict.is_accepted());
        assert_eq!(verdict, Verdict::NotImproved);
    }
}
