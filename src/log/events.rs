//! What a run reports while it works. Stages never print; the orchestrator
//! emits these and the CLI's printer renders them to stderr.

use std::path::PathBuf;

use crate::stage::judge::Verdict;

/// One step worth telling the user about.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A fact about the run's setup (repository initialised, dirty tree, tool env…).
    Notice { message: String },
    /// The run started in its worktree.
    Started {
        run_id: String,
        target: PathBuf,
        worktree: PathBuf,
        model: String,
    },
    /// The Auditor's baseline.
    Audited {
        files: usize,
        tests_passed: usize,
        tests_total: usize,
        no_tests: bool,
        pylint: Option<f64>,
    },
    /// The plan is written.
    Planned { files: Vec<String> },
    /// A Fixer→Judge round begins.
    Iteration { number: u32, files: Vec<String> },
    /// The Reviewer turned a proposal down; `rule` is the stable name of
    /// the rule that did (`test_file`, `too_many_bytes`, …).
    Rejected {
        file: String,
        reason: String,
        rule: &'static str,
    },
    /// An attempt was committed and judged.
    Judged {
        attempt: u32,
        file: String,
        verdict: Verdict,
        tests: String,
        pylint: Option<f64>,
        commit: String,
    },
    /// The model could not give a usable answer for a file.
    NoProposal { file: String, reason: String },
    /// The model found nothing to change in a file.
    Declined { file: String },
    /// A model reply is streaming in (at most once a second; once more with
    /// `done` when the stream ended). `call` numbers the run's model calls
    /// from 1; `tokens` are the output tokens so far (estimated when the
    /// stream does not count them).
    ModelProgress {
        call: u64,
        model: String,
        tokens: u64,
        tokens_per_second: f64,
        done: bool,
    },
    /// A model request is sent again: `attempt` is the number of the
    /// request about to go out, after `wait_ms`, because of `reason`.
    ModelRetry {
        call: u64,
        model: String,
        attempt: u32,
        reason: String,
        wait_ms: u64,
    },
}

/// Receives events.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: Event);
}

/// Drops every event (library use, tests).
pub struct Silent;

impl EventSink for Silent {
    fn emit(&self, _event: Event) {}
}
