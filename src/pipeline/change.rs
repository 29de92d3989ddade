//! What the Reviewer hands on: an accepted [`Change`] (the writes, the
//! files, its size and diff), ready for the Executor and the Judge, and the
//! files whose diff was merged onto a newer text ([`Rebased`]).

use super::path::TargetPath;
use crate::git::FileWrite;

/// An accepted change, ready for the Executor.
#[derive(Clone, Debug)]
pub struct Change {
    /// Repo-relative writes.
    pub writes: Vec<FileWrite>,
    /// The files it touches.
    pub files: Vec<TargetPath>,
    pub changed_lines: usize,
    /// The change as a unified diff (for logs and later prompts).
    pub diff: String,
    /// Identifies the resulting content, to refuse repeats.
    pub hash: String,
    /// Files whose diff was written against an earlier version and merged
    /// onto the current text.
    pub rebased: Vec<Rebased>,
    /// Hunks of the reply that did not apply and were left out, each with
    /// why (the rest of the reply was independent of them and applied).
    pub unplaced: Vec<String>,
}

/// A file whose diff was rebased onto its current text.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Rebased {
    pub file: TargetPath,
    /// The round whose prompt showed the version the diff was written against.
    pub shown_in_round: u32,
}

impl std::fmt::Display for Rebased {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (written against the version shown in round {}, merged onto the current text)",
            self.file, self.shown_in_round
        )
    }
}
