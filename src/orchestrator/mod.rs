//! The loop: sets up the run (repository, tools, worktree), audits, plans,
//! runs at most `max_iterations` Fixer→Reviewer→Executor→Judge rounds keeping
//! the best state, and delivers it. Stages are called here and nowhere else.
//!
//! `setup` opens the repository, takes the lock and the worktree; `audit`
//! takes the baseline and checks that the suite ran; this file runs the
//! stages in order and the rounds; `plan` asks for plan batches; `reference`
//! repairs the syntax of modules that do not compile into the originals
//! their changes are compared with; `held_out` asks for the tests no Fixer
//! sees and runs them on attempts; `round` picks
//! the files and asks the Fixer; `task` plans an instruction and asks for
//! each task; `attempt` is the one pipeline a proposal of either goes
//! through — Reviewer, Executor, Judge, commit, keep or reset — with a
//! `Purpose` for what differs (`subset`: the part of an oversized
//! proposal tried alone); `verify` checks the best state
//! once more; `deliver` fast-forwards the user's branch; `record` writes the
//! experiment log; `summary` is what the run reports. The run's state is
//! split by concern: [`Facts`] (what the audit found), [`Work`] (what to
//! work on), [`Progress`] (the best state and what was tried), [`Spend`].

mod attempt;
mod audit;
mod deliver;
pub mod doctor;
mod held_out;
mod plan;
mod record;
mod reference;
mod round;
mod setup;
pub mod summary;
mod task;
mod tester;
mod tests_asked;
mod timing;
mod verify;
mod withhold;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use crate::cancel::Cancel;
use crate::error::SwarmError;
use crate::git::RunWorkspace;
use crate::lang::Toolchain;
use crate::llm::{ChatModel, PriceTable, ProviderConfig, Secret, Usage, Windowed};
use crate::log::{Event, EventSink, Step};
use crate::pipeline::{Bar, RepoPath, Snapshot, TargetDir};
use crate::stage::budget::{Budget, BudgetSettings};
use crate::stage::judge::{self, Limits};
use crate::stage::planner::Plan;
use crate::stage::prompt::PastAttempt;
use crate::stage::reviewer::{ShownVersions, SizeLimits};
pub use crate::stage::ruff_fixer::ProposalSource;
use crate::tools::{Sandbox, SandboxPolicy, TestFiles};
use record::Recorder;
pub use summary::{Delivery, FinalCheck, Safety, Spend, StopReason, Summary, TestCount};
use swarm_analysis::{FileMetrics, Severity};
use timing::{Stage, StageClock};

/// Everything a run needs besides the model.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The target folder (exists; the CLI checked).
    pub target: PathBuf,
    pub max_iterations: u32,
    pub limits: Limits,
    pub log_file: PathBuf,
    pub dry_run: bool,
    pub allow_test_edits: bool,
    /// Ask the Tester for tests of untested plan files before the Fixer
    /// (`--no-generate-tests` turns it off).
    pub generate_tests: bool,
    /// Send the secrets of the code under work to the model as they are
    /// (`--allow-secrets`); otherwise placeholders stand in for them in
    /// every prompt and log entry (see [`crate::secrets`]).
    pub allow_secrets: bool,
    pub size_limits: SizeLimits,
    pub bootstrap: bool,
    /// `--install-deps`: run the tools in the project's declared
    /// environment, built in swarm's cache (see [`crate::tools::declared_env`]).
    pub install_deps: bool,
    /// Concurrent model calls.
    pub jobs: usize,
    pub max_tokens_total: Option<u64>,
    pub max_cost: Option<f64>,
    /// Secrets to mask in the log (API keys); `Debug` never shows them.
    pub secrets: Vec<Secret>,
    /// Prices per model (built-in, with config overrides).
    pub prices: PriceTable,
    /// swarm's cache folder (`SWARM_CACHE_DIR`, else `<user cache>/swarm`);
    /// run worktrees live under it. `None` when there is none.
    pub cache_dir: Option<PathBuf>,
    /// How long to wait for another run on the same repository.
    pub lock_timeout: std::time::Duration,
    /// What confines pytest, pylint and the import checks (`writable` is
    /// filled in with the run's worktree).
    pub sandbox: SandboxPolicy,
    /// Prompt allowances and the declared context window.
    pub budget: BudgetSettings,
    /// The endpoint to check once the repository is known to be usable and
    /// before the tool environment or the audit (`None`: `--no-preflight`,
    /// recorded replies, the demo).
    pub preflight: Option<ProviderConfig>,
    /// Where proposals come from: the model, or ruff (`--offline`).
    pub proposals: ProposalSource,
    /// Refactoring on request (`--task`): the instruction planned as
    /// tasks; `None` repairs what tests and lint point at.
    pub task: Option<crate::pipeline::Instruction>,
}

/// What every stage call of a run shares: settings, the model, where to
/// report, the interrupt flag, the Python tools, and the target folder in
/// the worktree.
#[derive(Clone, Copy)]
pub(crate) struct RunContext<'a> {
    pub config: &'a RunConfig,
    pub model: &'a Arc<dyn ChatModel>,
    pub events: &'a dyn EventSink,
    pub cancel: &'a Cancel,
    pub env: &'a Toolchain,
    /// The suites of the target's languages (see [`crate::lang::Suite`]).
    pub suites: &'a [Box<dyn crate::lang::Suite>],
    /// What every tool process of the run is confined by.
    pub sandbox: &'a Sandbox,
    pub root: &'a std::path::Path,
    /// How big each kind of request may be.
    pub budget: &'a Budget,
}

impl RunContext<'_> {
    /// What the Judge measures with, telling each tool run as a step of
    /// `stage` ("audit", "judging attempt 3 (stats.py)").
    pub(crate) fn tools<'b>(&'b self, stage: &'b str) -> judge::Tools<'b> {
        judge::Tools {
            env: self.env,
            sandbox: self.sandbox,
            events: self.events,
            stage,
            known: None,
            suites: self.suites,
        }
    }

    /// [`Self::tools`], with the worktree's files known by their blob ids
    /// (see [`crate::stage::executor::worktree_content`]).
    pub(crate) fn tools_knowing<'k>(
        &'k self,
        stage: &'k str,
        known: &'k crate::tools::KnownContent,
    ) -> judge::Tools<'k> {
        judge::Tools {
            known: Some(known),
            ..self.tools(stage)
        }
    }
}

/// What the run knows while it loops, by concern: what it works on, what
/// is left to do, what was tried, what was spent.
pub(crate) struct RunState {
    pub facts: Facts,
    pub work: Work,
    pub progress: Progress,
    pub spend: Spend,
}

/// What the run works on: settled by the audit (an accepted change that
/// adds a Python file adds it to `files`).
pub(crate) struct Facts {
    pub run_id: String,
    pub model_id: String,
    /// The target folder in the repository.
    pub target: TargetDir,
    pub files: Vec<String>,
    /// Submodules under the target, target-relative: not ours to change.
    pub submodules: Vec<String>,
    /// The audit's metrics of each file (the plan's ranking reads them).
    pub metrics: BTreeMap<String, FileMetrics>,
    pub severities: BTreeMap<String, Severity>,
    pub baseline: Snapshot,
    /// What the run's states are held to (green, better), fixed by the
    /// baseline: every verdict of the run asks it.
    pub bar: Bar,
    /// Which files are tests: what the project's pytest configuration and
    /// the baseline's collection say (see [`TestFiles`]).
    pub tests: TestFiles,
}

impl Facts {
    /// The files that are not tests (target-relative).
    pub(crate) fn sources(&self) -> Vec<String> {
        self.files
            .iter()
            .filter(|f| !self.tests.contains(f))
            .cloned()
            .collect()
    }
}

/// What is left to do: the plan, how far plans reached, and what the model
/// found nothing to change in.
#[derive(Default)]
pub(crate) struct Work {
    pub plan: Plan,
    /// What plans and Fixer prompts have looked at.
    pub coverage: plan::Coverage,
    /// Plan files that still want an accepted attempt, with tries so far.
    pub pending_plan: BTreeMap<String, u32>,
    /// Files the model found nothing to change in since the best state
    /// last moved: not asked about again until it does.
    pub declined: BTreeSet<String>,
    /// How often a repair told the model, per file, that `NO CHANGE` is no
    /// answer while failing tests reach the file, since the best state
    /// last moved.
    pub pushed_back: BTreeMap<String, u32>,
    /// Rounds in a row each file was asked without an accepted attempt on
    /// it (see `stage::reach::rotate`).
    pub fruitless: BTreeMap<String, u32>,
    /// Refactoring on request (`--task`): the plan's tasks and their status.
    pub tasks: Option<task::TaskBook>,
}

/// What was tried and where it got.
pub(crate) struct Progress {
    /// The best measured state so far (the baseline at first).
    pub best: Snapshot,
    /// Earlier attempts per file, for the Fixer's prompt.
    pub history: BTreeMap<String, Vec<PastAttempt>>,
    /// The texts of files the Fixer's prompts showed, to rebase replies
    /// written against an earlier one.
    pub shown: ShownVersions,
    /// Hashes of changes already tried, so none is tried twice.
    pub seen: HashSet<String>,
    /// One commit per attempt, in order (attempt k is `commits[k - 1]`).
    pub commits: Vec<String>,
    /// Rounds run so far.
    pub iterations: u32,
    pub accepted: u32,
    /// Files changed by accepted attempts.
    pub touched: BTreeSet<RepoPath>,
    /// What verified the last accepted change to each file (target-relative).
    pub verified: BTreeMap<String, crate::stage::judge::behaviour::Verification>,
    /// The Tester's work per module (target-relative), kept tests or not.
    pub generated: BTreeMap<String, crate::stage::tester::Generated>,
    /// Test files the Tester committed: swarm's own, so the final check
    /// does not put them back to the base commit.
    pub generated_files: BTreeSet<RepoPath>,
    /// Hunks left out of accepted attempts that tried part of a proposal.
    pub left_out: Vec<summary::LeftOutHunk>,
    /// The forms of the Fixer's replies and the ones not used.
    pub replies: summary::Replies,
    /// Tests no Fixer is shown, that judge the attempts they apply to (see
    /// [`crate::stage::tester::held_out`]).
    pub held_out: Vec<crate::stage::tester::held_out::HeldOut>,
    /// Attempts that passed the visible tests and failed held-out ones.
    pub overfitted: Vec<crate::stage::tester::held_out::Overfit>,
    /// Attempts that answered the failing tests' inputs with literals.
    pub hard_coded: Vec<crate::stage::judge::answers::HardCoded>,
    /// The reference of each module that did not compile (target-relative).
    pub references: BTreeMap<String, crate::stage::repair::Reference>,
    /// Modules that did not compile and got no reference.
    pub unreferenced: BTreeSet<String>,
}

impl Progress {
    fn starting_at(best: Snapshot) -> Self {
        Self {
            best,
            history: BTreeMap::new(),
            shown: ShownVersions::default(),
            seen: HashSet::new(),
            commits: Vec::new(),
            iterations: 0,
            accepted: 0,
            touched: BTreeSet::new(),
            verified: BTreeMap::new(),
            generated: BTreeMap::new(),
            generated_files: BTreeSet::new(),
            left_out: Vec::new(),
            replies: Default::default(),
            held_out: Vec::new(),
            overfitted: Vec::new(),
            hard_coded: Vec::new(),
            references: BTreeMap::new(),
            unreferenced: BTreeSet::new(),
        }
    }
}

impl RunState {
    pub(crate) fn add_usage(&mut self, usage: &Usage, prices: &PriceTable) {
        self.spend.input += usage.input_tokens;
        self.spend.output += usage.output_tokens;
        self.spend.total = self.spend.input + self.spend.output;
        self.spend.calls += 1;
        if let Some(cost) = prices.cost(&self.facts.model_id, usage) {
            *self.spend.cost_usd.get_or_insert(0.0) += cost;
        }
    }

    fn is_done(&self) -> bool {
        self.facts.bar.is_green(&self.progress.best) && self.work.pending_plan.is_empty()
    }

    /// Whether the target-relative `file` still holds the text the audit's
    /// metrics were made from: no accepted change and no generated test
    /// wrote it (see `Progress::touched`).
    pub(crate) fn unchanged_since_audit(&self, file: &str) -> bool {
        let repo = self.facts.target.repo_path(file);
        !self.progress.touched.contains(&repo)
    }
}

/// Runs the whole pipeline on `config.target`.
pub async fn run(
    config: &RunConfig,
    model: Arc<dyn ChatModel>,
    events: &dyn EventSink,
    cancel: &Cancel,
) -> Result<Summary, SwarmError> {
    let clock = StageClock::start();
    let budget = Budget::new(&config.budget, model.model())
        .map_err(|e| SwarmError::invalid(e.to_string()))?;
    let model: Arc<dyn ChatModel> = match budget.window {
        Some(window) => Arc::new(Windowed::new(model, window)),
        None => model,
    };
    let mut opened = setup::open(config, events, cancel).await?;
    let found = std::mem::take(&mut opened.suites);
    let (env, mut ws, sandbox, suites) =
        setup::start_workspace(config, &opened, found, events, cancel)?;
    let safety = safety_of(&sandbox, &suites);
    announce(events, &opened, &ws, &safety, model.model());
    let root = match opened.info.target_rel.as_str() {
        "" => ws.path().to_path_buf(),
        rel => ws.path().join(rel),
    };
    let (model, secrets) = withhold::start(config, model, &mut opened, &root, events);
    let cx = RunContext {
        config,
        model: &model,
        events,
        cancel,
        env: &env,
        suites: &suites,
        sandbox: &sandbox,
        root: &root,
        budget: &budget,
    };
    let scope = std::mem::take(&mut opened.scope);
    let run_id = scope.run_id.clone();
    let _report = crate::report::OnRunEnd::new(&config.log_file, &run_id, &config.prices, events);
    let mut rec = Recorder::new(&mut opened.log, model.model(), &run_id, clock);
    let opening = rec
        .system_start(config, &scope.files)
        .and_then(|()| rec.safety(&safety));
    let result = match opening {
        Ok(()) => drive(&cx, &mut ws, &mut rec, scope).await,
        Err(e) => Err(e),
    };
    let check = match &result {
        Ok((state, stop)) if wants_final_check(state, *stop, &ws) => {
            rec.enter(Stage::FinalCheck);
            Some(verify::final_check(&cx, &opened.repo, &ws, state, &mut rec))
        }
        _ => None,
    };
    rec.enter(Stage::Delivery);
    let _delivering = Step::start(events, "delivery");
    let (branch, best, removal) = close_workspace(ws);
    let (state, stop) = result?;
    let final_check = check.transpose()?;
    removal?;
    let ending = deliver::Ending {
        state,
        stop,
        final_check,
        safety,
        branch,
        best,
        secrets: withhold::report(secrets.as_deref()),
    };
    deliver::deliver(
        config,
        &opened.repo,
        &opened.info.head,
        ending,
        cancel,
        &mut rec,
    )
}

/// What confines the run's tools: the run's sandbox, each suite's own,
/// and swarm's own hardening.
fn safety_of(sandbox: &Sandbox, suites: &[Box<dyn crate::lang::Suite>]) -> Safety {
    let mut safety = Safety::new(sandbox.report(), crate::harden::report());
    for suite in suites {
        if let Some(report) = suite.sandbox_report() {
            let tools = format!("{}, {}", suite.runner(), suite.linter());
            safety.add_runtime(tools, report);
        }
    }
    safety
}

/// Tells the user what the run's confinement lacks, and that the run
/// started in its worktree.
fn announce(
    events: &dyn EventSink,
    opened: &setup::Opened,
    ws: &RunWorkspace,
    safety: &Safety,
    model: &str,
) {
    for line in &safety.shortfalls {
        events.emit(Event::Notice {
            message: line.clone(),
        });
    }
    events.emit(Event::Started {
        run_id: opened.scope.run_id.clone(),
        target: opened.target.clone(),
        worktree: ws.path().to_path_buf(),
        model: model.to_string(),
    });
}

/// Puts the run's worktree aside: kept as the repository's spare for the
/// next run, or removed (see `git::RunWorkspace::retire`). With the run branch (`None` when the run
/// accepted nothing: an empty run branch is not left behind, and one that
/// cannot be deleted is only clutter, not a failure), its tip, and how the
/// removal went.
fn close_workspace(
    ws: RunWorkspace,
) -> (
    Option<String>,
    crate::git::CommitId,
    Result<(), crate::git::GitError>,
) {
    let (branch, best) = (ws.best_branch(), ws.best().clone());
    let kept = !ws.forget_unmoved_best().unwrap_or(false);
    (kept.then_some(branch), best, ws.retire())
}

/// A state that would be delivered (or offered) is checked once more with
/// the base commit's harness.
fn wants_final_check(state: &RunState, stop: StopReason, ws: &RunWorkspace) -> bool {
    stop != StopReason::Interrupted && ws.best() != ws.base() && state.deliverable()
}

/// Audits, plans and runs the rounds; the state reached and why it stopped.
async fn drive(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    scope: setup::Scope,
) -> Result<(RunState, StopReason), SwarmError> {
    rec.enter(Stage::Audit);
    let mut state = audit::audit(cx, ws, rec, scope)?;
    rec.enter(Stage::Plan);
    if let Some(instruction) = &cx.config.task {
        // Refactoring on request: the instruction's tasks, not the repair plan.
        let stop = task::drive(cx, ws, rec, &mut state, instruction).await?;
        return Ok((state, stop));
    }
    if let ProposalSource::Ruff(_) = cx.config.proposals {
        plan::ruff_plan(cx, &mut state);
    } else if let Some(stop) = plan::plan_batch(cx, rec, &mut state).await? {
        return Ok((state, stop));
    }
    reference::make(cx, rec, &mut state).await?;
    tester::generate(cx, ws, rec, &mut state).await?;
    held_out::generate(cx, ws, rec, &mut state).await?;
    rec.enter(Stage::Rounds);
    let stop = rounds(cx, ws, rec, &mut state).await?;
    if stop != StopReason::Interrupted {
        tester::settle_evidence(cx, ws, rec, &mut state)?;
    }
    Ok((state, stop))
}

/// Rounds until the work is done, a limit is reached, three rounds in a row
/// accept nothing, or the run is interrupted; a later plan batch comes
/// before a round when the last plan's files are worked off.
async fn rounds(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
) -> Result<StopReason, SwarmError> {
    let config = cx.config;
    let mut idle_rounds = 0;
    loop {
        if cx.cancel.is_cancelled() {
            return Ok(StopReason::Interrupted);
        }
        let iterations = state.progress.iterations;
        let more = state.work.pending_plan.is_empty()
            && iterations < config.max_iterations
            && state.work.coverage.wants_batch(iterations);
        if more && !over_budget(config, &state.spend) {
            let back = rec.enter(Stage::Plan);
            let planned = plan::plan_batch(cx, rec, state).await?;
            rec.enter(back);
            if let Some(stop) = planned {
                return Ok(stop);
            }
        }
        if state.is_done() {
            return Ok(StopReason::Green);
        }
        if over_budget(config, &state.spend) {
            return Ok(StopReason::Budget);
        }
        if state.progress.iterations >= config.max_iterations {
            return Ok(StopReason::IterationLimit);
        }
        state.progress.iterations += 1;
        let outcome = round::run_round(cx, ws, rec, state).await?;
        if let Some(stop) = outcome.stop {
            return Ok(stop);
        }
        idle_rounds = if outcome.accepted > 0 {
            0
        } else {
            idle_rounds + 1
        };
        if idle_rounds >= 3 {
            return Ok(StopReason::NoProgress);
        }
    }
}

fn over_budget(config: &RunConfig, spend: &Spend) -> bool {
    config
        .max_tokens_total
        .is_some_and(|max| spend.total >= max)
        || config
            .max_cost
            .is_some_and(|max| spend.cost_usd.is_some_and(|c| c >= max))
}

/// `20261122-101500-7f3a`.
pub fn new_run_id() -> String {
    format!(
        "{}-{:04x}",
        chrono::Local::now().format("%Y%m%d-%H%M%S"),
        fastrand::u16(..)
    )
}

/// Awaits `fut` unless the run is interrupted first.
pub(crate) async fn cancellable<F: std::future::Future>(
    cancel: &Cancel,
    fut: F,
) -> Result<F::Output, SwarmError> {
    tokio::pin!(fut);
    loop {
        tokio::select! {
            out = &mut fut => return Ok(out),
            _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => {
                if cancel.is_cancelled() {
                    return Err(SwarmError::interrupted());
                }
            }
        }
    }
}
