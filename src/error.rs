//! The one top-level error: a kind that maps to the exit code, a one-line
//! message, the hints that say what to do, and the error it came from.
//!
//! Like jj's `CommandError`, it keeps the underlying error as its `source`
//! (for `-v` and for callers that need the type) and the hints as a list
//! (`--json` carries them). What a user reads is always one line: the
//! message, then each hint after `; `.

use crate::git::GitError;
use crate::llm::LlmError;
use crate::log::LogError;
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

/// The underlying error a [`SwarmError`] came from.
type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error that ends the run.
#[derive(Debug)]
pub struct SwarmError {
    pub kind: ExitKind,
    /// What went wrong, one line.
    pub message: String,
    /// What to do about it, each one line.
    pub hints: Vec<String>,
    /// Lines shown below the message, as they are (a TOML error's excerpt
    /// with a caret under the column); never part of the one-line text.
    pub detail: Option<String>,
    source: Option<Cause>,
}

impl std::fmt::Display for SwarmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        for hint in &self.hints {
            write!(f, "; {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SwarmError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl SwarmError {
    fn new(kind: ExitKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            hints: Vec::new(),
            detail: None,
            source: None,
        }
    }

    /// Bad flags, a missing folder, no Python files…
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ExitKind::InvalidInput, message)
    }

    /// A model call that retries could not save.
    pub fn llm(message: impl Into<String>) -> Self {
        Self::new(ExitKind::Llm, message)
    }

    /// A git or orchestration failure.
    pub fn git(message: impl Into<String>) -> Self {
        Self::new(ExitKind::Git, message)
    }

    /// Something that should not happen.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ExitKind::Internal, message)
    }

    /// Ctrl-C.
    pub fn interrupted() -> Self {
        Self::new(
            ExitKind::Interrupted,
            "interrupted: the worktree was removed and your branch is untouched",
        )
    }

    /// Adds what to do about it.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    /// Adds lines to show below the one-line message (see `detail`).
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Names the error this one came from: kept as the source, and its text
    /// ends the message (`cannot read x.toml: permission denied`).
    pub fn caused_by(mut self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.message = format!("{}: {cause}", self.message);
        self.source = Some(Box::new(cause));
        self
    }

    /// An error whose own text is the message, kept as the source.
    fn wrapping(kind: ExitKind, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        let mut err = Self::new(kind, cause.to_string());
        err.source = Some(Box::new(cause));
        err
    }

    /// The message and the chain of errors under it, for `-v`.
    pub fn chain(&self) -> Vec<String> {
        let mut lines = vec![self.to_string()];
        let mut next = std::error::Error::source(self);
        while let Some(cause) = next {
            lines.push(cause.to_string());
            next = cause.source();
        }
        lines
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
            | GitError::SubmoduleCommitMissing { .. } => {
                Self::wrapping(ExitKind::InvalidInput, err)
            }
            GitError::Interrupted => Self::new(
                ExitKind::Interrupted,
                "interrupted while waiting for another run on this repository; nothing was changed",
            ),
            // A busy repository is an orchestration condition, not bad
            // input: the same command works once the other run is over.
            other => Self::wrapping(ExitKind::Git, other),
        }
    }
}

impl From<LlmError> for SwarmError {
    fn from(err: LlmError) -> Self {
        match err {
            LlmError::Config { .. } => Self::wrapping(ExitKind::InvalidInput, err),
            other => Self::wrapping(ExitKind::Llm, other),
        }
    }
}

impl From<ToolError> for SwarmError {
    fn from(err: ToolError) -> Self {
        match err {
            ToolError::Missing(_) => Self::wrapping(ExitKind::InvalidInput, err),
            ToolError::Cancelled => Self::interrupted(),
            other => Self::wrapping(ExitKind::Internal, other),
        }
    }
}

/// The log's facts, with what a user can do about them. Exit code 5
/// (internal): a run that cannot write its log stops; where the log is
/// opened, before any work, the caller makes it invalid input instead.
impl From<LogError> for SwarmError {
    fn from(err: LogError) -> Self {
        let hint = match &err {
            LogError::Write { .. } | LogError::Read { .. } => {
                "fix its permissions or pass another --log-file"
            }
            LogError::Locked { .. } => "stop that process or pass another --log-file",
        };
        Self::wrapping(ExitKind::Internal, err).hint(hint)
    }
}

#[cfg(test)]
mod log_error_tests {
    use super::*;

    #[test]
    fn a_log_error_states_the_facts_and_the_user_reads_what_to_do() {
        let locked = LogError::Locked {
            path: "logs/experiment_data.json".into(),
            secs: 60,
        };
        assert!(!locked.to_string().contains("--log-file"), "{locked}");
        let err = SwarmError::from(locked);
        assert_eq!(
            err.to_string(),
            "the experiment log logs/experiment_data.json stayed locked by another process for \
             60 s; stop that process or pass another --log-file"
        );
        assert_eq!(err.kind.code(), 5);
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied");
        let err = SwarmError::from(LogError::Write {
            path: "x.json".into(),
            source: io,
        });
        assert_eq!(
            err.to_string(),
            "cannot write the experiment log x.json: permission denied; \
             fix its permissions or pass another --log-file"
        );
        let chain = err.chain();
        assert_eq!(
            chain.last().map(String::as_str),
            Some("permission denied"),
            "{chain:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_follow_the_message_on_the_same_line() {
        let err = SwarmError::invalid("no model provider configured")
            .hint("set OPENAI_API_KEY")
            .hint("or pass --provider replay");
        assert_eq!(
            err.to_string(),
            "no model provider configured; set OPENAI_API_KEY; or pass --provider replay"
        );
        assert_eq!(err.kind.code(), 1);
        assert!(!err.to_string().contains('\n'));
    }

    #[test]
    fn a_cause_is_kept_as_the_source_and_named_in_the_message() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied");
        let err = SwarmError::invalid("cannot read .swarm.toml").caused_by(io);
        assert_eq!(err.message, "cannot read .swarm.toml: permission denied");
        let source = std::error::Error::source(&err).expect("the io error is the source");
        assert_eq!(source.to_string(), "permission denied");
        assert_eq!(err.chain().len(), 2);
    }

    #[test]
    fn converted_errors_keep_their_type_and_exit_code() {
        let err = SwarmError::from(ToolError::Missing("pytest".into()));
        assert_eq!(err.kind, ExitKind::InvalidInput);
        let source = std::error::Error::source(&err).expect("kept");
        assert!(source.downcast_ref::<ToolError>().is_some());
    }
}
