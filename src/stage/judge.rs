//! The Judge: measures a state of the code in the worktree by asking the
//! run's suites (each language's runner and linter, see
//! [`crate::lang::Suite`]) side by side, merged into one measurement, with
//! the check that stands in for the tests when none ran; an attempt
//! against the best state so far is measured with the early stop (the best
//! state's failing tests rerun first where a runner can). The verdicts are
//! `pipeline::bar`'s. It names no language. Deterministic: the model is
//! never asked.

use std::path::Path;
use std::time::Duration;

use crate::cancel::Cancel;
use crate::lang::suite::{self, Suite};
use crate::lang::Toolchain;
use crate::log::{EventSink, Step};
use crate::pipeline::{
    CheckState, ImportCheck, LintReport, Measurement, Snapshot, TestRun, TestState,
};
use crate::tools::{self, Sandbox};
pub use early::measure_attempt;

pub mod answers;
pub mod api;
pub mod behaviour;
pub mod early;
pub mod exports;

/// The longest one module may take to import or load (capped further by
/// the test timeout): loading should be instant, so a module still busy
/// after this is looping at load time.
pub const IMPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Timeouts for the tools.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The whole test run (`--test-timeout`).
    pub tests: Duration,
    /// One test (`--test-case-timeout`); `None` when off.
    pub test_case: Option<Duration>,
    pub lint: Duration,
}

impl Limits {
    /// The limits of one test run.
    fn test_run(&self) -> tools::TestLimits {
        tools::TestLimits {
            run: self.tests,
            case: self.test_case,
        }
    }
}

/// What a measurement runs: the run's suites, the interpreter and sandbox
/// the behaviour check runs with, the content known by blob id, and where
/// each tool run is told as a [`Step`] of `stage` ("audit", "judging
/// attempt 3 (stats.py)").
#[derive(Clone, Copy)]
pub struct Tools<'a> {
    pub env: &'a Toolchain,
    pub sandbox: &'a Sandbox,
    pub events: &'a dyn EventSink,
    pub stage: &'a str,
    /// The blob ids of the files whose content on disk is committed: a
    /// linter's cache keys then need not read them (see
    /// [`tools::KnownContent`]).
    pub known: Option<&'a tools::KnownContent>,
    /// The run's suites (see [`crate::lang::Suite`]), run side by side and
    /// merged into one measurement.
    pub suites: &'a [Box<dyn Suite>],
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
/// `files` are the target's source files, relative to `root`. `baseline` is
/// the baseline's test state (`None` when measuring the baseline itself):
/// tests that ran there and do not run here count as failures.
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
/// (by the one suite judging it: its linter then does not run again).
fn measure_linted(
    tools: Tools<'_>,
    root: &Path,
    files: &[String],
    limits: Limits,
    cancel: &Cancel,
    baseline: Option<&TestState>,
    linted: Option<LintReport>,
) -> Result<Measurement, tools::ToolError> {
    let judging = suite::judging(tools.suites, files);
    let mut linted = linted;
    // The suites are independent: run them side by side.
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = judging
            .iter()
            .map(|(suite, mine)| {
                let linted = linted.take();
                scope.spawn(move || suite_run(tools, *suite, root, mine, limits, cancel, linted))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(panicked("a test runner"))))
            .collect()
    });
    let (run, lint) = merged(results)?;
    let stand_in = judging
        .iter()
        .find_map(|(suite, mine)| suite.stand_in().map(|check| (check, mine.as_slice())));
    let (check, checked) = match stand_in {
        Some((stand_in, mine)) if run.no_tests => {
            let sources = sources_of(mine);
            let _step = tools.step(&format!("{} (no tests)", stand_in.name()));
            let timeout = limits.tests.min(IMPORT_TIMEOUT);
            let check = stand_in.check(root, &sources, timeout, cancel)?;
            (Some(check), mine)
        }
        _ => (None, &[][..]),
    };
    Ok(assemble(root, checked, run, lint, check, baseline))
}

/// One suite on its files `mine`: its tests and its lint (side by side
/// when it says they may be, else one after the other), or only its tests
/// when the lint of this state was `linted` already.
fn suite_run(
    tools: Tools<'_>,
    suite: &dyn Suite,
    root: &Path,
    mine: &[String],
    limits: Limits,
    cancel: &Cancel,
    linted: Option<LintReport>,
) -> Result<(TestRun, LintReport), tools::ToolError> {
    let test = || {
        let _step = tools.step(suite.runner());
        suite.test(root, limits.test_run(), cancel)
    };
    let lint = || match linted {
        Some(report) => Ok(report),
        None => lint(tools, suite, root, mine, limits, cancel),
    };
    if !suite.lints_beside_tests() {
        let run = test()?;
        return Ok((run, lint()?));
    }
    std::thread::scope(|scope| {
        let lint = scope.spawn(lint);
        let run = test();
        let lint = lint
            .join()
            .unwrap_or_else(|_| Err(panicked(suite.linter())));
        Ok((run?, lint?))
    })
}

/// A suite's linter over its files `mine`, told as a step.
pub(super) fn lint(
    tools: Tools<'_>,
    suite: &dyn Suite,
    root: &Path,
    mine: &[String],
    limits: Limits,
    cancel: &Cancel,
) -> Result<LintReport, tools::ToolError> {
    let _step = tools.step(suite.linter());
    suite.lint(root, mine, limits.lint, tools.known, cancel)
}

/// One test run and one lint of every suite's: a lone lint as it is,
/// several merged.
fn merged(
    results: Vec<Result<(TestRun, LintReport), tools::ToolError>>,
) -> Result<(TestRun, LintReport), tools::ToolError> {
    let (mut runs, mut lints) = (Vec::new(), Vec::new());
    for result in results {
        let (run, lint) = result?;
        runs.push(run);
        lints.push(lint);
    }
    let run = suite::merge_runs(runs);
    let lint = match lints.len() {
        1 => lints.remove(0),
        _ => suite::merge_lints(lints),
    };
    Ok((run, lint))
}

/// The error of a tool's thread that panicked.
fn panicked(tool: &str) -> tools::ToolError {
    tools::ToolError::Failed {
        command: tool.into(),
        message: format!("the thread running {tool} panicked"),
    }
}

/// The files a stand-in check loads: every file but the tests.
fn sources_of(files: &[String]) -> Vec<String> {
    files
        .iter()
        .filter(|f| !super::is_test_path(f))
        .cloned()
        .collect()
}

/// The measurement made of one test run, one lint and (when no test ran)
/// the stand-in check of `files` in `root`. `baseline` as in [`measure`].
pub fn assemble(
    root: &Path,
    files: &[String],
    run: TestRun,
    lint: LintReport,
    check: Option<ImportCheck>,
    baseline: Option<&TestState>,
) -> Measurement {
    let score = lint.score;
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
                lint_score: score,
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
            lint_score: score,
            lint,
        },
        test_run: Some(run),
        import_check: None,
        cached: false,
        early_stop: None,
        first_pass: None,
    }
}
