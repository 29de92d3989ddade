//! The log file under its lock: find where the next entry goes (from the
//! head and tail, or by a full scan when the tail is damaged), mend it when
//! needed, and append one entry in place.
//!
//! An append writes `,\n<entry>\n]\n` over the array's closing `]`, so the
//! file is one valid JSON array before and after it and only a crash in the
//! middle of that write can leave it cut short, which the next append mends.
//! This module knows bytes, not entries: rendering and masking belong to
//! `experiment`, which calls this one (never the other way round).

use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::LogError;
use super::lock::{LockError, LockedFile};
use super::repair::{set_aside, Aside, Repair};
use super::scan::{scan, Shape};
use super::tail::{inspect, Layout};

/// How long an append waits for another process's append.
const LOCK_TIMEOUT: Duration = Duration::from_secs(60);
/// What closes the array after the last entry.
const CLOSE: &[u8] = b"\n]\n";

/// The log, locked and ready for an entry, until dropped.
#[derive(Debug)]
pub(crate) struct OpenLog {
    path: PathBuf,
    locked: LockedFile,
    layout: Layout,
    /// What had to be mended to get here.
    pub repair: Option<Repair>,
}

impl OpenLog {
    /// Locks the log at `path`, checks it and mends it if it is damaged.
    /// Without `create`, a missing log is `Ok(None)`; with it, the log (not
    /// its folder) is created.
    pub fn lock(path: &Path, create: bool) -> Result<Option<Self>, LogError> {
        let locked = match LockedFile::acquire(path, create, LOCK_TIMEOUT) {
            Ok(Some(locked)) => locked,
            Ok(None) => return Ok(None),
            Err(LockError::Busy) => {
                return Err(LogError::Locked {
                    path: path.to_path_buf(),
                    secs: LOCK_TIMEOUT.as_secs(),
                })
            }
            Err(LockError::Io(source)) => return Err(write_error(path, source)),
        };
        let read_error = |source| LogError::Read {
            path: path.to_path_buf(),
            source,
        };
        let file = locked.file();
        let size = file.metadata().map_err(read_error)?.len();
        let (layout, repair) = match inspect(file, size).map_err(read_error)? {
            Some(layout) => (layout, None),
            None => mend(path, file, size)?,
        };
        Ok(Some(Self {
            path: path.to_path_buf(),
            locked,
            layout,
            repair,
        }))
    }

    /// Appends one rendered entry (one line of JSON) in place. It is in the
    /// file (for every reader, and after this process dies) once this
    /// returns; [`sync`](Self::sync) puts it on the disk.
    pub fn append(&mut self, entry: &[u8]) -> Result<(), LogError> {
        let (at, head): (u64, &[u8]) = match self.layout {
            Layout::Empty => (0, b"[\n"),
            Layout::Array {
                at,
                after_entry: true,
            } => (at, b",\n"),
            Layout::Array {
                at,
                after_entry: false,
            } => (at, b"\n"),
        };
        let text = [head, entry, CLOSE].concat();
        let end = at + text.len() as u64;
        write_at(self.locked.file(), at, &text, end, false)
            .map_err(|e| write_error(&self.path, e))?;
        self.layout = Layout::Array {
            at: end - CLOSE.len() as u64,
            after_entry: true,
        };
        Ok(())
    }

    /// Puts what was appended on the disk (`fdatasync`).
    pub fn sync(&self) -> Result<(), LogError> {
        self.locked
            .file()
            .sync_data()
            .map_err(|e| write_error(&self.path, e))
    }
}

/// Scans a log whose tail did not pass and mends it: every complete entry
/// stays, everything after the last one is set aside first.
fn mend(path: &Path, mut file: &File, size: u64) -> Result<(Layout, Option<Repair>), LogError> {
    let read_error = |source| LogError::Read {
        path: path.to_path_buf(),
        source,
    };
    file.seek(SeekFrom::Start(0)).map_err(read_error)?;
    let found = scan(io::Read::take(file, size)).map_err(read_error)?;
    let write = |e| write_error(path, e);
    let after_entry = found.entries > 0;
    match found.shape {
        Shape::Empty => Ok((Layout::Empty, None)),
        Shape::Closed => Ok((
            Layout::Array {
                at: found.end_of_entries,
                after_entry,
            },
            None,
        )),
        Shape::Damaged if after_entry => {
            let at = found.end_of_entries;
            let aside = set_aside(path, file, at, size, Aside::CutOff).map_err(write)?;
            write_at(file, at, CLOSE, at + CLOSE.len() as u64, true).map_err(write)?;
            let repair = Repair::CutShort {
                log: path.to_path_buf(),
                aside,
                kept: found.entries,
                bytes: size - at,
            };
            Ok((Layout::Array { at, after_entry }, Some(repair)))
        }
        Shape::NotAnArray | Shape::Damaged => {
            let kind = match found.shape {
                Shape::NotAnArray => Aside::Corrupt,
                _ => Aside::CutOff,
            };
            let aside = set_aside(path, file, 0, size, kind).map_err(write)?;
            write_at(file, 0, b"[\n]\n", 4, true).map_err(write)?;
            let log = path.to_path_buf();
            let repair = match kind {
                Aside::Corrupt => Repair::NotAnArray { log, aside },
                Aside::CutOff => Repair::CutShort {
                    log,
                    aside,
                    kept: 0,
                    bytes: size,
                },
            };
            let layout = Layout::Array {
                at: 1,
                after_entry: false,
            };
            Ok((layout, Some(repair)))
        }
    }
}

/// Writes `text` at `at`, cuts the file at `end` and, with `sync`, syncs
/// it. The new bytes are written before the old ones after them are cut, so
/// the closing `]` is never missing from a file that had one.
fn write_at(file: &File, at: u64, text: &[u8], end: u64, sync: bool) -> io::Result<()> {
    file.write_all_at(text, at)?;
    file.set_len(end)?;
    if sync {
        file.sync_data()?;
    }
    Ok(())
}

fn write_error(path: &Path, source: io::Error) -> LogError {
    LogError::Write {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn append_to(text: &str, entries: &[&str]) -> (String, Option<Repair>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.json");
        std::fs::write(&path, text).unwrap();
        let mut log = OpenLog::lock(&path, true).unwrap().unwrap();
        for entry in entries {
            log.append(entry.as_bytes()).unwrap();
        }
        let repair = log.repair.clone();
        drop(log);
        (std::fs::read_to_string(&path).unwrap(), repair, dir)
    }

    #[test]
    fn appends_one_entry_per_line() {
        let (text, repair, _dir) = append_to("", &["{\"a\":1}", "{\"b\":2}"]);
        assert_eq!(text, "[\n{\"a\":1},\n{\"b\":2}\n]\n");
        assert_eq!(repair, None);
        let (text, _, _dir) = append_to("[]", &["{\"a\":1}"]);
        assert_eq!(text, "[\n{\"a\":1}\n]\n");
    }

    #[test]
    fn appends_after_a_pretty_printed_log_without_changing_it() {
        let old = "[\n  {\n    \"a\": 1\n  }\n]";
        let (text, repair, _dir) = append_to(old, &["{\"b\":2}"]);
        assert_eq!(text, "[\n  {\n    \"a\": 1\n  },\n{\"b\":2}\n]\n");
        assert_eq!(repair, None);
    }

    #[test]
    fn keeps_complete_entries_of_a_log_cut_short_and_sets_the_rest_aside() {
        let (text, repair, _dir) = append_to("[\n{\"a\":1},\n{\"b\":", &["{\"c\":3}"]);
        assert_eq!(text, "[\n{\"a\":1},\n{\"c\":3}\n]\n");
        let Some(Repair::CutShort {
            aside, kept, bytes, ..
        }) = repair
        else {
            panic!("{repair:?}")
        };
        assert_eq!((kept, bytes), (1, 7));
        assert_eq!(std::fs::read_to_string(aside).unwrap(), ",\n{\"b\":");
    }

    #[test]
    fn moves_a_file_that_is_not_an_array_aside_whole() {
        let (text, repair, _dir) = append_to("{not json", &["{\"a\":1}"]);
        assert_eq!(text, "[\n{\"a\":1}\n]\n");
        let Some(Repair::NotAnArray { aside, .. }) = repair else {
            panic!("{repair:?}")
        };
        assert_eq!(std::fs::read_to_string(aside).unwrap(), "{not json");
        let (text, repair, _dir) = append_to("[\n{\"a\":", &["{\"b\":1}"]);
        assert_eq!(text, "[\n{\"b\":1}\n]\n");
        assert!(
            matches!(&repair, Some(Repair::CutShort { kept: 0, bytes: 7, aside, .. })
                if std::fs::read_to_string(aside).unwrap() == "[\n{\"a\":"),
            "{repair:?}"
        );
    }
}
