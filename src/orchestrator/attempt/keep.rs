//! What a judged attempt leaves behind once committed: an accepted change
//! made the run's best state ([`adopt`]) — what it touched and, for a
//! repair, what verified each file it changed; for a task, its commit and
//! the test files it changed — and, for a task, the files its attempt
//! reached beyond its own, so the next request shows them
//! ([`note_reached`]); for the part of an oversized proposal, the hunks
//! left out, kept for the summary. The verdict is the Judge's; nothing is
//! judged here.

use super::judge::Judgement;
use super::{Attempted, Purpose, Tried};
use crate::lang;
use crate::orchestrator::summary::LeftOutHunk;
use crate::orchestrator::{RunContext, RunState};
use crate::pipeline::{Change, RepoPath, Task};
use crate::stage::judge::behaviour::{BehaviourRun, Verification};
use crate::stage::reviewer::Subset;

/// Keeps an accepted attempt (committed as `commit`) as the best state;
/// of one that is not, a task notes the files whose error-class messages
/// rose. `outcome` is what the Fixer is told of a refused one.
pub(super) fn keep_or_reset(
    cx: &RunContext<'_>,
    state: &mut RunState,
    purpose: Purpose<'_>,
    tried: &Tried<'_>,
    judged: Judgement,
    commit: &str,
    outcome: String,
) -> Attempted {
    let accepted = judged.verdict.is_accepted();
    if let Purpose::Task(task) = purpose {
        let reached = if accepted {
            tried.change.files.iter().map(|f| f.to_string()).collect()
        } else {
            judged.risen.clone()
        };
        note_reached(state, task, reached);
    }
    if !accepted {
        return Attempted::NotMoved(outcome);
    }
    if let Some(subset) = tried.subset {
        keep_left_out(state, tried.file, subset);
    }
    adopt(cx, state, purpose, tried.change, judged, commit);
    Attempted::Moved
}

/// Keeps the hunks left out of the accepted attempt (the last committed)
/// for the run's summary.
fn keep_left_out(state: &mut RunState, file: &str, subset: &Subset) {
    let attempt = state.progress.commits.len() as u32;
    for left in &subset.left_out {
        state.progress.left_out.push(LeftOutHunk {
            file: file.to_string(),
            attempt,
            hunk: left.hunk.to_string(),
            why: left.why.to_string(),
        });
    }
}

/// Makes an accepted change the run's best state: what it touched and the
/// files it added; for a repair what verified it, for a task its commit
/// and the tests it changed.
fn adopt(
    cx: &RunContext<'_>,
    state: &mut RunState,
    purpose: Purpose<'_>,
    change: &Change,
    judged: Judgement,
    commit: &str,
) {
    let test_notes = match purpose {
        Purpose::Task(_) => crate::pipeline::task::test_changes(
            &state.progress.best,
            &judged.result,
            &super::judge::rewritten_tests(change),
        ),
        Purpose::Repair => Vec::new(),
    };
    let progress = &mut state.progress;
    progress.best = judged.result;
    progress.accepted += 1;
    progress
        .touched
        .extend(change.writes.iter().map(|w| RepoPath::new(w.path.as_str())));
    match purpose {
        Purpose::Repair => {
            state.work.declined.clear();
            state.work.pushed_back.clear();
            verified(cx, state, change, judged.behaviour.as_ref(), &judged.files);
        }
        Purpose::Task(task) => task_adopted(state, task, change, commit, test_notes),
    }
    state.facts.files = judged.files;
}

/// Records what verified each file a repair changed: the behaviour check,
/// the tests (the generated ones named), or a suite's own tools.
fn verified(
    cx: &RunContext<'_>,
    state: &mut RunState,
    change: &Change,
    behaviour: Option<&BehaviourRun>,
    files: &[String],
) {
    let mut found: Vec<(String, Verification)> = Vec::new();
    if let Some(run) = behaviour {
        for file in change.files.iter().filter(|f| lang::beyond::checks(f)) {
            found.push((file.to_string(), run.verification(file)));
        }
    }
    for file in &change.files {
        if let Some(language) = lang::beyond::not_available(file) {
            let language = language.name().to_string();
            found.push((file.to_string(), Verification::NotAvailable { language }));
        }
    }
    let changed: Vec<String> = change.files.iter().map(|f| f.to_string()).collect();
    for suite in cx.suites {
        for (file, tools) in suite.verified_by(cx.root, &changed, files) {
            found.push((file, Verification::LanguageTools { tools }));
        }
    }
    for (file, how) in found {
        let how = match state.progress.generated.get(&file) {
            Some(generated) if how == Verification::ExistingTests && generated.kept() > 0 => {
                Verification::GeneratedTests {
                    kept: generated.kept(),
                    discarded: generated.discarded(),
                    reasons: generated.reasons(),
                }
            }
            _ => how,
        };
        state.progress.verified.insert(file, how);
    }
}

/// Notes an accepted change's commit for its task, and the test files it
/// changed.
fn task_adopted(
    state: &mut RunState,
    task: &Task,
    change: &Change,
    commit: &str,
    test_notes: Vec<String>,
) {
    let tests: Vec<String> = change
        .files
        .iter()
        .filter(|f| lang::is_test(f))
        .map(|f| f.to_string())
        .collect();
    if let Some(book) = state.work.tasks.as_mut() {
        book.commits
            .entry(task.number)
            .or_default()
            .push(commit.to_string());
        let changed = book.tests_changed.entry(task.number).or_default();
        for t in tests {
            if !changed.contains(&t) {
                changed.push(t);
            }
        }
        // The latest note of a file stands for it.
        let notes = book.test_changes.entry(task.number).or_default();
        for note in test_notes {
            let file = note.split(" (").next().unwrap_or(&note).to_string();
            notes.retain(|n| n.split(" (").next() != Some(file.as_str()));
            notes.push(note);
        }
    }
}

/// Notes files an attempt at `task` reached beyond the task's own, so its
/// next request shows them.
fn note_reached(state: &mut RunState, task: &Task, paths: impl IntoIterator<Item = String>) {
    let own = task.files();
    let Some(book) = state.work.tasks.as_mut() else {
        return;
    };
    let reached = book.reached.entry(task.number).or_default();
    for path in paths {
        if !own.contains(&path.as_str()) && !reached.contains(&path) {
            reached.push(path);
        }
    }
}
