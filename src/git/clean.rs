//! Removing a run for good: its refs (`swarm/<run>/*` branches and
//! `refs/swarm/<run>/*`, the undo ref included) and what it left on disk
//! (its worktree folder and scratch folder under the worktrees root, its
//! lock file, git's admin entry for its worktree).
//!
//! A run in progress is never touched: its lock is taken before anything is
//! removed and held while removing, so a run cannot start using what is
//! being removed. Other runs' refs and the user's branches are never
//! touched: only refs whose second component is the run id are deleted.

use std::fs;
use std::path::{Path, PathBuf};

use super::admin::admin_entries;
use super::layout::{lock_file, scratch_of};
use super::lock::{repo_lock_holder, LockFile, TryLock};
use super::remove::remove_run;
use super::runs::PastRun;
use super::{GitError, Repo};

/// What cleaning a run removed (or, for a dry run, would remove).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Cleaned {
    pub run_id: String,
    /// Full ref names.
    pub refs: Vec<String>,
    /// Folders and files on disk.
    pub paths: Vec<PathBuf>,
    /// The undo ref was among the refs: the delivery can no longer be
    /// undone by swarm.
    pub undo_ref_removed: bool,
}

/// Why a run was left alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CleanRefusal {
    /// A live process holds the run's lock.
    InProgress { run_id: String },
}

impl std::fmt::Display for CleanRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CleanRefusal::InProgress { run_id } => {
                write!(f, "run {run_id} is in progress; wait for it to finish")
            }
        }
    }
}

impl Repo {
    /// Removes `run`'s refs and leftovers (see the module docs); with
    /// `dry_run`, only says what it would remove. `worktrees_root` (see
    /// [`Repo::worktrees_root`]) is where its worktree would be.
    pub fn clean_run(
        &self,
        run: &PastRun,
        worktrees_root: Option<&Path>,
        dry_run: bool,
    ) -> Result<Result<Cleaned, CleanRefusal>, GitError> {
        let id = run.run_id.as_str();
        let in_progress = CleanRefusal::InProgress {
            run_id: id.to_string(),
        };
        if repo_lock_holder(&self.info().common_dir).as_deref() == Some(id) {
            return Ok(Err(in_progress));
        }
        // Held until the end: no run of this id can start meanwhile.
        let lock = match worktrees_root {
            Some(root) => match LockFile::try_lock(&lock_file(root, id), false)? {
                TryLock::Held { .. } => return Ok(Err(in_progress)),
                TryLock::Acquired(lock) => Some(lock),
                TryLock::Missing => None,
            },
            None => None,
        };
        let mut cleaned = Cleaned {
            run_id: id.to_string(),
            undo_ref_removed: run.pre_ff.is_some(),
            ..Cleaned::default()
        };
        if let Some(root) = worktrees_root {
            let folder = root.join(id);
            for path in [folder.clone(), scratch_of(&folder), lock_file(root, id)] {
                if fs::symlink_metadata(&path).is_ok() {
                    cleaned.paths.push(path);
                }
            }
            for (admin, worktree) in admin_entries(&self.info().common_dir) {
                if worktree == folder {
                    cleaned.paths.push(admin);
                }
            }
            if !dry_run {
                remove_run(&folder, None, &self.info().common_dir)?;
            }
        }
        let git = self.objects()?;
        for name in &run.refs {
            let Ok(mut reference) = git.find_reference(name) else {
                continue;
            };
            if !dry_run {
                reference
                    .delete()
                    .map_err(|e| GitError::git2(format!("delete {name}"), e))?;
            }
            cleaned.refs.push(name.clone());
        }
        if let Some(lock) = lock {
            if !dry_run {
                lock.remove()?;
            }
        }
        if !dry_run {
            if let Some(root) = worktrees_root {
                // The repository's folder goes too once no run is left in it.
                let _ = fs::remove_dir(root);
            }
        }
        Ok(Ok(cleaned))
    }
}
