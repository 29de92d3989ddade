//! The rules on the change as a whole, once every file rule holds: a
//! task's (`--task`) size, measured across its files ([`super::task_size`]),
//! and the names its new modules take; then, for every change, that it
//! changes something and was not tried before.

use super::{task_size, Rejection, WholeChange};
use crate::stage::reviewer::{ReviewContext, TaskReview};

/// `too_many_lines` for a task's change as a whole, lines moved unchanged
/// not counted.
pub(super) fn task_too_many_lines(
    change: &WholeChange<'_>,
    task: &TaskReview<'_>,
    _: &ReviewContext<'_>,
) -> Result<(), Rejection> {
    task_size::lines_within(change.files, task)
}

/// `too_many_bytes` for a task's change as a whole, likewise.
pub(super) fn task_too_many_bytes(
    change: &WholeChange<'_>,
    task: &TaskReview<'_>,
    _: &ReviewContext<'_>,
) -> Result<(), Rejection> {
    task_size::bytes_within(change.files, task)
}

/// `shadows_module`, on a task's change as a whole: a module it creates
/// whose top-level name (its own, or that of the new package it starts) is
/// a standard-library module or an installed package.
pub(super) fn shadows_module(
    change: &WholeChange<'_>,
    task: &TaskReview<'_>,
    ctx: &ReviewContext<'_>,
) -> Result<(), Rejection> {
    let created: Vec<&str> = change
        .files
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

/// `no_change`: the change alters some file.
pub(super) fn no_change(change: &WholeChange<'_>, _: &ReviewContext<'_>) -> Result<(), Rejection> {
    if change.files.is_empty() {
        return Err(Rejection::NoChange);
    }
    Ok(())
}

/// `whitespace_only`: the change alters code, not only whitespace (a file
/// created or deleted is a change whatever it holds).
pub(super) fn whitespace_only(
    change: &WholeChange<'_>,
    _: &ReviewContext<'_>,
) -> Result<(), Rejection> {
    let meaningful = change.files.iter().any(|f| {
        f.before.is_none()
            || f.after.is_none()
            || squeeze(f.before_text()) != squeeze(f.after_text())
    });
    if meaningful {
        Ok(())
    } else {
        Err(Rejection::WhitespaceOnly)
    }
}

/// `repeat`: the same change (the same base and new contents, see
/// [`WholeChange::hash`]) was not tried before in the run.
pub(super) fn repeat(change: &WholeChange<'_>, ctx: &ReviewContext<'_>) -> Result<(), Rejection> {
    if ctx.seen.contains(change.hash) {
        return Err(Rejection::Repeat);
    }
    Ok(())
}

/// Text without any whitespace, to spot whitespace-only changes.
fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
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
