//! What the start-up probes found, remembered between runs.
//!
//! Every run asks the interpreter for its layout and its tools' versions
//! (see `env::probe`) and starts it under the sandbox's layers (see
//! `sandbox`): two Python start-ups, a fifth of a second or more through a
//! launcher such as pyenv's shim, which on a run whose baseline and lint
//! come from the cache is most of swarm's own time. Their answers only
//! change when what they read changes, so they are kept in
//! `<cache dir>/probes/<kind>-<key>.json` with
//!
//! - a **key** made of everything the answer depends on that can be read
//!   without running Python (the interpreter's path, the environment
//!   variables that steer Python and its launchers, the kernel's boot and
//!   settings for the sandbox, swarm's version), and
//! - **witnesses**: the files and folders the answer came from (the
//!   interpreter, its `sys.path` folders and `.pth` files, its virtualenv's
//!   `pyvenv.cfg`), each with its inode, size and modification and change
//!   times when the probe ran. A package installed or removed, an
//!   interpreter replaced or a virtualenv made in its place changes one of
//!   them, and the probe runs again.
//!
//! Checking an entry is a few dozen `stat` calls. A missing, unreadable or
//! stale entry is a miss; a write that fails is ignored (the probe's answer
//! is used either way). As with git's index, a witness changed less than
//! [`RACY`] before the probe could change again within the same tick of
//! the file system's clock and look unchanged: such an answer is not
//! remembered (the next run's probe will be).

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Bumped when an entry's shape or meaning changes.
const FORMAT: u32 = 1;

/// How recent a witness's change may be for an answer to be remembered:
/// well past the file system clock's tick (a jiffy, at most 10 ms).
const RACY: std::time::Duration = std::time::Duration::from_millis(100);

/// The folder of remembered probes, `<cache dir>/probes`.
#[derive(Clone, Debug)]
pub(crate) struct ProbeMemo {
    dir: PathBuf,
}

/// A probe's key: what its answer depends on, hashed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MemoKey {
    kind: &'static str,
    hash: String,
}

/// Builds a [`MemoKey`] from named parts (length-prefixed, so parts never
/// run into each other).
pub(crate) struct KeyBuilder {
    kind: &'static str,
    hasher: Sha256,
}

impl KeyBuilder {
    /// A key of `kind` (`python`, `sandbox`) for this swarm version.
    pub fn new(kind: &'static str) -> Self {
        let mut builder = Self {
            kind,
            hasher: Sha256::new(),
        };
        builder.part("format", FORMAT.to_string());
        builder.part("swarm", env!("CARGO_PKG_VERSION"));
        builder
    }

    /// Adds one named part.
    pub fn part(&mut self, name: &str, value: impl AsRef<[u8]>) -> &mut Self {
        let value = value.as_ref();
        for bytes in [name.as_bytes(), value] {
            self.hasher.update((bytes.len() as u64).to_le_bytes());
            self.hasher.update(bytes);
        }
        self
    }

    /// Adds a path (its bytes as they are).
    pub fn path(&mut self, name: &str, path: &Path) -> &mut Self {
        use std::os::unix::ffi::OsStrExt;
        self.part(name, path.as_os_str().as_bytes())
    }

    pub fn finish(self) -> MemoKey {
        MemoKey {
            kind: self.kind,
            hash: hex::encode(self.hasher.finalize()),
        }
    }
}

/// What `stat` said of a witness: enough to see it replaced or changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Seen {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    /// What a symbolic link points at, seen the same way.
    target: Option<Box<Seen>>,
}

impl Seen {
    fn of(path: &Path) -> Option<Seen> {
        let own = std::fs::symlink_metadata(path).ok()?;
        let target = if own.file_type().is_symlink() {
            // A dangling link is seen as the link alone.
            std::fs::metadata(path)
                .ok()
                .map(|m| Box::new(Seen::from(&m)))
        } else {
            None
        };
        Some(Seen {
            target,
            ..Seen::from(&own)
        })
    }

    /// Changed less than [`RACY`] before `now` (or after it), here or in
    /// what a link points at.
    fn is_racy(&self, now: std::time::SystemTime) -> bool {
        let Ok(since_epoch) = now.duration_since(std::time::UNIX_EPOCH) else {
            return true;
        };
        let limit = since_epoch.saturating_sub(RACY);
        let recent = |(secs, nanos): (i64, i64)| match (u64::try_from(secs), u32::try_from(nanos)) {
            (Ok(secs), Ok(nanos)) => std::time::Duration::new(secs, nanos) > limit,
            _ => true,
        };
        recent(self.mtime)
            || recent(self.ctime)
            || self.target.as_ref().is_some_and(|t| t.is_racy(now))
    }
}

impl From<&Metadata> for Seen {
    fn from(m: &Metadata) -> Self {
        Seen {
            dev: m.dev(),
            ino: m.ino(),
            len: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            target: None,
        }
    }
}

/// One remembered answer.
#[derive(Serialize, Deserialize)]
struct Entry<T> {
    format: u32,
    key: String,
    /// Each witness with what `stat` said of it (`None`: it did not exist).
    witnesses: Vec<(PathBuf, Option<Seen>)>,
    value: T,
}

impl ProbeMemo {
    /// The memo under `cache_dir`.
    pub fn new(cache_dir: &Path) -> Self {
        Self {
            dir: cache_dir.join("probes"),
        }
    }

    /// Where the entry of `key` lives.
    pub fn entry_path(&self, key: &MemoKey) -> PathBuf {
        self.dir
            .join(format!("{}-{}.json", key.kind, &key.hash[..32]))
    }

    /// The answer remembered under `key` when every witness is as it was.
    pub fn recall<T: DeserializeOwned>(&self, key: &MemoKey) -> Option<T> {
        let text = std::fs::read(self.entry_path(key)).ok()?;
        let entry: Entry<T> = serde_json::from_slice(&text).ok()?;
        if entry.format != FORMAT || entry.key != key.hash {
            return None;
        }
        let unchanged = entry
            .witnesses
            .iter()
            .all(|(path, seen)| Seen::of(path) == *seen);
        unchanged.then_some(entry.value)
    }

    /// Remembers `value` under `key`, with what `stat` says of each
    /// witness now. Best effort: a write that fails leaves no entry.
    pub fn remember<T: Serialize>(&self, key: &MemoKey, value: &T, witnesses: Vec<PathBuf>) {
        let now = std::time::SystemTime::now();
        let mut witnesses: Vec<(PathBuf, Option<Seen>)> = witnesses
            .into_iter()
            .map(|path| {
                let seen = Seen::of(&path);
                (path, seen)
            })
            .collect();
        witnesses.sort_by(|a, b| a.0.cmp(&b.0));
        witnesses.dedup_by(|a, b| a.0 == b.0);
        if let Some((path, _)) = witnesses
            .iter()
            .find(|(_, seen)| seen.as_ref().is_some_and(|s| s.is_racy(now)))
        {
            tracing::debug!(
                "not remembering a probe: {} changed a moment ago",
                path.display()
            );
            return;
        }
        let entry = Entry {
            format: FORMAT,
            key: key.hash.clone(),
            witnesses,
            value,
        };
        let path = self.entry_path(key);
        if let Err(e) = crate::atomic::write_json(&path, &entry) {
            tracing::debug!("could not remember a probe in {}: {e}", path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past [`RACY`], so what was just made can be a witness.
    fn settle() {
        std::thread::sleep(RACY + std::time::Duration::from_millis(50));
    }

    #[test]
    fn an_answer_is_recalled_until_a_witness_changes() {
        let dir = tempfile::tempdir().unwrap();
        let memo = ProbeMemo::new(&dir.path().join("cache"));
        let site = dir.path().join("site-packages");
        std::fs::create_dir(&site).unwrap();
        let link = dir.path().join("python");
        let real = dir.path().join("python3.11");
        std::fs::write(&real, "interpreter").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let absent = dir.path().join("pyvenv.cfg");
        let key = {
            let mut b = KeyBuilder::new("python");
            b.path("python", &link);
            b.finish()
        };
        assert_eq!(memo.recall::<String>(&key), None);
        // Just made: too recent to vouch for anything.
        memo.remember(&key, &"3.11".to_string(), vec![site.clone()]);
        assert_eq!(memo.recall::<String>(&key), None);
        settle();
        memo.remember(
            &key,
            &"3.11".to_string(),
            vec![link.clone(), site.clone(), absent.clone()],
        );
        assert_eq!(memo.recall::<String>(&key).as_deref(), Some("3.11"));

        // Another key misses.
        let other = {
            let mut b = KeyBuilder::new("python");
            b.path("python", &real);
            b.finish()
        };
        assert_eq!(memo.recall::<String>(&other), None);

        // A package installed: the folder changed.
        std::fs::create_dir(site.join("pytest-9.2.0.dist-info")).unwrap();
        assert_eq!(memo.recall::<String>(&key), None);
        memo.remember(
            &key,
            &"3.11".to_string(),
            vec![link.clone(), absent.clone()],
        );
        assert!(memo.recall::<String>(&key).is_some());

        // A file that was not there appears.
        std::fs::write(&absent, "home = /usr/bin\n").unwrap();
        assert_eq!(memo.recall::<String>(&key), None);
        std::fs::remove_file(&absent).unwrap();
        assert!(memo.recall::<String>(&key).is_some());

        // The interpreter behind the link is replaced.
        std::fs::remove_file(&real).unwrap();
        std::fs::write(&real, "another interpreter").unwrap();
        assert_eq!(memo.recall::<String>(&key), None);

        // Forgotten, and a torn entry is a miss.
        settle();
        memo.remember(&key, &"3.12".to_string(), vec![link.clone()]);
        assert_eq!(memo.recall::<String>(&key).as_deref(), Some("3.12"));
        std::fs::remove_file(memo.entry_path(&key)).unwrap();
        assert_eq!(memo.recall::<String>(&key), None);
        std::fs::write(memo.entry_path(&key), "{\"format\":1,").unwrap();
        assert_eq!(memo.recall::<String>(&key), None);
    }

    #[test]
    fn key_parts_do_not_run_into_each_other() {
        let key = |a: &str, b: &str| {
            let mut k = KeyBuilder::new("python");
            k.part("a", a).part("b", b);
            k.finish()
        };
        assert_ne!(key("ab", "c"), key("a", "bc"));
        assert_eq!(key("a", "bc"), key("a", "bc"));
    }
}
