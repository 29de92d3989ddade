//! git's administrative entries for linked worktrees
//! (`<common>/worktrees/<name>`): registering a run's worktree with
//! `git worktree add`, and telling which entry belongs to which worktree
//! folder.
//!
//! It only registers and reads; removing an entry with its worktree is
//! `remove`'s, and deciding which worktrees to remove is `prune`'s and
//! `clean`'s.

use std::fs;
use std::path::{Path, PathBuf};

use super::command::GitCommand;
use super::repo::canonical;
use super::{CommitId, GitError, Repo};

/// Registers the worktree at `path`, detached at `base`, and returns its
/// admin folder; with `no_checkout`, no file is written but the `.git` file.
/// Parallel checkout (git 2.32 and later; older ones ignore it) writes the
/// files of a large tree on every core.
pub(super) fn add_worktree(
    repo: &Repo,
    path: &Path,
    base: &CommitId,
    no_checkout: bool,
) -> Result<PathBuf, GitError> {
    let mut add = GitCommand::new(&repo.info().root)
        .arg("-c")
        .arg("checkout.workers=0")
        .arg("worktree")
        .arg("add");
    if no_checkout {
        add = add.arg("--no-checkout");
    }
    add.arg("--detach").arg(path).arg(base.to_string()).run()?;
    admin_dir_of(path)
}

/// The admin folder git made for the worktree at `path`, read from its
/// `.git` file (`gitdir: <common>/worktrees/<name>`).
fn admin_dir_of(path: &Path) -> Result<PathBuf, GitError> {
    let dot_git = path.join(".git");
    let text = fs::read_to_string(&dot_git).map_err(|e| GitError::io("read", &dot_git, e))?;
    let dir = text
        .lines()
        .find_map(|line| line.strip_prefix("gitdir:"))
        .map(|dir| PathBuf::from(dir.trim()))
        .ok_or_else(|| GitError::Unexpected {
            op: format!("read {}", dot_git.display()),
            found: "no gitdir line".to_string(),
        })?;
    let dir = if dir.is_absolute() {
        dir
    } else {
        path.join(dir)
    };
    canonical(&dir)
}

/// Every `<common>/worktrees/<name>` with the worktree folder it points at.
pub(crate) fn admin_entries(common_dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let Ok(entries) = fs::read_dir(common_dir.join("worktrees")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let admin = entry.path();
            let gitdir = fs::read_to_string(admin.join("gitdir")).ok()?;
            let dot_git = PathBuf::from(gitdir.trim());
            Some((admin, dot_git.parent()?.to_path_buf()))
        })
        .collect()
}
