//! The Executor: puts an accepted change in the run's worktree, commits it
//! on its attempt branch with `Swarm-` trailers once the Judge has spoken,
//! and moves the run branch only for an improvement.

use super::judge::{Snapshot, Verdict};
use super::reviewer::Change;
use crate::git::{CommitId, GitError, RunWorkspace};

/// Everything the commit message says.
pub struct AttemptRecord<'a> {
    pub run_id: &'a str,
    pub iteration: u32,
    pub attempt: u32,
    pub model: &'a str,
    pub summary: &'a str,
    pub file: &'a str,
    pub verdict: Verdict,
    pub baseline: &'a Snapshot,
    pub result: &'a Snapshot,
    pub changed_lines: usize,
}

/// The attempt's commit message with its trailers.
pub fn commit_message(r: &AttemptRecord<'_>) -> String {
    let subject = format!("swarm: {} ({})", r.summary, r.file);
    let tests = match (&r.result.tests, &r.baseline.tests) {
        (Some(now), Some(base)) => format!("{} (baseline {})", now.describe(), base.describe()),
        (Some(now), None) => now.describe(),
        _ => format!("no tests; {}", r.result.describe()),
    };
    let score = |s: Option<f64>| s.map(|v| format!("{v:.2}")).unwrap_or_else(|| "n/a".into());
    format!(
        "{subject}\n\nAttempt {attempt} of run {run}, iteration {iteration}: the Judge found this change {verdict}.\n\n\
         Swarm-Run: {run}\nSwarm-Iteration: {iteration}\nSwarm-Attempt: {attempt}\nSwarm-Model: {model}\n\
         Swarm-Verdict: {verdict}\nSwarm-Tests: {tests}\nSwarm-Pylint: {before} -> {after}\n\
         Swarm-Changed-Lines: {lines}\n",
        attempt = r.attempt,
        run = r.run_id,
        iteration = r.iteration,
        verdict = r.verdict.as_str(),
        model = r.model,
        before = score(r.baseline.pylint),
        after = score(r.result.pylint),
        lines = r.changed_lines,
    )
}

/// Writes the change into the worktree so the Judge can run it.
pub fn stage(ws: &RunWorkspace, change: &Change) -> Result<(), GitError> {
    ws.write_files(&change.writes)
}

/// Commits the judged attempt; the run branch moves to it when the verdict
/// accepts it, otherwise the worktree goes back to the best state.
pub fn settle(
    ws: &mut RunWorkspace,
    change: &Change,
    record: &AttemptRecord<'_>,
) -> Result<CommitId, GitError> {
    let commit = ws.commit_attempt(record.attempt, &change.writes, &commit_message(record))?;
    if record.verdict.is_accepted() {
        ws.advance_best(&commit)?;
        ws.reset_to(&commit)?;
    } else {
        let best = ws.best().clone();
        ws.reset_to(&best)?;
    }
    Ok(commit)
}
