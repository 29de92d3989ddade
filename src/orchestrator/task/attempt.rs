//! One task, attempt after attempt: the request (instruction, checklist,
//! the current text of every file the task touches and of those its
//! attempts reached) and the reply; a change goes through the one attempt
//! pipeline with the task as its purpose ([`crate::orchestrator::attempt`]:
//! the Reviewer with the task's limits, the task's bar, the public-name
//! check, the `Swarm-Task` trailer). The task ends when it is done (see
//! [`task_done`]), after [`TASK_TRIES`] failed attempts in a row, or when
//! the run must stop.

use super::{task_of, TaskEnd, Tried, TASK_TRIES};
use crate::error::SwarmError;
use crate::git::RunWorkspace;
use crate::log::{Event, Step};
use crate::orchestrator::attempt::{attempt, record_calls, Attempted, Purpose};
use crate::orchestrator::record::Recorder;
use crate::orchestrator::{cancellable, RunContext, RunState, StopReason};
use crate::pipeline::task::task_done;
use crate::pipeline::{Task, TaskReply, TaskStatus};
use crate::stage::fixer::task::{propose_task, TaskAnswer};
use crate::stage::prompt::task::{task_request, TaskInput};
use crate::stage::read_source_text;
use swarm_patch::ReplyContext;

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
    let end = work_on(cx, ws, rec, state, &task).await;
    // A change the task leaves open (not accepted as a whole) is thrown
    // away with it.
    crate::orchestrator::attempt::discard(ws, state)?;
    end
}

/// Asks for `task` reply after reply until it is done, fails or the run
/// must stop.
async fn work_on(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    task: &Task,
) -> Result<TaskEnd, SwarmError> {
    let number = task.number;
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
        match attempt_task(cx, ws, rec, state, task).await? {
            Tried::Done => return Ok(TaskEnd::Done),
            Tried::Stop(reason) => return Ok(TaskEnd::Stop(reason)),
            Tried::Accepted => {
                failures = 0;
                remember(state, number, "accepted: the change is committed; say whether anything more is needed for this task".into());
            }
            Tried::Continued(why) => {
                remember(state, number, format!(
                    "your change so far is kept as this task's own state (the files above show it), \
                     but the task as a whole is not accepted yet: {why}. Continue from it; answer \
                     TASK DONE only when the whole task is finished"
                ));
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
        .filter(|f| crate::lang::is_source(f))
        .filter_map(|f| crate::tools::imports::module_name(cx.root, f).map(|(_, m)| m))
        .collect();
    if modules.is_empty() {
        return;
    }
    let configs = crate::lang::project_files();
    let texts: Vec<(String, String)> = state
        .facts
        .files
        .iter()
        .map(String::as_str)
        .chain(configs.iter().copied())
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
    let requested: Vec<String> = files.iter().map(|(p, _)| p.clone()).collect();
    let ctx = ReplyContext {
        target_prefix: state.facts.target.as_str().to_string(),
        language: crate::lang::code_language(&requested),
        requested,
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
    let proposal = match &answer {
        Ok(TaskAnswer::Proposal(p)) => Some(p),
        _ => None,
    };
    record_calls(cx, rec, state, &calls, (Some(&name), proposal))?;
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
            if let Some(why) = thrown_away(ws, state)? {
                return Ok(Tried::Failed(why));
            }
            let done = task_done(TaskReply::SaidDone, has_accepted(state, task.number));
            return Ok(if done {
                checked_done(cx, state, task)
            } else {
                Tried::Failed(said)
            });
        }
        Ok(TaskAnswer::Proposal(p)) => p,
    };
    let attempted = attempt(cx, ws, rec, state, Purpose::Task(task), &proposal)?;
    tried(cx, ws, rec, state, task, attempted)
}

/// What an attempt at `task` means for the task: a change left unchanged
/// after an accepted one ends it (see [`task_done`]); a conflict with the
/// tests skips it and stops the run.
fn tried(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    task: &Task,
    attempted: Attempted,
) -> Result<Tried, SwarmError> {
    Ok(match attempted {
        Attempted::Moved => Tried::Accepted,
        Attempted::NotMoved(why) => Tried::Failed(why),
        Attempted::Continued(why) => Tried::Continued(why),
        Attempted::Unchanged(why) => {
            if let Some(why) = thrown_away(ws, state)? {
                return Ok(Tried::Failed(why));
            }
            if task_done(TaskReply::LeftUnchanged, has_accepted(state, task.number)) {
                checked_done(cx, state, task)
            } else {
                Tried::Failed(why)
            }
        }
        Attempted::TestConflict(line) => {
            cx.events.emit(Event::Notice {
                message: line.clone(),
            });
            let status = TaskStatus::Skipped { reason: line };
            let stop = StopReason::TestConflict;
            super::settle(cx, rec, state, task.number, status, stop)?;
            Tried::Stop(stop)
        }
    })
}

/// The task's open state judged as a whole once the model says the task
/// is done: not accepted, so thrown away (the worktree back at the best
/// state); why, for the next prompt. `None` without an open state.
fn thrown_away(ws: &RunWorkspace, state: &mut RunState) -> Result<Option<String>, SwarmError> {
    let outcome = crate::orchestrator::attempt::discard(ws, state)?;
    Ok(outcome.map(|why| {
        format!(
            "the model said the task is done, but its change as a whole is not accepted \
             ({why}); it is thrown away and the task starts again from the last accepted state"
        )
    }))
}

/// Done when what the task names holds (see [`super::done`]); else a
/// failed attempt saying what does not hold.
fn checked_done(cx: &RunContext<'_>, state: &RunState, task: &Task) -> Tried {
    let unmet = super::done::unmet(cx, state, task);
    if unmet.is_empty() {
        return Tried::Done;
    }
    let why = format!(
        "the model said the task is done, but it is not: {}",
        unmet.join("; ")
    );
    cx.events.emit(Event::Notice {
        message: format!("task {}: {why}", task.number),
    });
    Tried::Failed(why)
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

/// Whether task `number` has an accepted change.
fn has_accepted(state: &RunState, number: usize) -> bool {
    state
        .work
        .tasks
        .as_ref()
        .is_some_and(|b| b.commits.get(&number).is_some_and(|c| !c.is_empty()))
}
