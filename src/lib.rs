//! swarm: a git-native refactoring bot for Python repositories.
//!
//! The library runs the pipeline (Auditor → Fixer → Reviewer → Executor →
//! Judge) and returns values and events; only `cli` writes to the terminal.

pub mod analysis;
mod atomic;
pub mod cancel;
mod cli;
pub mod config;
pub mod error;
pub mod git;
pub mod harden;
pub mod llm;
mod lockfile;
pub mod log;
mod orchestrator;
pub mod patch;
pub mod pipeline;
pub mod report;
mod stage;
pub mod tools;

pub use cli::main;
