//! The final verdict before delivery: the best state is measured once more
//! with the test files and test configuration of the base commit.
//!
//! Whatever the Reviewer's rules let through (with `--allow-test-edits`, or
//! by a path no rule foresaw), the state the user receives must pass the
//! tests the user had: every harness file the run changed (see
//! [`crate::lang::Language::is_test_harness`]), and the linter's
//! configuration, is put back to its base version in the worktree, and the
//! tests and the linter run. With `--allow-test-edits`, test files keep their changes
//! (that is what the flag is for) but test configuration is still restored.
//!
//! The check is the worktree's last use: it is then retired, not put back
//! to the best state (a spare is brought to the next run's base commit when
//! it is taken, see `git::spare`).

use super::record::Recorder;
use super::{FinalCheck, RunContext, RunState};
use crate::error::SwarmError;
use crate::git::{FileWrite, Repo, RunWorkspace};
use crate::lang;
use crate::log::Agent;
use crate::stage::judge;

/// Re-measures the best state with the base commit's harness files. Leaves
/// the worktree as the measurement left it: only retiring it may follow.
pub(crate) fn final_check(
    cx: &RunContext<'_>,
    repo: &Repo,
    ws: &RunWorkspace,
    state: &RunState,
    rec: &mut Recorder<'_>,
) -> Result<FinalCheck, SwarmError> {
    let overlay = base_harness(repo, ws, state, cx.config.allow_test_edits)?;
    ws.write_files(&overlay)?;
    let known = crate::stage::executor::worktree_content(ws, &state.facts.target)?;
    let measured = tokio::task::block_in_place(|| {
        judge::measure(
            cx.tools_knowing("final check with the base commit's tests", &known),
            cx.root,
            &state.facts.files,
            cx.config.limits,
            cx.cancel,
            state.facts.baseline.tests.as_ref(),
        )
    });
    ws.forget_disk();
    let measured = measured?;
    rec.measurement(Agent::Judge, &measured, None)?;
    let mut snapshot = measured.snapshot.clone();
    let check = FinalCheck {
        passed: match &state.work.tasks {
            // A run of tasks keeps what the baseline had (see
            // `Bar::task_verdict`), but for the tests its tasks rewrote,
            // whose removed tests are not counted.
            Some(book) => {
                let rewritten = book.rewritten_tests();
                let kept = state
                    .facts
                    .bar
                    .task_verdict_rewriting(&state.facts.baseline, &snapshot, &rewritten)
                    .is_accepted();
                if let Some(tests) = snapshot.tests.as_mut() {
                    tests.retire(&rewritten);
                }
                kept
            }
            None => state.facts.bar.is_green(&snapshot),
        },
        tests: snapshot.describe(),
        restored: overlay.into_iter().map(|w| w.path).collect(),
    };
    rec.final_check(&check)?;
    Ok(check)
}

/// The base versions of the harness files that differ between the base
/// commit and the best state.
fn base_harness(
    repo: &Repo,
    ws: &RunWorkspace,
    state: &RunState,
    allow_test_edits: bool,
) -> Result<Vec<FileWrite>, SwarmError> {
    let mut overlay = Vec::new();
    for path in ws.files_changed_since_base()? {
        // Paths outside the target cannot change; judge the rest by their
        // place in the target, as the Reviewer does.
        let Some(rel) = state.facts.target.relative(&path) else {
            continue;
        };
        // The Tester's own files are part of the result, not the harness.
        if state.progress.generated_files.contains(path.as_str()) {
            continue;
        }
        let test = lang::is_test(rel) || state.facts.tests.contains(rel);
        let keep_edit = allow_test_edits && test && !lang::configures_runner(rel);
        if (test || lang::is_test_harness(rel) || lang::is_lint_configuration(rel)) && !keep_edit {
            let content = repo.file_at(ws.base(), &path)?;
            overlay.push(FileWrite { path, content });
        }
    }
    Ok(overlay)
}
