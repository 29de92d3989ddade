//! Turns what the run does into experiment-log entries.

use std::collections::BTreeMap;

use serde_json::json;

use super::timing::{AttemptTimes, Stage, StageClock};
use super::{RunConfig, Summary};
use crate::analysis::FileMetrics;
use crate::error::SwarmError;
use crate::log::{Action, Agent, Entry, ExperimentLog, Status};
use crate::stage::excerpt::Excerpt;
use crate::stage::judge::{Measurement, Verdict};
use crate::stage::prompt::clip;
use crate::stage::reviewer::{Change, Rejection};
use crate::stage::ModelCall;

/// How much tool output an entry keeps.
const OUTPUT_CAP: usize = 8_000;
/// The run's start entry names at most this many files.
const NAMED_FILES: usize = 100;

/// What a Reviewer entry says beyond the decision.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ReviewNote {
    /// The step of a split proposal this is: (1-based index, count).
    pub step: Option<(usize, usize)>,
    /// The proposal was too big and is tried in this many steps.
    pub split_into: Option<usize>,
}

/// Writes the run's entries, and keeps the clock of the run's stages that
/// the run-end entry reports.
pub(crate) struct Recorder<'a> {
    log: &'a mut ExperimentLog,
    model: String,
    run_id: String,
    clock: StageClock,
}

impl<'a> Recorder<'a> {
    /// `clock` started with the run.
    pub fn new(log: &'a mut ExperimentLog, model: &str, run_id: &str, clock: StageClock) -> Self {
        Self {
            log,
            model: model.to_string(),
            run_id: run_id.to_string(),
            clock,
        }
    }

    /// The run moves to `stage`; returns the stage it was in.
    pub fn enter(&mut self, stage: Stage) -> Stage {
        self.clock.enter(stage)
    }

    fn write(&mut self, entry: Entry) -> Result<(), SwarmError> {
        let entry = entry.detail("run_id", self.run_id.clone());
        self.log.record(entry)?;
        Ok(())
    }

    fn entry(
        &self,
        agent: Agent,
        action: Action,
        input: impl Into<String>,
        output: impl Into<String>,
    ) -> Entry {
        Entry::new(agent, &self.model, action, input, output)
    }

    pub fn system_start(&mut self, config: &RunConfig, files: &[String]) -> Result<(), SwarmError> {
        let e = self
            .entry(
                Agent::System,
                Action::CodeAnalysis,
                format!("swarm run on {}", config.target.display()),
                files_line(files),
            )
            .status(Status::Info)
            .detail("kind", "run_start")
            .detail("max_iterations", config.max_iterations)
            .detail("dry_run", config.dry_run);
        self.write(e)
    }

    /// The run's end: its summary, and its wall time so far in
    /// `details.seconds`, by stage in `details.stage_seconds`.
    pub fn system_end(&mut self, summary: &Summary) -> Result<(), SwarmError> {
        let text = serde_json::to_string(summary).unwrap_or_default();
        let (stages, seconds) = self.clock.report();
        let e = self
            .entry(Agent::System, Action::CodeAnalysis, "run summary", text)
            .status(Status::Info)
            .detail("kind", "run_end")
            .detail("exit_code", summary.exit_code)
            .detail("seconds", seconds)
            .detail("stage_seconds", stages);
        self.write(e)
    }

    pub fn metrics(&mut self, metrics: &BTreeMap<String, FileMetrics>) -> Result<(), SwarmError> {
        let table = serde_json::to_string(metrics).unwrap_or_default();
        let e = self
            .entry(
                Agent::Auditor,
                Action::CodeAnalysis,
                format!("tree-sitter metrics of {} files", metrics.len()),
                clip(&table, OUTPUT_CAP * 4).to_string(),
            )
            .detail("kind", "tool")
            .detail("tool", "metrics");
        self.write(e)
    }

    /// pytest (or import checks) and pylint of one measured state.
    pub fn measurement(
        &mut self,
        agent: Agent,
        m: &Measurement,
        attempt: Option<u32>,
    ) -> Result<(), SwarmError> {
        let snap = &m.snapshot;
        if let Some(run) = &m.test_run {
            let (passed, total) = snap.counts();
            let e = self
                .entry(
                    agent,
                    Action::CodeAnalysis,
                    run.command.clone(),
                    clip(&run.output, OUTPUT_CAP).to_string(),
                )
                .detail("kind", "tool")
                .detail("tool", "pytest")
                .detail("attempt", json!(attempt))
                .detail("cached", m.cached)
                .detail("stopped_early", m.early_stop.is_some())
                .detail("early_stop", json!(m.early_stop))
                .detail(
                    "early_stop_reason",
                    json!(m.early_stop.as_ref().map(|s| s.describe())),
                )
                .detail("exit_code", json!(run.exit_code))
                .detail("seconds", seconds(run.duration))
                .detail("first_pass_seconds", json!(m.first_pass.map(seconds)))
                .detail("timed_out", run.timed_out)
                .detail("no_tests", run.no_tests)
                .detail("passed", passed)
                .detail("total", total)
                .detail(
                    "failing",
                    json!(snap.failing().iter().map(|c| &c.id).collect::<Vec<_>>()),
                )
                .detail(
                    "vanished",
                    json!(snap
                        .tests
                        .as_ref()
                        .map(|t| t.vanished.iter().cloned().collect::<Vec<_>>())
                        .unwrap_or_default()),
                );
            self.write(e)?;
        }
        if let Some(check) = &m.import_check {
            let e = self
                .entry(
                    agent,
                    Action::CodeAnalysis,
                    check.command.clone(),
                    clip(&check.output, OUTPUT_CAP).to_string(),
                )
                .detail("kind", "tool")
                .detail("tool", "import_check")
                .detail("attempt", json!(attempt))
                .detail("cached", m.cached)
                .detail("compile_errors", check.compile_errors.len())
                .detail("import_errors", check.import_errors.len());
            self.write(e)?;
        }
        let e = self
            .entry(
                agent,
                Action::CodeAnalysis,
                snap.lint.command.clone(),
                clip(&snap.lint.output, OUTPUT_CAP).to_string(),
            )
            .detail("kind", "tool")
            .detail("tool", "pylint")
            .detail("attempt", json!(attempt))
            .detail("cached", m.cached)
            .detail("score", json!(snap.pylint))
            .detail("messages", snap.lint.messages.len())
            .detail("linted", snap.lint.linted)
            .detail("from_cache", snap.lint.from_cache)
            .detail("batches", json!(snap.lint.batches))
            .detail("seconds", json!(snap.lint.seconds))
            .detail("skipped", json!(snap.lint.skipped))
            .detail("notes", json!(snap.lint.notes));
        self.write(e)
    }

    /// The behaviour check of attempt `attempt` (see
    /// [`crate::stage::judge::behaviour`]).
    pub fn behaviour(
        &mut self,
        check: &crate::stage::judge::behaviour::BehaviourCheck,
        attempt: u32,
    ) -> Result<(), SwarmError> {
        let e = self
            .entry(
                Agent::Judge,
                Action::CodeAnalysis,
                format!(
                    "behaviour check of {}: the best state's functions and the changed ones on the same inputs",
                    check
                        .files
                        .iter()
                        .map(|f| f.file.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                check.describe(),
            )
            .detail("kind", "tool")
            .detail("tool", "behaviour_check")
            .detail("attempt", attempt)
            .detail("behaviour", json!(check));
        self.write(e)
    }

    /// The Tester's validation of the tests generated for one module:
    /// every test with the steps it passed and the one it failed, in
    /// `details.generated_tests` (see [`crate::stage::tester`]).
    pub fn tester(
        &mut self,
        generated: &crate::stage::tester::Generated,
    ) -> Result<(), SwarmError> {
        let e = self
            .entry(
                Agent::Judge,
                Action::CodeAnalysis,
                format!(
                    "validate the tests generated for {}: parses, imports the module, real assertions, runs, passes on the original code, not flaky ({} runs)",
                    generated.file,
                    crate::stage::tester::run::RUNS
                ),
                generated.describe(),
            )
            .detail("kind", "tool")
            .detail("tool", "tester")
            .detail("file", generated.file.as_str())
            .detail(
                "generated_tests",
                json!({
                    "file": generated.file,
                    "test_file": generated.test_file,
                    "kept": generated.kept(),
                    "discarded": generated.discarded(),
                    "note": generated.note,
                    "file_steps": generated.file_steps,
                    "tests": generated.tests,
                    "seconds": generated.seconds,
                }),
            );
        self.write(e)
    }

    /// What a plan request shows: the files in full and why, how many only
    /// as a line or a count, and its size against the allowance.
    pub fn plan_selection(
        &mut self,
        selection: &crate::stage::planner::Selection,
    ) -> Result<(), SwarmError> {
        /// Names of summarised files kept in the entry.
        const NAMED: usize = 200;
        let e = self
            .entry(
                Agent::Auditor,
                Action::CodeAnalysis,
                format!(
                    "plan {} context: {} file(s) in full, {} as one line, {} counted per folder",
                    selection.batch,
                    selection.in_full.len(),
                    selection.summarised.len(),
                    selection.counted_files()
                ),
                format!(
                    "about {} of {} prompt tokens",
                    selection.prompt_tokens, selection.allowance_tokens
                ),
            )
            .detail("kind", "plan_selection")
            .detail("batch", selection.batch)
            .detail("in_full", json!(selection.in_full))
            .detail(
                "summarised",
                json!(selection.summarised.iter().take(NAMED).collect::<Vec<_>>()),
            )
            .detail("summarised_count", selection.summarised.len())
            .detail("counted", json!(selection.counted))
            .detail("counted_count", selection.counted_files())
            .detail("prompt_tokens", selection.prompt_tokens)
            .detail("allowance_tokens", selection.allowance_tokens);
        self.write(e)
    }

    /// One model call with its exact prompt and raw reply.
    pub fn model_call(
        &mut self,
        agent: Agent,
        action: Action,
        call: &ModelCall,
        file: Option<&str>,
        iteration: Option<u32>,
    ) -> Result<(), SwarmError> {
        let e = self.call_entry(agent, action, call, file, iteration);
        self.write(e)
    }

    /// One Fixer call; when its prompt showed the file in excerpts,
    /// `details.excerpts` lists them (`start`, `end`, `why`).
    pub fn fixer_call(
        &mut self,
        action: Action,
        call: &ModelCall,
        file: Option<&str>,
        iteration: u32,
        excerpts: Option<&[Excerpt]>,
    ) -> Result<(), SwarmError> {
        let mut e = self.call_entry(Agent::Fixer, action, call, file, Some(iteration));
        if let Some(excerpts) = excerpts {
            e = e.detail("excerpts", json!(excerpts));
        }
        self.write(e)
    }

    fn call_entry(
        &self,
        agent: Agent,
        action: Action,
        call: &ModelCall,
        file: Option<&str>,
        iteration: Option<u32>,
    ) -> Entry {
        let (output, status, usage, finish, error) = match &call.reply {
            Ok(r) => (
                r.text.clone(),
                Status::Success,
                Some(r.usage),
                Some(r.finish.clone()),
                None,
            ),
            Err(e) => (String::new(), Status::Failure, None, None, Some(e.clone())),
        };
        self.entry(agent, action, call.request.transcript(), output)
            .status(status)
            .detail("kind", "llm_call")
            .detail("request_hash", call.request.hash())
            .detail("file", json!(file))
            .detail("iteration", json!(iteration))
            .detail("elapsed_ms", json!(call.elapsed_ms as u64))
            .detail("input_tokens", json!(usage.map(|u| u.input_tokens)))
            .detail("output_tokens", json!(usage.map(|u| u.output_tokens)))
            .detail("tokens_estimated", json!(usage.map(|u| u.estimated)))
            .detail("finish", json!(finish))
            .detail("error", json!(error))
    }

    /// The Reviewer's decision; a rejection carries its rule's stable name
    /// in `details.rule`, a change merged from an earlier version
    /// `details.rebased`, a split proposal `details.split_into` (its number
    /// of steps) and each step `details.step` (`2 of 5`).
    pub fn review(
        &mut self,
        file: &str,
        iteration: u32,
        outcome: Result<&Change, &Rejection>,
        note: ReviewNote,
    ) -> Result<(), SwarmError> {
        let (mut output, verdict, rule) = match outcome {
            Ok(change) => (
                format!("accepted: {} changed lines", change.changed_lines),
                "accepted",
                None,
            ),
            Err(reason) => (
                format!("rejected: {reason}"),
                "rejected",
                Some(reason.rule()),
            ),
        };
        let rebased = outcome.ok().map(|c| &c.rebased).filter(|r| !r.is_empty());
        for r in rebased.into_iter().flatten() {
            output.push_str(&format!("\nrebased: {r}"));
        }
        if let Some(steps) = note.split_into {
            output.push_str(&format!("\nsplit into {steps} reviewer-sized steps"));
        }
        let mut e = self
            .entry(
                Agent::Reviewer,
                Action::CodeAnalysis,
                format!("review the proposal for {file}"),
                output,
            )
            .detail("kind", "review")
            .detail("file", file)
            .detail("iteration", iteration)
            .detail("verdict", verdict)
            .detail("rule", json!(rule));
        if let Some(rebased) = rebased {
            e = e.detail("rebased", json!(rebased));
        }
        if let Some(steps) = note.split_into {
            e = e.detail("split_into", steps);
        }
        if let Some((index, total)) = note.step {
            e = e.detail("step", format!("{index} of {total}"));
        }
        self.write(e)
    }

    /// What confines the code under test in this run (said once per run).
    pub fn safety(&mut self, safety: &super::Safety) -> Result<(), SwarmError> {
        let output = if safety.shortfalls.is_empty() {
            "every layer active".to_string()
        } else {
            safety.shortfalls.join("\n")
        };
        let e = self
            .entry(
                Agent::System,
                Action::CodeAnalysis,
                "sandbox for pytest, pylint and import checks; swarm's own hardening",
                output,
            )
            .detail("kind", "safety")
            .detail("safety", json!(safety));
        self.write(e)
    }

    /// The final check of the best state with the base commit's harness.
    pub fn final_check(&mut self, check: &super::verify::FinalCheck) -> Result<(), SwarmError> {
        let restored = if check.restored.is_empty() {
            "no harness file changed".to_string()
        } else {
            format!(
                "restored to the base version: {}",
                check.restored.join(", ")
            )
        };
        let e = self
            .entry(
                Agent::Judge,
                Action::CodeAnalysis,
                format!("final check of the best state with the base commit's tests ({restored})"),
                format!(
                    "{}: {}",
                    if check.passed { "passed" } else { "failed" },
                    check.tests
                ),
            )
            .detail("kind", "final_check")
            .detail("passed", check.passed)
            .detail("restored", json!(check.restored));
        self.write(e)
    }

    /// The Executor's commit, with the change as a unified diff in
    /// `details.diff` and where the attempt's time went in `details.seconds`.
    #[allow(clippy::too_many_arguments)]
    pub fn commit(
        &mut self,
        file: &str,
        attempt: u32,
        commit: &str,
        message: &str,
        diff: &str,
        verdict: Verdict,
        times: AttemptTimes,
    ) -> Result<(), SwarmError> {
        let e = self
            .entry(
                Agent::Executor,
                Action::Fix,
                format!("commit attempt {attempt} ({file})"),
                format!("{commit}\n\n{message}"),
            )
            .detail("kind", "commit")
            .detail("file", file)
            .detail("attempt", attempt)
            .detail("commit", commit)
            .detail("verdict", verdict.as_str())
            .detail("diff", clip(diff, OUTPUT_CAP * 4).to_string())
            .detail("seconds", times.to_json());
        self.write(e)
    }
}

/// A tool's wall time in seconds, to the millisecond.
fn seconds(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

/// `3 Python files: a.py, b.py, c.py`, naming at most [`NAMED_FILES`].
fn files_line(files: &[String]) -> String {
    let named = files
        .iter()
        .take(NAMED_FILES)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    match files.len().saturating_sub(NAMED_FILES) {
        0 => format!("{} Python files: {named}", files.len()),
        more => format!("{} Python files: {named} and {more} more", files.len()),
    }
}
