//! The one attempt pipeline, for a repair and a task alike: a proposal is
//! reviewed ([`review`]), applied, measured and judged ([`judge`]), its
//! verdict told and remembered for the Fixer, committed on its attempt
//! branch, and kept as the best state or reset away ([`keep`]). What
//! differs between a repair and a task is the attempt's [`Purpose`], which
//! the pipeline consults — which bar decides and what is checked beyond
//! the tests (behaviour check and held-out tests, or the public-name check
//! and the test-conflict stop), the Reviewer's limits and whether an
//! oversized proposal is split, the commit's summary and trailers, where
//! the Fixer's memory of an attempt goes. Every verdict is decided in
//! [`crate::pipeline`]; asking the model is the caller's (`round` for a
//! repair, `task::attempt` for a task), logging its calls is
//! [`record_calls`]'s.

mod judge;
mod keep;
mod open;
mod review;
mod subset;

pub(crate) use open::{discard, OpenState};

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::record::Recorder;
use super::{RunContext, RunState};
use crate::error::SwarmError;
use crate::git::RunWorkspace;
use crate::log::{Action, Event};
use crate::pipeline::{
    Change, Judging, Proposal, ReplyProblem, Snapshot, Task, TestCase, Unusable, Verdict,
};
use crate::stage::executor::{self, AttemptRecord};
use crate::stage::prompt::{broken_tests, PastAttempt};
use crate::stage::reviewer::{Step, Subset};
use crate::stage::ModelCall;
use review::Reviewed;

/// What an attempt is for, and so what differs in its pipeline.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Purpose<'t> {
    /// Repair of what the tests and lint point at: held to
    /// [`crate::pipeline::Bar::verdict`], the behaviour check and the
    /// held-out tests; an oversized proposal is split.
    Repair,
    /// A task of refactoring on request: held to
    /// [`crate::pipeline::Bar::task_verdict`] and, for a
    /// behaviour-preserving one, the public-name check; its commit carries
    /// `Swarm-Task`.
    Task(&'t Task),
}

impl Purpose<'_> {
    /// The bar the attempt's verdict comes from.
    fn judging(self) -> Judging {
        match self {
            Purpose::Repair => Judging::Repair,
            Purpose::Task(_) => Judging::Task,
        }
    }

    /// What the tools' steps are told they are part of.
    fn stage(self, k: u32, file: &str) -> String {
        match self {
            Purpose::Repair => format!("judging attempt {k} ({file})"),
            Purpose::Task(task) => format!("judging attempt {k} (task {})", task.number),
        }
    }
}

/// What an attempt came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Attempted {
    /// The run branch moved to it.
    Moved,
    /// It did not: what the Fixer is told of it.
    NotMoved(String),
    /// The Reviewer found the reply leaves every file as it is: what the
    /// Fixer is told of it.
    Unchanged(String),
    /// A task's step not accepted yet, kept as the task's open state (see
    /// [`open`]): what the Judge found of the task's change so far.
    Continued(String),
    /// A task's intended behaviour change breaks tests it may not change:
    /// the line that stops the run.
    TestConflict(String),
}

impl Attempted {
    pub(crate) fn moved(&self) -> bool {
        *self == Attempted::Moved
    }
}

/// Which step of a split proposal an attempt is (1-based).
#[derive(Clone, Copy, Debug)]
struct Part {
    index: usize,
    total: usize,
}

/// Takes one proposal of this round (`state.progress.iterations`) through
/// the pipeline for `purpose`: the proposal, or the reviewer-sized steps a
/// repair's oversized one splits into, each reviewed, judged, committed
/// and kept or reset on the best state the one before left, until one is
/// refused or does not move the run branch. Moved when any did.
pub(crate) fn attempt(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    purpose: Purpose<'_>,
    proposal: &Proposal,
) -> Result<Attempted, SwarmError> {
    let summary = proposal.summary();
    if let Err(reason) = &proposal.edits {
        let file = &proposal.file;
        return Ok(no_change(cx, state, purpose, file, summary, reason));
    }
    let file = proposal.file.as_str();
    let mut pieces = VecDeque::from([(proposal.clone(), summary.clone(), None)]);
    let (mut last, mut moved) = (Attempted::NotMoved(String::new()), false);
    while let Some((piece, said, part)) = pieces.pop_front() {
        let started = Instant::now();
        let (change, subset) =
            match review::review(cx, ws, rec, state, purpose, &piece, &said, part)? {
                Reviewed::Accepted(change) => (change, None),
                Reviewed::Split(steps) => {
                    pieces.extend(steps_of(proposal, &summary, steps));
                    continue;
                }
                Reviewed::Subset(part) => (part.change.clone(), Some(part)),
                Reviewed::Rejected(why) => {
                    last = Attempted::NotMoved(why);
                    break;
                }
                Reviewed::Unchanged(why) => {
                    last = Attempted::Unchanged(why);
                    break;
                }
            };
        let said = match subset {
            Some(_) => format!("{said} (the hunks the evidence points at)"),
            None => said,
        };
        let change = open::whole(state, purpose, change);
        let tried = Tried {
            file,
            change: &change,
            summary: said,
            part,
            review_time: started.elapsed(),
            subset: subset.as_ref(),
        };
        last = judge_and_commit(cx, ws, rec, state, purpose, tried)?;
        if !last.moved() {
            break;
        }
        moved = true;
    }
    Ok(if moved { Attempted::Moved } else { last })
}

/// The steps of a split proposal as proposals of their own, each with its
/// place among them.
fn steps_of(
    proposal: &Proposal,
    summary: &str,
    steps: Vec<Step>,
) -> Vec<(Proposal, String, Option<Part>)> {
    let total = steps.len();
    steps
        .into_iter()
        .enumerate()
        .map(|(k, step)| {
            let part = Part {
                index: k + 1,
                total,
            };
            let step_proposal = Proposal {
                edits: Ok(step.edits),
                ..proposal.clone()
            };
            let summary = format!("{summary} (step {} of {total})", part.index);
            (step_proposal, summary, Some(part))
        })
        .collect()
}

/// Nothing to review: the model found nothing to change (the file is left
/// alone until the best state moves, unless failing tests reach it: see
/// [`pushed_back`]), or gave no usable change even when asked again.
fn no_change(
    cx: &RunContext<'_>,
    state: &mut RunState,
    purpose: Purpose<'_>,
    file: &str,
    summary: String,
    reason: &Unusable,
) -> Attempted {
    let iteration = state.progress.iterations;
    let declined = reason.problem == ReplyProblem::NoChangeNeeded;
    let push_back = declined
        .then(|| pushed_back(cx, state, purpose, file))
        .flatten();
    let outcome = match push_back {
        None if declined => {
            cx.events.emit(Event::Declined {
                file: file.to_string(),
            });
            state.work.declined.insert(file.to_string());
            state.work.pending_plan.remove(file);
            "the model found nothing to change".to_string()
        }
        push_back => {
            let why = match push_back {
                Some(failing) => format!(
                    "the reply said NO CHANGE, but {failing} still fail(s) and reach(es) \
                     `{file}`: NO CHANGE is no answer while they fail"
                ),
                None => format!("no usable change: {reason}"),
            };
            cx.events.emit(Event::NoProposal {
                file: file.to_string(),
                reason: why.clone(),
            });
            let line = crate::stage::prompt::one_line(Some(&why));
            state.progress.replies.not_used(file, &line);
            why
        }
    };
    let past = PastAttempt {
        label: format!("reply in round {iteration}"),
        summary,
        outcome: outcome.clone(),
        diff: None,
        broke: Vec::new(),
    };
    remember_attempt(state, purpose, file, past);
    Attempted::NotMoved(outcome)
}

/// How many times a repair tells the model that `NO CHANGE` is no answer
/// for a file failing tests reach, before it takes the answer.
const PUSH_BACKS: u32 = 2;

/// The failing tests that reach `file` (named, at most three), when a
/// repair's `NO CHANGE` for it is pushed back rather than taken: small
/// models say it of the very module the tests fail in. Only the last file
/// the failing tests reach that is not declined is pushed back (in a
/// one-module project, that module), each at most [`PUSH_BACKS`] times
/// until the best state moves.
fn pushed_back(
    cx: &RunContext<'_>,
    state: &mut RunState,
    purpose: Purpose<'_>,
    file: &str,
) -> Option<String> {
    if !matches!(purpose, Purpose::Repair) {
        return None;
    }
    let read = |p: &str| crate::stage::read_source_text(cx.root, p);
    let owned = state.facts.sources();
    let sources: Vec<&String> = owned.iter().collect();
    let failing = state.progress.best.failing();
    let reaches = |f: &str| {
        failing
            .iter()
            .take(8)
            .any(|case| crate::stage::reach::concerns(case, f, &sources, &read))
    };
    // Another file the tests reach, not yet declined, may be at fault: the
    // answer is taken, and the push-back is for the last one standing.
    let declined = &state.work.declined;
    let other_open = owned
        .iter()
        .any(|f| f != file && !declined.contains(f) && reaches(f));
    let reaching: Vec<&str> = failing
        .iter()
        .filter(|case| crate::stage::reach::concerns(case, file, &sources, &read))
        .map(TestCase::name)
        .collect();
    let times = state.work.pushed_back.entry(file.to_string()).or_insert(0);
    if reaching.is_empty() || other_open || *times >= PUSH_BACKS {
        return None;
    }
    *times += 1;
    let mut named = reaching
        .iter()
        .take(3)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if reaching.len() > 3 {
        named.push_str(&format!(" and {} more", reaching.len() - 3));
    }
    Some(named)
}

/// An accepted change about to be judged: the file the proposal was for,
/// what it tried, and which step of a split proposal it is.
struct Tried<'a> {
    file: &'a str,
    change: &'a Change,
    summary: String,
    part: Option<Part>,
    /// What the Reviewer took.
    review_time: Duration,
    /// The part of an oversized proposal this is, with the hunks left out.
    subset: Option<&'a Subset>,
}

/// Stages the change, has it judged, commits it on its attempt branch with
/// the verdict, tells and remembers it, and keeps it as the best state
/// when it is accepted (or resets the worktree away from it).
fn judge_and_commit(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    purpose: Purpose<'_>,
    tried: Tried<'_>,
) -> Result<Attempted, SwarmError> {
    let k = state.progress.commits.len() as u32 + 1;
    let mut judged = judge::judge(cx, ws, rec, state, purpose, (tried.file, tried.change), k)?;
    let verdict = judged.verdict;
    let message = commit_message(state, purpose, &tried, k, verdict, &judged.result);
    let stays = open::stays(purpose, verdict, judged.conflict.is_some());
    let settled = executor::settle(ws, tried.change, k, verdict, &message, stays)?;
    judged.times.review = tried.review_time;
    judged.times.commit = settled.committing;
    judged.times.worktree = settled.worktree;
    let commit = settled.commit;
    let diff = &tried.change.diff;
    rec.commit(
        tried.file,
        k,
        &commit.0,
        &message,
        diff,
        verdict,
        judged.times,
    )?;
    cx.events.emit(Event::Judged {
        attempt: k,
        file: tried.file.to_string(),
        verdict,
        tests: format!("{}{}", judged.result.describe(), judged.note),
        lint_score: judged.result.lint_score,
        linter: crate::lang::linters_of(&state.facts.files, " and "),
        commit: commit.short().to_string(),
    });
    let mut outcome = format!("the Judge found it {verdict}: {}", judged.why);
    if let Some(first) = tried.change.unplaced.first() {
        // Asked again briefly: the first hunk left out, in one line.
        let first = crate::stage::prompt::one_line(Some(first.trim_start_matches("- ")));
        let more = tried.change.unplaced.len() - 1;
        outcome.push_str(&format!(
            "; {} of its hunks did not apply and were left out ({first}{})",
            more + 1,
            if more > 0 { "; …" } else { "" }
        ));
    }
    // What the Fixer remembers of it, with the tests it broke.
    let broke = match verdict {
        Verdict::Regressed => broken_tests(&state.progress.best, &judged.result),
        _ => Vec::new(),
    };
    let past = PastAttempt {
        label: format!("attempt {k}"),
        summary: tried.summary.clone(),
        outcome: outcome.clone(),
        diff: Some(tried.change.diff.clone()),
        broke,
    };
    remember_attempt(state, purpose, tried.file, past);
    state.progress.commits.push(commit.0.clone());
    if let Some(line) = judged.conflict.take() {
        open::discard(ws, state)?;
        return Ok(Attempted::TestConflict(line));
    }
    let kept = keep::keep_or_reset(cx, state, purpose, &tried, judged, &commit.0, outcome);
    if stays {
        open::keep(state, purpose, commit, tried.change, &judged_why(&kept));
        if let Attempted::NotMoved(why) = kept {
            return Ok(Attempted::Continued(why));
        }
    } else if kept.moved() {
        open::close(state);
    }
    Ok(kept)
}

/// What the Fixer is told of an attempt that did not move the run branch.
fn judged_why(kept: &Attempted) -> String {
    match kept {
        Attempted::NotMoved(why) | Attempted::Continued(why) | Attempted::Unchanged(why) => {
            why.clone()
        }
        Attempted::TestConflict(line) => line.clone(),
        Attempted::Moved => String::new(),
    }
}

/// The attempt's commit message: the Executor's, with the purpose's
/// trailers — a repair's step of a split proposal, rebases of a merged
/// reply and hunks left out; a task's `Swarm-Task`.
fn commit_message(
    state: &RunState,
    purpose: Purpose<'_>,
    tried: &Tried<'_>,
    k: u32,
    verdict: Verdict,
    result: &Snapshot,
) -> String {
    let target = &state.facts.target;
    let total = state.work.tasks.as_ref().map_or(1, |b| b.plan.tasks.len());
    let (summary, file) = match purpose {
        Purpose::Repair => (
            tried.summary.clone(),
            executor::files_named(target, tried.file, tried.change),
        ),
        Purpose::Task(task) => (
            crate::pipeline::clip(&format!("task {}/{total}: {}", task.number, task.title), 90)
                .to_string(),
            target.repo_path(tried.file).to_string(),
        ),
    };
    let record = AttemptRecord {
        run_id: &state.facts.run_id,
        iteration: state.progress.iterations,
        attempt: k,
        model: &state.facts.model_id,
        summary: &summary,
        file: &file,
        verdict,
        baseline: &state.facts.baseline,
        result,
        changed_lines: tried.change.changed_lines,
    };
    let mut message = executor::commit_message(&record);
    for trailer in trailers(purpose, tried, total) {
        message.push_str(&format!("{trailer}\n"));
    }
    if let Purpose::Task(_) = purpose {
        let rewritten = judge::rewritten_tests(tried.change);
        let best = &state.progress.best;
        for changed in crate::pipeline::task::test_changes(best, result, &rewritten) {
            message.push_str(&format!("Swarm-Tests-Changed: {changed}\n"));
        }
    }
    message
}

/// The trailers a commit carries beyond the Executor's.
fn trailers(purpose: Purpose<'_>, tried: &Tried<'_>, total: usize) -> Vec<String> {
    let Purpose::Task(task) = purpose else {
        let step = tried
            .part
            .map(|p| format!("Swarm-Step: {} of {}", p.index, p.total));
        let rebased = tried
            .change
            .rebased
            .iter()
            .map(|r| format!("Swarm-Rebased: {r}"));
        let left_out = tried.subset.into_iter().flat_map(|s| &s.left_out);
        let left_out = left_out.map(|left| format!("Swarm-Left-Out: {left}"));
        let unplaced = tried.change.unplaced.iter();
        let unplaced = unplaced.map(|_| "Swarm-Left-Out: a hunk that did not apply".to_string());
        return step
            .into_iter()
            .chain(rebased)
            .chain(left_out)
            .chain(unplaced)
            .collect();
    };
    let title = task.title.replace('\n', " ");
    vec![format!("Swarm-Task: {}/{total} {title}", task.number)]
}

/// Adds an attempt to what the Fixer remembers: of its file for a repair,
/// the last outcome of its task for a task.
fn remember_attempt(state: &mut RunState, purpose: Purpose<'_>, file: &str, past: PastAttempt) {
    match purpose {
        Purpose::Repair => state
            .progress
            .history
            .entry(file.to_string())
            .or_default()
            .push(past),
        Purpose::Task(task) => {
            if let Some(book) = state.work.tasks.as_mut() {
                book.last.insert(task.number, past.outcome);
            }
        }
    }
}

/// Logs the model calls that asked for a proposal about `file` (`None`
/// when none came back) and counts what they spent.
pub(crate) fn record_calls(
    cx: &RunContext<'_>,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    calls: &[ModelCall],
    (file, proposal): (Option<&str>, Option<&Proposal>),
) -> Result<(), SwarmError> {
    let action = if proposal.is_some_and(|p| p.debugging) {
        Action::Debug
    } else {
        Action::Fix
    };
    let excerpts = proposal.and_then(|p| p.excerpts.as_deref());
    for call in calls {
        rec.fixer_call(action, call, file, state.progress.iterations, excerpts)?;
        if let Ok(reply) = &call.reply {
            match file.map(|f| crate::stage::fixer::reply_form(&reply.text, f)) {
                Some("diff") => state.progress.replies.diff += 1,
                Some("whole file") => state.progress.replies.whole_file += 1,
                _ => {}
            }
            state.add_usage(&reply.usage, &cx.config.prices);
        }
    }
    Ok(())
}
