//! A fresh checkout's index made trustworthy in the background.
//!
//! git keeps each file's times in the index and trusts them only for files
//! older than the index itself (its "racy git" rule, in whole seconds where
//! git is built without nanosecond times). Right after a checkout every
//! file is as new as the index, so the first `git checkout --force` of an
//! attempt's reset reads and hashes every file again: 0.15 s at 10,000
//! files, on every run that checked out afresh. Once the clock has moved
//! past that second, `git update-index --refresh` rewrites the index in a
//! few milliseconds and the resets that follow trust it.
//!
//! The refresh runs on a thread from the next second on, while the audit
//! and the model work. A reset, or the worktree's end, first waits for a
//! refresh under way and calls off one not begun, so the worktree's index
//! never has two writers.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::command::GitCommand;

/// Past the next second, by this much: the file system's clock may lag
/// the system's by a tick.
const MARGIN: Duration = Duration::from_millis(50);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for its second.
    Due,
    Running,
    /// Done, failed or called off.
    Over,
}

type Shared = Arc<(Mutex<Phase>, Condvar)>;

/// The background refresh of one worktree's index.
#[derive(Debug)]
pub(crate) struct IndexRefresh {
    shared: Shared,
}

impl IndexRefresh {
    /// Refreshes the index of the worktree at `path` once the second its
    /// files were written in is over.
    pub fn start(path: &Path) -> Self {
        let shared: Shared = Arc::new((Mutex::new(Phase::Due), Condvar::new()));
        let theirs = Arc::clone(&shared);
        let path = path.to_path_buf();
        let due = Instant::now() + until_next_second() + MARGIN;
        let spawned = std::thread::Builder::new()
            .name("index-refresh".to_string())
            .spawn(move || {
                if !wait_until(&theirs, due) {
                    return;
                }
                let refreshed = GitCommand::new(&path)
                    .arg("update-index")
                    .arg("-q")
                    .arg("--refresh")
                    .output();
                if let Err(e) = refreshed {
                    tracing::debug!("the worktree's index was not refreshed: {e}");
                }
                *lock(&theirs) = Phase::Over;
                theirs.1.notify_all();
            });
        if spawned.is_err() {
            *lock(&shared) = Phase::Over;
        }
        IndexRefresh { shared }
    }

    /// Waits for a refresh under way; calls off one not begun.
    pub fn settle(&self) {
        let mut phase = lock(&self.shared);
        if *phase == Phase::Due {
            *phase = Phase::Over;
            self.shared.1.notify_all();
        }
        while *phase == Phase::Running {
            phase = self.shared.1.wait(phase).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for IndexRefresh {
    fn drop(&mut self) {
        self.settle();
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, Phase> {
    shared.0.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sleeps until `due` unless called off; `true` (and [`Phase::Running`])
/// when the refresh is to run.
fn wait_until(shared: &Shared, due: Instant) -> bool {
    let mut phase = lock(shared);
    while *phase == Phase::Due {
        let left = due.saturating_duration_since(Instant::now());
        if left.is_zero() {
            *phase = Phase::Running;
            return true;
        }
        phase = shared
            .1
            .wait_timeout(phase, left)
            .map(|(guard, _)| guard)
            .unwrap_or_else(|e| e.into_inner().0);
    }
    false
}

/// What is left of the current second of the system's clock.
fn until_next_second() -> Duration {
    let into = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    Duration::from_nanos(1_000_000_000 - u64::from(into))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(refresh: &IndexRefresh) -> Phase {
        *lock(&refresh.shared)
    }

    #[test]
    fn a_refresh_not_begun_is_called_off_and_one_under_way_is_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        // Not a repository: the refresh fails, which is only a debug line.
        let early = IndexRefresh::start(dir.path());
        assert_eq!(phase(&early), Phase::Due);
        early.settle();
        assert_eq!(phase(&early), Phase::Over);

        let late = IndexRefresh::start(dir.path());
        std::thread::sleep(until_next_second() + MARGIN * 3);
        late.settle();
        assert_eq!(phase(&late), Phase::Over);
    }
}
