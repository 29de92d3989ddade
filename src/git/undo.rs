//! Taking a delivery back: the user's branch returns to the undo ref
//! `refs/swarm/<run>/pre-ff`, like `git reset --keep`, which keeps every
//! uncommitted change it can and refuses rather than overwrite one.
//!
//! Every check happens first (the run was delivered, the branch it moved is
//! the one checked out here, the branch has not moved since); a failed
//! check is an [`Undo::Refused`] value and nothing is written. Afterwards
//! the undo ref gives way to `refs/swarm/<run>/undone`, pointing at the
//! result taken back, so `swarm log` shows the run as undone. The caller
//! holds the repository's run lock.

use super::command::{first_lines, GitCommand};
use super::fastforward::take_command;
use super::layout::{pre_ff_ref, undone_ref};
use super::repo::head_state;
use super::runs::PastRun;
use super::{CommitId, GitError, Repo};

/// What `swarm undo` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Undo {
    /// `branch` is back at `to` (the pre-fast-forward state); `from` is the
    /// result taken back, still on the run branch.
    Done {
        branch: String,
        from: CommitId,
        to: CommitId,
    },
    /// Nothing written: why, and what the user can do.
    Refused { reason: String, hint: String },
}

impl Repo {
    /// Takes `run`'s delivery back (see the module docs). The branch must be
    /// checked out in the worktree this [`Repo`] was opened in.
    pub fn undo_run(&self, run: &PastRun) -> Result<Undo, GitError> {
        let refuse = |reason: String, hint: String| Ok(Undo::Refused { reason, hint });
        let id = &run.run_id;
        let Some(pre_ff) = &run.pre_ff else {
            return refuse(
                format!("run {id} was not delivered to any branch, so there is nothing to undo"),
                "`swarm log` lists the runs and what became of them".to_string(),
            );
        };
        let Some(result) = run.delivered_commit().cloned() else {
            return refuse(
                format!("run {id}'s result is no longer recorded (no run branch, no reflog entry)"),
                format!("restore by hand with `git reset --keep {}`", pre_ff_ref(id)),
            );
        };
        let git = self.git()?;
        let (head, on) = head_state(&git, &self.info().root)?;
        let branch = match (&run.delivery, on) {
            (Some((delivered, _)), Some(here)) if *delivered == here => here,
            (None, Some(here)) if head == result || head == *pre_ff => here,
            (Some((delivered, _)), here) => {
                return refuse(
                    not_here(self, delivered, here.as_deref())?,
                    format!("run `swarm undo {id}` where {delivered} is checked out"),
                )
            }
            (None, _) => {
                return refuse(
                    format!(
                        "the branch checked out here does not hold run {id}'s result {}",
                        result.short()
                    ),
                    format!(
                        "check out the branch the run delivered to and run `swarm undo {id}` there"
                    ),
                )
            }
        };
        if head == *pre_ff {
            self.mark_undone(id, &result)?;
            return Ok(Undo::Done {
                branch,
                from: result,
                to: pre_ff.clone(),
            });
        }
        if head != result {
            return refuse(moved_reason(self, id, &branch, &result, &head)?, format!(
                "see them with `git log --oneline {}..{branch}`; to drop them anyway: `git reset --keep {}`",
                result.short(),
                pre_ff_ref(id)
            ));
        }
        let reset = GitCommand::new(&self.info().root)
            .arg("reset")
            .arg("--keep")
            .arg("--quiet")
            .arg(pre_ff.to_string());
        let output = reset.output_shielded()?;
        let (now, still_on) = head_state(&self.git()?, &self.info().root)?;
        if !output.success || now != *pre_ff || still_on.as_deref() != Some(branch.as_str()) {
            return refuse(
                format!(
                    "`git reset --keep` refused: {}; nothing was changed",
                    first_lines(&output.stderr)
                ),
                "commit or stash the changes in those files, then run `swarm undo` again"
                    .to_string(),
            );
        }
        self.mark_undone(id, &result)?;
        Ok(Undo::Done {
            branch,
            from: result,
            to: pre_ff.clone(),
        })
    }

    /// Replaces the undo ref by `refs/swarm/<run>/undone` → `result`.
    fn mark_undone(&self, run_id: &str, result: &CommitId) -> Result<(), GitError> {
        let git = self.objects()?;
        let undone = undone_ref(run_id);
        git.reference(
            &undone,
            result.oid()?,
            true,
            &format!("swarm: run {run_id} undone"),
        )
        .map_err(|e| GitError::git2(format!("write {undone}"), e))?;
        let pre_ff = pre_ff_ref(run_id);
        if let Ok(mut reference) = git.find_reference(&pre_ff) {
            reference
                .delete()
                .map_err(|e| GitError::git2(format!("delete {pre_ff}"), e))?;
        }
        Ok(())
    }
}

/// Why the branch cannot be undone from here: checked out in another
/// worktree, or not checked out at all.
fn not_here(repo: &Repo, branch: &str, here: Option<&str>) -> Result<String, GitError> {
    let listing = GitCommand::new(&repo.info().root)
        .arg("worktree")
        .arg("list")
        .arg("--porcelain")
        .run()?;
    let mut path = None;
    for line in listing.stdout.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            path = Some(p.to_string());
        } else if line == format!("branch refs/heads/{branch}") {
            if let Some(elsewhere) = &path {
                return Ok(format!(
                    "the run delivered to {branch}, which is checked out in {elsewhere}, not here"
                ));
            }
        }
    }
    let here = here
        .map(|b| format!("branch {b}"))
        .unwrap_or_else(|| "a detached HEAD".to_string());
    Ok(format!(
        "the run delivered to {branch}, which is not checked out (here: {here})"
    ))
}

/// Why a branch that moved since the delivery is left alone: how many
/// commits would be dropped.
fn moved_reason(
    repo: &Repo,
    run_id: &str,
    branch: &str,
    result: &CommitId,
    head: &CommitId,
) -> Result<String, GitError> {
    let git = repo.objects()?;
    let (head_oid, result_oid) = (head.oid()?, result.oid()?);
    let descends = git
        .graph_descendant_of(head_oid, result_oid)
        .map_err(|e| GitError::git2(format!("compare {branch} with run {run_id}"), e))?;
    if !descends {
        return Ok(format!(
            "{branch} no longer holds run {run_id}'s result {} (it was rewritten or reset); undoing would drop its current state",
            result.short()
        ));
    }
    let (later, _) = git
        .graph_ahead_behind(head_oid, result_oid)
        .map_err(|e| GitError::git2(format!("count commits on {branch}"), e))?;
    Ok(format!(
        "{branch} has {later} commit(s) since run {run_id} was delivered; undoing would drop them"
    ))
}

/// The command that takes an undone run's result again:
/// `git merge --ff-only refs/swarm/<run>/undone`.
pub fn redo_command(run_id: &str) -> String {
    take_command(&undone_ref(run_id))
}
