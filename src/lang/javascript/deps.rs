//! Making the user's installed dependencies visible to the tools in a run's
//! worktree, read-only, without copying them, and so they can never be
//! committed nor changed.
//!
//! The worktree lives outside the repository, so node (which looks for
//! `node_modules` in the importing file's folder and each folder above it)
//! would not find the user's. For every `node_modules` folder of the user's
//! checkout that node would look in ([`super::Project::node_modules`]),
//! [`lay`] makes a real, empty-but-for-links folder at the same place in
//! the worktree and, in it, one symlink per installed package pointing to
//! the user's (scoped packages get a real `@scope/` folder with one link
//! per package). A link the user's installer made to a package of the
//! repository itself (an npm/yarn/pnpm workspace member, `../../packages/
//! units`) points to that package *in the worktree*, so a change to it is
//! what the tests import. Caches tools write into `node_modules` (`.vite`,
//! `.vite-temp`, `.cache`: any dot-entry but the install's own) are not
//! linked: the tools make their own in the worktree's folder.
//!
//! Why this cannot be committed or change the user's files:
//! - swarm's commits are built from the proposal's files in memory on top
//!   of the run branch's tree (`git::workspace`), never from the
//!   worktree's untracked files, and the Reviewer refuses any path under
//!   `node_modules` ([`super::rules::protection`]): nothing laid here can
//!   reach a commit, so the fast-forward never replaces the user's folder;
//! - the links point at the user's files, which the sandbox lets tools read
//!   and never write (only the worktree and the process's cell are
//!   writable, and Landlock checks the resolved path): a tool that writes
//!   through a link fails;
//! - removing the worktree removes the links, not what they point to.
//!
//! A repository that commits its `node_modules` needs none of this: a
//! folder that is already in the worktree is left as it is.

use std::io;
use std::path::{Component, Path, PathBuf};

/// The dot-entries of `node_modules` that are part of the install (the
/// executables' links, pnpm's store and the installers' own records); any
/// other dot-entry is a tool's cache or scratch folder (`.vite`,
/// `.vite-temp`, `.cache`) and is not linked, so the tools make their own,
/// writable, in the worktree's folder.
const INSTALL_DOT_ENTRIES: &[&str] = &[
    ".bin",
    ".pnpm",
    ".package-lock.json",
    ".modules.yaml",
    ".yarn-state.yml",
    ".yarn-integrity",
];

/// What [`lay`] made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaidDependencies {
    /// The `node_modules` folders made in the worktree.
    pub folders: Vec<PathBuf>,
    /// How many links were made.
    pub links: usize,
    /// The user's folders the links lead into (canonical): readable in the
    /// sandbox, never writable.
    pub readable: Vec<PathBuf>,
}

/// Mirrors each of `folders` (the user's `node_modules` folders, inside
/// `checkout`, the user's working tree) at the same place in `worktree`
/// (see the module doc).
pub fn lay(checkout: &Path, worktree: &Path, folders: &[PathBuf]) -> io::Result<LaidDependencies> {
    let mut laid = LaidDependencies::default();
    for user in folders {
        let Ok(rel) = user.strip_prefix(checkout) else {
            continue;
        };
        let mirror = worktree.join(rel);
        if mirror.symlink_metadata().is_ok() {
            continue;
        }
        std::fs::create_dir_all(&mirror)?;
        laid.folders.push(mirror.clone());
        laid.readable.push(user.canonicalize()?);
        mirror_entries(checkout, worktree, user, &mirror, true, &mut laid)?;
    }
    laid.readable.sort();
    laid.readable.dedup();
    Ok(laid)
}

/// Links every entry of the user's `from` into `to`; `scopes` makes real
/// folders for `@scope` entries (one level).
fn mirror_entries(
    checkout: &Path,
    worktree: &Path,
    from: &Path,
    to: &Path,
    scopes: bool,
    laid: &mut LaidDependencies,
) -> io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(text) = name.to_str() else { continue };
        if text.starts_with('.') && !INSTALL_DOT_ENTRIES.contains(&text) {
            continue;
        }
        let source = entry.path();
        let kind = entry.file_type()?;
        if scopes && text.starts_with('@') && kind.is_dir() {
            let scope = to.join(&name);
            std::fs::create_dir_all(&scope)?;
            mirror_entries(checkout, worktree, &source, &scope, false, laid)?;
            continue;
        }
        let target = if kind.is_symlink() {
            let link = std::fs::read_link(&source)?;
            let resolved = normalize(&from.join(link));
            match workspace_member(checkout, &resolved) {
                Some(rel) => worktree.join(rel),
                None => {
                    if !resolved.starts_with(checkout) {
                        if let Ok(real) = resolved.canonicalize() {
                            laid.readable.push(real);
                        }
                    }
                    resolved
                }
            }
        } else {
            source
        };
        std::os::unix::fs::symlink(&target, to.join(&name))?;
        laid.links += 1;
    }
    Ok(())
}

/// `path` with `.` and `..` resolved lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The path of `target` relative to `checkout` when it is a folder of the
/// repository itself, not inside any `node_modules` (a workspace member).
fn workspace_member(checkout: &Path, target: &Path) -> Option<PathBuf> {
    let rel = target.strip_prefix(checkout).ok()?;
    let inside_dependencies = rel.components().any(|c| c.as_os_str() == "node_modules");
    (!inside_dependencies && !rel.as_os_str().is_empty()).then(|| rel.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn packages_are_linked_and_workspace_members_point_into_the_worktree() {
        let user = tempfile::tempdir().expect("tempdir");
        let tree = tempfile::tempdir().expect("tempdir");
        let (checkout, worktree) = (user.path(), tree.path());
        let nm = checkout.join("node_modules");
        write(&nm.join("vitest/package.json"), "{}");
        write(&nm.join("@types/node/index.d.ts"), "");
        write(&nm.join(".vite/vitest/results.json"), "{}");
        write(&nm.join(".bin/vitest"), "");
        write(&checkout.join("packages/units/src/index.js"), "export {}");
        std::fs::create_dir_all(nm.join("@shipping")).expect("mkdir");
        std::os::unix::fs::symlink("../../packages/units", nm.join("@shipping/units"))
            .expect("link");
        std::fs::create_dir_all(worktree.join("packages/units")).expect("mkdir");

        let laid = lay(checkout, worktree, std::slice::from_ref(&nm)).expect("laid");
        let mirror = worktree.join("node_modules");
        assert_eq!(laid.folders, std::slice::from_ref(&mirror));
        assert_eq!(laid.links, 4);
        assert!(mirror.join(".bin").exists());
        assert!(std::fs::symlink_metadata(&mirror).expect("exists").is_dir());
        assert_eq!(
            std::fs::read_link(mirror.join("vitest")).expect("a link"),
            nm.join("vitest")
        );
        assert_eq!(
            std::fs::read_link(mirror.join("@types/node")).expect("a link"),
            nm.join("@types/node")
        );
        assert_eq!(
            std::fs::read_link(mirror.join("@shipping/units")).expect("a link"),
            worktree.join("packages/units")
        );
        assert!(!mirror.join(".vite").exists(), "caches are the tools' own");
        assert_eq!(laid.readable, [nm.canonicalize().expect("canonical")]);
        // Laying again leaves an existing folder alone.
        let again = lay(checkout, worktree, &[nm]).expect("laid");
        assert!(again.folders.is_empty());
    }
}
