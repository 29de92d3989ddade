//! Turns what the run does into experiment-log entries: each entry's kind
//! built as its type in `crate::log` from the stages' results, with the
//! prompt and reply texts every entry carries. It only writes; the report
//! and replay read the entries back through the same types.

use std::collections::BTreeMap;

mod checks;
mod tasks;

use super::timing::{AttemptTimes, Stage, StageClock};
use super::{RunConfig, Summary};
use crate::error::SwarmError;
use crate::log::{
    Action, Agent, Decision, Entry, ExperimentLog, Kind, ModelCall as CallEntry, Status, ToolRun,
};
use crate::pipeline::{clip, Change, Excerpt, Measurement, ReplyProblem, Verdict};
use crate::stage::reviewer::Rejection;
use crate::stage::ModelCall;
use swarm_analysis::FileMetrics;

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

/// A record of another layer, kept in the log as that layer serializes it.
fn as_json<T: serde::Serialize + ?Sized>(record: &T) -> serde_json::Value {
    serde_json::to_value(record).expect("the run's records serialize with string keys")
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
        let entry = entry.in_run(&self.run_id);
        self.log.record(entry)?;
        Ok(())
    }

    fn entry(
        &self,
        agent: Agent,
        action: Action,
        input: impl Into<String>,
        output: impl Into<String>,
        kind: Kind,
    ) -> Entry {
        Entry::new(agent, &self.model, action, input, output, kind)
    }

    pub fn system_start(&mut self, config: &RunConfig, files: &[String]) -> Result<(), SwarmError> {
        let target = config.target.display().to_string();
        let e = self
            .entry(
                Agent::System,
                Action::CodeAnalysis,
                format!("swarm run on {target}"),
                files_line(files),
                Kind::RunStart(crate::log::RunStart {
                    target: Some(target),
                    max_iterations: config.max_iterations,
                    dry_run: config.dry_run,
                }),
            )
            .status(Status::Info);
        self.write(e)
    }

    /// Counts `spent` as the Judge's time (see [`StageClock::judge_share`]).
    pub fn charge_judge(&mut self, spent: std::time::Duration) {
        self.clock.charge_judge(spent);
    }

    /// The run's wall time so far and the Judge's share of it.
    pub fn run_time(&self) -> crate::orchestrator::summary::RunTime {
        let (seconds, judge_seconds) = self.clock.judge_share();
        crate::orchestrator::summary::RunTime {
            seconds,
            judge_seconds,
        }
    }

    /// The run's end: its summary, and its wall time so far in
    /// `details.seconds`, by stage in `details.stage_seconds`.
    pub fn system_end(&mut self, summary: &Summary) -> Result<(), SwarmError> {
        let text = serde_json::to_string(summary).unwrap_or_default();
        let (stage_seconds, seconds) = self.clock.report();
        let end = crate::log::RunEnd {
            exit_code: summary.exit_code,
            seconds: Some(seconds),
            stage_seconds,
        };
        let e = self
            .entry(
                Agent::System,
                Action::CodeAnalysis,
                "run summary",
                text,
                Kind::RunEnd(end),
            )
            .status(Status::Info);
        self.write(e)
    }

    pub fn metrics(&mut self, metrics: &BTreeMap<String, FileMetrics>) -> Result<(), SwarmError> {
        let table = serde_json::to_string(metrics).unwrap_or_default();
        let e = self.entry(
            Agent::Auditor,
            Action::CodeAnalysis,
            format!("tree-sitter metrics of {} files", metrics.len()),
            clip(&table, OUTPUT_CAP * 4).to_string(),
            Kind::Tool(ToolRun::Metrics),
        );
        self.write(e)
    }

    /// pytest (or import checks) and pylint of one measured state.
    pub fn measurement(
        &mut self,
        agent: Agent,
        m: &Measurement,
        attempt: Option<u32>,
    ) -> Result<(), SwarmError> {
        if let Some(e) = self.test_run(agent, m, attempt) {
            self.write(e)?;
        }
        if let Some(e) = self.import_check(agent, m, attempt) {
            self.write(e)?;
        }
        let e = self.lint(agent, m, attempt);
        self.write(e)
    }

    /// The test run of a measurement, if the tests ran for it.
    fn test_run(&self, agent: Agent, m: &Measurement, attempt: Option<u32>) -> Option<Entry> {
        let run = m.test_run.as_ref()?;
        let snap = &m.snapshot;
        let (passed, total) = snap.counts();
        let vanished = snap.tests.as_ref().map(|t| t.vanished.iter().cloned());
        let kind = ToolRun::Tests(crate::log::TestsRun {
            attempt,
            cached: m.cached,
            stopped_early: m.early_stop.is_some(),
            early_stop: as_json(&m.early_stop),
            early_stop_reason: m.early_stop.as_ref().map(|s| s.describe()),
            exit_code: run.exit_code,
            seconds: seconds(run.duration),
            first_pass_seconds: m.first_pass.map(seconds),
            timed_out: run.timed_out,
            no_tests: run.no_tests,
            passed,
            total,
            failing: snap.failing().iter().map(|c| c.id.clone()).collect(),
            passing: match (attempt, &snap.tests) {
                (None, Some(tests)) => tests.passed.iter().cloned().collect(),
                _ => Vec::new(),
            },
            vanished: vanished.into_iter().flatten().collect(),
        });
        Some(self.entry(
            agent,
            Action::CodeAnalysis,
            run.command.clone(),
            clip(&run.output, OUTPUT_CAP).to_string(),
            Kind::Tool(kind),
        ))
    }

    /// The import checks of a measurement, if they ran for it.
    fn import_check(&self, agent: Agent, m: &Measurement, attempt: Option<u32>) -> Option<Entry> {
        let check = m.import_check.as_ref()?;
        let kind = ToolRun::ImportCheck(crate::log::ImportCheckRun {
            attempt,
            cached: m.cached,
            compile_errors: check.compile_errors.len(),
            import_errors: check.import_errors.len(),
        });
        Some(self.entry(
            agent,
            Action::CodeAnalysis,
            check.command.clone(),
            clip(&check.output, OUTPUT_CAP).to_string(),
            Kind::Tool(kind),
        ))
    }

    /// The lint of a measurement.
    fn lint(&self, agent: Agent, m: &Measurement, attempt: Option<u32>) -> Entry {
        let snap = &m.snapshot;
        let lint = &snap.lint;
        let kind = ToolRun::Lint(crate::log::LintRun {
            attempt,
            cached: m.cached,
            score: snap.lint_score,
            messages: lint.messages.len(),
            linted: lint.linted,
            from_cache: lint.from_cache,
            batches: as_json(&lint.batches),
            seconds: lint.seconds,
            skipped: as_json(&lint.skipped),
            notes: lint.notes.clone(),
        });
        self.entry(
            agent,
            Action::CodeAnalysis,
            lint.command.clone(),
            clip(&lint.output, OUTPUT_CAP).to_string(),
            Kind::Tool(kind),
        )
    }

    /// What a plan request shows: the files in full and why, how many only
    /// as a line or a count, and its size against the allowance.
    pub fn plan_selection(
        &mut self,
        selection: &crate::stage::planner::Selection,
    ) -> Result<(), SwarmError> {
        /// Names of summarised files kept in the entry.
        const NAMED: usize = 200;
        let kind = Kind::PlanSelection(crate::log::PlanSelection {
            batch: selection.batch,
            in_full: as_json(&selection.in_full),
            summarised: selection.summarised.iter().take(NAMED).cloned().collect(),
            summarised_count: selection.summarised.len(),
            counted: selection.counted.clone(),
            counted_count: selection.counted_files(),
            prompt_tokens: selection.prompt_tokens,
            allowance_tokens: selection.allowance_tokens,
        });
        let e = self.entry(
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
            kind,
        );
        self.write(e)
    }

    /// The plan of a one-module project, built from its evidence with no
    /// model call: `input_prompt` says what it was built from, and
    /// `output_response` is the plan.
    pub fn plan_from_evidence(
        &mut self,
        planned: crate::log::PlanFromEvidence,
        markdown: &str,
    ) -> Result<(), SwarmError> {
        let e = self.entry(
            Agent::Auditor,
            Action::CodeAnalysis,
            format!(
                "plan of {}, the project's one source module, from its evidence: {} failing \
                 test(s), {} lint message(s); no model asked",
                planned.file,
                planned.failing.len(),
                planned.lint_messages
            ),
            markdown.to_string(),
            Kind::PlanFromEvidence(planned),
        );
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
        let e = self.call_entry(agent, action, call, file, iteration, None);
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
        let excerpts = excerpts.map(as_json);
        let e = self.call_entry(Agent::Fixer, action, call, file, Some(iteration), excerpts);
        self.write(e)
    }

    fn call_entry(
        &self,
        agent: Agent,
        action: Action,
        call: &ModelCall,
        file: Option<&str>,
        iteration: Option<u32>,
        excerpts: Option<serde_json::Value>,
    ) -> Entry {
        let mut logged = CallEntry {
            request_hash: Some(call.request.hash()),
            file: file.map(str::to_string),
            iteration,
            elapsed_ms: call.elapsed_ms as u64,
            excerpts,
            ..CallEntry::default()
        };
        let (output, status) = match &call.reply {
            Ok(r) => {
                logged.input_tokens = Some(r.usage.input_tokens);
                logged.output_tokens = Some(r.usage.output_tokens);
                logged.tokens_estimated = Some(r.usage.estimated);
                logged.finish = Some(as_json(&r.finish));
                if let (Agent::Fixer, Some(file)) = (agent, file) {
                    let form = crate::stage::fixer::reply_form(&r.text, file);
                    logged.reply_form = Some(form.to_string());
                }
                if let crate::llm::Finish::Repeated { tokens } = r.finish {
                    logged.cut = Some(ReplyProblem::Repeated { tokens }.to_string());
                }
                (r.text.clone(), Status::Success)
            }
            Err(e) => {
                logged.error = Some(e.clone());
                (String::new(), Status::Failure)
            }
        };
        let input = call.request.transcript();
        self.entry(agent, action, input, output, Kind::LlmCall(logged))
            .status(status)
    }

    /// The Reviewer's decision; a rejection carries its rule's stable name
    /// in `details.rule` and its reason in `details.reason`, a change merged
    /// from an earlier version `details.rebased`, a split proposal
    /// `details.split_into` (its number of steps) and each step
    /// `details.step` (`2 of 5`).
    pub fn review(
        &mut self,
        file: &str,
        iteration: u32,
        outcome: Result<&Change, &Rejection>,
        note: ReviewNote,
    ) -> Result<(), SwarmError> {
        let (mut output, decision) = match outcome {
            Ok(change) => (
                format!("accepted: {} changed lines", change.changed_lines),
                Decision::Accepted,
            ),
            Err(reason) => (
                format!("rejected: {reason}"),
                Decision::Rejected {
                    rule: Some(reason.rule().to_string()),
                    reason: reason.to_string(),
                },
            ),
        };
        let rebased = outcome.ok().map(|c| &c.rebased).filter(|r| !r.is_empty());
        for r in rebased.into_iter().flatten() {
            output.push_str(&format!("\nrebased: {r}"));
        }
        if let Some(steps) = note.split_into {
            output.push_str(&format!("\nsplit into {steps} reviewer-sized steps"));
        }
        let unplaced = outcome.ok().map(|c| &c.unplaced).filter(|u| !u.is_empty());
        for why in unplaced.into_iter().flatten() {
            output.push_str(&format!("\nleft out (did not apply): {why}"));
        }
        let unplaced = unplaced.map(|u| {
            let hunks = u
                .iter()
                .map(|why| serde_json::json!({"hunk": "did not apply", "why": why}));
            serde_json::Value::Array(hunks.collect())
        });
        let kind = Kind::Review(crate::log::Review {
            file: file.to_string(),
            iteration,
            decision,
            rebased: rebased.map(as_json),
            split_into: note.split_into,
            step: note
                .step
                .map(|(index, total)| format!("{index} of {total}")),
            kept: None,
            left_out: unplaced,
        });
        let e = self.entry(
            Agent::Reviewer,
            Action::CodeAnalysis,
            format!("review the proposal for {file}"),
            output,
            kind,
        );
        self.write(e)
    }

    /// The Reviewer's acceptance of the part of an oversized proposal the
    /// evidence points at: `details.kept` and `details.left_out` list its
    /// hunks (`hunk`, `why`).
    pub fn subset(
        &mut self,
        file: &str,
        iteration: u32,
        subset: &crate::stage::reviewer::Subset,
    ) -> Result<(), SwarmError> {
        let kept: Vec<serde_json::Value> = subset
            .kept
            .iter()
            .map(|k| serde_json::json!({"hunk": k.hunk.to_string(), "why": k.why}))
            .collect();
        let left_out: Vec<serde_json::Value> = subset
            .left_out
            .iter()
            .map(|l| serde_json::json!({"hunk": l.hunk.to_string(), "why": l.why.to_string()}))
            .collect();
        let mut output = format!(
            "accepted: the hunks the evidence points at, {} changed lines",
            subset.change.changed_lines
        );
        for k in &subset.kept {
            output.push_str(&format!("\nkept: {}: {}", k.hunk, k.why));
        }
        for l in &subset.left_out {
            output.push_str(&format!("\nleft out: {l}"));
        }
        let kind = Kind::Review(crate::log::Review {
            file: file.to_string(),
            iteration,
            decision: Decision::Accepted,
            rebased: None,
            split_into: None,
            step: None,
            kept: Some(serde_json::Value::Array(kept)),
            left_out: Some(serde_json::Value::Array(left_out)),
        });
        let e = self.entry(
            Agent::Reviewer,
            Action::CodeAnalysis,
            format!("review the part of the proposal for {file} the evidence points at"),
            output,
            kind,
        );
        self.write(e)
    }

    /// What confines the code under test in this run (said once per run).
    pub fn safety(&mut self, safety: &super::Safety) -> Result<(), SwarmError> {
        let output = if safety.shortfalls.is_empty() {
            "every layer active".to_string()
        } else {
            safety.shortfalls.join("\n")
        };
        let e = self.entry(
            Agent::System,
            Action::CodeAnalysis,
            format!(
                "sandbox for {} and import checks; swarm's own hardening",
                crate::lang::tools(", ")
            ),
            output,
            Kind::Safety(crate::log::SafetyCheck {
                safety: as_json(safety),
            }),
        );
        self.write(e)
    }

    /// The final check of the best state with the base commit's harness.
    pub fn final_check(&mut self, check: &super::FinalCheck) -> Result<(), SwarmError> {
        let restored = if check.restored.is_empty() {
            "no harness file changed".to_string()
        } else {
            format!(
                "restored to the base version: {}",
                check.restored.join(", ")
            )
        };
        let e = self.entry(
            Agent::Judge,
            Action::CodeAnalysis,
            format!("final check of the best state with the base commit's tests ({restored})"),
            format!(
                "{}: {}",
                if check.passed { "passed" } else { "failed" },
                check.tests
            ),
            Kind::FinalCheck(crate::log::FinalCheck {
                passed: check.passed,
                restored: check.restored.clone(),
            }),
        );
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
        self.clock.charge_judge(times.judge);
        let e = self.entry(
            Agent::Executor,
            Action::Fix,
            format!("commit attempt {attempt} ({file})"),
            format!("{commit}\n\n{message}"),
            Kind::Commit(crate::log::Commit {
                file: file.to_string(),
                attempt,
                commit: commit.to_string(),
                verdict,
                diff: clip(diff, OUTPUT_CAP * 4).to_string(),
                seconds: times.seconds(),
            }),
        );
        self.write(e)
    }
}

/// A tool's wall time in seconds, to the millisecond.
fn seconds(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

/// `3 Python files: a.py, b.py, c.py` (the files' languages), naming at
/// most [`NAMED_FILES`].
fn files_line(files: &[String]) -> String {
    let named = files
        .iter()
        .take(NAMED_FILES)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    let language = crate::lang::names_of(files);
    match files.len().saturating_sub(NAMED_FILES) {
        0 => format!("{} {language} files: {named}", files.len()),
        more => format!("{} {language} files: {named} and {more} more", files.len()),
    }
}
