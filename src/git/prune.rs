//! Removing the worktrees of runs that are over (killed, crashed, or cut
//! short before they could clean up).
//!
//! A run is over when its lock `<worktrees root>/<run>.lock` can be taken
//! (the kernel released it with the process) or is gone; a live run's lock
//! is always held, so its worktree is never touched. Pruning removes the
//! run folder, the `<common>/worktrees/<name>` entry git keeps for it and
//! the lock file, in that order, while holding the lock. Branches stay.
//!
//! Runs of the old layout (`<common>/swarm/worktrees/<run>` with a
//! `<run>.owner` file naming a process id) never held a lock; they are
//! removed unless the recorded process is alive and started before its
//! owner file was written (a process that started later only reuses the
//! dead run's PID). Worktrees swarm did not make are never touched.

use std::fs;
use std::path::{Path, PathBuf};

use super::admin::admin_entries;
use super::layout::{is_run_id, lock_file};
use super::lock::{LockFile, TryLock};
use super::remove::{remove_file, remove_run};
use super::repo::canonical;
use super::{GitError, Repo};

/// Where older versions kept run worktrees, relative to the git common dir.
pub const LEGACY_RUNS_DIR: &str = "swarm/worktrees";

impl Repo {
    /// Removes the worktrees of runs that are over: under `worktrees_root`
    /// (see [`Repo::worktrees_root`]) those whose lock is free or missing,
    /// under the old layout `<common>/swarm/worktrees/` those whose owner
    /// process is gone, and git's entries for either whose folder no longer
    /// exists. Returns the run ids removed, sorted. Branches stay.
    pub fn prune_stale_runs(&self, worktrees_root: &Path) -> Result<Vec<String>, GitError> {
        let common_dir = &self.info().common_dir;
        let mut removed = prune_locked_layout(worktrees_root, common_dir)?;
        removed.extend(prune_legacy_layout(common_dir)?);
        let roots: Vec<PathBuf> = [
            worktrees_root.to_path_buf(),
            common_dir.join(LEGACY_RUNS_DIR),
        ]
        .into_iter()
        .flat_map(|dir| {
            let resolved = canonical(&dir).ok();
            [Some(dir), resolved]
        })
        .flatten()
        .collect();
        for (admin_dir, worktree) in admin_entries(common_dir) {
            let ours = roots.iter().any(|root| worktree.parent() == Some(root));
            if ours && fs::symlink_metadata(&worktree).is_err() {
                remove_run(&worktree, Some(&admin_dir), common_dir)?;
                if let Some(run) = worktree.file_name() {
                    removed.push(run.to_string_lossy().into_owned());
                }
            }
        }
        removed.sort();
        removed.dedup();
        Ok(removed)
    }
}

/// Runs under `root` whose lock can be taken or is missing.
fn prune_locked_layout(root: &Path, common_dir: &Path) -> Result<Vec<String>, GitError> {
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(root) else {
        return Ok(removed);
    };
    let mut runs: Vec<String> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            match name.strip_suffix(".lock") {
                Some(run) => Some(run.to_string()),
                None if entry.path().is_dir() => Some(name),
                None => None,
            }
        })
        .filter(|run| is_run_id(run))
        .collect();
    runs.sort();
    runs.dedup();
    for run in runs {
        let path = root.join(&run);
        match LockFile::try_lock(&lock_file(root, &run), false)? {
            TryLock::Held { .. } => continue,
            TryLock::Acquired(lock) => {
                remove_run(&path, None, common_dir)?;
                lock.remove()?;
            }
            TryLock::Missing => {
                if fs::symlink_metadata(&path).is_err() {
                    continue;
                }
                remove_run(&path, None, common_dir)?;
            }
        }
        removed.push(run);
    }
    Ok(removed)
}

/// Runs of the old layout whose owner process is over.
fn prune_legacy_layout(common_dir: &Path) -> Result<Vec<String>, GitError> {
    let runs_dir = common_dir.join(LEGACY_RUNS_DIR);
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(&runs_dir) else {
        return Ok(removed);
    };
    let mut runs: Vec<String> = entries
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .map(|name| match name.strip_suffix(".owner") {
            Some(run) => run.to_string(),
            None => name,
        })
        .filter(|run| is_run_id(run))
        .collect();
    runs.sort();
    runs.dedup();
    for run in runs {
        let owner = runs_dir.join(format!("{run}.owner"));
        if legacy_owner_alive(&owner) {
            continue;
        }
        remove_run(&runs_dir.join(&run), None, common_dir)?;
        remove_file(&owner)?;
        removed.push(run);
    }
    // Leave no empty folders of the old layout behind.
    let _ = fs::remove_dir(&runs_dir);
    let _ = fs::remove_dir(common_dir.join("swarm"));
    Ok(removed)
}

/// Whether the process an old-layout owner file names is still the run that
/// wrote it: alive, and started no later than the file was written.
fn legacy_owner_alive(owner: &Path) -> bool {
    let Ok(text) = fs::read_to_string(owner) else {
        return false;
    };
    let Some(pid) = text
        .trim()
        .strip_prefix("pid ")
        .and_then(|pid| pid.trim().parse::<u32>().ok())
    else {
        return false;
    };
    if !process_alive(pid) {
        return false;
    }
    let written = fs::metadata(owner).and_then(|m| m.modified()).ok();
    match (process_start(pid), written) {
        (Some(started), Some(written)) => started <= written,
        _ => true,
    }
}

#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn process_alive(_pid: u32) -> bool {
    true
}

/// When process `pid` started, from `/proc` (Linux); `None` elsewhere.
#[cfg(not(target_os = "linux"))]
fn process_start(_pid: u32) -> Option<std::time::SystemTime> {
    None
}

/// When process `pid` started, from `/proc` (Linux); `None` elsewhere.
#[cfg(target_os = "linux")]
fn process_start(pid: u32) -> Option<std::time::SystemTime> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22 (starttime, in clock ticks since boot) counts from after the
    // command name, which is in parentheses and may contain spaces.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = after_name.split_whitespace().nth(19)?.parse().ok()?;
    let boot: u64 = fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf only reads a system constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|hz| *hz > 0)?;
    let millis = boot
        .checked_mul(1000)?
        .checked_add(ticks.checked_mul(1000)? / hz)?;
    // Boot time has one-second resolution: allow for it.
    let started = std::time::UNIX_EPOCH + std::time::Duration::from_millis(millis);
    started.checked_sub(std::time::Duration::from_secs(1))
}
