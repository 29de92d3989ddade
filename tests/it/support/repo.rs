//! Temporary git repositories for tests, driven by the real `git` CLI with
//! a hermetic environment: a private HOME, no system config, fixed author
//! and committer dates, and none of the `GIT_DIR`-style variables a hook
//! would set.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

/// Variables removed from every git the tests spawn.
const REDIRECTING_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
];

/// A `git` command in `dir` with a hermetic environment rooted at `home`.
pub fn git_command(dir: &Path, home: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .current_dir(dir)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_AUTHOR_DATE", "2026-01-01T12:00:00+00:00")
        .env("GIT_COMMITTER_NAME", "Test Author")
        .env("GIT_COMMITTER_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_DATE", "2026-01-01T12:00:00+00:00")
        .env("LC_ALL", "C");
    for name in REDIRECTING_ENV {
        command.env_remove(name);
    }
    command
}

/// Runs git in `dir`; panics with its stderr when it fails. Returns stdout
/// without the trailing newline.
pub fn git_in(dir: &Path, home: &Path, args: &[&str]) -> String {
    let output = git_command(dir, home)
        .args(args)
        .output()
        .expect("git can be started");
    assert!(
        output.status.success(),
        "git {args:?} in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .trim_end_matches('\n')
        .to_string()
}

/// Whether git succeeds in `dir`.
pub fn git_ok(dir: &Path, home: &Path, args: &[&str]) -> bool {
    git_command(dir, home)
        .args(args)
        .output()
        .expect("git can be started")
        .status
        .success()
}

/// A temporary folder holding a private HOME and a repository.
pub struct TestRepo {
    tmp: TempDir,
    /// The repository's working tree root (canonical).
    pub root: PathBuf,
    /// The private HOME used by every git the tests spawn.
    pub home: PathBuf,
}

impl TestRepo {
    /// An empty folder (no repository yet) at `<tmp>/repo`.
    pub fn empty() -> Self {
        let tmp = tempfile::tempdir().expect("temp dir");
        let home = tmp.path().join("home");
        let root = tmp.path().join("repo");
        fs::create_dir_all(&home).expect("create home");
        fs::create_dir_all(&root).expect("create repo dir");
        let root = root.canonicalize().expect("canonical root");
        let home = home.canonicalize().expect("canonical home");
        TestRepo { tmp, root, home }
    }

    /// A repository on `main` with a local identity and one commit holding
    /// `files`.
    pub fn with_files(files: &[(&str, &str)]) -> Self {
        let repo = TestRepo::empty();
        repo.git(&["init", "--quiet", "--initial-branch=main"]);
        repo.git(&["config", "user.name", "Repo User"]);
        repo.git(&["config", "user.email", "repo@example.com"]);
        for (path, content) in files {
            repo.write(path, content);
        }
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "--quiet", "-m", "baseline"]);
        repo
    }

    /// The temporary folder holding everything (for extra folders).
    pub fn tmp(&self) -> &Path {
        self.tmp.path()
    }

    /// Runs git in the root.
    pub fn git(&self, args: &[&str]) -> String {
        git_in(&self.root, &self.home, args)
    }

    /// Runs git in another folder with this repo's HOME.
    pub fn git_at(&self, dir: &Path, args: &[&str]) -> String {
        git_in(dir, &self.home, args)
    }

    /// Whether git succeeds in the root.
    pub fn git_ok(&self, args: &[&str]) -> bool {
        git_ok(&self.root, &self.home, args)
    }

    /// Writes a file under the root, creating folders.
    pub fn write(&self, rel: &str, content: &str) {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().expect("file has a parent")).expect("create folders");
        fs::write(path, content).expect("write file");
    }

    /// Reads a file under the root.
    pub fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.root.join(rel)).expect("read file")
    }

    /// Commits everything with `message`; returns the new HEAD.
    pub fn commit_all(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "--quiet", "-m", message]);
        self.head()
    }

    /// `git rev-parse HEAD`.
    pub fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"])
    }

    /// Every file of the working tree (outside `.git`) with its bytes, plus
    /// `.git/index`, `.git/HEAD` and the resolved HEAD: what must stay
    /// byte-identical until the fast-forward.
    pub fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        let mut files = BTreeMap::new();
        collect_files(&self.root, &self.root, &mut files);
        for special in ["index", "HEAD"] {
            let path = self.root.join(".git").join(special);
            files.insert(
                format!(".git/{special}"),
                fs::read(path).expect("read git file"),
            );
        }
        files.insert("HEAD commit".to_string(), self.head().into_bytes());
        files
    }

    /// The paths `git worktree list --porcelain` reports.
    pub fn worktrees(&self) -> Vec<PathBuf> {
        self.git(&["worktree", "list", "--porcelain"])
            .lines()
            .filter_map(|line| line.strip_prefix("worktree "))
            .map(PathBuf::from)
            .collect()
    }
}

fn collect_files(root: &Path, dir: &Path, files: &mut BTreeMap<String, Vec<u8>>) {
    for entry in fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("dir entry").path();
        if path == root.join(".git") {
            continue;
        }
        if path.is_dir() {
            collect_files(root, &path, files);
        } else {
            let rel = path
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .into_owned();
            files.insert(rel, fs::read(&path).expect("read file"));
        }
    }
}
