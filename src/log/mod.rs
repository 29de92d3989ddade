//! The experiment log (`logs/experiment_data.json`) and the run's events.

pub mod events;
pub mod experiment;

pub use events::{Event, EventSink};
pub use experiment::{Action, Agent, Entry, ExperimentLog, Status};
