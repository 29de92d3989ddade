//! The only module that spawns pylint, pytest and python.
//!
//! It finds the Python environment (active virtualenv, `.venv` in the target,
//! `python3` on PATH, or a bootstrapped tool environment), runs the tools
//! under a [`Sandbox`] (allow-listed environment, namespaces, Landlock,
//! resource limits, parent-death signal — see [`sandbox`]) with timeouts in
//! their own process group (killed whole on timeout or cancel), and parses
//! their results into values. It never prints; progress goes through a
//! callback. Its errors ([`ToolError`]) state facts and keep their sources;
//! what to do about them is said where they reach the user.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cancel::Cancel;

pub mod behaviour;
pub mod env;
mod error;
pub mod imports;
pub mod junit;
pub(crate) mod memo;
pub mod node;
pub mod opener;
pub mod project;
pub mod pylint;
mod pytest;
pub mod ruff;
mod run;
pub mod suite;
pub mod test_files;
pub mod worktree;

pub use env::{declared_env, resolve_env_with, EnvSettings, PYLINT_PIN, PYTEST_PIN};
pub use error::{FileAction, MissingTool, ToolError};
pub use process::{Ending, ProcessBuilder, ProcessError, ProcessOutput};
pub use pylint::{KnownContent, LintCache, LintTarget};
pub use pytest::symptoms::{symptoms as pytest_symptoms, Symptom};
pub use run::{process, sandbox};
pub use sandbox::{LayerState, ResourceLimits, Runtime, Sandbox, SandboxPolicy, SandboxReport};
pub use test_files::TestFiles;
// What the tools measure is the pipeline's vocabulary; named here too for
// the modules of `tools/` that build it.
pub use crate::pipeline::measure::{
    ImportCheck, LintBatch, LintKind, LintMessage, LintReport, SkippedLint, TestCase, TestOutcome,
    TestRun,
};

/// Where the Python interpreter came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// The project's declared environment swarm built in its cache
    /// (`--install-deps`).
    Declared,
}

/// The interpreter that runs pytest and pylint.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// The names of the interpreter's standard-library modules
/// (`sys.stdlib_module_names`, Python 3.10 and later; empty before, or when
/// the interpreter does not answer).
pub fn stdlib_modules(env: &PythonEnv) -> Vec<String> {
    env::stdlib_modules(&env.python)
}

/// Whether a target-relative path is a test file (the Fixer leaves it alone,
/// the import checks do not import it):
/// `test_*.py`, `*_test.py`, `conftest.py`, or anything under a `tests/` or
/// `test/` folder.
pub fn is_test_path(rel: &str) -> bool {
    let mut parts: Vec<&str> = rel.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    parts.iter().any(|p| *p == "tests" || *p == "test")
        || name == "conftest.py"
        || (name.starts_with("test_") && name.ends_with(".py"))
        || name.ends_with("_test.py")
}

/// How pylint runs: the timeout of each process, the bounds of a batch and
/// how many processes run at once.
#[derive(Clone, Debug, PartialEq)]
pub struct LintSettings {
    /// The longest one pylint process may take (`--lint-timeout`).
    pub timeout: Duration,
    /// At most this many files per pylint process.
    pub batch_files: usize,
    /// At most this many bytes of source per pylint process (a larger file
    /// is a batch of its own).
    pub batch_bytes: u64,
    /// At most this many pylint processes at once.
    pub processes: usize,
}

impl LintSettings {
    /// The defaults: batches of [`pylint::BATCH_FILES`] files or
    /// [`pylint::BATCH_BYTES`] bytes, one process per core.
    pub fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            batch_files: pylint::BATCH_FILES,
            batch_bytes: pylint::BATCH_BYTES,
            processes: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// Runs pylint in `root` over `files` (relative to `root`) under `sandbox`.
///
/// Files whose result `cache` holds are not linted again; the others are
/// linted in batches bounded by `settings`, several processes at once, and
/// the score is recombined from per-file statistics exactly as one pylint
/// run over all files computes it. A batch that does not finish within the
/// timeout is split to find the files that keep pylint busy (each further
/// run also bounded by the timeout); those are skipped with a note, never an
/// error. Files found slow are remembered for the rest of the process, keyed
/// by their content. Cross-file checks (`duplicate-code`, `cyclic-import`)
/// only see the files of one batch.
pub fn run_pylint(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    files: &[String],
    settings: &LintSettings,
    cache: &LintCache,
    cancel: &Cancel,
) -> Result<LintReport, ToolError> {
    let target = pylint::LintTarget {
        root,
        files,
        known: None,
    };
    pylint::run(env, sandbox, target, settings, cache, cancel)
}

/// [`run_pylint`] over `target`, whose files known by their blob id are
/// not read (see [`pylint::KnownContent`]).
pub fn run_pylint_on(
    env: &PythonEnv,
    sandbox: &Sandbox,
    target: pylint::LintTarget<'_>,
    settings: &LintSettings,
    cache: &LintCache,
    cancel: &Cancel,
) -> Result<LintReport, ToolError> {
    pylint::run(env, sandbox, target, settings, cache, cancel)
}

/// How long one test may run when nothing else is said (`--test-case-timeout`).
pub const DEFAULT_TEST_CASE_TIMEOUT: Duration = Duration::from_secs(10);

/// The time limits of a pytest run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestLimits {
    /// The whole run (`--test-timeout`): the process group is killed then.
    pub run: Duration,
    /// One test, setup and teardown included (`--test-case-timeout`);
    /// `None` leaves tests unlimited but for the whole run's limit.
    pub case: Option<Duration>,
}

impl TestLimits {
    /// `run` for the whole run and [`DEFAULT_TEST_CASE_TIMEOUT`] per test.
    pub fn new(run: Duration) -> Self {
        Self {
            run,
            case: Some(DEFAULT_TEST_CASE_TIMEOUT),
        }
    }
}

/// Runs pytest under `sandbox` with `root` as rootdir and working
/// directory, with junit XML, `timeout` for the whole run and
/// [`DEFAULT_TEST_CASE_TIMEOUT`] per test.
pub fn run_pytest(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    timeout: Duration,
    cancel: &Cancel,
) -> Result<TestRun, ToolError> {
    pytest::run(env, sandbox, root, TestLimits::new(timeout), cancel)
}

/// [`run_pytest`] with explicit limits. swarm's own pytest plugin enforces
/// the per-test limit (a test past it fails with `timed out after N s` and
/// its stack when stopped) and records results as they finish: when the
/// whole run is killed, the tests that finished keep their outcomes, the
/// one running then fails, and the others are [`TestOutcome::NotRun`].
pub fn run_pytest_with(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    limits: TestLimits,
    cancel: &Cancel,
) -> Result<TestRun, ToolError> {
    pytest::run(env, sandbox, root, limits, cancel)
}

/// A pytest run of chosen tests only (see [`run_pytest_only`]).
#[derive(Clone, Debug, Default)]
pub struct SelectedRun {
    /// The run of the chosen tests.
    pub run: TestRun,
    /// Every test id the full suite collects (before the others were
    /// deselected); `None` when pytest did not get that far.
    pub collected: Option<Vec<String>>,
}

/// [`run_pytest_with`], running only the tests whose node ids `only`
/// lists (the others are collected, then deselected, so
/// [`SelectedRun::collected`] says what a full run would have run).
pub fn run_pytest_only(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    limits: TestLimits,
    only: &[String],
    cancel: &Cancel,
) -> Result<SelectedRun, ToolError> {
    pytest::run_only(env, sandbox, root, limits, Some(only), cancel)
        .map(|(run, collected)| SelectedRun { run, collected })
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
