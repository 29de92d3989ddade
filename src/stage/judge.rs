//! The Judge: measures a state of the code in the worktree (pytest, or
//! compile/import checks when there are no tests, plus pylint) and compares
//! it with the best state so far. Deterministic: the model is never asked.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use crate::cancel::Cancel;
use crate::log::{EventSink, Step};
use crate::tools::{
    self, ImportCheck, LintCache, LintReport, LintSettings, PythonEnv, Sandbox, TestCase,
    TestOutcome, TestRun,
};
pub use early::{measure_attempt, EarlyStop};
pub use verdict::{compare, Verdict};
use verdict::{pylint_higher, pylint_lower};

pub mod behaviour;
pub mod early;
mod verdict;

/// The longest one module may take to import (capped further by the test
/// timeout): importing should be instant, so a module still busy after this
/// is looping at import time.
pub const IMPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Timeouts for the tools.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The whole pytest run (`--test-timeout`).
    pub tests: Duration,
    /// One test (`--test-case-timeout`); `None` when off.
    pub test_case: Option<Duration>,
    pub lint: Duration,
}

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
    /// early, see [`early`]): `passed` and `failing` cover those alone.
    pub stopped_early: bool,
}

impl TestState {
    /// The state of one pytest run. `reference` is the baseline: every test
    /// that ran there and does not run here is [`TestState::vanished`].
    fn from_run(run: &TestRun, reference: Option<&TestState>) -> Self {
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
                .filter(|id| !ran_now.contains(id))
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
const PYTEST_ITSELF: &str = "pytest";

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
    pub pylint: Option<f64>,
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

    /// The state is acceptable as a final result: every test passes, or —
    /// without tests — everything compiles and imports and pylint did not
    /// drop below `baseline_pylint`.
    pub fn is_green(&self, baseline_pylint: Option<f64>) -> bool {
        match (&self.tests, &self.checks) {
            (Some(t), _) => t.all_pass(),
            (None, Some(c)) => c.problems.is_empty() && !pylint_lower(self.pylint, baseline_pylint),
            (None, None) => false,
        }
    }
}

/// The raw tool runs behind a snapshot, for the experiment log.
#[derive(Debug)]
pub struct Measurement {
    pub snapshot: Snapshot,
    pub test_run: Option<TestRun>,
    pub import_check: Option<ImportCheck>,
    /// Served from the baseline cache (see [`super::baseline_cache`]): no
    /// tool ran for it in this run.
    pub cached: bool,
    /// Set when the Judge stopped before the full suite (see [`early`]):
    /// `test_run` is then the run of the previously failing tests only.
    pub early_stop: Option<early::EarlyStop>,
    /// The wall time of pytest's first pass over the previously failing
    /// tests, when the full suite (`test_run`) ran after it (see [`early`]).
    pub first_pass: Option<Duration>,
}

/// The Python tools a measurement runs, the pylint results a run's
/// measurements share (so each measures only what changed), and where each
/// tool run is told as a [`Step`] of `stage` ("audit", "judging attempt 3
/// (stats.py)").
#[derive(Clone, Copy)]
pub struct Tools<'a> {
    pub env: &'a PythonEnv,
    pub sandbox: &'a Sandbox,
    pub lint_cache: &'a LintCache,
    pub events: &'a dyn EventSink,
    pub stage: &'a str,
    /// The blob ids of the files whose content on disk is committed: pylint's
    /// cache keys then need not read them (see [`tools::KnownContent`]).
    pub known: Option<&'a tools::KnownContent>,
}

impl std::fmt::Debug for Tools<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tools")
            .field("env", &self.env)
            .field("stage", &self.stage)
            .finish_non_exhaustive()
    }
}

impl<'a> Tools<'a> {
    /// Tells that `tool` runs for this stage, until the step is dropped.
    pub fn step(&self, tool: &str) -> Step<'a> {
        Step::start(self.events, format!("{}: {tool}", self.stage))
    }
}

/// Measures the code in `root` (the target folder inside the worktree).
/// `files` are the Python files, relative to `root`. `baseline` is the
/// baseline's test state (`None` when measuring the baseline itself): tests
/// that ran there and do not run here count as failures.
pub fn measure(
    tools: Tools<'_>,
    root: &Path,
    files: &[String],
    limits: Limits,
    cancel: &Cancel,
    baseline: Option<&TestState>,
) -> Result<Measurement, tools::ToolError> {
    measure_linted(tools, root, files, limits, cancel, baseline, None)
}

/// [`measure`], with the lint of this very state when it was already made
/// (pylint then does not run again).
fn measure_linted(
    tools: Tools<'_>,
    root: &Path,
    files: &[String],
    limits: Limits,
    cancel: &Cancel,
    baseline: Option<&TestState>,
    linted: Option<LintReport>,
) -> Result<Measurement, tools::ToolError> {
    let Tools {
        env,
        sandbox,
        lint_cache,
        known,
        ..
    } = tools;
    let lint_settings = LintSettings::new(limits.lint);
    // pytest and pylint are independent: run them side by side.
    let (run, lint) = std::thread::scope(|scope| {
        let lint = scope.spawn(|| match linted {
            Some(report) => Ok(report),
            None => {
                let _step = tools.step("pylint");
                tools::run_pylint_on(
                    env,
                    sandbox,
                    tools::LintTarget { root, files, known },
                    &lint_settings,
                    lint_cache,
                    cancel,
                )
            }
        });
        let test_limits = tools::TestLimits {
            run: limits.tests,
            case: limits.test_case,
        };
        let step = tools.step("pytest");
        let run = tools::run_pytest_with(env, sandbox, root, test_limits, cancel);
        drop(step);
        let lint = lint.join().unwrap_or_else(|_| {
            Err(tools::ToolError::Failed {
                command: "pylint".into(),
                message: "the thread running pylint panicked".into(),
            })
        });
        (run, lint)
    });
    let (run, lint) = (run?, lint?);
    let check = if run.no_tests {
        let sources = sources_of(files);
        let _step = tools.step("import checks (no tests)");
        Some(tools::check_imports(
            env,
            sandbox,
            root,
            &sources,
            limits.tests.min(IMPORT_TIMEOUT),
            cancel,
        )?)
    } else {
        None
    };
    Ok(assemble(root, files, run, lint, check, baseline))
}

/// The files the import checks import: every Python file but the tests.
fn sources_of(files: &[String]) -> Vec<String> {
    files
        .iter()
        .filter(|f| !super::is_test_path(f))
        .cloned()
        .collect()
}

/// The measurement made of one pytest run, one lint and (when pytest found
/// no tests) the import checks of `files` in `root`. `baseline` as in
/// [`measure`].
pub fn assemble(
    root: &Path,
    files: &[String],
    run: TestRun,
    lint: LintReport,
    check: Option<ImportCheck>,
    baseline: Option<&TestState>,
) -> Measurement {
    let pylint = lint.score;
    if let (true, Some(check)) = (run.no_tests, check) {
        // Problems name files relative to the target, so prompts are the
        // same in every worktree.
        let root_prefix = format!("{}/", root.display().to_string().trim_end_matches('/'));
        let relative = |text: &str| text.replace(&root_prefix, "");
        let mut problems: Vec<(String, String)> = check
            .compile_errors
            .iter()
            .map(|(p, m)| (p.clone(), relative(m)))
            .collect();
        for (path, problem) in &check.import_errors {
            if !problems.iter().any(|(p, _)| p == path) {
                problems.push((path.clone(), relative(problem)));
            }
        }
        return Measurement {
            snapshot: Snapshot {
                tests: None,
                checks: Some(CheckState {
                    problems,
                    files: sources_of(files).len(),
                }),
                pylint,
                lint,
            },
            test_run: Some(run),
            import_check: Some(check),
            cached: false,
            early_stop: None,
            first_pass: None,
        };
    }
    Measurement {
        snapshot: Snapshot {
            tests: Some(TestState::from_run(&run, baseline)),
            checks: None,
            pylint,
            lint,
        },
        test_run: Some(run),
        import_check: None,
        cached: false,
        early_stop: None,
        first_pass: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(passed: &[&str], failing: &[&str], pylint: f64) -> Snapshot {
        let failing: Vec<TestCase> = failing
            .iter()
            .map(|id| TestCase {
                id: id.to_string(),
                outcome: TestOutcome::Failed,
                message: None,
                details: None,
            })
            .collect();
        Snapshot {
            tests: Some(TestState {
                passed: passed.iter().map(|s| s.to_string()).collect(),
                total: passed.len() + failing.len(),
                failing,
                timed_out: false,
                ..TestState::default()
            }),
            checks: None,
            pylint: Some(pylint),
            lint: LintReport::default(),
        }
    }

    #[test]
    fn verdicts_follow_the_ratchet() {
        let best = snap(&["a", "b"], &["c", "d"], 5.0);
        assert_eq!(
            compare(&best, &snap(&["a", "b", "c"], &["d"], 4.0), Some(5.0)),
            Verdict::Improved
        );
        assert_eq!(
            compare(&best, &snap(&["a", "b", "c", "d"], &[], 6.0), Some(5.0)),
            Verdict::Green
        );
        assert_eq!(
            compare(&best, &snap(&["a", "c", "d"], &["b"], 9.0), Some(5.0)),
            Verdict::Regressed
        );
        assert_eq!(
            compare(&best, &snap(&["a", "b"], &["c", "d"], 5.0), Some(5.0)),
            Verdict::Same
        );
        assert_eq!(
            compare(&best, &snap(&["a", "b"], &["c", "d"], 6.5), Some(5.0)),
            Verdict::Improved
        );
        assert_eq!(
            compare(&best, &snap(&["a", "b"], &["c", "d"], 4.5), Some(5.0)),
            Verdict::Regressed
        );
    }

    fn run_of(cases: &[(&str, TestOutcome)]) -> TestRun {
        TestRun {
            cases: cases
                .iter()
                .map(|(id, outcome)| TestCase {
                    id: id.to_string(),
                    outcome: *outcome,
                    message: None,
                    details: None,
                })
                .collect(),
            exit_code: Some(1),
            ..TestRun::default()
        }
    }

    fn state_of(run: &TestRun, baseline: Option<&TestState>) -> Snapshot {
        Snapshot {
            tests: Some(TestState::from_run(run, baseline)),
            checks: None,
            pylint: Some(5.0),
            lint: LintReport::default(),
        }
    }

    #[test]
    fn a_baseline_test_that_vanishes_is_a_regression_never_green() {
        use TestOutcome::*;
        let base_run = run_of(&[("t::a", Passed), ("t::b", Failed), ("t::c", Skipped)]);
        let baseline = state_of(&base_run, None);
        let reference = baseline.tests.as_ref();

        // The failing test deselected: everything that runs passes, yet it is not green.
        let deselected = state_of(&run_of(&[("t::a", Passed), ("t::c", Skipped)]), reference);
        let tests = deselected.tests.as_ref().unwrap();
        assert_eq!(tests.vanished, BTreeSet::from(["t::b".to_string()]));
        assert!(!tests.all_pass());
        assert_eq!(
            tests.describe(),
            "1/2 passed, 1 baseline test(s) missing, deselected or skipped"
        );
        assert_eq!(
            compare(&baseline, &deselected, Some(5.0)),
            Verdict::Regressed
        );

        // Skipped now where it ran before: the same.
        let skipped = state_of(
            &run_of(&[("t::a", Passed), ("t::b", Skipped), ("t::c", Skipped)]),
            reference,
        );
        assert_eq!(compare(&baseline, &skipped, Some(5.0)), Verdict::Regressed);

        // A test that was skipped at the baseline may stay skipped; the real fix is green.
        let fixed = state_of(
            &run_of(&[("t::a", Passed), ("t::b", Passed), ("t::c", Skipped)]),
            reference,
        );
        assert!(fixed.tests.as_ref().unwrap().vanished.is_empty());
        assert_eq!(compare(&baseline, &fixed, Some(5.0)), Verdict::Green);

        // Tests only ever added are fine; a passing baseline test that vanishes is lost.
        let lost = state_of(&run_of(&[("t::b", Passed), ("t::new", Passed)]), reference);
        assert_eq!(compare(&baseline, &lost, Some(5.0)), Verdict::Regressed);
    }

    #[test]
    fn tests_left_unrun_by_the_time_limit_count_but_never_pass() {
        use TestOutcome::*;
        let base_run = run_of(&[("t::a", Passed), ("t::b", Failed), ("t::c", Passed)]);
        let baseline = state_of(&base_run, None);
        let mut cut_run = run_of(&[("t::a", Passed), ("t::b", Failed), ("t::c", NotRun)]);
        cut_run.timed_out = true;
        let cut = state_of(&cut_run, baseline.tests.as_ref());
        let tests = cut.tests.as_ref().unwrap();
        assert_eq!(tests.not_run, BTreeSet::from(["t::c".to_string()]));
        // Counted once: as not run, not again as vanished.
        assert!(tests.vanished.is_empty());
        assert_eq!(cut.counts(), (1, 3));
        assert_eq!(
            tests.describe(),
            "1/3 passed, 1 not run (the test run hit its time limit)"
        );
        assert!(!tests.all_pass());
        assert_eq!(compare(&baseline, &cut, Some(5.0)), Verdict::Regressed);

        // A baseline cut short is beaten by a run where everything passes.
        let all = state_of(
            &run_of(&[("t::a", Passed), ("t::b", Passed), ("t::c", Passed)]),
            cut.tests.as_ref(),
        );
        assert_eq!(compare(&cut, &all, Some(5.0)), Verdict::Green);
    }

    #[test]
    fn without_tests_checks_decide() {
        let mk = |problems: &[&str], pylint: f64| Snapshot {
            tests: None,
            checks: Some(CheckState {
                problems: problems
                    .iter()
                    .map(|p| (p.to_string(), "x".to_string()))
                    .collect(),
                files: 3,
            }),
            pylint: Some(pylint),
            lint: LintReport::default(),
        };
        let best = mk(&["a.py", "b.py"], 3.0);
        assert_eq!(
            compare(&best, &mk(&["b.py"], 3.5), Some(3.0)),
            Verdict::Improved
        );
        assert_eq!(compare(&best, &mk(&[], 3.5), Some(3.0)), Verdict::Green);
        assert_eq!(
            compare(&best, &mk(&["a.py", "c.py"], 3.5), Some(3.0)),
            Verdict::Regressed
        );
    }
}
