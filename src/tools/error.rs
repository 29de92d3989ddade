//! Why a tool gave no result at all: what is missing (an interpreter, a
//! tool, a folder to make a tool environment in), a process that could not
//! be started, a file that could not be written, a report that could not be
//! read, a tool that ended without a usable result, a cancel.
//!
//! These errors state facts and keep their sources (the io error, the
//! spawn error, serde's error). They never say what to do about them: the
//! advice — `pip install …`, a flag to drop, a variable to set — is
//! attached where the error reaches the user, in the top-level error, once.

use std::path::PathBuf;

use super::process::ProcessError;

/// Errors that stop a tool from giving any result at all.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The interpreter or a tool is not available.
    #[error(transparent)]
    Missing(#[from] MissingTool),
    /// A tool's process could not be started or waited for; `command`
    /// names the tool (a command line, or `pylint`).
    #[error("{command}: {source}")]
    Run {
        command: String,
        #[source]
        source: ProcessError,
    },
    /// A file or folder a tool run needs could not be made or written.
    #[error("{action} {}: {source}", path.display())]
    File {
        action: FileAction,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The sandbox could not be prepared: its scratch folder, a cell's
    /// folders, a Landlock ruleset (`step` says which, in words).
    #[error("sandbox: {step}: {source}")]
    Sandbox {
        step: String,
        #[source]
        source: std::io::Error,
    },
    /// A tool ran, but the JSON it reported could not be read; `last_line`
    /// is the last line of its output, when that says more.
    #[error("{command}: {what} ({source}){}", after(last_line.as_deref()))]
    Garbled {
        command: String,
        what: &'static str,
        last_line: Option<String>,
        #[source]
        source: serde_json::Error,
    },
    /// A probe ended without writing its result file.
    #[error("{command}: no result from the probe ({source})")]
    NoResult {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// A tool ran but gave no usable result (an exit code, a signal, a
    /// timeout, a usage error, no report).
    #[error("{command}: {message}")]
    Failed { command: String, message: String },
    /// The run was cancelled while the tool ran; its processes were killed.
    #[error("interrupted")]
    Cancelled,
    /// A tool run on the worktree loaded modules of the project from
    /// elsewhere (the user's checkout, an installed copy): its results are
    /// not the worktree's.
    #[error(
        "{command}: the project's code was imported from outside the run's worktree: {}",
        list_imports(imports)
    )]
    OutsideWorktree {
        command: String,
        imports: Vec<super::worktree::ForeignImport>,
    },
}

/// The first few foreign imports, and how many more.
fn list_imports(imports: &[super::worktree::ForeignImport]) -> String {
    let shown: Vec<String> = imports.iter().take(3).map(ToString::to_string).collect();
    let more = imports.len().saturating_sub(3);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// `: text` after a message, or nothing.
fn after(text: Option<&str>) -> String {
    text.map(|t| format!(": {t}")).unwrap_or_default()
}

/// What is missing for the tools to run.
#[derive(Debug, thiserror::Error)]
pub enum MissingTool {
    /// No interpreter: none named or active, no `.venv`, no `python3` on `PATH`.
    #[error("no Python interpreter found")]
    NoPython,
    /// `SWARM_PYTHON` names a path that does not exist.
    #[error("SWARM_PYTHON points to {}, which does not exist", python.display())]
    NamedPythonAbsent { python: PathBuf },
    /// `SWARM_PYTHON` names a program that is not on `PATH`.
    #[error("SWARM_PYTHON is {}, which is not on PATH", name.display())]
    NamedPythonNotOnPath { name: PathBuf },
    /// The interpreter does not start.
    #[error("cannot run Python at {}: {source}", python.display())]
    PythonDoesNotStart {
        python: PathBuf,
        #[source]
        source: ProcessError,
    },
    /// The interpreter lacks pytest or pylint (or both, as `tools` lists),
    /// and no tool environment was to be made for it.
    #[error("{} not found for {}", tools.join(" and "), python.display())]
    TestTools {
        python: PathBuf,
        tools: Vec<&'static str>,
    },
    /// No cache folder to make a tool environment in.
    #[error("no cache directory to bootstrap pytest and pylint into")]
    NoCacheDir,
    /// The tool environment made at `dir` still lacks pytest or pylint.
    #[error("the tool environment {} still lacks pytest or pylint", dir.display())]
    BootstrapIncomplete { dir: PathBuf },
    /// ruff answers neither as `ruff` on `PATH` nor as `python3 -m ruff`.
    #[error("ruff was found neither as `ruff` on PATH nor as `python3 -m ruff`")]
    Ruff,
    /// The project's declared environment (`--install-deps`) could not be
    /// built at `dir`: `command` failed with `problem`.
    #[error("cannot build the project's declared environment in {}: {command}: {problem}", dir.display())]
    DeclaredEnv {
        dir: PathBuf,
        command: String,
        problem: String,
    },
    /// The browser could not be started.
    #[error("cannot start `{command}`: {source}")]
    Browser {
        command: String,
        #[source]
        source: std::io::Error,
    },
}

/// What was being done to a file when it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileAction {
    /// Making a folder.
    Mkdir,
    /// Writing a file.
    Write,
}

impl std::fmt::Display for FileAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileAction::Mkdir => "mkdir",
            FileAction::Write => "write",
        })
    }
}

impl ToolError {
    /// Writing the file at `path` failed with `source`.
    pub(crate) fn write(path: impl Into<PathBuf>, source: std::io::Error) -> ToolError {
        ToolError::File {
            action: FileAction::Write,
            path: path.into(),
            source,
        }
    }
}
