//! Helpers shared by the integration tests.

pub mod chromium;
pub mod fake_pylint;
pub mod fixture;
pub mod github;
pub mod llm_server;
pub mod llm_stream;
pub mod node;
pub mod procs;
pub mod prose;
pub mod python;
pub mod repo;
pub mod scale;

pub use python::*;
