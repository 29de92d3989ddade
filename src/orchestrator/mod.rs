//! The loop: sets up the run (repository, tools, worktree), audits, plans,
//! runs at most `max_iterations` Fixer→Reviewer→Executor→Judge rounds keeping
//! the best state, and delivers it. Stages are called here and nowhere else.

mod record;
mod round;
pub mod summary;
mod verify;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use crate::analysis::Severity;
use crate::cancel::Cancel;
use crate::error::{ExitKind, SwarmError};
use crate::git::{FastForward, Repo, RepoLock, RunWorkspace};
use crate::llm::{ChatModel, PriceTable, Usage};
use crate::log::{Event, EventSink, ExperimentLog};
use crate::stage::judge::{self, Limits, Snapshot};
use crate::stage::planner::Plan;
use crate::stage::prompt::PastAttempt;
use crate::stage::reviewer::SizeLimits;
use crate::stage::{auditor, prompt};
use crate::tools::{self, PythonEnv, Sandbox, SandboxPolicy};
use record::Recorder;
pub use summary::{Delivery, Spend, StopReason, Summary, TestCount};
pub use verify::FinalCheck;

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
    pub size_limits: SizeLimits,
    pub bootstrap: bool,
    /// Concurrent model calls.
    pub jobs: usize,
    pub max_tokens_total: Option<u64>,
    pub max_cost: Option<f64>,
    /// Secrets to mask in the log (API keys).
    pub secrets: Vec<String>,
    /// Prices per model (built-in, with config overrides).
    pub prices: PriceTable,
    /// swarm's cache folder (`SWARM_CACHE_DIR`, else `<user cache>/swarm`);
    /// run worktrees live under it. `None` when there is none.
    pub cache_dir: Option<PathBuf>,
    /// How long to wait for another run on the same repository.
    pub lock_timeout: std::time::Duration,
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
    pub env: &'a PythonEnv,
    /// What every tool process of the run is confined by.
    pub sandbox: &'a Sandbox,
    pub root: &'a std::path::Path,
}

/// What the run knows while it loops.
pub(crate) struct RunState {
    pub run_id: String,
    pub model_id: String,
    pub target_rel: String,
    pub files: Vec<String>,
    pub severities: BTreeMap<String, Severity>,
    pub plan: Plan,
    pub baseline: Snapshot,
    pub best: Snapshot,
    pub history: BTreeMap<String, Vec<PastAttempt>>,
    pub seen: HashSet<String>,
    /// Plan files that still want an accepted attempt, with tries so far.
    pub pending_plan: BTreeMap<String, u32>,
    /// Rounds run so far.
    pub iterations: u32,
    pub accepted: u32,
    /// One commit per attempt, in order (attempt k is `commits[k - 1]`).
    pub commits: Vec<String>,
    /// Repo-relative files changed by accepted attempts.
    pub touched: BTreeSet<String>,
    pub spend: Spend,
}

impl RunState {
    pub(crate) fn add_usage(&mut self, usage: &Usage, prices: &PriceTable) {
        self.spend.input += usage.input_tokens;
        self.spend.output += usage.output_tokens;
        self.spend.total = self.spend.input + self.spend.output;
        self.spend.calls += 1;
        if let Some(cost) = prices.cost(&self.model_id, usage) {
            *self.spend.cost_usd.get_or_insert(0.0) += cost;
        }
    }

    fn is_done(&self) -> bool {
        self.best.is_green(self.baseline.pylint) && self.pending_plan.is_empty()
    }
}

/// Runs the whole pipeline on `config.target`.
pub async fn run(
    config: &RunConfig,
    model: Arc<dyn ChatModel>,
    events: &dyn EventSink,
    cancel: &Cancel,
) -> Result<Summary, SwarmError> {
    let target = config.target.canonicalize().map_err(|e| {
        SwarmError::invalid(format!("cannot open {}: {e}", config.target.display()))
    })?;
    let repo = match Repo::open(&target)? {
        Some(repo) => repo,
        None => {
            let repo = Repo::init_with_baseline(
                &target,
                "swarm: baseline of the files before refactoring",
            )?;
            events.emit(Event::Notice {
                message: format!(
                    "{} was not in a git repository: initialised one there with a baseline commit of its files",
                    target.display()
                ),
            });
            repo
        }
    };
    repo.check_run_refs_possible()?;
    let cache_dir = config.cache_dir.as_deref().ok_or_else(|| {
        SwarmError::invalid("no cache folder for the run's worktree: set SWARM_CACHE_DIR (or HOME)")
    })?;
    let worktrees_root = repo.worktrees_root(cache_dir)?;
    let run_id = new_run_id();
    let _run_lock = tokio::task::block_in_place(|| {
        RepoLock::acquire(
            &repo.info().common_dir,
            &run_id,
            config.lock_timeout,
            &|holder| {
                events.emit(Event::Notice {
                    message: format!(
                        "another run ({holder}) is working on this repository: waiting up to {} s for it (--lock-timeout)",
                        config.lock_timeout.as_secs()
                    ),
                })
            },
            &|| cancel.is_cancelled(),
        )
    })?;
    // Reopen under the lock: HEAD may have moved while we waited.
    let repo = Repo::open(&target)?.ok_or_else(|| {
        SwarmError::git(format!(
            "{} is no longer in a git repository",
            target.display()
        ))
    })?;
    let info = repo.info().clone();
    let tracked = repo.tracked_files()?;
    let files = auditor::python_files(&tracked, &info.target_rel);
    if files.is_empty() {
        return Err(SwarmError::invalid(format!(
            "no committed Python files under {}: point --target_dir at a folder with .py files tracked by git",
            target.display()
        )));
    }
    let prefix = if info.target_rel.is_empty() {
        String::new()
    } else {
        format!("{}/", info.target_rel)
    };
    let dirty: Vec<String> = repo
        .dirty_paths()?
        .into_iter()
        .filter(|p| p.starts_with(&prefix))
        .collect();
    if !dirty.is_empty() {
        events.emit(Event::Notice {
            message: format!(
                "{} file(s) under the target have uncommitted changes; the run starts from the committed state (HEAD {}) and leaves them alone",
                dirty.len(),
                info.head.short()
            ),
        });
    }
    let pruned = repo.prune_stale_runs(&worktrees_root)?;
    if !pruned.is_empty() {
        events.emit(Event::Notice {
            message: format!(
                "removed worktrees left by interrupted runs: {}",
                pruned.join(", ")
            ),
        });
    }
    let progress = |m: &str| {
        events.emit(Event::Notice {
            message: m.to_string(),
        })
    };
    let env =
        tokio::task::block_in_place(|| tools::resolve_env(&target, config.bootstrap, &progress))?;

    let mut log =
        ExperimentLog::open(&config.log_file).map_err(|e| SwarmError::invalid(e.to_string()))?;
    for s in &config.secrets {
        log.mask(s);
    }
    for repair in log.repairs() {
        events.emit(Event::Notice {
            message: repair.to_string(),
        });
    }
    let mut ws = tokio::task::block_in_place(|| {
        RunWorkspace::create(&repo, &worktrees_root, &run_id, &info.head)
    })?;
    if !ws.empty_submodules().is_empty() {
        events.emit(Event::Notice {
            message: format!(
                "submodule(s) not initialised in your checkout stay empty in the run: {} (git submodule update --init fills them)",
                ws.empty_submodules().join(", ")
            ),
        });
    }
    let sandbox = match tokio::task::block_in_place(|| {
        Sandbox::new(SandboxPolicy::for_worktree(ws.path()), &env)
    }) {
        Ok(sandbox) => sandbox,
        Err(e) => {
            // Nothing else holds the worktree yet: take it away again.
            let _ = ws.remove();
            return Err(e.into());
        }
    };
    for shortfall in sandbox.report().shortfalls() {
        events.emit(Event::Notice { message: shortfall });
    }
    events.emit(Event::Started {
        run_id: run_id.clone(),
        target: target.clone(),
        worktree: ws.path().to_path_buf(),
        model: model.model().to_string(),
    });
    let mut rec = Recorder::new(&mut log, model.model(), &run_id);
    let root = if info.target_rel.is_empty() {
        ws.path().to_path_buf()
    } else {
        ws.path().join(&info.target_rel)
    };
    let cx = RunContext {
        config,
        model: &model,
        events,
        cancel,
        env: &env,
        sandbox: &sandbox,
        root: &root,
    };
    let result = drive(&cx, &mut ws, &mut rec, &run_id, &info.target_rel, files).await;
    let check = match &result {
        Ok((state, stop)) if wants_final_check(state, *stop, &ws) => {
            Some(verify::final_check(&cx, &repo, &ws, state, &mut rec))
        }
        _ => None,
    };
    let removal = ws.remove();
    let (state, stop) = result?;
    let check = check.transpose()?;
    removal?;
    deliver(config, &repo, &info.head, &state, stop, check, cancel, &mut rec)
}

/// A state that would be delivered (or offered) is checked once more with
/// the base commit's harness.
fn wants_final_check(state: &RunState, stop: StopReason, ws: &RunWorkspace) -> bool {
    stop != StopReason::Interrupted
        && ws.best() != ws.base()
        && state.best.is_green(state.baseline.pylint)
}

async fn drive(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    run_id: &str,
    target_rel: &str,
    files: Vec<String>,
) -> Result<(RunState, StopReason), SwarmError> {
    let RunContext {
        config,
        model,
        events,
        cancel,
        env,
        sandbox,
        root,
    } = *cx;
    rec.system_start(config, &files)?;
    let metrics = auditor::measure_files(root, &files);
    rec.metrics(&metrics)?;
    let baseline = tokio::task::block_in_place(|| {
        judge::measure(env, sandbox, root, &files, config.limits, cancel, None)
    })?;
    rec.measurement(crate::log::Agent::Auditor, &baseline, None)?;
    let snapshot = baseline.snapshot;
    events.emit(Event::Audited {
        files: files.len(),
        tests_passed: snapshot.counts().0,
        tests_total: snapshot.counts().1,
        no_tests: !snapshot.has_tests(),
        pylint: snapshot.pylint,
    });
    let severities: BTreeMap<String, Severity> = files
        .iter()
        .map(|f| {
            let lint = auditor::lint_for(&snapshot.lint.messages, f);
            (f.clone(), auditor::severity(metrics.get(f), &lint))
        })
        .collect();

    let texts: BTreeMap<String, String> = files
        .iter()
        .filter(|f| !crate::stage::is_test_path(f))
        .filter_map(|f| {
            crate::stage::read_source_text(root, f).map(|text| (f.clone(), text))
        })
        .collect();
    let failing = snapshot
        .tests
        .as_ref()
        .map(|t| t.failing.clone())
        .unwrap_or_default();
    let plan_input = prompt::PlanInput {
        files: texts
            .iter()
            .filter_map(|(f, text)| {
                let m = metrics.get(f)?;
                Some((
                    f.as_str(),
                    text.as_str(),
                    m,
                    auditor::lint_for(&snapshot.lint.messages, f),
                ))
            })
            .collect(),
        pylint_score: snapshot.pylint,
        tests_summary: snapshot.describe(),
        failing: &failing,
    };
    let request = prompt::plan_request(&plan_input);
    let (call, reply) =
        round::cancellable(cancel, crate::stage::call_model(model.as_ref(), request)).await?;
    rec.model_call(
        crate::log::Agent::Auditor,
        crate::log::Action::CodeAnalysis,
        &call,
        None,
        None,
    )?;
    let mut state = RunState {
        run_id: run_id.to_string(),
        model_id: model.model().to_string(),
        target_rel: target_rel.to_string(),
        files,
        severities,
        plan: Plan::default(),
        baseline: snapshot.clone(),
        best: snapshot,
        history: BTreeMap::new(),
        seen: HashSet::new(),
        pending_plan: BTreeMap::new(),
        iterations: 0,
        accepted: 0,
        commits: Vec::new(),
        touched: BTreeSet::new(),
        spend: Spend::default(),
    };
    let reply = match reply {
        Ok(r) => r,
        Err(e) => {
            events.emit(Event::Notice {
                message: format!("the model could not write the plan: {e}"),
            });
            return Ok((state, StopReason::ModelFailure));
        }
    };
    state.add_usage(&reply.usage, &config.prices);
    let source_files: Vec<String> = texts.keys().cloned().collect();
    state.plan = Plan::parse(&reply.text, &source_files);
    state.pending_plan = state.plan.items.keys().map(|f| (f.clone(), 0)).collect();
    events.emit(Event::Planned {
        files: state.plan.items.keys().cloned().collect(),
    });

    let mut idle_rounds = 0;
    let stop = loop {
        if cancel.is_cancelled() {
            break StopReason::Interrupted;
        }
        if state.is_done() {
            break StopReason::Green;
        }
        if over_budget(config, &state.spend) {
            break StopReason::Budget;
        }
        if state.iterations >= config.max_iterations {
            break StopReason::IterationLimit;
        }
        state.iterations += 1;
        let outcome = round::run_round(cx, ws, rec, &mut state).await?;
        if let Some(stop) = outcome.stop {
            break stop;
        }
        idle_rounds = if outcome.accepted > 0 {
            0
        } else {
            idle_rounds + 1
        };
        if idle_rounds >= 3 {
            break StopReason::NoProgress;
        }
    };
    Ok((state, stop))
}

fn over_budget(config: &RunConfig, spend: &Spend) -> bool {
    config
        .max_tokens_total
        .is_some_and(|max| spend.total >= max)
        || config
            .max_cost
            .is_some_and(|max| spend.cost_usd.is_some_and(|c| c >= max))
}

/// Fast-forwards (or not) and builds the summary.
fn deliver(
    config: &RunConfig,
    repo: &Repo,
    start: &crate::git::CommitId,
    state: &RunState,
    stop: StopReason,
    final_check: Option<FinalCheck>,
    cancel: &Cancel,
    rec: &mut Recorder<'_>,
) -> Result<Summary, SwarmError> {
    let branch = format!("swarm/{}/best", state.run_id);
    let command = format!("git merge --ff-only {branch}");
    let green = state.best.is_green(state.baseline.pylint)
        && final_check.as_ref().is_none_or(|check| check.passed);
    let best_tip = repo.branch_tip(&branch)?.unwrap_or_else(|| start.clone());
    let interrupted = stop == StopReason::Interrupted || cancel.is_cancelled();
    let delivery = if interrupted {
        Delivery::Left {
            reason: "the run was interrupted".into(),
            command: command.clone(),
        }
    } else if !green {
        Delivery::NotAccepted
    } else if &best_tip == start {
        Delivery::Unchanged
    } else if config.dry_run {
        Delivery::Left {
            reason: "dry run: the target was not updated".into(),
            command: command.clone(),
        }
    } else {
        let touched: Vec<String> = state.touched.iter().cloned().collect();
        // The merge cannot be interrupted half way (see git::fastforward);
        // a Ctrl-C that arrives during it takes effect after it.
        let outcome =
            tokio::task::block_in_place(|| repo.fast_forward(start, &best_tip, &branch, &touched))?;
        match outcome {
            FastForward::Updated {
                branch, to, undo, ..
            } => Delivery::Updated {
                branch,
                commit: to.0,
                undo,
            },
            FastForward::NothingToDo => Delivery::Unchanged,
            FastForward::Skipped { reason, command } => Delivery::Left { reason, command },
            FastForward::Failed { reason, command } => Delivery::Failed { reason, command },
        }
    };
    let improved = green && &best_tip != start;
    let exit = match stop {
        _ if matches!(delivery, Delivery::Failed { .. }) => ExitKind::Git,
        StopReason::Interrupted => ExitKind::Interrupted,
        _ if interrupted && !matches!(delivery, Delivery::Updated { .. }) => ExitKind::Interrupted,
        StopReason::ModelFailure if !improved => ExitKind::Llm,
        _ if green => ExitKind::Success,
        _ => ExitKind::GaveUp,
    };
    let count = |s: &Snapshot| {
        let (passed, total) = s.counts();
        TestCount { passed, total }
    };
    let summary = Summary {
        status: match exit {
            ExitKind::Git => "delivery_failed",
            ExitKind::Success => "success",
            ExitKind::Interrupted => "interrupted",
            ExitKind::Llm => "model_failure",
            _ => "gave_up",
        },
        exit_code: exit.code(),
        exit,
        run_id: state.run_id.clone(),
        branch: branch.clone(),
        stop_reason: stop,
        verified_by_tests: state.best.has_tests(),
        tests_before: count(&state.baseline),
        tests_after: count(&state.best),
        pylint_before: state.baseline.pylint,
        pylint_after: state.best.pylint,
        iterations: state.iterations,
        attempts: state.commits.len() as u32,
        accepted: state.accepted,
        commits: state.commits.clone(),
        tokens: state.spend,
        delivery,
        inspect: format!("git log {branch}"),
        log_file: config.log_file.display().to_string(),
        dry_run: config.dry_run,
        final_check,
    };
    rec.system_end(&summary)?;
    Ok(summary)
}

/// `20261122-101500-7f3a`.
pub fn new_run_id() -> String {
    format!(
        "{}-{:04x}",
        chrono::Local::now().format("%Y%m%d-%H%M%S"),
        fastrand::u16(..)
    )
}
