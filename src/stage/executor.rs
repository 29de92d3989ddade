//! The Executor: puts an accepted change in the run's worktree, commits it
//! on its attempt branch with `Swarm-` trailers once the Judge has spoken,
//! and moves the run branch only for an improvement.

use crate::pipeline::TargetDir;
use std::time::{Duration, Instant};

use crate::git::{CommitId, GitError, RunWorkspace};
use crate::pipeline::{Change, Snapshot, Verdict};
use crate::tools::KnownContent;

/// Everything the commit message says.
pub struct AttemptRecord<'a> {
    pub run_id: &'a str,
    pub iteration: u32,
    pub attempt: u32,
    pub model: &'a str,
    pub summary: &'a str,
    /// The file (or files, comma-separated) the change touches, named in
    /// the subject.
    pub file: &'a str,
    pub verdict: Verdict,
    pub baseline: &'a Snapshot,
    pub result: &'a Snapshot,
    pub changed_lines: usize,
}

/// Every file `change` touches, repository-relative and comma-separated,
/// `asked` (the file the Fixer was asked about) first: what a commit's
/// subject names.
pub fn files_named(target: &TargetDir, asked: &str, change: &Change) -> String {
    let mut files = vec![target.repo_path(asked).to_string()];
    for file in &change.files {
        let path = target.repo_path(file.as_str()).to_string();
        if !files.contains(&path) {
            files.push(path);
        }
    }
    files.join(", ")
}

/// The attempt's commit message with its trailers.
pub fn commit_message(r: &AttemptRecord<'_>) -> String {
    let subject = format!("swarm: {} ({})", r.summary, r.file);
    let tests = match (&r.result.tests, &r.baseline.tests) {
        (Some(now), Some(base)) => format!(
            "{} (baseline {}/{})",
            now.describe(),
            base.passed.len(),
            base.total
        ),
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
        before = score(r.baseline.lint_score),
        after = score(r.result.lint_score),
        lines = r.changed_lines,
    )
}

/// Writes the change into the worktree so the Judge can run it.
pub fn write_to_worktree(ws: &RunWorkspace, change: &Change) -> Result<(), GitError> {
    ws.write_files(&change.writes)
}

/// What the Judge may know of the worktree's files without reading them:
/// the blob ids of those under the target folder `target_rel` that hold
/// the committed content (see [`RunWorkspace::committed_blob_ids`]), and
/// git's way to make such an id for the others.
pub fn worktree_content(ws: &RunWorkspace, target: &TargetDir) -> Result<KnownContent, GitError> {
    Ok(KnownContent {
        ids: ws.committed_blob_ids(target.as_str())?,
        id_of: Some(crate::git::blob_id),
    })
}

/// A settled attempt: its commit, and how long committing and putting the
/// worktree at the best state took.
#[derive(Clone, Debug)]
pub struct Settled {
    pub commit: CommitId,
    /// The commit, and the run branch moved when it was accepted.
    pub committing: Duration,
    /// The worktree reset to the best state.
    pub worktree: Duration,
}

/// Commits the judged attempt with `message` (see [`commit_message`]); the
/// run branch moves to it when the verdict accepts it, otherwise the
/// worktree goes back to the best state — or, when the attempt `stay`s
/// (a task's step kept as the task's open state), stays on it.
pub fn settle(
    ws: &mut RunWorkspace,
    change: &Change,
    attempt: u32,
    verdict: Verdict,
    message: &str,
    stay: bool,
) -> Result<Settled, GitError> {
    let started = Instant::now();
    let commit = ws.commit_attempt(attempt, &change.writes, message)?;
    let best = if verdict.is_accepted() {
        ws.advance_best(&commit)?;
        commit.clone()
    } else if stay {
        commit.clone()
    } else {
        ws.best().clone()
    };
    let committing = started.elapsed();
    ws.reset_to(&best)?;
    Ok(Settled {
        commit,
        committing,
        worktree: started.elapsed() - committing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::LintReport;
    use crate::pipeline::TestState;

    fn snap(passed: usize, total: usize, pylint: f64) -> Snapshot {
        Snapshot {
            tests: Some(TestState {
                passed: (0..passed).map(|i| format!("t{i}")).collect(),
                failing: vec![],
                total,
                timed_out: false,
                ..TestState::default()
            }),
            checks: None,
            lint_score: Some(pylint),
            lint: LintReport::default(),
        }
    }

    #[test]
    fn the_message_carries_every_trailer() {
        let (baseline, result) = (snap(3, 6, 4.2), snap(5, 6, 7.854));
        let message = commit_message(&AttemptRecord {
            run_id: "20261122-101500-7f3a",
            iteration: 2,
            attempt: 4,
            model: "gemini-2.5-flash",
            summary: "fix average() on empty input",
            file: "ledger/report.py",
            verdict: Verdict::Improved,
            baseline: &baseline,
            result: &result,
            changed_lines: 12,
        });
        assert!(message.starts_with("swarm: fix average() on empty input (ledger/report.py)\n\n"));
        for trailer in [
            "Swarm-Run: 20261122-101500-7f3a\n",
            "Swarm-Iteration: 2\n",
            "Swarm-Attempt: 4\n",
            "Swarm-Model: gemini-2.5-flash\n",
            "Swarm-Verdict: improved\n",
            "Swarm-Tests: 5/6 passed (baseline 3/6)\n",
            "Swarm-Pylint: 4.20 -> 7.85\n",
            "Swarm-Changed-Lines: 12\n",
        ] {
            assert!(
                message.contains(trailer),
                "{trailer:?} missing in\n{message}"
            );
        }
        // Trailers form the last paragraph, as git interpret-trailers expects.
        let last = message.trim_end().rsplit("\n\n").next().unwrap();
        assert!(last.lines().all(|l| l.starts_with("Swarm-")), "{last}");
    }
}
