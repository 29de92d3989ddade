//! One proposal through Reviewer → Executor → Judge: a reply with no change
//! is remembered, a rejected change is remembered with the rule, an
//! accepted change is staged in the worktree, measured, committed on its
//! attempt branch and, when the Judge accepts it, becomes the best state.
//! A proposal refused for its size alone is split into reviewer-sized steps
//! ([`reviewer::split`]), each attempted in turn until one does not improve;
//! one no split can carry is tried as the part of it the evidence points at
//! ([`reviewer::subset`], see `subset`), the hunks left out named.

use std::time::{Duration, Instant};

use super::adopt::{adopt, beyond_tests, Beyond};
use super::record::{Recorder, ReviewNote};
use super::subset;
use super::timing::AttemptTimes;
use super::{RunContext, RunState};
use crate::error::SwarmError;
use crate::git::{CommitId, RunWorkspace};
use crate::log::{Agent, Event};
use crate::pipeline::{Change, Measurement, Proposal, ReplyProblem, Snapshot, Unusable, Verdict};
use crate::stage::executor::{self, AttemptRecord};
use crate::stage::judge;
use crate::stage::prompt::{self, PastAttempt};
use crate::stage::reviewer::{self, Review, ReviewContext, Step, Subset, SubsetFailure};

/// Which step of a split proposal an attempt is (1-based).
#[derive(Clone, Copy, Debug)]
struct Part {
    index: usize,
    total: usize,
}

/// What the Reviewer made of a proposal.
enum Reviewed {
    Accepted(Change),
    /// Too big as a whole; these steps each pass.
    Split(Vec<Step>),
    /// Too big and no split fits; the part the evidence points at passes.
    Subset(Subset),
    Rejected,
}

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
    let reviewed = review(cx, ws, rec, state, proposal, &summary, None)?;
    let review_time = started.elapsed();
    match reviewed {
        Reviewed::Accepted(change) => {
            let tried = Tried {
                file: &proposal.file,
                change: &change,
                summary,
                part: None,
                review_time,
                left_out: Vec::new(),
            };
            judge_and_commit(cx, ws, rec, state, tried)
        }
        Reviewed::Split(steps) => attempt_steps(cx, ws, rec, state, proposal, &summary, steps),
        Reviewed::Subset(part) => {
            let tried = Tried {
                file: &proposal.file,
                change: &part.change,
                summary: format!("{summary} (the hunks the evidence points at)"),
                part: None,
                review_time,
                left_out: subset::trailers(&part),
            };
            let moved = judge_and_commit(cx, ws, rec, state, tried)?;
            if moved {
                let attempt = state.progress.commits.len();
                subset::adopted(state, &proposal.file, attempt, &part);
            }
            Ok(moved)
        }
        Reviewed::Rejected => Ok(false),
    }
}

/// Attempts the steps of a split proposal in order, each on the best state
/// the one before left; stops at the first that is refused or does not
/// improve. `Ok(true)` when at least one step moved the run branch.
fn attempt_steps(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    proposal: &Proposal,
    summary: &str,
    steps: Vec<Step>,
) -> Result<bool, SwarmError> {
    let total = steps.len();
    let mut moved = false;
    for (k, step) in steps.into_iter().enumerate() {
        let part = Part {
            index: k + 1,
            total,
        };
        let step_proposal = Proposal {
            edits: Ok(step.edits),
            ..proposal.clone()
        };
        let summary = format!("{summary} (step {} of {total})", part.index);
        let started = Instant::now();
        let change = match review(cx, ws, rec, state, &step_proposal, &summary, Some(part))? {
            Reviewed::Accepted(change) => change,
            Reviewed::Split(_) | Reviewed::Subset(_) | Reviewed::Rejected => break,
        };
        let tried = Tried {
            file: &proposal.file,
            change: &change,
            summary,
            part: Some(part),
            review_time: started.elapsed(),
            left_out: Vec::new(),
        };
        if !judge_and_commit(cx, ws, rec, state, tried)? {
            break;
        }
        moved = true;
    }
    Ok(moved)
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
            broke: Vec::new(),
        },
    );
}

/// The Reviewer's verdict on the proposal against the best state; a
/// rejection is logged and remembered. A proposal refused for its size
/// alone is split into steps, unless it is a step (`part`) itself.
fn review(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    proposal: &Proposal,
    summary: &str,
    part: Option<Part>,
) -> Result<Reviewed, SwarmError> {
    let iteration = state.progress.iterations;
    let base = ws.best().0.clone();
    let ctx = ReviewContext {
        base: &base,
        root: cx.root,
        target: &state.facts.target,
        severities: &state.facts.severities,
        limits: cx.config.size_limits,
        allow_test_edits: cx.config.allow_test_edits,
        seen: &state.progress.seen,
        submodules: &state.facts.submodules,
        shown: &state.progress.shown,
        task: None,
        tests: &state.facts.tests,
    };
    let file = &proposal.file;
    let step = part.map(|p| (p.index, p.total));
    let (reason, split) = match reviewer::review(proposal, &ctx) {
        Review::Accepted(change) => {
            rec.review(
                file,
                iteration,
                Ok(&change),
                ReviewNote {
                    step,
                    split_into: None,
                },
            )?;
            for rebased in &change.rebased {
                cx.events.emit(Event::Notice {
                    message: format!("{file}: reply rebased: {rebased}"),
                });
            }
            state.progress.seen.insert(change.hash.clone());
            return Ok(Reviewed::Accepted(change));
        }
        Review::Rejected(reason) if reason.is_size() && part.is_none() => {
            let split = reviewer::split(proposal, &ctx);
            let focus = || subset::focus(cx, state, proposal);
            let part = split
                .is_err()
                .then(|| reviewer::subset(proposal, &ctx, &focus()));
            (reason, Some((split, part)))
        }
        Review::Rejected(reason) => (reason, None),
    };
    refused(
        cx,
        rec,
        state,
        proposal,
        summary,
        Refusal {
            reason,
            split,
            step,
        },
    )
}

/// A rejection, and what splitting the proposal gave when it was too big
/// (and, when no split fits, what the part the evidence points at gave).
struct Refusal {
    reason: reviewer::Rejection,
    split: Option<(Split, Option<Result<Subset, SubsetFailure>>)>,
    step: Option<(usize, usize)>,
}

type Split = Result<Vec<Step>, reviewer::SplitFailure>;

/// Logs and tells a rejection; a proposal that splits into reviewer-sized
/// steps goes on as those steps, any other is remembered for the Fixer.
fn refused(
    cx: &RunContext<'_>,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    proposal: &Proposal,
    summary: &str,
    refusal: Refusal,
) -> Result<Reviewed, SwarmError> {
    let Refusal {
        reason,
        split,
        step,
    } = refusal;
    let (file, iteration) = (&proposal.file, state.progress.iterations);
    let split_into = match &split {
        Some((Ok(steps), _)) => Some(steps.len()),
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
        Some((Ok(steps), _)) => {
            let sizes: Vec<String> = steps.iter().map(|s| s.changed_lines.to_string()).collect();
            cx.events.emit(Event::Notice {
                message: format!(
                    "{file}: the proposal is split into {} reviewer-sized steps ({} changed lines)",
                    steps.len(),
                    sizes.join(", ")
                ),
            });
            return Ok(Reviewed::Split(steps));
        }
        Some((Err(failure), part)) => {
            let (note, part) = subset::take(cx, rec, state, file, part)?;
            let outcome = format!(
                "rejected by the Reviewer: {reason}; it could not be split into reviewer-sized \
                 steps: {failure}{note}"
            );
            if let Some(part) = part {
                remember_refusal(state, file, summary, outcome);
                return Ok(Reviewed::Subset(part));
            }
            outcome
        }
        None => format!("rejected by the Reviewer: {reason}"),
    };
    remember_refusal(state, file, summary, outcome);
    Ok(Reviewed::Rejected)
}

/// Adds a proposal the Reviewer refused to what the Fixer remembers of
/// `file`.
fn remember_refusal(state: &mut RunState, file: &str, summary: &str, outcome: String) {
    let iteration = state.progress.iterations;
    remember(
        state,
        file,
        PastAttempt {
            label: format!("proposal in round {iteration}"),
            summary: summary.to_string(),
            outcome,
            diff: None,
            broke: Vec::new(),
        },
    );
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
    /// Trailers naming the hunks of the proposal left out of it.
    left_out: Vec<String>,
}

/// Stages the change, measures it, commits it on its attempt branch with
/// the Judge's verdict, and moves the best state when it is accepted.
fn judge_and_commit(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    tried: Tried<'_>,
) -> Result<bool, SwarmError> {
    let k = state.progress.commits.len() as u32 + 1;
    let stage = format!("judging attempt {k} ({})", tried.file);
    let (files, measured, apply_time, measure_time) =
        apply_and_measure(cx, ws, state, tried.change, &stage)?;
    let judging = Instant::now();
    rec.measurement(Agent::Judge, &measured, Some(k))?;
    let verdict = state
        .facts
        .bar
        .verdict(&state.progress.best, &measured.snapshot);
    let Beyond {
        verdict,
        behaviour,
        note,
    } = beyond_tests(
        cx,
        ws,
        rec,
        state,
        (tried.change, &measured.snapshot, &files),
        (verdict, k, &stage),
    )?;
    // The Judge's time: the measurement, the behaviour check, the held-out tests.
    let judge_time = measure_time + judging.elapsed();
    let message = commit_message(state, &tried, k, verdict, &measured.snapshot);
    let settled = executor::settle(ws, tried.change, k, verdict, &message)?;
    let times = AttemptTimes {
        review: tried.review_time,
        apply: apply_time,
        judge: judge_time,
        commit: settled.committing,
        worktree: settled.worktree,
    };
    let commit = settled.commit;
    rec.commit(
        tried.file,
        k,
        &commit.0,
        &message,
        &tried.change.diff,
        verdict,
        times,
    )?;
    let judged = Judged {
        k,
        verdict,
        result: &measured.snapshot,
        commit: &commit,
        note: &note,
    };
    tell_and_remember(cx, state, &tried, judged);
    state.progress.commits.push(commit.0.clone());
    if !verdict.is_accepted() {
        return Ok(false);
    }
    adopt(
        state,
        tried.change,
        measured.snapshot,
        behaviour.as_ref(),
        files,
        (cx.suites, cx.root),
    );
    Ok(true)
}

/// What the Judge made of attempt `k`, and its commit.
struct Judged<'a> {
    k: u32,
    verdict: Verdict,
    result: &'a Snapshot,
    commit: &'a CommitId,
    /// The behaviour check's finding (`; …`), or empty.
    note: &'a str,
}

/// Tells the user the verdict and adds the attempt to what the Fixer
/// remembers of its file (with the tests it broke, when it regressed).
fn tell_and_remember(
    cx: &RunContext<'_>,
    state: &mut RunState,
    tried: &Tried<'_>,
    judged: Judged<'_>,
) {
    let Judged {
        k,
        verdict,
        result,
        commit,
        note,
    } = judged;
    cx.events.emit(Event::Judged {
        attempt: k,
        file: tried.file.to_string(),
        verdict,
        tests: format!("{}{note}", result.describe()),
        lint_score: result.lint_score,
        linter: crate::lang::linters_of(&state.facts.files, " and "),
        commit: commit.short().to_string(),
    });
    let broke = if verdict == Verdict::Regressed {
        prompt::broken_tests(&state.progress.best, result)
    } else {
        Vec::new()
    };
    remember(
        state,
        tried.file,
        PastAttempt {
            label: format!("attempt {k}"),
            summary: tried.summary.clone(),
            outcome: format!(
                "the Judge found it {}: {}{note}",
                verdict.as_str(),
                result.describe(),
            ),
            diff: Some(tried.change.diff.clone()),
            broke,
        },
    );
}

/// Writes the change into the worktree and has the Judge measure it; new
/// Python files the change creates are measured (and kept) too. With the
/// files, the measurement, and how long writing and measuring took.
fn apply_and_measure(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    state: &RunState,
    change: &Change,
    stage: &str,
) -> Result<(Vec<String>, Measurement, Duration, Duration), SwarmError> {
    let started = Instant::now();
    executor::write_to_worktree(ws, change)?;
    let apply_time = started.elapsed();
    let mut files = state.facts.files.clone();
    for f in &change.files {
        if crate::lang::is_source(f) && !files.iter().any(|g| f == g) {
            files.push(f.to_string());
        }
    }
    let started = Instant::now();
    let known = executor::worktree_content(ws, &state.facts.target)?;
    let measured = tokio::task::block_in_place(|| {
        judge::measure_attempt(
            cx.tools_knowing(stage, &known),
            cx.root,
            &files,
            cx.config.limits,
            cx.cancel,
            state.facts.baseline.tests.as_ref(),
            &state.progress.best,
        )
    })?;
    Ok((files, measured, apply_time, started.elapsed()))
}

/// The attempt's commit message: the Executor's, with the step of a split
/// proposal and the rebases of a merged reply as trailers.
fn commit_message(
    state: &RunState,
    tried: &Tried<'_>,
    k: u32,
    verdict: Verdict,
    result: &Snapshot,
) -> String {
    let files = executor::files_named(&state.facts.target, tried.file, tried.change);
    let record = AttemptRecord {
        run_id: &state.facts.run_id,
        iteration: state.progress.iterations,
        attempt: k,
        model: &state.facts.model_id,
        summary: &tried.summary,
        file: &files,
        verdict,
        baseline: &state.facts.baseline,
        result,
        changed_lines: tried.change.changed_lines,
    };
    let mut message = executor::commit_message(&record);
    if let Some(part) = tried.part {
        message.push_str(&format!("Swarm-Step: {} of {}\n", part.index, part.total));
    }
    for rebased in &tried.change.rebased {
        message.push_str(&format!("Swarm-Rebased: {rebased}\n"));
    }
    for trailer in &tried.left_out {
        message.push_str(&format!("{trailer}\n"));
    }
    message
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
