//! Hardening of swarm's own process, done once at start-up before any
//! thread exists.
//!
//! Code under test runs on the same machine as swarm, and swarm holds API
//! keys. Three steps keep them out of its reach:
//! - the process becomes non-dumpable (`PR_SET_DUMPABLE` 0), so another
//!   process without `CAP_SYS_PTRACE` in swarm's user namespace can neither
//!   read `/proc/<swarm>/environ` nor `/proc/<swarm>/mem` nor attach to it;
//! - the environment is captured (see [`crate::config::ProcessEnv`]) and the
//!   provider keys are removed from the live environment, so no child —
//!   git, Python — ever inherits them;
//! - the environment block the kernel shows in `/proc/<swarm>/environ` (the
//!   strings `execve` put on the initial stack) is overwritten with zeros
//!   after every variable has been copied to the heap, so even a reader
//!   with the power to bypass the non-dumpable flag (root without a user
//!   namespace) finds nothing there.
//!
//! It never prints; what could not be done comes back in [`Hardening`].

/// What the start-up hardening achieved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hardening {
    /// `PR_SET_DUMPABLE` 0 took effect.
    pub non_dumpable: bool,
    /// The initial environment block was zeroed.
    pub environ_cleared: bool,
    /// Why a step could not be done, one line each.
    pub notes: Vec<String>,
}

/// Hardens the process; `secrets` are variables to remove from the live
/// environment once captured. Call it first thing in `main`, while the
/// process has a single thread: it changes the environment.
pub fn harden(secrets: &[&str]) -> &'static Hardening {
    DONE.get_or_init(|| harden_now(secrets))
}

/// What [`harden`] achieved, once it ran.
pub fn report() -> Option<&'static Hardening> {
    DONE.get()
}

static DONE: std::sync::OnceLock<Hardening> = std::sync::OnceLock::new();

fn harden_now(secrets: &[&str]) -> Hardening {
    crate::config::ProcessEnv::capture();
    let mut result = Hardening::default();
    match make_undumpable() {
        Ok(()) => result.non_dumpable = true,
        Err(e) => result
            .notes
            .push(format!("could not make swarm non-dumpable: {e}")),
    }
    for name in secrets {
        // SAFETY-free in the 2021 edition; sound here because no other
        // thread exists yet (see the function's contract).
        std::env::remove_var(name);
    }
    match clear_initial_environ() {
        Ok(()) => result.environ_cleared = true,
        Err(e) => result.notes.push(format!(
            "could not clear swarm's initial environment block: {e}"
        )),
    }
    result
}

/// Makes this process non-dumpable, so processes without `CAP_SYS_PTRACE`
/// in its user namespace cannot read its memory or its environment through
/// `/proc/<pid>/mem` or `/proc/<pid>/environ`, nor attach to it. Children
/// are unaffected: exec resets the flag.
#[cfg(target_os = "linux")]
pub fn make_undumpable() -> std::io::Result<()> {
    // SAFETY: plain prctl with integer arguments.
    let rc = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// See the Linux version.
#[cfg(not(target_os = "linux"))]
pub fn make_undumpable() -> std::io::Result<()> {
    Err(std::io::Error::other("not supported on this system"))
}

/// Copies every variable to the heap (so `environ` no longer points into
/// the initial block), checks that nothing does, then zeroes the block.
#[cfg(target_os = "linux")]
fn clear_initial_environ() -> Result<(), String> {
    let stat = std::fs::read_to_string("/proc/self/stat").map_err(|e| e.to_string())?;
    let (start, end) = env_block(&stat).ok_or("no env_start/env_end in /proc/self/stat")?;
    if end <= start {
        return Ok(());
    }
    for (name, value) in std::env::vars_os() {
        // Re-setting a variable makes libc allocate a new "NAME=value"
        // string and point `environ` at it.
        std::env::set_var(&name, &value);
    }
    extern "C" {
        static environ: *const *const libc::c_char;
    }
    // SAFETY: `environ` is libc's NULL-terminated array of pointers; no
    // other thread can change it (single-threaded start-up).
    let still_inside = unsafe {
        let mut entry = environ;
        let mut inside = false;
        while !entry.is_null() && !(*entry).is_null() {
            let at = *entry as usize;
            inside |= (start..end).contains(&at);
            entry = entry.add(1);
        }
        inside
    };
    if still_inside {
        return Err("the C library still points into it; left as it is".into());
    }
    // SAFETY: [start, end) is this process's own initial environment block
    // (writable stack memory the kernel reports in /proc/self/stat), and
    // nothing refers to it any more (checked above).
    unsafe { std::ptr::write_bytes(start as *mut u8, 0, end - start) };
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn clear_initial_environ() -> Result<(), String> {
    Err("not supported on this system".into())
}

/// Fields 50 and 51 (`env_start`, `env_end`) of `/proc/self/stat`.
fn env_block(stat: &str) -> Option<(usize, usize)> {
    // The command name (field 2) may hold spaces and parentheses: count
    // fields from the last ')'. The first field after it is field 3.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let start = fields.get(50 - 3)?.parse().ok()?;
    let end = fields.get(51 - 3)?.parse().ok()?;
    Some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_environment_block_from_stat() {
        let mut fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        fields[50 - 3] = "140737488347000".into();
        fields[51 - 3] = "140737488349000".into();
        let stat = format!("1234 (we (ird) name) {}", fields.join(" "));
        assert_eq!(
            env_block(&stat),
            Some((140_737_488_347_000, 140_737_488_349_000))
        );
        assert_eq!(env_block("1234 (short) S 1 2"), None);
    }
}
