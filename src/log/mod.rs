//! The experiment log (`logs/experiment_data.json`) and the run's events.
//!
//! The log is one JSON array, appended to in place under a file lock:
//! `experiment` renders entries, `store` appends them, `lock` takes the lock,
//! `tail` and `scan` find where the next entry goes, `repair` mends a log a
//! crash cut short. `error` says what went wrong, as facts.

mod error;
pub mod events;
pub mod experiment;
mod lock;
mod repair;
mod scan;
mod store;
mod tail;

pub use error::LogError;
pub use events::{Event, EventSink, Step};
pub use experiment::{Action, Agent, Entry, ExperimentLog, Status};
pub use repair::Repair;
