//! pylint's results per file, kept by content so a file is linted once:
//! across the Judge's measurements of one run (only changed files and their
//! direct importers are linted again) and, with a cache folder, across runs.
//!
//! A key hashes what a file's result depends on: the driver, the pylint
//! version, the interpreter, the configuration files pylint reads
//! ([`CONFIG_FILES`] in the lint root and its parents up to the sandbox's
//! boundary), the file's path and content, and the content of the linted
//! files it imports directly (see [`super::deps`]). Entries live in memory
//! and, with a folder, as one small JSON file each under
//! `<cache dir>/pylint/`, written to a temporary file and renamed into place;
//! an entry that cannot be read or parsed is a miss, never an error, and the
//! folder is pruned, oldest first, past [`MAX_DISK_BYTES`] or
//! [`MAX_DISK_ENTRIES`].
//!
//! What a key does not see: a change two imports away, installed packages
//! other than pylint itself, and cross-file messages (`duplicate-code`,
//! `cyclic-import`) are kept with the file pylint put them on.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::deps::ModuleIndex;
use crate::tools::{LintMessage, PythonEnv};

/// The configuration files pylint reads from the folders it runs in.
pub(super) const CONFIG_FILES: &[&str] = &[
    ".pylintrc",
    "pylintrc",
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
];

/// The cache folder is pruned past this many bytes of entries…
pub const MAX_DISK_BYTES: u64 = 200 * 1024 * 1024;
/// …or this many entries.
pub const MAX_DISK_ENTRIES: usize = 200_000;

/// The memory layer is emptied past this many entries.
const MAX_MEMORY_ENTRIES: usize = 200_000;

/// One cached result: a file's statements and messages, or (for the run's
/// general entry) the messages no file carries, such as configuration
/// problems.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct Entry {
    pub statements: u64,
    /// Messages the score counts.
    pub messages: Vec<LintMessage>,
    /// Messages shown but not counted: pylint gave them before it reset its
    /// counters to start checking (configuration problems).
    #[serde(default)]
    pub notices: Vec<LintMessage>,
    /// The configuration's score expression.
    pub evaluation: Option<String>,
}

/// pylint results by file content (see the module docs). Shared by every
/// measurement of a run; safe to use from several threads.
#[derive(Debug)]
pub struct LintCache {
    dir: Option<PathBuf>,
    memory: Mutex<HashMap<String, Arc<Entry>>>,
}

impl LintCache {
    /// A cache held in this process only.
    pub fn in_memory() -> Self {
        Self {
            dir: None,
            memory: Mutex::new(HashMap::new()),
        }
    }

    /// A cache kept under `<cache_dir>/pylint/` (and in memory), or in
    /// memory only when there is no cache folder.
    pub fn new(cache_dir: Option<&Path>) -> Self {
        Self {
            dir: cache_dir.map(|dir| dir.join("pylint")),
            ..Self::in_memory()
        }
    }

    /// The folder entries are written to, if any.
    pub fn folder(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The entry under `key`, from memory or disk.
    pub(super) fn get(&self, key: &str) -> Option<Arc<Entry>> {
        if let Some(found) = self.memory.lock().ok()?.get(key) {
            return Some(Arc::clone(found));
        }
        let text = std::fs::read(self.entry_path(key)?).ok()?;
        let entry: Arc<Entry> = Arc::new(serde_json::from_slice(&text).ok()?);
        self.remember(key, Arc::clone(&entry));
        Some(entry)
    }

    /// Stores `entry` under `key`; a write that fails is left out quietly
    /// (the file is linted again next time).
    pub(super) fn put(&self, key: &str, entry: Entry) {
        let entry = Arc::new(entry);
        self.remember(key, Arc::clone(&entry));
        let Some(path) = self.entry_path(key) else {
            return;
        };
        let _ = crate::atomic::write_json(&path, entry.as_ref());
    }

    fn remember(&self, key: &str, entry: Arc<Entry>) {
        if let Ok(mut memory) = self.memory.lock() {
            if memory.len() >= MAX_MEMORY_ENTRIES {
                memory.clear();
            }
            memory.insert(key.to_string(), entry);
        }
    }

    fn entry_path(&self, key: &str) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        Some(dir.join(key.get(..2)?).join(format!("{key}.json")))
    }

    /// Removes the oldest entries on disk while there are more than
    /// `max_bytes` or `max_entries`, down to 80% of each.
    pub(super) fn prune(&self, max_bytes: u64, max_entries: usize) {
        let Some(dir) = &self.dir else {
            return;
        };
        let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = Vec::new();
        for shard in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            for file in std::fs::read_dir(shard.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                if let Ok(meta) = file.metadata() {
                    let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
                    entries.push((modified, meta.len(), file.path()));
                }
            }
        }
        let mut bytes: u64 = entries.iter().map(|(_, len, _)| len).sum();
        let mut count = entries.len();
        if bytes <= max_bytes && count <= max_entries {
            return;
        }
        entries.sort();
        for (_, len, path) in entries {
            if bytes <= max_bytes - max_bytes / 5 && count <= max_entries - max_entries / 5 {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                bytes = bytes.saturating_sub(len);
                count -= 1;
            }
        }
    }
}

/// What the batches need to know of one file: its cache key (`None` when it
/// cannot be read) and its size.
#[derive(Clone, Debug)]
pub(super) struct FileFacts {
    pub key: Option<String>,
    pub bytes: u64,
}

/// Makes cache keys for the files of one lint root.
pub(super) struct Keys {
    base: [u8; 32],
}

impl Keys {
    /// The part of every key shared by the files of `root`: the driver,
    /// pylint's version, the interpreter and the configuration files from
    /// `root` up to `boundary`.
    pub(super) fn new(env: &PythonEnv, root: &Path, boundary: &Path) -> Self {
        let mut hash = Sha256::new();
        field(&mut hash, super::DRIVER.as_bytes());
        field(&mut hash, env.pylint_version.as_bytes());
        field(&mut hash, env.python.as_os_str().as_encoded_bytes());
        // Folders count by their distance from the root, not their path, so
        // every run's worktree makes the same keys.
        let mut folder = Some(root);
        let mut depth: u64 = 0;
        while let Some(dir) = folder {
            for name in CONFIG_FILES {
                if let Ok(content) = std::fs::read(dir.join(name)) {
                    field(&mut hash, &depth.to_le_bytes());
                    field(&mut hash, name.as_bytes());
                    field(&mut hash, &content);
                }
            }
            if dir == boundary || !dir.starts_with(boundary) {
                break;
            }
            folder = dir.parent();
            depth += 1;
        }
        Self {
            base: hash.finalize().into(),
        }
    }

    /// The key of the messages no file carries.
    pub(super) fn general(&self) -> String {
        let mut hash = Sha256::new();
        field(&mut hash, &self.base);
        field(&mut hash, b"general");
        hex::encode(hash.finalize())
    }

    /// The key and size of every file of `files` (relative to `root`).
    pub(super) fn files(&self, root: &Path, files: &[String]) -> Vec<FileFacts> {
        let contents: Vec<Option<Vec<u8>>> = files
            .iter()
            .map(|f| std::fs::read(root.join(f)).ok())
            .collect();
        let digests: Vec<Option<[u8; 32]>> = contents
            .iter()
            .map(|c| c.as_ref().map(|c| Sha256::digest(c).into()))
            .collect();
        let index = ModuleIndex::new(files);
        files
            .iter()
            .enumerate()
            .map(|(i, file)| {
                let (Some(content), Some(digest)) = (&contents[i], &digests[i]) else {
                    return FileFacts {
                        key: None,
                        bytes: 0,
                    };
                };
                let mut hash = Sha256::new();
                field(&mut hash, &self.base);
                field(&mut hash, file.as_bytes());
                field(&mut hash, digest);
                for dep in index.imports_of(i, &String::from_utf8_lossy(content)) {
                    field(&mut hash, files[dep].as_bytes());
                    field(&mut hash, digests[dep].as_ref().map_or(&[][..], |d| &d[..]));
                }
                FileFacts {
                    key: Some(hex::encode(hash.finalize())),
                    bytes: content.len() as u64,
                }
            })
            .collect()
    }
}

/// Adds a length-prefixed field, so no two field lists hash alike.
fn field(hash: &mut Sha256, bytes: &[u8]) {
    hash.update((bytes.len() as u64).to_le_bytes());
    hash.update(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(statements: u64) -> Entry {
        Entry {
            statements,
            ..Entry::default()
        }
    }

    #[test]
    fn entries_survive_a_new_cache_and_corrupt_ones_are_misses() {
        let dir = tempfile::tempdir().expect("temp dir");
        let key = "ab".repeat(32);
        LintCache::new(Some(dir.path())).put(&key, entry(7));
        let fresh = LintCache::new(Some(dir.path()));
        assert_eq!(fresh.get(&key).map(|e| e.statements), Some(7));

        let other = "cd".repeat(32);
        let path = dir.path().join("pylint/cd").join(format!("{other}.json"));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, "{\"statements\": 3, \"messa").expect("write");
        assert!(LintCache::new(Some(dir.path())).get(&other).is_none());
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("pylint/ab"))
            .expect("shard")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            leftovers,
            [format!("{key}.json")],
            "no temporary files left"
        );
    }

    #[test]
    fn pruning_removes_the_oldest_entries() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = LintCache::new(Some(dir.path()));
        let keys: Vec<String> = (0..10)
            .map(|i| format!("{i:02}{}", "e".repeat(62)))
            .collect();
        for (i, key) in keys.iter().enumerate() {
            cache.put(key, entry(i as u64));
            let path = cache.entry_path(key).expect("path");
            let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000 + i as u64);
            std::fs::File::options()
                .write(true)
                .open(&path)
                .and_then(|f| f.set_modified(when))
                .expect("set mtime");
        }
        cache.prune(u64::MAX, 5);
        let disk = LintCache::new(Some(dir.path()));
        let kept: Vec<bool> = keys.iter().map(|k| disk.get(k).is_some()).collect();
        assert_eq!(
            kept,
            [false, false, false, false, false, false, true, true, true, true]
        );
    }

    #[test]
    fn a_key_changes_with_the_file_its_imports_and_the_configuration() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let write = |name: &str, text: &str| std::fs::write(root.join(name), text).expect("write");
        write("a.py", "import b\n");
        write("b.py", "X = 1\n");
        write("c.py", "Y = 2\n");
        let env = PythonEnv {
            python: PathBuf::from("/usr/bin/python3"),
            source: crate::tools::EnvSource::SystemPython,
            pytest_version: String::new(),
            pylint_version: "4.1.4".into(),
            layout: crate::tools::PythonLayout::default(),
        };
        let files: Vec<String> = ["a.py", "b.py", "c.py"].map(String::from).to_vec();
        let keys = |root: &Path| -> Vec<Option<String>> {
            Keys::new(&env, root, root)
                .files(root, &files)
                .into_iter()
                .map(|f| f.key)
                .collect()
        };
        let before = keys(root);
        assert_eq!(before, keys(root), "keys are stable");
        write("b.py", "X = 2\n");
        let after = keys(root);
        assert_ne!(before[0], after[0], "a imports b");
        assert_ne!(before[1], after[1]);
        assert_eq!(before[2], after[2], "c does not import b");
        write("setup.cfg", "[pylint]\n");
        let configured = keys(root);
        assert!(after.iter().zip(&configured).all(|(a, b)| a != b));
        std::fs::remove_file(root.join("c.py")).expect("rm");
        assert_eq!(keys(root)[2], None, "an unreadable file has no key");
    }
}
