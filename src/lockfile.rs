//! Exclusive `flock`s on files: the locks that die with their process.
//!
//! The repository's run lock and a run's own lock (`git::lock`) and the
//! experiment log's append lock (`log::lock`) are all this: the kernel drops
//! a `flock` when the last descriptor of the open file goes, so a crash or
//! `kill -9` never leaves one behind and no process id is ever compared.
//! Files are opened with `O_CLOEXEC` (the standard library's default), so
//! no child process inherits a lock. This module owns opening and locking;
//! what the file says and how long to wait belong to the callers.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// What one try found.
#[derive(Debug)]
pub(crate) enum Attempt {
    /// The lock is ours while the file stays open.
    Locked(File),
    /// Another open file holds it.
    Held,
    /// There is no file at the path (only when not creating one).
    Missing,
}

/// Opens `path` (creating it when `create` is set; its folder must exist)
/// and tries once, without waiting, to lock it exclusively. A file that
/// another process removed or replaced between the open and the lock is
/// opened again, so a lock taken always belongs to the file now at `path`.
pub(crate) fn try_lock(path: &Path, create: bool) -> io::Result<Attempt> {
    for _ in 0..20 {
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound && !create => {
                return Ok(Attempt::Missing)
            }
            Err(e) => return Err(e),
        };
        if !flock_exclusive(&file)? {
            return Ok(Attempt::Held);
        }
        if is_at_path(&file, path)? {
            return Ok(Attempt::Locked(file));
        }
        if !create {
            return Ok(Attempt::Missing);
        }
    }
    Err(io::Error::other(
        "the file keeps being replaced by another process",
    ))
}

/// `flock(LOCK_EX | LOCK_NB)`: `Ok(false)` when another open file holds it.
fn flock_exclusive(file: &File) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: the descriptor is valid for the life of `file`; flock only
        // changes the lock state of the open file description.
        let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if result == 0 {
            return Ok(true);
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EWOULDBLOCK) => return Ok(false),
            Some(libc::EINTR) => continue,
            _ => return Err(error),
        }
    }
}

/// Whether the open `file` is still the file at `path` (same device and inode).
fn is_at_path(file: &File, path: &Path) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let held = file.metadata()?;
    match std::fs::metadata(path) {
        Ok(now) => Ok(now.dev() == held.dev() && now.ino() == held.ino()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_none_after_it_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        assert!(matches!(try_lock(&path, false).unwrap(), Attempt::Missing));
        let Attempt::Locked(first) = try_lock(&path, true).unwrap() else {
            panic!("a new file is free");
        };
        assert!(matches!(try_lock(&path, true).unwrap(), Attempt::Held));
        drop(first);
        // A fork in another test thread shares the open file until its exec,
        // so the release may lag by that moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match try_lock(&path, false).unwrap() {
                Attempt::Locked(_) => break,
                Attempt::Held if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                other => panic!("released with its holder, got {other:?}"),
            }
        }
    }
}
