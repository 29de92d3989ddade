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

/// How a run ended, as the process exit code (each case: `docs/architecture.md`,
/// "Exit codes").
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
    pub(crate) fn wrapping(
        kind: ExitKind,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
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
    /// The git error's facts as the message, and what the user can do about
    /// them as a hint: the flags and commands git's errors do not name.
    fn from(err: GitError) -> Self {
        let hint = match &err {
            GitError::Bare { .. } => {
                Some("run swarm on a checkout with a working tree".to_string())
            }
            GitError::NoCommits { .. } => {
                Some("commit your files first (git add -A && git commit)".to_string())
            }
            GitError::RunRefsBlocked { rename, .. } => {
                Some(format!("rename it ({rename}) and run again"))
            }
            GitError::TargetInGitDir { .. } | GitError::TargetOutsideWorkTree { .. } => {
                Some("point --target_dir at a folder of the working tree".to_string())
            }
            GitError::Unreadable { .. } => {
                Some("run swarm as a user who can read it, or fix its permissions".to_string())
            }
            GitError::WorktreesInsideRepo { .. } => {
                Some("set SWARM_CACHE_DIR to a folder outside it".to_string())
            }
            GitError::RepositoryBusy { .. } => {
                Some("wait for it to finish or raise --lock-timeout".to_string())
            }
            GitError::SubmoduleCommitMissing { path, .. } => Some(format!(
                "run `git submodule update -- {path}` and try again"
            )),
            GitError::Push { .. } => Some(
                "give the job `permissions: contents: write` (or credentials for the remote) and run again"
                    .to_string(),
            ),
            GitError::Failed { .. }
            | GitError::Unexpected { .. }
            | GitError::NotStarted { .. }
            | GitError::Command { .. }
            | GitError::Io { .. }
            | GitError::InvalidPath { .. }
            | GitError::InvalidRunId { .. }
            | GitError::BranchExists { .. }
            | GitError::NotDescendant { .. }
            | GitError::Interrupted => None,
        };
        let error = match err {
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
        };
        match hint {
            Some(hint) => error.hint(hint),
            None => error,
        }
    }
}

impl From<LlmError> for SwarmError {
    /// Settings that cannot work are invalid input; a call that failed is a
    /// model error. The advice that names swarm's flags, variables and
    /// settings is added here, as a hint: `llm/` states only the facts.
    fn from(err: LlmError) -> Self {
        use crate::llm::Provider;

        /// What to do about `err`, from the provider table's facts.
        fn advice(err: &LlmError) -> Option<String> {
            let row = |provider: &str| Provider::named(provider);
            Some(match err {
                LlmError::MissingKey { provider } => {
                    let row = row(provider)?;
                    let alternative = if row.keyless_with_base_url {
                        " (or give a base URL for a local server that needs no key)"
                    } else {
                        ""
                    };
                    format!("set {}{alternative}", row.key_var_list())
                }
                LlmError::Unreachable { provider, .. } => {
                    let checks = match row(provider).map(|row| (row, row.base_url_var)) {
                        Some((row, Some(base))) => {
                            format!(
                                "check {base}{} and {}",
                                row.base_url_note,
                                row.key_var_list()
                            )
                        }
                        _ => "check the recording".to_string(),
                    };
                    format!("{checks}, or pass --no-preflight to skip this check")
                }
                LlmError::Timeout { .. } => {
                    "raise --llm-timeout if the model is this slow to start or between tokens"
                        .to_string()
                }
                LlmError::OverWindow { .. } => {
                    "declare a bigger `context-window` if the model has one, or use a model \
                     with a larger window"
                        .to_string()
                }
                _ => return None,
            })
        }

        let hint = advice(&err);
        let kind = match &err {
            LlmError::Config { .. }
            | LlmError::MissingKey { .. }
            | LlmError::Client { .. }
            | LlmError::RecordingIo { .. }
            | LlmError::Recording { .. } => ExitKind::InvalidInput,
            _ => ExitKind::Llm,
        };
        let error = Self::wrapping(kind, err);
        match hint {
            Some(hint) => error.hint(hint),
            None => error,
        }
    }
}

/// A tool that gave no result. Something missing is bad input (exit 1),
/// with the hint that says how to get it, and so is an environment that
/// imports the project from outside the worktree; a cancel is an
/// interrupt; the rest is internal (exit 5).
impl From<ToolError> for SwarmError {
    fn from(err: ToolError) -> Self {
        use crate::tools::MissingTool;
        let ToolError::Missing(missing) = &err else {
            return match err {
                ToolError::Cancelled => Self::interrupted(),
                ToolError::OutsideWorktree { .. } => Self::wrapping(ExitKind::InvalidInput, err)
                    .hint(
                    "swarm judges the attempt in its own worktree, yet this Python environment \
                         loads the project's code from elsewhere (an installed copy, or an import \
                         hook pointing at your checkout): install the project in editable mode \
                         from this checkout (pip install -e .) or uninstall the other copy, or run \
                         with --install-deps to test in an environment of swarm's own",
                ),
                other => Self::wrapping(ExitKind::Internal, other),
            };
        };
        let hint = match missing {
            MissingTool::NoPython => {
                Some("install python3, activate a virtualenv, or set SWARM_PYTHON".to_string())
            }
            MissingTool::TestTools { python, .. } => Some(format!(
                "run `{} -m pip install pytest pylint`, or drop --no-bootstrap to let swarm make its own tool environment",
                python.display()
            )),
            MissingTool::NoCacheDir => {
                Some("set SWARM_CACHE_DIR or install them: pip install pytest pylint".to_string())
            }
            MissingTool::BootstrapIncomplete { .. } => {
                Some("install them yourself: pip install pytest pylint".to_string())
            }
            MissingTool::Ruff => Some("--offline needs it: pip install ruff".to_string()),
            MissingTool::DeclaredEnv { .. } => Some(
                "check what the project declares (it must install with pip or uv), or run without --install-deps with the dependencies installed yourself"
                    .to_string(),
            ),
            MissingTool::Browser { .. } => {
                Some("set $BROWSER to your browser, or open the file yourself".to_string())
            }
            MissingTool::NamedPythonAbsent { .. }
            | MissingTool::NamedPythonNotOnPath { .. }
            | MissingTool::PythonDoesNotStart { .. } => None,
        };
        let wrapped = Self::wrapping(ExitKind::InvalidInput, err);
        match hint {
            Some(hint) => wrapped.hint(hint),
            None => wrapped,
        }
    }
}

/// A test suite that cannot run in the environment at hand: bad input
/// (exit 1), with how to get what is missing — into that interpreter, as
/// the project's own install command, or in swarm's cache.
impl From<crate::tools::suite::CannotRun> for SwarmError {
    fn from(err: crate::tools::suite::CannotRun) -> Self {
        use crate::tools::suite::MissingPiece;
        if err
            .missing
            .iter()
            .all(|p| matches!(p, MissingPiece::NotInWorktree { .. }))
        {
            // Nothing to install: each piece says what to do.
            return Self::wrapping(ExitKind::InvalidInput, err);
        }
        let python = err.python.display().to_string();
        let mut requirements: Vec<String> = Vec::new();
        for piece in &err.missing {
            if let Some(req) = piece.requirement() {
                if !requirements.contains(&req) {
                    requirements.push(req);
                }
            }
        }
        let own = err
            .missing
            .iter()
            .any(|p| matches!(p, MissingPiece::Project { .. }));
        let install = err
            .install
            .clone()
            .or_else(|| own.then(|| "pip install -e .".to_string()));
        let mut hints = Vec::new();
        if !requirements.is_empty() {
            hints.push(format!(
                "install what is missing: {python} -m pip install {}",
                requirements.join(" ")
            ));
        }
        if let Some(install) = install {
            let lead = if hints.is_empty() {
                "install"
            } else {
                "or install"
            };
            hints.push(format!(
                "{lead} the project as its own files declare it ({install}), in that environment"
            ));
        }
        hints.push(
            "or run with --install-deps: swarm builds the project's declared environment in its \
             cache, leaving yours alone"
                .to_string(),
        );
        let mut error = Self::wrapping(ExitKind::InvalidInput, err);
        for hint in hints {
            error = error.hint(hint);
        }
        error
    }
}

/// A config file or a setting the user wrote: bad input (exit 1). A TOML
/// error's excerpt goes below the one-line message; an unknown provider's
/// hint names the providers there are.
impl From<crate::config::ConfigError> for SwarmError {
    fn from(err: crate::config::ConfigError) -> Self {
        use crate::config::ConfigError;
        match &err {
            ConfigError::Invalid {
                excerpt: Some(excerpt),
                ..
            } => {
                let excerpt = excerpt.clone();
                Self::wrapping(ExitKind::InvalidInput, err).with_detail(excerpt)
            }
            ConfigError::UnknownProvider { .. } => {
                let names: Vec<&str> = crate::llm::PROVIDERS.iter().map(|p| p.name).collect();
                Self::wrapping(ExitKind::InvalidInput, err)
                    .hint(format!("use {}", names.join(", ")))
            }
            _ => Self::wrapping(ExitKind::InvalidInput, err),
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
        let err = SwarmError::from(ToolError::Missing(crate::tools::MissingTool::NoCacheDir));
        assert_eq!(err.kind, ExitKind::InvalidInput);
        let source = std::error::Error::source(&err).expect("kept");
        assert!(source.downcast_ref::<ToolError>().is_some());
    }

    #[test]
    fn a_missing_tool_reads_as_the_fact_then_how_to_get_it() {
        use crate::tools::MissingTool;
        let err = SwarmError::from(ToolError::Missing(MissingTool::TestTools {
            python: "/venv/bin/python".into(),
            tools: vec!["pytest", "pylint"],
        }));
        assert_eq!(
            err.to_string(),
            "pytest and pylint not found for /venv/bin/python; run `/venv/bin/python -m pip install pytest pylint`, or drop --no-bootstrap to let swarm make its own tool environment"
        );
        assert_eq!(err.hints.len(), 1);
        let err = SwarmError::from(ToolError::Missing(MissingTool::Ruff));
        assert_eq!(
            err.to_string(),
            "ruff was found neither as `ruff` on PATH nor as `python3 -m ruff`; --offline needs it: pip install ruff"
        );
        assert_eq!(err.kind, ExitKind::InvalidInput);
    }

    #[test]
    fn a_tool_that_cannot_start_keeps_the_spawn_error_as_its_source() {
        let spawn = crate::tools::ProcessError::Spawn {
            command: "python -m pylint".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let err = SwarmError::from(ToolError::Run {
            command: "pylint".into(),
            source: spawn,
        });
        assert_eq!(err.kind, ExitKind::Internal);
        assert_eq!(
            err.chain()[1..],
            [
                "pylint: could not start `python -m pylint`: entity not found",
                "could not start `python -m pylint`: entity not found",
                "entity not found",
            ]
        );
    }

    #[test]
    fn a_config_error_keeps_its_excerpt_below_and_its_source() {
        use crate::config::{ConfigError, FileConfig, Problem};
        let text = "max-iterations = 'many'\n";
        let toml = toml::from_str::<FileConfig>(text).expect_err("a string is no count");
        let err = SwarmError::from(ConfigError::toml(
            Problem::NotSwarmConfig,
            std::path::Path::new(".swarm.toml"),
            text,
            toml,
        ));
        assert_eq!(err.kind, ExitKind::InvalidInput);
        assert_eq!(
            err.to_string(),
            ".swarm.toml is not a valid swarm config: line 1, column 18: invalid type: string \"many\", expected u32"
        );
        assert_eq!(
            err.detail.as_deref(),
            Some("  |\n1 | max-iterations = 'many'\n  |                  ^^^^^^")
        );
        assert_eq!(err.chain().len(), 3, "{:?}", err.chain());
        let err = SwarmError::from(ConfigError::UnknownProvider {
            name: "nope".into(),
        });
        assert_eq!(
            err.to_string(),
            format!(
                "unknown provider `nope`; use {}",
                crate::llm::PROVIDERS
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        );
    }
}
