//! The files of the user's checkout that git ignores, as git lists them:
//! where a language finds what its tests import that git does not track
//! (generated version modules, extension modules built in place). Only the
//! listing lives here; what is laid in a worktree, and how, is the
//! language's to decide.

use super::command::GitCommand;
use super::{GitError, Repo};

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
        assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
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
            &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"],
        );
        let repo = Repo::open(root).unwrap().unwrap();
        assert_eq!(
            repo.ignored_paths().unwrap(),
            vec![".venv/", "pkg/_fast.cpython-311.so", "pkg/_version.py"]
        );
    }
}
