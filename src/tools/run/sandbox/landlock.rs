//! Landlock, the filesystem (and network fallback) layer, through raw
//! syscalls and the kernel's own ABI structs.
//!
//! Protects against: writes anywhere but the run's worktree, the process's
//! own scratch folder and a few harmless devices; reads of anything outside
//! the system folders, the interpreter's own tree and the worktree (`~/.ssh`,
//! `~/.aws`, the user's other repositories, the user's checkout); `ioctl` on
//! other devices (no `TIOCSTI` into the terminal, ABI ≥ 5); with ABI ≥ 4 and
//! no network namespace, TCP `bind`/`connect`; with ABI ≥ 6, signals to and
//! abstract unix sockets of processes outside the sandbox. Landlock also
//! forbids `ptrace`-style access to processes outside the sandbox, so
//! `/proc/<swarm pid>/environ` and `/proc/<pid>/mem` are closed.
//!
//! Does not protect: reads of what lies beneath the allowed folders (`/etc`
//! as a whole is readable — as root that includes `/etc/shadow`), metadata
//! (`stat` works everywhere), `connect()` to a named unix socket, and
//! `/dev/shm`, which is writable and shared with the host (multiprocessing
//! needs it for its semaphores). On kernels without Landlock the layer is
//! reported unavailable and none of this holds.
//!
//! The ruleset is built in the parent (opening folders allocates); the child
//! only calls `prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask for the ABI version.
const CREATE_RULESET_VERSION: libc::c_uint = 1;
/// `LANDLOCK_RULE_PATH_BENEATH`.
const RULE_PATH_BENEATH: libc::c_uint = 1;
/// `LANDLOCK_RULE_NET_PORT`: not used (no port is allowed), named for reference.
#[allow(dead_code)]
const RULE_NET_PORT: libc::c_uint = 2;

// Filesystem rights, by the ABI that introduced them.
const FS_EXECUTE: u64 = 1 << 0;
const FS_WRITE_FILE: u64 = 1 << 1;
const FS_READ_FILE: u64 = 1 << 2;
const FS_READ_DIR: u64 = 1 << 3;
const FS_REMOVE_DIR: u64 = 1 << 4;
const FS_REMOVE_FILE: u64 = 1 << 5;
const FS_MAKE_CHAR: u64 = 1 << 6;
const FS_MAKE_DIR: u64 = 1 << 7;
const FS_MAKE_REG: u64 = 1 << 8;
const FS_MAKE_SOCK: u64 = 1 << 9;
const FS_MAKE_FIFO: u64 = 1 << 10;
const FS_MAKE_BLOCK: u64 = 1 << 11;
const FS_MAKE_SYM: u64 = 1 << 12;
/// ABI 2.
const FS_REFER: u64 = 1 << 13;
/// ABI 3.
const FS_TRUNCATE: u64 = 1 << 14;
/// ABI 5.
const FS_IOCTL_DEV: u64 = 1 << 15;

// Network rights (ABI 4).
const NET_BIND_TCP: u64 = 1 << 0;
const NET_CONNECT_TCP: u64 = 1 << 1;

// Scopes (ABI 6).
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

/// Rights that only read or run files.
const READ_RIGHTS: u64 = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR;
/// Rights that make sense on a file (not a folder) rule.
const FILE_RIGHTS: u64 = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV;

/// `struct landlock_ruleset_attr` (ABI 6 layout; older kernels accept it when
/// the fields they do not know are zero).
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// `struct landlock_path_beneath_attr`, packed as in the kernel header.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version the kernel offers, or why there is none.
pub(super) fn abi_version() -> Result<u32, String> {
    // SAFETY: the documented version query: null attr, size 0, version flag.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if rc >= 1 {
        return u32::try_from(rc).map_err(|_| format!("unexpected Landlock ABI version {rc}"));
    }
    let err = io::Error::last_os_error();
    Err(match err.raw_os_error() {
        Some(libc::ENOSYS) => {
            "the kernel has no Landlock support, or a seccomp filter hides it (ENOSYS)".to_string()
        }
        Some(libc::EOPNOTSUPP) => {
            "Landlock is built into the kernel but not enabled (add it to the `lsm=` boot parameter)"
                .to_string()
        }
        _ => format!("the Landlock version query failed: {err}"),
    })
}

/// Every filesystem right the given ABI knows.
pub(super) fn fs_rights(abi: u32) -> u64 {
    let mut rights = FS_EXECUTE
        | FS_WRITE_FILE
        | FS_READ_FILE
        | FS_READ_DIR
        | FS_REMOVE_DIR
        | FS_REMOVE_FILE
        | FS_MAKE_CHAR
        | FS_MAKE_DIR
        | FS_MAKE_REG
        | FS_MAKE_SOCK
        | FS_MAKE_FIFO
        | FS_MAKE_BLOCK
        | FS_MAKE_SYM;
    if abi >= 2 {
        rights |= FS_REFER;
    }
    if abi >= 3 {
        rights |= FS_TRUNCATE;
    }
    if abi >= 5 {
        rights |= FS_IOCTL_DEV;
    }
    rights
}

/// What one process may touch, before it is turned into a ruleset.
#[derive(Clone, Debug, Default)]
pub(super) struct Rules {
    /// Folders (or files) to read and execute beneath.
    pub read: Vec<PathBuf>,
    /// Folders to read, execute and write beneath.
    pub write: Vec<PathBuf>,
    /// Device files to read and write (`/dev/null`, ...).
    pub devices: Vec<PathBuf>,
    /// Deny TCP bind/connect (the fallback when there is no network namespace).
    pub deny_tcp: bool,
}

/// What a ruleset built for `abi` enforces, in words, for the report.
pub(super) fn describe(abi: u32, deny_tcp: bool) -> String {
    let mut parts = vec![format!(
        "ABI {abi}: writes only in the worktree and the scratch folder, reads only in system folders, the interpreter's folders and the worktree"
    )];
    match (deny_tcp, abi >= 4) {
        (true, true) => parts.push("TCP bind/connect denied".to_string()),
        (true, false) => parts.push("the network stays open (TCP rules need ABI 4)".to_string()),
        (false, _) => {}
    }
    if abi >= 5 {
        parts.push("device ioctls denied".to_string());
    }
    if abi >= 6 {
        parts.push("signals and abstract unix sockets scoped to the sandbox".to_string());
    }
    parts.join("; ")
}

/// Builds the ruleset for `rules` under `abi`; the fd is close-on-exec.
/// Paths that do not exist are left out.
pub(super) fn build_ruleset(abi: u32, rules: &Rules) -> io::Result<OwnedFd> {
    let handled = fs_rights(abi);
    let attr = RulesetAttr {
        handled_access_fs: handled,
        handled_access_net: if rules.deny_tcp && abi >= 4 {
            NET_BIND_TCP | NET_CONNECT_TCP
        } else {
            0
        },
        scoped: if abi >= 6 {
            SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        } else {
            0
        },
    };
    // SAFETY: a valid attr of the size we pass; flags 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = RawFd::try_from(rc).map_err(|_| io::Error::other("ruleset fd out of range"))?;
    // SAFETY: the syscall returned a fresh fd (O_CLOEXEC) that we now own.
    let ruleset = unsafe { OwnedFd::from_raw_fd(fd) };
    let read = READ_RIGHTS & handled;
    let write = handled;
    let device = (FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV) & handled;
    for path in &rules.read {
        add_path_rule(&ruleset, path, read)?;
    }
    for path in &rules.write {
        add_path_rule(&ruleset, path, write)?;
    }
    for path in &rules.devices {
        add_path_rule(&ruleset, path, device)?;
    }
    Ok(ruleset)
}

/// Allows `rights` beneath `path` (only the file rights when it is a file).
fn add_path_rule(ruleset: &OwnedFd, path: &Path, rights: u64) -> io::Result<()> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let allowed = if meta.is_dir() {
        rights
    } else {
        rights & FILE_RIGHTS
    };
    let opened = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        // Vanished or unreachable: nothing to allow there.
        Err(_) => return Ok(()),
    };
    let attr = PathBeneathAttr {
        allowed_access: allowed,
        parent_fd: opened.as_raw_fd(),
    };
    // SAFETY: a valid ruleset fd, rule type and attr pointer; flags 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    if rc < 0 {
        let err = io::Error::last_os_error();
        return Err(io::Error::new(
            err.kind(),
            format!("landlock rule for {}: {err}", path.display()),
        ));
    }
    Ok(())
}

/// In the child: no new privileges, then enforce `ruleset` on this process
/// and everything it starts. Async-signal-safe (two syscalls).
pub(super) fn restrict_self(ruleset: RawFd) -> Result<(), i32> {
    // SAFETY: plain prctl; required before an unprivileged restrict_self.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(errno());
    }
    // SAFETY: plain syscall on a ruleset fd the parent created.
    if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) } != 0 {
        return Err(errno());
    }
    Ok(())
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EINVAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rights_grow_with_the_abi() {
        assert_eq!(fs_rights(1), (1 << 13) - 1);
        assert_eq!(fs_rights(2), (1 << 14) - 1);
        assert_eq!(fs_rights(3), (1 << 15) - 1);
        assert_eq!(fs_rights(4), fs_rights(3));
        assert_eq!(fs_rights(5), (1 << 16) - 1);
        assert_eq!(fs_rights(7), fs_rights(5));
    }

    #[test]
    fn structs_match_the_kernel_layout() {
        assert_eq!(std::mem::size_of::<RulesetAttr>(), 24);
        assert_eq!(std::mem::size_of::<PathBeneathAttr>(), 12);
    }

    #[test]
    fn description_names_what_the_abi_adds() {
        assert!(describe(3, true).contains("the network stays open"));
        assert!(!describe(3, false).contains("network"));
        assert!(describe(4, true).contains("TCP bind/connect denied"));
        assert!(!describe(4, false).contains("TCP"));
        assert!(describe(6, false).contains("signals"));
    }
}
