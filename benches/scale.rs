//! `cargo bench --bench scale`: whole runs of the release `swarm` binary on
//! generated repositories of 100, 1,000 and 10,000 Python files (many small
//! clean modules in a few packages, one buggy module, two failing tests),
//! against a loopback OpenAI-compatible model that answers like a good one.
//!
//! Per run it reports the exit code, wall time, swarm's own peak memory
//! (VmHWM) and, from the request bodies the model received, the number of
//! requests, the plan request's size, the largest request and the run's
//! total, in characters of system and user text. Each size runs with a cold
//! pylint cache (a fresh `SWARM_CACHE_DIR`), then on an identical
//! repository elsewhere with the cache the first run left (warm: a fresh
//! clone in CI), then on the first repository again after its delivery was
//! undone (again: a second run on the same repository, which also takes
//! the spare worktree the first run kept). A repository is committed as
//! `git add -A && git commit` leaves it, its automatic gc finished, and
//! every run starts after `sync`: neither a background repack nor the
//! write-back of the bench's own files is timed as swarm's.
//!
//! From each run's experiment log it also reads where the time went (see
//! [`timing`]): per attempt, the worktree update, apply, commit and the
//! Judge; per stage (setup, audit, plan, rounds, final check, delivery),
//! the wall time, what pytest, pylint and the model took of it, and the
//! rest, swarm's own overhead, also as a share of the whole process's
//! wall time. After every run it prints the medians over the runs of each
//! size and cache, and the per-attempt cost of each size against 1,000
//! files.
//!
//! Settings (environment):
//! - `SWARM_SCALE_SIZES=100,1000`: the sizes to run (default all three);
//! - `SWARM_SCALE_RUNS=3`: runs of each size and cache (default 1);
//! - `SWARM_SCALE_WARM=0`: skip the warm and again runs;
//! - `SWARM_SCALE_KEEP=1`: keep each run's folder (repository, experiment
//!   log, swarm's stdout and stderr) and say where it is;
//! - `SWARM_SCALE_WRAP="perf record -g -o /tmp/swarm.perf --"`: start swarm
//!   under this command (words split at spaces), to profile or trace it.
//!
//! Last, a looping model ([`looping`]): on the smallest size, a model whose
//! first fix reply falls into a loop at a small local model's pace (26
//! tokens a second); the bench reports the seconds from the loop's start
//! to swarm's cut, and the run must still end green
//! (`SWARM_SCALE_LOOP=0` skips it).
//!
//! A run that does not end green (exit 0, the bug fixed on the user's
//! branch) is reported in the table with its error, and the bench then
//! exits non-zero.

#[path = "scale/looping.rs"]
mod looping;
#[path = "scale/model.rs"]
mod model;
#[path = "../tests/it/support/scale/mod.rs"]
mod scale;
#[path = "scale/timing.rs"]
mod timing;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use model::ModelServer;
use scale::{RequestKind, ScaleProject};
use serde_json::Value;
use timing::{median, RunTime, STAGES};

const DEFAULT_SIZES: &[usize] = &[100, 1_000, 10_000];
/// Provider settings that must not leak in from the shell running the bench.
const PROVIDER_ENV: &[&str] = &[
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "SWARM_PROVIDER",
    "SWARM_MODEL",
    "SWARM_CASSETTE",
    "VIRTUAL_ENV",
];

fn main() {
    let sizes = sizes_from_env();
    let runs = runs_from_env();
    let warm = std::env::var("SWARM_SCALE_WARM").map_or(true, |v| v != "0");
    let mut failures = Vec::new();
    let mut results: Vec<(usize, &str, Vec<Measured>)> = Vec::new();
    println!(
        "{:>6} {:<5} {:>4} {:>9} {:>9} {:>6} {:>5} {:>10} {:>10} {:>11} {:>9} {:>6}",
        "files",
        "cache",
        "exit",
        "wall",
        "peak RSS",
        "pylint",
        "reqs",
        "plan chars",
        "max chars",
        "total chars",
        "attempt",
        "own %"
    );
    for size in sizes {
        let (mut colds, mut warms, mut agains) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            // One user: their home and swarm's cache stay across the runs.
            let cache = tempfile::tempdir().expect("temp dir for the cache");
            let home = tempfile::tempdir().expect("temp dir for the home");
            let bench = Bench::generate(size, home.path());
            let cold = measure(size, "cold", &bench, cache.path(), &mut failures);
            let green = cold.failure.is_none();
            colds.push(cold);
            if warm && green {
                // An identical repository elsewhere (a fresh clone in CI),
                // with the cache the first run left.
                let elsewhere = Bench::generate(size, home.path());
                warms.push(measure(
                    size,
                    "warm",
                    &elsewhere,
                    cache.path(),
                    &mut failures,
                ));
                elsewhere.finish();
                // The same repository again, its delivery undone: the
                // spare worktree the first run kept is taken too.
                bench.undo();
                agains.push(measure(size, "again", &bench, cache.path(), &mut failures));
            }
            bench.finish();
        }
        results.push((size, "cold", colds));
        if !warms.is_empty() {
            results.push((size, "warm", warms));
            results.push((size, "again", agains));
        }
    }
    print_attempts(&results);
    print_overhead(&results);
    if looping::wanted() {
        let smallest = results.iter().map(|(size, _, _)| *size).min();
        looping::measure(smallest.unwrap_or(100), &mut failures);
    }
    if !failures.is_empty() {
        eprintln!("\nruns that did not end green:");
        for failure in &failures {
            eprintln!("- {failure}");
        }
        std::process::exit(1);
    }
}

/// One run of `kind` on `bench`, printed; a run that did not end green is
/// added to `failures`.
fn measure(
    size: usize,
    kind: &str,
    bench: &Bench,
    cache: &Path,
    failures: &mut Vec<String>,
) -> Measured {
    let measured = run(bench, cache);
    print_row(size, kind, &measured);
    if let Some(why) = &measured.failure {
        failures.push(format!("{size} files, {kind}: {why}"));
    }
    measured
}

/// `SWARM_SCALE_RUNS`, else 1.
fn runs_from_env() -> usize {
    std::env::var("SWARM_SCALE_RUNS").map_or(1, |v| {
        v.trim()
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or_else(|| panic!("SWARM_SCALE_RUNS: `{v}` is not a positive count"))
    })
}

/// The median per-attempt cost of each size and cache, its steps, and its
/// ratio to the 1,000-file cost of the same cache.
fn print_attempts(results: &[(usize, &str, Vec<Measured>)]) {
    println!(
        "\nper attempt, median over the runs (seconds; cost = worktree + apply + commit + judge):"
    );
    println!(
        "{:>6} {:<5} {:>4} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}",
        "files",
        "cache",
        "runs",
        "review",
        "apply",
        "judge",
        "commit",
        "worktree",
        "cost",
        "vs 1,000"
    );
    let cost_of = |ms: &[Measured]| median(&attempts(ms).map(|a| a.cost()).collect::<Vec<_>>());
    for (size, cache, measured) in results {
        let all: Vec<timing::AttemptTime> = attempts(measured).collect();
        if all.is_empty() {
            continue;
        }
        let step =
            |f: fn(&timing::AttemptTime) -> f64| median(&all.iter().map(f).collect::<Vec<_>>());
        let cost = cost_of(measured);
        let reference = results
            .iter()
            .find(|(s, c, _)| *s == 1_000 && c == cache)
            .map(|(_, _, m)| cost_of(m))
            .filter(|c| *c > 0.0);
        println!(
            "{size:>6} {cache:<5} {:>4} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>9}",
            measured.len(),
            step(|a| a.review),
            step(|a| a.apply),
            step(|a| a.judge),
            step(|a| a.commit),
            step(|a| a.worktree),
            cost,
            reference.map_or("-".to_string(), |r| format!("{:.2}x", cost / r))
        );
    }
}

/// Every attempt of every run that logged its timings.
fn attempts(measured: &[Measured]) -> impl Iterator<Item = timing::AttemptTime> + '_ {
    measured
        .iter()
        .filter_map(|m| m.time.as_ref())
        .flat_map(|t| t.attempts.iter().copied())
}

/// swarm's own time per stage (the medians over the runs), and as a share
/// of the process's wall time.
fn print_overhead(results: &[(usize, &str, Vec<Measured>)]) {
    println!("\nswarm's own time per stage, median over the runs (seconds of wall time not spent in pytest, pylint or the model; % of the process's wall time):");
    print!("{:>6} {:<5} {:>8}", "files", "cache", "wall");
    for stage in STAGES {
        print!(" {stage:>15}");
    }
    println!(" {:>15} {:>15}", "outside run", "all");
    for (size, cache, measured) in results {
        let timed: Vec<(&Measured, &RunTime)> = measured
            .iter()
            .filter_map(|m| m.time.as_ref().map(|t| (m, t)))
            .collect();
        if timed.is_empty() {
            continue;
        }
        let wall = median(
            &timed
                .iter()
                .map(|(m, _)| m.wall.as_secs_f64())
                .collect::<Vec<_>>(),
        );
        let share = |f: &dyn Fn(&Measured, &RunTime) -> f64| {
            let own = median(&timed.iter().map(|(m, t)| f(m, t)).collect::<Vec<_>>());
            let pct = median(
                &timed
                    .iter()
                    .map(|(m, t)| 100.0 * f(m, t) / m.wall.as_secs_f64())
                    .collect::<Vec<_>>(),
            );
            format!("{own:>7.3} {pct:>5.1}%")
        };
        print!("{size:>6} {cache:<5} {wall:>6.1} s");
        for i in 0..STAGES.len() {
            print!(" {:>15}", share(&|_, t| t.stages[i].own()));
        }
        let outside_run = share(&|m, t| (m.wall.as_secs_f64() - t.run).max(0.0));
        let all = share(&|m, t| (m.wall.as_secs_f64() - t.outside()).max(0.0));
        println!(" {outside_run:>15} {all:>15}");
    }
}

/// `SWARM_SCALE_SIZES` (comma-separated) or every default size.
fn sizes_from_env() -> Vec<usize> {
    let Ok(list) = std::env::var("SWARM_SCALE_SIZES") else {
        return DEFAULT_SIZES.to_vec();
    };
    list.split(',')
        .map(|s| s.trim().replace('_', ""))
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse().unwrap_or_else(|_| {
                panic!("SWARM_SCALE_SIZES: `{s}` is not a number of files, e.g. 100,1000")
            })
        })
        .collect()
}

/// What one run measured.
struct Measured {
    /// swarm's exit code (`None`: killed by a signal).
    exit: Option<i32>,
    wall: Duration,
    peak_kib: u64,
    requests: Vec<Request>,
    /// The model calls of the experiment log, sent or not.
    logged: Vec<LoggedCall>,
    /// The baseline's pylint score, when pylint gave one.
    pylint_before: Option<f64>,
    /// The size of swarm's stderr: lines, characters.
    stderr_size: (usize, usize),
    /// Why the run is not green, when it is not.
    failure: Option<String>,
    /// Where the time went, from the experiment log.
    time: Option<RunTime>,
}

/// A model call as the experiment log records it.
struct LoggedCall {
    agent: String,
    /// Characters of the logged prompt (system and messages with their
    /// role headers).
    chars: usize,
    /// Whether the call got a reply.
    answered: bool,
}

/// One request the model received.
#[derive(Clone, Copy, Debug)]
struct Request {
    kind: RequestKind,
    /// Characters of system and user (and assistant) text.
    chars: usize,
}

fn print_row(size: usize, cache: &str, m: &Measured) {
    let max = |kind: Option<RequestKind>| {
        m.requests
            .iter()
            .filter(|r| kind.is_none_or(|k| r.kind == k))
            .map(|r| r.chars)
            .max()
    };
    let shown = |chars: Option<usize>| chars.map_or("-".to_string(), |c| c.to_string());
    let total: usize = m.requests.iter().map(|r| r.chars).sum();
    let wall = m.wall.as_secs_f64();
    let attempt = m
        .time
        .as_ref()
        .map(|t| t.attempts.iter().map(|a| a.cost()).collect::<Vec<_>>())
        .filter(|costs| !costs.is_empty())
        .map_or("-".to_string(), |costs| format!("{:.3} s", median(&costs)));
    let own = m.time.as_ref().map_or("-".to_string(), |t| {
        format!("{:.1}", 100.0 * (wall - t.outside()).max(0.0) / wall)
    });
    println!(
        "{size:>6} {cache:<5} {:>4} {:>7.1} s {:>5.0} MiB {:>6} {:>5} {:>10} {:>10} {:>11} {attempt:>9} {own:>6}",
        m.exit.map_or("sig".to_string(), |c| c.to_string()),
        wall,
        m.peak_kib as f64 / 1024.0,
        m.pylint_before
            .map_or("n/a".to_string(), |s| format!("{s:.2}")),
        m.requests.len(),
        shown(max(Some(RequestKind::Plan))),
        shown(max(None)),
        total
    );
    if m.logged.len() != m.requests.len() {
        println!(
            "       ({} model calls in the experiment log, {} requests received)",
            m.logged.len(),
            m.requests.len()
        );
    }
    for call in m.logged.iter().filter(|c| !c.answered) {
        println!(
            "       an {} call of {} prompt characters got no reply (refused or failed)",
            call.agent, call.chars
        );
    }
    if let Some(t) = &m.time {
        let stages: Vec<String> = STAGES
            .iter()
            .zip(&t.stages)
            .map(|(name, s)| format!("{name} {:.2}/{:.2}", s.own(), s.wall))
            .collect();
        println!(
            "       own/wall s: {}; outside the run {:.2}",
            stages.join(", "),
            (wall - t.run).max(0.0)
        );
    }
    let (lines, chars) = m.stderr_size;
    if chars > 20_000 {
        println!("       stderr: {lines} lines, {chars} characters");
    }
    if let Some(why) = &m.failure {
        println!("       not green: {why}");
    }
}

/// A generated repository and the folders around it.
struct Bench {
    tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    cwd: PathBuf,
    project: ScaleProject,
    /// The commit the project was imported as.
    start: String,
}

impl Bench {
    /// Generates and commits a repository of `size` files, for the user
    /// whose home is `home`.
    fn generate(size: usize, home: &Path) -> Bench {
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = tmp.path().join("repo");
        let home = home.to_path_buf();
        let cwd = tmp.path().join("cwd");
        for dir in [&root, &cwd] {
            fs::create_dir_all(dir).expect("create a bench folder");
        }
        let started = Instant::now();
        let project = scale::write_project(&root, size);
        git(&root, &home, &["init", "--quiet", "--initial-branch=main"]);
        git(&root, &home, &["config", "user.name", "Bench User"]);
        git(&root, &home, &["config", "user.email", "bench@example.com"]);
        git(&root, &home, &["add", "-A"]);
        // git's automatic gc, which a commit of thousands of files starts,
        // finishes here as part of the import instead of repacking in the
        // background while swarm is measured.
        git(
            &root,
            &home,
            &[
                "-c",
                "gc.autoDetach=false",
                "commit",
                "--quiet",
                "-m",
                "import the project",
            ],
        );
        let start = git_output(&root, &home, &["rev-parse", "HEAD"]);
        eprintln!(
            "scale: {size} files generated and committed in {:.1} s; running swarm",
            started.elapsed().as_secs_f64()
        );
        Bench {
            tmp,
            root,
            home,
            cwd,
            project,
            start,
        }
    }

    /// The user takes the run's delivery back (`swarm undo` does the same)
    /// and a new experiment log starts: the repository is as generated.
    fn undo(&self) {
        git(
            &self.root,
            &self.home,
            &["reset", "--quiet", "--hard", &self.start],
        );
        let _ = fs::remove_dir_all(self.cwd.join("logs"));
    }

    /// Keeps the folder when `SWARM_SCALE_KEEP=1`.
    fn finish(self) {
        if std::env::var("SWARM_SCALE_KEEP").is_ok_and(|v| v == "1") {
            eprintln!("scale: kept {}", self.tmp.keep().display());
        }
    }
}

/// Runs swarm on `bench`'s repository with `cache` and measures.
fn run(bench: &Bench, cache: &Path) -> Measured {
    let model = ModelServer::start(bench.project.clone());
    run_with(bench, cache, &model)
}

/// Runs swarm on `bench`'s repository with `cache` against `model`, and
/// measures.
fn run_with(bench: &Bench, cache: &Path, model: &ModelServer) -> Measured {
    let (tmp, root, home, cwd, project) = (
        &bench.tmp,
        &bench.root,
        &bench.home,
        &bench.cwd,
        &bench.project,
    );
    // Every run starts on a quiet disk: what the bench wrote (the generated
    // repository, the undo, the last run's files) is on the disk first, so
    // its write-back is not timed as this run's.
    settle_disk();
    let stdout_path = tmp.path().join("stdout");
    let stderr_path = tmp.path().join("stderr");
    let started = Instant::now();
    let mut command = match std::env::var("SWARM_SCALE_WRAP") {
        Ok(wrap) if !wrap.is_empty() => {
            let mut words = wrap.split_whitespace();
            let mut wrapped = Command::new(words.next().unwrap_or_default());
            wrapped.args(words).arg(env!("CARGO_BIN_EXE_swarm"));
            wrapped
        }
        _ => Command::new(env!("CARGO_BIN_EXE_swarm")),
    };
    command
        .current_dir(cwd)
        .arg("--target_dir")
        .arg(root)
        .args(["--provider", "openai", "--base-url"])
        .arg(format!("{}/v1", model.base_url()))
        // The loopback server stands for a hosted model: its defaults.
        .args(["--local-model", "false"])
        .arg("--json")
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("SWARM_CACHE_DIR", cache)
        .env("NO_COLOR", "1");
    for name in PROVIDER_ENV {
        command.env_remove(name);
    }
    let mut child = command
        .env("OPENAI_API_KEY", "sk-scale-bench-dummy")
        .stdin(Stdio::null())
        .stdout(fs::File::create(&stdout_path).expect("stdout file"))
        .stderr(fs::File::create(&stderr_path).expect("stderr file"))
        .spawn()
        .expect("swarm starts");
    let mut peak_kib = 0;
    let status = loop {
        if let Some(kib) = peak_rss_kib(child.id()) {
            peak_kib = peak_kib.max(kib);
        }
        if let Some(status) = child.try_wait().expect("wait for swarm") {
            break status;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let wall = started.elapsed();
    let requests = model.requests();

    let stdout = fs::read_to_string(&stdout_path).unwrap_or_default();
    let stderr = fs::read_to_string(&stderr_path).unwrap_or_default();
    let log = read_log(&cwd.join("logs/experiment_data.json"));
    let logged = log
        .iter()
        .filter(|e| e["details"]["kind"] == "llm_call")
        .map(|e| LoggedCall {
            agent: e["agent"].as_str().unwrap_or("?").to_string(),
            chars: e["details"]["input_prompt"]
                .as_str()
                .map_or(0, |p| p.chars().count()),
            answered: e["status"] == "SUCCESS",
        })
        .collect();
    let summary: Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    let failure = why_not_green(status.code(), &summary, &stderr, root, project);
    Measured {
        exit: status.code(),
        wall,
        peak_kib,
        requests,
        logged,
        pylint_before: summary["pylint_before"].as_f64(),
        stderr_size: (stderr.lines().count(), stderr.chars().count()),
        failure,
        time: RunTime::from_log(&log),
    }
}

/// `None` when the run ended green and the fix is on the user's branch;
/// else what went wrong, clipped to a line a reader can take in.
fn why_not_green(
    exit: Option<i32>,
    summary: &Value,
    stderr: &str,
    root: &Path,
    project: &ScaleProject,
) -> Option<String> {
    if exit != Some(0) {
        // swarm's own last word: its one-line error, or the last line.
        let lines = || stderr.lines().rev().filter(|l| !l.trim().is_empty());
        let said = lines()
            .find(|l| l.starts_with("swarm: ") && !l.starts_with("swarm: run "))
            .or_else(|| lines().next())
            .unwrap_or("(no stderr)");
        return Some(format!(
            "exit {}, stop reason {}: {} ({} characters)",
            exit.map_or("by signal".to_string(), |c| c.to_string()),
            summary["stop_reason"],
            clip(said, 400),
            said.chars().count()
        ));
    }
    if summary["status"] != "success" {
        return Some(format!(
            "the summary is not a success: {}",
            clip(&summary.to_string(), 400)
        ));
    }
    let on_disk = fs::read_to_string(root.join(&project.buggy_path)).unwrap_or_default();
    if on_disk != project.fixed_text() {
        return Some(format!("{} is not the fixed version", project.buggy_path));
    }
    None
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head}…")
}

/// swarm's peak resident memory so far (VmHWM), in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Writes every dirty page to the disk (`sync`); a failure only warns.
fn settle_disk() {
    if !Command::new("sync").status().is_ok_and(|s| s.success()) {
        eprintln!("scale: `sync` failed; the run may pay for the bench's own writes");
    }
}

/// `git args` in `dir`; its stdout, trimmed.
fn git_output(dir: &Path, home: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git can be started");
    assert!(output.status.success(), "git {args:?} failed");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Runs git in `dir` with a hermetic environment; panics when it fails.
fn git(dir: &Path, home: &Path, args: &[&str]) {
    let output = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_DATE", "2026-01-01T12:00:00+00:00")
        .env("GIT_COMMITTER_DATE", "2026-01-01T12:00:00+00:00")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .expect("git can be started");
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn read_log(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}
