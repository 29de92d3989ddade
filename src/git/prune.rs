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
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::lock::{LockFile, TryLock};
use super::repo::canonical;
use super::workspace::{is_run_id, lock_file};
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

/// Deletes a run's worktree folder and its admin entry (the given one, or
/// any pointing at `path`). Missing pieces are fine.
pub(crate) fn remove_run(
    path: &Path,
    admin_dir: Option<&Path>,
    common_dir: &Path,
) -> Result<(), GitError> {
    let admin_dirs: Vec<PathBuf> = match admin_dir {
        Some(dir) => vec![dir.to_path_buf()],
        None => {
            let resolved = canonical(path).ok();
            admin_entries(common_dir)
                .into_iter()
                .filter(|(_, worktree)| worktree == path || Some(worktree) == resolved.as_ref())
                .map(|(admin, _)| admin)
                .collect()
        }
    };
    remove_dir(path)?;
    remove_dir(&scratch_of(path))?;
    for admin in admin_dirs {
        remove_dir(&admin)?;
    }
    Ok(())
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

/// Removes the folder (or file) `path` and what is in it; a missing one is
/// no error.
pub(super) fn remove_dir(path: &Path) -> Result<(), GitError> {
    // What the parallel pass could not remove (a folder without write
    // permission, a file that came back) gets the plain removal's error.
    let _ = remove_tree_in_parallel(path);
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(GitError::io("remove", path, e)),
    }
}

/// Removes the file `path`; a missing one is no error.
pub(super) fn remove_file(path: &Path) -> Result<(), GitError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(GitError::io("remove", path, e)),
    }
}

/// Removes the folder `path` and everything in it, the files of different
/// folders on several threads: a worktree of 10,000 files takes half the
/// time of one thread's removal (unlinks in one folder contend for it, in
/// different folders they do not). Symbolic links are removed, never
/// followed. Stops at the first error.
pub(crate) fn remove_tree_in_parallel(path: &Path) -> std::io::Result<()> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    if !fs::symlink_metadata(path)?.is_dir() {
        return fs::remove_file(path);
    }
    let mut folders = vec![path.to_path_buf()];
    let mut next = 0;
    while next < folders.len() {
        for entry in fs::read_dir(&folders[next])? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                folders.push(entry.path());
            }
        }
        next += 1;
    }
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get() * 2)
        .clamp(1, 8)
        .min(folders.len());
    let taken = AtomicUsize::new(0);
    let emptied: std::io::Result<()> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| -> std::io::Result<()> {
                    while let Some(folder) = folders.get(taken.fetch_add(1, Ordering::Relaxed)) {
                        for entry in fs::read_dir(folder)? {
                            let entry = entry?;
                            if !entry.file_type()?.is_dir() {
                                fs::remove_file(entry.path())?;
                            }
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err(std::io::Error::other("a removal thread panicked")))
        })
    });
    emptied?;
    // Deepest first: every folder comes after its parent in the list.
    folders.iter().rev().try_for_each(fs::remove_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file and folder goes, on several threads; what a symbolic link
    /// points at outside stays.
    #[test]
    fn a_tree_is_removed_in_parallel_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs::create_dir_all(outside.join("keep")).unwrap();
        fs::write(outside.join("keep/file.txt"), "mine").unwrap();
        let tree = dir.path().join("tree");
        for p in 0..20 {
            let folder = tree.join(format!("pkg{p}/sub"));
            fs::create_dir_all(&folder).unwrap();
            for m in 0..30 {
                fs::write(folder.join(format!("m{m}.py")), "x = 1\n").unwrap();
                fs::write(tree.join(format!("pkg{p}/t{m}.py")), "y = 2\n").unwrap();
            }
        }
        fs::create_dir_all(tree.join("empty/deeper/still")).unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("pkg3/link-to-folder")).unwrap();
        std::os::unix::fs::symlink(outside.join("keep/file.txt"), tree.join("link-to-file"))
            .unwrap();
        remove_tree_in_parallel(&tree).unwrap();
        assert!(!tree.exists());
        assert_eq!(
            fs::read_to_string(outside.join("keep/file.txt")).unwrap(),
            "mine"
        );
        // A missing tree is an error for the parallel pass, nothing for
        // `remove_dir`.
        assert!(remove_tree_in_parallel(&tree).is_err());
        remove_dir(&tree).unwrap();
    }
}
