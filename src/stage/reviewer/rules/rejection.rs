//! [`Rejection`], the typed reason a rule gives: its `Display` is the
//! sentence for the model's next prompt (what is wrong and what to do
//! instead), [`Rejection::rule`] the name of the rule's entry in
//! [`super::RULES`] for the log. Owns the sentences; the checks that give
//! them live with their kind (`path.rs`, `file.rs`, `change.rs`).

use crate::pipeline::Unusable;
use swarm_analysis::Severity;
use swarm_patch::{MergeConflict, PatchError};

/// Why the Reviewer turned a proposal down: a variant per reason, each
/// given by one rule of [`super::RULES`] (a rule may have more than one:
/// `too_many_lines` for a file and for a task's change as a whole).
/// `Display` is the sentence for the model's next prompt (what is wrong and
/// what to do instead); [`Rejection::rule`] is the rule's stable name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// The reply held no change that could be read.
    #[error("{0}")]
    Unusable(Unusable),
    #[error(
        "a file change has an empty path; start each file's diff with `--- a/<path>` and \
         `+++ b/<path>`"
    )]
    EmptyPath,
    #[error("{path} is an absolute path; use paths relative to the project folder")]
    AbsolutePath { path: String },
    #[error("{path} leaves the project folder (`..`); only files inside it may change")]
    OutsideTarget { path: String },
    #[error(
        "{path} is inside .git; only project files may change — change the file you were \
         asked about"
    )]
    InsideGit { path: String },
    #[error(
        "{path} is inside the git submodule {submodule}, which swarm never changes; change \
         files of this repository only"
    )]
    InsideSubmodule { path: String, submodule: String },
    #[error(
        "{path} goes through a symlink that leads out of the project folder; change files \
         inside it only"
    )]
    SymlinkOut { path: String },
    #[error(
        "{path} is run by the Python interpreter at start-up (sitecustomize, usercustomize, \
         .pth); such files must not be added or changed — fix the code under test instead"
    )]
    StartupFile { path: String },
    #[error(
        "{path} is the project's installed dependencies or their lockfile, which are the \
         user's; they must never be changed — fix the code instead"
    )]
    Dependencies { path: String },
    /// `part` says what was touched: `conftest.py`, `the [tool:pytest] section`, …
    #[error(
        "{path}: the change touches {part}, which configures {runner}; test configuration \
         must not be changed — fix the code under test instead"
    )]
    TestConfig {
        path: String,
        part: String,
        runner: String,
    },
    #[error("{path} is a test file; tests must not be changed — fix the code under test instead")]
    TestFile { path: String },
    /// The change could not be applied; nothing was changed.
    #[error("{0}")]
    DoesNotApply(PatchError),
    /// The change fits a version of the file the model was shown earlier,
    /// but merged onto the current text it conflicts with the changes made
    /// since; nothing was changed.
    #[error("{0}")]
    MergeConflict(MergeConflict),
    #[error(
        "the change to {path} has {lines} changed lines; the limit for a {}-severity file is \
         {limit}: make a smaller change",
        severity.name()
    )]
    TooManyLines {
        path: String,
        lines: usize,
        limit: usize,
        severity: Severity,
    },
    #[error(
        "the change to {path} adds or removes {bytes} bytes; the limit for a {}-severity file \
         is {limit} bytes: make a smaller change, with lines of ordinary length",
        severity.name()
    )]
    TooManyBytes {
        path: String,
        bytes: usize,
        limit: usize,
        severity: Severity,
    },
    #[error(
        "after the change {path} does not parse as {language} (syntax error at line {line}, \
         column {column})"
    )]
    SyntaxError {
        path: String,
        /// The file's language, as [`crate::lang::Language::name`] says it.
        language: &'static str,
        line: usize,
        column: usize,
    },
    /// `what` names the form: `` `pytest_plugins` ``, `an import of pytest or pluggy`, …
    #[error(
        "the change adds {what} to {path} (line {line}); code under test must not become a \
         pytest plugin or change how pytest runs — fix the code under test instead"
    )]
    PytestPlugin {
        path: String,
        line: usize,
        what: &'static str,
    },
    /// `call` is a call (`os.system`) or a dynamic access (`globals()[...]`).
    #[error(
        "the change adds {call} in {path} (line {line}); dangerous calls and dynamic access \
         to modules or builtins are not allowed — call what you need directly"
    )]
    DangerousCall {
        path: String,
        call: String,
        line: usize,
    },
    /// A task's change, measured as a whole (see `task_size`).
    #[error(
        "the change has {lines} changed lines ({moved} more moved unchanged between files); the \
         limit for this task is {limit}: change only what the task needs, and move code as it is"
    )]
    TaskTooManyLines {
        lines: usize,
        moved: usize,
        limit: usize,
    },
    #[error(
        "the change adds or removes {bytes} bytes besides what it moves; the limit for this task \
         is {limit} bytes: change only what the task needs"
    )]
    TaskTooManyBytes { bytes: usize, limit: usize },
    #[error(
        "the new module {path} takes the name `{name}`, which is a standard-library module or an \
         installed package: imports of it would find the wrong one; choose another name"
    )]
    ShadowsModule { path: String, name: String },
    /// `what` names the read: `` `sys.argv` ``, `` `inspect.stack()` ``, …
    #[error(
        "the change adds {what} to {path} (line {line}): code under test must not look at how \
         it is being run (the test runner's variables, modules or arguments, the caller's stack \
         or file name) — make the code right for every caller instead"
    )]
    TestEnvironment {
        path: String,
        line: usize,
        what: String,
    },
    /// `what` names the patch: `` `unittest.TestCase.assertEqual = …` ``, …
    #[error(
        "the change adds {what} to {path} (line {line}): code under test must not patch the \
         test framework, the assertion machinery, builtins or the interpreter's exit — fix the \
         code under test instead"
    )]
    FrameworkPatch {
        path: String,
        line: usize,
        what: String,
    },
    /// `what` says which secret: `the AWS access key id on line 3`, or a
    /// placeholder that stands for none.
    #[error(
        "the change to {path} alters or removes {what}; secrets are withheld from you as \
         placeholders (`[SECRET_…]`): keep each one exactly as it is, where it is"
    )]
    SecretChanged { path: String, what: String },
    #[error("the change leaves every file exactly as it is")]
    NoChange,
    #[error("the change only touches whitespace; fix the problems listed instead")]
    WhitespaceOnly,
    #[error(
        "this exact change was already tried on this state of the code; take a different \
         approach"
    )]
    Repeat,
    /// The change alters a docstring example the project's pytest runs as
    /// a test (`--doctest-modules`).
    #[error(
        "the change alters the doctest example at line {line} of {path}, which the project's \
         pytest runs as a test (--doctest-modules); tests must not be changed — fix the code \
         under test instead"
    )]
    Doctest { path: String, line: usize },
}

impl Rejection {
    /// The stable snake_case name of the rule that gives this reason, from
    /// its entry in [`super::RULES`], for the log and `--json`.
    pub fn rule(&self) -> &'static str {
        match self {
            Rejection::Unusable(_) => super::UNUSABLE_REPLY.name,
            Rejection::EmptyPath => super::EMPTY_PATH.name,
            Rejection::AbsolutePath { .. } => super::ABSOLUTE_PATH.name,
            Rejection::OutsideTarget { .. } => super::OUTSIDE_TARGET.name,
            Rejection::InsideGit { .. } => super::INSIDE_GIT.name,
            Rejection::InsideSubmodule { .. } => super::SUBMODULE.name,
            Rejection::SymlinkOut { .. } => super::SYMLINK_OUT.name,
            Rejection::StartupFile { .. } => super::STARTUP_FILE.name,
            Rejection::Dependencies { .. } => super::DEPENDENCIES.name,
            Rejection::TestConfig { .. } => super::TEST_CONFIG.name,
            Rejection::TestFile { .. } => super::TEST_FILE.name,
            Rejection::DoesNotApply(_) => super::DOES_NOT_APPLY.name,
            Rejection::MergeConflict(_) => super::MERGE_CONFLICT.name,
            Rejection::TooManyLines { .. } => super::TOO_MANY_LINES.name,
            Rejection::TooManyBytes { .. } => super::TOO_MANY_BYTES.name,
            Rejection::SyntaxError { .. } => super::SYNTAX_ERROR.name,
            Rejection::PytestPlugin { .. } => super::PYTEST_PLUGIN.name,
            Rejection::DangerousCall { .. } => super::DANGEROUS_CALL.name,
            Rejection::TaskTooManyLines { .. } => super::TOO_MANY_LINES.name,
            Rejection::TaskTooManyBytes { .. } => super::TOO_MANY_BYTES.name,
            Rejection::ShadowsModule { .. } => super::SHADOWS_MODULE.name,
            Rejection::TestEnvironment { .. } => super::TEST_ENVIRONMENT.name,
            Rejection::FrameworkPatch { .. } => super::FRAMEWORK_PATCH.name,
            Rejection::SecretChanged { .. } => super::SECRET_CHANGED.name,
            Rejection::NoChange => super::NO_CHANGE.name,
            Rejection::WhitespaceOnly => super::WHITESPACE_ONLY.name,
            Rejection::Repeat => super::REPEAT.name,
            Rejection::Doctest { .. } => super::DOCTEST.name,
        }
    }

    /// Whether the change was refused for its size alone (`too_many_lines`,
    /// `too_many_bytes`): it may still be tried in smaller steps.
    pub fn is_size(&self) -> bool {
        matches!(
            self,
            Rejection::TooManyLines { .. } | Rejection::TooManyBytes { .. }
        )
    }
}
