//! The Judge: measures a state of the code in the worktree (pytest, or
//! compile/import checks when there are no tests, plus pylint) and compares
//! it with the best state so far. Deterministic: the model is never asked.

use std::path::Path;
use std::time::Duration;

use crate::cancel::Cancel;
use crate::log::{EventSink, Step};
use crate::pipeline::{
    CheckState, ImportCheck, LintReport, Measurement, Snapshot, TestRun, TestState,
};
use crate::tools::{self, LintCache, LintSettings, PythonEnv, Sandbox};
pub use early::measure_attempt;

pub mod api;
pub mod behaviour;
pub mod early;

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
    /// The suites of the target's other languages (see [`crate::lang::Suite`]),
    /// each run beside pytest and pylint and merged into one measurement.
    pub suites: &'a [Box<dyn crate::lang::Suite>],
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
    let (env, sandbox, suites) = (tools.env, tools.sandbox, tools.suites);
    // The files pytest and pylint judge; each suite judges its own.
    let own = crate::lang::judged_by_interpreter(suites, files);
    let interpreter = !own.is_empty() || suites.is_empty();
    let test_limits = tools::TestLimits {
        run: limits.tests,
        case: limits.test_case,
    };
    // pytest, pylint and every other suite are independent: run them side
    // by side.
    let (run, lint, others) = std::thread::scope(|scope| {
        let others: Vec<_> = suites
            .iter()
            .map(|suite| {
                let suite = suite.as_ref();
                scope.spawn(move || suite_run(tools, suite, root, files, limits, cancel))
            })
            .collect();
        let lint = scope.spawn(|| match linted {
            Some(report) => Ok(report),
            None if !interpreter => Ok(LintReport::default()),
            None => pylint(tools, root, &own, limits, cancel),
        });
        let run = interpreter.then(|| {
            let _step = tools.step("pytest");
            tools::run_pytest_with(env, sandbox, root, test_limits, cancel)
        });
        let lint = lint.join().unwrap_or_else(|_| Err(panicked("pylint")));
        let others: Vec<_> = others
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(panicked("a test runner"))))
            .collect();
        (run, lint, others)
    });
    let (run, lint) = merged(run.map(|run| (run, lint)), others)?;
    let check = if run.no_tests && interpreter {
        let sources = sources_of(&own);
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
    Ok(assemble(root, &own, run, lint, check, baseline))
}

/// One suite of another language on its files among `files`: its tests,
/// then its lint.
fn suite_run(
    tools: Tools<'_>,
    suite: &dyn crate::lang::Suite,
    root: &Path,
    files: &[String],
    limits: Limits,
    cancel: &Cancel,
) -> Result<(TestRun, LintReport), tools::ToolError> {
    let mine: Vec<String> = files.iter().filter(|f| suite.owns(f)).cloned().collect();
    let test_limits = tools::TestLimits {
        run: limits.tests,
        case: limits.test_case,
    };
    let step = tools.step(suite.runner());
    let run = suite.test(root, test_limits, cancel)?;
    drop(step);
    let _step = tools.step(suite.linter());
    let lint = suite.lint(root, &mine, limits.lint, cancel)?;
    Ok((run, lint))
}

/// pylint over the interpreter's `files`, through the run's lint cache.
pub(super) fn pylint(
    tools: Tools<'_>,
    root: &Path,
    files: &[String],
    limits: Limits,
    cancel: &Cancel,
) -> Result<LintReport, tools::ToolError> {
    let _step = tools.step("pylint");
    tools::run_pylint_on(
        tools.env,
        tools.sandbox,
        tools::LintTarget {
            root,
            files,
            known: tools.known,
        },
        &LintSettings::new(limits.lint),
        tools.lint_cache,
        cancel,
    )
}

/// One test run and one lint of the interpreter's (when it ran) and every
/// other suite's: a lone one as it is, several merged.
fn merged(
    interpreter: Option<(
        Result<TestRun, tools::ToolError>,
        Result<LintReport, tools::ToolError>,
    )>,
    others: Vec<Result<(TestRun, LintReport), tools::ToolError>>,
) -> Result<(TestRun, LintReport), tools::ToolError> {
    let (mut runs, mut lints) = (Vec::new(), Vec::new());
    if let Some((run, lint)) = interpreter {
        runs.push(run?);
        lints.push(lint?);
    }
    for other in others {
        let (run, lint) = other?;
        runs.push(run);
        lints.push(lint);
    }
    let run = crate::lang::suite::merge_runs(runs);
    let lint = match lints.len() {
        1 => lints.remove(0),
        _ => crate::lang::suite::merge_lints(lints),
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
                lint_score: pylint,
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
            lint_score: pylint,
            lint,
        },
        test_run: Some(run),
        import_check: None,
        cached: false,
        early_stop: None,
        first_pass: None,
    }
}
