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
//! delivery, cleaning a run up). It never prints, and its errors state
//! facts: which flag or command helps is said where an error reaches the
//! user, not here.
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
mod ignored;
mod layout;
mod location;
mod lock;
mod prune;
mod publish;
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
pub use ignored::version as git_version;
pub use layout::{pre_ff_ref, undone_ref};
pub use lock::{RepoLock, REPO_LOCK};
pub use prune::LEGACY_RUNS_DIR;
pub use repo::{BASELINE_EXCLUDES, FALLBACK_EMAIL, FALLBACK_NAME};
pub use runs::{trailers, PastAttempt, PastRun};
pub use undo::{redo_command, Undo, UndoRefusal};
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
///
/// Each states facts only, with the values as fields and the error it came
/// from as its source (git2's, with its class and code; an io error; a
/// spawned git's output). What the user can do about it — a flag to pass,
/// a command to run — is added where the error reaches the user (see
/// `From<GitError> for SwarmError`); a command that is itself a fact, such
/// as the one that renames a blocking branch, is a field.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// Pushing a branch for review failed (credentials, a protected
    /// branch, no such remote): git's own words.
    #[error("cannot push {branch} to {remote}: {message}")]
    Push {
        remote: String,
        branch: String,
        message: String,
    },
    /// The repository found has no working tree.
    #[error("{path} is a bare repository")]
    Bare { path: PathBuf },
    /// The repository's `HEAD` is unborn.
    #[error("the repository at {path} has no commits yet")]
    NoCommits { path: PathBuf },
    /// A libgit2 call failed: what was being done, and git2's error.
    #[error("git: {op}: {}", .source.message())]
    Failed {
        op: String,
        #[source]
        source: git2::Error,
    },
    /// The repository or a run's files are not as an operation needs them
    /// (no such branch, a run folder already there).
    #[error("git: {op}: {found}")]
    Unexpected { op: String, found: String },
    /// A spawned `git` could not be started; `command` is its command line.
    #[error("`{command}` failed: could not start git: {source}")]
    NotStarted {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// A spawned `git` exited with a failure; `command` is its command
    /// line, `code` its exit code (`None` when a signal ended it), and
    /// `stdout` and `stderr` what it wrote.
    #[error("`{command}` failed: {}", command::first_lines(.stderr))]
    Command {
        command: String,
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
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
    #[error(
        "invalid run id {run_id:?}: not 1 to 100 letters, digits, '-' and '_' (nor \"spare\", nor starting with '-')"
    )]
    InvalidRunId { run_id: String },
    /// The run's branch (or an attempt branch) already exists.
    #[error("branch {branch} already exists")]
    BranchExists { branch: String },
    /// `advance_best` was given a commit that does not descend from best.
    #[error("{commit} does not descend from the run branch's tip {best}")]
    NotDescendant { commit: CommitId, best: CommitId },
    /// A ref blocks the names swarm needs (`swarm` blocks `swarm/<run>/best`);
    /// `rename` is the git command that renames it.
    #[error("{what} {name} exists, so swarm cannot create its refs {needed}")]
    RunRefsBlocked {
        what: &'static str,
        name: String,
        needed: String,
        rename: String,
    },
    /// The target folder is the git dir or inside it.
    #[error("{path} is inside the repository's .git folder")]
    TargetInGitDir { path: PathBuf },
    /// The target is not inside the working tree of the repository found.
    #[error("{path} is not inside the working tree {root}")]
    TargetOutsideWorkTree { path: PathBuf, root: PathBuf },
    /// A `.git` above the target exists but cannot be opened by this user;
    /// `source` is why, when reading it failed (without one, it can be read
    /// but is no repository git can open from the target).
    #[error(
        "{git_dir} cannot be opened as a repository by this user ({})",
        unreadable_reason(.source.as_ref())
    )]
    Unreadable {
        git_dir: PathBuf,
        #[source]
        source: Option<std::io::Error>,
    },
    /// The run worktrees would land inside the user's repository.
    #[error("the run worktree folder {path} is inside the repository at {repo}")]
    WorktreesInsideRepo { path: PathBuf, repo: PathBuf },
    /// Another run holds the repository's run lock.
    #[error("another swarm run ({holder}) is working on this repository (waited {waited_secs} s)")]
    RepositoryBusy { holder: String, waited_secs: u64 },
    /// Ctrl-C while waiting for the repository's run lock.
    #[error("interrupted while waiting for another run on this repository")]
    Interrupted,
    /// A submodule initialised in the user's checkout lacks the commit the
    /// target's `HEAD` records for it.
    #[error("submodule {path}: commit {commit} is not in your checkout of it")]
    SubmoduleCommitMissing { path: String, commit: String },
}

/// Why a `.git` could not be opened, as [`GitError::Unreadable`] says it.
fn unreadable_reason(source: Option<&std::io::Error>) -> String {
    match source {
        Some(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            "permission denied".to_string()
        }
        Some(e) => e.to_string(),
        None => "not a valid repository, or on another filesystem than the target".to_string(),
    }
}

impl GitError {
    /// A git2 error with what was being done; git2's error is kept as the
    /// source.
    pub(crate) fn git2(op: impl Into<String>, error: git2::Error) -> Self {
        GitError::Failed {
            op: op.into(),
            source: error,
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
    /// Untracked folders (worktree-relative) a reset keeps: what the run
    /// laid there for its tools (see [`RunWorkspace::keep_untracked`]).
    kept: Vec<String>,
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

#[cfg(test)]
mod tests {
    use super::command::GitCommand;
    use super::*;

    #[test]
    fn a_git2_failure_keeps_git2s_error_with_its_class_and_code() {
        let dir = tempfile::tempdir().expect("tmp");
        let Err(cause) = git2::Repository::open(dir.path()) else {
            panic!("no repository there");
        };
        let message = cause.message().to_string();
        let error = GitError::git2("open the folder", cause);
        assert_eq!(
            error.to_string(),
            format!("git: open the folder: {message}")
        );
        let source = std::error::Error::source(&error)
            .and_then(|s| s.downcast_ref::<git2::Error>())
            .expect("git2's error is the source");
        assert_eq!(source.code(), git2::ErrorCode::NotFound);
        assert_eq!(source.class(), git2::ErrorClass::Repository);
    }

    #[test]
    fn a_failed_git_command_keeps_its_exit_code_and_output() {
        let dir = tempfile::tempdir().expect("tmp");
        let error = GitCommand::new(dir.path())
            .arg("no-such-subcommand")
            .run()
            .expect_err("git has no such command");
        let GitError::Command {
            command,
            code,
            stdout,
            stderr,
        } = &error
        else {
            panic!("expected a failed command, got {error:?}");
        };
        assert_eq!(command, "git no-such-subcommand");
        assert_eq!(*code, Some(1));
        assert_eq!(stdout, "");
        assert!(stderr.contains("is not a git command"), "{stderr}");
        assert_eq!(
            error.to_string(),
            format!("`{command}` failed: {}", command::first_lines(stderr))
        );
    }

    #[test]
    fn an_unreadable_git_dir_says_why_from_its_io_error() {
        let unreadable = |source| GitError::Unreadable {
            git_dir: PathBuf::from("repo/.git"),
            source,
        };
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let error = unreadable(Some(denied));
        assert_eq!(
            error.to_string(),
            "repo/.git cannot be opened as a repository by this user (permission denied)"
        );
        assert!(std::error::Error::source(&error).is_some());
        assert_eq!(
            unreadable(None).to_string(),
            "repo/.git cannot be opened as a repository by this user (not a valid repository, or on another filesystem than the target)"
        );
    }
}
