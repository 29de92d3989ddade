//! The Reviewer's rules as one table, [`RULES`]: each entry is one rule —
//! its stable name (the log's `rule`), when its checks run, whether
//! `--allow-test-edits` lifts it, its one-line doc (the row of the table in
//! `docs/reviewer.md`, which a test compares with these entries) and its
//! checks. The checks live with their kind: `path.rs` (each path the reply
//! names, before anything is applied), `file.rs` (each file the applied
//! change alters), `change.rs` (a task's change, then every change, as a
//! whole); [`Rejection`] (`rejection.rs`) holds the sentences.
//!
//! The Reviewer runs the kinds in a fixed order — reply, paths, applying,
//! files, task, change — and, within a kind, the checks in table order; the
//! first that fails decides. Rules read the target's files only through
//! `ReviewContext::root` and never write anything.

mod change;
mod file;
mod path;
mod rejection;
mod task_size;

pub use rejection::Rejection;

use super::{ReviewContext, TaskReview};
use swarm_analysis::Severity;
use swarm_patch::FileEdit;

/// One rule of the Reviewer.
pub(super) struct Rule {
    /// The stable snake_case name: [`Rejection::rule`] of every reason the
    /// rule gives, the log's `rule`, the docs' first column.
    pub name: &'static str,
    /// What the rule checks, and so when it runs, in the order they run
    /// (a rule may check paths and files alike: `test_config`).
    pub checks: &'static [Check],
    /// `--allow-test-edits` lifts the rule: its checks do not run.
    pub lifted_by_test_edits: bool,
    /// What the rule refuses, one line of Markdown (the docs' row).
    #[cfg_attr(not(test), allow(dead_code, reason = "read by the docs table's test"))]
    pub doc: &'static str,
}

/// A rule's check, by what it looks at.
#[derive(Clone, Copy)]
pub(super) enum Check {
    /// The reply holds a readable change (`readable_edits`), before every
    /// other check.
    Reply,
    /// Each path the reply names, before anything is applied.
    Path(PathCheck),
    /// Applying the hunks in memory, once after the path checks
    /// (`rebase::apply_or_rebase`).
    Apply,
    /// Each file the applied change alters.
    File(FileCheck),
    /// A task's change as a whole (`--task` only), after the file checks.
    Task(TaskCheck),
    /// The change as a whole, last.
    Change(ChangeCheck),
}

/// A check on one target-relative path.
pub(super) type PathCheck = fn(&str, &ReviewContext<'_>) -> Result<(), Rejection>;
/// A check on one changed file.
pub(super) type FileCheck = fn(&ChangedFile<'_>, &ReviewContext<'_>) -> Result<(), Rejection>;
/// A check on a task's change as a whole.
pub(super) type TaskCheck =
    fn(&WholeChange<'_>, &TaskReview<'_>, &ReviewContext<'_>) -> Result<(), Rejection>;
/// A check on the change as a whole.
pub(super) type ChangeCheck = fn(&WholeChange<'_>, &ReviewContext<'_>) -> Result<(), Rejection>;

impl Check {
    /// When the check runs, as the docs' table says it.
    #[cfg(test)]
    pub fn when(&self) -> &'static str {
        match self {
            Check::Reply => "reply",
            Check::Path(_) => "path",
            Check::Apply => "applying",
            Check::File(_) => "file",
            Check::Task(_) => "task",
            Check::Change(_) => "whole change",
        }
    }

    /// The check's place in the order the kinds run in.
    #[cfg(test)]
    pub fn order(&self) -> usize {
        match self {
            Check::Reply => 0,
            Check::Path(_) => 1,
            Check::Apply => 2,
            Check::File(_) => 3,
            Check::Task(_) => 4,
            Check::Change(_) => 5,
        }
    }
}

/// Every rule of the Reviewer, in the order its checks run within each kind.
pub(super) const RULES: &[Rule] = &[
    UNUSABLE_REPLY,
    EMPTY_PATH,
    ABSOLUTE_PATH,
    OUTSIDE_TARGET,
    INSIDE_GIT,
    SUBMODULE,
    SYMLINK_OUT,
    STARTUP_FILE,
    DEPENDENCIES,
    TEST_CONFIG,
    TEST_FILE,
    DOES_NOT_APPLY,
    MERGE_CONFLICT,
    DOCTEST,
    TOO_MANY_LINES,
    TOO_MANY_BYTES,
    SYNTAX_ERROR,
    PYTEST_PLUGIN,
    DANGEROUS_CALL,
    TEST_ENVIRONMENT,
    FRAMEWORK_PATCH,
    SECRET_CHANGED,
    SHADOWS_MODULE,
    NO_CHANGE,
    WHITESPACE_ONLY,
    REPEAT,
];

pub(super) const UNUSABLE_REPLY: Rule = Rule {
    name: "unusable_reply",
    checks: &[Check::Reply],
    lifted_by_test_edits: false,
    doc: "a reply with no readable change (see [What the Fixer remembers](prompts.md#what-the-fixer-remembers))",
};

pub(super) const EMPTY_PATH: Rule = Rule {
    name: "empty_path",
    checks: &[Check::Path(path::empty_path)],
    lifted_by_test_edits: false,
    doc: "a file change whose path is empty",
};

pub(super) const ABSOLUTE_PATH: Rule = Rule {
    name: "absolute_path",
    checks: &[Check::Path(path::absolute_path)],
    lifted_by_test_edits: false,
    doc: "an absolute path (`/…`, `\\…`, `~…`, `C:…`)",
};

pub(super) const OUTSIDE_TARGET: Rule = Rule {
    name: "outside_target",
    checks: &[Check::Path(path::outside_target)],
    lifted_by_test_edits: false,
    doc: "a path that leaves DIR (`..`)",
};

pub(super) const INSIDE_GIT: Rule = Rule {
    name: "inside_git",
    checks: &[Check::Path(path::inside_git)],
    lifted_by_test_edits: false,
    doc: "a path under `.git/` (any case). A path the reply names is never swapped for another: \
          `FILE: .git/hooks/post-merge` above a code block is refused as `inside_git`, not \
          applied to the file that was asked about",
};

pub(super) const SUBMODULE: Rule = Rule {
    name: "submodule",
    checks: &[Check::Path(path::inside_submodule)],
    lifted_by_test_edits: false,
    doc: "a path inside a git submodule",
};

pub(super) const SYMLINK_OUT: Rule = Rule {
    name: "symlink_out",
    checks: &[Check::Path(path::symlink_out)],
    lifted_by_test_edits: false,
    doc: "a path that goes through a symlink leading out of DIR",
};

pub(super) const STARTUP_FILE: Rule = Rule {
    name: "startup_file",
    checks: &[Check::Path(path::startup_file)],
    lifted_by_test_edits: true,
    doc: "`sitecustomize.py`, `usercustomize.py`, `*.pth` (run by Python at start-up)",
};

pub(super) const DEPENDENCIES: Rule = Rule {
    name: "dependencies",
    checks: &[Check::Path(path::dependencies)],
    lifted_by_test_edits: false,
    doc: "installed dependencies and their lockfiles (they are the user's): anything under \
          `node_modules/`, `package-lock.json`, `npm-shrinkwrap.json`, `yarn.lock`, \
          `pnpm-lock.yaml`, `bun.lock(b)`",
};

pub(super) const TEST_CONFIG: Rule = Rule {
    name: "test_config",
    checks: &[
        Check::Path(path::test_config_file),
        Check::File(file::test_config_content),
    ],
    lifted_by_test_edits: true,
    doc: "JavaScript/TypeScript: `vitest.config.*`, `jest.config.*` and the runners' other \
          configuration, `package.json`'s `scripts`, `jest`, dependency and `workspaces` \
          keys, the setup files they name; Python: `conftest.py` anywhere, `pytest.ini`, \
          `.pytest.ini`, `pytest.toml` (by path); the pytest sections of `setup.cfg` \
          (`[tool:pytest]`), `tox.ini` (`[pytest]`) and `pyproject.toml` \
          (`[tool.pytest.ini_options]`, `[tool.pytest]`, also as dotted keys), `pytest11` \
          entry points in any file (by what the change alters) — so no \
          `addopts = -p plugin`, no `--deselect`",
};

pub(super) const TEST_FILE: Rule = Rule {
    name: "test_file",
    checks: &[Check::Path(path::test_file)],
    lifted_by_test_edits: true,
    doc: "test files: by name (`test_*.py`, `*_test.py`, `conftest.py`, `*.test.*` and \
          `*.spec.*` of JS/TS, anything under `tests/`, `test/` or `__tests__/`), and \
          whatever the project's pytest collects — a file its `testpaths` names (a root \
          `test.py`), a module its `python_files` matches under its `testpaths`, a text file \
          its `--doctest-glob` matches (`test*.txt` by default), any file the baseline \
          collected tests from (Django's `tests.py`)",
};

pub(super) const DOES_NOT_APPLY: Rule = Rule {
    name: "does_not_apply",
    checks: &[Check::Apply],
    lifted_by_test_edits: false,
    doc: "a reply whose hunks do not all apply exactly once (see [the patch \
          engine](patch-engine.md)) — unless they fit a version of the file the model was \
          shown earlier in the run: then the diff is merged onto the current text (see \
          [Replies against an earlier \
          version](patch-engine.md#replies-against-an-earlier-version))",
};

pub(super) const MERGE_CONFLICT: Rule = Rule {
    name: "merge_conflict",
    checks: &[Check::Apply],
    lifted_by_test_edits: false,
    doc: "such a diff whose three-way merge with the current text conflicts; the reason names \
          each conflicting line of the current file and what the diff puts there",
};

pub(super) const DOCTEST: Rule = Rule {
    name: "doctest",
    checks: &[Check::File(file::doctest_examples)],
    lifted_by_test_edits: true,
    doc: "with `--doctest-modules` in the project's `addopts`: a change that removes or \
          alters a docstring example (`>>>` and its expected output) — pytest runs those as \
          tests; new examples may be added",
};

pub(super) const TOO_MANY_LINES: Rule = Rule {
    name: "too_many_lines",
    checks: &[
        Check::File(file::too_many_lines),
        Check::Task(change::task_too_many_lines),
    ],
    lifted_by_test_edits: false,
    doc: "more changed lines (added + removed) in a file than its severity allows: low 40, \
          medium 100, high 180; for a task, in its change as a whole (the `high` limit), \
          lines moved unchanged not counted",
};

pub(super) const TOO_MANY_BYTES: Rule = Rule {
    name: "too_many_bytes",
    checks: &[
        Check::File(file::too_many_bytes),
        Check::Task(change::task_too_many_bytes),
    ],
    lifted_by_test_edits: false,
    doc: "more changed bytes in a file than its line limit × 120 (low 4,800; medium 12,000; \
          high 21,600): one 10 MB line is one line, but not one ordinary line; for a task, \
          in its change as a whole, lines moved unchanged not counted",
};

pub(super) const SYNTAX_ERROR: Rule = Rule {
    name: "syntax_error",
    checks: &[Check::File(file::syntax_error)],
    lifted_by_test_edits: false,
    doc: "a file that no longer parses in its language (tree-sitter); the reason names the \
          language",
};

pub(super) const PYTEST_PLUGIN: Rule = Rule {
    name: "pytest_plugin",
    checks: &[Check::File(file::pytest_plugin)],
    lifted_by_test_edits: true,
    doc: "plugin or hook code in a module that is not a test: `pytest_plugins`, \
          `def pytest_*`, `hookimpl`, or a new `import pytest`/`_pytest`/`pluggy`",
};

pub(super) const DANGEROUS_CALL: Rule = Rule {
    name: "dangerous_call",
    checks: &[Check::File(file::dangerous_call)],
    lifted_by_test_edits: false,
    doc: "a new dangerous call — `eval`, `exec`, `compile`, `__import__`, `os.system`, \
          `os.popen`, `os.exec*`, `os.spawn*`, `subprocess.*`, `shutil.rmtree`, \
          `pickle.load(s)`, `marshal.load(s)`, `runpy.run_*` — also via aliases, or new \
          dynamic access: `importlib.import_module` / `importlib.__import__` (any alias), \
          `getattr(<module>, <computed name>)`, `getattr(x, \"system\")`-style dangerous \
          literal names, `__builtins__`, `globals()[...]` / `vars()[...]` / \
          `locals()[...]`, `sys.modules[...]`, `<module>.__dict__`",
};

pub(super) const TEST_ENVIRONMENT: Rule = Rule {
    name: "test_environment",
    checks: &[Check::File(file::test_environment)],
    lifted_by_test_edits: false,
    doc: "in a module that is not a test, a new read of how the code is being run: the \
          runner's environment (`os.environ.get(\"PYTEST_CURRENT_TEST\")`, `os.getenv`, \
          `os.environ[…]`, `… in os.environ` for a variable that names a runner or testing), \
          its modules (`\"pytest\" in sys.modules`), its arguments (`sys.argv`, \
          `sys.orig_argv`), the caller's stack or file name (`inspect.stack()`, \
          `inspect.currentframe()`, `sys._getframe()`, `traceback.extract_stack()` and \
          friends, `sys.settrace`, frame attributes such as `.f_back` or `.f_code`), or any \
          string that names a test runner (`\"pytest\"`, `\"unittest\"`, `\"conftest\"`; \
          docstrings aside) — also through aliases",
};

pub(super) const FRAMEWORK_PATCH: Rule = Rule {
    name: "framework_patch",
    checks: &[Check::File(file::framework_patch)],
    lifted_by_test_edits: false,
    doc: "in a module that is not a test, a new patch of the test framework, the assertion \
          machinery, builtins or the interpreter: an assignment to (or `del` of) an \
          attribute of `unittest`, `pytest`, `_pytest`, `pluggy`, `doctest`, `builtins`, \
          `sys`, `os`, `inspect`, `traceback` or `atexit` \
          (`unittest.TestCase.assertEqual = …`, `builtins.len = …`, \
          `sys.excepthook = …`), `setattr` on them, rebinding `AssertionError`, \
          `except AssertionError` (a swallowed assertion), an `__eq__` that is always true, \
          and exit or audit hooks (`atexit.register`, `sys.addaudithook`)",
};

pub(super) const SECRET_CHANGED: Rule = Rule {
    name: "secret_changed",
    checks: &[Check::File(file::secret_changed)],
    lifted_by_test_edits: false,
    doc: "a change that alters or removes a secret of the file (see [Secrets in your \
          code](safety.md#secrets-in-your-code)), or writes a placeholder that stands for no \
          secret of it",
};

pub(super) const SHADOWS_MODULE: Rule = Rule {
    name: "shadows_module",
    checks: &[Check::Task(change::shadows_module)],
    lifted_by_test_edits: false,
    doc: "(a task of `--task` only) a new module whose top-level name — its own, or that of \
          the new package it starts — is a standard-library module or an installed package",
};

pub(super) const NO_CHANGE: Rule = Rule {
    name: "no_change",
    checks: &[Check::Change(change::no_change)],
    lifted_by_test_edits: false,
    doc: "a change that leaves every file as it is",
};

pub(super) const WHITESPACE_ONLY: Rule = Rule {
    name: "whitespace_only",
    checks: &[Check::Change(change::whitespace_only)],
    lifted_by_test_edits: false,
    doc: "a change that only touches whitespace",
};

pub(super) const REPEAT: Rule = Rule {
    name: "repeat",
    checks: &[Check::Change(change::repeat)],
    lifted_by_test_edits: false,
    doc: "a change already tried on the same state",
};

/// One file the applied change alters (texts decoded for the checks).
pub(super) struct ChangedFile<'a> {
    /// Target-relative.
    pub path: &'a str,
    /// `None`: the change creates it.
    pub before: Option<&'a str>,
    /// `None`: the change deletes it.
    pub after: Option<&'a str>,
    pub severity: Severity,
}

impl ChangedFile<'_> {
    fn before_text(&self) -> &str {
        self.before.unwrap_or("")
    }

    fn after_text(&self) -> &str {
        self.after.unwrap_or("")
    }

    /// The file's language and its text after the change, when it has both.
    fn source_after(&self) -> Option<(&'static dyn crate::lang::Language, &str)> {
        Some((crate::lang::of(self.path)?, self.after?))
    }
}

/// What the task and change checks look at: every file the change alters.
pub(super) struct WholeChange<'a> {
    pub files: &'a [ChangedFile<'a>],
    /// The hash of the base commit and every file's new content: the same
    /// change on the same state is a repeat.
    pub hash: &'a str,
}

/// The checks of the rules that run in this review, in table order: every
/// rule's, but those `--allow-test-edits` lifts when it is given.
fn checks(allow_test_edits: bool) -> impl Iterator<Item = &'static Check> {
    RULES
        .iter()
        .filter(move |rule| !(allow_test_edits && rule.lifted_by_test_edits))
        .flat_map(|rule| rule.checks)
}

/// The path checks, each on every path the reply names.
pub(super) fn check_paths(edits: &[FileEdit], ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
    for check in checks(ctx.allow_test_edits) {
        if let Check::Path(check) = check {
            for edit in edits {
                check(&edit.path, ctx)?;
            }
        }
    }
    Ok(())
}

/// The file checks, each on every file the change alters.
pub(super) fn check_files(
    files: &[ChangedFile<'_>],
    ctx: &ReviewContext<'_>,
) -> Result<(), Rejection> {
    for check in checks(ctx.allow_test_edits) {
        if let Check::File(check) = check {
            for file in files {
                check(file, ctx)?;
            }
        }
    }
    Ok(())
}

/// The task checks (for a task), then the checks on every change.
pub(super) fn check_change(
    change: &WholeChange<'_>,
    ctx: &ReviewContext<'_>,
) -> Result<(), Rejection> {
    if let Some(task) = &ctx.task {
        for check in checks(ctx.allow_test_edits) {
            if let Check::Task(check) = check {
                check(change, task, ctx)?;
            }
        }
    }
    for check in checks(ctx.allow_test_edits) {
        if let Check::Change(check) = check {
            check(change, ctx)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
