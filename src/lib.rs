//! swarm: a git-native refactoring bot for Python and JavaScript/TypeScript
//! repositories.
//!
//! The library runs the pipeline (Auditor → Fixer → Reviewer → Executor →
//! Judge) and returns values and events; only `cli` writes to the terminal.

mod atomic;
pub mod cancel;
mod cli;
pub mod config;
pub mod error;
pub mod git;
pub mod harden;
pub mod lang;
pub mod llm;
mod lockfile;
pub mod log;
mod orchestrator;
pub mod pipeline;

/// Static analysis of Python source (the `swarm-analysis` crate).
pub use swarm_analysis as analysis;
/// The patch engine (the `swarm-patch` crate).
pub use swarm_patch as patch;
pub mod report;
pub mod secrets;
mod stage;
pub mod tools;

pub use cli::main;
