//! The final step: fast-forwarding the user's branch and working tree to
//! the run's best state — the first and only write to the user's checkout.
//!
//! Every check happens first (HEAD unchanged and on the same branch, no
//! uncommitted change in a touched file, no index lock); any failed check is
//! a [`FastForward::Skipped`] value with the command that takes the result
//! by hand. Before the branch moves, `refs/swarm/<run>/pre-ff` records the
//! old HEAD as an undo handle. The move itself is `git merge --ff-only`,
//! which updates the branch, the index and the files the run changed, and
//! leaves the user's other uncommitted changes alone.

use git2::{ErrorCode, Repository};

use super::command::{first_lines, GitCommand};
use super::repo::{dirty_paths, head_state};
use super::{CommitId, FastForward, GitError, Repo};

/// The undo ref written before the user's branch moves.
pub fn pre_ff_ref(run_id: &str) -> String {
    format!("refs/swarm/{run_id}/pre-ff")
}

/// The run id inside a run branch name `swarm/<run>/best` (the part between
/// `swarm/` and `/best`); the whole name when it has another shape.
pub fn run_id_of_branch(run_branch: &str) -> &str {
    let name = run_branch.strip_prefix("refs/heads/").unwrap_or(run_branch);
    let name = name.strip_prefix("swarm/").unwrap_or(name);
    name.strip_suffix("/best").unwrap_or(name)
}

impl Repo {
    /// Fast-forwards the user's branch to `to`, updating the working tree,
    /// only if `HEAD` is still `expected_head` on the same branch and none of
    /// `touched` (repo-relative) has uncommitted changes.
    ///
    /// `NothingToDo` when `to == expected_head`. Writes the undo ref
    /// `refs/swarm/<run>/pre-ff` (see [`pre_ff_ref`]) before moving the
    /// branch. A refused update is `Ok(Skipped { reason, command })` where
    /// `command` is `git merge --ff-only <run_branch>`.
    pub fn fast_forward(
        &self,
        expected_head: &CommitId,
        to: &CommitId,
        run_branch: &str,
        touched: &[String],
    ) -> Result<FastForward, GitError> {
        if to == expected_head {
            return Ok(FastForward::NothingToDo);
        }
        let skip = |reason: String| {
            Ok(FastForward::Skipped {
                reason,
                command: format!("git merge --ff-only {run_branch}"),
            })
        };
        let git = self.git()?;
        let (head, branch) = head_state(&git, &self.info().root)?;
        let Some(branch) = branch else {
            return skip(format!(
                "HEAD is detached at {}; check out a branch to take the result",
                head.short()
            ));
        };
        if self.info().branch.as_deref() != Some(branch.as_str()) {
            return skip(format!(
                "HEAD moved to branch {branch} during the run (it was on {})",
                self.info().branch.as_deref().unwrap_or("a detached HEAD")
            ));
        }
        if &head != expected_head {
            return skip(format!(
                "branch {branch} moved from {} to {} during the run",
                expected_head.short(),
                head.short()
            ));
        }
        if !is_ancestor(&git, expected_head, to)? {
            return skip(format!(
                "{} does not descend from {branch} ({}): not a fast-forward",
                to.short(),
                expected_head.short()
            ));
        }
        let dirty = dirty_paths(&git)?;
        let blocking: Vec<&str> = touched
            .iter()
            .map(String::as_str)
            .filter(|path| dirty.iter().any(|d| d == path))
            .collect();
        if !blocking.is_empty() {
            return skip(format!(
                "uncommitted changes in files the run changed: {}",
                blocking.join(", ")
            ));
        }
        if git.path().join("index.lock").exists() {
            return skip("the index is locked by another git process (index.lock)".to_string());
        }

        let undo = pre_ff_ref(run_id_of_branch(run_branch));
        git.reference(
            &undo,
            expected_head.oid()?,
            true,
            &format!("swarm: {branch} before fast-forward"),
        )
        .map_err(|e| GitError::git2(format!("write {undo}"), e))?;

        let merge = GitCommand::new(&self.info().root)
            .arg("merge")
            .arg("--ff-only")
            .arg("--quiet")
            .arg(to.to_string());
        let output = merge.output()?;
        if !output.success {
            if let Ok(mut reference) = git.find_reference(&undo) {
                let _ = reference.delete();
            }
            return skip(format!(
                "`{}` refused: {}",
                merge.display(),
                first_lines(&output.stderr)
            ));
        }
        Ok(FastForward::Updated {
            branch,
            from: expected_head.clone(),
            to: to.clone(),
        })
    }
}

fn is_ancestor(git: &Repository, ancestor: &CommitId, commit: &CommitId) -> Result<bool, GitError> {
    let op = || format!("compare {} and {}", ancestor.short(), commit.short());
    match git.graph_descendant_of(commit.oid()?, ancestor.oid()?) {
        Ok(descends) => Ok(descends),
        Err(e) if e.code() == ErrorCode::NotFound => Ok(false),
        Err(e) => Err(GitError::git2(op(), e)),
    }
}
