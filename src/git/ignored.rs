//! The files of the user's checkout that git ignores, as git lists them:
//! where a language finds what its tests import that git does not track
//! (generated version modules, extension modules built in place). Only the
//! listing lives here; what is laid in a worktree, and how, is the
//! language's to decide. And `HEAD`'s files written to a folder outside
//! the repository, with no ref, index or admin entry made: what
//! `swarm doctor` measures as a run's worktree would hold it.

use std::path::Path;

use super::command::GitCommand;
use super::{FileKind, GitError, Repo};

impl Repo {
    /// The ignored files and folders of the working tree, repo-relative
    /// with `/` separators: a folder ignored as a whole is one entry
    /// ending in `/` (git does not descend into it, so a virtualenv costs
    /// one line), sorted. Untracked files that are not ignored are not
    /// listed: they are the user's work in progress, not build output.
    pub fn ignored_paths(&self) -> Result<Vec<String>, GitError> {
        let out = GitCommand::new(&self.info().root)
            .arg("ls-files")
            .arg("--others")
            .arg("--ignored")
            .arg("--exclude-standard")
            .arg("--directory")
            .arg("-z")
            .run()?;
        let mut paths: Vec<String> = out
            .stdout
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect();
        paths.sort();
        Ok(paths)
    }

    /// Writes the regular and executable files of `HEAD`'s tree into
    /// `dest` (a folder outside the repository), as a fresh checkout would
    /// (symbolic links and submodules left out); the repository is not
    /// written.
    pub fn write_head_files(&self, dest: &Path) -> Result<(), GitError> {
        let head = &self.info().head;
        for (path, kind) in self.tree_files(head)? {
            if !matches!(kind, FileKind::Regular | FileKind::Executable) {
                continue;
            }
            let Some(content) = self.file_at(head, &path)? else {
                continue;
            };
            let to = dest.join(&path);
            if let Some(folder) = to.parent() {
                std::fs::create_dir_all(folder).map_err(|e| GitError::io("create", folder, e))?;
            }
            std::fs::write(&to, content).map_err(|e| GitError::io("write", &to, e))?;
            if kind == FileKind::Executable {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::Permissions::from_mode(0o755);
                std::fs::set_permissions(&to, mode).map_err(|e| GitError::io("chmod", &to, e))?;
            }
        }
        Ok(())
    }
}

/// `git --version`'s words (`git version 2.43.0`), or `None` when git
/// does not start.
pub fn version() -> Option<String> {
    let out = GitCommand::new(Path::new("."))
        .arg("--version")
        .run()
        .ok()?;
    Some(out.stdout.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &std::path::Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "{}",
            String::from_utf8_lossy(&ok.stderr)
        );
    }

    #[test]
    fn lists_ignored_files_and_whole_ignored_folders_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::write(root.join(".gitignore"), "_version.py\n.venv/\n*.so\n").unwrap();
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        std::fs::write(root.join("pkg/__init__.py"), "").unwrap();
        std::fs::write(root.join("pkg/_version.py"), "v = 1\n").unwrap();
        std::fs::write(root.join("pkg/_fast.cpython-311.so"), "").unwrap();
        std::fs::write(root.join("notes.txt"), "untracked, not ignored\n").unwrap();
        std::fs::create_dir_all(root.join(".venv/lib")).unwrap();
        std::fs::write(root.join(".venv/lib/x.py"), "").unwrap();
        git(root, &["add", ".gitignore", "pkg/__init__.py"]);
        git(
            root,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "start",
            ],
        );
        let repo = Repo::open(root).unwrap().unwrap();
        assert_eq!(
            repo.ignored_paths().unwrap(),
            vec![".venv/", "pkg/_fast.cpython-311.so", "pkg/_version.py"]
        );
        let out = tempfile::tempdir().unwrap();
        repo.write_head_files(out.path()).unwrap();
        assert!(out.path().join("pkg/__init__.py").is_file());
        assert!(out.path().join(".gitignore").is_file());
        assert!(!out.path().join("pkg/_version.py").exists());
    }
}
