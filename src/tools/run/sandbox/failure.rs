//! A step of a tool's child setup that failed, carried from the child to
//! the parent through the one thing `spawn()` passes back: an io error's
//! code (`step << 16 | errno`). The child's steps ([`super::child`],
//! [`super::namespaces`]) report their failures as a [`Failure`]; the
//! runner reads them back as words ([`describe_spawn_error`]).
//!
//! It only encodes and decodes; it takes no step itself.

use std::io;

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
    pub(super) fn into_io(self) -> io::Error {
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
