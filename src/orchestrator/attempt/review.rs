//! The Reviewer's part of an attempt: the proposal checked against the
//! best state with the purpose's limits (a task's change is held to the
//! task's size and may not take a taken module name), the decision logged
//! and told. For a repair, a proposal refused for its size alone is split
//! into reviewer-sized steps ([`reviewer::split`]), and one no split can
//! carry is tried as the part of it the evidence points at
//! ([`reviewer::subset`], see `super::super::subset`). A refusal is
//! remembered for the Fixer.

use super::subset;
use super::{remember_attempt, Part, Purpose};
use crate::error::SwarmError;
use crate::git::RunWorkspace;
use crate::log::Event;
use crate::orchestrator::record::{Recorder, ReviewNote};
use crate::orchestrator::{RunContext, RunState};
use crate::pipeline::{Change, Proposal};
use crate::stage::prompt::PastAttempt;
use crate::stage::reviewer::{
    self, Rejection, Review, ReviewContext, SplitFailure, Step, Subset, TaskReview,
};

/// What the Reviewer made of a proposal.
pub(super) enum Reviewed {
    Accepted(Change),
    /// Too big as a whole; these steps each pass.
    Split(Vec<Step>),
    /// Too big and no split fits; the part the evidence points at passes.
    Subset(Subset),
    /// Refused: what the Fixer is told.
    Rejected(String),
    /// The reply leaves every file as it is: what the Fixer is told.
    Unchanged(String),
}

/// The Reviewer's verdict on the proposal against the best state; a
/// rejection is logged and remembered. A repair's proposal refused for its
/// size alone is split into steps, unless it is a step (`part`) itself.
#[allow(clippy::too_many_arguments)]
pub(super) fn review(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    purpose: Purpose<'_>,
    proposal: &Proposal,
    summary: &str,
    part: Option<Part>,
) -> Result<Reviewed, SwarmError> {
    let iteration = state.progress.iterations;
    let base = super::open::base(state, ws, purpose);
    let taken = taken_names(state, purpose);
    let task = task_review(purpose, cx.config.size_limits, &taken);
    let ctx = context(cx, state, &base, task);
    let file = &proposal.file;
    let step = part.map(|p| (p.index, p.total));
    let reason = match reviewer::review(proposal, &ctx) {
        Review::Accepted(change) => return accepted(cx, rec, state, purpose, change, (file, step)),
        Review::Rejected(reason) => reason,
    };
    if let Some(code) = without_test_edits(cx, purpose, proposal, &reason) {
        if let Review::Accepted(change) = reviewer::review(&code, &ctx) {
            cx.events.emit(Event::Notice {
                message: format!(
                    "{reason}; the rest of the change is judged without its test edits, to name \
                     the tests the instruction contradicts"
                ),
            });
            return accepted(cx, rec, state, purpose, change, (file, step));
        }
    }
    // Only a repair's whole proposal refused for its size is split.
    let splits = reason.is_size() && matches!(purpose, Purpose::Repair) && part.is_none();
    let split: Option<Result<Vec<Step>, SplitFailure>> =
        splits.then(|| reviewer::split(proposal, &ctx));
    let split_into = match &split {
        Some(Ok(steps)) => Some(steps.len()),
        _ => None,
    };
    rec.review(
        file,
        iteration,
        Err(&reason),
        ReviewNote { step, split_into },
    )?;
    cx.events.emit(Event::Rejected {
        file: file.to_string(),
        reason: reason.to_string(),
        rule: reason.rule(),
    });
    let outcome = match split {
        Some(Ok(steps)) => return Ok(split_into_steps(cx, file, steps)),
        Some(Err(failure)) => {
            let (note, part) = subset::tried_alone(cx, rec, state, proposal, &ctx)?;
            let outcome = format!(
                "rejected by the Reviewer: {reason}; it could not be split into reviewer-sized \
                 steps: {failure}{note}"
            );
            if let Some(part) = part {
                state.progress.seen.insert(part.change.hash.clone());
                remember_refusal(state, purpose, file, summary, outcome);
                return Ok(Reviewed::Subset(part));
            }
            outcome
        }
        None => format!("rejected by the Reviewer: {reason}"),
    };
    Ok(refused(state, purpose, (file, summary), &reason, outcome))
}

/// A refusal remembered (and, for a diff that could not be used, counted
/// among the unusable replies): what the Fixer is told.
fn refused(
    state: &mut RunState,
    purpose: Purpose<'_>,
    (file, summary): (&str, &str),
    reason: &Rejection,
    outcome: String,
) -> Reviewed {
    remember_refusal(state, purpose, file, summary, outcome.clone());
    let unusable = matches!(
        reason,
        Rejection::DoesNotApply(_) | Rejection::NoChange | Rejection::WhitespaceOnly
    );
    if unusable {
        state.progress.replies.not_used(file, &unusable_why(reason));
    }
    if *reason == Rejection::NoChange {
        return Reviewed::Unchanged(outcome);
    }
    Reviewed::Rejected(outcome)
}

/// Why a reply could not be used, in one line: the reason's first line,
/// and its first problem when that line only announces a list.
fn unusable_why(reason: &Rejection) -> String {
    let text = reason.to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("(no message)");
    let why = match lines.next() {
        Some(next) if first.ends_with(':') => format!("{first} {}", next.trim_start_matches("- ")),
        _ => first.to_string(),
    };
    crate::stage::prompt::clip(&why, 300).to_string()
}

/// Of a behaviour-changing task's proposal refused for editing a test
/// without `--allow-test-edits`: the proposal without its test edits, so
/// the Judge can name the tests the intended change contradicts (the
/// test-conflict stop). `None` for anything else.
fn without_test_edits(
    cx: &RunContext<'_>,
    purpose: Purpose<'_>,
    proposal: &Proposal,
    reason: &Rejection,
) -> Option<Proposal> {
    let Purpose::Task(task) = purpose else {
        return None;
    };
    let refused = matches!(
        reason,
        Rejection::TestFile { .. } | Rejection::TestConfig { .. }
    );
    if !refused || cx.config.allow_test_edits || task.kind != crate::pipeline::TaskKind::Change {
        return None;
    }
    let edits = proposal.edits.as_ref().ok()?;
    let code: Vec<_> = edits
        .iter()
        .filter(|e| !crate::lang::is_test(&e.path) && !crate::lang::is_test_harness(&e.path))
        .cloned()
        .collect();
    if code.is_empty() || code.len() == edits.len() {
        return None;
    }
    Some(Proposal {
        edits: Ok(code),
        ..proposal.clone()
    })
}

/// What the Reviewer is given: the best state's commit `base`, the run's
/// facts and what it tried, and a task's limits.
fn context<'a>(
    cx: &'a RunContext<'_>,
    state: &'a RunState,
    base: &'a str,
    task: Option<TaskReview<'a>>,
) -> ReviewContext<'a> {
    ReviewContext {
        base,
        root: cx.root,
        target: &state.facts.target,
        severities: &state.facts.severities,
        limits: cx.config.size_limits,
        allow_test_edits: cx.config.allow_test_edits,
        seen: &state.progress.seen,
        submodules: &state.facts.submodules,
        shown: &state.progress.shown,
        task,
        tests: &state.facts.tests,
    }
}

/// An accepted change (step `step` of a split proposal for `file`), logged
/// and counted as tried; a repair's reply merged onto the current text is
/// told.
fn accepted(
    cx: &RunContext<'_>,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    purpose: Purpose<'_>,
    change: Change,
    (file, step): (&str, Option<(usize, usize)>),
) -> Result<Reviewed, SwarmError> {
    let note = ReviewNote {
        step,
        split_into: None,
    };
    rec.review(file, state.progress.iterations, Ok(&change), note)?;
    if let Purpose::Repair = purpose {
        for rebased in &change.rebased {
            cx.events.emit(Event::Notice {
                message: format!("{file}: reply rebased: {rebased}"),
            });
        }
    }
    state.progress.seen.insert(change.hash.clone());
    Ok(Reviewed::Accepted(change))
}

/// A proposal refused for its size that splits into reviewer-sized steps:
/// told, and attempted as those steps.
fn split_into_steps(cx: &RunContext<'_>, file: &str, steps: Vec<Step>) -> Reviewed {
    let sizes: Vec<String> = steps.iter().map(|s| s.changed_lines.to_string()).collect();
    cx.events.emit(Event::Notice {
        message: format!(
            "{file}: the proposal is split into {} reviewer-sized steps ({} changed lines)",
            steps.len(),
            sizes.join(", ")
        ),
    });
    Reviewed::Split(steps)
}

/// The names a task's new module may not take (none for a repair).
fn taken_names(state: &RunState, purpose: Purpose<'_>) -> std::collections::BTreeSet<String> {
    match (purpose, &state.work.tasks) {
        (Purpose::Task(_), Some(book)) => book.taken.clone(),
        _ => Default::default(),
    }
}

/// The Reviewer's limits for a task's change as a whole: the
/// high-severity size, and the names taken (`None` for a repair).
fn task_review<'a>(
    purpose: Purpose<'_>,
    limits: reviewer::SizeLimits,
    taken: &'a std::collections::BTreeSet<String>,
) -> Option<TaskReview<'a>> {
    let Purpose::Task(_) = purpose else {
        return None;
    };
    Some(TaskReview {
        max_changed_lines: limits.high,
        max_changed_bytes: limits.bytes_for_severity(swarm_analysis::Severity::High),
        taken_names: taken,
    })
}

/// Adds a proposal the Reviewer refused to what the Fixer remembers.
fn remember_refusal(
    state: &mut RunState,
    purpose: Purpose<'_>,
    file: &str,
    summary: &str,
    outcome: String,
) {
    let iteration = state.progress.iterations;
    let past = PastAttempt {
        label: format!("proposal in round {iteration}"),
        summary: summary.to_string(),
        outcome,
        diff: None,
        broke: Vec::new(),
    };
    remember_attempt(state, purpose, file, past);
}
