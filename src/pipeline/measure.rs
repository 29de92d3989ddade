//! What the tools measured, as values: a test run and its cases, pylint's
//! messages and report, the import checks of a project without tests.
//!
//! `tools/` produces these and the stages, the Judge and the log read them;
//! this module runs nothing and knows no tool's command line.

use std::time::Duration;

/// What kind of message pylint reports, most serious first.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum LintKind {
    Fatal,
    Error,
    Warning,
    Refactor,
    Convention,
    Info,
    /// A kind this version of swarm does not know (or none given).
    #[default]
    #[serde(other)]
    Other,
}

impl LintKind {
    /// pylint's name for it.
    pub fn name(self) -> &'static str {
        match self {
            LintKind::Fatal => "fatal",
            LintKind::Error => "error",
            LintKind::Warning => "warning",
            LintKind::Refactor => "refactor",
            LintKind::Convention => "convention",
            LintKind::Info => "info",
            LintKind::Other => "other",
        }
    }

    /// A fatal or an error message: the code may not run as written.
    pub fn is_error(self) -> bool {
        matches!(self, LintKind::Fatal | LintKind::Error)
    }

    /// Its weight in pylint's default score: an error counts five times,
    /// a warning, refactor or convention message once, the rest not at all.
    pub fn weight(self) -> usize {
        match self {
            LintKind::Fatal | LintKind::Error => 5,
            LintKind::Warning | LintKind::Refactor | LintKind::Convention => 1,
            LintKind::Info | LintKind::Other => 0,
        }
    }
}

impl From<&str> for LintKind {
    /// pylint's name of a kind; anything else is [`LintKind::Other`].
    fn from(name: &str) -> Self {
        match name {
            "fatal" => LintKind::Fatal,
            "error" => LintKind::Error,
            "warning" => LintKind::Warning,
            "refactor" => LintKind::Refactor,
            "convention" => LintKind::Convention,
            "info" => LintKind::Info,
            _ => LintKind::Other,
        }
    }
}

impl std::fmt::Display for LintKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One pylint message.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LintMessage {
    /// Path relative to the folder pylint ran in.
    pub path: String,
    /// 1-based line (0 when pylint gave none).
    pub line: u32,
    /// 0-based column, as pylint reports it.
    pub column: u32,
    /// `error`, `warning`, `convention`, `refactor`, `fatal`, `info`.
    pub kind: LintKind,
    /// `unused-import`.
    pub symbol: String,
    /// `W0611`.
    pub message_id: String,
    /// The human-readable text.
    pub message: String,
}

/// pylint's result over a set of files, however many batches and cached
/// results it was put together from.
#[derive(Clone, Debug, Default)]
pub struct LintReport {
    /// The global score out of 10 over the files linted, as one pylint run
    /// over them computes it; `None` when no file could be linted.
    pub score: Option<f64>,
    /// Every message: those no file carries (configuration problems) first,
    /// then file by file in the order given, in pylint's order within a file.
    pub messages: Vec<LintMessage>,
    /// Files left out because pylint could not lint them within the timeout.
    pub skipped: Vec<SkippedLint>,
    /// What went differently from one plain pylint run, one line each.
    pub notes: Vec<String>,
    /// The command line (capped): one pylint run over the files linted.
    pub command: String,
    /// A summary line, the messages as text and every note (capped), for the log.
    pub output: String,
    /// Files pylint ran over this time.
    pub linted: usize,
    /// Files whose result came from the lint cache (`tools::LintCache`).
    pub from_cache: usize,
    /// Every pylint process, in the order the batches were planned.
    pub batches: Vec<LintBatch>,
    /// Wall time of the whole lint, seconds.
    pub seconds: f64,
}

/// One pylint process of a lint.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LintBatch {
    /// Files it was given.
    pub files: usize,
    /// Its wall time, seconds.
    pub seconds: f64,
    /// `linted`, or why it gave no result (`timed out after 30s`).
    pub outcome: String,
}

/// A file whose lint was skipped.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SkippedLint {
    /// Path relative to the folder pylint ran in.
    pub path: String,
    /// Why, in words.
    pub reason: String,
}

/// The outcome of one test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TestOutcome {
    Passed,
    /// An assertion or exception in the test body, or a test that ran past
    /// its own time limit (`timed out after N s`).
    Failed,
    /// An error in setup/teardown, or a collection error (syntax, import).
    Error,
    /// Skipped or xfailed.
    Skipped,
    /// Collected but never started: the whole run was stopped at its time
    /// limit before the test's turn came.
    #[serde(rename = "not_run")]
    NotRun,
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

impl TestCase {
    /// The test's own name: the last `::` part of its id (`test_x[param]`).
    pub fn name(&self) -> &str {
        self.id.rsplit("::").next().unwrap_or(&self.id)
    }
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
