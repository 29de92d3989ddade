//! The run's worktree (`<cache>/worktrees/<repo key>/<run>`), its run
//! branch `swarm/<run>/best` and attempt branches `swarm/<run>/attempt-<k>`.
//!
//! The worktree lives outside the repository's directory tree: pytest and
//! pylint look for configuration and `conftest.py` by walking up from where
//! they run, and a worktree inside the repository (or its `.git`) would
//! pick up the user's uncommitted `pytest.ini` or `conftest.py`. A location
//! inside the repository's working tree or git dir is refused.
//!
//! Attempt commits are built from blobs and trees in memory, on top of the
//! run branch's tree; neither the user's nor the run worktree's index is
//! used. The worktree only exists so that pytest has files on disk; the
//! submodules initialised in the user's checkout are filled in (see
//! `submodule`), so tests that import from them work.
//!
//! At its end a run's worktree is retired rather than deleted: kept,
//! unregistered, as the repository's spare for the next run (see `spare`).
//!
//! Liveness: next to each run folder, `<run>.lock` is `flock`ed by the run
//! for its whole life (see `lock`); pruning (see `prune`) only removes runs
//! whose lock it can take.

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use git2::build::TreeUpdateBuilder;
use git2::{FileMode, Repository};
use sha2::{Digest, Sha256};

use super::admin::add_worktree;
use super::content::DiskState;
use super::layout::{best_branch_name, check_run_id, lock_file, scratch_of};
use super::location::{check_outside_repo, resolve_lexically};
use super::lock::{LockFile, TryLock};
use super::refresh::IndexRefresh;
use super::remove::remove_run;
use super::repo::{
    canonical, changed_paths, check_rel_path, file_at, open_objects, signature, tree_id_at,
};
use super::{spare, submodule, CommitId, FileWrite, GitError, Repo, RunWorkspace};

/// Where run worktrees live, relative to swarm's cache folder: each
/// repository gets `<cache>/worktrees/<repo key>/`.
pub const WORKTREES_DIR: &str = "worktrees";

impl Repo {
    /// A folder name for this repository: its working tree's name (letters,
    /// digits, `-`, `_`, `.`; at most 32) and 12 hex digits of the SHA-256
    /// of its canonical git common dir, e.g. `shop-3f9a0c1b2d4e`.
    pub fn repo_key(&self) -> String {
        let common = &self.info().common_dir;
        let named = if common.file_name().is_some_and(|n| n == ".git") {
            common.parent().unwrap_or(common)
        } else {
            common.as_path()
        };
        let name: String = named
            .file_name()
            .map(|n| n.to_string_lossy().trim_end_matches(".git").to_string())
            .unwrap_or_default()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .take(32)
            .collect();
        let name = name.trim_start_matches('.');
        let name = if name.is_empty() { "repo" } else { name };
        let digest = Sha256::digest(common.as_os_str().as_encoded_bytes());
        format!("{name}-{}", &hex::encode(digest)[..12])
    }

    /// `<cache_dir>/worktrees/<repo key>` (absolute): where this
    /// repository's run worktrees and their lock files live. Fails with
    /// [`GitError::WorktreesInsideRepo`] when that is inside the
    /// repository's working tree or git dir (for example `SWARM_CACHE_DIR`
    /// set to a folder of the repository).
    pub fn worktrees_root(&self, cache_dir: &Path) -> Result<PathBuf, GitError> {
        let root = resolve_lexically(&cache_dir.join(WORKTREES_DIR).join(self.repo_key()));
        check_outside_repo(self, &root)?;
        Ok(root)
    }
}

impl RunWorkspace {
    /// Creates the worktree at `<worktrees_root>/<run_id>`, detached at
    /// `base`, with the submodules initialised in the user's checkout
    /// filled in at the commits `base` records, and the branch
    /// `swarm/<run_id>/best` at `base`. The run's lock `<run_id>.lock` is
    /// held until the workspace is removed or dropped.
    ///
    /// `worktrees_root` (see [`Repo::worktrees_root`]) must lie outside the
    /// repository's working tree and git dir
    /// ([`GitError::WorktreesInsideRepo`]). `run_id` may hold ASCII
    /// letters, digits, `-` and `_`. Fails with [`GitError::BranchExists`]
    /// when the run branch already exists and [`GitError::RunRefsBlocked`]
    /// when a branch `swarm` exists.
    pub fn create(
        repo: &Repo,
        worktrees_root: &Path,
        run_id: &str,
        base: &CommitId,
    ) -> Result<Self, GitError> {
        repo.check_run_refs_possible()?;
        let path = Self::planned_path(repo, worktrees_root, run_id)?;
        let runs_dir = path.parent().unwrap_or(worktrees_root).to_path_buf();
        let common_dir = repo.info().common_dir.clone();
        let git = repo.objects()?;
        let lock = claim_run(&git, &runs_dir, &path, run_id, base)?;
        let (admin_dir, empty_submodules) = match check_out(repo, &git, &runs_dir, &path, base) {
            Ok(done) => done,
            Err(error) => {
                let _ = remove_run(&path, None, &common_dir);
                let best_ref = format!("refs/heads/{}", best_branch_name(run_id));
                if let Ok(mut reference) = git.find_reference(&best_ref) {
                    let _ = reference.delete();
                }
                let _ = lock.remove();
                return Err(error);
            }
        };
        let refresh = IndexRefresh::start(&path);
        Ok(RunWorkspace {
            run_id: run_id.to_string(),
            path,
            lock: Some(lock),
            empty_submodules,
            common_dir,
            admin_dir,
            base: base.clone(),
            best: base.clone(),
            removed: false,
            disk: std::sync::Mutex::new(DiskState::at(base.clone())),
            refresh,
            kept: Vec::new(),
        })
    }

    /// Where [`RunWorkspace::create`] puts run `run_id`'s worktree:
    /// `<worktrees_root>/<run_id>` with the root made and canonical. Known
    /// before the worktree exists, so the sandbox can be prepared for it
    /// while it is checked out.
    /// Fails like `create` for a bad run id or a root inside the repository.
    pub fn planned_path(
        repo: &Repo,
        worktrees_root: &Path,
        run_id: &str,
    ) -> Result<PathBuf, GitError> {
        check_run_id(run_id)?;
        check_outside_repo(repo, worktrees_root)?;
        fs::create_dir_all(worktrees_root)
            .map_err(|e| GitError::io("create", worktrees_root, e))?;
        let runs_dir = canonical(worktrees_root)?;
        check_outside_repo(repo, &runs_dir)?;
        Ok(runs_dir.join(run_id))
    }

    /// [`RunWorkspace::scratch_dir`] of a worktree at `path`.
    pub fn scratch_dir_of(path: &Path) -> PathBuf {
        scratch_of(path)
    }

    /// Submodules of the base commit that stay empty in the worktree
    /// because they are not initialised in the user's checkout, sorted.
    pub fn empty_submodules(&self) -> &[String] {
        &self.empty_submodules
    }

    /// The worktree's root folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The commit the run started from.
    pub fn base(&self) -> &CommitId {
        &self.base
    }

    /// The run branch's tip.
    pub fn best(&self) -> &CommitId {
        &self.best
    }

    /// The content of `path` (repo-relative) at the run branch's tip;
    /// `None` when it has no such file.
    pub fn file_at_best(&self, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        file_at(&self.git()?, &self.best, path)
    }

    /// The content of `path` (repo-relative) at the base commit; `None`
    /// when it has no such file.
    pub fn file_at_base(&self, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        file_at(&self.git()?, &self.base, path)
    }

    /// The run branch's name, `swarm/<run>/best`.
    pub fn best_branch(&self) -> String {
        best_branch_name(&self.run_id)
    }

    /// The prefix of all the run's branches, `swarm/<run>/`.
    pub fn run_branch_prefix(&self) -> String {
        format!("swarm/{}/", self.run_id)
    }

    /// The name of attempt `k`'s branch, `swarm/<run>/attempt-<k>`.
    pub fn attempt_branch(&self, k: u32) -> String {
        format!("swarm/{}/attempt-{k}", self.run_id)
    }

    /// Repo-relative paths that differ between the starting commit and the
    /// run branch's tip, sorted: the files a fast-forward would touch.
    pub fn files_changed_since_base(&self) -> Result<Vec<String>, GitError> {
        changed_paths(&self.git()?, &self.base, &self.best)
    }

    /// The git tree id of `path` (repo-relative, `""` for the whole tree)
    /// in the commit the run started from: it names exactly the files the
    /// worktree held there at the start. `None` when the base commit has
    /// no folder at `path`.
    pub fn base_tree_id(&self, path: &str) -> Result<Option<String>, GitError> {
        tree_id_at(&open_objects(&self.common_dir)?, &self.base, path)
    }

    /// Writes (or deletes) files in the worktree, paths repo-relative.
    /// Refuses paths that are absolute, contain `..`, point inside `.git`
    /// or go through a symbolic link; a symbolic link at the path itself is
    /// replaced by a regular file.
    pub fn write_files(&self, files: &[FileWrite]) -> Result<(), GitError> {
        for file in files {
            check_rel_path(&file.path)?;
            self.check_no_symlinked_parent(&file.path)?;
            self.disk
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .wrote([file.path.as_str()]);
            let full = self.path.join(&file.path);
            match &file.content {
                Some(content) => {
                    if let Some(parent) = full.parent() {
                        fs::create_dir_all(parent)
                            .map_err(|e| GitError::io("create", parent, e))?;
                    }
                    if fs::symlink_metadata(&full).is_ok_and(|m| m.file_type().is_symlink()) {
                        fs::remove_file(&full).map_err(|e| GitError::io("remove", &full, e))?;
                    }
                    fs::write(&full, content).map_err(|e| GitError::io("write", &full, e))?;
                }
                None => {
                    match fs::remove_file(&full) {
                        Ok(()) => {}
                        Err(e) if e.kind() == ErrorKind::NotFound => {}
                        Err(e) => return Err(GitError::io("remove", &full, e)),
                    }
                    self.remove_empty_parents(&full);
                }
            }
        }
        Ok(())
    }

    /// Commits best's tree plus `files` (built from blobs, not from the
    /// worktree) with parent best, on the new branch `swarm/<run>/attempt-<k>`.
    ///
    /// A file keeps its executable bit when it had one in best; new files
    /// are regular files. When a path appears twice, the last write wins.
    /// Fails with [`GitError::BranchExists`] when the attempt branch exists.
    pub fn commit_attempt(
        &self,
        k: u32,
        files: &[FileWrite],
        message: &str,
    ) -> Result<CommitId, GitError> {
        let branch = self.attempt_branch(k);
        let op = || format!("commit attempt {k} on {branch}");
        let git = self.git()?;
        let full_ref = format!("refs/heads/{branch}");
        if git.find_reference(&full_ref).is_ok() {
            return Err(GitError::BranchExists { branch });
        }
        let best = git
            .find_commit(self.best.oid()?)
            .map_err(|e| GitError::git2(op(), e))?;
        let best_tree = best.tree().map_err(|e| GitError::git2(op(), e))?;

        let mut last_write: BTreeMap<&str, Option<&[u8]>> = BTreeMap::new();
        for file in files {
            check_rel_path(&file.path)?;
            last_write.insert(&file.path, file.content.as_deref());
        }
        let mut update = TreeUpdateBuilder::new();
        for (path, content) in last_write {
            let existing = best_tree.get_path(Path::new(path)).ok();
            match content {
                Some(bytes) => {
                    let blob = git.blob(bytes).map_err(|e| GitError::git2(op(), e))?;
                    let mode = match existing.map(|entry| entry.filemode()) {
                        Some(mode) if mode == i32::from(FileMode::BlobExecutable) => {
                            FileMode::BlobExecutable
                        }
                        _ => FileMode::Blob,
                    };
                    update.upsert(path, blob, mode);
                }
                None if existing.is_some() => {
                    update.remove(path);
                }
                None => {}
            }
        }
        let tree_id = update
            .create_updated(&git, &best_tree)
            .map_err(|e| GitError::git2(op(), e))?;
        let tree = git
            .find_tree(tree_id)
            .map_err(|e| GitError::git2(op(), e))?;
        let signature = signature(&git)?;
        let mut text = message.to_string();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let commit = git
            .commit(None, &signature, &signature, &text, &tree, &[&best])
            .map_err(|e| GitError::git2(op(), e))?;
        git.reference(&full_ref, commit, false, &format!("swarm: attempt {k}"))
            .map_err(|e| GitError::git2(format!("create {full_ref}"), e))?;
        Ok(CommitId::from_oid(commit))
    }

    /// Deletes the run branch when the run accepted nothing (its tip is
    /// still the base commit): an empty `swarm/<run>/best` is clutter. The
    /// attempt branches stay. `Ok(true)` when it was deleted; a branch moved
    /// by anyone else is left alone.
    pub fn forget_unmoved_best(&self) -> Result<bool, GitError> {
        if self.best != self.base {
            return Ok(false);
        }
        let git = self.git()?;
        let full_ref = format!("refs/heads/{}", self.best_branch());
        let Ok(mut reference) = git.find_reference(&full_ref) else {
            return Ok(false);
        };
        if reference.target() != Some(self.base.oid()?) {
            return Ok(false);
        }
        reference
            .delete()
            .map_err(|e| GitError::git2(format!("delete {full_ref}"), e))?;
        Ok(true)
    }

    /// Moves the run branch to `commit` (best itself or a descendant of
    /// best); fails with [`GitError::NotDescendant`] otherwise. The update
    /// is compare-and-swap: it fails if the branch moved behind swarm's back.
    pub fn advance_best(&mut self, commit: &CommitId) -> Result<(), GitError> {
        let git = self.git()?;
        let (new, old) = (commit.oid()?, self.best.oid()?);
        let op = || format!("advance {} to {}", self.best_branch(), commit.short());
        let descends = new == old
            || git
                .graph_descendant_of(new, old)
                .map_err(|e| GitError::git2(op(), e))?;
        if !descends {
            return Err(GitError::NotDescendant {
                commit: commit.clone(),
                best: self.best.clone(),
            });
        }
        let full_ref = format!("refs/heads/{}", self.best_branch());
        git.reference_matching(&full_ref, new, true, old, &format!("swarm: best is {new}"))
            .map_err(|e| GitError::git2(op(), e))?;
        self.best = commit.clone();
        Ok(())
    }

    /// The run's scratch folder, `<run>.scratch` beside the worktree (not
    /// created here): removed with the worktree, also by the pruning of a
    /// killed run.
    pub fn scratch_dir(&self) -> PathBuf {
        Self::scratch_dir_of(&self.path)
    }

    /// Removes the worktree folder, its administrative entry and its lock
    /// file, then releases the lock; branches stay.
    pub fn remove(mut self) -> Result<(), GitError> {
        self.remove_all()
    }

    /// Like [`remove`](Self::remove), but the worktree's files are kept
    /// (unregistered) as the repository's spare for the next run when they
    /// can be (see `spare`): a run at its end then deletes no file.
    pub fn retire(mut self) -> Result<(), GitError> {
        self.refresh.settle();
        if let Some(runs_dir) = self.path.parent() {
            if let Err(e) = spare::retire(&self.path, &self.admin_dir, runs_dir) {
                tracing::debug!("the worktree is removed, not kept as the spare: {e}");
            }
        }
        self.remove_all()
    }

    fn remove_all(&mut self) -> Result<(), GitError> {
        self.refresh.settle();
        self.removed = true;
        remove_run(&self.path, Some(&self.admin_dir), &self.common_dir)?;
        if let Some(lock) = self.lock.take() {
            lock.remove()?;
        }
        // The repository's folder goes too once no run is left in it.
        if let Some(runs_dir) = self.path.parent() {
            let _ = fs::remove_dir(runs_dir);
        }
        Ok(())
    }

    /// libgit2 on the common dir (see [`Repo::objects`] for why not the
    /// worktree's git dir).
    fn git(&self) -> Result<Repository, GitError> {
        open_objects(&self.common_dir)
    }

    fn check_no_symlinked_parent(&self, rel: &str) -> Result<(), GitError> {
        let mut current = self.path.clone();
        let parts: Vec<&str> = rel.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            current.push(part);
            if fs::symlink_metadata(&current).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(GitError::InvalidPath {
                    path: rel.to_string(),
                    reason: "goes through a symbolic link".to_string(),
                });
            }
        }
        Ok(())
    }

    /// Removes now-empty folders between a deleted file and the root.
    fn remove_empty_parents(&self, file: &Path) {
        let mut dir = file.parent();
        while let Some(current) = dir {
            if current == self.path || !current.starts_with(&self.path) {
                break;
            }
            if fs::remove_dir(current).is_err() {
                break;
            }
            dir = current.parent();
        }
    }
}

impl Drop for RunWorkspace {
    /// Best-effort removal of the worktree when `remove` was not called.
    fn drop(&mut self) {
        if !self.removed {
            let _ = self.remove_all();
        }
    }
}

/// Claims run `run_id` before anything is checked out: the base commit
/// exists, the run branch does not, the run's lock is taken (first: a run
/// folder without a held lock is stale) and names the run, its worktree
/// folder `path` does not exist yet, and the run branch is created at
/// `base`. Returns the held lock.
fn claim_run(
    git: &Repository,
    runs_dir: &Path,
    path: &Path,
    run_id: &str,
    base: &CommitId,
) -> Result<LockFile, GitError> {
    let base_oid = base.oid()?;
    git.find_commit(base_oid)
        .map_err(|e| GitError::git2(format!("find the base commit {base}"), e))?;
    let best_ref = format!("refs/heads/{}", best_branch_name(run_id));
    if git.find_reference(&best_ref).is_ok() {
        return Err(GitError::BranchExists {
            branch: best_branch_name(run_id),
        });
    }
    let lock_path = lock_file(runs_dir, run_id);
    let mut lock = match LockFile::try_lock(&lock_path, true)? {
        TryLock::Acquired(lock) => lock,
        TryLock::Held { .. } | TryLock::Missing => {
            return Err(GitError::Unexpected {
                op: format!("lock {}", lock_path.display()),
                found: format!("run {run_id} is in use by another process"),
            })
        }
    };
    lock.write_content(&format!("run {run_id}\npid {}\n", std::process::id()))?;
    if path.exists() {
        return Err(GitError::Unexpected {
            op: format!("create the run worktree {}", path.display()),
            found: "it already exists".to_string(),
        });
    }
    git.reference(
        &best_ref,
        base_oid,
        false,
        &format!("swarm: start run {run_id}"),
    )
    .map_err(|e| GitError::git2(format!("create {best_ref}"), e))?;
    Ok(lock)
}

/// Puts the worktree at `path`, detached at `base`: the spare of `runs_dir`
/// taken when it can be, a fresh checkout otherwise (always when `base` has
/// submodules), then the submodules initialised in the user's checkout
/// filled in. Its admin folder and the submodules left empty.
fn check_out(
    repo: &Repo,
    git: &Repository,
    runs_dir: &Path,
    path: &Path,
    base: &CommitId,
) -> Result<(PathBuf, Vec<String>), GitError> {
    let has_submodules = git
        .find_commit(base.oid()?)
        .and_then(|c| c.tree())
        .is_ok_and(|tree| tree.get_path(Path::new(".gitmodules")).is_ok());
    let admin_dir = if has_submodules {
        let _ = spare::discard_spare(runs_dir);
        add_worktree(repo, path, base, false)?
    } else {
        let common_dir = &repo.info().common_dir;
        spare::checkout_reusing_spare(repo, runs_dir, path, base, common_dir)?
    };
    let empty = submodule::populate(git, base, &repo.info().root, path)?;
    Ok((admin_dir, empty))
}
