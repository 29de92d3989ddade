//! What a run reports while it works. Stages never print; the orchestrator
//! emits these and the CLI's printer renders them to stderr. A long step
//! (a tool run, a model request, the delivery) is a [`Step`]: it says when
//! it starts and, when dropped, when it ended and how long it took, so the
//! user is never left without a word while something runs.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::pipeline::Verdict;

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
        /// The languages of the files ("Python", "JavaScript/TypeScript").
        #[serde(default)]
        language: String,
        /// Their linters ("pylint", "pylint and eslint").
        #[serde(default)]
        linter: String,
        tests_passed: usize,
        tests_total: usize,
        no_tests: bool,
        #[serde(rename = "pylint")]
        lint_score: Option<f64>,
    },
    /// The plan is written.
    Planned { files: Vec<String> },
    /// A Fixer→Judge round begins.
    Iteration { number: u32, files: Vec<String> },
    /// A task of the instruction (`--task`) was planned, started or
    /// settled: `status` is `planned`, `started`, `done`, `skipped` or
    /// `not_reached`; `detail` says more (its files, why it was skipped).
    Task {
        number: usize,
        total: usize,
        title: String,
        status: String,
        detail: String,
    },
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
        #[serde(rename = "pylint")]
        lint_score: Option<f64>,
        /// The linters the score comes from ("pylint").
        #[serde(default)]
        linter: String,
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
    /// Reading a model's reply stopped because it repeated itself (the
    /// same span again and again, or no progress), after `tokens` output
    /// tokens (estimated unless the API counted them).
    ModelRepeated {
        call: u64,
        model: String,
        tokens: u64,
    },
    /// A model request is sent again: `attempt` is the number of the
    /// request about to go out, after `wait_ms`, because of `reason`.
    ModelRetry {
        call: u64,
        model: String,
        attempt: u32,
        /// The HTTP requests the call may make in all (`--retries`).
        of: u32,
        reason: String,
        wait_ms: u64,
    },
    /// A long step began: `what` says it for people ("judging attempt 3
    /// (stats.py): pytest"); `step` numbers it for its [`Event::StepDone`].
    StepStarted { step: u64, what: String },
    /// The step `step` ended after `elapsed_ms`.
    StepDone {
        step: u64,
        what: String,
        elapsed_ms: u64,
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

/// Keeps every event, in order (tests).
#[cfg(test)]
#[derive(Default)]
pub(crate) struct Collect(pub(crate) std::sync::Mutex<Vec<Event>>);

#[cfg(test)]
impl Collect {
    /// The events so far.
    pub(crate) fn events(&self) -> Vec<Event> {
        self.0.lock().expect("not poisoned").clone()
    }

    /// The messages of the notices so far.
    pub(crate) fn notices(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Notice { message } => Some(message),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
impl EventSink for Collect {
    fn emit(&self, event: Event) {
        self.0.lock().expect("not poisoned").push(event);
    }
}

/// Numbers the steps of the process, from 1.
static NEXT_STEP: AtomicU64 = AtomicU64::new(1);

/// A long step under way: emits [`Event::StepStarted`] when made and
/// [`Event::StepDone`] with its time when dropped (also when the step ends
/// early by an error or an interrupt).
pub struct Step<'a> {
    events: &'a dyn EventSink,
    id: u64,
    what: String,
    started: Instant,
}

impl<'a> Step<'a> {
    /// Starts the step `what` (said for people).
    pub fn start(events: &'a dyn EventSink, what: impl Into<String>) -> Self {
        let id = NEXT_STEP.fetch_add(1, Ordering::Relaxed);
        let what = what.into();
        events.emit(Event::StepStarted {
            step: id,
            what: what.clone(),
        });
        Self {
            events,
            id,
            what,
            started: Instant::now(),
        }
    }
}

impl Drop for Step<'_> {
    fn drop(&mut self) {
        self.events.emit(Event::StepDone {
            step: self.id,
            what: std::mem::take(&mut self.what),
            elapsed_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_says_when_it_starts_and_when_it_ends_even_on_an_early_return() {
        let sink = Collect::default();
        let run = |fail: bool| -> Result<(), ()> {
            let _step = Step::start(&sink, "audit: pytest");
            if fail {
                return Err(());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            Ok(())
        };
        assert!(run(false).is_ok());
        assert!(run(true).is_err());
        let events = sink.0.into_inner().expect("not poisoned");
        assert_eq!(events.len(), 4, "{events:?}");
        let (
            Event::StepStarted { step: a, what },
            Event::StepDone {
                step: b,
                elapsed_ms,
                ..
            },
        ) = (&events[0], &events[1])
        else {
            panic!("{events:?}");
        };
        assert_eq!((a, what.as_str()), (b, "audit: pytest"));
        assert!(*elapsed_ms >= 20, "{elapsed_ms}");
        assert!(matches!(&events[3], Event::StepDone { what, .. } if what == "audit: pytest"));
    }
}
