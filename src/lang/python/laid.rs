//! The git-ignored files of the user's checkout that the project's code
//! imports, laid in the run's worktree: generated version modules
//! (setuptools-scm's and hatch-vcs's `_version.py`, versioneer's), extension
//! modules built in place (`build_ext --inplace`, Cython, `maturin
//! develop`: `.so`, `.pyd`) and other generated `.py` files inside the
//! project's packages. The worktree is checked out from git, so without
//! them `import pkg` fails there while it works in the checkout, and the
//! Judge would measure something the user's pytest never sees.
//!
//! What is laid: an ignored `.py`, `.so` or `.pyd` file whose nearest
//! folder the worktree has is a package of the project (it holds an
//! `__init__.py`), or, for an extension module, a folder holding the
//! project's modules. Copied, read-only, not linked: a link would lead
//! Python (which resolves links) back into the checkout. Not laid: anything
//! under a dot-folder (`.venv`, `.tox`, `.pytest_cache`), caches
//! (`__pycache__`), virtualenvs, build output (`build/`, `dist/`,
//! `*.egg-info`), `node_modules`; a file larger than [`FILE_BUDGET`], and
//! whatever would take the laid files past [`TOTAL_BUDGET`].
//!
//! Why the model never sees them and they are never committed: the model
//! is offered the tracked files of `HEAD` only; commits are built from the
//! proposal's files in memory, never from the worktree's; the fast-forward
//! touches only the files the run branch changed. The run keeps them
//! across its resets (`git clean -e`), see [`crate::lang::Suite::laid`].

use std::io;
use std::path::{Path, PathBuf};

/// The largest ignored file laid in a worktree.
pub const FILE_BUDGET: u64 = 32 * 1024 * 1024;
/// The most laid in one worktree, all files together.
pub const TOTAL_BUDGET: u64 = 128 * 1024 * 1024;

/// Folder names never looked into: caches, virtualenvs, build output.
const SKIPPED_FOLDERS: &[&str] = &[
    "__pycache__",
    "node_modules",
    "build",
    "dist",
    "site-packages",
    "venv",
    "env",
];

/// What [`lay`] did with the checkout's ignored files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaidFiles {
    /// The files copied, repo-relative, sorted.
    pub laid: Vec<String>,
    /// Files that would have been laid but are over the size budget, with
    /// their sizes.
    pub over_budget: Vec<(String, u64)>,
}

/// The ignored files of `checkout` (`ignored`: as git lists them, a folder
/// ignored whole ending in `/`) that the project's code imports, by the
/// rules of the module doc, with their sizes; `worktree` is the run's,
/// checked out from the same commit.
pub fn wanted(checkout: &Path, worktree: &Path, ignored: &[String]) -> Vec<(String, u64)> {
    let mut files = Vec::new();
    for entry in ignored {
        let rel = entry.trim_end_matches('/');
        if rel.is_empty() || rel.split('/').any(skipped) {
            continue;
        }
        if entry.ends_with('/') {
            if in_package(worktree, rel, false) {
                walk(checkout, rel, &mut files);
            }
        } else {
            files.push(rel.to_string());
        }
    }
    let mut found: Vec<(String, u64)> = files
        .into_iter()
        .filter(|rel| importable(rel) && in_package(worktree, rel, is_extension(rel)))
        .filter_map(|rel| {
            let meta = checkout.join(&rel).symlink_metadata().ok()?;
            meta.is_file().then_some((rel, meta.len()))
        })
        .collect();
    found.sort();
    found
}

/// Copies the [`wanted`] files from `checkout` into `worktree`, read-only,
/// within the budgets.
pub fn lay(checkout: &Path, worktree: &Path, ignored: &[String]) -> io::Result<LaidFiles> {
    let mut done = LaidFiles::default();
    let mut total = 0u64;
    for (rel, size) in wanted(checkout, worktree, ignored) {
        if size > FILE_BUDGET || total + size > TOTAL_BUDGET {
            done.over_budget.push((rel, size));
            continue;
        }
        let to = worktree.join(&rel);
        if to.symlink_metadata().is_ok() {
            std::fs::remove_file(&to)?;
        }
        if let Some(folder) = to.parent() {
            std::fs::create_dir_all(folder)?;
        }
        std::fs::copy(checkout.join(&rel), &to)?;
        let mut permissions = std::fs::metadata(&to)?.permissions();
        permissions.set_readonly(true);
        std::fs::set_permissions(&to, permissions)?;
        total += size;
        done.laid.push(rel);
    }
    Ok(done)
}

/// A folder name never looked into.
fn skipped(name: &str) -> bool {
    name.starts_with('.')
        || SKIPPED_FOLDERS.contains(&name)
        || name.ends_with(".egg-info")
        || name.ends_with(".dist-info")
}

/// A file Python imports as a module.
fn importable(rel: &str) -> bool {
    rel.ends_with(".py") || is_extension(rel)
}

fn is_extension(rel: &str) -> bool {
    rel.ends_with(".so") || rel.ends_with(".pyd")
}

/// Whether the nearest folder of `rel` that the worktree has is one of the
/// project's packages (an `__init__.py`), or, for an `extension`, any
/// folder holding the project's modules (below the root).
fn in_package(worktree: &Path, rel: &str, extension: bool) -> bool {
    let mut folder = Path::new(rel).parent();
    while let Some(dir) = folder {
        if dir.as_os_str().is_empty() {
            return false;
        }
        let there = worktree.join(dir);
        if there.is_dir() {
            return there.join("__init__.py").is_file() || (extension && holds_modules(&there));
        }
        folder = dir.parent();
    }
    false
}

fn holds_modules(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".py"))
    })
}

/// The files under the ignored folder `rel` of `checkout`, skipped folders
/// left out, pushed as repo-relative paths.
fn walk(checkout: &Path, rel: &str, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(checkout.join(rel)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{rel}/{name}");
        match entry.file_type() {
            Ok(kind) if kind.is_dir() && !skipped(&name) => walk(checkout, &path, out),
            Ok(kind) if kind.is_file() => out.push(path),
            _ => {}
        }
    }
}

/// The worktree paths of `laid` (repo-relative).
pub fn in_worktree(worktree: &Path, laid: &[String]) -> Vec<PathBuf> {
    laid.iter().map(|rel| worktree.join(rel)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn lays_generated_modules_and_extensions_of_packages_and_nothing_else() {
        let checkout = tempfile::tempdir().unwrap();
        let worktree = tempfile::tempdir().unwrap();
        let (c, w) = (checkout.path(), worktree.path());
        for root in [c, w] {
            write(root, "src/pkg/__init__.py", "");
            write(root, "tools/run.py", "");
            write(root, "setup.py", "");
        }
        for rel in [
            "src/pkg/_version.py",
            "src/pkg/_speed.cpython-311-x86_64-linux-gnu.so",
            "src/pkg/_gen/__init__.py",
            "src/pkg/_gen/tables.py",
            "src/pkg/__pycache__/x.cpython-311.pyc",
            "src/pkg/notes.txt",
            "tools/_local.py",
            "tools/_accel.so",
            "_root_generated.py",
            ".venv/lib/python3.11/site-packages/pkg/__init__.py",
            "build/lib/pkg/_version.py",
        ] {
            write(c, rel, "x = 1\n");
        }
        let ignored: Vec<String> = [
            ".venv/",
            "_root_generated.py",
            "build/",
            "src/pkg/__pycache__/",
            "src/pkg/_gen/",
            "src/pkg/_speed.cpython-311-x86_64-linux-gnu.so",
            "src/pkg/_version.py",
            "src/pkg/notes.txt",
            "tools/_accel.so",
            "tools/_local.py",
        ]
        .map(String::from)
        .to_vec();
        let done = lay(c, w, &ignored).unwrap();
        assert_eq!(
            done.laid,
            vec![
                "src/pkg/_gen/__init__.py",
                "src/pkg/_gen/tables.py",
                "src/pkg/_speed.cpython-311-x86_64-linux-gnu.so",
                "src/pkg/_version.py",
                "tools/_accel.so",
            ]
        );
        assert_eq!(
            std::fs::read_to_string(w.join("src/pkg/_version.py")).unwrap(),
            "x = 1\n"
        );
        let meta = std::fs::symlink_metadata(w.join("src/pkg/_version.py")).unwrap();
        assert!(meta.file_type().is_file() && meta.permissions().readonly());
        assert!(!w.join("build").exists() && !w.join(".venv").exists());
        // Laid again over its own read-only copy (a spare worktree).
        assert_eq!(lay(c, w, &ignored).unwrap().laid.len(), 5);
    }

    #[test]
    fn a_file_over_the_budget_is_not_laid_but_named() {
        let checkout = tempfile::tempdir().unwrap();
        let worktree = tempfile::tempdir().unwrap();
        let (c, w) = (checkout.path(), worktree.path());
        write(w, "pkg/__init__.py", "");
        write(c, "pkg/__init__.py", "");
        let big = std::fs::File::create(c.join("pkg/_huge.so")).unwrap();
        big.set_len(FILE_BUDGET + 1).unwrap();
        let done = lay(c, w, &["pkg/_huge.so".to_string()]).unwrap();
        assert!(done.laid.is_empty());
        assert_eq!(
            done.over_budget,
            vec![("pkg/_huge.so".to_string(), FILE_BUDGET + 1)]
        );
        assert!(!w.join("pkg/_huge.so").exists());
    }
}
