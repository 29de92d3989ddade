//! One round: the files to work on (most urgent first, see
//! [`crate::stage::reach`]; a file fruitless for two rounds rests while
//! another candidate remains, see [`reach::rotate`]), a Fixer proposal for each asked for
//! concurrently (at most `--jobs` at once), then each proposal attempted in
//! turn on the best state ([`super::attempt`]).

use std::path::Path;
use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::attempt::{self, Purpose};
use super::record::Recorder;
use super::{cancellable, RunContext, RunState, StopReason};
use crate::error::SwarmError;
use crate::git::RunWorkspace;
use crate::llm::LlmError;
use crate::log::{Event, Step};
use crate::pipeline::Proposal;
use crate::pipeline::{LintMessage, TestCase};
use crate::stage::budget::Allowance;
use crate::stage::fixer;
use crate::stage::prompt::{FixInput, PastAttempt};
use crate::stage::ruff_fixer::{self, ProposalSource};
use crate::stage::{auditor, reach, ModelCall};
use swarm_patch::ReplyContext;

/// At most this many files are worked on in one round.
const MAX_FILES_PER_ROUND: usize = 6;
/// A plan item on a file whose tests already pass is given up after this many tries.
const PLAN_TRIES: u32 = 2;

/// What a round achieved.
pub(crate) struct RoundOutcome {
    pub accepted: u32,
    pub stop: Option<StopReason>,
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
    related: Vec<reach::Related>,
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
            related: &self.related,
            max_changed_lines: self.max_changed_lines,
            max_changed_bytes: self.max_changed_bytes,
            allowance: self.allowance,
        }
    }
}

/// The files to work on this round, most urgent first.
fn choose_files(state: &RunState, root: &Path) -> Vec<String> {
    let failing = state.progress.best.failing();
    let mut others = state.progress.best.broken_files();
    let mut planned: Vec<&String> = state.work.pending_plan.keys().collect();
    // Most urgent first: the evidence ranking of the last plan, then severity.
    planned.sort_by_key(|f| {
        (
            state
                .work
                .coverage
                .urgency
                .get(*f)
                .copied()
                .unwrap_or(usize::MAX),
            std::cmp::Reverse(state.facts.severities.get(*f).copied()),
        )
    });
    others.extend(planned.into_iter().cloned());
    let read = |p: &str| crate::stage::read_source_text(root, p);
    let mut files = reach::implicated_files(failing, &state.facts.sources(), &read, &others);
    if files.is_empty() && !state.facts.bar.is_green(&state.progress.best) {
        files = state.facts.sources();
        files.sort_by_key(|f| std::cmp::Reverse(state.facts.severities.get(f).copied()));
    }
    files.retain(|f| !state.work.declined.contains(f));
    let revisit = revisit(state, &files, &read);
    let mut files = reach::rotate(files, &state.work.fruitless, &revisit);
    files.truncate(MAX_FILES_PER_ROUND);
    files
}

/// The candidates an accepted change touched that a failing test now
/// fails in: its traceback runs through the file, or it calls a
/// definition the file holds.
fn revisit(
    state: &RunState,
    files: &[String],
    read: &dyn Fn(&str) -> Option<String>,
) -> Vec<String> {
    let failing = state.progress.best.failing();
    let sources: Vec<&String> = state.facts.files.iter().collect();
    let called: Vec<reach::Resolved> = failing
        .iter()
        .flat_map(|case| reach::called_definitions(case, &sources, read))
        .collect();
    files
        .iter()
        .filter(|f| {
            let repo = state.facts.target.repo_path(f);
            state.progress.touched.contains(&repo)
                && (failing.iter().any(|c| reach::traceback_mentions(c, f))
                    || called.iter().any(|r| &r.file == *f))
        })
        .cloned()
        .collect()
}

/// Counts a round against the files asked in it: a file with an accepted
/// attempt starts again from nothing, every other one gains a fruitless round.
fn count_fruitless(state: &mut RunState, asked: &[String], accepted: &[String]) {
    for file in asked {
        if accepted.contains(file) {
            state.work.fruitless.remove(file);
        } else {
            *state.work.fruitless.entry(file.clone()).or_insert(0) += 1;
        }
    }
}

/// The failing tests the Fixer of `file` is shown: those that reach it
/// (at most eight), then the generated tests set aside for failing on its
/// original code.
fn failures_shown(
    state: &RunState,
    file: &str,
    read: &dyn Fn(&str) -> Option<String>,
) -> Vec<TestCase> {
    reach::failures_for(
        state.progress.best.failing(),
        file,
        &state.facts.sources(),
        read,
    )
    .into_iter()
    .take(8)
    .cloned()
    .chain(
        state
            .progress
            .generated
            .get(file)
            .map(crate::stage::tester::Generated::evidence)
            .unwrap_or_default(),
    )
    .collect()
}

fn job_for(cx: &RunContext<'_>, state: &RunState, file: &str) -> FixJob {
    let (config, root) = (cx.config, cx.root);
    let read = |p: &str| crate::stage::read_source_text(root, p);
    let failing = failures_shown(state, file, &read);
    let sources = state.facts.sources();
    let sources: Vec<&String> = sources.iter().collect();
    let concerning: Vec<&TestCase> = failing
        .iter()
        .filter(|case| reach::concerns(case, file, &sources, &read))
        .collect();
    // What a file imports is in the audit's metrics while the run has not
    // changed it: the search for callers then reads only candidates.
    let imported = |f: &str| {
        let metrics = state.facts.metrics.get(f)?;
        state
            .unchanged_since_audit(f)
            .then_some(metrics.imported_names.as_slice())
    };
    let related = reach::related_code(file, &concerning, &sources, &read, &imported);
    let problems = state.progress.best.problems_of(file);
    let severity = state
        .facts
        .severities
        .get(file)
        .copied()
        .unwrap_or(swarm_analysis::Severity::Medium);
    FixJob {
        path: file.to_string(),
        text: crate::stage::read_source_text(root, file).unwrap_or_default(),
        plan_items: state.work.plan.items.get(file).cloned(),
        lint: auditor::lint_for(&state.progress.best.lint.messages, file)
            .into_iter()
            .cloned()
            .collect(),
        failing,
        problems,
        history: state
            .progress
            .history
            .get(file)
            .cloned()
            .unwrap_or_default(),
        related,
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
    let iteration = state.progress.iterations;
    let files = choose_files(state, cx.root);
    cx.events.emit(Event::Iteration {
        number: iteration,
        files: files.clone(),
    });
    if files.is_empty() {
        return Ok(RoundOutcome {
            accepted: 0,
            stop: Some(StopReason::NothingLeft),
        });
    }
    let results = ask_all(cx, state, &files).await?;
    let mut accepted = 0;
    let mut accepted_files: Vec<String> = Vec::new();
    let mut model_failed = false;
    for (_, calls, result) in results {
        let proposal = result.as_ref().ok();
        let file = proposal.map(|p| p.file.as_str());
        attempt::record_calls(cx, rec, state, &calls, (file, proposal))?;
        let proposal = match result {
            Ok(p) => p,
            Err(e) => {
                model_failed = true;
                cx.events.emit(Event::Notice {
                    message: format!("model call failed: {}", SwarmError::from(e)),
                });
                continue;
            }
        };
        if cx.cancel.is_cancelled() {
            return Err(SwarmError::interrupted());
        }
        if try_proposal(cx, ws, rec, state, &proposal)? {
            accepted += 1;
            accepted_files.push(proposal.file.to_string());
        }
    }
    count_fruitless(state, &files, &accepted_files);
    let stop = model_failed.then_some(StopReason::ModelFailure);
    Ok(RoundOutcome { accepted, stop })
}

/// Asks the Fixer about every file, at most `--jobs` at once; the results
/// in file order.
async fn ask_all(
    cx: &RunContext<'_>,
    state: &mut RunState,
    files: &[String],
) -> Result<Vec<ProposalResult>, SwarmError> {
    if let ProposalSource::Ruff(ruff) = &cx.config.proposals {
        return ask_ruff(cx, ruff, state, files);
    }
    let permits = Arc::new(Semaphore::new(cx.config.jobs.max(1)));
    let mut set: JoinSet<ProposalResult> = JoinSet::new();
    // Each request is a step from the moment it goes out until it is back.
    let mut asking: Vec<Option<Step<'_>>> = Vec::new();
    for (index, file) in files.iter().enumerate() {
        state.work.coverage.in_depth.insert(file.clone());
        let job = job_for(cx, state, file);
        // A reply may be written against this text after it changes.
        state
            .progress
            .shown
            .remember(file, state.progress.iterations, &job.text);
        let model = Arc::clone(cx.model);
        let ctx = ReplyContext {
            target_prefix: state.facts.target.as_str().to_string(),
            requested: vec![file.clone()],
            language: crate::lang::code_language(std::slice::from_ref(file)),
        };
        // Taking the permit before spawning starts the calls in file order,
        // so a recorded run replays in the same order.
        let permit = cancellable(cx.cancel, Arc::clone(&permits).acquire_owned())
            .await?
            .map_err(|e| SwarmError::internal("the Fixer's job queue closed").caused_by(e))?;
        asking.push(Some(Step::start(
            cx.events,
            format!(
                "asking {} for a fix to {file} (file {} of {})",
                model.model(),
                index + 1,
                files.len()
            ),
        )));
        set.spawn(async move {
            let (calls, result) = fixer::propose(model.as_ref(), &job.input(), &ctx).await;
            drop(permit);
            (index, calls, result)
        });
    }
    let mut results: Vec<ProposalResult> = Vec::new();
    while let Some(joined) = cancellable(cx.cancel, set.join_next()).await? {
        let joined =
            joined.map_err(|e| SwarmError::internal("a Fixer task failed").caused_by(e))?;
        asking.get_mut(joined.0).and_then(Option::take);
        results.push(joined);
    }
    results.sort_by_key(|(index, _, _)| *index);
    Ok(results)
}

/// Takes ruff's safe fixes to every file as the round's proposals (see
/// [`crate::stage::ruff_fixer`]), in file order.
fn ask_ruff(
    cx: &RunContext<'_>,
    ruff: &crate::tools::ruff::Ruff,
    state: &mut RunState,
    files: &[String],
) -> Result<Vec<ProposalResult>, SwarmError> {
    let mut results = Vec::new();
    for (index, file) in files.iter().enumerate() {
        state.work.coverage.in_depth.insert(file.clone());
        let text = crate::stage::read_source_text(cx.root, file).unwrap_or_default();
        state
            .progress
            .shown
            .remember(file, state.progress.iterations, &text);
        let ctx = ReplyContext {
            target_prefix: state.facts.target.as_str().to_string(),
            requested: vec![file.clone()],
            language: crate::lang::code_language(std::slice::from_ref(file)),
        };
        let _asking = Step::start(
            cx.events,
            format!("asking {} for fixes to {file}", ruff.version),
        );
        let (call, proposal) = tokio::task::block_in_place(|| {
            ruff_fixer::propose(ruff, cx.root, file, &ctx, cx.cancel)
        })?;
        results.push((index, vec![call], Ok(proposal)));
    }
    Ok(results)
}

/// Attempts one proposal and keeps the plan's count of tries: a plan file
/// is done when an attempt on it is accepted, and given up after
/// [`PLAN_TRIES`] once the tests pass. `Ok(true)` when it was accepted.
fn try_proposal(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    proposal: &Proposal,
) -> Result<bool, SwarmError> {
    let file = proposal.file.as_str();
    if let Some(tries) = state.work.pending_plan.get_mut(file) {
        *tries += 1;
    }
    let accepted = attempt::attempt(cx, ws, rec, state, Purpose::Repair, proposal)?.moved();
    let tries = state.work.pending_plan.get(file).copied().unwrap_or(0);
    let green = state.facts.bar.is_green(&state.progress.best);
    if accepted || (tries >= PLAN_TRIES && green) {
        state.work.pending_plan.remove(file);
    }
    Ok(accepted)
}
