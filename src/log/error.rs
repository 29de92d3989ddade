//! What can go wrong with the experiment log file, as facts: which file,
//! what the system said, how long the lock was waited for.
//!
//! No advice here: what a user can do about it (`--log-file`, another
//! process) is added where the error reaches them (`crate::error`).

use std::path::PathBuf;

/// Errors reading or writing the log.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("cannot write the experiment log {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the experiment log {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the experiment log {path} stayed locked by another process for {secs} s")]
    Locked { path: PathBuf, secs: u64 },
}
