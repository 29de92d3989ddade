//! The exclusive lock on the experiment log, held only while one entry is
//! appended (or the log inspected and repaired).
//!
//! It is a `flock` on the log file itself: the kernel drops it when the
//! holder dies, so a killed run never leaves the log locked, and two handles
//! in one process exclude each other just like two processes do. A file
//! renamed or removed while we waited (a log rotated by hand) is noticed and
//! the lock taken again on the file now at the path.
//!
//! This module owns opening and locking only; what is read or written under
//! the lock belongs to `store`.

use std::fs::File;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::lockfile::{self, Attempt};

/// The longest pause between two tries while another process holds the lock.
const MAX_PAUSE: Duration = Duration::from_millis(20);

/// Why the lock could not be taken.
#[derive(Debug)]
pub(crate) enum LockError {
    /// Opening, locking or checking the file failed.
    Io(io::Error),
    /// Another process held the lock for the whole timeout.
    Busy,
}

impl From<io::Error> for LockError {
    fn from(e: io::Error) -> Self {
        LockError::Io(e)
    }
}

/// The log file, open for reading and writing, locked exclusively until dropped.
#[derive(Debug)]
pub(crate) struct LockedFile {
    file: File,
}

impl LockedFile {
    /// Opens the file at `path` and waits up to `timeout` for its exclusive
    /// lock. Without `create`, a missing file is `Ok(None)`; with it, the file
    /// is created (its folder must exist).
    pub fn acquire(
        path: &Path,
        create: bool,
        timeout: Duration,
    ) -> Result<Option<Self>, LockError> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            match lockfile::try_lock(path, create)? {
                Attempt::Locked(file) => return Ok(Some(Self { file })),
                Attempt::Missing => return Ok(None),
                Attempt::Held if started.elapsed() >= timeout => return Err(LockError::Busy),
                Attempt::Held => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(MAX_PAUSE);
                }
            }
        }
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHORT: Duration = Duration::from_millis(100);

    #[test]
    fn a_second_handle_waits_for_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.json");
        let first = LockedFile::acquire(&path, true, SHORT).unwrap().unwrap();
        let started = Instant::now();
        assert!(matches!(
            LockedFile::acquire(&path, true, SHORT),
            Err(LockError::Busy)
        ));
        assert!(started.elapsed() >= SHORT);
        drop(first);
        // A fork in another test thread can hold the file until its exec.
        let released = LockedFile::acquire(&path, true, Duration::from_secs(10));
        assert!(released.unwrap().is_some());
    }

    #[test]
    fn a_missing_file_is_none_unless_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.json");
        assert!(LockedFile::acquire(&path, false, SHORT).unwrap().is_none());
        assert!(!path.exists());
        assert!(LockedFile::acquire(&path, true, SHORT).unwrap().is_some());
        assert!(path.exists());
    }

    #[test]
    fn a_file_replaced_while_waiting_is_locked_anew() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.json");
        std::fs::write(&path, "old").unwrap();
        let first = LockedFile::acquire(&path, true, SHORT).unwrap().unwrap();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || {
                let locked = LockedFile::acquire(&path, true, Duration::from_secs(10))
                    .unwrap()
                    .unwrap();
                let mut text = String::new();
                io::Read::read_to_string(&mut locked.file(), &mut text).unwrap();
                text
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        // Rotated by hand, but with no moment where the path is missing or
        // empty (a waiter that only starts now must not find either): the
        // old file keeps a second name, the new one replaces it at once.
        std::fs::hard_link(&path, dir.path().join("rotated.json")).unwrap();
        let staged = dir.path().join("staged.json");
        std::fs::write(&staged, "new").unwrap();
        std::fs::rename(&staged, &path).unwrap();
        drop(first);
        assert_eq!(waiter.join().unwrap(), "new");
    }
}
