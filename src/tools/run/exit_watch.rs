//! Waking up the moment a child exits, without reaping it.
//!
//! The runner must notice three things: the child's exit, its timeout and
//! the [`crate::cancel::Cancel`] flag. Polling with growing pauses noticed an
//! exit up to a pause late (tens of milliseconds for every pytest, pylint
//! and probe). A pidfd (`pidfd_open`, Linux 5.3) becomes readable when the
//! process exits, so [`ExitWatch::wait`] blocks in `poll` until the exit or
//! the slice ends, whichever comes first; the caller still checks the flag
//! and the timeout between slices. Where pidfds are not available (an older
//! kernel, a seccomp filter), the watch falls back to sleeping the slice.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::io::AsRawFd;
use std::process::Child;
use std::time::Duration;

/// A way to wait for one child's exit.
pub(crate) struct ExitWatch {
    pidfd: Option<OwnedFd>,
}

impl ExitWatch {
    /// Watches `child` (not yet reaped) through a pidfd when the kernel gives one.
    pub fn new(child: &Child) -> Self {
        ExitWatch {
            pidfd: pidfd_open(child.id()),
        }
    }

    /// Whether exits wake [`ExitWatch::wait`] at once (a pidfd is open).
    pub fn is_immediate(&self) -> bool {
        self.pidfd.is_some()
    }

    /// Blocks for at most `slice`, returning early when the child exits
    /// (with a pidfd) or a signal interrupts the wait.
    pub fn wait(&self, slice: Duration) {
        let Some(fd) = &self.pidfd else {
            std::thread::sleep(slice);
            return;
        };
        let mut poll = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let millis = libc::c_int::try_from(slice.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid `pollfd` for an fd we own; an error (EINTR)
        // only ends the slice early, and the caller checks again.
        unsafe {
            libc::poll(&mut poll, 1, millis);
        }
    }
}

/// A pidfd for `pid`, or `None` where the kernel has none.
fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    let pid = libc::pid_t::try_from(pid).ok()?;
    // SAFETY: plain syscall with two integer arguments; it returns a new fd
    // or -1, and nothing else is touched.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = RawFd::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: `fd` was just returned by the kernel and nothing else owns
    // it; `OwnedFd` closes it once. (pidfds are opened close-on-exec.)
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Instant;

    #[test]
    fn an_exit_wakes_the_wait_at_once() {
        let mut child = Command::new("sleep").arg("0.2").spawn().unwrap();
        let watch = ExitWatch::new(&child);
        assert!(watch.is_immediate(), "this kernel gives pidfds");
        let started = Instant::now();
        watch.wait(Duration::from_secs(5));
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(150), "{waited:?}");
        assert!(waited < Duration::from_secs(2), "{waited:?}");
        // Not reaped by the watch: the status is still there to take.
        assert!(child.wait().unwrap().success());
    }

    #[test]
    fn a_running_child_lasts_the_slice() {
        let mut child = Command::new("sleep").arg("5").spawn().unwrap();
        let watch = ExitWatch::new(&child);
        let started = Instant::now();
        watch.wait(Duration::from_millis(100));
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(90), "{waited:?}");
        assert!(child.try_wait().unwrap().is_none());
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
