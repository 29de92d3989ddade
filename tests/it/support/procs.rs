//! The machine's processes as `/proc` shows them: to find the processes of
//! a run (by command line and working directory) and to check none is left.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// One live process.
#[derive(Clone, Debug)]
pub struct Proc {
    pub pid: i32,
    /// The command line, arguments joined by spaces.
    pub cmdline: String,
    /// The working directory, when readable.
    pub cwd: Option<PathBuf>,
}

/// Every process that can be read right now (zombies and vanished ones are
/// left out).
pub fn all() -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let raw = std::fs::read(entry.path().join("cmdline")).ok()?;
            if raw.is_empty() {
                return None; // a zombie or a kernel thread
            }
            let cmdline = String::from_utf8_lossy(&raw)
                .split('\0')
                .filter(|a| !a.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok();
            Some(Proc { pid, cmdline, cwd })
        })
        .collect()
}

/// Processes whose working directory is at or below `dir`.
pub fn working_in(dir: &Path) -> Vec<Proc> {
    all()
        .into_iter()
        .filter(|p| p.pid != std::process::id() as i32)
        .filter(|p| p.cwd.as_deref().is_some_and(|cwd| cwd.starts_with(dir)))
        .collect()
}

/// Processes whose command line contains `needle`.
pub fn with_cmdline(needle: &str) -> Vec<Proc> {
    all()
        .into_iter()
        .filter(|p| p.pid != std::process::id() as i32)
        .filter(|p| p.cmdline.contains(needle))
        .collect()
}

/// Waits up to `limit` until `done` holds; returns whether it did.
pub fn wait_until(limit: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
