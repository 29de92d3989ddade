//! The only module that spawns pylint, pytest and python.
//!
//! It finds the Python environment (active virtualenv, `.venv` in the target,
//! `python3` on PATH, or a bootstrapped tool environment), runs the tools
//! under a [`Sandbox`] (allow-listed environment, namespaces, Landlock,
//! resource limits, parent-death signal — see [`sandbox`]) with timeouts in
//! their own process group (killed whole on timeout or cancel), and parses
//! their results into values. It never prints; progress goes through a
//! callback.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cancel::Cancel;

mod capture;
pub mod env;
pub mod imports;
pub mod junit;
pub mod process;
mod pylint;
mod pytest;
pub mod sandbox;

pub use env::{resolve_env_with, EnvSettings, PYLINT_PIN, PYTEST_PIN};
pub use process::{Ending, ProcessBuilder, ProcessError, ProcessOutput};
pub use sandbox::{LayerState, ResourceLimits, Sandbox, SandboxPolicy, SandboxReport};

/// Errors that stop a tool from giving any result at all.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The interpreter or a tool is not available; the text says how to fix it.
    #[error("{0}")]
    Missing(String),
    /// A tool ran but gave no usable result (timeout, usage error, no report).
    #[error("{command}: {message}")]
    Failed { command: String, message: String },
    /// The run was cancelled while the tool ran; its processes were killed.
    #[error("interrupted")]
    Cancelled,
}

/// Where the Python interpreter came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvSource {
    /// `$VIRTUAL_ENV/bin/python`.
    ActiveVenv,
    /// `.venv/bin/python` in the target or a parent folder in its repository.
    DotVenv,
    /// `python3` on `PATH`.
    SystemPython,
    /// The cached tool environment swarm created.
    Bootstrapped,
    /// The interpreter named by `SWARM_PYTHON`.
    Explicit,
}

/// The interpreter that runs pytest and pylint.
#[derive(Clone, Debug)]
pub struct PythonEnv {
    /// The real interpreter (`sys.executable`, not a pyenv shim, which would
    /// need the real HOME); tools run as `python -m pytest` / `python -m pylint`.
    pub python: PathBuf,
    pub source: EnvSource,
    /// `9.2.0`, from `python -m pytest --version`.
    pub pytest_version: String,
    /// `4.1.4`, from `python -m pylint --version`; below 3 selects the json fallback.
    pub pylint_version: String,
    /// Where the interpreter keeps its files, probed once.
    pub layout: PythonLayout,
}

/// The folders an interpreter reads, probed once when the environment is
/// resolved: the sandbox lets tools read them and nothing else of the user's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PythonLayout {
    /// `sys.prefix`, `sys.base_prefix`, `sys.exec_prefix`, `sys.base_exec_prefix`.
    pub prefixes: Vec<PathBuf>,
    /// Every non-empty `sys.path` entry.
    pub sys_path: Vec<PathBuf>,
    /// The user base (`site.getuserbase()`) when the interpreter has a user
    /// site-packages folder; passed on as `PYTHONUSERBASE`.
    pub user_base: Option<PathBuf>,
    /// `sys.prefix` when the interpreter is a virtualenv; passed on as `VIRTUAL_ENV`.
    pub virtual_env: Option<PathBuf>,
}

/// Finds the environment for `target`; bootstraps one when pytest or pylint
/// is missing and `bootstrap` is true, reporting steps through `progress`.
///
/// Reads `SWARM_PYTHON`, `VIRTUAL_ENV`, `SWARM_CACHE_DIR` and `PATH`; see
/// [`resolve_env_with`] to pass them explicitly.
pub fn resolve_env(
    target: &Path,
    bootstrap: bool,
    progress: &dyn Fn(&str),
) -> Result<PythonEnv, ToolError> {
    resolve_env_with(target, bootstrap, progress, &EnvSettings::from_env())
}

/// One pylint message.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LintMessage {
    /// Path relative to the folder pylint ran in.
    pub path: String,
    /// 1-based line (0 when pylint gave none).
    pub line: u32,
    /// 0-based column, as pylint reports it.
    pub column: u32,
    /// `error`, `warning`, `convention`, `refactor`, `fatal`, `info`.
    pub kind: String,
    /// `unused-import`.
    pub symbol: String,
    /// `W0611`.
    pub message_id: String,
    /// The human-readable text.
    pub message: String,
}

/// pylint's result.
#[derive(Clone, Debug, Default)]
pub struct LintReport {
    /// The global score out of 10 over the files linted; `None` when pylint
    /// gave none (or could not finish even without the skipped files).
    pub score: Option<f64>,
    /// Every message, in pylint's order.
    pub messages: Vec<LintMessage>,
    /// Files left out because pylint could not lint them within the timeout.
    pub skipped: Vec<SkippedLint>,
    /// What went differently from one plain pylint run, one line each.
    pub notes: Vec<String>,
    /// The command line (capped), for the log.
    pub command: String,
    /// Trimmed combined output, for the log.
    pub output: String,
}

/// A file whose lint was skipped.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SkippedLint {
    /// Path relative to the folder pylint ran in.
    pub path: String,
    /// Why, in words.
    pub reason: String,
}

/// Runs pylint in `root` over `files` (relative to `root`) under `sandbox`.
///
/// When pylint does not finish within `timeout`, the files that keep it
/// busy are found by bisection (each further run also bounded by
/// `timeout`), skipped with a note, and the rest is linted in one run for
/// the score; files found slow are remembered for the rest of the process,
/// keyed by their content.
pub fn run_pylint(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    files: &[String],
    timeout: Duration,
    cancel: &Cancel,
) -> Result<LintReport, ToolError> {
    pylint::run(env, sandbox, root, files, timeout, cancel)
}

/// The outcome of one test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TestOutcome {
    Passed,
    /// An assertion or exception in the test body.
    Failed,
    /// An error in setup/teardown, or a collection error (syntax, import).
    Error,
    /// Skipped or xfailed.
    Skipped,
}

/// One test's result from the junit XML.
#[derive(Clone, Debug, PartialEq)]
pub struct TestCase {
    /// Stable id, `tests/test_x.py::TestClass::test_name` style.
    pub id: String,
    pub outcome: TestOutcome,
    /// The assertion or error message.
    pub message: Option<String>,
    /// The trimmed traceback text.
    pub details: Option<String>,
}

/// A pytest run.
#[derive(Clone, Debug, Default)]
pub struct TestRun {
    /// Every case in the junit report, in run order, ids unique.
    pub cases: Vec<TestCase>,
    /// pytest's exit code; `None` when killed.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// pytest collected no tests (exit code 5).
    pub no_tests: bool,
    /// The command line, for the log.
    pub command: String,
    /// Trimmed combined output (capped).
    pub output: String,
    /// Wall time of the pytest process.
    pub duration: Duration,
}

/// Runs pytest under `sandbox` with `root` as rootdir and working
/// directory, with junit XML.
pub fn run_pytest(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    timeout: Duration,
    cancel: &Cancel,
) -> Result<TestRun, ToolError> {
    pytest::run(env, sandbox, root, timeout, cancel)
}

/// The result of compiling and importing every module (used when there are no tests).
#[derive(Clone, Debug, Default)]
pub struct ImportCheck {
    /// (path relative to root, problem) for every file that fails to compile.
    pub compile_errors: Vec<(String, String)>,
    /// (path relative to root, problem) for every module that fails to import
    /// or does not finish importing within the timeout.
    pub import_errors: Vec<(String, String)>,
    /// A summary of the commands run, for the log.
    pub command: String,
    /// One line per problem plus a count line, for the log.
    pub output: String,
}

/// Compiles every file, then imports every module in a subprocess with
/// `timeout` each, all under `sandbox`.
pub fn check_imports(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    files: &[String],
    timeout: Duration,
    cancel: &Cancel,
) -> Result<ImportCheck, ToolError> {
    imports::check(env, sandbox, root, files, timeout, cancel)
}
