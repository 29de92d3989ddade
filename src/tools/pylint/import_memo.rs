//! The direct imports of every file of a lint, remembered by file and
//! content, so a file whose content is known (by its blob id) is not read
//! to make its cache key (see [`super::cache::Keys::files`]).
//!
//! Imports resolve against the list of files linted, so the memo is for one
//! list. With a cache folder it is also kept on disk, one JSON file per
//! list under `<cache dir>/pylint-imports/`, so a later run over the same
//! files (a second run, or a fresh clone of the repository) does not read
//! every file of the tree once before its first lint: at 10,000 files
//! that was a fifth of a second. A file is written after a lint that found
//! the imports of many files, not after every attempt; at most
//! [`MAX_LISTS`] are kept, the oldest removed first. An entry names the
//! content it was read from and counts only for that content; the files
//! name the version of the import rules (a hash of their source), so a
//! swarm that resolves imports differently starts afresh.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use super::digest::field;

/// How many lists' memos the folder keeps.
const MAX_LISTS: usize = 8;

/// A lint that found this many files' imports writes the memo to disk.
const KEEP_AFTER: usize = 64;

/// The memo of one list of files.
#[derive(Debug, Default)]
pub(super) struct ImportMemo {
    /// Where memos are kept between runs, if anywhere.
    dir: Option<PathBuf>,
    /// The hash of the file list the memo is for.
    listing: [u8; 32],
    /// By file index: the content digest the imports were read from, and
    /// the indexes of the files imported.
    by_file: HashMap<usize, (String, Vec<usize>)>,
    /// Entries found since the memo was last read or written.
    fresh: usize,
}

/// A memo as it is kept on disk.
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    rules: String,
    files: Vec<(usize, String, Vec<usize>)>,
}

impl ImportMemo {
    /// A memo kept under `dir` between runs (`None`: in memory only).
    pub(super) fn kept_in(dir: Option<PathBuf>) -> Self {
        Self {
            dir,
            ..Self::default()
        }
    }

    /// Makes the memo the one of `files`: as it is when it already is,
    /// else what the disk keeps for that list, else empty.
    pub(super) fn follow(&mut self, files: &[String]) {
        let mut hash = Sha256::new();
        for file in files {
            field(&mut hash, file.as_bytes());
        }
        let listing: [u8; 32] = hash.finalize().into();
        if listing == self.listing {
            return;
        }
        self.listing = listing;
        self.fresh = 0;
        self.by_file = self
            .path()
            .and_then(|path| std::fs::read(path).ok())
            .and_then(|bytes| serde_json::from_slice::<Stored>(&bytes).ok())
            .filter(|stored| stored.rules == rules())
            .map(|stored| {
                stored
                    .files
                    .into_iter()
                    .filter(|(i, _, deps)| {
                        *i < files.len() && deps.iter().all(|d| *d < files.len())
                    })
                    .map(|(i, digest, deps)| (i, (digest, deps)))
                    .collect()
            })
            .unwrap_or_default();
    }

    /// The files file `of` imports, when its imports were read from content
    /// with `digest`.
    pub(super) fn imports(&self, of: usize, digest: &str) -> Option<&[usize]> {
        self.by_file
            .get(&of)
            .filter(|(d, _)| d == digest)
            .map(|(_, deps)| deps.as_slice())
    }

    /// Remembers what file `of`, with content `digest`, imports.
    pub(super) fn remember(&mut self, of: usize, digest: &str, deps: Vec<usize>) {
        self.by_file.insert(of, (digest.to_string(), deps));
        self.fresh += 1;
    }

    /// Writes the memo to disk when many entries are new (best effort).
    pub(super) fn keep(&mut self) {
        if self.fresh < KEEP_AFTER {
            return;
        }
        let Some(path) = self.path() else {
            return;
        };
        let mut files: Vec<(usize, String, Vec<usize>)> = self
            .by_file
            .iter()
            .map(|(i, (digest, deps))| (*i, digest.clone(), deps.clone()))
            .collect();
        files.sort_unstable();
        let stored = Stored {
            rules: rules().to_string(),
            files,
        };
        if crate::atomic::write_json(&path, &stored).is_ok() {
            self.fresh = 0;
            if let Some(dir) = path.parent() {
                crate::atomic::keep_newest_json(dir, MAX_LISTS, &path);
            }
        }
    }

    fn path(&self) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        Some(dir.join(format!("{}.json", &hex::encode(self.listing)[..32])))
    }
}

/// The version of the import rules: a hash of their source.
fn rules() -> &'static str {
    static RULES: OnceLock<String> = OnceLock::new();
    RULES.get_or_init(|| hex::encode(&Sha256::digest(include_str!("deps.rs"))[..16]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memo_kept_on_disk_serves_the_same_list_and_content_only() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<String> = (0..100).map(|i| format!("m{i}.py")).collect();
        let mut memo = ImportMemo::kept_in(Some(dir.path().to_path_buf()));
        memo.follow(&files);
        for i in 1..files.len() {
            memo.remember(i, &format!("id{i}"), vec![i - 1]);
        }
        memo.keep();

        let mut later = ImportMemo::kept_in(Some(dir.path().to_path_buf()));
        later.follow(&files);
        assert_eq!(later.imports(5, "id5"), Some(&[4][..]));
        assert_eq!(later.imports(5, "changed"), None, "another content");
        assert_eq!(later.imports(0, "id0"), None, "never read");
        // Another list of files: its own memo.
        let mut other = files.clone();
        other.push("new.py".to_string());
        later.follow(&other);
        assert_eq!(later.imports(5, "id5"), None);

        // A few new entries are not worth a write.
        let mut few = ImportMemo::kept_in(Some(dir.path().to_path_buf()));
        few.follow(&other);
        few.remember(1, "id1", vec![0]);
        few.keep();
        let mut again = ImportMemo::kept_in(Some(dir.path().to_path_buf()));
        again.follow(&other);
        assert_eq!(again.imports(1, "id1"), None);

        // Memos of other import rules are not used.
        let path = memo.path().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace(rules(), "older-rules")).unwrap();
        let mut stale = ImportMemo::kept_in(Some(dir.path().to_path_buf()));
        stale.follow(&files);
        assert_eq!(stale.imports(5, "id5"), None);
    }
}
