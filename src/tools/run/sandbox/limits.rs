//! Resource limits (`setrlimit`) for the code under test.
//!
//! Protects against: a test that allocates gigabytes (`RLIMIT_AS`: the
//! allocation fails with `MemoryError` instead of the machine swapping),
//! writes a huge file (`RLIMIT_FSIZE`), spins on the CPU past the tool's
//! timeout in a process the timeout does not reach (`RLIMIT_CPU`, per
//! process), leaves core dumps (`RLIMIT_CORE` = 0), or fork-bombs
//! (`RLIMIT_NPROC`).
//!
//! Does not protect: memory that is not address space of one process (page
//! cache, `/dev/shm`), the total of many processes each under its limit, and
//! disk space spent in many files under the size limit. `RLIMIT_NPROC` counts
//! every process of the user, so it is only set inside the sandbox's own user
//! namespace, where it counts the sandbox's processes alone (and holds even
//! for root, who has no capability in the parent namespace); without a user
//! namespace it is left alone, and the kernel never enforces it for root.

use std::time::Duration;

/// The resource type `setrlimit` takes on this libc.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(super) type Resource = libc::__rlimit_resource_t;
/// The resource type `setrlimit` takes on this libc.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(super) type Resource = libc::c_int;

const GIB: u64 = 1024 * 1024 * 1024;

/// How much the code under test may use; `None` leaves a limit alone.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ResourceLimits {
    /// Address space per process, bytes (`RLIMIT_AS`). Default 4 GiB.
    pub address_space: Option<u64>,
    /// Largest file a process may write, bytes (`RLIMIT_FSIZE`). Default 1 GiB.
    pub file_size: Option<u64>,
    /// Processes and threads in the sandbox (`RLIMIT_NPROC`, only applied
    /// inside the sandbox's user namespace). Default 1024.
    pub processes: Option<u64>,
    /// CPU time per process (`RLIMIT_CPU`); `None` derives it from the
    /// tool's timeout (the timeout plus one second).
    pub cpu_time: Option<Duration>,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        Self {
            address_space: Some(4 * GIB),
            file_size: Some(GIB),
            processes: Some(1024),
            cpu_time: None,
        }
    }
}

/// One limit to set in the child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Rlimit {
    pub resource: Resource,
    pub soft: libc::rlim_t,
    pub hard: libc::rlim_t,
}

impl ResourceLimits {
    /// The limits to set for a tool with `timeout`, clamped to the current
    /// hard limits (an unprivileged process cannot raise them).
    /// `processes` is included only when `in_user_namespace`.
    pub(super) fn plan(&self, timeout: Option<Duration>, in_user_namespace: bool) -> Vec<Rlimit> {
        let mut plan = vec![Rlimit {
            resource: libc::RLIMIT_CORE,
            soft: 0,
            hard: 0,
        }];
        let mut add = |resource: Resource, value: u64| {
            let value = libc::rlim_t::try_from(value).unwrap_or(libc::RLIM_INFINITY);
            let limit = value.min(current_hard(resource));
            plan.push(Rlimit {
                resource,
                soft: limit,
                hard: limit,
            });
        };
        if let Some(bytes) = self.address_space {
            add(libc::RLIMIT_AS, bytes);
        }
        if let Some(bytes) = self.file_size {
            add(libc::RLIMIT_FSIZE, bytes);
        }
        if let (Some(count), true) = (self.processes, in_user_namespace) {
            add(libc::RLIMIT_NPROC, count);
        }
        let cpu = self
            .cpu_time
            .or_else(|| timeout.map(|t| t + Duration::from_secs(1)));
        if let Some(cpu) = cpu {
            // Past the soft limit the kernel sends SIGXCPU, past the hard one SIGKILL.
            let soft = cpu.as_secs().max(1) + u64::from(cpu.subsec_nanos() > 0);
            let hard = current_hard(libc::RLIMIT_CPU).min(soft + 2);
            plan.push(Rlimit {
                resource: libc::RLIMIT_CPU,
                soft: soft.min(hard),
                hard,
            });
        }
        plan
    }

    /// The limits in words, for the report.
    pub(super) fn describe(&self, in_user_namespace: bool) -> String {
        let mut parts = Vec::new();
        if let Some(bytes) = self.address_space {
            parts.push(format!("address space {}", size(bytes)));
        }
        if let Some(bytes) = self.file_size {
            parts.push(format!("file size {}", size(bytes)));
        }
        match (self.processes, in_user_namespace) {
            (Some(count), true) => parts.push(format!("{count} processes")),
            (Some(_), false) => {
                parts.push("processes not limited (no user namespace of its own)".to_string())
            }
            (None, _) => {}
        }
        match self.cpu_time {
            Some(cpu) => parts.push(format!("CPU time {}s per process", cpu.as_secs())),
            None => parts.push("CPU time per process = the tool's timeout".to_string()),
        }
        parts.push("no core files".to_string());
        parts.join(", ")
    }
}

/// In the child: sets every limit of `plan`. Async-signal-safe.
pub(super) fn apply(plan: &[Rlimit]) -> Result<(), i32> {
    for limit in plan {
        let value = libc::rlimit {
            rlim_cur: limit.soft,
            rlim_max: limit.hard,
        };
        // SAFETY: plain syscall with a valid pointer.
        if unsafe { libc::setrlimit(limit.resource, &value) } != 0 {
            return Err(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EINVAL));
        }
    }
    Ok(())
}

fn current_hard(resource: Resource) -> libc::rlim_t {
    let mut value = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscall writing into a valid struct.
    if unsafe { libc::getrlimit(resource, &mut value) } == 0 {
        value.rlim_max
    } else {
        libc::RLIM_INFINITY
    }
}

fn size(bytes: u64) -> String {
    if bytes % GIB == 0 {
        format!("{} GiB", bytes / GIB)
    } else {
        format!("{} MiB", bytes / (1024 * 1024))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(plan: &[Rlimit], resource: Resource) -> Option<Rlimit> {
        plan.iter().copied().find(|l| l.resource == resource)
    }

    #[test]
    fn defaults_and_cpu_from_the_timeout() {
        let plan = ResourceLimits::default().plan(Some(Duration::from_millis(2500)), true);
        let address = find(&plan, libc::RLIMIT_AS).expect("address space");
        assert_eq!(address.soft, (4 * GIB).min(current_hard(libc::RLIMIT_AS)));
        let cpu = find(&plan, libc::RLIMIT_CPU).expect("cpu");
        assert_eq!(cpu.soft, 4.min(cpu.hard), "2.5 s + 1 s rounds up to 4 s");
        assert_eq!(find(&plan, libc::RLIMIT_CORE).map(|l| l.hard), Some(0));
        assert!(find(&plan, libc::RLIMIT_NPROC).is_some());
    }

    #[test]
    fn processes_only_in_a_user_namespace_and_no_cpu_without_timeout() {
        let plan = ResourceLimits::default().plan(None, false);
        assert!(find(&plan, libc::RLIMIT_NPROC).is_none());
        assert!(find(&plan, libc::RLIMIT_CPU).is_none());
        let text = ResourceLimits::default().describe(false);
        assert!(text.contains("address space 4 GiB"), "{text}");
        assert!(text.contains("processes not limited"), "{text}");
    }
}
