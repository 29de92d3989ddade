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
//! step in its code (see [`describe_spawn_error`]), and the tool never runs
//! with less confinement than was asked for.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

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

/// A step of the child's setup, named in spawn errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub(crate) enum Step {
    Setsid = 1,
    ParentDeath,
    ParentGone,
    Dumpable,
    Unshare,
    Setgroups,
    UidMap,
    GidMap,
    Loopback,
    Fork,
    Limits,
    Landlock,
}

const STEPS: [Step; 12] = [
    Step::Setsid,
    Step::ParentDeath,
    Step::ParentGone,
    Step::Dumpable,
    Step::Unshare,
    Step::Setgroups,
    Step::UidMap,
    Step::GidMap,
    Step::Loopback,
    Step::Fork,
    Step::Limits,
    Step::Landlock,
];

impl Step {
    /// What the step does, for error messages.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Step::Setsid => "setsid()",
            Step::ParentDeath => "prctl(PR_SET_PDEATHSIG)",
            Step::ParentGone => "the parent ended before the child was set up",
            Step::Dumpable => "prctl(PR_SET_DUMPABLE)",
            Step::Unshare => "unshare(user, PID, network and IPC namespaces)",
            Step::Setgroups => "writing /proc/self/setgroups",
            Step::UidMap => "writing /proc/self/uid_map",
            Step::GidMap => "writing /proc/self/gid_map",
            Step::Loopback => "bringing up the loopback interface",
            Step::Fork => "forking the tool into its PID namespace",
            Step::Limits => "setrlimit",
            Step::Landlock => "landlock_restrict_self",
        }
    }
}

/// Spawn errors carry `step << STEP_SHIFT | errno` (errno values are far below).
const STEP_SHIFT: u32 = 16;

/// A step that failed, with its errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    pub step: Step,
    pub errno: i32,
}

impl Failure {
    pub(super) fn new(step: Step, errno: i32) -> Self {
        Self { step, errno }
    }

    /// The step with the current errno.
    pub(super) fn last(step: Step) -> Self {
        Self::new(
            step,
            io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EINVAL),
        )
    }

    /// The error std carries from the child to `spawn()` (no allocation).
    fn into_io(self) -> io::Error {
        io::Error::from_raw_os_error(((self.step as i32) << STEP_SHIFT) | (self.errno & 0xffff))
    }

    /// The failure encoded in a spawn error, if it is one.
    pub(crate) fn decode(err: &io::Error) -> Option<Failure> {
        let raw = err.raw_os_error()?;
        let code = raw >> STEP_SHIFT;
        let step = STEPS.iter().copied().find(|s| *s as i32 == code)?;
        Some(Failure::new(step, raw & 0xffff))
    }
}

/// A spawn error in words: the sandbox step and the system's reason when
/// the child's setup failed, else the error as it is.
pub(crate) fn describe_spawn_error(err: &io::Error) -> String {
    match Failure::decode(err) {
        Some(failure) => format!(
            "{} failed: {}",
            failure.step.describe(),
            io::Error::from_raw_os_error(failure.errno)
        ),
        None => err.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_round_trip_through_an_errno() {
        for step in STEPS {
            let failure = Failure::new(step, libc::EPERM);
            assert_eq!(Failure::decode(&failure.into_io()), Some(failure));
        }
        assert_eq!(
            Failure::decode(&io::Error::from_raw_os_error(libc::ENOENT)),
            None
        );
        let text = describe_spawn_error(&Failure::new(Step::Unshare, libc::EPERM).into_io());
        assert!(text.starts_with("unshare(user, PID"), "{text}");
        assert!(text.contains("Operation not permitted"), "{text}");
    }
}
