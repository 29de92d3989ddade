//! The run's worktree (`<git-common-dir>/swarm/worktrees/<run>`), its run
//! branch `swarm/<run>/best` and attempt branches `swarm/<run>/attempt-<k>`.
//!
//! Attempt commits are built from blobs and trees in memory, on top of the
//! run branch's tree; neither the user's nor the run worktree's index is
//! used. The worktree only exists so that pytest has files on disk.
//!
//! Ownership and pruning: next to each run folder, `<run>.owner` records the
//! id of the process that created it. [`Repo::prune_stale_runs`] removes a
//! run folder (and its `<common>/worktrees/<name>` admin entry) whose owner
//! process is no longer alive or whose owner file is missing, and any admin
//! entry that points under `<common>/swarm/worktrees/` at a folder that is
//! gone. Worktrees of a live swarm process are never touched, nor any
//! worktree outside `<common>/swarm/worktrees/`.

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use git2::build::TreeUpdateBuilder;
use git2::{FileMode, Repository};

use super::command::GitCommand;
use super::repo::{canonical, changed_paths, check_rel_path, signature};
use super::{CommitId, FileWrite, GitError, Repo, RunWorkspace};

/// Where run worktrees live, relative to the git common dir.
pub const RUNS_DIR: &str = "swarm/worktrees";

impl RunWorkspace {
    /// Creates the worktree at `<common-dir>/swarm/worktrees/<run_id>`,
    /// detached at `base`, and the branch `swarm/<run_id>/best` at `base`.
    ///
    /// `run_id` may hold ASCII letters, digits, `-` and `_`. Fails with
    /// [`GitError::BranchExists`] when the run branch already exists.
    pub fn create(repo: &Repo, run_id: &str, base: &CommitId) -> Result<Self, GitError> {
        check_run_id(run_id)?;
        let common_dir = repo.info().common_dir.clone();
        let runs_dir = common_dir.join(RUNS_DIR);
        fs::create_dir_all(&runs_dir).map_err(|e| GitError::io("create", &runs_dir, e))?;
        let runs_dir = canonical(&runs_dir)?;
        let path = runs_dir.join(run_id);
        if path.exists() {
            return Err(GitError::Failed {
                op: format!("create the run worktree {}", path.display()),
                message: "it already exists".to_string(),
            });
        }

        let git = repo.git()?;
        let base_oid = base.oid()?;
        git.find_commit(base_oid)
            .map_err(|e| GitError::git2(format!("find the base commit {base}"), e))?;
        let best_ref = format!("refs/heads/{}", best_branch_name(run_id));
        if git.find_reference(&best_ref).is_ok() {
            return Err(GitError::BranchExists {
                branch: best_branch_name(run_id),
            });
        }

        let owner = owner_file(&runs_dir, run_id);
        fs::write(&owner, format!("pid {}\n", std::process::id()))
            .map_err(|e| GitError::io("write", &owner, e))?;
        git.reference(
            &best_ref,
            base_oid,
            false,
            &format!("swarm: start run {run_id}"),
        )
        .map_err(|e| {
            let _ = fs::remove_file(&owner);
            GitError::git2(format!("create {best_ref}"), e)
        })?;

        let added = GitCommand::new(&repo.info().root)
            .arg("worktree")
            .arg("add")
            .arg("--detach")
            .arg(&path)
            .arg(base.to_string())
            .run();
        let admin_dir = added.and_then(|_| admin_dir_of(&path));
        let admin_dir = match admin_dir {
            Ok(dir) => dir,
            Err(error) => {
                let _ = fs::remove_dir_all(&path);
                let _ = fs::remove_file(&owner);
                if let Ok(mut reference) = git.find_reference(&best_ref) {
                    let _ = reference.delete();
                }
                return Err(error);
            }
        };
        Ok(RunWorkspace {
            run_id: run_id.to_string(),
            path,
            common_dir,
            admin_dir,
            base: base.clone(),
            best: base.clone(),
            removed: false,
        })
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

    /// Writes (or deletes) files in the worktree, paths repo-relative.
    /// Refuses paths that are absolute, contain `..`, point inside `.git`
    /// or go through a symbolic link; a symbolic link at the path itself is
    /// replaced by a regular file.
    pub fn write_files(&self, files: &[FileWrite]) -> Result<(), GitError> {
        for file in files {
            check_rel_path(&file.path)?;
            self.check_no_symlinked_parent(&file.path)?;
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

    /// Makes the worktree's files exactly those of `commit`, removing
    /// untracked and ignored files such as `__pycache__` and
    /// `.pytest_cache`; the worktree's HEAD is left detached at `commit`.
    pub fn reset_to(&self, commit: &CommitId) -> Result<(), GitError> {
        GitCommand::new(&self.path)
            .arg("checkout")
            .arg("--quiet")
            .arg("--force")
            .arg("--detach")
            .arg(commit.to_string())
            .run()?;
        GitCommand::new(&self.path)
            .arg("clean")
            .arg("--quiet")
            .arg("-ffdx")
            .run()?;
        Ok(())
    }

    /// Removes the worktree folder and its administrative entry; branches stay.
    pub fn remove(mut self) -> Result<(), GitError> {
        self.removed = true;
        remove_run(
            &self.path,
            Some(&self.admin_dir),
            &self.common_dir,
            &self.run_id,
        )
    }

    fn git(&self) -> Result<Repository, GitError> {
        Repository::open(&self.path)
            .map_err(|e| GitError::git2(format!("open {}", self.path.display()), e))
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
            self.removed = true;
            let _ = remove_run(
                &self.path,
                Some(&self.admin_dir),
                &self.common_dir,
                &self.run_id,
            );
        }
    }
}

impl Repo {
    /// Removes worktrees left under `<common>/swarm/worktrees/` by runs that
    /// are over: folders whose owner process (recorded in `<run>.owner`) is
    /// gone or unknown, and admin entries pointing there at folders that no
    /// longer exist. Returns the run ids removed, sorted. Branches stay.
    pub fn prune_stale_runs(&self) -> Result<Vec<String>, GitError> {
        let common_dir = &self.info().common_dir;
        let runs_dir = common_dir.join(RUNS_DIR);
        let mut removed = Vec::new();
        if runs_dir.is_dir() {
            let entries =
                fs::read_dir(&runs_dir).map_err(|e| GitError::io("read", &runs_dir, e))?;
            for entry in entries {
                let entry = entry.map_err(|e| GitError::io("read", &runs_dir, e))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let (run_id, is_owner_file) = match name.strip_suffix(".owner") {
                    Some(run) => (run.to_string(), true),
                    None => (name.clone(), false),
                };
                if owner_alive(&runs_dir, &run_id) {
                    continue;
                }
                let path = runs_dir.join(&run_id);
                if is_owner_file && path.exists() {
                    continue; // handled with its folder
                }
                remove_run(&path, None, common_dir, &run_id)?;
                removed.push(run_id);
            }
        }
        for (admin_dir, worktree) in admin_entries(common_dir) {
            let under_runs = worktree.starts_with(&runs_dir)
                || canonical(&runs_dir).is_ok_and(|dir| worktree.starts_with(dir));
            if under_runs && !worktree.exists() {
                let run_id = worktree
                    .file_name()
                    .map(|run| run.to_string_lossy().into_owned())
                    .unwrap_or_default();
                remove_run(&worktree, Some(&admin_dir), common_dir, &run_id)?;
                removed.push(run_id);
            }
        }
        removed.sort();
        removed.dedup();
        Ok(removed)
    }
}

/// `swarm/<run>/best`.
pub(crate) fn best_branch_name(run_id: &str) -> String {
    format!("swarm/{run_id}/best")
}

fn check_run_id(run_id: &str) -> Result<(), GitError> {
    let valid = !run_id.is_empty()
        && run_id.len() <= 100
        && !run_id.starts_with('-')
        && run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        Err(GitError::InvalidRunId {
            run_id: run_id.to_string(),
        })
    }
}

fn owner_file(runs_dir: &Path, run_id: &str) -> PathBuf {
    runs_dir.join(format!("{run_id}.owner"))
}

/// Whether the process recorded as the run's owner is still running.
fn owner_alive(runs_dir: &Path, run_id: &str) -> bool {
    let Ok(text) = fs::read_to_string(owner_file(runs_dir, run_id)) else {
        return false;
    };
    let pid = text
        .trim()
        .strip_prefix("pid ")
        .and_then(|pid| pid.trim().parse::<u32>().ok());
    pid.is_some_and(process_alive)
}

#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn process_alive(_pid: u32) -> bool {
    true
}

/// The admin folder git made for the worktree at `path`, read from its
/// `.git` file (`gitdir: <common>/worktrees/<name>`).
fn admin_dir_of(path: &Path) -> Result<PathBuf, GitError> {
    let dot_git = path.join(".git");
    let text = fs::read_to_string(&dot_git).map_err(|e| GitError::io("read", &dot_git, e))?;
    let dir = text
        .lines()
        .find_map(|line| line.strip_prefix("gitdir:"))
        .map(|dir| PathBuf::from(dir.trim()))
        .ok_or_else(|| GitError::Failed {
            op: format!("read {}", dot_git.display()),
            message: "no gitdir line".to_string(),
        })?;
    let dir = if dir.is_absolute() {
        dir
    } else {
        path.join(dir)
    };
    canonical(&dir)
}

/// Every `<common>/worktrees/<name>` with the worktree folder it points at.
fn admin_entries(common_dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let Ok(entries) = fs::read_dir(common_dir.join("worktrees")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let admin = entry.path();
            let gitdir = fs::read_to_string(admin.join("gitdir")).ok()?;
            let dot_git = PathBuf::from(gitdir.trim());
            Some((admin, dot_git.parent()?.to_path_buf()))
        })
        .collect()
}

/// Deletes a run's worktree folder, its admin entry (the given one, or any
/// pointing at `path`) and its owner file. Missing pieces are fine.
fn remove_run(
    path: &Path,
    admin_dir: Option<&Path>,
    common_dir: &Path,
    run_id: &str,
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
    remove_all(path)?;
    for admin in admin_dirs {
        remove_all(&admin)?;
    }
    if let Some(runs_dir) = path.parent() {
        let owner = owner_file(runs_dir, run_id);
        match fs::remove_file(&owner) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(GitError::io("remove", &owner, e)),
        }
    }
    Ok(())
}

fn remove_all(path: &Path) -> Result<(), GitError> {
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(GitError::io("remove", path, e)),
    }
}
