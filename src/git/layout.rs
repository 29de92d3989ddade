//! What a run's refs and files are called: the run branch
//! `swarm/<run>/best`, the undo ref `refs/swarm/<run>/pre-ff` and the mark
//! `refs/swarm/<run>/undone`, and beside the run's worktree under the
//! worktrees root its lock `<run>.lock`, its scratch folder `<run>.scratch`
//! and the spare worktree's folder `spare`.
//!
//! Names only: nothing here reads or writes the repository or the disk, and
//! it imports no other file of `git/`, so every file that needs a name can
//! take it from here without depending on the file that uses it most.

use std::path::{Path, PathBuf};

use super::GitError;

/// The spare worktree's folder name under the worktrees root (see `spare`);
/// never a run id.
pub(crate) const SPARE: &str = "spare";

/// `swarm/<run>/best`.
pub(crate) fn best_branch_name(run_id: &str) -> String {
    format!("swarm/{run_id}/best")
}

/// The undo ref written before the user's branch moves.
pub fn pre_ff_ref(run_id: &str) -> String {
    format!("refs/swarm/{run_id}/pre-ff")
}

/// The ref `swarm undo` leaves in place of the undo ref: it points at the
/// commit the user's branch was taken back from (the run's result).
pub fn undone_ref(run_id: &str) -> String {
    format!("refs/swarm/{run_id}/undone")
}

/// Whether `run_id` can name a folder and a branch component: 1 to 100
/// ASCII letters, digits, `-` and `_`, not starting with `-`, and not
/// `spare`.
pub(crate) fn is_run_id(run_id: &str) -> bool {
    // The spare worktree's folder sits beside the runs' and is none of them.
    run_id != SPARE
        && !run_id.is_empty()
        && run_id.len() <= 100
        && !run_id.starts_with('-')
        && run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// [`is_run_id`], as the error [`GitError::InvalidRunId`] when it is not.
pub(crate) fn check_run_id(run_id: &str) -> Result<(), GitError> {
    if is_run_id(run_id) {
        Ok(())
    } else {
        Err(GitError::InvalidRunId {
            run_id: run_id.to_string(),
        })
    }
}

/// `<runs_dir>/<run>.lock`.
pub(crate) fn lock_file(runs_dir: &Path, run_id: &str) -> PathBuf {
    runs_dir.join(format!("{run_id}.lock"))
}

/// The run's scratch folder beside its worktree, `<run>.scratch`: where the
/// sandbox gives each tool process its HOME and TMPDIR. It goes with the
/// worktree, so a killed run leaves nothing in the system's temp folder.
pub(crate) fn scratch_of(worktree: &Path) -> PathBuf {
    let name = worktree
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    worktree.with_file_name(format!("{name}.scratch"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_name_a_folder_and_a_branch_component_but_never_the_spare() {
        assert!(is_run_id("20261122-101500-7f3a"));
        assert!(is_run_id("run_1"));
        for bad in ["", "-x", "a/b", "a b", "spare", &"x".repeat(101)] {
            assert!(!is_run_id(bad), "{bad:?}");
            assert!(
                matches!(check_run_id(bad), Err(GitError::InvalidRunId { run_id }) if run_id == bad)
            );
        }
        assert_eq!(
            scratch_of(Path::new("/w/r-1")),
            PathBuf::from("/w/r-1.scratch")
        );
        assert_eq!(
            lock_file(Path::new("/w"), "r-1"),
            PathBuf::from("/w/r-1.lock")
        );
        assert_eq!(best_branch_name("r-1"), "swarm/r-1/best");
        assert_eq!(pre_ff_ref("r-1"), "refs/swarm/r-1/pre-ff");
        assert_eq!(undone_ref("r-1"), "refs/swarm/r-1/undone");
    }
}
