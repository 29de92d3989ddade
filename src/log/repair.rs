//! Mending a damaged log without throwing anything away: the bytes that
//! cannot stay in the array are copied to a new sibling file (never one that
//! exists) and synced before the log itself is shortened.
//!
//! This module owns the sibling files and the [`Repair`] that tells the user
//! about them; deciding what is damaged belongs to `scan`.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// How a damaged experiment log was mended; nothing is thrown away.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repair {
    /// The file was not a JSON array: all of it was moved to `aside` and a
    /// new log started.
    NotAnArray { log: PathBuf, aside: PathBuf },
    /// The log ended in an incomplete or damaged entry (a run killed while
    /// writing, a disk that filled up): its `kept` complete entries stay, the
    /// `bytes` after them were moved to `aside`. With no complete entry, the
    /// whole file was moved and a new log started.
    CutShort {
        log: PathBuf,
        aside: PathBuf,
        kept: usize,
        bytes: u64,
    },
}

impl Repair {
    /// The sibling file that holds what was moved out of the log.
    pub fn aside(&self) -> &Path {
        match self {
            Repair::NotAnArray { aside, .. } | Repair::CutShort { aside, .. } => aside,
        }
    }
}

impl fmt::Display for Repair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Repair::NotAnArray { log, aside } => write!(
                f,
                "the experiment log {} was not a JSON array: moved it to {} and started a new one",
                log.display(),
                aside.display()
            ),
            Repair::CutShort {
                log,
                aside,
                kept,
                bytes,
            } => write!(
                f,
                "the experiment log {} ended in an incomplete entry: kept its {kept} complete \
                 entries and moved the {bytes} bytes after them to {}",
                log.display(),
                aside.display()
            ),
        }
    }
}

/// What kind of bytes a sibling file holds; it names the file.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Aside {
    /// A whole file that was not a JSON array.
    Corrupt,
    /// What followed the last complete entry.
    CutOff,
}

impl Aside {
    fn suffix(self) -> &'static str {
        match self {
            Aside::Corrupt => "corrupt",
            Aside::CutOff => "cutoff",
        }
    }
}

/// Copies the bytes of `file` (the log at `path`) from `from` to `size` into
/// a new sibling `<name>.<kind>-<UTC time>[-<n>]`, synced with its folder, and
/// returns its path. The log itself is not changed.
pub(crate) fn set_aside(
    path: &Path,
    mut file: &File,
    from: u64,
    size: u64,
    kind: Aside,
) -> io::Result<PathBuf> {
    let (aside, mut out) = create_sibling(path, kind)?;
    file.seek(SeekFrom::Start(from))?;
    let copied = io::copy(&mut file.take(size - from), &mut out)?;
    if copied != size - from {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the log became shorter while it was being set aside",
        ));
    }
    out.sync_all()?;
    if let Some(dir) = aside.parent() {
        // Without the folder's entry on disk, a power cut could lose the copy
        // after the log was shortened.
        File::open(dir)?.sync_all()?;
    }
    Ok(aside)
}

/// Creates a sibling of `path` whose name no file has yet.
fn create_sibling(path: &Path, kind: Aside) -> io::Result<(PathBuf, File)> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "experiment_data.json".into());
    let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S");
    let base = format!("{name}.{}-{stamp}", kind.suffix());
    for n in 1..=1000 {
        let candidate = match n {
            1 => path.with_file_name(&base),
            n => path.with_file_name(format!("{base}-{n}")),
        };
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(file) => return Ok((candidate, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("1000 files named {base}-<n> exist already; remove some"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_the_tail_into_a_new_sibling_each_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.json");
        std::fs::write(&path, "[{\"a\":1},{\"b\":").unwrap();
        let file = File::open(&path).unwrap();
        let first = set_aside(&path, &file, 8, 14, Aside::CutOff).unwrap();
        let second = set_aside(&path, &file, 0, 14, Aside::Corrupt).unwrap();
        let third = set_aside(&path, &file, 8, 14, Aside::CutOff).unwrap();
        assert_eq!(std::fs::read_to_string(&first).unwrap(), ",{\"b\":");
        assert_eq!(
            std::fs::read_to_string(&second).unwrap(),
            "[{\"a\":1},{\"b\":"
        );
        assert_eq!(std::fs::read_to_string(&third).unwrap(), ",{\"b\":");
        assert_ne!(first, third);
        let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name(&first).starts_with("log.json.cutoff-"), "{first:?}");
        assert!(name(&second).starts_with("log.json.corrupt-"), "{second:?}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "[{\"a\":1},{\"b\":"
        );
    }

    #[test]
    fn says_what_was_kept_and_where_the_rest_went() {
        let repair = Repair::CutShort {
            log: "logs/x.json".into(),
            aside: "logs/x.json.cutoff-1".into(),
            kept: 3,
            bytes: 17,
        };
        assert_eq!(
            repair.to_string(),
            "the experiment log logs/x.json ended in an incomplete entry: kept its 3 complete \
             entries and moved the 17 bytes after them to logs/x.json.cutoff-1"
        );
        assert_eq!(repair.aside(), Path::new("logs/x.json.cutoff-1"));
    }
}
