//! A task's own state while it is open: a refactoring is red in the middle
//! (a function moved, its importers not yet updated), so a task's step the
//! bar does not accept yet is not thrown away. It is committed on its
//! attempt branch like any attempt, and the worktree stays on it: the next
//! reply for the task builds on it, and is reviewed, judged and committed
//! together with it (the task's change as a whole, against the best
//! state). The task is kept when a step makes the whole accepted, and
//! thrown away ([`discard`]) when the model says it is done, or its
//! replies run out, while the whole is still not accepted. A repair has no
//! open state.

use super::Purpose;
use crate::error::SwarmError;
use crate::git::{CommitId, RunWorkspace};
use crate::orchestrator::RunState;
use crate::pipeline::{Change, Verdict};

/// The open state of the task being worked on.
#[derive(Clone, Debug)]
pub(crate) struct OpenState {
    /// The task's number.
    pub task: usize,
    /// The attempt commit holding it (best plus the task's change so far).
    pub commit: CommitId,
    /// The task's change so far, against the best state.
    pub change: Change,
    /// What the Judge found of it.
    pub outcome: String,
}

/// The open state of `purpose`'s task, if it has one.
pub(super) fn of<'s>(state: &'s RunState, purpose: Purpose<'_>) -> Option<&'s OpenState> {
    let Purpose::Task(task) = purpose else {
        return None;
    };
    let book = state.work.tasks.as_ref()?;
    book.open.as_ref().filter(|o| o.task == task.number)
}

/// The commit a reply for `purpose` applies to: the task's open state, or
/// the best state.
pub(super) fn base(state: &RunState, ws: &RunWorkspace, purpose: Purpose<'_>) -> String {
    of(state, purpose).map_or_else(|| ws.best().0.clone(), |o| o.commit.0.clone())
}

/// `change` (reviewed against the open state) as a change against the best
/// state: the open state's writes, then its own (the last write of a path
/// wins); both diffs, one after the other.
pub(super) fn whole(state: &RunState, purpose: Purpose<'_>, change: Change) -> Change {
    let Some(open) = of(state, purpose) else {
        return change;
    };
    let mut whole = open.change.clone();
    whole.writes.extend(change.writes);
    for file in change.files {
        if !whole.files.contains(&file) {
            whole.files.push(file);
        }
    }
    whole.changed_lines += change.changed_lines;
    whole.diff.push_str(&change.diff);
    whole.hash = change.hash;
    whole.rebased = change.rebased;
    whole
}

/// Whether a task's judged step stays open: it is not accepted, and does
/// not stop the run.
pub(super) fn stays(purpose: Purpose<'_>, verdict: Verdict, conflict: bool) -> bool {
    matches!(purpose, Purpose::Task(_)) && !verdict.is_accepted() && !conflict
}

/// Keeps `commit` as the task's open state.
pub(super) fn keep(
    state: &mut RunState,
    purpose: Purpose<'_>,
    commit: CommitId,
    change: &Change,
    outcome: &str,
) {
    let (Purpose::Task(task), Some(book)) = (purpose, state.work.tasks.as_mut()) else {
        return;
    };
    book.open = Some(OpenState {
        task: task.number,
        commit,
        change: change.clone(),
        outcome: outcome.to_string(),
    });
}

/// Forgets the open state (the run branch moved to it, or it is thrown
/// away).
pub(super) fn close(state: &mut RunState) {
    if let Some(book) = state.work.tasks.as_mut() {
        book.open = None;
    }
}

/// Throws the open state away, if any: the worktree back at the best
/// state. What the Judge last found of it, when there was one.
pub(crate) fn discard(
    ws: &RunWorkspace,
    state: &mut RunState,
) -> Result<Option<String>, SwarmError> {
    let Some(open) = state.work.tasks.as_mut().and_then(|b| b.open.take()) else {
        return Ok(None);
    };
    ws.reset_to(ws.best())?;
    Ok(Some(open.outcome))
}
