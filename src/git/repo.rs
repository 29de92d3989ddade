//! Opening the repository that holds a target, creating one with a baseline
//! commit, and read-only queries (tracked files, dirty paths, branch tips,
//! logs). Nothing here writes the user's working tree, index or HEAD.

use std::fs;
use std::path::{Component, Path, PathBuf};

use git2::{ErrorCode, Oid, Repository, RepositoryOpenFlags, Signature, StatusOptions};

use super::{CommitId, FileKind, GitError, Repo, RepoInfo};

/// Paths never committed by [`Repo::init_with_baseline`], even without a
/// `.gitignore`; written to the new repository's `info/exclude`.
pub const BASELINE_EXCLUDES: &[&str] = &[".venv/", "venv/", "__pycache__/", "*.pyc"];

/// The identity used when the repository has no `user.name`/`user.email`.
pub const FALLBACK_NAME: &str = "swarm";
/// The e-mail used when the repository has no `user.email`.
pub const FALLBACK_EMAIL: &str = "swarm@localhost";

impl CommitId {
    pub(crate) fn from_oid(oid: Oid) -> Self {
        CommitId(oid.to_string())
    }

    pub(crate) fn oid(&self) -> Result<Oid, GitError> {
        Oid::from_str(&self.0).map_err(|e| GitError::git2(format!("parse commit id {}", self.0), e))
    }
}

/// Canonicalizes `path`, naming it in the error.
pub(crate) fn canonical(path: &Path) -> Result<PathBuf, GitError> {
    fs::canonicalize(path).map_err(|e| GitError::io("resolve", path, e))
}

/// The commit signature: the repository's configured identity, else
/// `swarm <swarm@localhost>` (never fails for lack of identity).
pub(crate) fn signature(repo: &Repository) -> Result<Signature<'static>, GitError> {
    if let Ok(signature) = repo.signature() {
        return Ok(signature);
    }
    let config = repo.config().ok();
    let read = |key: &str| {
        config
            .as_ref()
            .and_then(|c| c.get_string(key).ok())
            .filter(|v| !v.trim().is_empty())
    };
    let name = read("user.name").unwrap_or_else(|| FALLBACK_NAME.to_string());
    let email = read("user.email").unwrap_or_else(|| FALLBACK_EMAIL.to_string());
    Signature::now(&name, &email).map_err(|e| GitError::git2("build commit signature", e))
}

/// Checks that `path` is a clean repo-relative path (`a/b.py`): not empty,
/// not absolute, no `.`/`..` components, nothing inside `.git`.
pub(crate) fn check_rel_path(path: &str) -> Result<(), GitError> {
    let refuse = |reason: &str| {
        Err(GitError::InvalidPath {
            path: path.to_string(),
            reason: reason.to_string(),
        })
    };
    if path.is_empty() {
        return refuse("empty path");
    }
    if path.contains('\\') || path.contains('\0') {
        return refuse("use '/' separators and no NUL");
    }
    for component in Path::new(path).components() {
        match component {
            Component::Normal(name) if name == ".git" => return refuse("inside .git"),
            Component::Normal(_) => {}
            Component::CurDir | Component::ParentDir => return refuse("'.' or '..' component"),
            Component::RootDir | Component::Prefix(_) => return refuse("absolute path"),
        }
    }
    if path.split('/').any(str::is_empty) {
        return refuse("empty component");
    }
    Ok(())
}

impl Repo {
    /// Opens the repository that contains `target` (an existing folder).
    /// `Ok(None)` when the folder is in no repository.
    ///
    /// `target` may be the root, a subfolder, a symlinked path or a folder in
    /// a linked worktree; paths are canonicalized. Environment variables such
    /// as `GIT_DIR` are ignored: discovery starts from `target`.
    pub fn open(target: &Path) -> Result<Option<Repo>, GitError> {
        let target = canonical(target)?;
        let no_ceiling: [&Path; 0] = [];
        let repo = match Repository::open_ext(&target, RepositoryOpenFlags::empty(), no_ceiling) {
            Ok(repo) => repo,
            Err(e) => {
                // A `.git` that this user cannot read looks like no
                // repository to discovery; creating one here would nest a
                // repository inside the user's.
                if let Some((git_dir, source)) = unopenable_git_dir_above(&target) {
                    return Err(GitError::Unreadable { git_dir, source });
                }
                if e.code() == ErrorCode::NotFound {
                    return Ok(None);
                }
                return Err(GitError::git2(format!("open {}", target.display()), e));
            }
        };
        if repo.is_bare() {
            return Err(GitError::Bare {
                path: canonical(repo.path())?,
            });
        }
        let workdir = repo.workdir().ok_or_else(|| GitError::Bare {
            path: repo.path().to_path_buf(),
        })?;
        let root = canonical(workdir)?;
        let common_dir = canonical(repo.commondir())?;
        let git_dir = canonical(repo.path())?;
        if target.starts_with(&git_dir) || target.starts_with(&common_dir) {
            return Err(GitError::TargetInGitDir { path: target });
        }
        let target_rel = match target.strip_prefix(&root) {
            Ok(rel) => rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/"),
            Err(_) => return Err(GitError::TargetOutsideWorkTree { path: target, root }),
        };
        if target_rel == ".git" || target_rel.starts_with(".git/") {
            return Err(GitError::TargetInGitDir { path: target });
        }
        let (head, branch) = head_state(&repo, &root)?;
        Ok(Some(Repo {
            info: RepoInfo {
                root,
                common_dir,
                target_rel,
                head,
                branch,
            },
            git_dir,
        }))
    }

    /// Initializes a repository in `dir` (initial branch `main`) and commits
    /// every file in it as the baseline commit, honouring a `.gitignore` and
    /// never adding `.venv/`, `venv/`, `__pycache__/` or `*.pyc` (those are
    /// also written to the new repository's `.git/info/exclude`). Commits
    /// with the configured identity, else `swarm <swarm@localhost>`.
    pub fn init_with_baseline(dir: &Path, message: &str) -> Result<Repo, GitError> {
        let dir = canonical(dir)?;
        if dir.join(".git").exists() {
            return Err(GitError::Unexpected {
                op: format!("init {}", dir.display()),
                found: "a repository already exists there".to_string(),
            });
        }
        let op = || format!("init {}", dir.display());
        let mut options = git2::RepositoryInitOptions::new();
        options.initial_head("main");
        let repo = Repository::init_opts(&dir, &options).map_err(|e| GitError::git2(op(), e))?;

        let info_dir = repo.path().join("info");
        fs::create_dir_all(&info_dir).map_err(|e| GitError::io("create", &info_dir, e))?;
        let exclude = info_dir.join("exclude");
        let mut text = fs::read_to_string(&exclude).unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("# added by swarm: never part of the baseline\n");
        for pattern in BASELINE_EXCLUDES {
            text.push_str(pattern);
            text.push('\n');
        }
        fs::write(&exclude, text).map_err(|e| GitError::io("write", &exclude, e))?;

        let mut index = repo.index().map_err(|e| GitError::git2(op(), e))?;
        let mut skip = |path: &Path, _spec: &[u8]| -> i32 { i32::from(is_baseline_excluded(path)) };
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, Some(&mut skip))
            .map_err(|e| GitError::git2("add files to the baseline", e))?;
        index
            .write()
            .map_err(|e| GitError::git2("write the index", e))?;
        let tree_id = index
            .write_tree()
            .map_err(|e| GitError::git2("write the baseline tree", e))?;
        let tree = repo
            .find_tree(tree_id)
            .map_err(|e| GitError::git2("read the baseline tree", e))?;
        let signature = signature(&repo)?;
        repo.commit(Some("HEAD"), &signature, &signature, message, &tree, &[])
            .map_err(|e| GitError::git2("commit the baseline", e))?;
        Repo::open(&dir)?.ok_or_else(|| GitError::Unexpected {
            op: op(),
            found: "the new repository cannot be opened".to_string(),
        })
    }

    /// Facts about the repository and the target folder, as of `open`.
    pub fn info(&self) -> &RepoInfo {
        &self.info
    }

    /// Opens libgit2 on the target's worktree.
    pub(crate) fn git(&self) -> Result<Repository, GitError> {
        Repository::open(&self.git_dir)
            .map_err(|e| GitError::git2(format!("open {}", self.git_dir.display()), e))
    }

    /// Opens libgit2 on the common dir: the object store and refs every
    /// worktree shares. Used for history walks, because libgit2 reads the
    /// `shallow` file of a shallow clone from the git dir it was opened on,
    /// and a linked worktree's git dir has none (git keeps it in the common
    /// dir); walking from there stops at a parent that is not in the clone.
    pub(crate) fn objects(&self) -> Result<Repository, GitError> {
        open_objects(&self.info.common_dir)
    }

    /// Every path of `commit`'s tree with its kind, repo-relative, sorted.
    /// Folders are not listed; a submodule is one [`FileKind::Gitlink`]
    /// entry (its files are not part of this repository's tree).
    pub fn tree_files(&self, commit: &CommitId) -> Result<Vec<(String, FileKind)>, GitError> {
        tree_files(&self.git()?, commit)
    }

    /// The regular and executable files of `HEAD`'s tree (the commit the run
    /// starts from, not the index: a staged but uncommitted file is not in
    /// the run's worktree) under the target folder, repo-relative, sorted.
    /// Submodules (gitlinks) and symbolic links are left out: a symlink is
    /// never followed when reading files for prompts.
    pub fn tracked_files(&self) -> Result<Vec<String>, GitError> {
        let prefix = if self.info.target_rel.is_empty() {
            String::new()
        } else {
            format!("{}/", self.info.target_rel)
        };
        Ok(self
            .tree_files(&self.info.head)?
            .into_iter()
            .filter(|(_, kind)| matches!(kind, FileKind::Regular | FileKind::Executable))
            .map(|(path, _)| path)
            .filter(|path| path.starts_with(&prefix))
            .collect())
    }

    /// The paths of the submodules `HEAD` records (gitlinks of its tree),
    /// repo-relative, sorted. Everything below them belongs to another
    /// repository: the run must not change it.
    pub fn submodule_paths(&self) -> Result<Vec<String>, GitError> {
        Ok(self
            .tree_files(&self.info.head)?
            .into_iter()
            .filter(|(_, kind)| *kind == FileKind::Gitlink)
            .map(|(path, _)| path)
            .collect())
    }

    /// Checks that swarm can create its refs: a branch named `swarm` (or a
    /// ref `refs/swarm`) would make `swarm/<run>/best` (or the undo ref
    /// `refs/swarm/<run>/pre-ff`) impossible, since git cannot hold a ref
    /// and refs below it at once.
    pub fn check_run_refs_possible(&self) -> Result<(), GitError> {
        let git = self.git()?;
        if git.find_reference("refs/heads/swarm").is_ok() {
            return Err(GitError::RunRefsBlocked {
                what: "a branch named",
                name: "swarm".to_string(),
                needed: "swarm/<run>/best".to_string(),
                rename: "git branch -m swarm <new-name>".to_string(),
            });
        }
        if git.find_reference("refs/swarm").is_ok() {
            return Err(GitError::RunRefsBlocked {
                what: "the ref",
                name: "refs/swarm".to_string(),
                needed: "refs/swarm/<run>/pre-ff".to_string(),
                rename: "git update-ref -m rename refs/<new-name> refs/swarm && git update-ref -d refs/swarm".to_string(),
            });
        }
        Ok(())
    }

    /// Repo-relative paths with uncommitted changes: staged, modified,
    /// deleted, or untracked (not ignored), sorted. Reads only; never
    /// refreshes the index.
    pub fn dirty_paths(&self) -> Result<Vec<String>, GitError> {
        dirty_paths(&self.git()?)
    }

    /// `git log --all --graph --oneline --decorate` of the repository, as text.
    pub fn log_graph(&self) -> Result<String, GitError> {
        let out = super::command::GitCommand::new(&self.info.root)
            .arg("log")
            .arg("--all")
            .arg("--graph")
            .arg("--oneline")
            .arg("--decorate")
            .run()?;
        Ok(out.stdout)
    }

    /// The commit a local branch points at; `None` when there is no such
    /// branch. `name` is short (`swarm/<run>/best`) or full (`refs/...`).
    pub fn branch_tip(&self, name: &str) -> Result<Option<CommitId>, GitError> {
        let repo = self.git()?;
        let full = if name.starts_with("refs/") {
            name.to_string()
        } else {
            format!("refs/heads/{name}")
        };
        let tip = match repo.find_reference(&full) {
            Ok(reference) => reference
                .peel_to_commit()
                .map(|commit| Some(CommitId::from_oid(commit.id())))
                .map_err(|e| GitError::git2(format!("resolve {full}"), e)),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
            Err(e) => Err(GitError::git2(format!("read {full}"), e)),
        };
        tip
    }

    /// The full messages of the commits reachable from `branch` (first
    /// parents), newest first.
    pub fn log_messages(&self, branch: &str) -> Result<Vec<String>, GitError> {
        let repo = self.objects()?;
        let tip = self
            .branch_tip(branch)?
            .ok_or_else(|| GitError::Unexpected {
                op: format!("log {branch}"),
                found: "no such branch".to_string(),
            })?;
        let mut walk = repo
            .revwalk()
            .map_err(|e| GitError::git2(format!("log {branch}"), e))?;
        let tip = tip.oid()?;
        walk.simplify_first_parent()
            .and_then(|()| walk.push(tip))
            .map_err(|e| GitError::git2(format!("log {branch}"), e))?;
        let mut messages = Vec::new();
        for oid in walk {
            let oid = oid.map_err(|e| GitError::git2(format!("log {branch}"), e))?;
            let commit = repo
                .find_commit(oid)
                .map_err(|e| GitError::git2(format!("read commit {oid}"), e))?;
            messages.push(String::from_utf8_lossy(commit.message_bytes()).into_owned());
        }
        Ok(messages)
    }

    /// The content of `path` (repo-relative) in `commit`; `None` when the
    /// commit has no such file.
    pub fn file_at(&self, commit: &CommitId, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        file_at(&self.git()?, commit, path)
    }

    /// Repo-relative paths that differ between two commits, sorted (both
    /// sides of a rename are listed).
    pub fn changed_paths(&self, from: &CommitId, to: &CommitId) -> Result<Vec<String>, GitError> {
        changed_paths(&self.git()?, from, to)
    }
}

/// `HEAD`'s commit and branch (`None` when detached) of the worktree whose
/// git dir `repo` was opened from.
pub(crate) fn head_state(
    repo: &Repository,
    root: &Path,
) -> Result<(CommitId, Option<String>), GitError> {
    let head = match repo.head() {
        Ok(head) => head,
        Err(e) if e.code() == ErrorCode::UnbornBranch || e.code() == ErrorCode::NotFound => {
            return Err(GitError::NoCommits {
                path: root.to_path_buf(),
            })
        }
        Err(e) => return Err(GitError::git2("read HEAD", e)),
    };
    let commit = head
        .peel_to_commit()
        .map_err(|e| GitError::git2("resolve HEAD", e))?;
    let branch = if head.is_branch() {
        head.shorthand().map(str::to_string)
    } else {
        None
    };
    Ok((CommitId::from_oid(commit.id()), branch))
}

/// Opens libgit2 on a git common dir (see [`Repo::objects`]).
pub(crate) fn open_objects(common_dir: &Path) -> Result<Repository, GitError> {
    Repository::open(common_dir)
        .map_err(|e| GitError::git2(format!("open {}", common_dir.display()), e))
}

/// See [`Repo::tree_files`].
pub(crate) fn tree_files(
    repo: &Repository,
    commit: &CommitId,
) -> Result<Vec<(String, FileKind)>, GitError> {
    let op = || format!("list the files of {}", commit.short());
    let tree = repo
        .find_commit(commit.oid()?)
        .and_then(|c| c.tree())
        .map_err(|e| GitError::git2(op(), e))?;
    let mut files = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        let kind = match entry.filemode() {
            0o100644 | 0o100664 => FileKind::Regular,
            0o100755 => FileKind::Executable,
            0o120000 => FileKind::Symlink,
            0o160000 => FileKind::Gitlink,
            _ => return git2::TreeWalkResult::Ok,
        };
        let name = String::from_utf8_lossy(entry.name_bytes());
        files.push((format!("{dir}{name}"), kind));
        git2::TreeWalkResult::Ok
    })
    .map_err(|e| GitError::git2(op(), e))?;
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(files)
}

/// The first `.git` at or above `target` that exists but that discovery
/// could not open, with the error reading it gave (none when it could be
/// read): an unreadable git dir looks like no repository.
fn unopenable_git_dir_above(target: &Path) -> Option<(PathBuf, Option<std::io::Error>)> {
    let git_dir = target
        .ancestors()
        .map(|dir| dir.join(".git"))
        .find(|dot_git| fs::symlink_metadata(dot_git).is_ok())?;
    let probe = if git_dir.is_dir() {
        fs::read_dir(&git_dir)
            .and_then(|_| fs::metadata(git_dir.join("HEAD")))
            .map(|_| ())
    } else {
        fs::read(&git_dir).map(|_| ())
    };
    Some((git_dir, probe.err()))
}

/// See [`Repo::dirty_paths`].
pub(crate) fn dirty_paths(repo: &Repository) -> Result<Vec<String>, GitError> {
    dirty_paths_with(repo, StatusOptions::new())
}

/// Which of `paths` (repo-relative, exact) are dirty as
/// [`Repo::dirty_paths`] tells it; only those paths are looked at, not
/// the whole working tree.
pub(crate) fn dirty_paths_among<'a>(
    repo: &Repository,
    paths: impl IntoIterator<Item = &'a String>,
) -> Result<Vec<String>, GitError> {
    let mut options = StatusOptions::new();
    let mut any = false;
    for path in paths {
        options.pathspec(path);
        any = true;
    }
    // No pathspec would mean every path.
    if !any {
        return Ok(Vec::new());
    }
    options.disable_pathspec_match(true);
    dirty_paths_with(repo, options)
}

fn dirty_paths_with(
    repo: &Repository,
    mut options: StatusOptions,
) -> Result<Vec<String>, GitError> {
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo
        .statuses(Some(&mut options))
        .map_err(|e| GitError::git2("read the status of the working tree", e))?;
    let mut paths = Vec::new();
    for entry in statuses.iter() {
        let status = entry.status();
        if status.is_empty() || status.contains(git2::Status::IGNORED) {
            continue;
        }
        for delta in [entry.head_to_index(), entry.index_to_workdir()]
            .into_iter()
            .flatten()
        {
            for file in [delta.old_file(), delta.new_file()] {
                if let Some(path) = file.path() {
                    paths.push(path.to_string_lossy().replace('\\', "/"));
                }
            }
        }
        if let Some(path) = entry.path() {
            paths.push(path.to_string());
        }
    }
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// See [`Repo::file_at`].
pub(crate) fn file_at(
    repo: &Repository,
    commit: &CommitId,
    path: &str,
) -> Result<Option<Vec<u8>>, GitError> {
    let op = || format!("read {path} at {}", commit.short());
    let tree = repo
        .find_commit(commit.oid()?)
        .and_then(|c| c.tree())
        .map_err(|e| GitError::git2(op(), e))?;
    let entry = match tree.get_path(Path::new(path)) {
        Ok(entry) => entry,
        Err(e) if e.code() == ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(GitError::git2(op(), e)),
    };
    match entry
        .to_object(repo)
        .map_err(|e| GitError::git2(op(), e))?
        .into_blob()
    {
        Ok(blob) => Ok(Some(blob.content().to_vec())),
        Err(_) => Ok(None),
    }
}

/// The id of the tree at `path` (repo-relative, `""` for the root) in
/// `commit`; `None` when `commit` has nothing there or a file.
pub(crate) fn tree_id_at(
    repo: &Repository,
    commit: &CommitId,
    path: &str,
) -> Result<Option<String>, GitError> {
    let op = || format!("find the tree of {path:?} at {}", commit.short());
    let tree = repo
        .find_commit(commit.oid()?)
        .and_then(|c| c.tree())
        .map_err(|e| GitError::git2(op(), e))?;
    if path.is_empty() {
        return Ok(Some(tree.id().to_string()));
    }
    match tree.get_path(Path::new(path)) {
        Ok(entry) if entry.kind() == Some(git2::ObjectType::Tree) => {
            Ok(Some(entry.id().to_string()))
        }
        Ok(_) => Ok(None),
        Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
        Err(e) => Err(GitError::git2(op(), e)),
    }
}

/// See [`Repo::changed_paths`].
pub(crate) fn changed_paths(
    repo: &Repository,
    from: &CommitId,
    to: &CommitId,
) -> Result<Vec<String>, GitError> {
    let op = || format!("diff {}..{}", from.short(), to.short());
    let tree_of = |id: &CommitId| -> Result<git2::Tree<'_>, GitError> {
        repo.find_commit(id.oid()?)
            .and_then(|c| c.tree())
            .map_err(|e| GitError::git2(op(), e))
    };
    let (old, new) = (tree_of(from)?, tree_of(to)?);
    let diff = repo
        .diff_tree_to_tree(Some(&old), Some(&new), None)
        .map_err(|e| GitError::git2(op(), e))?;
    let mut paths = Vec::new();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(path) = file.path() {
                paths.push(path.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// Whether `path` (relative to the new repository) is one swarm never puts
/// in a baseline.
fn is_baseline_excluded(path: &Path) -> bool {
    let in_excluded_dir = path.components().any(|c| {
        matches!(
            c.as_os_str().to_str(),
            Some(".venv" | "venv" | "__pycache__")
        )
    });
    in_excluded_dir || path.extension().is_some_and(|ext| ext == "pyc")
}
