//! Locks that die with the process: `flock(2)` on a lock file.
//!
//! A run holds two of them for its whole lifetime: the repository's run lock
//! (`<git-common-dir>/swarm/run.lock`, so a second run on the same
//! repository waits or stops) and its own run lock
//! (`<worktrees root>/<run>.lock`, so pruning can tell a live run from the
//! leftovers of a killed one). The kernel releases a `flock` when the last
//! descriptor of the open file goes away, so a crash, `kill -9` or power-off
//! never leaves a lock behind, and no process id is ever compared (a reused
//! PID proves nothing). Lock files are opened with `O_CLOEXEC` (the standard
//! library's default), so the git, pytest and pylint processes swarm starts
//! never inherit them and cannot keep a dead run "alive".
//!
//! The file's content is informational only (which run holds it, for
//! messages); whether a lock is held is asked of the kernel, never read from
//! the file.

use std::fs::{self, File};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::layout::lock_file;
use super::GitError;
use crate::lockfile::{self, Attempt};

/// An exclusive `flock` on a lock file, released when dropped.
#[derive(Debug)]
pub(crate) struct LockFile {
    file: File,
    path: PathBuf,
}

/// What trying a lock found.
#[derive(Debug)]
pub(crate) enum TryLock {
    /// The lock is ours now.
    Acquired(LockFile),
    /// Another open file holds it; its content names the holder.
    Held { content: String },
    /// There is no lock file (only when not creating one).
    Missing,
}

impl LockFile {
    /// Tries once to lock `path` without waiting; creates the file when
    /// `create` is set. A lock file that another process removed or replaced
    /// between the open and the lock is retried, so the lock held always
    /// belongs to the file now at `path`.
    pub(crate) fn try_lock(path: &Path, create: bool) -> Result<TryLock, GitError> {
        let attempt =
            lockfile::try_lock(path, create).map_err(|e| GitError::io("lock", path, e))?;
        Ok(match attempt {
            Attempt::Locked(file) => TryLock::Acquired(LockFile {
                file,
                path: path.to_path_buf(),
            }),
            Attempt::Held => TryLock::Held {
                content: read_content(path),
            },
            Attempt::Missing => TryLock::Missing,
        })
    }

    /// Replaces the file's content (who holds the lock).
    pub(crate) fn write_content(&mut self, content: &str) -> Result<(), GitError> {
        let path = self.path.clone();
        let io = |e| GitError::io("write", &path, e);
        self.file.set_len(0).map_err(io)?;
        self.file.seek(SeekFrom::Start(0)).map_err(io)?;
        self.file.write_all(content.as_bytes()).map_err(io)?;
        self.file.flush().map_err(io)
    }

    /// Deletes the lock file while still holding the lock, then releases it.
    pub(crate) fn remove(self) -> Result<(), GitError> {
        match fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(GitError::io("remove", &self.path, e)),
        }
    }
}

/// The repository's run lock: at most one swarm run per repository.
#[derive(Debug)]
pub struct RepoLock {
    _lock: LockFile,
}

/// Where the repository's run lock lives, relative to the git common dir.
pub const REPO_LOCK: &str = "swarm/run.lock";

impl RepoLock {
    /// Takes the run lock of the repository whose git common dir is
    /// `common_dir` for run `run_id`, waiting up to `timeout` while another
    /// run holds it. `on_wait` is called once, with the other run's id, when
    /// waiting starts; `cancelled` is polled while waiting.
    ///
    /// Fails with [`GitError::RepositoryBusy`] naming the other run when the
    /// timeout passes, and [`GitError::Interrupted`] when `cancelled` says so.
    pub fn acquire(
        common_dir: &Path,
        run_id: &str,
        timeout: Duration,
        on_wait: &dyn Fn(&str),
        cancelled: &dyn Fn() -> bool,
    ) -> Result<RepoLock, GitError> {
        let path = common_dir.join(REPO_LOCK);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| GitError::io("create", parent, e))?;
        }
        let started = Instant::now();
        let mut announced = false;
        loop {
            match LockFile::try_lock(&path, true)? {
                TryLock::Acquired(mut lock) => {
                    lock.write_content(&format!("run {run_id}\npid {}\n", std::process::id()))?;
                    return Ok(RepoLock { _lock: lock });
                }
                TryLock::Held { content } => {
                    let holder = holder_of(&content);
                    if started.elapsed() >= timeout {
                        return Err(GitError::RepositoryBusy {
                            holder,
                            waited_secs: timeout.as_secs(),
                        });
                    }
                    if !announced {
                        on_wait(&holder);
                        announced = true;
                    }
                }
                TryLock::Missing => {}
            }
            if cancelled() {
                return Err(GitError::Interrupted);
            }
            let left = timeout.saturating_sub(started.elapsed());
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
    }
}

/// The run id recorded in a lock file's content (`run <id>`), or a phrase
/// that says it is unknown.
pub(crate) fn holder_of(content: &str) -> String {
    content
        .lines()
        .find_map(|line| line.strip_prefix("run "))
        .map(|id| id.trim().to_string())
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| "(run id not recorded yet)".to_string())
}

fn read_content(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(file) = File::open(path) {
        let _ = file.take(4096).read_to_string(&mut text);
    }
    text
}

/// Whether the run's own lock `<worktrees_root>/<run>.lock` is held by a
/// live process.
pub(crate) fn run_lock_held(worktrees_root: &Path, run_id: &str) -> bool {
    matches!(
        LockFile::try_lock(&lock_file(worktrees_root, run_id), false),
        Ok(TryLock::Held { .. })
    )
}

/// The run id holding the repository's run lock, if a live run holds it.
pub(crate) fn repo_lock_holder(common_dir: &Path) -> Option<String> {
    match LockFile::try_lock(&common_dir.join(REPO_LOCK), false) {
        Ok(TryLock::Held { content }) => Some(holder_of(&content)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_refused_until_released_and_names_its_holder() {
        let dir = tempfile::tempdir().expect("tmp");
        let common = dir.path();
        let first = RepoLock::acquire(common, "run-a", Duration::ZERO, &|_| {}, &|| false)
            .expect("free lock");
        let waited = std::cell::Cell::new(None);
        let busy = RepoLock::acquire(
            common,
            "run-b",
            Duration::from_millis(300),
            &|holder| waited.set(Some(holder.to_string())),
            &|| false,
        );
        match busy {
            Err(GitError::RepositoryBusy { holder, .. }) => assert_eq!(holder, "run-a"),
            other => panic!("expected RepositoryBusy, got {other:?}"),
        }
        assert_eq!(waited.take().as_deref(), Some("run-a"));
        let cancelled =
            RepoLock::acquire(common, "run-b", Duration::from_secs(30), &|_| {}, &|| true);
        assert!(matches!(cancelled, Err(GitError::Interrupted)));
        drop(first);
        // Another test thread may fork between our open and close; its child
        // shares the locked file until it execs, so the release can lag by
        // that moment. Waiting a little is what a real second run does too.
        RepoLock::acquire(common, "run-b", Duration::from_secs(10), &|_| {}, &|| false)
            .expect("released with its owner");
    }

    #[test]
    fn a_removed_lock_file_is_missing_and_a_stale_one_can_be_taken() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("r.lock");
        assert!(matches!(
            LockFile::try_lock(&path, false).expect("try"),
            TryLock::Missing
        ));
        fs::write(&path, "run r\n").expect("stale lock file");
        let TryLock::Acquired(lock) = LockFile::try_lock(&path, false).expect("try") else {
            panic!("a lock file nobody holds can be taken");
        };
        assert!(matches!(
            LockFile::try_lock(&path, false).expect("try"),
            TryLock::Held { content } if holder_of(&content) == "r"
        ));
        lock.remove().expect("remove");
        assert!(!path.exists());
        assert_eq!(holder_of(""), "(run id not recorded yet)");
    }
}
