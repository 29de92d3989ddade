//! One task, attempt after attempt: the request (instruction, checklist,
//! the current text of every file the task touches), the reply, the
//! Reviewer with the task's limits, the change applied all-or-nothing, the
//! Judge (the full suite, error-class lint, and for a behaviour-preserving
//! task the public-name check) and the commit with its `Swarm-Task`
//! trailer. The task ends when the model answers that it needs no further
//! change, after [`TASK_TRIES`] failed attempts in a row, or when the run
//! must stop.

use std::collections::BTreeMap;
use std::time::Instant;

use super::{task_of, TaskEnd, TASK_TRIES};
use crate::error::SwarmError;
use crate::git::RunWorkspace;
use crate::log::{Action, Agent, Event, Step};
use crate::orchestrator::record::{Recorder, ReviewNote};
use crate::orchestrator::timing::AttemptTimes;
use crate::orchestrator::{cancellable, RunContext, RunState, StopReason};
use crate::pipeline::{Change, Proposal, RepoPath, Snapshot, Task, TaskKind, TaskStatus, Verdict};
use crate::stage::executor::{self, AttemptRecord};
use crate::stage::fixer::task::{propose_task, TaskAnswer};
use crate::stage::judge::api::{self, ApiCheck};
use crate::stage::judge::behaviour::ChangedModule;
use crate::stage::prompt::task::{task_request, TaskInput};
use crate::stage::reviewer::{self, Review, ReviewContext, TaskReview};
use crate::stage::{is_test_path, judge, read_source_text, ModelCall};
use crate::tools::imports::is_importable_module;
use swarm_patch::ReplyContext;

/// What one attempt at a task came to.
enum Tried {
    /// The run branch moved to it.
    Accepted,
    /// Refused, unusable or judged worse: why, for the next prompt.
    Failed(String),
    /// The model answered that the task needs no further change.
    Done,
    /// The run stops.
    Stop(StopReason),
}

/// Runs task `number` until it is done, fails or the run must stop.
pub(super) async fn run_task(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    number: usize,
) -> Result<TaskEnd, SwarmError> {
    let Some((task, total)) = task_of(state, number) else {
        return Ok(TaskEnd::Failed("not in the plan".into()));
    };
    cx.events.emit(Event::Task {
        number,
        total,
        title: task.title.clone(),
        status: "started".into(),
        detail: task.files().join(", "),
    });
    learn_taken_names(cx, state);
    find_mentions(cx, state, &task);
    let mut failures = 0;
    loop {
        if state.progress.iterations >= cx.config.max_iterations {
            return Ok(TaskEnd::Stop(StopReason::IterationLimit));
        }
        if crate::orchestrator::over_budget(cx.config, &state.spend) {
            return Ok(TaskEnd::Stop(StopReason::Budget));
        }
        state.progress.iterations += 1;
        cx.events.emit(Event::Iteration {
            number: state.progress.iterations,
            files: task.files().iter().map(ToString::to_string).collect(),
        });
        match attempt_task(cx, ws, rec, state, &task).await? {
            Tried::Done => return Ok(TaskEnd::Done),
            Tried::Stop(reason) => return Ok(TaskEnd::Stop(reason)),
            Tried::Accepted => {
                failures = 0;
                remember(state, number, "accepted: the change is committed; say whether anything more is needed for this task".into());
            }
            Tried::Failed(why) => {
                failures += 1;
                remember(state, number, why.clone());
                if failures >= TASK_TRIES {
                    return Ok(TaskEnd::Failed(format!(
                        "{TASK_TRIES} attempts in a row failed; the last: {why}"
                    )));
                }
            }
        }
    }
}

/// The names a new module may not take, learnt once per run (none when
/// they cannot be had: the rule then refuses nothing, and the import
/// check and pylint still judge the change).
fn learn_taken_names(cx: &RunContext<'_>, state: &mut RunState) {
    let Some(book) = state.work.tasks.as_mut() else {
        return;
    };
    if !book.taken.is_empty() {
        return;
    }
    book.taken = tokio::task::block_in_place(|| {
        crate::tools::imports::taken_names(cx.env, cx.sandbox, cx.root, cx.cancel)
    })
    .unwrap_or_default();
}

/// Where the modules `task` changes or deletes are named by their dotted
/// path in strings and configuration outside the task's files.
fn find_mentions(cx: &RunContext<'_>, state: &mut RunState, task: &Task) {
    let own = task.files();
    let modules: Vec<String> = task
        .change
        .iter()
        .chain(&task.delete)
        .filter(|f| f.ends_with(".py"))
        .filter_map(|f| crate::tools::imports::module_name(cx.root, f).map(|(_, m)| m))
        .collect();
    if modules.is_empty() {
        return;
    }
    let configs = [
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "tox.ini",
        "pytest.ini",
    ];
    let texts: Vec<(String, String)> = state
        .facts
        .files
        .iter()
        .map(String::as_str)
        .chain(configs)
        .filter(|f| !own.contains(f))
        .filter_map(|f| read_source_text(cx.root, f).map(|t| (f.to_string(), t)))
        .collect();
    let found = crate::stage::mentions::old_path_mentions(&texts, &modules);
    if let Some(book) = state.work.tasks.as_mut() {
        book.mentions.insert(task.number, found);
    }
}

fn remember(state: &mut RunState, number: usize, outcome: String) {
    if let Some(book) = state.work.tasks.as_mut() {
        book.last.insert(number, outcome);
    }
}

/// One request for the task and what came of it.
async fn attempt_task(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    task: &Task,
) -> Result<Tried, SwarmError> {
    let files: Vec<(String, Option<String>)> = shown_files(state, task)
        .into_iter()
        .map(|f| {
            let text = read_source_text(cx.root, &f);
            (f, text)
        })
        .collect();
    let request = request_for(cx, state, task, &files);
    for (path, text) in &files {
        if let Some(text) = text {
            let round = state.progress.iterations;
            state.progress.shown.remember(path, round, text);
        }
    }
    let ctx = ReplyContext {
        target_prefix: state.facts.target.as_str().to_string(),
        requested: files.iter().map(|(p, _)| p.clone()).collect(),
    };
    let name = files.first().map(|(p, _)| p.clone()).unwrap_or_default();
    let asking = Step::start(
        cx.events,
        format!(
            "asking {} for task {}: {}",
            cx.model.model(),
            task.number,
            task.title
        ),
    );
    let (calls, answer) = cancellable(
        cx.cancel,
        propose_task(cx.model.as_ref(), request, &name, &ctx, cx.budget.fix),
    )
    .await?;
    drop(asking);
    record_calls(cx, rec, state, &calls, &name)?;
    let proposal = match answer {
        Err(e) => {
            cx.events.emit(Event::Notice {
                message: format!("model call failed: {}", SwarmError::from(e)),
            });
            return Ok(Tried::Stop(StopReason::ModelFailure));
        }
        Ok(TaskAnswer::Done(reply)) => {
            let said = reply.lines().next().unwrap_or_default().to_string();
            remember(state, task.number, format!("the model said: {said}"));
            return Ok(Tried::Done);
        }
        Ok(TaskAnswer::Proposal(p)) => p,
    };
    if let Err(reason) = &proposal.edits {
        cx.events.emit(Event::NoProposal {
            file: name,
            reason: reason.to_string(),
        });
        return Ok(Tried::Failed(format!("no usable change: {reason}")));
    }
    let change = match review(cx, ws, rec, state, &proposal)? {
        Ok(change) => change,
        Err(why) => return Ok(Tried::Failed(why)),
    };
    judge_and_commit(cx, ws, rec, state, task, &proposal, &change)
}

/// The files a task's request shows: the task's own, then those its
/// attempts reached beyond them (changed by an accepted attempt, or where
/// an attempt left a new pylint error) that still exist.
fn shown_files(state: &RunState, task: &Task) -> Vec<String> {
    let mut files: Vec<String> = task.files().iter().map(ToString::to_string).collect();
    let extra = state
        .work
        .tasks
        .as_ref()
        .and_then(|b| b.reached.get(&task.number));
    for f in extra.into_iter().flatten() {
        if !files.contains(f) && state.facts.files.contains(f) {
            files.push(f.clone());
        }
    }
    files
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

/// The request for `task`, showing `files` as they are now.
fn request_for(
    cx: &RunContext<'_>,
    state: &RunState,
    task: &Task,
    files: &[(String, Option<String>)],
) -> crate::llm::ChatRequest {
    let book = state
        .work
        .tasks
        .as_ref()
        .expect("a task runs only with a plan");
    let checklist: Vec<(&Task, &TaskStatus)> = book
        .plan
        .tasks
        .iter()
        .map(|t| {
            (
                t,
                book.status.get(&t.number).unwrap_or(&TaskStatus::Pending),
            )
        })
        .collect();
    task_request(&TaskInput {
        instruction: &book.instruction,
        checklist: &checklist,
        task,
        files,
        last_outcome: book.last.get(&task.number).map(String::as_str),
        mentions: book
            .mentions
            .get(&task.number)
            .map(Vec::as_slice)
            .unwrap_or_default(),
        max_changed_lines: task_limit(cx),
        allow_test_edits: cx.config.allow_test_edits,
        allowance: cx.budget.fix,
    })
}

/// The changed lines a task's change may have (lines moved not counted):
/// the high-severity limit.
fn task_limit(cx: &RunContext<'_>) -> usize {
    cx.config.size_limits.high
}

fn record_calls(
    cx: &RunContext<'_>,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    calls: &[ModelCall],
    file: &str,
) -> Result<(), SwarmError> {
    for call in calls {
        rec.fixer_call(
            Action::Fix,
            call,
            Some(file),
            state.progress.iterations,
            None,
        )?;
        if let Ok(reply) = &call.reply {
            state.add_usage(&reply.usage, &cx.config.prices);
        }
    }
    Ok(())
}

/// The Reviewer's decision with the task's limits: the change, or why not.
fn review(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    proposal: &Proposal,
) -> Result<Result<Change, String>, SwarmError> {
    let taken = state
        .work
        .tasks
        .as_ref()
        .map(|b| b.taken.clone())
        .unwrap_or_default();
    let base = ws.best().0.clone();
    let limits = cx.config.size_limits;
    let ctx = ReviewContext {
        base: &base,
        root: cx.root,
        target: &state.facts.target,
        severities: &state.facts.severities,
        limits,
        allow_test_edits: cx.config.allow_test_edits,
        seen: &state.progress.seen,
        submodules: &state.facts.submodules,
        shown: &state.progress.shown,
        task: Some(TaskReview {
            max_changed_lines: limits.high,
            max_changed_bytes: limits.bytes_for_severity(swarm_analysis::Severity::High),
            taken_names: &taken,
        }),
    };
    let file = proposal.file.as_str();
    let iteration = state.progress.iterations;
    match reviewer::review(proposal, &ctx) {
        Review::Accepted(change) => {
            rec.review(file, iteration, Ok(&change), ReviewNote::default())?;
            state.progress.seen.insert(change.hash.clone());
            Ok(Ok(change))
        }
        Review::Rejected(reason) => {
            rec.review(file, iteration, Err(&reason), ReviewNote::default())?;
            cx.events.emit(Event::Rejected {
                file: file.to_string(),
                reason: reason.to_string(),
                rule: reason.rule(),
            });
            Ok(Err(format!("rejected by the Reviewer: {reason}")))
        }
    }
}

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
fn judge_and_commit(
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
        pylint: judged.result.pylint,
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
        if f.ends_with(".py") && !deleted.contains(&f.as_str()) && !files.iter().any(|g| f == g) {
            files.push(f.to_string());
        }
    }
    files
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
        parts.push(format!("new pylint errors: {}", errors.join("; ")));
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
    for file in change.files.iter().filter(|f| is_importable_module(f)) {
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
        .filter(|f| is_test_path(f))
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
