//! The pipeline's vocabulary: the values the stages hand on and the log
//! records, below both `stage/` and `log/`.
//!
//! - what the Fixer proposes, or why a reply is unusable: [`proposal`];
//! - what the Reviewer accepts, ready for the Executor: [`change`];
//! - what the tools measured (test cases, pylint messages, import checks):
//!   [`measure`]; a measured state of the code and the runs behind it:
//!   [`state`];
//! - what the Judge calls green and better: [`bar`] — the one place that
//!   answers "is this state green, and better than the best?" —, and its
//!   [`Verdict`]: [`verdict`];
//! - paths relative to the repository and to the target: [`path`];
//! - refactoring on request: the instruction, its tasks and their status:
//!   [`task`].
//!
//! Nothing here runs a tool, calls a model, touches git or prints: these
//! are values and the rules that compare them.

pub mod bar;
pub mod change;
pub mod measure;
pub mod path;
pub mod proposal;
pub mod state;
pub mod task;
pub mod verdict;

pub use bar::{Bar, Judging};
pub use change::{Change, Rebased};
pub use measure::{
    ImportCheck, LintBatch, LintKind, LintMessage, LintReport, SkippedLint, TestCase, TestOutcome,
    TestRun,
};
pub use path::{RepoPath, TargetDir, TargetPath};
pub use proposal::{clip, Excerpt, Proposal, ReplyProblem, Unusable};
pub use state::{CheckState, EarlyStop, Measurement, Snapshot, TestState};
pub use task::{Instruction, Task, TaskKind, TaskPlan, TaskReply, TaskStatus};
pub use verdict::{BehaviourOutcome, Verdict};
