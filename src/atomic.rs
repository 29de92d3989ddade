//! Files replaced whole: the caches write an entry to a temporary file
//! beside its place and rename it over the old one, so a reader (another
//! run, a crash half way) sees the old entry, the new one, or none — never
//! a torn one.

use std::path::Path;

/// Writes `value` as JSON to `path` atomically, creating its folder.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut temp = tempfile::Builder::new()
        .prefix(".entry-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    serde_json::to_writer(&mut temp, value)?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Removes the oldest `.json` files of `dir` (by modification time) past
/// `keep` of them, never `current`: a cache folder of one file per list
/// stays bounded.
pub fn keep_newest_json(dir: &Path, keep: usize, current: &Path) {
    let mut lists: Vec<(std::time::SystemTime, std::path::PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json") && e.path() != current)
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    lists.sort();
    let extra = (lists.len() + 1).saturating_sub(keep);
    for (_, path) in lists.into_iter().take(extra) {
        let _ = std::fs::remove_file(path);
    }
}
