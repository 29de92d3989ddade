//! Deleting what a run left on disk: its worktree folder, its scratch
//! folder and git's admin entry for the worktree. Missing pieces are fine.
//!
//! It removes what it is told to; which runs are over, and whether a run's
//! lock is held, is for `prune`, `clean` and `workspace` to decide.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::admin::admin_entries;
use super::layout::scratch_of;
use super::repo::canonical;
use super::GitError;

/// Deletes a run's worktree folder and its admin entry (the given one, or
/// any pointing at `path`). Missing pieces are fine.
pub(crate) fn remove_run(
    path: &Path,
    admin_dir: Option<&Path>,
    common_dir: &Path,
) -> Result<(), GitError> {
    let admin_dirs: Vec<PathBuf> = match admin_dir {
        Some(dir) => vec![dir.to_path_buf()],
        None => {
            let resolved = canonical(path).ok();
            admin_entries(common_dir)
                .into_iter()
                .filter(|(_, worktree)| worktree == path || Some(worktree) == resolved.as_ref())
                .map(|(admin, _)| admin)
                .collect()
        }
    };
    remove_dir(path)?;
    remove_dir(&scratch_of(path))?;
    for admin in admin_dirs {
        remove_dir(&admin)?;
    }
    Ok(())
}

/// Removes the folder (or file) `path` and what is in it; a missing one is
/// no error.
pub(crate) fn remove_dir(path: &Path) -> Result<(), GitError> {
    // What the parallel pass could not remove (a folder without write
    // permission, a file that came back) gets the plain removal's error.
    let _ = remove_tree_in_parallel(path);
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(GitError::io("remove", path, e)),
    }
}

/// Removes the file `path`; a missing one is no error.
pub(crate) fn remove_file(path: &Path) -> Result<(), GitError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(GitError::io("remove", path, e)),
    }
}

/// Removes the folder `path` and everything in it, the files of different
/// folders on several threads: a worktree of 10,000 files takes half the
/// time of one thread's removal (unlinks in one folder contend for it, in
/// different folders they do not). Symbolic links are removed, never
/// followed. Stops at the first error.
pub(crate) fn remove_tree_in_parallel(path: &Path) -> std::io::Result<()> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    if !fs::symlink_metadata(path)?.is_dir() {
        return fs::remove_file(path);
    }
    let mut folders = vec![path.to_path_buf()];
    let mut next = 0;
    while next < folders.len() {
        for entry in fs::read_dir(&folders[next])? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                folders.push(entry.path());
            }
        }
        next += 1;
    }
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get() * 2)
        .clamp(1, 8)
        .min(folders.len());
    let taken = AtomicUsize::new(0);
    let emptied: std::io::Result<()> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| -> std::io::Result<()> {
                    while let Some(folder) = folders.get(taken.fetch_add(1, Ordering::Relaxed)) {
                        for entry in fs::read_dir(folder)? {
                            let entry = entry?;
                            if !entry.file_type()?.is_dir() {
                                fs::remove_file(entry.path())?;
                            }
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err(std::io::Error::other("a removal thread panicked")))
        })
    });
    emptied?;
    // Deepest first: every folder comes after its parent in the list.
    folders.iter().rev().try_for_each(fs::remove_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file and folder goes, on several threads; what a symbolic link
    /// points at outside stays.
    #[test]
    fn a_tree_is_removed_in_parallel_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs::create_dir_all(outside.join("keep")).unwrap();
        fs::write(outside.join("keep/file.txt"), "mine").unwrap();
        let tree = dir.path().join("tree");
        for p in 0..20 {
            let folder = tree.join(format!("pkg{p}/sub"));
            fs::create_dir_all(&folder).unwrap();
            for m in 0..30 {
                fs::write(folder.join(format!("m{m}.py")), "x = 1\n").unwrap();
                fs::write(tree.join(format!("pkg{p}/t{m}.py")), "y = 2\n").unwrap();
            }
        }
        fs::create_dir_all(tree.join("empty/deeper/still")).unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("pkg3/link-to-folder")).unwrap();
        std::os::unix::fs::symlink(outside.join("keep/file.txt"), tree.join("link-to-file"))
            .unwrap();
        remove_tree_in_parallel(&tree).unwrap();
        assert!(!tree.exists());
        assert_eq!(
            fs::read_to_string(outside.join("keep/file.txt")).unwrap(),
            "mine"
        );
        // A missing tree is an error for the parallel pass, nothing for
        // `remove_dir`.
        assert!(remove_tree_in_parallel(&tree).is_err());
        remove_dir(&tree).unwrap();
    }
}
