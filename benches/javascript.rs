//! `cargo bench --bench javascript`: whole runs on the JavaScript/TypeScript
//! fixtures — the real binary, git, node and each fixture's runner, eslint
//! and `tsc` — against a loopback model that answers the plan and proposes
//! the fix; and the same tools run by themselves, as often as a run runs
//! them (the baseline, the attempt and the final check), so the difference
//! is what swarm adds beyond them. Median of three runs each.
//!
//! The fixtures' `node_modules` come from `.ci/node-fixtures` (run here when
//! a copy is missing); each fixture's repository is made once and put back
//! to its first commit before every run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "support/loopback.rs"]
mod loopback;
use loopback::{git, serve, swarm, Seen};

const RUNS: usize = 3;

/// A fixture: its name, the target, the file the fix changes
/// (repository-relative).
const FIXTURES: &[(&str, &str, &str)] = &[
    ("node_test", ".", "src/cart.js"),
    ("vitest_ts", ".", "src/money.ts"),
    ("jest_eslint", ".", "src/inventory.js"),
    ("workspaces", "packages/core", "packages/core/src/rates.js"),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The fixture's installed copy (`.ci/node-fixtures` when missing).
fn installed(name: &str) -> PathBuf {
    let dir = root().join("target/node-fixtures").join(name);
    if !dir.join("node_modules").is_dir() {
        let status = Command::new("bash")
            .arg(root().join(".ci/node-fixtures"))
            .arg(name)
            .status()
            .expect("run .ci/node-fixtures");
        assert!(status.success(), ".ci/node-fixtures {name} failed");
    }
    dir
}

/// The fix as a reply: the unified diff of the fixture's file.
fn fix_reply(name: &str, file: &str) -> String {
    let fixture = root().join("fixtures/javascript").join(name);
    let read = |dir: &str| std::fs::read_to_string(fixture.join(dir).join(file)).expect("read");
    let (before, after) = (read("project"), read("fixed"));
    let body = similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{file}"), &format!("b/{file}"))
        .to_string();
    format!("The fix:\n\n```diff\n{body}```\n")
}

/// A repository holding the fixture with its installed `node_modules`
/// (ignored, as a user's is): (temp dir, repository, home, first commit).
fn repository(name: &str) -> (tempfile::TempDir, PathBuf, PathBuf, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (repo, home) = (dir.path().join("repo"), dir.path().join("home"));
    std::fs::create_dir_all(&home).expect("create home");
    let status = Command::new("cp")
        .arg("-R")
        .arg(installed(name))
        .arg(&repo)
        .status()
        .expect("cp runs");
    assert!(status.success(), "copy the fixture");
    let _ = std::fs::remove_file(repo.join(".installed"));
    std::fs::write(repo.join(".gitignore"), "node_modules/\nlogs/\n").expect("write .gitignore");
    git(&repo, &home, &["init", "--quiet", "--initial-branch=main"]);
    git(&repo, &home, &["config", "user.name", "Bench"]);
    git(&repo, &home, &["config", "user.email", "bench@example.com"]);
    git(&repo, &home, &["add", "-A"]);
    git(&repo, &home, &["commit", "--quiet", "-m", "baseline"]);
    let first = git(&repo, &home, &["rev-parse", "HEAD"]);
    (dir, repo, home, first)
}

/// One swarm run from the first commit: its wall time and the Judge's
/// seconds (from the summary).
fn run_swarm(repo: &Path, home: &Path, first: &str, target: &str, base: &str) -> (Duration, f64) {
    git(repo, home, &["reset", "--quiet", "--hard", first]);
    let _ = std::fs::remove_dir_all(repo.join("logs"));
    let started = Instant::now();
    let out = swarm(repo, home, base)
        .args(["--target_dir", target, "--no-preflight", "--json", "-q"])
        .output()
        .expect("swarm runs");
    let wall = started.elapsed();
    assert!(
        out.status.success(),
        "swarm failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: serde_json::Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_default();
    (
        wall,
        summary["time"]["judge_seconds"].as_f64().unwrap_or(0.0),
    )
}

/// The tools a run of `name` runs, by themselves: the runner, eslint and
/// (with a `tsconfig.json`) tsc, in the package's folder `package`.
fn tools_alone(name: &str, package: &Path, home: &Path) -> Vec<Command> {
    let modules = |p: &str| {
        [
            package.join("node_modules").join(p),
            package.join("../../node_modules").join(p),
        ]
        .into_iter()
        .find(|c| c.exists())
        .unwrap_or_else(|| package.join("node_modules").join(p))
    };
    let node = |args: Vec<std::ffi::OsString>| {
        let mut c = Command::new("node");
        c.args(args).current_dir(package);
        c
    };
    let mut commands = Vec::new();
    commands.push(match name {
        "node_test" => node(vec!["--test".into()]),
        "jest_eslint" => node(vec![modules("jest/bin/jest.js").into(), "--ci".into()]),
        _ => node(vec![modules("vitest/vitest.mjs").into(), "run".into()]),
    });
    let project_eslint = modules("eslint/bin/eslint.js");
    if name == "jest_eslint" {
        commands.push(node(vec![project_eslint.into(), "src".into()]));
    } else if let Some(pinned) = pinned_eslint(home) {
        commands.push(node(vec![
            pinned.join("node_modules/eslint/bin/eslint.js").into(),
            "--config".into(),
            pinned.join("swarm.eslint.config.mjs").into(),
            "src".into(),
        ]));
    }
    if package.join("tsconfig.json").is_file() {
        commands.push(node(vec![
            modules("typescript/bin/tsc").into(),
            "--noEmit".into(),
            "-p".into(),
            "tsconfig.json".into(),
        ]));
    }
    commands
}

/// The pinned eslint a first run installed into `home`'s cache.
fn pinned_eslint(home: &Path) -> Option<PathBuf> {
    let tools = home.join(".cache/swarm/node-tools");
    std::fs::read_dir(tools)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("node_modules/eslint/bin/eslint.js").is_file())
}

/// The tools by themselves, three times over (baseline, attempt, final
/// check): their wall time.
fn run_tools(commands: &mut [Command]) -> Duration {
    let started = Instant::now();
    for _ in 0..3 {
        for c in commands.iter_mut() {
            let _ = c.output().expect("the tool runs");
        }
    }
    started.elapsed()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn main() {
    println!("JavaScript/TypeScript fixtures end to end (median of {RUNS} runs, seconds)");
    println!(
        "fixture       requests   swarm run   the Judge   tools alone x3   swarm beyond the tools"
    );
    for (name, target, file) in FIXTURES {
        let (_dir, repo, home, first) = repository(name);
        let seen = Arc::new(Seen::default());
        let reply = fix_reply(name, file);
        let base = serve(
            move |prompt: &str| {
                if prompt.contains("refactoring plan") || prompt.starts_with("Plan") {
                    "1. Fix the bug the failing tests show.".to_string()
                } else {
                    reply.clone()
                }
            },
            Arc::clone(&seen),
        );
        // A first run installs the pinned eslint where the project has none.
        run_swarm(&repo, &home, &first, target, &base);
        let package = repo.join(target);
        let mut tools = tools_alone(name, &package, &home);
        let (mut walls, mut judges, mut alone) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..RUNS {
            let (wall, judge) = run_swarm(&repo, &home, &first, target, &base);
            walls.push(wall.as_secs_f64());
            judges.push(judge);
            git(&repo, &home, &["reset", "--quiet", "--hard", &first]);
            alone.push(run_tools(&mut tools).as_secs_f64());
        }
        let (wall, alone) = (median(walls), median(alone));
        let requests = seen.counts().0 / (RUNS + 1);
        println!(
            "{name:<13} {requests:>8}   {wall:>9.2}   {:>9.2}   {alone:>14.2}   {:>+22.2}",
            median(judges),
            wall - alone
        );
    }
}
