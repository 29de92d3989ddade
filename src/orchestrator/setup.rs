//! Setting a run up, before the Auditor: the repository (opened, or made
//! with a baseline commit), the per-repository run lock, the files to work
//! on, stale runs pruned, the experiment log, and then the Python tools, the
//! run's worktree and the sandbox its tools run in.
//!
//! Everything that can refuse the run refuses here, before any model call.
//! The checkout of the worktree (which writes every file of the tree) and
//! the interpreter's start-ups (the environment probe, then the sandbox's
//! layer probes) do not wait for each other: they run side by side.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::RunConfig;
use crate::cancel::Cancel;
use crate::error::{ExitKind, SwarmError};
use crate::git::{Repo, RepoInfo, RepoLock, RunWorkspace};
use crate::lang::{self, Toolchain};
use crate::llm::Preflight;
use crate::log::{Event, EventSink, ExperimentLog};
use crate::pipeline::TargetDir;
use crate::tools::memo::ProbeMemo;
use crate::tools::{self, Sandbox};

/// What the run works on.
#[derive(Default)]
pub(crate) struct Scope {
    pub run_id: String,
    /// The target folder in the repository.
    pub target: TargetDir,
    /// Python files under the target in HEAD's tree, target-relative.
    pub files: Vec<String>,
    /// Submodule paths under the target, target-relative: not ours to change.
    pub submodules: Vec<String>,
}

/// What a run holds from its start to its end.
pub(crate) struct Opened {
    pub scope: Scope,
    /// The target folder, canonical.
    pub target: PathBuf,
    pub repo: Repo,
    /// The repository as it was when the lock was taken.
    pub info: RepoInfo,
    pub log: ExperimentLog,
    /// The suites of the target's languages, found (their tools and
    /// installed dependencies checked) before any model call; prepared
    /// with the worktree.
    pub suites: lang::FoundSuites,
    /// Where this repository's run worktrees live.
    pub worktrees_root: PathBuf,
    /// Held until the run ends: one run per repository at a time.
    _lock: RepoLock,
}

/// Opens the repository under its run lock, checks the model endpoint
/// (the preflight: after the repository's own checks, so bad input is
/// reported first, and before the tool environment and the audit), and
/// prepares the tools and log.
pub(crate) async fn open(
    config: &RunConfig,
    events: &dyn EventSink,
    cancel: &Cancel,
) -> Result<Opened, SwarmError> {
    let notice = |message: String| events.emit(Event::Notice { message });
    let target = config.target.canonicalize().map_err(|e| {
        SwarmError::invalid(format!("cannot open {}", config.target.display())).caused_by(e)
    })?;
    let repo = open_or_init(&target, &notice)?;
    repo.check_run_refs_possible()?;
    let cache_dir = config.cache_dir.as_deref().ok_or_else(|| {
        SwarmError::invalid("no cache folder for the run's worktree: set SWARM_CACHE_DIR (or HOME)")
    })?;
    let worktrees_root = repo.worktrees_root(cache_dir)?;
    let run_id = super::new_run_id();
    let lock = lock_repo(&repo, &run_id, config, &notice, cancel)?;
    // Reopen under the lock: HEAD may have moved while we waited.
    let repo = Repo::open(&target)?.ok_or_else(|| {
        SwarmError::git(format!(
            "{} is no longer in a git repository",
            target.display()
        ))
    })?;
    let info = repo.info().clone();
    let (files, submodules) = sources_and_submodules(&repo, &info, &target)?;
    let suites =
        lang::FoundSuites::find(&target, &info.root, &files).map_err(SwarmError::invalid)?;
    if let Some(provider) = &config.preflight {
        if let Preflight::Doubtful(note) = crate::llm::preflight(provider).await? {
            notice(note);
        }
    }
    let pruned = repo.prune_stale_runs(&worktrees_root)?;
    if !pruned.is_empty() {
        notice(format!(
            "removed worktrees left by interrupted runs: {}",
            pruned.join(", ")
        ));
    }
    let log = open_log(config, &notice)?;
    Ok(Opened {
        scope: Scope {
            run_id,
            target: TargetDir::new(info.target_rel.as_str()),
            files,
            submodules,
        },
        target,
        repo,
        info,
        log,
        suites,
        worktrees_root,
        _lock: lock,
    })
}

/// Waits for (then holds) the repository's run lock, telling the user
/// whose run it waits for.
fn lock_repo(
    repo: &Repo,
    run_id: &str,
    config: &RunConfig,
    notice: &dyn Fn(String),
    cancel: &Cancel,
) -> Result<RepoLock, SwarmError> {
    Ok(tokio::task::block_in_place(|| {
        RepoLock::acquire(
            &repo.info().common_dir,
            run_id,
            config.lock_timeout,
            &|holder| {
                notice(format!(
                    "another run ({holder}) is working on this repository: waiting up to {} s for it (--lock-timeout)",
                    config.lock_timeout.as_secs()
                ))
            },
            &|| cancel.is_cancelled(),
        )
    })?)
}

/// The target's committed source files of the languages swarm knows (at
/// least one) and its submodules, target-relative.
fn sources_and_submodules(
    repo: &Repo,
    info: &RepoInfo,
    target: &Path,
) -> Result<(Vec<String>, Vec<String>), SwarmError> {
    let target_dir = TargetDir::new(info.target_rel.as_str());
    let files = lang::sources(&repo.tracked_files()?, &target_dir);
    if files.is_empty() {
        return Err(SwarmError::invalid(lang::no_sources(target)));
    }
    let submodules = repo
        .submodule_paths()?
        .iter()
        .filter_map(|p| target_dir.relative(p).map(str::to_string))
        .collect();
    Ok((files, submodules))
}

/// The experiment log, masking the run's secrets, with any repair it made
/// told to the user.
fn open_log(config: &RunConfig, notice: &dyn Fn(String)) -> Result<ExperimentLog, SwarmError> {
    let mut log = ExperimentLog::open(&config.log_file).map_err(|e| {
        let mut err = SwarmError::from(e);
        err.kind = ExitKind::InvalidInput;
        err
    })?;
    for secret in &config.secrets {
        log.mask(secret.expose());
    }
    for repair in log.repairs() {
        notice(repair.to_string());
    }
    Ok(log)
}

/// What [`start_workspace`] makes: the interpreter's tools, the worktree,
/// the sandbox, and the languages' suites prepared in the worktree.
pub(crate) type Started = (
    Arc<Toolchain>,
    RunWorkspace,
    Arc<Sandbox>,
    Vec<Box<dyn lang::Suite>>,
);

/// The toolchain of the target's languages, the run's worktree at HEAD and the sandbox confining
/// the tools to it. The worktree is checked out while the interpreter is
/// probed; when the tools cannot be had, the worktree and its run branch
/// are taken away again and the tools' error is the run's.
pub(crate) fn start_workspace(
    config: &RunConfig,
    opened: &Opened,
    suites: lang::FoundSuites,
    events: &dyn EventSink,
    cancel: &Cancel,
) -> Result<Started, SwarmError> {
    let notice = |message: String| events.emit(Event::Notice { message });
    let planned =
        RunWorkspace::planned_path(&opened.repo, &opened.worktrees_root, &opened.scope.run_id)?;
    let (tools, ws) = tokio::task::block_in_place(|| {
        std::thread::scope(|scope| {
            let checkout = scope.spawn(|| {
                RunWorkspace::create(
                    &opened.repo,
                    &opened.worktrees_root,
                    &opened.scope.run_id,
                    &opened.info.head,
                )
            });
            // The user's uncommitted files are counted meanwhile too (a
            // status of the whole working tree).
            let uncommitted =
                scope.spawn(|| uncommitted_under_target(&opened.repo, &opened.scope.target));
            let tools = interpreter_tools(config, opened, &planned, &notice);
            let ws = joined(checkout, "create the run worktree");
            let uncommitted = joined(uncommitted, "read the status of the working tree");
            let tools = tools.and_then(|made| {
                tell_about_uncommitted(uncommitted?, &opened.info, &notice);
                Ok(made)
            });
            (tools, ws)
        })
    });
    let tools = match (tools, &ws) {
        (Ok((env, sandbox)), Ok(ws)) => {
            let (env, sandbox) = (Arc::new(env), Arc::new(sandbox));
            let run = (config, opened, ws, &env, &sandbox);
            prepare_suites(run, suites, events, cancel).map(|s| (env, sandbox, s))
        }
        (tools, _) => tools.map(|(env, sandbox)| (Arc::new(env), Arc::new(sandbox), Vec::new())),
    };
    match (tools, ws) {
        (Ok((env, sandbox, suites)), Ok(mut ws)) => {
            announce_empty_submodules(&ws, &notice);
            keep_laid(&mut ws, &suites);
            Ok((env, ws, sandbox, suites))
        }
        (Err(e), Ok(ws)) => {
            // Nothing else holds the worktree yet: put it aside again, as
            // the spare the next run starts from once the tools are there
            // (its scratch folder, where the sandbox was made, goes).
            let _ = ws.forget_unmoved_best();
            let _ = ws.retire();
            Err(e)
        }
        (made, Err(git)) => {
            let error = match made {
                Ok(made) => {
                    drop(made);
                    SwarmError::from(git)
                }
                Err(e) => e,
            };
            // The sandbox's scratch folder, unless another run's folder
            // stands where this run's should have been.
            if !planned.exists() {
                let _ = std::fs::remove_dir_all(RunWorkspace::scratch_dir_of(&planned));
            }
            Err(error)
        }
    }
}

/// The interpreter's tools (found, or made in swarm's cache) and the
/// sandbox around them, writable the worktree planned at `planned`.
fn interpreter_tools(
    config: &RunConfig,
    opened: &Opened,
    planned: &Path,
    notice: &dyn Fn(String),
) -> Result<(Toolchain, Sandbox), SwarmError> {
    let progress = |m: &str| notice(m.to_string());
    let env = if config.install_deps {
        let settings = tools::EnvSettings::from_env();
        tools::declared_env(&opened.target, &opened.info.root, &settings, &progress)
    } else {
        tools::resolve_env(&opened.target, config.bootstrap, &progress)
    }?;
    let policy = run_policy(config, planned);
    let memo = config.cache_dir.as_deref().map(ProbeMemo::new);
    let mut sandbox = Sandbox::remembering(policy, &env, memo.as_ref())?;
    // The worktree stands for the user's checkout: an editable install's
    // paths into it are moved to the worktree when the tools run.
    sandbox.set_checkout(&opened.info.root);
    Ok((env, sandbox))
}

/// The run's sandbox policy for every tool: the user's settings, writable
/// the run's worktree at `worktree`, cells in its scratch folder.
fn run_policy(config: &RunConfig, worktree: &Path) -> crate::tools::SandboxPolicy {
    let mut policy = config.sandbox.clone();
    policy.writable = vec![worktree.to_path_buf()];
    policy.scratch_parent = Some(RunWorkspace::scratch_dir_of(worktree));
    policy
}

/// Keeps the folders the suites laid in the worktree across its resets.
fn keep_laid(ws: &mut RunWorkspace, suites: &[Box<dyn lang::Suite>]) {
    let folders = suites
        .iter()
        .flat_map(|s| s.laid())
        .filter_map(|p| p.strip_prefix(ws.path()).ok())
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .collect();
    ws.keep_untracked(folders);
}

/// The suites of the target's languages, prepared in the run's worktree
/// with the run's interpreter and sandbox (a suite with its own sandbox
/// gets the same policy, writable the worktree).
fn prepare_suites(
    (config, opened, ws, env, sandbox): (
        &RunConfig,
        &Opened,
        &RunWorkspace,
        &Arc<Toolchain>,
        &Arc<Sandbox>,
    ),
    suites: lang::FoundSuites,
    events: &dyn EventSink,
    cancel: &Cancel,
) -> Result<Vec<Box<dyn lang::Suite>>, SwarmError> {
    let policy = run_policy(config, ws.path());
    let progress = |m: &str| {
        events.emit(Event::Notice {
            message: m.to_string(),
        })
    };
    // Unreadable, nothing is laid: the baseline then says what is missing.
    let ignored = opened.repo.ignored_paths().unwrap_or_default();
    let setup = lang::suite::SuiteSetup {
        checkout: &opened.info.root,
        worktree: ws.path(),
        ignored: &ignored,
        cache_dir: config.cache_dir.as_deref(),
        policy: &policy,
        toolchain: env,
        sandbox,
        progress: &progress,
        cancel,
    };
    Ok(suites.prepare(&setup)?)
}

/// Says which submodules stay empty in the worktree.
fn announce_empty_submodules(ws: &RunWorkspace, notice: &dyn Fn(String)) {
    if !ws.empty_submodules().is_empty() {
        notice(format!(
            "submodule(s) not initialised in your checkout stay empty in the run: {} (git submodule update --init fills them)",
            ws.empty_submodules().join(", ")
        ));
    }
}

/// The repository holding `target`; a folder outside any repository gets
/// one with a baseline commit of its files.
fn open_or_init(target: &Path, notice: &dyn Fn(String)) -> Result<Repo, SwarmError> {
    if let Some(repo) = Repo::open(target)? {
        return Ok(repo);
    }
    let repo = Repo::init_with_baseline(target, "swarm: baseline of the files before refactoring")?;
    notice(format!(
        "{} was not in a git repository: initialised one there with a baseline commit of its files",
        target.display()
    ));
    Ok(repo)
}

/// What a git step on its own thread gave; its panic is the step's error.
fn joined<T>(
    step: std::thread::ScopedJoinHandle<'_, Result<T, crate::git::GitError>>,
    op: &str,
) -> Result<T, crate::git::GitError> {
    step.join().unwrap_or_else(|_| {
        Err(crate::git::GitError::Unexpected {
            op: op.to_string(),
            found: "its thread panicked".to_string(),
        })
    })
}

/// How many files under the target have uncommitted changes.
fn uncommitted_under_target(
    repo: &Repo,
    target: &TargetDir,
) -> Result<usize, crate::git::GitError> {
    Ok(repo
        .dirty_paths()?
        .iter()
        .filter(|p| target.relative(p).is_some())
        .count())
}

/// Says so when `dirty` files under the target have uncommitted changes:
/// the run starts from HEAD and leaves them alone.
fn tell_about_uncommitted(dirty: usize, info: &RepoInfo, notice: &dyn Fn(String)) {
    if dirty > 0 {
        notice(format!(
            "{dirty} file(s) under the target have uncommitted changes; the run starts from the committed state (HEAD {}) and leaves them alone",
            info.head.short()
        ));
    }
}
