//! `cargo bench --bench pipeline`: wall time and swarm's own peak memory for
//! a whole run (`swarm demo`: audit, plan, fix, review, judge, commit,
//! fast-forward) on every bundled fixture, with its recorded replay.
//!
//! Most of a run is spent in pytest and pylint; the figures say what a user
//! waits for on a small project.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FIXTURES: &[&str] = &["single_module", "package", "monorepo_target", "no_tests"];
const RUNS: usize = 3;

/// swarm's peak resident memory so far (VmHWM), in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn run_once(fixture: &str, cwd: &Path) -> (Duration, u64) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_swarm"))
        .args(["demo", "--fixture", fixture, "-q"])
        .current_dir(cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("swarm starts");
    let mut peak = 0;
    loop {
        if let Some(kib) = peak_rss_kib(child.id()) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().expect("wait for swarm") {
            assert!(
                status.success(),
                "swarm demo --fixture {fixture} failed: {status}"
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    (started.elapsed(), peak)
}

fn main() {
    let cwd = tempfile::tempdir().expect("temp dir");
    println!("fixture          median wall   min wall   swarm peak RSS");
    for fixture in FIXTURES {
        let mut times = Vec::new();
        let mut peak = 0;
        for _ in 0..RUNS {
            let (t, kib) = run_once(fixture, cwd.path());
            times.push(t);
            peak = peak.max(kib);
        }
        times.sort();
        println!(
            "{fixture:<16} {:>9.2} s {:>8.2} s {:>10.1} MiB",
            times[RUNS / 2].as_secs_f64(),
            times[0].as_secs_f64(),
            peak as f64 / 1024.0
        );
    }
}
