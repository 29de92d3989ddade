//! A language's test suite and checks as the Judge runs them: the
//! runner's per-test outcomes, the linter's messages and score, checks a
//! change must not make worse (a type check), and what a runner can do
//! beyond a whole run (rerun chosen tests, stand in for tests when there
//! are none, say what the environment lacks), read into the pipeline's
//! values and merged into one measurement, so that every suite of a target
//! must be green for success. Python's (pytest, pylint) and JavaScript's
//! (its runner, eslint, tsc) are suites alike; the Judge names neither.
//! Suites are found before any model call ([`FoundSuite`]) and prepared in
//! the run's worktree ([`SuiteSetup`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::cancel::Cancel;
use crate::pipeline::{
    ImportCheck, LintKind, LintMessage, LintReport, Measurement, TestCase, TestOutcome, TestRun,
};
use crate::tools::suite::CannotRun;
use crate::tools::{
    KnownContent, Sandbox, SandboxPolicy, SandboxReport, SelectedRun, TestFiles, TestLimits,
    ToolError,
};

use crate::pipeline::bar::TYPE_ERROR_KIND;

/// One language's suite in a run: prepared once per run (its tools found,
/// its dependencies visible in the worktree), then asked by the Judge for
/// every state it measures.
pub trait Suite: Send + Sync {
    /// The language it judges.
    fn language(&self) -> &'static dyn super::Language;
    /// The test runner's name, as steps and the log give it (`vitest`).
    fn runner(&self) -> &str;
    /// The linter's name (`eslint`).
    fn linter(&self) -> &str;
    /// Whether `rel` (target-relative) is a file this suite judges.
    fn owns(&self, rel: &str) -> bool {
        self.language().is_source(rel)
    }
    /// Whether it has anything to judge among `files` (target-relative):
    /// by default, whether it owns one of them. The Judge runs the suites
    /// that do, and every suite when none does.
    fn judges(&self, files: &[String]) -> bool {
        files.iter().any(|f| self.owns(f))
    }
    /// Runs the tests of the target at `root` (the target folder in the
    /// worktree); ids are target-relative. A runner that cannot start or
    /// ends without results is a failing case named by the runner.
    fn test(&self, root: &Path, limits: TestLimits, cancel: &Cancel) -> Result<TestRun, ToolError>;
    /// Lints `files` (target-relative, this suite's) at `root`, with the
    /// type check's diagnostics (when the language has one) as messages of
    /// kind error whose `message_id` is [`TYPE_ERROR_KIND`]. `known` holds
    /// the blob ids of the files whose content on disk is committed, for a
    /// linter that keeps its results by content (pylint).
    fn lint(
        &self,
        root: &Path,
        files: &[String],
        timeout: Duration,
        known: Option<&KnownContent>,
        cancel: &Cancel,
    ) -> Result<LintReport, ToolError>;
    /// Whether its lint may run while its tests run (pytest and pylint
    /// share nothing); otherwise the lint follows the tests.
    fn lints_beside_tests(&self) -> bool {
        false
    }
    /// Its run of chosen tests alone, when its runner has one (the Judge's
    /// early stop reruns the best state's failing tests first); `None`:
    /// the whole suite always runs.
    fn rerun(&self) -> Option<&dyn Rerun> {
        None
    }
    /// What stands in for the tests when the run collected none (Python:
    /// every module imports); `None`: nothing does.
    fn stand_in(&self) -> Option<&dyn StandIn> {
        None
    }
    /// What the environment lacks when the baseline's run of this suite,
    /// the only one judging the target, could not run it at all: a
    /// plugin, a module, the project itself not installed. `None` when it
    /// ran, when what went wrong is the project's code's to fix, or when
    /// the suite cannot tell. `worktree` bounds the search for the
    /// project's declarations from `root` up; `files` are the target's.
    fn cannot_run(
        &self,
        _root: &Path,
        _worktree: &Path,
        _baseline: &Measurement,
        _files: &[String],
        _tests: &TestFiles,
    ) -> Option<CannotRun> {
        None
    }
    /// Whether a baseline it measured may be reused by a later run on the
    /// same tree (its tools are in the baseline cache's key); otherwise
    /// the baseline is measured every run.
    fn baseline_reusable(&self) -> bool {
        false
    }
    /// The untracked folders and files it laid in the worktree for its
    /// tools (links to the user's installed dependencies, copies of the
    /// checkout's ignored generated modules): kept across resets, never
    /// committed.
    fn laid(&self) -> &[PathBuf] {
        &[]
    }
    /// The layers of its own sandbox (for the safety summary); `None` when
    /// its tools run in the run's sandbox, which the summary tells first.
    fn sandbox_report(&self) -> Option<SandboxReport>;
    /// What verified the change to each of `changed` it owns (`files` are
    /// the target's, read under `root`), in words: `vitest's tests, tsc's
    /// type check, eslint` when a test reaches the file, else `tsc's type
    /// check and eslint only: no vitest test reaches it`. Nothing by
    /// default (the behaviour check tells it).
    fn verified_by(
        &self,
        _root: &Path,
        _changed: &[String],
        _files: &[String],
    ) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// A runner's run of chosen tests alone (see [`Suite::rerun`]).
pub trait Rerun: Sync {
    /// Runs only the tests `ids` at `root`, with every id the whole suite
    /// collects (`None` when the runner did not get that far).
    fn run_only(
        &self,
        root: &Path,
        limits: TestLimits,
        ids: &[String],
        cancel: &Cancel,
    ) -> Result<SelectedRun, ToolError>;
}

/// The check that stands in for a suite's tests when the run collected
/// none (see [`Suite::stand_in`]).
pub trait StandIn: Sync {
    /// Its name in the step told to the user (`import checks`).
    fn name(&self) -> &str;
    /// Checks `sources` (target-relative, tests left out) at `root`, each
    /// for at most `timeout`.
    fn check(
        &self,
        root: &Path,
        sources: &[String],
        timeout: Duration,
        cancel: &Cancel,
    ) -> Result<ImportCheck, ToolError>;
}

/// What a language found for a target before any model call: a suite to
/// prepare once the run's worktree exists.
pub trait FoundSuite: Send + Sync {
    /// The language it judges.
    fn language(&self) -> &'static dyn super::Language;
    /// The suite, prepared in the run's worktree.
    fn prepare(self: Box<Self>, setup: &SuiteSetup<'_>) -> Result<Box<dyn Suite>, ToolError>;
}

/// What a found suite is prepared with: the user's checkout and the run's
/// worktree, swarm's cache, the sandbox policy, and the tools every run
/// has (the interpreter and the sandbox made around it).
pub struct SuiteSetup<'a> {
    pub checkout: &'a Path,
    pub worktree: &'a Path,
    /// The checkout's git-ignored files, repo-relative, a folder ignored
    /// whole as one entry ending in `/` (see `Repo::ignored_paths`): what
    /// a language may lay in the worktree for its tests.
    pub ignored: &'a [String],
    /// swarm's cache folder, if any.
    pub cache_dir: Option<&'a Path>,
    /// The run's sandbox policy (writable: the worktree), for a suite
    /// that makes its own sandbox.
    pub policy: &'a SandboxPolicy,
    /// The run's interpreter.
    pub toolchain: &'a Arc<super::Toolchain>,
    /// The run's sandbox, made around the interpreter.
    pub sandbox: &'a Arc<Sandbox>,
    /// Tells the user what preparing does or lacks.
    pub progress: &'a dyn Fn(&str),
    pub cancel: &'a Cancel,
}

/// The suites that judge `files` (see [`Suite::judges`]), each with the
/// files among `files` it owns, in the run's order; every suite when none
/// judges any.
pub fn judging<'s>(
    suites: &'s [Box<dyn Suite>],
    files: &[String],
) -> Vec<(&'s dyn Suite, Vec<String>)> {
    let mut judging: Vec<&dyn Suite> = suites
        .iter()
        .map(Box::as_ref)
        .filter(|s| s.judges(files))
        .collect();
    if judging.is_empty() {
        judging = suites.iter().map(Box::as_ref).collect();
    }
    judging
        .into_iter()
        .map(|s| (s, files.iter().filter(|f| s.owns(f)).cloned().collect()))
        .collect()
}

/// One test run made of several runners' runs (in the order given): every
/// case, the worst exit code, timed out when any was, no tests only when
/// none had any.
pub fn merge_runs(runs: Vec<TestRun>) -> TestRun {
    let mut runs = runs.into_iter();
    let Some(mut merged) = runs.next() else {
        return TestRun {
            no_tests: true,
            ..TestRun::default()
        };
    };
    for run in runs {
        merged.cases.extend(run.cases);
        merged.exit_code = match (merged.exit_code, run.exit_code) {
            (Some(0), other) | (other, Some(0)) => other,
            (Some(5), other) | (other, Some(5)) => other,
            (Some(a), Some(_)) => Some(a),
            _ => None,
        };
        merged.timed_out |= run.timed_out;
        merged.no_tests &= run.no_tests;
        merged.command = format!("{} && {}", merged.command, run.command);
        merged.output = format!("{}\n{}", merged.output, run.output);
        merged.duration += run.duration;
    }
    if !merged.no_tests && merged.exit_code == Some(5) {
        merged.exit_code = Some(0);
    }
    merged
}

/// One lint made of several linters' reports: every message, the scores
/// weighed by the files each linted (`None` only when no linter scored).
pub fn merge_lints(reports: Vec<LintReport>) -> LintReport {
    let weights: Vec<(f64, f64)> = reports
        .iter()
        .filter_map(|r| {
            r.score
                .map(|s| (s, (r.linted + r.from_cache).max(1) as f64))
        })
        .collect();
    let total: f64 = weights.iter().map(|(_, w)| w).sum();
    let score = (!weights.is_empty())
        .then(|| weights.iter().map(|(s, w)| s * w).sum::<f64>() / total)
        .map(|s| (s * 100.0).round() / 100.0);
    let mut merged = LintReport {
        score,
        ..LintReport::default()
    };
    for report in reports {
        merged.messages.extend(report.messages);
        merged.skipped.extend(report.skipped);
        merged.notes.extend(report.notes);
        merged.batches.extend(report.batches);
        merged.command = join_nonempty(&merged.command, &report.command, " && ");
        merged.output = join_nonempty(&merged.output, &report.output, "\n");
        merged.linted += report.linted;
        merged.from_cache += report.from_cache;
        merged.seconds += report.seconds;
    }
    merged
}

fn join_nonempty(a: &str, b: &str, sep: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}{sep}{b}"),
    }
}

/// The case a runner's run stands for when it ended without any result
/// (it could not start, its configuration failed to load): a failure named
/// by the runner, with the end of its output.
pub fn runner_failed(runner: &str, run: &TestRun) -> TestCase {
    let tail: String = {
        let lines: Vec<&str> = run.output.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    };
    TestCase {
        id: runner.to_string(),
        outcome: TestOutcome::Error,
        message: Some(format!(
            "{runner} ended with exit code {} and reported no test",
            run.exit_code
                .map_or_else(|| "none (killed)".to_string(), |c| c.to_string())
        )),
        details: Some(tail),
    }
}

/// A lint message for a type checker's diagnostic.
pub fn type_error_message(
    path: String,
    line: u32,
    column: u32,
    code: &str,
    text: &str,
) -> LintMessage {
    LintMessage {
        path,
        line,
        column,
        kind: LintKind::Error,
        symbol: code.to_string(),
        message_id: TYPE_ERROR_KIND.to_string(),
        message: text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ids: &[(&str, TestOutcome)], exit: i32) -> TestRun {
        TestRun {
            cases: ids
                .iter()
                .map(|(id, outcome)| TestCase {
                    id: id.to_string(),
                    outcome: *outcome,
                    message: None,
                    details: None,
                })
                .collect(),
            exit_code: Some(exit),
            no_tests: ids.is_empty(),
            command: "x".into(),
            ..TestRun::default()
        }
    }

    #[test]
    fn merged_runs_keep_every_case_and_the_worst_ending() {
        let merged = merge_runs(vec![
            run(&[("tests/test_a.py::test_a", TestOutcome::Passed)], 0),
            run(&[("a.test.ts::adds", TestOutcome::Failed)], 1),
        ]);
        assert_eq!(merged.cases.len(), 2);
        assert_eq!(merged.exit_code, Some(1));
        assert!(!merged.no_tests);
        let none_then_some = merge_runs(vec![
            run(&[], 5),
            run(&[("a.test.ts::adds", TestOutcome::Passed)], 0),
        ]);
        assert_eq!(none_then_some.exit_code, Some(0));
        assert!(!none_then_some.no_tests);
    }

    #[test]
    fn lint_scores_are_weighed_by_files() {
        let report = |score, linted| LintReport {
            score: Some(score),
            linted,
            ..LintReport::default()
        };
        let merged = merge_lints(vec![report(10.0, 3), report(6.0, 1)]);
        assert_eq!(merged.score, Some(9.0));
        assert_eq!(merged.linted, 4);
    }
}
