//! One proposal through Reviewer → Executor → Judge: a reply with no change
//! is remembered, a rejected change is remembered with the rule, an
//! accepted change is staged in the worktree, measured, committed on its
//! attempt branch and, when the Judge accepts it, becomes the best state.

use std::time::{Duration, Instant};

use super::record::Recorder;
use super::timing::AttemptTimes;
use super::{RunContext, RunState};
use crate::error::SwarmError;
use crate::git::RunWorkspace;
use crate::log::{Agent, Event};
use crate::stage::executor::{self, AttemptRecord};
use crate::stage::fixer::{Proposal, ReplyProblem, Unusable};
use crate::stage::judge;
use crate::stage::prompt::PastAttempt;
use crate::stage::reviewer::{self, Change, Review, ReviewContext};

/// Reviews, applies, judges and commits one proposal of this round
/// (`state.progress.iterations`). `Ok(true)` when the run branch moved to it.
pub(super) fn attempt(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    proposal: &Proposal,
) -> Result<bool, SwarmError> {
    let summary = proposal.summary();
    if let Err(reason) = &proposal.edits {
        no_change(cx, state, &proposal.file, summary, reason);
        return Ok(false);
    }
    let started = Instant::now();
    let reviewed = review(cx, ws, rec, state, proposal, &summary)?;
    let review_time = started.elapsed();
    match reviewed {
        Some(change) => {
            let step = Step {
                file: &proposal.file,
                change: &change,
                summary,
                review_time,
            };
            judge_and_commit(cx, ws, rec, state, step)
        }
        None => Ok(false),
    }
}

/// Nothing to review: the model found nothing to change (the file is left
/// alone until the best state moves), or gave no usable change even when
/// asked again.
fn no_change(
    cx: &RunContext<'_>,
    state: &mut RunState,
    file: &str,
    summary: String,
    reason: &Unusable,
) {
    let iteration = state.progress.iterations;
    let outcome = if reason.problem == ReplyProblem::NoChangeNeeded {
        cx.events.emit(Event::Declined {
            file: file.to_string(),
        });
        state.work.declined.insert(file.to_string());
        state.work.pending_plan.remove(file);
        "the model found nothing to change".to_string()
    } else {
        cx.events.emit(Event::NoProposal {
            file: file.to_string(),
            reason: reason.to_string(),
        });
        format!("no usable change: {reason}")
    };
    remember(
        state,
        file,
        PastAttempt {
            label: format!("reply in round {iteration}"),
            summary,
            outcome,
            diff: None,
        },
    );
}

/// The Reviewer's verdict on the proposal against the best state; a
/// rejection is logged and remembered.
fn review(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    proposal: &Proposal,
    summary: &str,
) -> Result<Option<Change>, SwarmError> {
    let iteration = state.progress.iterations;
    let base = ws.best().0.clone();
    let ctx = ReviewContext {
        base: &base,
        root: cx.root,
        target_rel: &state.facts.target_rel,
        severities: &state.facts.severities,
        limits: cx.config.size_limits,
        allow_test_edits: cx.config.allow_test_edits,
        seen: &state.progress.seen,
        submodules: &state.facts.submodules,
    };
    let file = &proposal.file;
    match reviewer::review(proposal, &ctx) {
        Review::Accepted(change) => {
            rec.review(file, iteration, Ok(change.changed_lines))?;
            state.progress.seen.insert(change.hash.clone());
            Ok(Some(change))
        }
        Review::Rejected(reason) => {
            rec.review(file, iteration, Err(&reason))?;
            cx.events.emit(Event::Rejected {
                file: file.clone(),
                reason: reason.to_string(),
                rule: reason.rule(),
            });
            remember(
                state,
                file,
                PastAttempt {
                    label: format!("proposal in round {iteration}"),
                    summary: summary.to_string(),
                    outcome: format!("rejected by the Reviewer: {reason}"),
                    diff: None,
                },
            );
            Ok(None)
        }
    }
}

/// An accepted change on its way to the Judge.
struct Step<'a> {
    file: &'a str,
    change: &'a Change,
    summary: String,
    /// What the Reviewer took.
    review_time: Duration,
}

/// Stages the change, measures it, commits it on its attempt branch with
/// the Judge's verdict, and moves the best state when it is accepted.
fn judge_and_commit(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    step: Step<'_>,
) -> Result<bool, SwarmError> {
    let Step {
        file,
        change,
        summary,
        review_time,
    } = step;
    let iteration = state.progress.iterations;
    let k = state.progress.commits.len() as u32 + 1;
    let started = Instant::now();
    executor::stage(ws, change)?;
    let apply_time = started.elapsed();
    // New Python files the change creates are measured (and kept) too.
    let mut files = state.facts.files.clone();
    for f in &change.files {
        if f.ends_with(".py") && !files.contains(f) {
            files.push(f.clone());
        }
    }
    let started = Instant::now();
    let measured = tokio::task::block_in_place(|| {
        let baseline = state.facts.baseline.tests.as_ref();
        judge::measure_attempt(
            cx.tools(),
            cx.root,
            &files,
            cx.config.limits,
            cx.cancel,
            baseline,
            &state.progress.best,
        )
    })?;
    let judge_time = started.elapsed();
    let verdict = judge::compare(
        &state.progress.best,
        &measured.snapshot,
        state.facts.baseline.pylint,
    );
    rec.measurement(Agent::Judge, &measured, Some(k))?;
    let record = AttemptRecord {
        run_id: &state.facts.run_id,
        iteration,
        attempt: k,
        model: &state.facts.model_id,
        summary: &summary,
        file: &crate::stage::repo_path(&state.facts.target_rel, file),
        verdict,
        baseline: &state.facts.baseline,
        result: &measured.snapshot,
        changed_lines: change.changed_lines,
    };
    let message = executor::commit_message(&record);
    let settled = executor::settle(ws, change, k, verdict, &message)?;
    let times = AttemptTimes {
        review: review_time,
        apply: apply_time,
        judge: judge_time,
        commit: settled.committing,
        worktree: settled.worktree,
    };
    let commit = settled.commit;
    rec.commit(file, k, &commit.0, &message, verdict, times)?;
    cx.events.emit(Event::Judged {
        attempt: k,
        file: file.to_string(),
        verdict,
        tests: measured.snapshot.describe(),
        pylint: measured.snapshot.pylint,
        commit: commit.short().to_string(),
    });
    remember(
        state,
        file,
        PastAttempt {
            label: format!("attempt {k}"),
            summary,
            outcome: format!(
                "the Judge found it {}: {}",
                verdict.as_str(),
                measured.snapshot.describe()
            ),
            diff: Some(change.diff.clone()),
        },
    );
    state.progress.commits.push(commit.0.clone());
    if !verdict.is_accepted() {
        return Ok(false);
    }
    let progress = &mut state.progress;
    progress.best = measured.snapshot;
    progress.accepted += 1;
    progress
        .touched
        .extend(change.writes.iter().map(|w| w.path.clone()));
    state.work.declined.clear();
    state.facts.files = files;
    Ok(true)
}

/// Adds an attempt to what the Fixer remembers of `file`.
fn remember(state: &mut RunState, file: &str, past: PastAttempt) {
    state
        .progress
        .history
        .entry(file.to_string())
        .or_default()
        .push(past);
}
