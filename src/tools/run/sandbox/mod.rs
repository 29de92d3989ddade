//! The sandbox every pytest, pylint and import-check process runs under.
//!
//! Code under test is hostile until proven otherwise: a `conftest.py` in the
//! target, or one a model wrote, runs with whatever power the tool has.
//! [`Sandbox::new`] makes a scratch folder, probes each layer once by
//! spawning the interpreter under it, and records what holds in a
//! [`SandboxReport`]; every tool process then runs in its own *cell* (a
//! fresh HOME and TMPDIR beneath the scratch folder, removed afterwards) with
//! the layers that are active:
//!
//! - **environment** ([`env`]): an allow-list — no keys, no credentials,
//!   HOME in the cell. Always on.
//! - **parent death** ([`child`]): SIGKILL when swarm dies, own session.
//!   Always on.
//! - **namespaces** ([`namespaces`]): user + PID + network + IPC; no network
//!   but loopback, the tool is PID 1 so nothing outlives it.
//! - **landlock** ([`landlock`]): writes only in the worktree and the cell,
//!   reads only in system folders, the interpreter's and the worktree.
//! - **limits** ([`limits`]): address space, file size, processes, CPU time,
//!   no core files.
//!
//! A layer the kernel refuses is reported `Unavailable { reason }` and the
//! others still apply; `isolate: false` (`--no-sandbox`) reports the last
//! three `Disabled`. A layer that was probed active and then fails in a
//! child makes the spawn fail — a tool never runs less confined than the
//! report says. What each layer does not cover is in its module docs.
//!
//! The environment probe and bootstrap (`resolve_env`, `pip install`) run
//! outside the sandbox: they are swarm's own, not the target's code.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::process::{Ending, ProcessBuilder};
use crate::cancel::Cancel;
use crate::tools::memo::{MemoKey, ProbeMemo};
use crate::tools::{PythonEnv, ToolError};

pub(crate) mod child;
mod env;
pub(crate) mod failure;
mod known;
mod landlock;
mod limits;
mod namespaces;
mod probe;
mod runtime;

use child::Confinement;
use env::CellDirs;
use failure::describe_spawn_error;
pub use limits::ResourceLimits;
use namespaces::NamespacePlan;
pub use runtime::Runtime;

/// Folders every tool may read (those that exist).
const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/etc",
    "/proc",
    "/sys",
    "/nix/store",
    "/dev/random",
    "/dev/urandom",
];
/// Devices every tool may read and write.
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];
/// POSIX shared memory: writable because multiprocessing keeps its
/// semaphores there (it is shared with the host; see the landlock module).
const SHARED_MEMORY: &str = "/dev/shm";

/// How long a layer probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// What the sandbox allows.
#[derive(Clone, Debug)]
pub struct SandboxPolicy {
    /// Where tools may write besides their scratch folder: the run's worktree.
    pub writable: Vec<PathBuf>,
    /// Extra folders to read; system folders and the interpreter's own are implied.
    pub readable: Vec<PathBuf>,
    /// Resource limits for every tool process.
    pub limits: ResourceLimits,
    /// `false` (`--no-sandbox`): only the environment allow-list and the
    /// parent-death signal; namespaces, Landlock and limits are off.
    pub isolate: bool,
    /// Where the scratch folder is made (created if missing); the system's
    /// temp folder when `None`.
    pub scratch_parent: Option<PathBuf>,
}

impl SandboxPolicy {
    /// Full isolation with default limits, writing only in `worktree`.
    pub fn for_worktree(worktree: impl Into<PathBuf>) -> Self {
        Self {
            writable: vec![worktree.into()],
            readable: Vec::new(),
            limits: ResourceLimits::default(),
            isolate: true,
            scratch_parent: None,
        }
    }
}

/// The state of one layer.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LayerState {
    /// Applied to every tool process.
    Active { detail: String },
    /// The kernel (or the interpreter under it) refused it.
    Unavailable { reason: String },
    /// Turned off by the user (`--no-sandbox`).
    Disabled,
}

impl LayerState {
    /// Whether the layer applies.
    pub fn is_active(&self) -> bool {
        matches!(self, LayerState::Active { .. })
    }
}

/// What holds for the code under test, layer by layer.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SandboxReport {
    pub environment: LayerState,
    pub parent_death: LayerState,
    pub namespaces: LayerState,
    pub landlock: LayerState,
    pub limits: LayerState,
}

impl SandboxReport {
    /// The two layers that are always on; the others off until probed.
    fn before_probing() -> Self {
        Self {
            environment: LayerState::Active {
                detail: "allow-list: PATH, LANG, LANGUAGE, LC_*, TZ; HOME, XDG folders and TMPDIR in a fresh scratch folder per process".to_string(),
            },
            parent_death: LayerState::Active {
                detail: "own session; SIGKILL when swarm dies".to_string(),
            },
            namespaces: LayerState::Disabled,
            landlock: LayerState::Disabled,
            limits: LayerState::Disabled,
        }
    }

    /// Every layer with its name, in a fixed order.
    pub fn layers(&self) -> [(&'static str, &LayerState); 5] {
        [
            ("environment", &self.environment),
            ("parent_death", &self.parent_death),
            ("namespaces", &self.namespaces),
            ("landlock", &self.landlock),
            ("limits", &self.limits),
        ]
    }

    /// One line per layer that does not apply, for the summary and the log
    /// (say it once per run); empty when every layer is active.
    pub fn shortfalls(&self) -> Vec<String> {
        self.layers()
            .into_iter()
            .filter_map(|(name, state)| match state {
                LayerState::Active { .. } => None,
                LayerState::Unavailable { reason } => {
                    Some(format!("sandbox layer {name} unavailable: {reason}"))
                }
                LayerState::Disabled => {
                    Some(format!("sandbox layer {name} disabled (--no-sandbox)"))
                }
            })
            .collect()
    }
}

/// The confinement every tool process of a run gets (see the module docs).
#[derive(Debug)]
pub struct Sandbox {
    runtime: Runtime,
    writable: Vec<PathBuf>,
    read_roots: Vec<PathBuf>,
    limits: ResourceLimits,
    inherited: Vec<(OsString, OsString)>,
    scratch: tempfile::TempDir,
    report: SandboxReport,
    namespaces: bool,
    landlock_abi: Option<u32>,
    limited: bool,
    cells: AtomicU64,
    /// The memo entry the layers' outcome came from or went to: a spawn
    /// that fails in a layer drops it.
    remembered: Option<PathBuf>,
    /// The user's working tree the writable worktree stands for: paths into
    /// it are moved to the worktree by the import guard (see
    /// [`crate::tools::worktree`]).
    checkout: Option<PathBuf>,
}

impl Sandbox {
    /// Makes the scratch folder and probes every layer once (each by running
    /// the interpreter under it). Fails only when the scratch folder cannot
    /// be made or the interpreter does not start even without the layers.
    pub fn new(policy: SandboxPolicy, env: &PythonEnv) -> Result<Sandbox, ToolError> {
        Self::remembering(policy, env, None)
    }

    /// [`Sandbox::new`], taking the probes' outcome from `memo` when an
    /// earlier run on this machine as it is now probed the same policy,
    /// and leaving it there otherwise (see [`known`]).
    pub(crate) fn remembering(
        policy: SandboxPolicy,
        env: &PythonEnv,
        memo: Option<&ProbeMemo>,
    ) -> Result<Sandbox, ToolError> {
        Self::around(policy, Runtime::python(env), memo)
    }

    /// [`Sandbox::new`] for another interpreter than Python's (node):
    /// the layers are probed by starting `runtime` under them.
    pub fn for_runtime(policy: SandboxPolicy, runtime: Runtime) -> Result<Sandbox, ToolError> {
        Self::around(policy, runtime, None)
    }

    /// The sandbox around `runtime` (see [`Sandbox::remembering`]).
    fn around(
        policy: SandboxPolicy,
        runtime: Runtime,
        memo: Option<&ProbeMemo>,
    ) -> Result<Sandbox, ToolError> {
        let mut builder = tempfile::Builder::new();
        builder.prefix("swarm-sandbox-");
        let scratch = match &policy.scratch_parent {
            Some(parent) => {
                std::fs::create_dir_all(parent).and_then(|()| builder.tempdir_in(parent))
            }
            None => builder.tempdir(),
        }
        .map_err(|source| ToolError::Sandbox {
            step: "cannot create a scratch folder".to_string(),
            source,
        })?;
        let absolute = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        let writable: Vec<PathBuf> = policy.writable.iter().map(absolute).collect();
        let mut read_roots: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        read_roots.extend(runtime.read.iter().cloned());
        read_roots.extend(policy.readable.iter().map(absolute));
        let mut sandbox = Sandbox {
            inherited: env::inherited(std::env::vars_os(), &runtime.program),
            runtime,
            writable,
            read_roots,
            limits: policy.limits.clone(),
            scratch,
            report: SandboxReport::before_probing(),
            namespaces: false,
            landlock_abi: None,
            limited: false,
            cells: AtomicU64::new(0),
            remembered: None,
            checkout: None,
        };
        let memo = memo.map(|memo| (memo, sandbox.memo_key(&policy)));
        let recalled = memo
            .as_ref()
            .and_then(|(memo, key)| memo.recall::<Option<known::Probed>>(key));
        let probed = match recalled {
            Some(probed) => probed,
            None => {
                let probed =
                    sandbox
                        .probe_all(policy.isolate)
                        .map_err(|problem| ToolError::Failed {
                            command: "sandbox".to_string(),
                            message: format!(
                                "{} does not start with the sandbox's environment: {problem}",
                                sandbox.runtime.program.display()
                            ),
                        })?;
                if let Some((memo, key)) = &memo {
                    memo.remember(key, &probed, vec![sandbox.runtime.program.clone()]);
                }
                probed
            }
        };
        sandbox.remembered = memo.map(|(memo, key)| memo.entry_path(&key));
        if let Some(probed) = probed {
            sandbox.take_probes(probed);
        }
        Ok(sandbox)
    }

    /// The memo key of this sandbox's probes under `policy`.
    fn memo_key(&self, policy: &SandboxPolicy) -> MemoKey {
        known::key(&known::Policy {
            isolate: policy.isolate,
            python: &self.runtime.program,
            read_roots: &self.read_roots,
            limits: format!("{:?}", self.limits),
            landlock_abi: landlock::abi_version().ok(),
        })
    }

    /// Names the user's working tree (the repository's root) that the
    /// run's worktree is a copy of: tools then import the worktree's code
    /// where the environment points into it (an editable install).
    pub fn set_checkout(&mut self, checkout: impl Into<PathBuf>) {
        self.checkout = Some(checkout.into());
    }

    /// The user's working tree the worktree stands for, when named.
    pub fn checkout(&self) -> Option<&Path> {
        self.checkout.as_deref()
    }

    /// What holds, layer by layer.
    pub fn report(&self) -> &SandboxReport {
        &self.report
    }

    /// The writable folder that holds `path` (the worktree holding a target
    /// folder), or `path` itself when none does. Tools look for
    /// configuration no higher than this.
    pub(crate) fn boundary_of(&self, path: &Path) -> PathBuf {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        self.writable
            .iter()
            .filter(|w| path.starts_with(w))
            .min_by_key(|w| w.components().count())
            .cloned()
            .unwrap_or(path)
    }

    /// The scratch folder; every tool process gets a fresh cell beneath it.
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// A fresh cell with the environment allow-list but no confinement yet.
    fn bare_cell(&self, tool: &str) -> Result<Cell, ToolError> {
        let n = self.cells.fetch_add(1, Ordering::Relaxed);
        let dir = self.scratch.path().join(format!("{n}-{tool}"));
        let dirs = CellDirs::under(&dir);
        for folder in [&dirs.home, &dirs.tmp] {
            std::fs::create_dir_all(folder).map_err(|source| ToolError::Sandbox {
                step: format!("cannot create {}", folder.display()),
                source,
            })?;
        }
        let env = env::for_cell(&self.inherited, &self.runtime.env, &dirs);
        Ok(Cell {
            dir,
            env,
            confinement: None,
        })
    }
}

/// One tool process's private scratch space and confinement.
#[derive(Debug)]
pub(crate) struct Cell {
    dir: PathBuf,
    env: Vec<(OsString, OsString)>,
    confinement: Option<Arc<Confinement>>,
}

impl Cell {
    /// A command running `program` in this cell: the cell's environment and
    /// every active layer. Set the cwd, arguments and timeout as usual.
    pub(crate) fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> ProcessBuilder {
        let builder = ProcessBuilder::new(program).base_env(self.env.iter().cloned());
        match &self.confinement {
            Some(confinement) => builder.confine(Arc::clone(confinement)),
            None => builder,
        }
    }

    /// The cell's folder (writable by the process).
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The Landlock ruleset for a process of this cell.
    fn ruleset(&self, sandbox: &Sandbox, abi: u32) -> Result<OwnedFd, ToolError> {
        let mut write = sandbox.writable.clone();
        write.push(self.dir.clone());
        write.push(PathBuf::from(SHARED_MEMORY));
        let rules = landlock::Rules {
            read: sandbox.read_roots.clone(),
            write,
            devices: DEVICES.iter().map(PathBuf::from).collect(),
            deny_tcp: !sandbox.namespaces,
        };
        landlock::build_ruleset(abi, &rules).map_err(|source| ToolError::Sandbox {
            step: "cannot build the Landlock ruleset".to_string(),
            source,
        })
    }
}

impl Drop for Cell {
    fn drop(&mut self) {
        // Best effort: a test may leave read-only folders; the scratch
        // folder's own removal tries again at the end of the run.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests;
