//! What the run's worktree holds, known from git without reading its files:
//! the commit last checked out there and the paths swarm wrote since. The
//! Judge's lint keys its cache by these blob ids, so a measurement reads the
//! files an attempt changed, not every file of the tree.
//!
//! What it cannot see: a file changed on disk by something other than
//! swarm (a test that rewrites a source file). The ids then name the
//! committed content, which is the state being judged; the next reset puts
//! the file back.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

use git2::{ObjectType, TreeWalkMode, TreeWalkResult};

use super::command::GitCommand;
use super::repo::open_objects;
use super::{CommitId, GitError, RunWorkspace};

/// What is on disk in the run's worktree, as far as swarm put it there.
#[derive(Debug)]
pub(crate) struct DiskState {
    /// The commit whose files the worktree was last made to hold.
    checked_out: CommitId,
    /// Repo-relative paths written (or deleted) since.
    written: BTreeSet<String>,
    /// Cleared when a reset failed half-way, or when something ran in the
    /// worktree that no reset followed: then nothing on disk is known.
    trusted: bool,
    /// The blob ids of one folder at one commit, by path relative to it.
    listing: Option<Listing>,
}

#[derive(Debug)]
struct Listing {
    commit: CommitId,
    under: String,
    ids: Arc<HashMap<String, String>>,
}

impl DiskState {
    /// A worktree just checked out at `commit`.
    pub(crate) fn at(commit: CommitId) -> Self {
        Self {
            checked_out: commit,
            written: BTreeSet::new(),
            trusted: true,
            listing: None,
        }
    }

    /// The worktree now holds `commit`'s files and nothing else.
    fn reset(&mut self, commit: CommitId) {
        self.checked_out = commit;
        self.written.clear();
        self.trusted = true;
    }

    /// `paths` (repo-relative) were written or deleted.
    pub(crate) fn wrote<'a>(&mut self, paths: impl IntoIterator<Item = &'a str>) {
        self.written.extend(paths.into_iter().map(str::to_string));
    }
}

/// The git blob id `content` has (`git hash-object`); should libgit2 fail
/// to hash, an id of another form that still follows the content (it then
/// matches no blob id: a cache miss, never a wrong hit).
pub fn blob_id(content: &[u8]) -> String {
    match git2::Oid::hash_object(ObjectType::Blob, content) {
        Ok(oid) => oid.to_string(),
        Err(_) => {
            use sha2::Digest;
            format!("sha256:{}", hex::encode(sha2::Sha256::digest(content)))
        }
    }
}

/// Makes the files of the worktree at `path` exactly those of `commit`:
/// `git checkout --force` rewrites every file whose content, size, times
/// or inode differ from what the index recorded, `git clean -ffdx` removes
/// everything untracked or ignored but the folders `kept` (worktree-relative);
/// HEAD is left detached at `commit`.
pub(super) fn checkout_exactly(
    path: &Path,
    commit: &CommitId,
    kept: &[String],
) -> Result<(), GitError> {
    GitCommand::new(path)
        .arg("-c")
        .arg("submodule.recurse=false")
        .arg("checkout")
        .arg("--quiet")
        .arg("--force")
        .arg("--detach")
        .arg(commit.to_string())
        .run()?;
    let mut clean = GitCommand::new(path)
        .arg("clean")
        .arg("--quiet")
        .arg("-ffdx");
    for folder in kept {
        clean = clean.arg("-e").arg(format!("/{folder}"));
    }
    clean.run()?;
    Ok(())
}

impl RunWorkspace {
    /// Makes the worktree's files exactly those of `commit`, removing
    /// untracked and ignored files such as `__pycache__` and
    /// `.pytest_cache`; the worktree's HEAD is left detached at `commit`.
    pub fn reset_to(&self, commit: &CommitId) -> Result<(), GitError> {
        self.refresh.settle();
        let mut disk = self.disk.lock().unwrap_or_else(|e| e.into_inner());
        disk.trusted = false;
        checkout_exactly(&self.path, commit, &self.kept)?;
        disk.reset(commit.clone());
        Ok(())
    }

    /// Keeps the untracked folders and files `folders` (worktree-relative,
    /// `/`) across resets: what the run laid in the worktree for its tools
    /// (links to the user's installed dependencies, copies of the
    /// checkout's ignored generated modules). Never committed: commits are
    /// made from proposals, not from the worktree's files.
    pub fn keep_untracked(&mut self, folders: Vec<String>) {
        self.kept = folders;
    }

    /// Stops vouching for the worktree's files (something ran in it and
    /// it is not reset): [`committed_blob_ids`](Self::committed_blob_ids)
    /// knows nothing until the next [`reset_to`](Self::reset_to).
    pub fn forget_disk(&self) {
        let mut disk = self.disk.lock().unwrap_or_else(|e| e.into_inner());
        disk.trusted = false;
    }

    /// The blob ids of the regular files under `under` (repo-relative, `""`
    /// for the whole tree) whose content in the worktree is the committed
    /// one, by path relative to `under`: the files of the commit last
    /// checked out, less those written since. Symbolic links and
    /// submodules are left out (their files are read, not known).
    pub fn committed_blob_ids(&self, under: &str) -> Result<HashMap<String, String>, GitError> {
        let mut disk = self.disk.lock().unwrap_or_else(|e| e.into_inner());
        if !disk.trusted {
            return Ok(HashMap::new());
        }
        let fresh = disk
            .listing
            .as_ref()
            .is_some_and(|l| l.commit == disk.checked_out && l.under == under);
        if !fresh {
            let ids = list_blobs(&self.common_dir, &disk.checked_out, under)?;
            disk.listing = Some(Listing {
                commit: disk.checked_out.clone(),
                under: under.to_string(),
                ids: Arc::new(ids),
            });
        }
        let listing = disk
            .listing
            .as_ref()
            .expect("the listing was just made for this commit and folder");
        let mut ids = HashMap::clone(&listing.ids);
        for path in &disk.written {
            if let Some(rel) = relative_to(path, under) {
                ids.remove(rel);
            }
        }
        Ok(ids)
    }
}

/// `path` relative to the folder `under` (both repo-relative).
fn relative_to<'a>(path: &'a str, under: &str) -> Option<&'a str> {
    if under.is_empty() {
        return Some(path);
    }
    path.strip_prefix(under)?.strip_prefix('/')
}

/// The regular files of `commit` under `under`, with their blob ids.
fn list_blobs(
    common_dir: &Path,
    commit: &CommitId,
    under: &str,
) -> Result<HashMap<String, String>, GitError> {
    let op = || format!("list the files of {under:?} at {}", commit.short());
    let git = open_objects(common_dir)?;
    let root = git
        .find_commit(commit.oid()?)
        .and_then(|c| c.tree())
        .map_err(|e| GitError::git2(op(), e))?;
    let tree = if under.is_empty() {
        root
    } else {
        match root.get_path(Path::new(under)) {
            Ok(entry) if entry.kind() == Some(ObjectType::Tree) => git
                .find_tree(entry.id())
                .map_err(|e| GitError::git2(op(), e))?,
            _ => return Ok(HashMap::new()),
        }
    };
    let mut ids = HashMap::new();
    tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
        let mode = entry.filemode();
        let regular = mode == i32::from(git2::FileMode::Blob)
            || mode == i32::from(git2::FileMode::BlobExecutable);
        if regular {
            if let Some(name) = entry.name() {
                ids.insert(format!("{dir}{name}"), entry.id().to_string());
            }
        }
        TreeWalkResult::Ok
    })
    .map_err(|e| GitError::git2(op(), e))?;
    Ok(ids)
}
