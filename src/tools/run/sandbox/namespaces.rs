//! User, PID, network and IPC namespaces for the code under test, entered in
//! the forked child.
//!
//! Protects against: network access (a fresh network namespace has only its
//! own loopback, which is brought up so local test servers keep working, and
//! no route out); processes that outlive the tool (the tool runs as PID 1 of
//! a fresh PID namespace: when it ends, the kernel kills everything left in
//! the namespace, `setsid` double-forked daemons included); SysV IPC objects
//! of the user's other processes; and, together with Landlock, access to
//! swarm's memory and environment through `/proc`.
//!
//! Does not protect: the filesystem (that is Landlock's job — `/proc` is
//! still the host's, showing host PIDs), and nothing at all on a kernel or
//! container that refuses unprivileged user namespaces; then the layer is
//! reported unavailable, daemons can escape the process group, and only
//! Landlock (ABI ≥ 4) stands between the tests and the network.
//!
//! Mechanics: `unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |
//! CLONE_NEWIPC)`, `setgroups` = deny, uid/gid maps that map the caller's own
//! ids (so `os.getuid()` is unchanged), `lo` up, then one more fork: the
//! intermediate process closes every fd ≥ 3 but a liveness pipe (so std's
//! exec-error pipe reaches EOF when the tool execs), waits for the tool and
//! exits with its status, re-raising a fatal signal. Everything here runs
//! between fork and exec, so it only makes syscalls on data prepared before
//! the fork.

use std::ffi::CStr;

use super::failure::{Failure, Step};

/// The id maps, formatted before the fork.
#[derive(Debug)]
pub(super) struct NamespacePlan {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

/// The namespaces the tool gets.
const FLAGS: libc::c_int =
    libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWNET | libc::CLONE_NEWIPC;

const SETGROUPS: &CStr = c"/proc/self/setgroups";
const UID_MAP: &CStr = c"/proc/self/uid_map";
const GID_MAP: &CStr = c"/proc/self/gid_map";

/// `SIOCGIFFLAGS` / `SIOCSIFFLAGS` from `<linux/sockios.h>` (the same on every architecture).
const SIOCGIFFLAGS: u64 = 0x8913;
const SIOCSIFFLAGS: u64 = 0x8914;

/// `struct ifreq` as far as the flags ioctls use it.
#[repr(C)]
struct IfReq {
    name: [u8; 16],
    flags: libc::c_short,
    _rest: [u8; 22],
}

impl NamespacePlan {
    /// Maps for the current user: inside, the same uid and gid as outside.
    pub(super) fn for_current_user() -> Self {
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Self {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }

    /// In the child: enters the namespaces, maps the ids, brings `lo` up.
    pub(super) fn enter(&self) -> Result<(), Failure> {
        // A process that made itself non-dumpable has root-owned /proc/self
        // files and could not write its own maps; exec resets this anyway.
        // SAFETY: plain prctl.
        if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) } != 0 {
            return Err(Failure::last(Step::Dumpable));
        }
        // SAFETY: plain syscall; the forked child is single-threaded.
        if unsafe { libc::unshare(FLAGS) } != 0 {
            return Err(Failure::last(Step::Unshare));
        }
        write_file(SETGROUPS, b"deny").map_err(|e| Failure::new(Step::Setgroups, e))?;
        write_file(UID_MAP, &self.uid_map).map_err(|e| Failure::new(Step::UidMap, e))?;
        write_file(GID_MAP, &self.gid_map).map_err(|e| Failure::new(Step::GidMap, e))?;
        loopback_up().map_err(|e| Failure::new(Step::Loopback, e))
    }
}

/// In the child, after [`NamespacePlan::enter`]: forks the process that
/// becomes PID 1 of the new PID namespace and returns in it. The calling
/// (intermediate) process never returns: it waits for the tool and exits
/// with the tool's status.
pub(super) fn fork_pid_one() -> Result<(), Failure> {
    let mut alive = [0 as libc::c_int; 2];
    // SAFETY: valid pointer to two ints.
    if unsafe { libc::pipe2(alive.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Failure::last(Step::Fork));
    }
    let [alive_read, alive_write] = alive;
    // SAFETY: fork in a single-threaded child; both sides only make syscalls.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(Failure::last(Step::Fork));
    }
    if pid == 0 {
        // SAFETY: closing our copy of the write end; plain syscalls below.
        unsafe { libc::close(alive_write) };
        // SAFETY: plain prctl.
        if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) } != 0 {
            return Err(Failure::last(Step::ParentDeath));
        }
        // getppid() is 0 for PID 1 of a namespace, so ask the pipe instead:
        // once the intermediate is gone, its write end is closed.
        let mut poll = libc::pollfd {
            fd: alive_read,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: valid pollfd, zero timeout.
        let ready = unsafe { libc::poll(&mut poll, 1, 0) };
        // SAFETY: our read end, no longer needed.
        unsafe { libc::close(alive_read) };
        if ready != 0 {
            return Err(Failure::new(Step::ParentGone, libc::ESRCH));
        }
        return Ok(());
    }
    intermediate(pid, alive_read, alive_write)
}

/// The intermediate process: keeps only the liveness pipe's write end, waits
/// for the tool, exits as it did.
fn intermediate(tool: libc::pid_t, alive_read: libc::c_int, alive_write: libc::c_int) -> ! {
    // SAFETY: fd juggling and waiting with plain syscalls; this process
    // never returns into the runtime.
    unsafe {
        libc::close(alive_read);
        if alive_write != 3 {
            libc::dup2(alive_write, 3);
        }
        close_from(4);
        // swarm's own handlers (Ctrl-C, SIGTERM) were inherited by the fork
        // and would keep this process alive; it should just die.
        for signal in [libc::SIGHUP, libc::SIGINT, libc::SIGQUIT, libc::SIGTERM] {
            libc::signal(signal, libc::SIG_DFL);
        }
        let mut status = 0;
        loop {
            let rc = libc::waitpid(tool, &mut status, 0);
            if rc == tool {
                break;
            }
            if rc < 0 && errno() != libc::EINTR {
                libc::_exit(127);
            }
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            // Die of the same signal so the runner sees how the tool ended.
            libc::signal(signal, libc::SIG_DFL);
            let mut unblock: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut unblock);
            libc::sigaddset(&mut unblock, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &unblock, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(127)
    }
}

/// Closes every fd from `first` up.
fn close_from(first: libc::c_uint) {
    // SAFETY: plain syscall.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0u32) };
    if rc == 0 {
        return;
    }
    // Kernels before 5.9: close them one by one up to the fd limit.
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointer.
    let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur.min(1 << 20)
    } else {
        1024
    };
    let mut fd = libc::rlim_t::from(first);
    while fd < max {
        // SAFETY: closing a possibly unused fd is harmless (EBADF).
        unsafe { libc::close(fd as libc::c_int) };
        fd += 1;
    }
}

/// Writes `data` to `path` (open, write, close).
fn write_file(path: &CStr, data: &[u8]) -> Result<(), i32> {
    // SAFETY: a NUL-terminated path; plain syscalls.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(errno());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let result = if written == data.len() as isize {
            Ok(())
        } else if written < 0 {
            Err(errno())
        } else {
            Err(libc::EIO)
        };
        libc::close(fd);
        result
    }
}

/// Sets `IFF_UP` on `lo` in the current network namespace.
fn loopback_up() -> Result<(), i32> {
    let mut request = IfReq {
        name: [0; 16],
        flags: 0,
        _rest: [0; 22],
    };
    request.name[..2].copy_from_slice(b"lo");
    // SAFETY: plain syscalls on a socket we own and a valid ifreq.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(errno());
        }
        let mut result = Ok(());
        if libc::ioctl(fd, SIOCGIFFLAGS as _, &mut request) != 0 {
            result = Err(errno());
        } else {
            request.flags |= libc::IFF_UP as libc::c_short;
            if libc::ioctl(fd, SIOCSIFFLAGS as _, &request) != 0 {
                result = Err(errno());
            }
        }
        libc::close(fd);
        result
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EINVAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_name_the_callers_own_ids() {
        let plan = NamespacePlan::for_current_user();
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        assert_eq!(plan.uid_map, format!("{uid} {uid} 1\n").into_bytes());
        assert!(plan.gid_map.ends_with(b" 1\n"));
    }

    #[test]
    fn ifreq_has_the_kernel_size() {
        assert_eq!(std::mem::size_of::<IfReq>(), 40);
    }
}
