//! What a tool's child process does between fork and exec: its own session,
//! the parent-death signal, then the sandbox's layers in order.
//!
//! Every child gets `setsid()` (its own session and process group, so the
//! runner can kill the group, and no controlling terminal for `/dev/tty`
//! tricks) and `PR_SET_PDEATHSIG(SIGKILL)` with the `getppid` race check, so
//! even a SIGKILL of swarm leaves no tool running. The signal follows the
//! parent *thread*; that is right because the runner blocks the spawning
//! thread until the child has ended.
//!
//! A confined child then enters its namespaces, forks the tool as PID 1 of
//! them, sets the resource limits and restricts itself with Landlock. Only
//! syscalls run here, on data built before the fork (no allocation, no
//! locks). A step that fails makes the spawn fail: the error carries the
//! step in its code (see [`super::failure`]), and the tool never runs
//! with less confinement than was asked for.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use super::failure::{Failure, Step};
use super::limits::{self, ResourceLimits, Rlimit};
use super::namespaces::{self, NamespacePlan};

/// What one spawn must be confined by, prepared in the parent.
#[derive(Debug, Default)]
pub(crate) struct Confinement {
    pub(super) namespaces: Option<NamespacePlan>,
    pub(super) limits: Option<ResourceLimits>,
    pub(super) landlock: Option<OwnedFd>,
    /// The remembered probe outcome that promised these layers.
    pub(super) remembered: Option<std::path::PathBuf>,
}

impl Confinement {
    /// A spawn failed in one of the layers: what promised them is wrong
    /// now, so the next run probes again.
    pub(crate) fn failed_in_child(&self, err: &io::Error) {
        if let (Some(entry), Some(_)) = (&self.remembered, Failure::decode(err)) {
            let _ = std::fs::remove_file(entry);
        }
    }
}

/// Everything the child needs, built in the parent right before the fork.
#[derive(Debug)]
pub(crate) struct ChildPlan {
    parent: libc::pid_t,
    confinement: Option<Arc<Confinement>>,
    rlimits: Vec<Rlimit>,
}

impl ChildPlan {
    /// The plan for one spawn of a tool with `timeout`.
    pub(crate) fn new(confinement: Option<Arc<Confinement>>, timeout: Option<Duration>) -> Self {
        let rlimits = confinement
            .as_ref()
            .and_then(|c| {
                c.limits
                    .as_ref()
                    .map(|l| l.plan(timeout, c.namespaces.is_some()))
            })
            .unwrap_or_default();
        Self {
            // SAFETY: getpid cannot fail.
            parent: unsafe { libc::getpid() },
            confinement,
            rlimits,
        }
    }

    /// Runs in the forked child before exec. Async-signal-safe: syscalls on
    /// prepared data only.
    pub(crate) fn enter(&self) -> io::Result<()> {
        self.steps().map_err(Failure::into_io)
    }

    fn steps(&self) -> Result<(), Failure> {
        // SAFETY: plain syscalls in the child.
        unsafe {
            if libc::setsid() < 0 {
                return Err(Failure::last(Step::Setsid));
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(Failure::last(Step::ParentDeath));
            }
            // The parent may have died before the prctl: then we were
            // reparented and would never get the signal.
            if libc::getppid() != self.parent {
                return Err(Failure::new(Step::ParentGone, libc::ESRCH));
            }
        }
        let Some(confinement) = &self.confinement else {
            return Ok(());
        };
        if let Some(plan) = &confinement.namespaces {
            plan.enter()?;
            // From here on this is the tool: PID 1 of the new namespace.
            namespaces::fork_pid_one()?;
        }
        limits::apply(&self.rlimits).map_err(|e| Failure::new(Step::Limits, e))?;
        if let Some(ruleset) = &confinement.landlock {
            super::landlock::restrict_self(ruleset.as_raw_fd())
                .map_err(|e| Failure::new(Step::Landlock, e))?;
        }
        Ok(())
    }
}
