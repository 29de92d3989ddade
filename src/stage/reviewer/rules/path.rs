//! The path rules: each looks at one target-relative path the reply
//! names, before anything is applied, and reads the target only through
//! `ReviewContext::root` (symlinks). Whether `--allow-test-edits` lifts a
//! rule is said by its entry in [`super::RULES`], not here.

use std::path::{Component, Path};

use super::Rejection;
use crate::stage::reviewer::ReviewContext;
use crate::stage::{is_startup_file, is_test_path};

pub(super) fn empty_path(path: &str, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    if path.trim().is_empty() {
        return Err(Rejection::EmptyPath);
    }
    Ok(())
}

pub(super) fn absolute_path(path: &str, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    let bytes = path.as_bytes();
    let drive = bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic();
    if Path::new(path).is_absolute() || path.starts_with(['/', '\\', '~']) || drive {
        return Err(Rejection::AbsolutePath { path: path.into() });
    }
    Ok(())
}

pub(super) fn outside_target(path: &str, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    if Path::new(path)
        .components()
        .any(|c| matches!(c, Component::ParentDir))
    {
        return Err(Rejection::OutsideTarget { path: path.into() });
    }
    Ok(())
}

pub(super) fn inside_git(path: &str, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    if path
        .split('/')
        .any(|part| part.eq_ignore_ascii_case(".git"))
    {
        return Err(Rejection::InsideGit { path: path.into() });
    }
    Ok(())
}

pub(super) fn inside_submodule(path: &str, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
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
pub(super) fn symlink_out(path: &str, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
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
pub(super) fn dependencies(path: &str, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    if crate::lang::is_dependency(path) {
        return Err(Rejection::Dependencies { path: path.into() });
    }
    Ok(())
}

pub(super) fn startup_file(path: &str, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    if is_startup_file(path) {
        return Err(Rejection::StartupFile { path: path.into() });
    }
    Ok(())
}

/// `conftest.py`, `pytest.ini` and the other whole-file pytest configs.
pub(super) fn test_config_file(path: &str, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    if let Some((part, runner)) = crate::lang::runner_config_file(path) {
        return Err(Rejection::TestConfig {
            path: path.into(),
            part,
            runner: runner.into(),
        });
    }
    Ok(())
}

pub(super) fn test_file(path: &str, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
    if is_test_path(path) || ctx.tests.contains(path) {
        return Err(Rejection::TestFile { path: path.into() });
    }
    Ok(())
}
