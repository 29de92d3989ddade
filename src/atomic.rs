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
