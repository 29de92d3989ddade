//! Refactoring on request (`--task`): the second way into the loop. The
//! instruction is planned as tasks ([`plan_tasks`]); then, in dependency
//! order, each task is asked for ([`attempt`]) and its change reviewed,
//! applied, judged and committed by the one attempt pipeline a repair goes
//! through (`super::attempt`, as `Purpose::Task`), until the task is done
//! (see `pipeline::task::task_done`) — green tests alone do not end a task. A task
//! that fails [`TASK_TRIES`] attempts in a row is skipped with the tasks
//! that depend on it; an intended behaviour change that breaks tests
//! without `--allow-test-edits` stops the run, naming the tests and the
//! flag. The model is given state (the checklist, the files' current text,
//! the last outcome), never a transcript.

mod attempt;
mod done;

use std::collections::BTreeMap;

use super::record::Recorder;
use super::{cancellable, over_budget, RunContext, RunState, StopReason};
use crate::error::SwarmError;
use crate::git::RunWorkspace;
use crate::log::{Action, Agent, Event, Step};
use crate::pipeline::{Instruction, Task, TaskPlan, TaskStatus};
use crate::stage::planner::tasks::{self as planner, PlanScope};
use crate::stage::prompt::task::{self as prompt, MapEntry, TaskPlanInput};
use crate::stage::read_source_text;

/// Failed attempts in a row after which a task is skipped.
pub(crate) const TASK_TRIES: u32 = 3;

/// The run's tasks and where each got.
#[derive(Default)]
pub(crate) struct TaskBook {
    pub instruction: String,
    pub plan: TaskPlan,
    pub status: BTreeMap<usize, TaskStatus>,
    /// What came of the last attempt at each task, for its next prompt.
    pub last: BTreeMap<usize, String>,
    /// The commits accepted for each task.
    pub commits: BTreeMap<usize, Vec<String>>,
    /// The test files each task changed (only with `--allow-test-edits`).
    pub tests_changed: BTreeMap<usize, Vec<String>>,
    /// What each task did to the tests of those files, one line per file
    /// (see [`crate::pipeline::task::test_changes`]).
    pub test_changes: BTreeMap<usize, Vec<String>>,
    /// Top-level module names a new module may not take.
    pub taken: std::collections::BTreeSet<String>,
    /// Per task, files its attempts reached beyond its own (changed by an
    /// accepted attempt, or given a new pylint error): its next request
    /// shows them too.
    pub reached: BTreeMap<usize, Vec<String>>,
    /// The open state of the task being worked on: its change so far, not
    /// yet accepted (see `super::attempt::open`).
    pub open: Option<super::attempt::OpenState>,
    /// Per task, where its modules' old dotted paths are still named in
    /// strings and configuration (see [`crate::stage::mentions`]).
    pub mentions: BTreeMap<usize, Vec<String>>,
}

impl TaskBook {
    fn new(instruction: &Instruction, plan: TaskPlan) -> Self {
        let status = plan
            .tasks
            .iter()
            .map(|t| (t.number, TaskStatus::Pending))
            .collect();
        Self {
            instruction: instruction.text().to_string(),
            plan,
            status,
            ..Self::default()
        }
    }

    /// The test files the tasks rewrote (with `--allow-test-edits`), every
    /// task's together.
    pub fn rewritten_tests(&self) -> Vec<String> {
        self.tests_changed.values().flatten().cloned().collect()
    }

    /// Whether some task changed anything (has an accepted commit).
    pub fn changed_anything(&self) -> bool {
        self.commits.values().any(|c| !c.is_empty())
    }

    /// Every task is done.
    pub fn all_done(&self) -> bool {
        self.status
            .values()
            .all(|s| matches!(s, TaskStatus::Done { .. }))
    }

    fn status_of(&self, number: usize) -> &TaskStatus {
        self.status.get(&number).unwrap_or(&TaskStatus::NotReached)
    }

    /// What the summary lists: every task with its status.
    pub fn report(&self) -> super::summary::TasksReport {
        super::summary::TasksReport {
            instruction: self.instruction.clone(),
            fallback: self.plan.fallback.clone(),
            notes: self.plan.notes.clone(),
            tasks: self
                .plan
                .tasks
                .iter()
                .map(|t| super::summary::TaskReport {
                    task: t.clone(),
                    status: self.status_of(t.number).clone(),
                    mentions: self.mentions.get(&t.number).cloned().unwrap_or_default(),
                })
                .collect(),
        }
    }
}

impl RunState {
    /// Whether the best state may be delivered: green (see
    /// [`crate::pipeline::Bar`]); for a run of tasks, every task done, some
    /// task changed something, and nothing the baseline had lost.
    pub(crate) fn deliverable(&self) -> bool {
        match &self.work.tasks {
            Some(book) => {
                let rewritten = book.rewritten_tests();
                book.all_done()
                    && book.changed_anything()
                    && self
                        .facts
                        .bar
                        .task_verdict_rewriting(
                            &self.facts.baseline,
                            &self.progress.best,
                            &rewritten,
                        )
                        .is_accepted()
            }
            None => self.facts.bar.is_green(&self.progress.best),
        }
    }
}

/// Plans `instruction` and runs its tasks; why the run stopped.
pub(crate) async fn drive(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    instruction: &Instruction,
) -> Result<StopReason, SwarmError> {
    if let Some(stop) = plan_tasks(cx, rec, state, instruction).await? {
        return Ok(stop);
    }
    rec.enter(super::timing::Stage::Rounds);
    run_tasks(cx, ws, rec, state).await
}

/// Asks for the plan of `instruction` and keeps it in the state. `Some`
/// stop reason when the model could not be reached.
async fn plan_tasks(
    cx: &RunContext<'_>,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    instruction: &Instruction,
) -> Result<Option<StopReason>, SwarmError> {
    let map = repository_map(cx, state, instruction);
    let request = prompt::task_plan_request(&TaskPlanInput {
        instruction: instruction.text(),
        map: &map,
        allow_test_edits: cx.config.allow_test_edits,
        allowance: cx.budget.plan,
    });
    let scope = PlanScope {
        files: &state.facts.files,
        target_prefix: state.facts.target.as_str(),
        allow_test_edits: cx.config.allow_test_edits,
    };
    let asking = Step::start(
        cx.events,
        format!("asking {} for the plan of the task", cx.model.model()),
    );
    let (call, reply) = cancellable(
        cx.cancel,
        planner::ask_tasks(cx.model.as_ref(), request, instruction, &scope),
    )
    .await?;
    drop(asking);
    rec.model_call(Agent::Auditor, Action::CodeAnalysis, &call, None, None)?;
    let (plan, reply) = match reply {
        Ok(planned) => planned,
        Err(e) => {
            cx.events.emit(Event::Notice {
                message: format!("the model could not plan the task: {}", SwarmError::from(e)),
            });
            return Ok(Some(StopReason::ModelFailure));
        }
    };
    state.add_usage(&reply.usage, &cx.config.prices);
    rec.task_plan(instruction.text(), &plan)?;
    tell_plan(cx, &plan);
    state.work.tasks = Some(TaskBook::new(instruction, plan));
    Ok(None)
}

/// The repository as the plan sees it: files the instruction names first
/// (with their text), then the other sources, then the tests.
fn repository_map<'a>(
    cx: &RunContext<'_>,
    state: &'a RunState,
    instruction: &Instruction,
) -> Vec<MapEntry<'a>> {
    let text = instruction.text();
    let named = |f: &str| {
        let module = crate::lang::module_name(f);
        let stem = f.rsplit('/').next().unwrap_or(f);
        text.contains(f) || text.contains(module.as_str()) || text.contains(stem)
    };
    let mut map: Vec<MapEntry<'a>> = state
        .facts
        .files
        .iter()
        .map(|f| {
            let metrics = state.facts.metrics.get(f);
            let mut names: Vec<String> = Vec::new();
            for function in metrics.map(|m| m.functions.as_slice()).unwrap_or_default() {
                let top = function.name.split('.').next().unwrap_or(&function.name);
                if !names.iter().any(|n| n == top) {
                    names.push(top.to_string());
                }
            }
            MapEntry {
                path: f,
                loc: metrics.map_or(0, |m| m.loc),
                names,
                text: named(f).then(|| read_source_text(cx.root, f)).flatten(),
            }
        })
        .collect();
    map.sort_by_key(|e| (e.text.is_none(), crate::lang::is_test(e.path)));
    map
}

/// Tells the user the plan: where it came from, and each task.
fn tell_plan(cx: &RunContext<'_>, plan: &TaskPlan) {
    if let Some(why) = &plan.fallback {
        cx.events.emit(Event::Notice {
            message: format!(
                "the model's plan could not be used ({why}): one task over the files the instruction names"
            ),
        });
    }
    for note in &plan.notes {
        cx.events.emit(Event::Notice {
            message: format!("plan: {note}"),
        });
    }
    let total = plan.tasks.len();
    for task in &plan.tasks {
        let after = if task.depends_on.is_empty() {
            String::new()
        } else {
            let deps: Vec<String> = task.depends_on.iter().map(ToString::to_string).collect();
            format!("; after {}", deps.join(", "))
        };
        cx.events.emit(Event::Task {
            number: task.number,
            total,
            title: task.title.clone(),
            status: "planned".into(),
            detail: format!("{}; {}{after}", task.kind.as_str(), task.files().join(", ")),
        });
    }
}

/// How one task ended.
pub(crate) enum TaskEnd {
    Done,
    /// Its attempts failed: why.
    Failed(String),
    /// The run stops here (a limit, the model, a conflict with the tests).
    Stop(StopReason),
}

/// Runs the tasks in dependency order; why the run stopped.
async fn run_tasks(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
) -> Result<StopReason, SwarmError> {
    let Some(order) = state.work.tasks.as_ref().map(|b| b.plan.order()) else {
        return Ok(StopReason::Green);
    };
    let mut stop = None;
    for number in order {
        if let Some(reason) = stop {
            settle(cx, rec, state, number, TaskStatus::NotReached, reason)?;
            continue;
        }
        if cx.cancel.is_cancelled() {
            stop = Some(StopReason::Interrupted);
            settle(
                cx,
                rec,
                state,
                number,
                TaskStatus::NotReached,
                StopReason::Interrupted,
            )?;
            continue;
        }
        if let Some(reason) = blocked_by(state, number) {
            settle_skipped(cx, rec, state, number, reason)?;
            continue;
        }
        let limit = if over_budget(cx.config, &state.spend) {
            Some(StopReason::Budget)
        } else if state.progress.iterations >= cx.config.max_iterations {
            Some(StopReason::IterationLimit)
        } else {
            None
        };
        if let Some(reason) = limit {
            stop = Some(reason);
            settle(cx, rec, state, number, TaskStatus::NotReached, reason)?;
            continue;
        }
        match attempt::run_task(cx, ws, rec, state, number).await? {
            TaskEnd::Done => {
                let status = TaskStatus::Done {
                    commits: commits_of(state, number),
                    tests_changed: tests_changed_by(state, number),
                    test_changes: state
                        .work
                        .tasks
                        .as_ref()
                        .and_then(|b| b.test_changes.get(&number).cloned())
                        .unwrap_or_default(),
                };
                settle(cx, rec, state, number, status, StopReason::Green)?;
            }
            TaskEnd::Failed(reason) => settle_skipped(cx, rec, state, number, reason)?,
            TaskEnd::Stop(reason) => {
                stop = Some(reason);
                if !matches!(book_status(state, number), Some(TaskStatus::Skipped { .. })) {
                    settle(cx, rec, state, number, TaskStatus::NotReached, reason)?;
                }
            }
        }
    }
    Ok(stop.unwrap_or_else(|| final_reason(state)))
}

fn book_status(state: &RunState, number: usize) -> Option<&TaskStatus> {
    state.work.tasks.as_ref()?.status.get(&number)
}

/// Why a task cannot start: a task it depends on was not done.
fn blocked_by(state: &RunState, number: usize) -> Option<String> {
    let book = state.work.tasks.as_ref()?;
    let task = book.plan.task(number)?;
    task.depends_on
        .iter()
        .find(|d| !matches!(book.status_of(**d), TaskStatus::Done { .. }))
        .map(|d| format!("task {d}, which it depends on, was not done"))
}

/// Every task settled: green when all are done and changed something,
/// else a task was skipped or nothing changed.
fn final_reason(state: &RunState) -> StopReason {
    match &state.work.tasks {
        Some(book) if !book.all_done() => StopReason::TaskSkipped,
        Some(book) if !book.changed_anything() => StopReason::NothingChanged,
        _ => StopReason::Green,
    }
}

fn settle_skipped(
    cx: &RunContext<'_>,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    number: usize,
    reason: String,
) -> Result<(), SwarmError> {
    let status = TaskStatus::Skipped { reason };
    settle(cx, rec, state, number, status, StopReason::TaskSkipped)
}

/// Records where a task got, tells the user and logs it.
pub(crate) fn settle(
    cx: &RunContext<'_>,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    number: usize,
    status: TaskStatus,
    why: StopReason,
) -> Result<(), SwarmError> {
    let Some(book) = state.work.tasks.as_mut() else {
        return Ok(());
    };
    let total = book.plan.tasks.len();
    let Some(task) = book.plan.task(number).cloned() else {
        return Ok(());
    };
    let detail = match &status {
        TaskStatus::Done { commits, .. } => format!("{} commit(s)", commits.len()),
        TaskStatus::Skipped { reason } => reason.clone(),
        TaskStatus::NotReached => format!("not reached: {}", why.describe()),
        TaskStatus::Pending => String::new(),
    };
    book.status.insert(number, status.clone());
    rec.task_settled(&task, total, &status)?;
    cx.events.emit(Event::Task {
        number,
        total,
        title: task.title.clone(),
        status: status.as_str().to_string(),
        detail,
    });
    Ok(())
}

/// The task numbered `number` of the run's plan.
pub(crate) fn task_of(state: &RunState, number: usize) -> Option<(Task, usize)> {
    let book = state.work.tasks.as_ref()?;
    Some((book.plan.task(number)?.clone(), book.plan.tasks.len()))
}

/// What one attempt at a task came to.
enum Tried {
    /// The run branch moved to it.
    Accepted,
    /// Refused, unusable or judged worse: why, for the next prompt.
    Failed(String),
    /// Not accepted yet, kept as the task's own state to build on: what the
    /// Judge found of the task's change so far.
    Continued(String),
    /// The model answered that the task needs no further change.
    Done,
    /// The run stops.
    Stop(StopReason),
}

/// The commits accepted for task `number`.
fn commits_of(state: &RunState, number: usize) -> Vec<String> {
    state
        .work
        .tasks
        .as_ref()
        .and_then(|b| b.commits.get(&number).cloned())
        .unwrap_or_default()
}

/// The test files task `number` changed (with `--allow-test-edits`).
fn tests_changed_by(state: &RunState, number: usize) -> Vec<String> {
    state
        .work
        .tasks
        .as_ref()
        .and_then(|b| b.tests_changed.get(&number).cloned())
        .unwrap_or_default()
}
