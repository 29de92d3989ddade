//! The only module that uses git2 or spawns `git`.
//!
//! It owns: discovering the repository that holds a target folder, listing
//! tracked files, the run's worktree under `<git-common-dir>/swarm/worktrees/<run>`,
//! the run branch `swarm/<run>/best`, attempt branches `swarm/<run>/attempt-<k>`,
//! and the final fast-forward of the user's branch. It never prints.

use std::path::{Path, PathBuf};

/// A commit id as 40 hex digits; the rest of swarm never sees `git2::Oid`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CommitId(pub String);

impl std::fmt::Display for CommitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl CommitId {
    /// The first 10 hex digits, for messages.
    pub fn short(&self) -> &str {
        &self.0[..self.0.len().min(10)]
    }
}

/// Errors of git operations, each naming what was being done.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{path} is a bare repository: run swarm on a checkout with a working tree")]
    Bare { path: PathBuf },
    #[error("the repository at {path} has no commits yet: commit your files first (git add -A && git commit)")]
    NoCommits { path: PathBuf },
    #[error("git: {op}: {message}")]
    Failed { op: String, message: String },
}

/// Where the target sits in its repository.
#[derive(Clone, Debug)]
pub struct RepoInfo {
    /// The repository's working tree root (absolute, canonical).
    pub root: PathBuf,
    /// The git common dir (absolute): `.git` of the main worktree.
    pub common_dir: PathBuf,
    /// The target folder relative to `root`, with `/` separators and no
    /// trailing slash; empty when the target is the root.
    pub target_rel: String,
    /// The commit `HEAD` points at.
    pub head: CommitId,
    /// The branch `HEAD` is on (`main`), or `None` when detached.
    pub branch: Option<String>,
}

/// A file to write in a new commit: repo-relative path; `None` deletes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileWrite {
    pub path: String,
    pub content: Option<Vec<u8>>,
}

/// An opened repository.
pub struct Repo {
    _private: (),
}

impl Repo {
    /// Opens the repository that contains `target` (an existing folder).
    /// `Ok(None)` when the folder is in no repository.
    pub fn open(target: &Path) -> Result<Option<Repo>, GitError> {
        let _ = target;
        unimplemented!()
    }

    /// Initializes a repository in `dir` and commits every file in it
    /// (honouring a `.gitignore` if any) as the baseline commit.
    pub fn init_with_baseline(dir: &Path, message: &str) -> Result<Repo, GitError> {
        let _ = (dir, message);
        unimplemented!()
    }

    /// Facts about the repository and the target folder.
    pub fn info(&self) -> &RepoInfo {
        unimplemented!()
    }

    /// Tracked files (from the index, like `git ls-files`) under the target
    /// folder, repo-relative, sorted.
    pub fn tracked_files(&self) -> Result<Vec<String>, GitError> {
        unimplemented!()
    }

    /// Repo-relative paths with uncommitted changes: staged, modified, or
    /// untracked (not ignored).
    pub fn dirty_paths(&self) -> Result<Vec<String>, GitError> {
        unimplemented!()
    }
}

/// The run's worktree, run branch and attempt branches.
pub struct RunWorkspace {
    _private: (),
}

impl RunWorkspace {
    /// Creates the worktree at `<common-dir>/swarm/worktrees/<run_id>`,
    /// detached at `base`, and the branch `swarm/<run_id>/best` at `base`.
    pub fn create(repo: &Repo, run_id: &str, base: &CommitId) -> Result<Self, GitError> {
        let _ = (repo, run_id, base);
        unimplemented!()
    }

    /// The worktree's root folder.
    pub fn path(&self) -> &Path {
        unimplemented!()
    }

    /// The run branch's tip.
    pub fn best(&self) -> &CommitId {
        unimplemented!()
    }

    /// The run branch's name, `swarm/<run>/best`.
    pub fn best_branch(&self) -> String {
        unimplemented!()
    }

    /// Writes (or deletes) files in the worktree, paths repo-relative.
    pub fn write_files(&self, files: &[FileWrite]) -> Result<(), GitError> {
        let _ = files;
        unimplemented!()
    }

    /// Commits best's tree plus `files` (built from blobs, not from the
    /// worktree) with parent best, on the new branch `swarm/<run>/attempt-<k>`.
    pub fn commit_attempt(
        &self,
        k: u32,
        files: &[FileWrite],
        message: &str,
    ) -> Result<CommitId, GitError> {
        let _ = (k, files, message);
        unimplemented!()
    }

    /// Moves the run branch to `commit` (a descendant of best).
    pub fn advance_best(&mut self, commit: &CommitId) -> Result<(), GitError> {
        let _ = commit;
        unimplemented!()
    }

    /// Makes the worktree's files exactly those of `commit`, removing
    /// untracked files such as caches.
    pub fn reset_to(&self, commit: &CommitId) -> Result<(), GitError> {
        let _ = commit;
        unimplemented!()
    }

    /// Removes the worktree folder and its administrative entry; branches stay.
    pub fn remove(self) -> Result<(), GitError> {
        unimplemented!()
    }
}

/// What the final step did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FastForward {
    /// The user's branch and working tree now point at the run's best state.
    Updated {
        branch: String,
        from: CommitId,
        to: CommitId,
    },
    /// Nothing to do: best is the starting commit.
    NothingToDo,
    /// Left for the user, with the reason; `command` takes it by hand.
    Skipped { reason: String, command: String },
}

impl Repo {
    /// Fast-forwards the user's branch to `to`, updating the working tree,
    /// only if `HEAD` is still `expected_head` on the same branch and none of
    /// `touched` (repo-relative) has uncommitted changes.
    pub fn fast_forward(
        &self,
        expected_head: &CommitId,
        to: &CommitId,
        run_branch: &str,
        touched: &[String],
    ) -> Result<FastForward, GitError> {
        let _ = (expected_head, to, run_branch, touched);
        unimplemented!()
    }
}

impl Repo {
    /// Removes leftover worktrees of crashed runs.
    pub fn prune_stale_runs(&self) -> Result<(), GitError> {
        unimplemented!()
    }

    /// The commit a local branch points at.
    pub fn branch_tip(&self, name: &str) -> Result<Option<CommitId>, GitError> {
        let _ = name;
        unimplemented!()
    }
}

impl Repo {
    /// `git log --all --graph --oneline --decorate` of the repository.
    pub fn log_graph(&self) -> Result<String, GitError> {
        unimplemented!()
    }
}
