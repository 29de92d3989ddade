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
use super::digest::field;
pub(super) use super::import_memo::ImportMemo;
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
    /// The files' imports, so that a known file is not read for them again.
    imports: Mutex<ImportMemo>,
}

impl LintCache {
    /// A cache held in this process only.
    pub fn in_memory() -> Self {
        Self {
            dir: None,
            memory: Mutex::new(HashMap::new()),
            imports: Mutex::new(ImportMemo::default()),
        }
    }

    /// A cache kept under `<cache_dir>/pylint/` (and in memory), or in
    /// memory only when there is no cache folder.
    pub fn new(cache_dir: Option<&Path>) -> Self {
        Self {
            dir: cache_dir.map(|dir| dir.join("pylint")),
            imports: Mutex::new(ImportMemo::kept_in(
                cache_dir.map(|dir| dir.join("pylint-imports")),
            )),
            ..Self::in_memory()
        }
    }

    /// The folder entries are written to, if any.
    pub fn folder(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The files' imports remembered so far (see [`Keys::files`]).
    pub(super) fn imports(&self) -> std::sync::MutexGuard<'_, ImportMemo> {
        // A panic while the memo was held leaves at worst a stale entry
        // keyed by content, which stays right.
        self.imports
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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
/// cannot be read) and its size when it was read (a file known by its id is
/// not read; see [`FileFacts::size`]).
#[derive(Clone, Debug)]
pub(super) struct FileFacts {
    pub key: Option<String>,
    pub bytes: Option<u64>,
}

impl FileFacts {
    /// The file's size: from its read, or from the disk now.
    pub(super) fn size(&self, root: &Path, file: &str) -> u64 {
        self.bytes
            .or_else(|| std::fs::metadata(root.join(file)).ok().map(|m| m.len()))
            .unwrap_or(0)
    }
}

/// What is known of the linted files' content without reading them: the
/// git blob id of each file whose content on disk is the committed one
/// (paths relative to the lint root), and how to make the same kind of id
/// from bytes, for the files that have to be read. With it, a measurement
/// reads only the files the attempt changed, not every file of the tree.
#[derive(Clone, Debug, Default)]
pub struct KnownContent {
    pub ids: HashMap<String, String>,
    /// Makes a blob id from content (git's `hash-object`).
    pub id_of: Option<fn(&[u8]) -> String>,
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
    ///
    /// A file's content counts by its digest: its blob id when `known`
    /// has it (the file is then not read, unless its imports are not in
    /// `memo`), else the id `known` makes of the bytes read, else their
    /// SHA-256.
    pub(super) fn files(
        &self,
        root: &Path,
        files: &[String],
        known: Option<&KnownContent>,
        memo: &mut ImportMemo,
    ) -> Vec<FileFacts> {
        memo.follow(files);
        let digest_of = |content: &[u8]| match known.and_then(|k| k.id_of) {
            Some(id_of) => id_of(content),
            None => hex::encode(Sha256::digest(content)),
        };
        // What each file is, by digest; its content when it had to be read.
        let mut contents: Vec<Option<Vec<u8>>> = vec![None; files.len()];
        let digests: Vec<Option<String>> = files
            .iter()
            .enumerate()
            .map(|(i, file)| {
                if let Some(id) = known.and_then(|k| k.ids.get(file)) {
                    return Some(id.clone());
                }
                let content = std::fs::read(root.join(file)).ok()?;
                let digest = digest_of(&content);
                contents[i] = Some(content);
                Some(digest)
            })
            .collect();
        let index = ModuleIndex::new(files);
        let mut facts = Vec::with_capacity(files.len());
        for (i, file) in files.iter().enumerate() {
            let Some(digest) = &digests[i] else {
                facts.push(FileFacts {
                    key: None,
                    bytes: None,
                });
                continue;
            };
            if memo.imports(i, digest).is_none() {
                let content = match contents[i].take() {
                    Some(content) => Some(content),
                    None => std::fs::read(root.join(file)).ok(),
                };
                let Some(content) = content else {
                    facts.push(FileFacts {
                        key: None,
                        bytes: None,
                    });
                    continue;
                };
                let deps = index.imports_of(i, &String::from_utf8_lossy(&content));
                memo.remember(i, digest, deps.into_iter().collect());
                contents[i] = Some(content);
            }
            let deps = memo.imports(i, digest).unwrap_or_default();
            let mut hash = Sha256::new();
            field(&mut hash, &self.base);
            field(&mut hash, file.as_bytes());
            field(&mut hash, digest.as_bytes());
            for &dep in deps {
                field(&mut hash, files[dep].as_bytes());
                field(&mut hash, digests[dep].as_deref().unwrap_or("").as_bytes());
            }
            facts.push(FileFacts {
                key: Some(hex::encode(hash.finalize())),
                bytes: contents[i].as_ref().map(|c| c.len() as u64),
            });
        }
        memo.keep();
        facts
    }
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
        let env = python_env();
        let files: Vec<String> = ["a.py", "b.py", "c.py"].map(String::from).to_vec();
        let keys = |root: &Path| -> Vec<Option<String>> {
            Keys::new(&env, root, root)
                .files(root, &files, None, &mut ImportMemo::default())
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

    fn python_env() -> PythonEnv {
        PythonEnv {
            python: PathBuf::from("/usr/bin/python3"),
            source: crate::tools::EnvSource::SystemPython,
            pytest_version: String::new(),
            pylint_version: "4.1.4".into(),
            layout: crate::tools::PythonLayout::default(),
        }
    }

    /// A stand-in for git's blob id: any id that follows the content.
    fn fake_blob_id(content: &[u8]) -> String {
        format!("blob-{}", hex::encode(Sha256::digest(content)))
    }

    /// `files` (under `root`) known by the ids of their content on disk.
    fn known_as_on_disk(root: &Path, files: &[String]) -> KnownContent {
        KnownContent {
            ids: files
                .iter()
                .map(|f| {
                    let content = std::fs::read(root.join(f)).expect("read");
                    (f.clone(), fake_blob_id(&content))
                })
                .collect(),
            id_of: Some(fake_blob_id),
        }
    }

    /// The files' keys, in order.
    fn key_list(facts: &[FileFacts]) -> Vec<Option<String>> {
        facts.iter().map(|f| f.key.clone()).collect()
    }

    #[test]
    fn files_known_by_their_id_are_not_read_and_key_like_read_ones() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let write = |name: &str, text: &str| std::fs::write(root.join(name), text).expect("write");
        write("a.py", "import b\n");
        write("b.py", "X = 1\n");
        write("c.py", "Y = 2\n");
        let env = python_env();
        let files: Vec<String> = ["a.py", "b.py", "c.py"].map(String::from).to_vec();
        let keys = Keys::new(&env, root, root);
        let all_read = KnownContent {
            ids: HashMap::new(),
            id_of: Some(fake_blob_id),
        };
        let mut memo = ImportMemo::default();
        let read = keys.files(root, &files, Some(&all_read), &mut memo);
        assert!(
            read.iter().all(|f| f.bytes.is_some()),
            "every file was read"
        );

        // The same content known by its ids: with the imports remembered,
        // no file is read; proven by taking the files off the disk.
        let known = known_as_on_disk(root, &files);
        for f in &files {
            std::fs::remove_file(root.join(f)).expect("rm");
        }
        let unread = keys.files(root, &files, Some(&known), &mut memo);
        assert_eq!(key_list(&unread), key_list(&read), "same keys, no reads");
        assert!(unread.iter().all(|f| f.bytes.is_none()), "no file was read");

        // A changed file (not in `ids`) is read; its importer's key follows.
        write("b.py", "X = 2\n");
        let mut changed = known.clone();
        changed.ids.remove("b.py");
        let after = keys.files(root, &files, Some(&changed), &mut memo);
        assert_eq!(after[1].bytes, Some(6), "b.py was read");
        assert_ne!(after[1].key, read[1].key);
        assert_ne!(after[0].key, read[0].key, "a imports b");
        assert_eq!(after[2].key, read[2].key, "c does not import b");

        // Another list of files: imports resolve anew, so files are read.
        let fewer: Vec<String> = files[..2].to_vec();
        let listed = keys.files(root, &fewer, Some(&changed), &mut memo);
        assert_eq!(
            listed[0].key, None,
            "a.py is off the disk and its imports unknown"
        );
    }

    #[test]
    fn a_later_run_over_the_same_files_reads_none_of_them_for_their_keys() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = tempfile::tempdir().expect("cache dir");
        let root = dir.path();
        let files: Vec<String> = (0..100).map(|i| format!("m{i}.py")).collect();
        for (i, file) in files.iter().enumerate() {
            let text = match i {
                0 => "X = 0\n".to_string(),
                _ => format!("import m{}\n", i - 1),
            };
            std::fs::write(root.join(file), text).expect("write");
        }
        let known = known_as_on_disk(root, &files);
        let env = python_env();
        let keys = Keys::new(&env, root, root);
        let kept = || ImportMemo::kept_in(Some(cache.path().join("pylint-imports")));
        let first = keys.files(root, &files, Some(&known), &mut kept());
        assert!(first.iter().all(|f| f.bytes.is_some()), "read for imports");
        // The next run: a new memo, the same files off the disk.
        for f in &files {
            std::fs::remove_file(root.join(f)).expect("rm");
        }
        let later = keys.files(root, &files, Some(&known), &mut kept());
        assert_eq!(key_list(&later), key_list(&first), "same keys, no reads");
        // Without the kept memo the files would have to be read.
        let unkept = keys.files(root, &files, Some(&known), &mut ImportMemo::default());
        assert!(unkept.iter().all(|f| f.key.is_none()));
    }
}
