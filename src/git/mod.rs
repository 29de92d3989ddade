//! The only module that uses git2 or spawns `git`.
//!
//! It owns: discovering the repository that holds a target folder, listing
//! the files of a commit, the run's worktree under
//! `<cache>/worktrees/<repo key>/<run>` (outside the repository's directory
//! tree, so pytest and pylint never walk up into the user's uncommitted
//! files), the locks that keep runs apart and tell live runs from dead ones,
//! the run branch `swarm/<run>/best`, attempt branches
//! `swarm/<run>/attempt-<k>`, and the final fast-forward of the user's
//! branch, and the past runs those refs record (listing, undoing a
//! delivery, cleaning a run up). It never prints.
//!
//! Its files import each other one way (a test keeps it so): the names of
//! a run's refs and files (`layout`), spawning git (`command`), reading the
//! repository (`repo`), locks, git's worktree entries (`admin`) and removing
//! a run's folders (`remove`) sit below the run's worktree (`workspace`,
//! `spare`, `content`, `submodule`), the past runs (`runs`, `prune`,
//! `clean`, `undo`) and the final fast-forward.

use std::path::PathBuf;

mod admin;
mod clean;
mod command;
mod content;
mod fastforward;
mod layout;
mod location;
mod lock;
mod prune;
mod refresh;
mod remove;
mod repo;
mod runs;
mod spare;
mod submodule;
mod undo;
mod workspace;

pub use clean::{CleanRefusal, Cleaned};
pub use command::SCRUBBED_ENV;
pub use content::blob_id;
pub use fastforward::{run_id_of_branch, take_command, undo_command};
pub use layout::{pre_ff_ref, undone_ref};
pub use lock::{RepoLock, REPO_LOCK};
pub use prune::LEGACY_RUNS_DIR;
pub use repo::{BASELINE_EXCLUDES, FALLBACK_EMAIL, FALLBACK_NAME};
pub use runs::{trailers, PastAttempt, PastRun};
pub use undo::{redo_command, Undo};
pub use workspace::WORKTREES_DIR;

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
    /// A spawned `git` failed; `command` is its command line.
    #[error("`{command}` failed: {message}")]
    Command { command: String, message: String },
    /// A file-system operation on a path failed.
    #[error("{op} {path}: {source}")]
    Io {
        op: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A repo-relative path that swarm refuses to write (absolute, `..`,
    /// inside `.git`, empty).
    #[error("refusing path {path:?}: {reason}")]
    InvalidPath { path: String, reason: String },
    /// A run id that cannot name a folder and a branch component.
    #[error("invalid run id {run_id:?}: use letters, digits, '-' and '_'")]
    InvalidRunId { run_id: String },
    /// The run's branch (or an attempt branch) already exists.
    #[error("branch {branch} already exists")]
    BranchExists { branch: String },
    /// `advance_best` was given a commit that does not descend from best.
    #[error("{commit} does not descend from the run branch's tip {best}")]
    NotDescendant { commit: CommitId, best: CommitId },
    /// A ref blocks the names swarm needs (`swarm` blocks `swarm/<run>/best`).
    #[error("{what} {name} exists, so swarm cannot create its refs {needed}: rename it ({fix}) and run again")]
    RunRefsBlocked {
        what: &'static str,
        name: String,
        needed: String,
        fix: String,
    },
    /// The target folder is the git dir or inside it.
    #[error("{path} is inside the repository's .git folder: point --target_dir at a folder of the working tree")]
    TargetInGitDir { path: PathBuf },
    /// The target is not inside the working tree of the repository found.
    #[error("{path} is not inside the working tree {root}: point --target_dir at a folder of the working tree")]
    TargetOutsideWorkTree { path: PathBuf, root: PathBuf },
    /// A `.git` above the target exists but cannot be opened by this user.
    #[error("{git_dir} cannot be opened as a repository by this user ({reason}): run swarm as a user who can read it, or fix its permissions")]
    Unreadable { git_dir: PathBuf, reason: String },
    /// The run worktrees would land inside the user's repository.
    #[error("the run worktree folder {path} is inside the repository at {repo}: set SWARM_CACHE_DIR to a folder outside it")]
    WorktreesInsideRepo { path: PathBuf, repo: PathBuf },
    /// Another run holds the repository's run lock.
    #[error("another swarm run ({holder}) is working on this repository (waited {waited_secs} s): wait for it to finish or raise --lock-timeout")]
    RepositoryBusy { holder: String, waited_secs: u64 },
    /// Ctrl-C while waiting for the repository's run lock.
    #[error("interrupted while waiting for another run on this repository")]
    Interrupted,
    /// A submodule initialised in the user's checkout lacks the commit the
    /// target's `HEAD` records for it.
    #[error("submodule {path}: commit {commit} is not in your checkout of it: run `git submodule update -- {path}` and try again")]
    SubmoduleCommitMissing { path: String, commit: String },
}

impl GitError {
    /// Wraps a git2 error with what was being done.
    pub(crate) fn git2(op: impl Into<String>, error: git2::Error) -> Self {
        GitError::Failed {
            op: op.into(),
            message: error.message().to_string(),
        }
    }

    /// Wraps an I/O error with the operation and path.
    pub(crate) fn io(
        op: impl Into<String>,
        path: &std::path::Path,
        source: std::io::Error,
    ) -> Self {
        GitError::Io {
            op: op.into(),
            path: path.to_path_buf(),
            source,
        }
    }
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

/// An opened repository. Holds paths only (each operation opens libgit2
/// afresh), so it is `Send + Sync` and always sees the repository's current
/// state.
#[derive(Clone, Debug)]
pub struct Repo {
    info: RepoInfo,
    /// The git dir of the worktree the target is in (`.git`, or
    /// `.git/worktrees/<name>` for a linked worktree).
    git_dir: PathBuf,
}

/// The run's worktree, run branch and attempt branches.
///
/// Dropping it without calling [`RunWorkspace::remove`] removes the worktree
/// on a best-effort basis (after an error or Ctrl-C); the branches stay.
#[derive(Debug)]
pub struct RunWorkspace {
    run_id: String,
    /// The run worktree's root, `<worktrees root>/<run>`.
    path: PathBuf,
    /// Held for the run's lifetime: a run whose lock is free is over.
    lock: Option<lock::LockFile>,
    /// Submodules left empty because they are not initialised in the
    /// user's checkout.
    empty_submodules: Vec<String>,
    /// The repository's common dir.
    common_dir: PathBuf,
    /// The worktree's admin folder, `<common>/worktrees/<name>`.
    admin_dir: PathBuf,
    /// The commit the run started from.
    base: CommitId,
    /// The run branch's tip.
    best: CommitId,
    /// Set once the worktree has been removed.
    removed: bool,
    /// What swarm put on disk in the worktree (see `content`).
    disk: std::sync::Mutex<content::DiskState>,
    /// The index refreshed once its checkout's second is over (see `refresh`).
    refresh: refresh::IndexRefresh,
}

/// What the final step did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FastForward {
    /// The user's branch and working tree now point at the run's best state
    /// (checked after the merge); `undo` is the command that takes it back.
    Updated {
        branch: String,
        from: CommitId,
        to: CommitId,
        undo: String,
    },
    /// Nothing to do: best is the starting commit.
    NothingToDo,
    /// Left for the user, nothing written, with the reason; `command` takes
    /// it by hand.
    Skipped { reason: String, command: String },
    /// The update was attempted and the checkout is not (or cannot be shown
    /// to be) exactly the starting or the final state; `command` is the next
    /// step for the user.
    Failed { reason: String, command: String },
}

/// What a path of a commit's tree is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A regular file (mode 100644).
    Regular,
    /// An executable file (mode 100755).
    Executable,
    /// A symbolic link (mode 120000): its target is a path, never followed.
    Symlink,
    /// A submodule's commit (mode 160000).
    Gitlink,
}
