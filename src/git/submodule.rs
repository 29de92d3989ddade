//! Filling the run worktree's submodules from the user's checkout.
//!
//! `git worktree add` leaves every submodule folder empty, so tests that
//! import from a submodule would fail in the run worktree and a correct fix
//! could never be accepted. Each submodule that is initialised in the
//! user's checkout (its folder has a `.git`) is cloned from that folder
//! with `git clone --shared --no-checkout` (objects are read through an
//! alternates file: no copy, no network, nothing written to the user's
//! repository or the submodule's git dir) and checked out detached at the
//! commit the superproject's commit records; nested submodules the same
//! way. A submodule that is not initialised in the user's checkout stays
//! empty, as it is for the user.

use std::fs;
use std::path::Path;

use git2::{Repository, TreeWalkMode, TreeWalkResult};

use super::command::GitCommand;
use super::{CommitId, GitError};

/// Deeper nesting than this is not followed (a guard against cycles).
const MAX_DEPTH: usize = 8;

/// Fills the submodules of `commit` (read from `repo`) in the worktree
/// `worktree` from the user's checkout at `user_root`. Returns the paths of
/// the submodules left empty because the user has not initialised them,
/// sorted.
pub(crate) fn populate(
    repo: &Repository,
    commit: &CommitId,
    user_root: &Path,
    worktree: &Path,
) -> Result<Vec<String>, GitError> {
    let mut empty = Vec::new();
    fill(repo, commit, user_root, worktree, "", 0, &mut empty)?;
    empty.sort();
    Ok(empty)
}

fn fill(
    repo: &Repository,
    commit: &CommitId,
    user_dir: &Path,
    worktree_dir: &Path,
    prefix: &str,
    depth: usize,
    empty: &mut Vec<String>,
) -> Result<(), GitError> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    for (path, recorded) in gitlinks(repo, commit)? {
        let shown = format!("{prefix}{path}");
        let user_sub = user_dir.join(&path);
        if fs::symlink_metadata(user_sub.join(".git")).is_err() {
            empty.push(shown);
            continue;
        }
        let present = GitCommand::new(&user_sub)
            .arg("cat-file")
            .arg("-e")
            .arg(format!("{recorded}^{{commit}}"))
            .output()?
            .success;
        if !present {
            return Err(GitError::SubmoduleCommitMissing {
                path: shown,
                commit: recorded.0,
            });
        }
        let worktree_sub = worktree_dir.join(&path);
        GitCommand::new(worktree_dir)
            .arg("clone")
            .arg("--quiet")
            .arg("--shared")
            .arg("--no-checkout")
            .arg("--")
            .arg(&user_sub)
            .arg(&worktree_sub)
            .run()?;
        GitCommand::new(&worktree_sub)
            .arg("-c")
            .arg("advice.detachedHead=false")
            .arg("checkout")
            .arg("--quiet")
            .arg("--detach")
            .arg(recorded.to_string())
            .run()?;
        let sub_repo = Repository::open(&worktree_sub)
            .map_err(|e| GitError::git2(format!("open {}", worktree_sub.display()), e))?;
        fill(
            &sub_repo,
            &recorded,
            &user_sub,
            &worktree_sub,
            &format!("{shown}/"),
            depth + 1,
            empty,
        )?;
    }
    Ok(())
}

/// The gitlinks of `commit`'s tree: (repo-relative path, recorded commit).
fn gitlinks(repo: &Repository, commit: &CommitId) -> Result<Vec<(String, CommitId)>, GitError> {
    let op = || format!("list the submodules of {}", commit.short());
    let tree = repo
        .find_commit(commit.oid()?)
        .and_then(|c| c.tree())
        .map_err(|e| GitError::git2(op(), e))?;
    let mut links = Vec::new();
    tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
        if entry.filemode() == 0o160000 {
            let name = String::from_utf8_lossy(entry.name_bytes());
            links.push((format!("{dir}{name}"), CommitId::from_oid(entry.id())));
        }
        TreeWalkResult::Ok
    })
    .map_err(|e| GitError::git2(op(), e))?;
    Ok(links)
}
