//! A task's change judged and committed: written into the worktree,
//! measured on the full suite and pylint, held to `Bar::task_verdict` and,
//! for a behaviour-preserving task, to the public-name check; committed on
//! its attempt branch with the `Swarm-Task` trailer, and made the best
//! state when accepted. An intended behaviour change that breaks tests
//! without `--allow-test-edits` stops the run here, naming the tests and
//! the flag.

use std::collections::BTreeMap;
use std::time::Instant;

use super::{note_reached, Tried};
use crate::error::SwarmError;
use crate::git::RunWorkspace;
use crate::lang;
use crate::log::{Agent, Event};
use crate::orchestrator::record::Recorder;
use crate::orchestrator::timing::AttemptTimes;
use crate::orchestrator::{RunContext, RunState, StopReason};
use crate::pipeline::{Change, Proposal, RepoPath, Snapshot, Task, TaskKind, TaskStatus, Verdict};
use crate::stage::executor::{self, AttemptRecord};
use crate::stage::judge;
use crate::stage::judge::api::{self, ApiCheck};
use crate::stage::judge::behaviour::ChangedModule;

/// What the Judge made of a task's change.
struct Judgement {
    /// The state measured with the change.
    result: Snapshot,
    verdict: Verdict,
    /// Why it is not accepted, for the next prompt.
    why: String,
    /// The public-name check, when it ran.
    api: Option<ApiCheck>,
    /// The Python files of the target with the change.
    files: Vec<String>,
    times: AttemptTimes,
}

/// Applies, measures and judges the change, commits it with the task's
/// trailer, and moves the best state when it is accepted.
pub(super) fn judge_and_commit(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    task: &Task,
    proposal: &Proposal,
    change: &Change,
) -> Result<Tried, SwarmError> {
    let k = state.progress.commits.len() as u32 + 1;
    let mut judged = judge_change(cx, ws, rec, state, task, change, k)?;
    let conflict = conflict_with_tests(cx, task, &state.progress.best, &judged.result);
    let verdict = judged.verdict;
    let message = commit_message(state, task, proposal, change, k, verdict, &judged.result);
    let settled = executor::settle(ws, change, k, verdict, &message)?;
    judged.times.commit = settled.committing;
    judged.times.worktree = settled.worktree;
    let file = proposal.file.as_str();
    let commit = &settled.commit.0;
    rec.commit(
        file,
        k,
        commit,
        &message,
        &change.diff,
        verdict,
        judged.times,
    )?;
    let note = judged
        .api
        .as_ref()
        .map(|c| format!("; {}", c.describe()))
        .unwrap_or_default();
    cx.events.emit(Event::Judged {
        attempt: k,
        file: file.to_string(),
        verdict,
        tests: format!("{}{note}", judged.result.describe()),
        lint_score: judged.result.lint_score,
        linter: crate::lang::linters_of(&state.facts.files, " and "),
        commit: settled.commit.short().to_string(),
    });
    state.progress.commits.push(commit.clone());
    if let Some(line) = conflict {
        cx.events.emit(Event::Notice {
            message: line.clone(),
        });
        let status = TaskStatus::Skipped { reason: line };
        super::settle(
            cx,
            rec,
            state,
            task.number,
            status,
            StopReason::TestConflict,
        )?;
        return Ok(Tried::Stop(StopReason::TestConflict));
    }
    if !verdict.is_accepted() {
        let errors = crate::pipeline::bar::risen_errors(&state.progress.best, &judged.result);
        let paths: Vec<String> = errors.iter().map(|m| m.path.clone()).collect();
        note_reached(state, task, paths);
        return Ok(Tried::Failed(format!(
            "the Judge found it {verdict}: {}",
            judged.why
        )));
    }
    note_reached(state, task, change.files.iter().map(|f| f.to_string()));
    adopt(state, task, change, judged.result, judged.files, commit);
    Ok(Tried::Accepted)
}

/// Writes the change into the worktree, measures it (the full suite and
/// pylint) and, for a behaviour-preserving task the tests and lint accept,
/// checks the public names.
fn judge_change(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &RunState,
    task: &Task,
    change: &Change,
    k: u32,
) -> Result<Judgement, SwarmError> {
    let stage = format!("judging attempt {k} (task {})", task.number);
    let started = Instant::now();
    executor::write_to_worktree(ws, change)?;
    let apply = started.elapsed();
    let files = files_after(state, change);
    let started = Instant::now();
    let known = executor::worktree_content(ws, &state.facts.target)?;
    let measured = tokio::task::block_in_place(|| {
        judge::measure(
            cx.tools_knowing(&stage, &known),
            cx.root,
            &files,
            cx.config.limits,
            cx.cancel,
            state.facts.baseline.tests.as_ref(),
        )
    })?;
    rec.measurement(Agent::Judge, &measured, Some(k))?;
    let best = &state.progress.best;
    let mut verdict = state.facts.bar.task_verdict(best, &measured.snapshot);
    let mut why = why_regressed(best, &measured.snapshot);
    let api = if verdict.is_accepted() && task.kind == TaskKind::Preserving {
        Some(public_names(cx, ws, state, task, change, &files, &stage)?)
    } else {
        None
    };
    if let Some(check) = &api {
        rec.api_check(check, k)?;
        verdict = state.facts.bar.after_behaviour(verdict, check.outcome);
        if verdict == Verdict::Regressed {
            why = check.describe();
        }
    }
    let times = AttemptTimes {
        review: std::time::Duration::ZERO,
        apply,
        judge: started.elapsed(),
        commit: std::time::Duration::ZERO,
        worktree: std::time::Duration::ZERO,
    };
    Ok(Judgement {
        result: measured.snapshot,
        verdict,
        why,
        api,
        files,
        times,
    })
}

/// The Python files of the target once `change` is applied.
fn files_after(state: &RunState, change: &Change) -> Vec<String> {
    let deleted: Vec<&str> = change
        .writes
        .iter()
        .zip(&change.files)
        .filter(|(w, _)| w.content.is_none())
        .map(|(_, f)| f.as_str())
        .collect();
    let mut files: Vec<String> = state
        .facts
        .files
        .iter()
        .filter(|f| !deleted.contains(&f.as_str()))
        .cloned()
        .collect();
    for f in &change.files {
        if lang::is_source(f) && !deleted.contains(&f.as_str()) && !files.iter().any(|g| f == g) {
            files.push(f.to_string());
        }
    }
    files
}

/// The files of the error-class messages `new` gained.
fn errors_files(best: &Snapshot, new: &Snapshot) -> Vec<String> {
    crate::pipeline::bar::risen_errors(best, new)
        .into_iter()
        .map(|m| m.path.clone())
        .collect()
}

/// What the Judge found lost, in one line for the next prompt.
fn why_regressed(best: &Snapshot, new: &Snapshot) -> String {
    let broke: Vec<String> = crate::stage::prompt::broken_tests(best, new)
        .into_iter()
        .map(|t| t.id)
        .collect();
    let errors: Vec<String> = crate::pipeline::bar::risen_errors(best, new)
        .into_iter()
        .take(6)
        .map(|m| format!("{}:{}: {} ({})", m.path, m.line, m.message, m.symbol))
        .collect();
    let mut parts = Vec::new();
    if !broke.is_empty() {
        parts.push(format!("tests that passed now fail: {}", broke.join(", ")));
    }
    if !errors.is_empty() {
        parts.push(format!(
            "new {} errors: {}",
            crate::lang::linters_of(&errors_files(best, new), " and "),
            errors.join("; ")
        ));
    }
    if parts.is_empty() {
        parts.push(new.describe());
    }
    parts.join("; ")
}

/// The line that stops the run when an intended behaviour change breaks
/// tests that expect the old behaviour, and test edits are not allowed.
fn conflict_with_tests(
    cx: &RunContext<'_>,
    task: &Task,
    best: &Snapshot,
    new: &Snapshot,
) -> Option<String> {
    if task.kind != TaskKind::Change || cx.config.allow_test_edits {
        return None;
    }
    let broke: Vec<String> = crate::stage::prompt::broken_tests(best, new)
        .into_iter()
        .map(|t| t.id)
        .collect();
    (!broke.is_empty()).then(|| {
        format!(
            "task {} ({}) changes behaviour that tests expect: {} fail(s) with it; the tests were \
             not changed — rerun with --allow-test-edits to make the test change part of the task",
            task.number,
            task.title,
            broke.join(", ")
        )
    })
}

/// The public-name check of the modules the change touched that existed
/// at the best state.
fn public_names(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    state: &RunState,
    task: &Task,
    change: &Change,
    files: &[String],
    stage: &str,
) -> Result<ApiCheck, SwarmError> {
    let mut modules = Vec::new();
    for file in change
        .files
        .iter()
        .filter(|f| crate::lang::beyond::checks(f))
    {
        let path = state.facts.target.repo_path(file);
        if let Some(bytes) = ws.file_at_best(path.as_str())? {
            modules.push(ChangedModule {
                file: file.to_string(),
                original: String::from_utf8_lossy(&bytes).into_owned(),
            });
        }
    }
    let renames: BTreeMap<String, String> = task
        .renames
        .iter()
        .map(|r| (r.from.clone(), r.to.clone()))
        .collect();
    let check = tokio::task::block_in_place(|| {
        api::check_api(
            cx.tools(stage),
            cx.root,
            &modules,
            files,
            &renames,
            cx.config.limits,
            cx.cancel,
        )
    })?;
    Ok(check)
}

/// The attempt's commit message: the Executor's, with the task's trailer.
fn commit_message(
    state: &RunState,
    task: &Task,
    proposal: &Proposal,
    change: &Change,
    k: u32,
    verdict: Verdict,
    result: &Snapshot,
) -> String {
    let total = state.work.tasks.as_ref().map_or(1, |b| b.plan.tasks.len());
    let summary = format!("task {}/{total}: {}", task.number, task.title);
    let record = AttemptRecord {
        run_id: &state.facts.run_id,
        iteration: state.progress.iterations,
        attempt: k,
        model: &state.facts.model_id,
        summary: crate::pipeline::clip(&summary, 90),
        file: &state.facts.target.repo_path(proposal.file.as_str()),
        verdict,
        baseline: &state.facts.baseline,
        result,
        changed_lines: change.changed_lines,
    };
    let mut message = executor::commit_message(&record);
    let title = task.title.replace('\n', " ");
    message.push_str(&format!("Swarm-Task: {}/{total} {title}\n", task.number));
    message
}

/// Makes an accepted change the best state, and notes it for the task.
fn adopt(
    state: &mut RunState,
    task: &Task,
    change: &Change,
    best: Snapshot,
    files: Vec<String>,
    commit: &str,
) {
    let progress = &mut state.progress;
    progress.best = best;
    progress.accepted += 1;
    progress
        .touched
        .extend(change.writes.iter().map(|w| RepoPath::new(w.path.as_str())));
    state.facts.files = files;
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
    }
}

/// The commits accepted for task `number`.
pub(super) fn commits_of(state: &RunState, number: usize) -> Vec<String> {
    state
        .work
        .tasks
        .as_ref()
        .and_then(|b| b.commits.get(&number).cloned())
        .unwrap_or_default()
}

/// The test files task `number` changed (with `--allow-test-edits`).
pub(super) fn tests_changed_by(state: &RunState, number: usize) -> Vec<String> {
    state
        .work
        .tasks
        .as_ref()
        .and_then(|b| b.tests_changed.get(&number).cloned())
        .unwrap_or_default()
}
