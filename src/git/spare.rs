//! The spare worktree: a finished run's worktree kept (unregistered) for the
//! next run of the same repository, so that run does not write every file
//! of the tree again and this one does not delete them all.
//!
//! At the end of a run its worktree is *retired*: its index is copied to
//! `<worktrees root>/spare.index`, its `.git` file is removed and the folder
//! is renamed to `<worktrees root>/spare`; git's admin entry goes as it
//! always did, so `git worktree list` shows nothing of it. The next run
//! registers its worktree with `git worktree add --no-checkout` (which
//! writes no file), moves the spare into its place with the index, and
//! brings it to the base commit the way an attempt is reset: `git checkout
//! --force` (which rewrites every file whose content, size, times or inode
//! differ from what the index recorded, so a file changed in place is put
//! back too) and `git clean -ffdx` (which removes everything untracked or
//! ignored). The worktree is then exactly the base commit's files, as a
//! fresh checkout would be, for a fraction of the writes.
//!
//! A spare is only valid with its index beside it; anything half-made (a
//! crash between the steps) is removed and the run checks out afresh. A
//! repository with submodules never keeps a spare: their checkouts are not
//! ours to carry over. `swarm clean --all` removes the spare.

use std::fs;
use std::path::{Path, PathBuf};

use super::admin::add_worktree;
use super::content::checkout_exactly;
use super::layout::SPARE;
use super::lock::repo_lock_holder;
use super::remove::{remove_dir, remove_file, remove_run};
use super::{CommitId, GitError, Repo};

/// The spare's index, beside it.
const SPARE_INDEX: &str = "spare.index";

/// The spare's folder and index under `runs_dir`.
fn spare_paths(runs_dir: &Path) -> (PathBuf, PathBuf) {
    (runs_dir.join(SPARE), runs_dir.join(SPARE_INDEX))
}

/// Whether `runs_dir` holds a spare (folder and index).
pub(crate) fn has_spare(runs_dir: &Path) -> bool {
    let (folder, index) = spare_paths(runs_dir);
    folder.is_dir() && index.is_file()
}

/// Whether any part of a spare (folder or index, whole or not) is under
/// `runs_dir`.
fn any_of_a_spare(runs_dir: &Path) -> bool {
    let (folder, index) = spare_paths(runs_dir);
    fs::symlink_metadata(folder).is_ok() || fs::symlink_metadata(index).is_ok()
}

/// Removes the spare (and any half of one) under `runs_dir`.
pub(crate) fn discard_spare(runs_dir: &Path) -> Result<(), GitError> {
    let (folder, index) = spare_paths(runs_dir);
    remove_dir(&folder)?;
    remove_file(&index)
}

/// Keeps the worktree at `path` (registered with its admin folder
/// `admin_dir`) as the spare of `runs_dir`: index copied, `.git` file
/// removed, folder renamed. The caller then removes the admin folder as
/// for any finished run, which removes the worktree too when it was not
/// kept (a spare is already there, the tree has submodules, or there is no
/// index). On an error the half-made spare is removed and the worktree may
/// be gone.
pub(crate) fn retire(path: &Path, admin_dir: &Path, runs_dir: &Path) -> Result<(), GitError> {
    let (folder, index) = spare_paths(runs_dir);
    let admin_index = admin_dir.join("index");
    if any_of_a_spare(runs_dir)
        || fs::symlink_metadata(path.join(".gitmodules")).is_ok()
        || !admin_index.is_file()
    {
        return Ok(());
    }
    let kept = (|| {
        fs::copy(&admin_index, &index).map_err(|e| GitError::io("copy", &admin_index, e))?;
        let dot_git = path.join(".git");
        fs::remove_file(&dot_git).map_err(|e| GitError::io("remove", &dot_git, e))?;
        fs::rename(path, &folder).map_err(|e| GitError::io("rename", path, e))
    })();
    if kept.is_err() {
        let _ = discard_spare(runs_dir);
    }
    kept
}

/// Takes the spare of `runs_dir` as the new worktree at `path`, which
/// `git worktree add --no-checkout` has just registered (admin folder
/// `admin_dir`, holding only its `.git` file), and brings it to `base`.
/// There must be a spare ([`has_spare`]). On an error the spare is gone
/// and `path` may hold part of it: the caller removes the run and checks
/// out afresh.
fn take(path: &Path, admin_dir: &Path, runs_dir: &Path, base: &CommitId) -> Result<(), GitError> {
    let (folder, index) = spare_paths(runs_dir);
    let moved = (|| {
        let dot_git = path.join(".git");
        let spare_git = folder.join(".git");
        // Whatever a test left at the spare's `.git` is not git's.
        remove_dir(&spare_git)?;
        fs::rename(&dot_git, &spare_git).map_err(|e| GitError::io("rename", &dot_git, e))?;
        fs::remove_dir(path).map_err(|e| GitError::io("remove", path, e))?;
        fs::rename(&folder, path).map_err(|e| GitError::io("rename", &folder, e))?;
        let admin_index = admin_dir.join("index");
        fs::rename(&index, &admin_index)
            .or_else(|_| fs::copy(&index, &admin_index).and_then(|_| fs::remove_file(&index)))
            .map_err(|e| GitError::io("move", &index, e))
    })();
    if let Err(error) = moved {
        let _ = discard_spare(runs_dir);
        return Err(error);
    }
    checkout_exactly(path, base, &[])
}

/// The worktree at `path` from the spare under `runs_dir` when there is one
/// that can be taken, else checked out afresh; its admin folder.
pub(super) fn checkout_reusing_spare(
    repo: &Repo,
    runs_dir: &Path,
    path: &Path,
    base: &CommitId,
    common_dir: &Path,
) -> Result<PathBuf, GitError> {
    if !has_spare(runs_dir) {
        let _ = discard_spare(runs_dir);
        return add_worktree(repo, path, base, false);
    }
    let admin = add_worktree(repo, path, base, true)?;
    match take(path, &admin, runs_dir, base) {
        Ok(()) => Ok(admin),
        Err(e) => {
            tracing::debug!("the spare worktree could not be taken: {e}");
            remove_run(path, Some(&admin), common_dir)?;
            add_worktree(repo, path, base, false)
        }
    }
}

impl Repo {
    /// Removes the repository's spare worktree under `worktrees_root` (see
    /// [`Repo::worktrees_root`]), unless a run holds the repository
    /// (it may be taking the spare). The spare's folder when one was removed.
    /// With `dry_run`, only says which folder would go.
    pub fn discard_spare_worktree(
        &self,
        worktrees_root: &Path,
        dry_run: bool,
    ) -> Result<Option<PathBuf>, GitError> {
        if repo_lock_holder(&self.info().common_dir).is_some() {
            return Ok(None);
        }
        let there = any_of_a_spare(worktrees_root);
        if !dry_run {
            discard_spare(worktrees_root)?;
        }
        Ok(there.then(|| spare_paths(worktrees_root).0))
    }
}
