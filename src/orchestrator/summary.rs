//! The run's result: what the summary line, `--json` and the exit code say.

use crate::error::ExitKind;

/// Why the loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Every test passes (or, without tests, every check) and no planned file is left.
    Green,
    /// `--max-iterations` rounds ran.
    IterationLimit,
    /// Three rounds in a row without an accepted attempt.
    NoProgress,
    /// No file was left to ask about: the model found nothing to change in
    /// every file the failing tests and lint point at.
    NothingLeft,
    /// The model could not be reached after its retries.
    ModelFailure,
    /// `--max-tokens-total` or `--max-cost` was reached.
    Budget,
    /// Ctrl-C.
    Interrupted,
    /// A task of the instruction (`--task`) failed its attempts and was
    /// skipped, with the tasks that depend on it.
    TaskSkipped,
    /// A task's intended behaviour change breaks tests that expect the old
    /// behaviour, and `--allow-test-edits` was not given.
    TestConflict,
    /// Every task of the instruction (`--task`) ended without changing
    /// anything: nothing was done, whatever the model said.
    NothingChanged,
}

impl StopReason {
    /// Why the run stopped, in a few words.
    pub fn describe(self) -> &'static str {
        match self {
            StopReason::Green => "done",
            StopReason::IterationLimit => "iteration limit reached",
            StopReason::NoProgress => "no progress in three rounds",
            StopReason::NothingLeft => {
                "the model found nothing to change in the files the tests and lint point at"
            }
            StopReason::ModelFailure => "no usable answer from the model; see the notes above",
            StopReason::Budget => "token or cost budget reached",
            StopReason::Interrupted => "interrupted",
            StopReason::TaskSkipped => "a task was skipped; see the tasks below",
            StopReason::NothingChanged => {
                "no task changed anything: nothing the instruction asks for was done"
            }
            StopReason::TestConflict => {
                "a task's behaviour change meets tests that expect the old behaviour (--allow-test-edits)"
            }
        }
    }
}

/// The tasks of an instruction (`--task`) and where each got.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TasksReport {
    pub instruction: String,
    /// Why the model's plan was not used, when it fell back to one task.
    pub fallback: Option<String>,
    /// What validation left out of the plan.
    pub notes: Vec<String>,
    pub tasks: Vec<TaskReport>,
}

/// One task and its status (done with its commits and the test files it
/// changed; skipped and why; not reached).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TaskReport {
    #[serde(flatten)]
    pub task: crate::pipeline::Task,
    #[serde(flatten)]
    pub status: crate::pipeline::TaskStatus,
    /// Where the task's modules' old dotted paths are still named in
    /// strings and configuration (`path:line: text`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mentions: Vec<String>,
}

/// Tests passed out of total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TestCount {
    pub passed: usize,
    pub total: usize,
}

/// Tokens and cost of every model call in the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Spend {
    pub input: u64,
    pub output: u64,
    pub total: u64,
    /// USD, when the model's price is known.
    pub cost_usd: Option<f64>,
    pub calls: u32,
}

/// How much of the target the run looked at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Coverage {
    /// Python files of the target that are not tests.
    pub source_files: usize,
    /// Shown in full (or in excerpts) to a plan or to the Fixer.
    pub in_depth: usize,
    /// Shown to a plan as one line only.
    pub summarised: usize,
    /// Only counted per folder, or never shown.
    pub not_reached: usize,
    /// Plan requests sent (more than one when the repository needed batches).
    pub plans: u32,
}

/// A hunk left out of an accepted attempt that tried only part of an
/// oversized proposal (see `reviewer::subset`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LeftOutHunk {
    /// The file the proposal was for (target-relative).
    pub file: String,
    /// The accepted attempt it was left out of.
    pub attempt: u32,
    /// `hunk 2 of 2 (bitcount.py after line 6: 0 removed, 60 added)`.
    pub hunk: String,
    pub why: String,
}

/// The forms of the Fixer's replies, and the ones that could not be used.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Replies {
    /// Replies holding a diff.
    pub diff: u32,
    /// Replies holding a whole file (turned into a diff by swarm).
    pub whole_file: u32,
    /// Replies swarm could not use — no change it could read, or a diff
    /// that did not apply — each `file: why` in one line.
    pub unusable: Vec<String>,
    /// What would help ([`Replies::advice`]), as the summary says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_help: Option<String>,
}

impl Replies {
    /// Counts a reply for `file` as not used, and why (one line).
    pub fn not_used(&mut self, file: &str, why: &str) {
        self.unusable.push(format!("{file}: {why}"));
    }

    /// What would help when most replies could not be used.
    pub fn advice(&self) -> Option<&'static str> {
        let total = (self.diff + self.whole_file) as usize;
        let many = !self.unusable.is_empty() && self.unusable.len() * 2 >= total.max(1);
        many.then_some(
            "most of the model's replies could not be used: a larger model, or whole-file replies \
             (swarm asks for them for files of up to 60 lines, and after a diff failed), would help",
        )
    }
}

/// What happened to the user's branch.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Delivery {
    /// Fast-forwarded (and checked); `undo` takes it back
    /// (`git reset --keep refs/swarm/<run>/pre-ff`).
    Updated {
        branch: String,
        commit: String,
        undo: String,
    },
    /// The fast-forward was attempted but the checkout is not (or cannot be
    /// shown to be) the complete result; `command` is the next step. The
    /// run exits 3: never "success".
    Failed { reason: String, command: String },
    /// The best state is the starting commit.
    Unchanged,
    /// Left on the run branch; `command` takes it.
    Left { reason: String, command: String },
    /// Not accepted: nothing to take (improvements, if any, stay on the run branch).
    NotAccepted,
}

/// The run's summary.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Summary {
    pub status: &'static str,
    pub exit_code: u8,
    #[serde(skip)]
    pub exit: ExitKind,
    pub run_id: String,
    pub branch: String,
    pub stop_reason: StopReason,
    pub verified_by_tests: bool,
    /// Per file changed on the delivered state (target-relative), what
    /// verified its change.
    pub verification:
        std::collections::BTreeMap<String, crate::stage::judge::behaviour::Verification>,
    /// Per module the Tester worked on (target-relative): the tests kept,
    /// the ones discarded and why.
    pub generated_tests: std::collections::BTreeMap<String, crate::stage::tester::TestsReport>,
    pub tests_before: TestCount,
    pub tests_after: TestCount,
    #[serde(rename = "pylint_before")]
    pub lint_before: Option<f64>,
    #[serde(rename = "pylint_after")]
    pub lint_after: Option<f64>,
    /// The linters the scores come from ("pylint", "eslint", "pylint and
    /// eslint").
    pub linter: String,
    pub iterations: u32,
    pub attempts: u32,
    pub accepted: u32,
    pub commits: Vec<String>,
    pub tokens: Spend,
    /// How much of the target was looked at in depth, summarised, or not reached.
    pub coverage: Coverage,
    /// Refactoring on request (`--task`): every task with its status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TasksReport>,
    pub delivery: Delivery,
    pub inspect: String,
    pub log_file: String,
    pub dry_run: bool,
    /// The best state measured once more with the base commit's test files
    /// and configuration; `None` when nothing was to be delivered.
    pub final_check: Option<super::FinalCheck>,
    /// What confined the code under test, and what did not.
    pub safety: Safety,
    /// How many secrets of the code were withheld from the model and the
    /// log, and where (or that `--allow-secrets` sent them as they are).
    pub secrets: crate::secrets::Report,
    /// Attempts that made the visible tests pass but failed the held-out
    /// tests of the same behaviour: which visible tests each was fitted to.
    /// None of them was delivered.
    pub overfitted: Vec<crate::stage::tester::held_out::Overfit>,
    /// Attempts that made the failing tests pass by answering their inputs
    /// with literals: not verified, none of them delivered.
    pub hard_coded: Vec<crate::stage::judge::answers::HardCoded>,
    /// Modules that did not compile, for which no reference could be made,
    /// changed on the delivered state: checked only in that they compile
    /// and import (`status` is then `success_unverified`, not `success`).
    pub no_reference: Vec<String>,
    /// The hunks left out of accepted attempts that tried only the part of
    /// an oversized proposal the evidence points at.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOutHunk>,
    /// The forms of the Fixer's replies and the ones not used.
    pub replies: Replies,
    /// Files changed on the delivered state to fix failing tests that no
    /// held-out test guarded (the model wrote none that held): only the
    /// visible tests checked them (target-relative).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unguarded: Vec<String>,
    /// The run's wall time and the Judge's share of it.
    pub time: RunTime,
}

/// Where a run's time went, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct RunTime {
    /// The whole run, up to its summary.
    pub seconds: f64,
    /// The Judge's measurements: the baseline, every attempt's, the
    /// Tester's validation and the final check (pytest and pylint with
    /// swarm's work around them).
    pub judge_seconds: f64,
}

impl RunTime {
    /// The Judge's share, in percent (0 for a run that took no time).
    pub fn judge_percent(&self) -> f64 {
        if self.seconds > 0.0 {
            (self.judge_seconds / self.seconds * 100.0).min(100.0)
        } else {
            0.0
        }
    }
}

/// What confined the code under test during the run, and what did not.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Safety {
    /// Each layer of the sandbox every tool process ran in.
    pub sandbox: crate::tools::SandboxReport,
    /// swarm itself was non-dumpable (its memory and environment unreadable
    /// through `/proc` without `CAP_SYS_PTRACE`).
    pub non_dumpable: bool,
    /// swarm's initial environment block (what `/proc/<pid>/environ`
    /// shows) was cleared.
    pub environ_cleared: bool,
    /// One line per protection that did not apply; empty when all did.
    pub shortfalls: Vec<String>,
    /// The sandboxes of other languages' tools (node's runner, linter and
    /// type checker), each with the same layers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runtimes: Vec<RuntimeSafety>,
}

/// The sandbox one language's tools ran in.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RuntimeSafety {
    /// Its tools (`vitest, eslint`).
    pub tools: String,
    pub sandbox: crate::tools::SandboxReport,
}

impl Safety {
    /// The sandbox's report plus swarm's own hardening (`None` when it did
    /// not run, as in library use).
    pub fn new(
        sandbox: &crate::tools::SandboxReport,
        hardening: Option<&crate::harden::Hardening>,
    ) -> Self {
        let mut shortfalls = sandbox.shortfalls();
        match hardening {
            Some(h) => shortfalls.extend(h.notes.iter().cloned()),
            None => shortfalls.push(
                "swarm's own process was not hardened (the library was used without the CLI)"
                    .to_string(),
            ),
        }
        Self {
            sandbox: sandbox.clone(),
            non_dumpable: hardening.is_some_and(|h| h.non_dumpable),
            environ_cleared: hardening.is_some_and(|h| h.environ_cleared),
            shortfalls,
            runtimes: Vec::new(),
        }
    }

    /// Adds the sandbox of other tools (`tools`), with what it lacks.
    pub fn add_runtime(&mut self, tools: String, sandbox: crate::tools::SandboxReport) {
        self.shortfalls.extend(
            sandbox
                .shortfalls()
                .into_iter()
                .map(|s| format!("{tools}: {s}")),
        );
        self.runtimes.push(RuntimeSafety { tools, sandbox });
    }
}

/// What the final check found.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FinalCheck {
    /// Whether the best state is green with the base commit's harness.
    pub passed: bool,
    /// `6/6 passed`, as measured with the base harness.
    pub tests: String,
    /// Repo-relative files put back to their base version for the check
    /// (a file the run created is removed for it).
    pub restored: Vec<String>,
}
