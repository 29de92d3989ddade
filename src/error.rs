//! The one top-level error: a kind that maps to the exit code, and a
//! one-line message that says what to do.

use crate::git::GitError;
use crate::llm::LlmError;
use crate::tools::ToolError;

/// How a run ended, as the process exit code (see ARCHITECTURE.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitKind {
    Success,
    InvalidInput,
    Llm,
    Git,
    GaveUp,
    Internal,
    Interrupted,
}

impl ExitKind {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitKind::Success => 0,
            ExitKind::InvalidInput => 1,
            ExitKind::Llm => 2,
            ExitKind::Git => 3,
            ExitKind::GaveUp => 4,
            ExitKind::Internal => 5,
            ExitKind::Interrupted => 130,
        }
    }
}

/// An error that ends the run.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct SwarmError {
    pub kind: ExitKind,
    pub message: String,
}

impl SwarmError {
    /// Bad flags, a missing folder, no Python files…
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            kind: ExitKind::InvalidInput,
            message: message.into(),
        }
    }

    /// A model call that retries could not save.
    pub fn llm(message: impl Into<String>) -> Self {
        Self {
            kind: ExitKind::Llm,
            message: message.into(),
        }
    }

    /// A git or orchestration failure.
    pub fn git(message: impl Into<String>) -> Self {
        Self {
            kind: ExitKind::Git,
            message: message.into(),
        }
    }

    /// Something that should not happen.
    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            kind: ExitKind::Internal,
            message: message.into(),
        }
    }

    /// Ctrl-C.
    pub fn interrupted() -> Self {
        Self {
            kind: ExitKind::Interrupted,
            message: "interrupted: the worktree was removed and your branch is untouched".into(),
        }
    }
}

impl From<GitError> for SwarmError {
    fn from(err: GitError) -> Self {
        match err {
            GitError::Bare { .. }
            | GitError::NoCommits { .. }
            | GitError::RunRefsBlocked { .. }
            | GitError::TargetInGitDir { .. }
            | GitError::TargetOutsideWorkTree { .. }
            | GitError::Unreadable { .. }
            | GitError::WorktreesInsideRepo { .. }
            | GitError::SubmoduleCommitMissing { .. } => Self::invalid(err.to_string()),
            GitError::Interrupted => Self {
                kind: ExitKind::Interrupted,
                message: "interrupted while waiting for another run on this repository; nothing was changed".into(),
            },
            // A busy repository is an orchestration condition, not bad
            // input: the same command works once the other run is over.
            other => Self::git(other.to_string()),
        }
    }
}

impl From<LlmError> for SwarmError {
    fn from(err: LlmError) -> Self {
        match err {
            LlmError::Config { .. } => Self::invalid(err.to_string()),
            other => Self::llm(other.to_string()),
        }
    }
}

impl From<ToolError> for SwarmError {
    fn from(err: ToolError) -> Self {
        match err {
            ToolError::Missing(_) => Self::invalid(err.to_string()),
            ToolError::Cancelled => Self::interrupted(),
            other => Self::internal(other.to_string()),
        }
    }
}
