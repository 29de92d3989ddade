//! Where run worktrees may live: never inside the repository's working
//! tree(s) or git dirs, whatever symbolic links lie on the way.

use std::fs;
use std::path::{Component, Path, PathBuf};

use super::{GitError, Repo};

/// Refuses a worktrees folder inside the repository's working tree(s) or
/// git dirs. `path` need not exist yet: its nearest existing ancestor is
/// resolved (symbolic links included) and the rest appended.
pub(super) fn check_outside_repo(repo: &Repo, path: &Path) -> Result<(), GitError> {
    let resolved = resolve_lexically(path);
    let info = repo.info();
    let mut guarded = vec![
        info.root.clone(),
        info.common_dir.clone(),
        repo.git_dir.clone(),
    ];
    if info.common_dir.file_name().is_some_and(|n| n == ".git") {
        if let Some(main_root) = info.common_dir.parent() {
            guarded.push(main_root.to_path_buf());
        }
    }
    if guarded.iter().any(|dir| resolved.starts_with(dir)) {
        return Err(GitError::WorktreesInsideRepo {
            path: resolved,
            repo: info.root.clone(),
        });
    }
    Ok(())
}

/// `path` made absolute, with its longest existing prefix canonicalized and
/// `.`/`..` folded.
pub(super) fn resolve_lexically(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut folded = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::ParentDir => {
                folded.pop();
            }
            Component::CurDir => {}
            other => folded.push(other),
        }
    }
    let mut existing = folded.as_path();
    let mut rest = Vec::new();
    while fs::symlink_metadata(existing).is_err() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => break,
        }
    }
    let mut resolved = fs::canonicalize(existing).unwrap_or_else(|_| existing.to_path_buf());
    for name in rest.into_iter().rev() {
        resolved.push(name);
    }
    resolved
}
