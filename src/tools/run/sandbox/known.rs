//! When the layer probes' outcome can be taken from the memo (see
//! [`crate::tools::memo`]) instead of starting the interpreter under them.
//!
//! Whether the kernel grants a layer depends on the machine as it is now:
//! the boot (`/proc/sys/kernel/random/boot_id`), the user and the
//! namespaces and capabilities swarm runs in (a container), the seccomp
//! filter, the kernel's switches for unprivileged user namespaces and its
//! security modules, the Landlock ABI and the hard resource limits. Those
//! and the policy (the folders read, the limits) make the key; the
//! interpreter is the witness. The folders a run writes in (its worktree
//! and scratch folder, fresh beneath swarm's cache for every run) are not
//! part of it: they are new each time, and where they are does not change
//! what the kernel grants. A tool whose spawn fails in a layer
//! drops the entry, so the next run probes again.

use std::path::{Path, PathBuf};

use crate::tools::memo::{KeyBuilder, MemoKey};

/// What the probes found: per layer `None` when it holds, else why not
/// (Landlock: its ABI when it holds). `None` for all three without
/// isolation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct Probed {
    pub namespaces: Option<String>,
    pub landlock: Result<u32, String>,
    pub limits: Option<String>,
}

/// Files that tell what the kernel grants, read whole into the key.
const KERNEL_FILES: &[&str] = &[
    "/proc/sys/kernel/random/boot_id",
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_unconfined",
    "/sys/kernel/security/lsm",
];
/// The namespaces swarm runs in (a container has its own).
const OWN_NAMESPACES: &[&str] = &["user", "mnt", "pid", "net", "ipc", "cgroup"];
/// Hard limits a layer lowers.
const RLIMITS: &[(&str, libc::__rlimit_resource_t)] = &[
    ("as", libc::RLIMIT_AS),
    ("fsize", libc::RLIMIT_FSIZE),
    ("nproc", libc::RLIMIT_NPROC),
    ("cpu", libc::RLIMIT_CPU),
    ("core", libc::RLIMIT_CORE),
];

/// The policy's side of the key.
pub(super) struct Policy<'a> {
    pub isolate: bool,
    pub python: &'a Path,
    pub read_roots: &'a [PathBuf],
    pub limits: String,
    pub landlock_abi: Option<u32>,
}

/// The key of the layer probes for `policy` on this machine as it is now.
pub(super) fn key(policy: &Policy<'_>) -> MemoKey {
    let mut key = KeyBuilder::new("sandbox");
    key.part("isolate", policy.isolate.to_string())
        .path("python", policy.python)
        .part("limits", &policy.limits)
        .part("landlock abi", format!("{:?}", policy.landlock_abi));
    for root in policy.read_roots {
        key.path("read", root);
    }
    for file in KERNEL_FILES {
        key.part(file, std::fs::read(file).unwrap_or_default());
    }
    for ns in OWN_NAMESPACES {
        let link = std::fs::read_link(format!("/proc/self/ns/{ns}")).unwrap_or_default();
        key.path(ns, &link);
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    for line in status.lines().filter(|l| {
        l.starts_with("Uid:")
            || l.starts_with("Gid:")
            || l.starts_with("Cap")
            || l.starts_with("Seccomp")
            || l.starts_with("NoNewPrivs:")
    }) {
        key.part("status", line);
    }
    for (name, resource) in RLIMITS {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct it is given.
        let rc = unsafe { libc::getrlimit(*resource, &mut limit) };
        key.part(name, format!("{rc} {}", limit.rlim_max));
    }
    key.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_holds_the_policy() {
        let roots = [PathBuf::from("/usr"), PathBuf::from("/opt/py")];
        let k = |python: &str, read: &[PathBuf], limits: &str, isolate: bool| {
            key(&Policy {
                isolate,
                python: Path::new(python),
                read_roots: read,
                limits: limits.to_string(),
                landlock_abi: Some(3),
            })
        };
        let first = k("/opt/py/bin/python3", &roots, "4 GiB", true);
        assert_eq!(k("/opt/py/bin/python3", &roots, "4 GiB", true), first);
        assert_ne!(k("/usr/bin/python3", &roots, "4 GiB", true), first);
        assert_ne!(k("/opt/py/bin/python3", &roots[..1], "4 GiB", true), first);
        assert_ne!(k("/opt/py/bin/python3", &roots, "1 GiB", true), first);
        assert_ne!(k("/opt/py/bin/python3", &roots, "4 GiB", false), first);
    }
}
