//! The kinds of experiment-log entry: what `details` holds besides the
//! prompt and the reply, one type per `details.kind`, written by the
//! orchestrator and read back by the report and replay.
//!
//! Every key and value earlier versions wrote is written the same way
//! (`null` where they wrote `null`, absent where they left a key out), and
//! every kind reads entries of earlier versions: a missing field takes its
//! default, and a fact that earlier versions wrote only as text (a
//! rejection's reason, the run's target) is read from that text
//! ([`Kind::complete_from_text`]). Records another layer owns and nobody
//! reads back are kept as JSON values (see `tool_runs`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::tool_runs::ToolRun;
use crate::pipeline::Verdict;

/// What an entry records, by `details.kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Kind {
    RunStart(RunStart),
    /// The run's end; its summary is the entry's `output_response`
    /// (see [`Entry::run_summary`](super::Entry::run_summary)).
    RunEnd(RunEnd),
    /// What confines the code under test (once per run).
    Safety(SafetyCheck),
    Tool(ToolRun),
    /// What a plan request shows of the repository.
    PlanSelection(PlanSelection),
    /// The plan of a one-module project, built from its evidence: no model
    /// was asked.
    PlanFromEvidence(PlanFromEvidence),
    /// One model call: the exact prompt and raw reply are the entry's
    /// `input_prompt` and `output_response`.
    LlmCall(ModelCall),
    /// The Reviewer's decision on one proposal.
    Review(Review),
    /// The best state checked with the base commit's tests.
    FinalCheck(FinalCheck),
    /// The Executor's commit of an attempt, with the Judge's verdict.
    Commit(Commit),
    /// The tasks an instruction (`--task`) was planned as.
    TaskPlan(TaskPlanRecord),
    /// Where one task got: done, skipped and why, or not reached.
    Task(TaskRecord),
    /// An entry without `kind` (another tool's, or an earlier version's
    /// model call): whatever it holds of a model call. Read only; it is
    /// written without `kind`.
    #[serde(skip)]
    Unnamed(ModelCall),
    /// A kind this version does not know (a later version's, another
    /// tool's).
    #[serde(other)]
    Unknown,
}

impl Kind {
    /// Fills the facts that entries of earlier versions hold only in their
    /// text: a rejection's reason (the first line of `output_response`,
    /// after `rejected: `) and the run's target (`input_prompt`, after
    /// `swarm run on `).
    pub(super) fn complete_from_text(&mut self, input_prompt: &str, output_response: &str) {
        match self {
            Kind::RunStart(start) if start.target.is_none() => {
                let target = input_prompt.strip_prefix("swarm run on ");
                start.target = Some(target.unwrap_or(input_prompt).to_string());
            }
            Kind::Review(Review {
                decision: Decision::Rejected { reason, .. },
                ..
            }) if reason.is_empty() => {
                let first = output_response.lines().next().unwrap_or_default();
                *reason = first
                    .strip_prefix("rejected: ")
                    .unwrap_or(first)
                    .to_string();
            }
            _ => {}
        }
    }
}

/// The run's start.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunStart {
    /// The folder the run works on, as given.
    pub target: Option<String>,
    pub max_iterations: u32,
    pub dry_run: bool,
}

impl RunStart {
    /// `details.kind` of a run's start, which a reader looks for before it
    /// reads entries in full.
    pub const KIND: &'static str = "run_start";
}

/// The run's end.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunEnd {
    /// The process exit code.
    pub exit_code: u8,
    /// The run's wall time, to the millisecond.
    pub seconds: Option<f64>,
    /// The wall time by stage (`audit`, `plan`, `rounds`, …).
    pub stage_seconds: BTreeMap<String, f64>,
}

/// What the report reads of the run's summary (the `output_response` of
/// its end): the orchestrator writes the whole summary, this is the part
/// with a meaning of its own in the log.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct RunSummary {
    /// `success`, `gave_up`, `model_failure`, …
    pub status: String,
    pub stop_reason: String,
    pub delivery: DeliveryState,
    pub tests_before: Option<TestTally>,
    pub tests_after: Option<TestTally>,
    #[serde(rename = "pylint_before")]
    pub lint_before: Option<f64>,
    #[serde(rename = "pylint_after")]
    pub lint_after: Option<f64>,
    pub tokens: TokenSpend,
}

/// What happened to the user's branch (`updated`, `left`, …).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct DeliveryState {
    pub state: String,
}

/// Tests passed out of total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct TestTally {
    pub passed: u64,
    pub total: u64,
}

/// What the run spent on the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TokenSpend {
    pub input: u64,
    pub output: u64,
    /// USD, when the model's price is known.
    pub cost_usd: Option<f64>,
    pub calls: u64,
}

/// What confines the code under test in this run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SafetyCheck {
    /// Each layer of the sandbox and swarm's own hardening, as the
    /// orchestrator records them.
    pub safety: Value,
}

/// What a plan request shows: the files in full and why, how many only as
/// a line or a count, and its size against the allowance.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanSelection {
    pub batch: u32,
    /// The files shown with their source (path, why, partial), as the
    /// planner records them.
    pub in_full: Value,
    /// Files shown as one line (at most 200 named).
    pub summarised: Vec<String>,
    pub summarised_count: usize,
    /// Folder → files only counted there.
    pub counted: BTreeMap<String, usize>,
    pub counted_count: usize,
    pub prompt_tokens: u64,
    pub allowance_tokens: u64,
}

/// The plan of a one-module project in repair mode, built from the
/// failing tests and lint instead of asked of the model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanFromEvidence {
    /// The module (target-relative).
    pub file: String,
    /// The failing tests that point at it.
    pub failing: Vec<String>,
    /// The linter's messages in it.
    pub lint_messages: usize,
}

/// One model call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelCall {
    /// The request's hash, which replay matches first.
    pub request_hash: Option<String>,
    /// The file it was about (the Fixer's, the Tester's).
    pub file: Option<String>,
    /// The round.
    pub iteration: Option<u32>,
    pub elapsed_ms: u64,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// The API gave no usage and the counts are estimates.
    pub tokens_estimated: Option<bool>,
    /// Why the model stopped, as the model layer records it.
    pub finish: Option<Value>,
    /// Why swarm stopped reading the reply before it ended ("the reply
    /// repeated itself; stopped after 412 tokens").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut: Option<String>,
    /// Why the call got no reply (status `FAILURE`).
    pub error: Option<String>,
    /// The parts of the file a Fixer prompt showed (`start`, `end`, `why`),
    /// when it showed excerpts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excerpts: Option<Value>,
    /// Which form the Fixer's reply was: `diff`, `whole file` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_form: Option<String>,
    /// Token counts as other tools nest them; swarm writes
    /// `input_tokens` and `output_tokens`. Read only.
    #[serde(skip_serializing)]
    pub usage: Option<NestedUsage>,
}

/// `details.usage` of another tool's model call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct NestedUsage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub estimated: Option<bool>,
}

/// The Reviewer's decision on one proposal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Review {
    #[serde(default)]
    pub file: String,
    #[serde(default)]
    pub iteration: u32,
    #[serde(flatten)]
    pub decision: Decision,
    /// Files whose diff was written against an earlier version and merged
    /// onto the current text, as the Reviewer records them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebased: Option<Value>,
    /// The proposal was too big and is tried in this many steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_into: Option<usize>,
    /// Which step of a split proposal this is (`2 of 5`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The part of an oversized proposal tried alone: the hunks kept, each
    /// with the place of the evidence it touches (`hunk`, `why`), as the
    /// orchestrator records them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<Value>,
    /// The hunks that part leaves out, each with why (`hunk`, `why`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<Value>,
}

/// Accepted, or rejected by a rule for a reason. On disk: `verdict`
/// (`accepted` or `rejected`), `rule` (null when accepted) and `reason`
/// (only for a rejection; earlier versions wrote it only in the text).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "DecisionOnDisk", from = "DecisionOnDisk")]
pub enum Decision {
    Accepted,
    Rejected {
        /// The rule's stable name (`test_file`, `too_many_bytes`, …);
        /// `None` in logs older than the rules' names.
        rule: Option<String>,
        /// What the rule says about the proposal.
        reason: String,
    },
}

#[derive(Serialize, Deserialize)]
struct DecisionOnDisk {
    #[serde(default)]
    verdict: String,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

impl From<Decision> for DecisionOnDisk {
    fn from(decision: Decision) -> Self {
        match decision {
            Decision::Accepted => Self {
                verdict: "accepted".into(),
                rule: None,
                reason: None,
            },
            Decision::Rejected { rule, reason } => Self {
                verdict: "rejected".into(),
                rule,
                reason: Some(reason),
            },
        }
    }
}

impl From<DecisionOnDisk> for Decision {
    /// Anything but `rejected` was let through.
    fn from(disk: DecisionOnDisk) -> Self {
        match disk.verdict.as_str() {
            "rejected" => Decision::Rejected {
                rule: disk.rule,
                reason: disk.reason.unwrap_or_default(),
            },
            _ => Decision::Accepted,
        }
    }
}

/// The final check of the best state with the base commit's tests.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FinalCheck {
    pub passed: bool,
    /// Harness files put back to the base version for the check.
    pub restored: Vec<String>,
}

/// The Executor's commit of an attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Commit {
    #[serde(default)]
    pub file: String,
    pub attempt: u32,
    #[serde(default)]
    pub commit: String,
    /// The Judge's verdict on the attempt.
    pub verdict: Verdict,
    /// The change as a unified diff (capped).
    #[serde(default)]
    pub diff: String,
    /// Where the attempt's time went.
    #[serde(default)]
    pub seconds: AttemptSeconds,
}

/// The steps of one attempt, in seconds to the millisecond.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AttemptSeconds {
    /// The Reviewer's rules.
    pub review: f64,
    /// The change written into the worktree.
    pub apply: f64,
    /// The Judge's measurement.
    pub judge: f64,
    /// The attempt's commit and the run branch moved.
    pub commit: f64,
    /// The worktree put back at the best state.
    pub worktree: f64,
}

/// The tasks an instruction (`--task`) was planned as, and why the plan
/// fell back to one task when it did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskPlanRecord {
    pub instruction: String,
    pub tasks: Vec<crate::pipeline::Task>,
    pub fallback: Option<String>,
    /// What validation left out of the model's plan.
    pub notes: Vec<String>,
}

/// Where one task got.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskRecord {
    /// 1-based, of `total`.
    pub number: usize,
    pub total: usize,
    pub title: String,
    /// Behaviour-preserving or an intended change (`kind` names the entry).
    pub task_kind: crate::pipeline::TaskKind,
    /// `done`, `skipped`, `not_reached`.
    pub status: String,
    /// Why it was skipped.
    pub reason: Option<String>,
    /// Its accepted commits.
    pub commits: Vec<String>,
    /// The test files it changed (only with `--allow-test-edits`).
    pub tests_changed: Vec<String>,
}
