//! `cargo bench --bench help`: how long the release `swarm` binary takes to
//! answer `--help` and `--version`, start to exit, the way a shell runs it.
//!
//! Each command runs a few times to warm the page cache, then
//! `SWARM_HELP_RUNS` times (default 200); the bench prints the median, p95
//! and maximum of each, and exits non-zero when a median is past the
//! 20 ms target (or a run fails).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What `swarm --help` must stay under (median).
const TARGET: Duration = Duration::from_millis(20);
const DEFAULT_RUNS: usize = 200;
const WARM_UP: usize = 5;

fn main() {
    let runs = std::env::var("SWARM_HELP_RUNS")
        .ok()
        .map(|v| {
            v.parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .unwrap_or_else(|| panic!("SWARM_HELP_RUNS: `{v}` is not a positive count"))
        })
        .unwrap_or(DEFAULT_RUNS);
    println!(
        "{:<10} {:>5} {:>9} {:>9} {:>9}",
        "command", "runs", "median", "p95", "max"
    );
    let mut over = Vec::new();
    for flag in ["--help", "--version"] {
        for _ in 0..WARM_UP {
            time_one(flag);
        }
        let mut times: Vec<Duration> = (0..runs).map(|_| time_one(flag)).collect();
        times.sort();
        let (median, p95) = (percentile(&times, 50), percentile(&times, 95));
        let max = *times.last().expect("at least one run");
        println!(
            "{flag:<10} {runs:>5} {:>6.2} ms {:>6.2} ms {:>6.2} ms",
            ms(median),
            ms(p95),
            ms(max)
        );
        if median > TARGET {
            over.push(format!(
                "swarm {flag}: median {:.2} ms is past the {} ms target",
                ms(median),
                TARGET.as_millis()
            ));
        }
    }
    if !over.is_empty() {
        for line in &over {
            eprintln!("{line}");
        }
        std::process::exit(1);
    }
}

/// One run of `swarm <flag>`, start to exit; panics when it fails.
fn time_one(flag: &str) -> Duration {
    let started = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_swarm"))
        .arg(flag)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("swarm starts");
    let took = started.elapsed();
    assert!(status.success(), "swarm {flag} exited with {status}");
    took
}

/// The nearest-rank `p`th percentile of sorted `times`.
fn percentile(times: &[Duration], p: usize) -> Duration {
    let rank = (times.len() * p).div_ceil(100).max(1);
    times[rank - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
