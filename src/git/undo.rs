//! Taking a delivery back: the user's branch returns to the undo ref
//! `refs/swarm/<run>/pre-ff`, like `git reset --keep`, which keeps every
//! uncommitted change it can and refuses rather than overwrite one.
//!
//! Every check happens first (the run was delivered, the branch it moved is
//! the one checked out here, the branch has not moved since); a failed
//! check is an [`Undo::Refused`] value stating the facts (what the user
//! can do about them is the caller's to say) and nothing is written.
//! Afterwards the undo ref gives way to `refs/swarm/<run>/undone`, pointing
//! at the result taken back, so `swarm log` shows the run as undone. The
//! caller holds the repository's run lock.

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
    /// Nothing written, and why.
    Refused(UndoRefusal),
}

/// Why a run's delivery was left as it is. Its text states the facts; what
/// the user can do about them is the caller's to say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UndoRefusal {
    /// The run has no undo ref: it never moved a branch.
    NotDelivered { run_id: String },
    /// Neither the run branch nor a reflog entry records the result any
    /// more; the undo ref is still there.
    ResultLost { run_id: String },
    /// The branch the run delivered to is not the one checked out here:
    /// it is checked out in the worktree `elsewhere`, or nowhere (`here`
    /// is the branch checked out here, `None` for a detached HEAD).
    NotCheckedOut {
        run_id: String,
        branch: String,
        elsewhere: Option<String>,
        here: Option<String>,
    },
    /// No reflog says which branch the run moved, and the branch checked
    /// out here holds neither its result nor the state before it.
    NotHere { run_id: String, result: CommitId },
    /// `branch` moved since the delivery: `later` commits were added on
    /// top of the result, or (`None`) the result is no longer in its
    /// history (rewritten or reset).
    Moved {
        run_id: String,
        branch: String,
        result: CommitId,
        later: Option<usize>,
    },
    /// `git reset --keep` refused (an uncommitted change in a file it would
    /// write); `stderr` is what it said.
    ResetRefused { stderr: String },
}

impl std::fmt::Display for UndoRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UndoRefusal::NotDelivered { run_id } => write!(
                f,
                "run {run_id} was not delivered to any branch, so there is nothing to undo"
            ),
            UndoRefusal::ResultLost { run_id } => write!(
                f,
                "run {run_id}'s result is no longer recorded (no run branch, no reflog entry)"
            ),
            UndoRefusal::NotCheckedOut {
                branch,
                elsewhere: Some(elsewhere),
                ..
            } => write!(
                f,
                "the run delivered to {branch}, which is checked out in {elsewhere}, not here"
            ),
            UndoRefusal::NotCheckedOut {
                branch,
                elsewhere: None,
                here,
                ..
            } => {
                let here = here
                    .as_ref()
                    .map(|b| format!("branch {b}"))
                    .unwrap_or_else(|| "a detached HEAD".to_string());
                write!(
                    f,
                    "the run delivered to {branch}, which is not checked out (here: {here})"
                )
            }
            UndoRefusal::NotHere { run_id, result } => write!(
                f,
                "the branch checked out here does not hold run {run_id}'s result {}",
                result.short()
            ),
            UndoRefusal::Moved {
                run_id,
                branch,
                result,
                later: None,
            } => write!(
                f,
                "{branch} no longer holds run {run_id}'s result {} (it was rewritten or reset); undoing would drop its current state",
                result.short()
            ),
            UndoRefusal::Moved {
                run_id,
                branch,
                later: Some(later),
                ..
            } => write!(
                f,
                "{branch} has {later} commit(s) since run {run_id} was delivered; undoing would drop them"
            ),
            UndoRefusal::ResetRefused { stderr } => write!(
                f,
                "`git reset --keep` refused: {}; nothing was changed",
                first_lines(stderr)
            ),
        }
    }
}

impl Repo {
    /// Takes `run`'s delivery back (see the module docs). The branch must be
    /// checked out in the worktree this [`Repo`] was opened in.
    pub fn undo_run(&self, run: &PastRun) -> Result<Undo, GitError> {
        let refuse = |refusal: UndoRefusal| Ok(Undo::Refused(refusal));
        let run_id = run.run_id.clone();
        let Some(pre_ff) = &run.pre_ff else {
            return refuse(UndoRefusal::NotDelivered { run_id });
        };
        let Some(result) = run.delivered_commit().cloned() else {
            return refuse(UndoRefusal::ResultLost { run_id });
        };
        let git = self.git()?;
        let (head, on) = head_state(&git, &self.info().root)?;
        let branch = match (&run.delivery, on) {
            (Some((delivered, _)), Some(here)) if *delivered == here => here,
            (None, Some(here)) if head == result || head == *pre_ff => here,
            (Some((delivered, _)), here) => {
                return refuse(UndoRefusal::NotCheckedOut {
                    run_id,
                    branch: delivered.clone(),
                    elsewhere: checked_out_in(self, delivered)?,
                    here,
                })
            }
            (None, _) => return refuse(UndoRefusal::NotHere { run_id, result }),
        };
        if head == *pre_ff {
            self.mark_undone(&run_id, &result)?;
            return Ok(Undo::Done {
                branch,
                from: result,
                to: pre_ff.clone(),
            });
        }
        if head != result {
            let later = commits_since(self, &run_id, &branch, &result, &head)?;
            return refuse(UndoRefusal::Moved {
                run_id,
                branch,
                result,
                later,
            });
        }
        let reset = GitCommand::new(&self.info().root)
            .arg("reset")
            .arg("--keep")
            .arg("--quiet")
            .arg(pre_ff.to_string());
        let output = reset.output_shielded()?;
        let (now, still_on) = head_state(&self.git()?, &self.info().root)?;
        if !output.success || now != *pre_ff || still_on.as_deref() != Some(branch.as_str()) {
            return refuse(UndoRefusal::ResetRefused {
                stderr: output.stderr,
            });
        }
        self.mark_undone(&run_id, &result)?;
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

/// The worktree `branch` is checked out in, if any (this one included).
fn checked_out_in(repo: &Repo, branch: &str) -> Result<Option<String>, GitError> {
    let listing = GitCommand::new(&repo.info().root)
        .arg("worktree")
        .arg("list")
        .arg("--porcelain")
        .run()?;
    let mut path = None;
    for line in listing.stdout.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            path = Some(p.to_string());
        } else if line == format!("branch refs/heads/{branch}") && path.is_some() {
            return Ok(path);
        }
    }
    Ok(None)
}

/// How many commits `branch` (now at `head`) has on top of run `run_id`'s
/// result; `None` when the result is no longer in its history.
fn commits_since(
    repo: &Repo,
    run_id: &str,
    branch: &str,
    result: &CommitId,
    head: &CommitId,
) -> Result<Option<usize>, GitError> {
    let git = repo.objects()?;
    let (head_oid, result_oid) = (head.oid()?, result.oid()?);
    let descends = git
        .graph_descendant_of(head_oid, result_oid)
        .map_err(|e| GitError::git2(format!("compare {branch} with run {run_id}"), e))?;
    if !descends {
        return Ok(None);
    }
    let (later, _) = git
        .graph_ahead_behind(head_oid, result_oid)
        .map_err(|e| GitError::git2(format!("count commits on {branch}"), e))?;
    Ok(Some(later))
}

/// The command that takes an undone run's result again:
/// `git merge --ff-only refs/swarm/<run>/undone`.
pub fn redo_command(run_id: &str) -> String {
    take_command(&undone_ref(run_id))
}
