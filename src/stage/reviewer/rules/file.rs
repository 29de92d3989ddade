//! The file rules: each looks at one file the change alters, after the
//! change is applied in memory, through [`ChangedFile`] (its text before
//! and after, its severity) and asks the file's language what its code
//! does. Whether `--allow-test-edits` lifts a rule is said by its entry in
//! [`super::RULES`], not here.

use super::{ChangedFile, Rejection};
use crate::stage::is_test_path;
use crate::stage::reviewer::ReviewContext;
use swarm_analysis as analysis;

/// The pytest sections of `setup.cfg`, `tox.ini` and `pyproject.toml`, and
/// `pytest11` entry points in any file.
pub(super) fn test_config_content(
    file: &ChangedFile<'_>,
    _: &ReviewContext<'_>,
) -> Result<(), Rejection> {
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
pub(super) fn doctest_examples(
    file: &ChangedFile<'_>,
    ctx: &ReviewContext<'_>,
) -> Result<(), Rejection> {
    let Some(language) = crate::lang::of(file.path) else {
        return Ok(());
    };
    if !ctx.tests.doctest_modules {
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

pub(super) fn too_many_lines(
    file: &ChangedFile<'_>,
    ctx: &ReviewContext<'_>,
) -> Result<(), Rejection> {
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

pub(super) fn too_many_bytes(
    file: &ChangedFile<'_>,
    ctx: &ReviewContext<'_>,
) -> Result<(), Rejection> {
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
pub(super) fn syntax_error(file: &ChangedFile<'_>, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    let Some((language, after)) = file.source_after() else {
        return Ok(());
    };
    match language.check_syntax(file.path, after) {
        Ok(()) => Ok(()),
        Err(issue) => Err(Rejection::SyntaxError {
            path: file.path.into(),
            language: language.name(),
            line: issue.line,
            column: issue.column,
        }),
    }
}

/// Plugin and hook code, or pytest imports, in a module that is not a test.
pub(super) fn pytest_plugin(
    file: &ChangedFile<'_>,
    ctx: &ReviewContext<'_>,
) -> Result<(), Rejection> {
    let Some(language) = crate::lang::of(file.path) else {
        return Ok(());
    };
    if ctx.tests.contains(file.path) {
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
pub(super) fn dangerous_call(
    file: &ChangedFile<'_>,
    _: &ReviewContext<'_>,
) -> Result<(), Rejection> {
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
pub(super) fn test_environment(
    file: &ChangedFile<'_>,
    ctx: &ReviewContext<'_>,
) -> Result<(), Rejection> {
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
pub(super) fn framework_patch(
    file: &ChangedFile<'_>,
    ctx: &ReviewContext<'_>,
) -> Result<(), Rejection> {
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
pub(super) fn secret_changed(
    file: &ChangedFile<'_>,
    _: &ReviewContext<'_>,
) -> Result<(), Rejection> {
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
