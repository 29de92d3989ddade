//! The Reviewer's rules, one small function each, and [`Rejection`], the
//! typed reason a rule gives. Rules run in the fixed order of
//! [`PATH_RULES`] (on every path the reply names, before anything is
//! applied) and [`FILE_RULES`] (on every file the applied change alters);
//! the first rule that fails decides. They read the target's files only
//! through `ReviewContext::root` and never write anything.

use std::path::{Component, Path};

use super::ReviewContext;
use crate::pipeline::Unusable;
use crate::stage::{is_startup_file, is_test_path};
use swarm_analysis::{self as analysis, Severity};
use swarm_patch::{MergeConflict, PatchError};

/// Why the Reviewer turned a proposal down: one variant per rule.
/// `Display` is the sentence for the model's next prompt (what is wrong and
/// what to do instead); [`Rejection::rule`] is a stable name for the log.
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
        "after the change {path} does not parse as Python (syntax error at line {line}, \
         column {column})"
    )]
    SyntaxError {
        path: String,
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
    /// The rule's stable snake_case name, for the log and `--json`.
    pub fn rule(&self) -> &'static str {
        match self {
            Rejection::Unusable(_) => "unusable_reply",
            Rejection::EmptyPath => "empty_path",
            Rejection::AbsolutePath { .. } => "absolute_path",
            Rejection::OutsideTarget { .. } => "outside_target",
            Rejection::InsideGit { .. } => "inside_git",
            Rejection::InsideSubmodule { .. } => "submodule",
            Rejection::SymlinkOut { .. } => "symlink_out",
            Rejection::StartupFile { .. } => "startup_file",
            Rejection::Dependencies { .. } => "dependencies",
            Rejection::TestConfig { .. } => "test_config",
            Rejection::TestFile { .. } => "test_file",
            Rejection::DoesNotApply(_) => "does_not_apply",
            Rejection::MergeConflict(_) => "merge_conflict",
            Rejection::TooManyLines { .. } => "too_many_lines",
            Rejection::TooManyBytes { .. } => "too_many_bytes",
            Rejection::SyntaxError { .. } => "syntax_error",
            Rejection::PytestPlugin { .. } => "pytest_plugin",
            Rejection::DangerousCall { .. } => "dangerous_call",
            Rejection::TaskTooManyLines { .. } => "too_many_lines",
            Rejection::TaskTooManyBytes { .. } => "too_many_bytes",
            Rejection::ShadowsModule { .. } => "shadows_module",
            Rejection::TestEnvironment { .. } => "test_environment",
            Rejection::FrameworkPatch { .. } => "framework_patch",
            Rejection::SecretChanged { .. } => "secret_changed",
            Rejection::NoChange => "no_change",
            Rejection::WhitespaceOnly => "whitespace_only",
            Rejection::Repeat => "repeat",
            Rejection::Doctest { .. } => "doctest",
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

/// A rule on one target-relative path, before anything is applied.
pub(super) type PathRule = fn(&str, &ReviewContext<'_>) -> Result<(), Rejection>;

/// The path rules, in the order they run.
pub(super) const PATH_RULES: &[PathRule] = &[
    empty_path,
    absolute_path,
    outside_target,
    inside_git,
    inside_submodule,
    symlink_out,
    startup_file,
    dependencies,
    test_config_file,
    test_file,
];

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

/// A rule on one changed file, after the change is applied in memory.
pub(super) type FileRule = fn(&ChangedFile<'_>, &ReviewContext<'_>) -> Result<(), Rejection>;

/// The file rules, in the order they run.
pub(super) const FILE_RULES: &[FileRule] = &[
    test_config_content,
    doctest_examples,
    too_many_lines,
    too_many_bytes,
    syntax_error,
    pytest_plugin,
    dangerous_call,
    test_environment,
    framework_patch,
    secret_changed,
];

fn empty_path(path: &str, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    if path.trim().is_empty() {
        return Err(Rejection::EmptyPath);
    }
    Ok(())
}

fn absolute_path(path: &str, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    let bytes = path.as_bytes();
    let drive = bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic();
    if Path::new(path).is_absolute() || path.starts_with(['/', '\\', '~']) || drive {
        return Err(Rejection::AbsolutePath { path: path.into() });
    }
    Ok(())
}

fn outside_target(path: &str, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    if Path::new(path)
        .components()
        .any(|c| matches!(c, Component::ParentDir))
    {
        return Err(Rejection::OutsideTarget { path: path.into() });
    }
    Ok(())
}

fn inside_git(path: &str, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    if path
        .split('/')
        .any(|part| part.eq_ignore_ascii_case(".git"))
    {
        return Err(Rejection::InsideGit { path: path.into() });
    }
    Ok(())
}

fn inside_submodule(path: &str, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
    let inside = |sub: &str| {
        let sub = sub.trim_matches('/');
        !sub.is_empty()
            && (path == sub || path.strip_prefix(sub).is_some_and(|r| r.starts_with('/')))
    };
    match ctx.submodules.iter().find(|s| inside(s)) {
        Some(sub) => Err(Rejection::InsideSubmodule {
            path: path.into(),
            submodule: sub.clone(),
        }),
        None => Ok(()),
    }
}

/// No component of the path may be a symlink that resolves outside the target.
fn symlink_out(path: &str, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
    let root = ctx
        .root
        .canonicalize()
        .unwrap_or_else(|_| ctx.root.to_path_buf());
    let mut current = ctx.root.to_path_buf();
    for component in Path::new(path).components() {
        current.push(component);
        let is_link = std::fs::symlink_metadata(&current)
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false);
        if is_link {
            let resolved = current.canonicalize().ok();
            if !resolved.is_some_and(|r| r.starts_with(&root)) {
                return Err(Rejection::SymlinkOut { path: path.into() });
            }
        }
    }
    Ok(())
}

/// Installed dependencies and lockfiles (`node_modules`, `package-lock.json`):
/// never changed, not even with `--allow-test-edits`.
fn dependencies(path: &str, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    if crate::lang::is_dependency(path) {
        return Err(Rejection::Dependencies { path: path.into() });
    }
    Ok(())
}

fn startup_file(path: &str, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
    if !ctx.allow_test_edits && is_startup_file(path) {
        return Err(Rejection::StartupFile { path: path.into() });
    }
    Ok(())
}

/// `conftest.py`, `pytest.ini` and the other whole-file pytest configs.
fn test_config_file(path: &str, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
    if ctx.allow_test_edits {
        return Ok(());
    }
    if let Some((part, runner)) = crate::lang::runner_config_file(path) {
        return Err(Rejection::TestConfig {
            path: path.into(),
            part,
            runner: runner.into(),
        });
    }
    Ok(())
}

fn test_file(path: &str, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
    if !ctx.allow_test_edits && (is_test_path(path) || ctx.tests.contains(path)) {
        return Err(Rejection::TestFile { path: path.into() });
    }
    Ok(())
}

/// The pytest sections of `setup.cfg`, `tox.ini` and `pyproject.toml`, and
/// `pytest11` entry points in any file.
fn test_config_content(file: &ChangedFile<'_>, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
    if ctx.allow_test_edits {
        return Ok(());
    }
    let (before, after) = (file.before_text(), file.after_text());
    match crate::lang::runner_config_change(file.path, before, after) {
        Some((part, runner)) => Err(Rejection::TestConfig {
            path: file.path.into(),
            part,
            runner: runner.into(),
        }),
        None => Ok(()),
    }
}

/// With `--doctest-modules`, every docstring example of a module is a test:
/// one the change removes or alters is refused (new examples may be added).
fn doctest_examples(file: &ChangedFile<'_>, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
    let Some(language) = crate::lang::of(file.path) else {
        return Ok(());
    };
    if ctx.allow_test_edits || !ctx.tests.doctest_modules {
        return Ok(());
    }
    let after: Vec<String> = language
        .doc_examples(file.after_text())
        .into_iter()
        .map(|(_, example)| example)
        .collect();
    match language
        .doc_examples(file.before_text())
        .into_iter()
        .find(|(_, example)| !after.contains(example))
    {
        Some((line, _)) => Err(Rejection::Doctest {
            path: file.path.into(),
            line,
        }),
        None => Ok(()),
    }
}

fn too_many_lines(file: &ChangedFile<'_>, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
    if ctx.task.is_some() {
        // A task's limit holds for its change as a whole (`task_size`).
        return Ok(());
    }
    let lines = swarm_patch::changed_lines(file.before_text(), file.after_text());
    let limit = ctx.limits.for_severity(file.severity);
    if lines > limit {
        return Err(Rejection::TooManyLines {
            path: file.path.into(),
            lines,
            limit,
            severity: file.severity,
        });
    }
    Ok(())
}

fn too_many_bytes(file: &ChangedFile<'_>, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
    if ctx.task.is_some() {
        return Ok(());
    }
    let bytes = swarm_patch::changed_bytes(file.before_text(), file.after_text());
    let limit = ctx.limits.bytes_for_severity(file.severity);
    if bytes > limit {
        return Err(Rejection::TooManyBytes {
            path: file.path.into(),
            bytes,
            limit,
            severity: file.severity,
        });
    }
    Ok(())
}

/// `shadows_module`, on a task's change as a whole: a module it creates
/// whose top-level name (its own, or that of the new package it starts) is
/// a standard-library module or an installed package.
pub(super) fn shadows_module(
    files: &[ChangedFile<'_>],
    ctx: &ReviewContext<'_>,
) -> Result<(), Rejection> {
    let Some(task) = &ctx.task else {
        return Ok(());
    };
    let created: Vec<&str> = files
        .iter()
        .filter(|f| f.before.is_none() && f.after.is_some())
        .map(|f| f.path)
        .collect();
    let is_package = |dir: &str| {
        ctx.root.join(dir).join("__init__.py").is_file()
            || created.contains(&format!("{dir}/__init__.py").as_str())
    };
    for path in created.iter().filter(|p| p.ends_with(".py")) {
        let Some(name) = top_level_name(path, &is_package) else {
            continue;
        };
        // A package or module that is already there keeps its name.
        let existing = ctx.root.join(&name);
        if existing.is_dir() || existing.with_extension("py").is_file() {
            continue;
        }
        if task.taken_names.contains(&name) {
            return Err(Rejection::ShadowsModule {
                path: (*path).into(),
                name,
            });
        }
    }
    Ok(())
}

/// The name a module at `path` is imported under at its import root: its
/// own, or that of the outermost folder of its package chain (folders
/// `is_package` says hold an `__init__.py`).
fn top_level_name(path: &str, is_package: &dyn Fn(&str) -> bool) -> Option<String> {
    let parts: Vec<&str> = path.split('/').collect();
    let (file, dirs) = parts.split_last()?;
    let stem = file.strip_suffix(".py")?;
    let mut top = stem.to_string();
    let mut depth = dirs.len();
    while depth > 0 && is_package(&dirs[..depth].join("/")) {
        top = dirs[depth - 1].to_string();
        depth -= 1;
    }
    Some(top)
}

fn syntax_error(file: &ChangedFile<'_>, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    let Some((language, after)) = file.source_after() else {
        return Ok(());
    };
    match language.check_syntax(file.path, after) {
        Ok(()) => Ok(()),
        Err(issue) => Err(Rejection::SyntaxError {
            path: file.path.into(),
            line: issue.line,
            column: issue.column,
        }),
    }
}

/// Plugin and hook code, or pytest imports, in a module that is not a test.
fn pytest_plugin(file: &ChangedFile<'_>, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
    let Some(language) = crate::lang::of(file.path) else {
        return Ok(());
    };
    if ctx.allow_test_edits || ctx.tests.contains(file.path) {
        return Ok(());
    }
    match language.runner_code(file.before_text(), file.after_text()) {
        Some((what, line)) => Err(Rejection::PytestPlugin {
            path: file.path.into(),
            line,
            what,
        }),
        None => Ok(()),
    }
}

/// A dangerous call or dynamic access that the file has more often after.
fn dangerous_call(file: &ChangedFile<'_>, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    let Some((language, after)) = file.source_after() else {
        return Ok(());
    };
    let old = language.dangerous_calls(file.path, file.before_text());
    let new = language.dangerous_calls(file.path, after);
    let count = |calls: &[analysis::DangerousCall], name: &str| {
        calls.iter().filter(|c| c.name == name).count()
    };
    match new
        .iter()
        .find(|call| count(&new, &call.name) > count(&old, &call.name))
    {
        Some(call) => Err(Rejection::DangerousCall {
            path: file.path.into(),
            call: call.name.clone(),
            line: call.line,
        }),
        None => Ok(()),
    }
}

/// The first probe of `kind` (see [`analysis::test_probes`]) that the
/// file has more often after the change: its name and line. Tests (by
/// name, or what the project's pytest collects) may look at their runner.
fn new_probe(
    file: &ChangedFile<'_>,
    ctx: &ReviewContext<'_>,
    kind: analysis::ProbeKind,
) -> Option<(String, usize)> {
    let is_test = is_test_path(file.path) || ctx.tests.contains(file.path);
    let (language, after) = file.source_after().filter(|_| !is_test)?;
    let of_kind = |text: &str| -> Vec<analysis::TestProbe> {
        language
            .test_probes(file.path, text)
            .into_iter()
            .filter(|p| p.kind == kind)
            .collect()
    };
    let (old, new) = (of_kind(file.before_text()), of_kind(after));
    let count = |probes: &[analysis::TestProbe], what: &str| {
        probes.iter().filter(|p| p.what == what).count()
    };
    new.iter()
        .find(|p| count(&new, &p.what) > count(&old, &p.what))
        .map(|p| (p.what.clone(), p.line))
}

/// A new read of the test runner or the caller in a module that is not a
/// test: the runner's variables, modules or arguments, the caller's stack.
fn test_environment(file: &ChangedFile<'_>, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
    match new_probe(file, ctx, analysis::ProbeKind::RunnerRead) {
        Some((what, line)) => Err(Rejection::TestEnvironment {
            path: file.path.into(),
            line,
            what,
        }),
        None => Ok(()),
    }
}

/// A new patch of the test framework, assertions, builtins or the exit in
/// a module that is not a test.
fn framework_patch(file: &ChangedFile<'_>, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
    match new_probe(file, ctx, analysis::ProbeKind::FrameworkPatch) {
        Some((what, line)) => Err(Rejection::FrameworkPatch {
            path: file.path.into(),
            line,
            what,
        }),
        None => Ok(()),
    }
}

/// A secret of the file (see [`crate::secrets::shapes`]) that occurs less
/// often after the change, or a placeholder that stands for no secret the
/// file had: a reply that changes a secret's value or drops it.
fn secret_changed(file: &ChangedFile<'_>, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    let (before, after) = (file.before_text(), file.after_text());
    for found in crate::secrets::shapes::find(before) {
        let value = &before[found.start..found.end];
        if after.matches(value).count() < before.matches(value).count() {
            let line = before[..found.start].matches('\n').count() + 1;
            return Err(Rejection::SecretChanged {
                path: file.path.into(),
                what: format!(
                    "the {} on line {line}",
                    crate::secrets::shapes::label(found.kind)
                ),
            });
        }
    }
    let known = crate::secrets::placeholders_in(before);
    for placeholder in crate::secrets::placeholders_in(after) {
        if !known.contains(&placeholder) {
            return Err(Rejection::SecretChanged {
                path: file.path.into(),
                what: format!(
                    "the placeholder `{placeholder}`, which stands for no secret of this file"
                ),
            });
        }
    }
    Ok(())
}
#[cfg(test)]
mod tests {
    use super::top_level_name;

    #[test]
    fn a_new_module_is_imported_under_its_outermost_package() {
        let packages = |dir: &str| matches!(dir, "shop" | "textkit");
        assert_eq!(top_level_name("json.py", &packages).unwrap(), "json");
        assert_eq!(top_level_name("shop/json.py", &packages).unwrap(), "shop");
        assert_eq!(
            top_level_name("textkit/__init__.py", &packages).unwrap(),
            "textkit"
        );
        assert_eq!(
            top_level_name("scripts/json.py", &packages).unwrap(),
            "json"
        );
    }
}
