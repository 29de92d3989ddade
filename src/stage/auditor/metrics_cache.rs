//! The audit's static metrics of every file, kept by file and content
//! (path and git blob id) so that a second run over the same files parses
//! only those whose content changed, and made on every core when they must
//! be made.
//!
//! One JSON file per list of files under `<cache dir>/metrics/` holds the
//! metrics of that list by path and blob id: a run over the same files with
//! one file edited reuses every other file's metrics; a run that adds or
//! removes a file starts a new list (parsed in full once). At most
//! [`MAX_LISTS`] lists are kept, the oldest removed first. An entry that
//! cannot be read or parsed is a miss, never an error; a file whose blob id
//! is not known (changed on disk, or a submodule's) is parsed every time.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::tools::KnownContent;
use swarm_analysis::FileMetrics;

/// How many lists of files the folder keeps.
pub const MAX_LISTS: usize = 8;

/// Bumped when the metrics change meaning: older entries are then misses.
const FORMAT: &str = "metrics-2";

/// The metrics of one list of files, by path, with the blob id they were
/// made from.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Stored {
    format: String,
    files: HashMap<String, (String, FileMetrics)>,
}

/// Where the metrics are kept between runs (`None`: not kept).
#[derive(Clone, Debug)]
pub struct MetricsCache {
    dir: Option<PathBuf>,
}

impl MetricsCache {
    /// Metrics kept under `<cache_dir>/metrics/`, or not kept without a
    /// cache folder.
    pub fn new(cache_dir: Option<&Path>) -> Self {
        Self {
            dir: cache_dir.map(|d| d.join("metrics")),
        }
    }

    /// The metrics of every readable file of `files` (relative to `root`):
    /// from the cache for the files `known` names by a blob id the cache
    /// holds them for, parsed (on every core) for the rest; the cache then
    /// holds this list's metrics.
    pub fn measure(
        &self,
        root: &Path,
        files: &[String],
        known: Option<&KnownContent>,
    ) -> BTreeMap<String, FileMetrics> {
        let path = self.list_path(files);
        let mut stored = path
            .as_deref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|bytes| serde_json::from_slice::<Stored>(&bytes).ok())
            .filter(|s| s.format == FORMAT)
            .unwrap_or_default();
        let id_of = |file: &String| known.and_then(|k| k.ids.get(file));
        let mut out = BTreeMap::new();
        let mut todo = Vec::new();
        for file in files {
            match (id_of(file), stored.files.get(file)) {
                (Some(id), Some((was, metrics))) if id == was => {
                    out.insert(file.clone(), metrics.clone());
                }
                _ => todo.push(file.clone()),
            }
        }
        let made = measure_in_parallel(root, &todo);
        let changed = made.iter().any(|(f, _)| id_of(f).is_some());
        for (file, metrics) in made {
            if let Some(id) = id_of(&file) {
                stored
                    .files
                    .insert(file.clone(), (id.clone(), metrics.clone()));
            }
            out.insert(file, metrics);
        }
        if let (Some(path), true) = (path, changed) {
            stored.format = FORMAT.to_string();
            stored.files.retain(|f, _| out.contains_key(f));
            if crate::atomic::write_json(&path, &stored).is_ok() {
                if let Some(dir) = &self.dir {
                    crate::atomic::keep_newest_json(dir, MAX_LISTS, &path);
                }
            }
        }
        out
    }

    /// `<dir>/<hash of the file list>.json`.
    fn list_path(&self, files: &[String]) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        let mut hash = Sha256::new();
        for file in files {
            hash.update((file.len() as u64).to_le_bytes());
            hash.update(file.as_bytes());
        }
        Some(dir.join(format!("{}.json", &hex::encode(hash.finalize())[..32])))
    }
}

/// The metrics of `files`, parsed on every core; unreadable files left out.
fn measure_in_parallel(root: &Path, files: &[String]) -> Vec<(String, FileMetrics)> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len().div_ceil(64).max(1));
    let chunk = files.len().div_ceil(workers).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|part| scope.spawn(move || measure_some(root, part)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

fn measure_some(root: &Path, files: &[String]) -> Vec<(String, FileMetrics)> {
    files
        .iter()
        .filter_map(|f| {
            let bytes = crate::stage::read_source(root, f)?;
            let text = String::from_utf8_lossy(&bytes);
            Some((f.clone(), crate::lang::metrics(f, &text)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_audit_parses_only_the_changed_file() {
        let work = tempfile::tempdir().expect("temp dir");
        let cache_dir = tempfile::tempdir().expect("temp dir");
        let root = work.path();
        let write = |name: &str, text: &str| std::fs::write(root.join(name), text).expect("write");
        write(
            "a.py",
            "def f(x):\n    if x:\n        return 1\n    return 2\n",
        );
        write("b.py", "X = 1\n");
        let files: Vec<String> = ["a.py", "b.py"].map(String::from).to_vec();
        let known = |ids: &[(&str, &str)]| KnownContent {
            ids: ids
                .iter()
                .map(|(f, i)| (f.to_string(), i.to_string()))
                .collect(),
            id_of: None,
        };
        let cache = MetricsCache::new(Some(cache_dir.path()));
        let first = cache.measure(root, &files, Some(&known(&[("a.py", "1"), ("b.py", "2")])));
        assert_eq!(first["a.py"].functions[0].complexity, 2);
        assert_eq!(first, MetricsCache::new(None).measure(root, &files, None));

        // Both files now say something else on disk. a.py keeps its id: its
        // metrics come from the cache, unparsed; b.py's id changed: parsed.
        write("a.py", "this is not python (\n");
        write("b.py", "def g():\n    pass\n");
        let second = cache.measure(root, &files, Some(&known(&[("a.py", "1"), ("b.py", "3")])));
        assert_eq!(second["a.py"], first["a.py"], "from the cache");
        assert_eq!(second["b.py"].functions.len(), 1, "parsed again");

        // Without ids nothing comes from the cache.
        let unknown = cache.measure(root, &files, None);
        assert!(!unknown["a.py"].syntax_errors.is_empty());
    }

    #[test]
    fn at_most_a_few_lists_are_kept() {
        let work = tempfile::tempdir().expect("temp dir");
        let cache_dir = tempfile::tempdir().expect("temp dir");
        let cache = MetricsCache::new(Some(cache_dir.path()));
        for i in 0..MAX_LISTS + 3 {
            let name = format!("m{i}.py");
            std::fs::write(work.path().join(&name), "X = 1\n").expect("write");
            let known = KnownContent {
                ids: [(name.clone(), "1".to_string())].into_iter().collect(),
                id_of: None,
            };
            cache.measure(work.path(), &[name], Some(&known));
        }
        let lists = std::fs::read_dir(cache_dir.path().join("metrics"))
            .expect("dir")
            .count();
        assert_eq!(lists, MAX_LISTS);
    }
}
