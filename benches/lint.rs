//! `cargo bench --bench lint`: pylint over a generated repository of small
//! modules (10,000 by default; `LINT_BENCH_FILES` changes it) with swarm's
//! default lint settings: the cold lint (nothing cached), a warm lint in a
//! new process' cache over the same folder (a second run), the same
//! measurement again in memory (the Judge's next attempt), and a lint after
//! one module changed (only it and its importers are linted again).
//!
//! For scale, `LINT_BENCH_PLAIN=1` also times one plain pylint process over
//! every file, as swarm ran it before batching.

use std::path::Path;
use std::time::{Duration, Instant};

use swarm::cancel::Cancel;
use swarm::tools::{
    resolve_env, run_pylint, LintCache, LintReport, LintSettings, Sandbox, SandboxPolicy,
};

/// Modules per package.
const PACKAGE: usize = 100;

/// Writes `count` small modules in packages of [`PACKAGE`]; every tenth
/// imports the module before it. Returns the files, relative to `root`.
fn generate(root: &Path, count: usize) -> Vec<String> {
    let mut files = Vec::new();
    for package in 0..count.div_ceil(PACKAGE) {
        let init = format!("pkg{package}/__init__.py");
        write(root, &init, &format!("\"\"\"Package {package}.\"\"\"\n"));
        files.push(init);
    }
    for i in 0..count {
        let path = format!("pkg{}/mod{i}.py", i / PACKAGE);
        let import = if i % 10 == 1 {
            let j = i - 1;
            format!("from pkg{}.mod{j} import value_{j}\n", j / PACKAGE)
        } else {
            String::new()
        };
        let text = format!(
            "\"\"\"Module {i}.\"\"\"\n{import}\n\ndef value_{i}(number):\n    \"\"\"Return the number plus {i}.\"\"\"\n    return number + {i}\n"
        );
        write(root, &path, &text);
        files.push(path);
    }
    files
}

fn write(root: &Path, path: &str, text: &str) {
    let full = root.join(path);
    std::fs::create_dir_all(full.parent().expect("a parent")).expect("mkdir");
    std::fs::write(full, text).expect("write");
}

fn line(label: &str, took: Duration, report: &LintReport) {
    println!(
        "{label:<28} {:>8.1}s  linted {:>6}  from cache {:>6}  pylint runs {:>4}  skipped {:>3}  score {:?}",
        took.as_secs_f64(),
        report.linted,
        report.from_cache,
        report.batches.len(),
        report.skipped.len(),
        report.score
    );
}

fn main() {
    let count: usize = std::env::var("LINT_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let repo = tempfile::tempdir().expect("temp dir");
    let cache_dir = tempfile::tempdir().expect("cache dir");
    let root = repo.path();
    let files = generate(root, count);
    let env = resolve_env(root, false, &|_| {}).expect("python3 with pylint");
    let sandbox = Sandbox::new(SandboxPolicy::for_worktree(root), &env).expect("sandbox");
    let settings = LintSettings::new(Duration::from_secs(30));
    let cancel = Cancel::new();
    println!(
        "{} files, pylint {}, {} processes at once, batches of up to {} files / {} bytes",
        files.len(),
        env.pylint_version,
        settings.processes,
        settings.batch_files,
        settings.batch_bytes
    );
    let lint = |cache: &LintCache| {
        let started = Instant::now();
        let report = run_pylint(&env, &sandbox, root, &files, &settings, cache, &cancel)
            .expect("pylint runs");
        (started.elapsed(), report)
    };

    let (took, cold) = lint(&LintCache::new(Some(cache_dir.path())));
    line("cold (nothing cached)", took, &cold);
    let cache = LintCache::new(Some(cache_dir.path()));
    let (took, warm) = lint(&cache);
    line("warm (new run, on disk)", took, &warm);
    assert_eq!(warm.score, cold.score, "the cached score is the same");
    let (took, again) = lint(&cache);
    line("warm (same run, memory)", took, &again);
    write(
        root,
        "pkg0/mod0.py",
        "\"\"\"Module 0, changed.\"\"\"\n\n\ndef value_0(number):\n    \"\"\"Return the number.\"\"\"\n    return number\n",
    );
    let (took, changed) = lint(&cache);
    line("one module changed", took, &changed);

    if std::env::var_os("LINT_BENCH_PLAIN").is_some() {
        let started = Instant::now();
        let status = std::process::Command::new(&env.python)
            .args([
                "-m",
                "pylint",
                "--persistent=n",
                "--jobs=1",
                "--output-format=json2",
            ])
            .args(&files)
            .current_dir(root)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("pylint runs");
        println!(
            "{:<28} {:>8.1}s  (exit {status})",
            "one plain pylint process",
            started.elapsed().as_secs_f64()
        );
    }
}
