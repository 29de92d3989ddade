//! One Fixer→Reviewer→Executor→Judge round: proposals for every implicated
//! file are asked for concurrently (at most `--jobs` at once), then each is
//! reviewed, applied on the best state, judged and committed in turn.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::record::Recorder;
use super::{RunContext, RunState, StopReason};
use crate::cancel::Cancel;
use crate::error::SwarmError;
use crate::git::RunWorkspace;
use crate::llm::LlmError;
use crate::log::{Action, Agent, Event};
use crate::patch::ReplyContext;
use crate::stage::budget::Allowance;
use crate::stage::executor::{self, AttemptRecord};
use crate::stage::fixer::{self, Proposal, ReplyProblem};
use crate::stage::judge;
use crate::stage::prompt::{FixInput, PastAttempt};
use crate::stage::reviewer::{self, Review, ReviewContext};
use crate::stage::{auditor, is_test_path, reach, ModelCall};
use crate::tools::{LintMessage, TestCase};

/// At most this many files are worked on in one round.
const MAX_FILES_PER_ROUND: usize = 6;
/// A plan item on a file whose tests already pass is given up after this many tries.
const PLAN_TRIES: u32 = 2;

/// What a round achieved.
pub(crate) struct RoundOutcome {
    pub accepted: u32,
    pub stop: Option<StopReason>,
}

/// Awaits `fut` unless the run is interrupted first.
pub(crate) async fn cancellable<F: Future>(
    cancel: &Cancel,
    fut: F,
) -> Result<F::Output, SwarmError> {
    tokio::pin!(fut);
    loop {
        tokio::select! {
            out = &mut fut => return Ok(out),
            _ = tokio::time::sleep(Duration::from_millis(100)) => {
                if cancel.is_cancelled() {
                    return Err(SwarmError::interrupted());
                }
            }
        }
    }
}

/// Everything one Fixer call needs, owned so it can run on its own task.
struct FixJob {
    path: String,
    text: String,
    plan_items: Option<String>,
    lint: Vec<LintMessage>,
    failing: Vec<TestCase>,
    problems: Vec<String>,
    history: Vec<PastAttempt>,
    max_changed_lines: usize,
    max_changed_bytes: usize,
    allowance: Allowance,
}

impl FixJob {
    fn input(&self) -> FixInput<'_> {
        FixInput {
            path: &self.path,
            text: &self.text,
            plan_items: self.plan_items.as_deref(),
            lint: self.lint.iter().collect(),
            failing: self.failing.iter().collect(),
            problems: self.problems.iter().map(String::as_str).collect(),
            history: &self.history,
            max_changed_lines: self.max_changed_lines,
            max_changed_bytes: self.max_changed_bytes,
            allowance: self.allowance,
        }
    }
}

/// The files to work on this round, most urgent first.
fn choose_files(state: &RunState, root: &Path) -> Vec<String> {
    let failing: Vec<TestCase> = state
        .best
        .tests
        .as_ref()
        .map(|t| t.failing.clone())
        .unwrap_or_default();
    let mut others: Vec<String> = state
        .best
        .checks
        .as_ref()
        .map(|c| c.problems.iter().map(|(p, _)| p.clone()).collect())
        .unwrap_or_default();
    let mut planned: Vec<&String> = state.pending_plan.keys().collect();
    // Most urgent first: the evidence ranking of the last plan, then severity.
    planned.sort_by_key(|f| {
        (
            state
                .coverage
                .urgency
                .get(*f)
                .copied()
                .unwrap_or(usize::MAX),
            std::cmp::Reverse(state.severities.get(*f).copied()),
        )
    });
    others.extend(planned.into_iter().cloned());
    let read = |p: &str| crate::stage::read_source_text(root, p);
    let mut files = reach::implicated_files(&failing, &state.files, &read, &others);
    if files.is_empty() && !state.best.is_green(state.baseline.pylint) {
        files = state
            .files
            .iter()
            .filter(|f| !is_test_path(f))
            .cloned()
            .collect();
        files.sort_by_key(|f| std::cmp::Reverse(state.severities.get(f).copied()));
    }
    files.retain(|f| !state.declined.contains(f));
    files.truncate(MAX_FILES_PER_ROUND);
    files
}

fn job_for(cx: &RunContext<'_>, state: &RunState, file: &str) -> FixJob {
    let (config, root) = (cx.config, cx.root);
    let read = |p: &str| crate::stage::read_source_text(root, p);
    let failing: Vec<TestCase> = state
        .best
        .tests
        .as_ref()
        .map(|t| {
            reach::failures_for(&t.failing, file, &state.files, &read)
                .into_iter()
                .take(8)
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let problems = state
        .best
        .checks
        .as_ref()
        .map(|c| {
            c.problems
                .iter()
                .filter(|(p, _)| p == file)
                .map(|(_, m)| m.clone())
                .collect()
        })
        .unwrap_or_default();
    let severity = state
        .severities
        .get(file)
        .copied()
        .unwrap_or(crate::analysis::Severity::Medium);
    FixJob {
        path: file.to_string(),
        text: crate::stage::read_source_text(root, file).unwrap_or_default(),
        plan_items: state.plan.items.get(file).cloned(),
        lint: auditor::lint_for(&state.best.lint.messages, file)
            .into_iter()
            .cloned()
            .collect(),
        failing,
        problems,
        history: state.history.get(file).cloned().unwrap_or_default(),
        max_changed_lines: config.size_limits.for_severity(severity),
        max_changed_bytes: config.size_limits.bytes_for_severity(severity),
        allowance: cx.budget.fix,
    }
}

type ProposalResult = (usize, Vec<ModelCall>, Result<Proposal, LlmError>);

/// Runs one round.
pub(crate) async fn run_round(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
) -> Result<RoundOutcome, SwarmError> {
    let iteration = state.iterations;
    let RunContext {
        config,
        model,
        events,
        cancel,
        root,
        ..
    } = *cx;
    let files = choose_files(state, root);
    events.emit(Event::Iteration {
        number: iteration,
        files: files.clone(),
    });
    if files.is_empty() {
        return Ok(RoundOutcome {
            accepted: 0,
            stop: Some(StopReason::NoProgress),
        });
    }
    let permits = Arc::new(Semaphore::new(config.jobs.max(1)));
    let mut set: JoinSet<ProposalResult> = JoinSet::new();
    for (index, file) in files.iter().enumerate() {
        state.coverage.in_depth.insert(file.clone());
        let job = job_for(cx, state, file);
        let model = Arc::clone(model);
        let ctx = ReplyContext {
            target_prefix: state.target_rel.clone(),
            requested: vec![file.clone()],
        };
        // Taking the permit before spawning starts the calls in file order,
        // so a recorded run replays in the same order.
        let permit = cancellable(cancel, Arc::clone(&permits).acquire_owned())
            .await?
            .map_err(|e| SwarmError::internal(format!("the Fixer's job queue closed: {e}")))?;
        set.spawn(async move {
            let (calls, result) = fixer::propose(model.as_ref(), &job.input(), &ctx).await;
            drop(permit);
            (index, calls, result)
        });
    }
    let mut results: Vec<ProposalResult> = Vec::new();
    while let Some(joined) = cancellable(cancel, set.join_next()).await? {
        results
            .push(joined.map_err(|e| SwarmError::internal(format!("a Fixer task failed: {e}")))?);
    }
    results.sort_by_key(|(index, _, _)| *index);

    let mut accepted = 0;
    let mut model_failed = false;
    for (_, calls, result) in results {
        let debugging = result.as_ref().map(|p| p.debugging).unwrap_or(false);
        let action = if debugging {
            Action::Debug
        } else {
            Action::Fix
        };
        for call in &calls {
            let file = result.as_ref().ok().map(|p| p.file.as_str());
            let excerpts = result.as_ref().ok().and_then(|p| p.excerpts.as_deref());
            rec.fixer_call(action, call, file, iteration, excerpts)?;
            if let Ok(reply) = &call.reply {
                state.add_usage(&reply.usage, &config.prices);
            }
        }
        let proposal = match result {
            Ok(p) => p,
            Err(e) => {
                model_failed = true;
                events.emit(Event::Notice {
                    message: format!("model call failed: {e}"),
                });
                continue;
            }
        };
        if cancel.is_cancelled() {
            return Err(SwarmError::interrupted());
        }
        if let Some(tries) = state.pending_plan.get_mut(&proposal.file) {
            *tries += 1;
        }
        if attempt(cx, ws, rec, state, iteration, &proposal)? {
            accepted += 1;
            state.pending_plan.remove(&proposal.file);
        }
        let give_up = state
            .pending_plan
            .get(&proposal.file)
            .is_some_and(|t| *t >= PLAN_TRIES)
            && state.best.is_green(state.baseline.pylint);
        if give_up {
            state.pending_plan.remove(&proposal.file);
        }
    }
    let stop = model_failed.then_some(StopReason::ModelFailure);
    Ok(RoundOutcome { accepted, stop })
}

/// Reviews, applies, judges and commits one proposal. `Ok(true)` when the
/// run branch moved to it.
fn attempt(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    iteration: u32,
    proposal: &Proposal,
) -> Result<bool, SwarmError> {
    let RunContext {
        config,
        events,
        cancel,
        root,
        ..
    } = *cx;
    let file = proposal.file.clone();
    let summary = proposal.summary();
    if let Err(reason) = &proposal.edits {
        // Nothing to review: the model found nothing to change, or gave no
        // usable change even when asked again.
        events.emit(Event::NoProposal {
            file: file.clone(),
            reason: reason.to_string(),
        });
        let outcome = if reason.problem == ReplyProblem::NoChangeNeeded {
            state.declined.insert(file.clone());
            state.pending_plan.remove(&file);
            "the model found nothing to change".to_string()
        } else {
            format!("no usable change: {reason}")
        };
        state.history.entry(file).or_default().push(PastAttempt {
            label: format!("reply in round {iteration}"),
            summary,
            outcome,
            diff: None,
        });
        return Ok(false);
    }
    let review = {
        let base = ws.best().0.clone();
        let ctx = ReviewContext {
            base: &base,
            root,
            target_rel: &state.target_rel,
            severities: &state.severities,
            limits: config.size_limits,
            allow_test_edits: config.allow_test_edits,
            seen: &state.seen,
            submodules: &state.submodules,
        };
        reviewer::review(proposal, &ctx)
    };
    let change = match review {
        Review::Rejected(reason) => {
            rec.review(&file, iteration, Err(&reason))?;
            events.emit(Event::Rejected {
                file: file.clone(),
                reason: reason.to_string(),
                rule: reason.rule(),
            });
            state.history.entry(file).or_default().push(PastAttempt {
                label: format!("proposal in round {iteration}"),
                summary,
                outcome: format!("rejected by the Reviewer: {reason}"),
                diff: None,
            });
            return Ok(false);
        }
        Review::Accepted(change) => change,
    };
    rec.review(&file, iteration, Ok(change.changed_lines))?;
    state.seen.insert(change.hash.clone());
    let k = state.commits.len() as u32 + 1;
    executor::stage(ws, &change)?;
    // New Python files the change creates are measured (and kept) too.
    let mut files = state.files.clone();
    for f in &change.files {
        if f.ends_with(".py") && !files.contains(f) {
            files.push(f.clone());
        }
    }
    let measured = tokio::task::block_in_place(|| {
        let baseline = state.baseline.tests.as_ref();
        judge::measure(cx.tools(), root, &files, config.limits, cancel, baseline)
    })?;
    let verdict = judge::compare(&state.best, &measured.snapshot, state.baseline.pylint);
    rec.measurement(Agent::Judge, &measured, Some(k))?;
    let record = AttemptRecord {
        run_id: &state.run_id,
        iteration,
        attempt: k,
        model: &state.model_id,
        summary: &summary,
        file: &crate::stage::repo_path(&state.target_rel, &file),
        verdict,
        baseline: &state.baseline,
        result: &measured.snapshot,
        changed_lines: change.changed_lines,
    };
    let message = executor::commit_message(&record);
    let commit = executor::settle(ws, &change, k, verdict, &message)?;
    rec.commit(&file, k, &commit.0, &message, verdict.as_str())?;
    events.emit(Event::Judged {
        attempt: k,
        file: file.clone(),
        verdict: verdict.as_str().into(),
        tests: measured.snapshot.describe(),
        pylint: measured.snapshot.pylint,
        commit: commit.short().to_string(),
    });
    state.history.entry(file).or_default().push(PastAttempt {
        label: format!("attempt {k}"),
        summary,
        outcome: format!(
            "the Judge found it {}: {}",
            verdict.as_str(),
            measured.snapshot.describe()
        ),
        diff: Some(change.diff.clone()),
    });
    state.commits.push(commit.0.clone());
    if verdict.is_accepted() {
        state.best = measured.snapshot;
        state.declined.clear();
        state.accepted += 1;
        state
            .touched
            .extend(change.writes.iter().map(|w| w.path.clone()));
        state.files = files;
        return Ok(true);
    }
    Ok(false)
}
