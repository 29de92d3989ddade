//! Symbolic links in the tested tree that lead out of it.
//!
//! swarm never follows a committed symlink out of the project (see
//! `stage::read_source`), and under the sandbox pytest cannot either: a
//! link to a folder outside the worktree is unreadable there, and pytest
//! would stop collecting with a permission error. Such links are handed to
//! pytest as `--ignore`, and the run's output says so.

use std::path::{Path, PathBuf};

/// The most entries looked at; a tree larger than this is not searched further.
const MAX_ENTRIES: usize = 200_000;

/// Links under `root` (not followed, `.git` skipped) whose target is not
/// beneath `boundary`, sorted. Dangling links are left to pytest.
pub(super) fn leading_out(root: &Path, boundary: &Path) -> Vec<PathBuf> {
    let boundary = boundary
        .canonicalize()
        .unwrap_or_else(|_| boundary.to_path_buf());
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                found.sort();
                return found;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_symlink() {
                let outside = path
                    .canonicalize()
                    .is_ok_and(|target| !target.starts_with(&boundary));
                if outside {
                    found.push(path);
                }
            } else if kind.is_dir() && entry.file_name() == "node_modules" {
                // Installed JavaScript dependencies, laid as links to the
                // user's (pytest never collects there by default): one
                // entry for the folder, not one per package.
                if holds_link_out(&path, &boundary) {
                    found.push(path);
                }
            } else if kind.is_dir() && entry.file_name() != ".git" {
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Whether a dependencies folder holds a link (at its top or in a
/// `@scope/` folder) leading out of `boundary`.
fn holds_link_out(dir: &Path, boundary: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_symlink() => path
                .canonicalize()
                .is_ok_and(|target| !target.starts_with(boundary)),
            Ok(kind) if kind.is_dir() && entry.file_name().to_string_lossy().starts_with('@') => {
                holds_link_out(&path, boundary)
            }
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_only_links_that_leave_the_boundary() {
        let outside = tempfile::tempdir().unwrap();
        let tree = tempfile::tempdir().unwrap();
        let root = tree.path();
        std::fs::create_dir_all(root.join("pkg/deep")).unwrap();
        std::fs::write(root.join("pkg/a.py"), "").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("pkg/deep/data")).unwrap();
        std::os::unix::fs::symlink(root.join("pkg"), root.join("inside")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/x", root.join("dangling")).unwrap();
        assert_eq!(leading_out(root, root), vec![root.join("pkg/deep/data")]);
        assert!(leading_out(root, Path::new("/")).is_empty());
        // Installed dependencies laid as links: the folder, once.
        std::fs::create_dir_all(root.join("web/node_modules/@scope")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("web/node_modules/@scope/a")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("web/node_modules/b")).unwrap();
        assert_eq!(
            leading_out(root, root),
            vec![root.join("pkg/deep/data"), root.join("web/node_modules")]
        );
    }
}
