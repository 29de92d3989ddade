//! The experiment log (`logs/experiment_data.json`) and the run's events.
//!
//! The log is one JSON array, appended to in place under a file lock. Its
//! format is types: `entry` is the envelope every entry shares, `kinds` and
//! `tool_runs` what each kind adds, written by the orchestrator and read by
//! the report and replay through the same types. `experiment` gives an
//! entry its id and time and appends it through `store`, which finds where
//! the next entry goes (`tail`, `scan`) under the lock (`lock`) and mends a
//! log a crash cut short (`repair`). `error` says what went wrong, as facts.

mod entry;
mod error;
pub mod events;
pub mod experiment;
mod kinds;
mod lock;
mod repair;
mod scan;
mod store;
mod tail;
mod tool_runs;

pub use entry::{Action, Agent, Details, Entry, Glance, Status};
pub use error::LogError;
pub use events::{Event, EventSink, Step};
pub use experiment::ExperimentLog;
pub use kinds::{
    AttemptSeconds, Commit, Decision, DeliveryState, FinalCheck, Kind, ModelCall, NestedUsage,
    PlanFromEvidence, PlanSelection, Review, RunEnd, RunStart, RunSummary, SafetyCheck,
    TaskPlanRecord, TaskRecord, TestTally, TokenSpend,
};
pub use repair::Repair;
pub use tool_runs::{
    BehaviourCheckRun, HeldOutRun, ImportCheckRun, LintRun, LiteralAnswersRun, SyntaxRepairRun,
    TesterRun, TestsRun, ToolRun,
};
