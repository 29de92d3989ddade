//! A measured state of the code and what it was measured from: the test
//! side (passed, failing, vanished, not run), the checks of a project
//! without tests, pylint's score, and the raw tool runs behind them.
//!
//! Built by the Judge (`stage::judge`), compared by [`super::verdict`],
//! written to the log by the orchestrator. Runs nothing.

use std::collections::BTreeSet;
use std::time::Duration;

use super::measure::{ImportCheck, LintReport, TestCase, TestOutcome, TestRun};
use super::verdict::Verdict;

/// The test side of a state.
#[derive(Clone, Debug, Default)]
pub struct TestState {
    pub passed: BTreeSet<String>,
    /// Failed or errored cases, with messages.
    pub failing: Vec<TestCase>,
    /// Tests that ran at the baseline (passed, failed or errored there) but
    /// not now: missing, deselected, or skipped. Each counts as a failure,
    /// whatever made it vanish (a changed configuration, a plugin, a
    /// collection problem), so a change can never turn red into green by
    /// making a test disappear.
    pub vanished: BTreeSet<String>,
    /// Tests collected but never started because the whole run hit its
    /// time limit first: not passing, and not failing either.
    pub not_run: BTreeSet<String>,
    /// Tests that ran (passed, failed or errored), the ones not run, plus
    /// the vanished ones.
    pub total: usize,
    pub timed_out: bool,
    /// Only the tests failing at the best state ran (the Judge stopped
    /// early, see [`EarlyStop`]): `passed` and `failing` cover those alone.
    pub stopped_early: bool,
}

/// Whether `id` was a file that did not collect in `reference` (a
/// collection error, whose case is the file) and whose tests `run` now
/// collects: the file did not vanish, it was repaired.
fn collects_now(reference: &TestState, id: &str, run: &TestRun) -> bool {
    let was_collection_error = !id.contains("::")
        && reference
            .failing
            .iter()
            .any(|c| c.id == id && c.outcome == TestOutcome::Error);
    let prefix = format!("{id}::");
    was_collection_error && run.cases.iter().any(|c| c.id.starts_with(&prefix))
}

impl TestState {
    /// The state of one pytest run. `reference` is the baseline: every test
    /// that ran there and does not run here is [`TestState::vanished`].
    pub fn from_run(run: &TestRun, reference: Option<&TestState>) -> Self {
        let mut state = TestState {
            timed_out: run.timed_out,
            ..Default::default()
        };
        for case in &run.cases {
            match case.outcome {
                TestOutcome::Passed => {
                    state.passed.insert(case.id.clone());
                }
                TestOutcome::Failed | TestOutcome::Error => state.failing.push(case.clone()),
                TestOutcome::NotRun => {
                    state.not_run.insert(case.id.clone());
                }
                TestOutcome::Skipped => {}
            }
            if case.outcome != TestOutcome::Skipped {
                state.total += 1;
            }
        }
        if let Some(reference) = reference {
            // A test not run is counted as such, not again as vanished.
            let ran_now: BTreeSet<&String> = state.ran().chain(&state.not_run).collect();
            let vanished: BTreeSet<String> = reference
                .ran()
                .filter(|id| !ran_now.contains(id) && !collects_now(reference, id, run))
                .cloned()
                .collect();
            state.total += vanished.len();
            state.vanished = vanished;
        }
        if run.timed_out {
            state.failing.push(TestCase {
                id: PYTEST_ITSELF.into(),
                outcome: TestOutcome::Error,
                message: Some("the test run did not finish within the timeout".into()),
                details: Some(run.output.clone()),
            });
        } else if run.cases.is_empty() && run.exit_code.is_some_and(|c| c != 0 && c != 5) {
            // pytest failed before producing any result (usage or internal error).
            state.failing.push(TestCase {
                id: PYTEST_ITSELF.into(),
                outcome: TestOutcome::Error,
                message: Some(format!("pytest exited with code {:?}", run.exit_code)),
                details: Some(run.output.clone()),
            });
        }
        state
    }

    /// Drops from [`TestState::vanished`] (and from the count) the tests
    /// whose file is one of `rewritten`: test files a task rewrote on
    /// purpose (`--allow-test-edits`), whose removed or renamed tests are
    /// neither run nor missing.
    pub fn retire(&mut self, rewritten: &[String]) {
        let retired: Vec<String> = self
            .vanished
            .iter()
            .filter(|id| {
                let file = id.split("::").next().unwrap_or(id);
                rewritten.iter().any(|f| f == file)
            })
            .cloned()
            .collect();
        for id in retired {
            self.vanished.remove(&id);
            self.total = self.total.saturating_sub(1);
        }
    }

    /// `5/6 passed`, plus how many tests the time limit left unrun and
    /// how many baseline tests no longer ran.
    pub fn describe(&self) -> String {
        if self.stopped_early {
            return format!(
                "{} of {} test(s) failing at the best state still fail{}; stopped early, the other {} test(s) not run",
                self.failing.len(),
                self.failing.len() + self.passed.len(),
                if self.passed.is_empty() { "" } else { " (some pass)" },
                self.total.saturating_sub(self.failing.len() + self.passed.len())
            );
        }
        let mut text = format!("{}/{} passed", self.passed.len(), self.total);
        if !self.not_run.is_empty() {
            text.push_str(&format!(
                ", {} not run (the test run hit its time limit)",
                self.not_run.len()
            ));
        }
        if !self.vanished.is_empty() {
            text.push_str(&format!(
                ", {} baseline test(s) missing, deselected or skipped",
                self.vanished.len()
            ));
        }
        text
    }

    /// Every test passes, there is at least one, none was left unrun and
    /// no baseline test vanished.
    pub fn all_pass(&self) -> bool {
        !self.timed_out
            && !self.stopped_early
            && self.failing.is_empty()
            && self.not_run.is_empty()
            && self.vanished.is_empty()
            && !self.passed.is_empty()
    }

    /// Ids of the tests that ran (passed, failed or errored), pytest's own
    /// pseudo-cases left out.
    fn ran(&self) -> impl Iterator<Item = &String> {
        self.passed
            .iter()
            .chain(self.failing.iter().map(|c| &c.id))
            .filter(|id| id.as_str() != PYTEST_ITSELF)
    }
}

/// The id of the pseudo-case that stands for pytest itself failing (a
/// timeout, a usage error).
pub(crate) const PYTEST_ITSELF: &str = "pytest";

/// Problems found when there are no tests.
#[derive(Clone, Debug, Default)]
pub struct CheckState {
    /// (path, problem) for files that do not compile or import.
    pub problems: Vec<(String, String)>,
    pub files: usize,
}

/// A measured state of the code.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// `None` when pytest found no tests.
    pub tests: Option<TestState>,
    /// Set when there are no tests.
    pub checks: Option<CheckState>,
    /// The linter's score out of 10 (`None` when nothing was linted).
    pub lint_score: Option<f64>,
    pub lint: LintReport,
}

impl Snapshot {
    /// The tests that fail in this state (none when there are no tests).
    pub fn failing(&self) -> &[TestCase] {
        self.tests.as_ref().map_or(&[], |t| t.failing.as_slice())
    }

    /// The files that do not compile or import in this state (none when
    /// there are tests).
    pub fn broken_files(&self) -> Vec<String> {
        self.checks.as_ref().map_or_else(Vec::new, |c| {
            c.problems.iter().map(|(file, _)| file.clone()).collect()
        })
    }

    /// What the checks found wrong with `file` (target-relative): its
    /// compile or import problems (none when there are tests).
    pub fn problems_of(&self, file: &str) -> Vec<String> {
        self.checks.as_ref().map_or_else(Vec::new, |c| {
            c.problems
                .iter()
                .filter(|(p, _)| p == file)
                .map(|(_, m)| m.clone())
                .collect()
        })
    }

    /// Whether the result is verified by tests.
    pub fn has_tests(&self) -> bool {
        self.tests.is_some()
    }

    /// `3/6 passed` or `2 problems in 3 files`.
    pub fn describe(&self) -> String {
        match (&self.tests, &self.checks) {
            (Some(t), _) => t.describe(),
            (None, Some(c)) => format!(
                "{} of {} files compile and import (no tests)",
                c.files - c.problems.len().min(c.files),
                c.files
            ),
            (None, None) => "not measured".into(),
        }
    }

    /// Passed and total tests (0/0 without tests).
    pub fn counts(&self) -> (usize, usize) {
        self.tests
            .as_ref()
            .map(|t| (t.passed.len(), t.total))
            .unwrap_or((0, 0))
    }
}

/// The raw tool runs behind a snapshot, for the experiment log.
#[derive(Debug)]
pub struct Measurement {
    pub snapshot: Snapshot,
    pub test_run: Option<TestRun>,
    pub import_check: Option<ImportCheck>,
    /// Served from the baseline cache (`stage::baseline_cache`): no tool
    /// ran for it in this run.
    pub cached: bool,
    /// Set when the Judge stopped before the full suite (`stage::judge::early`):
    /// `test_run` is then the run of the previously failing tests only.
    pub early_stop: Option<EarlyStop>,
    /// The wall time of pytest's first pass over the previously failing
    /// tests, when the full suite (`test_run`) ran after it.
    pub first_pass: Option<Duration>,
}

/// Why the Judge did not run the full suite, for the log and the Fixer.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct EarlyStop {
    /// The tests that failed at the best state, run first; all still fail.
    pub rerun: Vec<String>,
    /// Tests the full suite would have run.
    pub collected: usize,
    /// The verdict that is certain without the full suite.
    pub verdict: Verdict,
}

impl EarlyStop {
    /// One line for the log and the attempt's record.
    pub fn describe(&self) -> String {
        format!(
            "stopped early: the {} test(s) failing at the best state still fail and pylint cannot tip it, so the other {} test(s) were not run",
            self.rerun.len(),
            self.collected.saturating_sub(self.rerun.len())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_a_rewritten_file_lost_on_purpose_are_retired_others_stay_missing() {
        let mut tests = TestState {
            passed: BTreeSet::from(["t/test_a.py::new".to_string()]),
            vanished: BTreeSet::from([
                "t/test_a.py::old".to_string(),
                "t/test_b.py::gone".to_string(),
            ]),
            total: 3,
            ..Default::default()
        };
        tests.retire(&["t/test_a.py".to_string()]);
        assert_eq!(tests.total, 2);
        assert_eq!(
            tests.vanished,
            BTreeSet::from(["t/test_b.py::gone".to_string()])
        );
        assert_eq!(
            tests.describe(),
            "1/2 passed, 1 baseline test(s) missing, deselected or skipped"
        );
    }
}
