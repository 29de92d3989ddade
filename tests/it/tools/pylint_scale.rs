//! pylint at scale with real pylint: batches in parallel give the score and
//! messages of one plain run, results are cached by content, and a batch
//! that times out costs only its own lint.

use std::path::Path;
use std::time::Duration;

use swarm::cancel::Cancel;
use swarm::tools::*;

use super::pylint::plain_pylint;
use crate::support::fake_pylint::fake_pylint_env;
use crate::support::*;

/// A project of `modules` modules in packages of 25, with varied messages:
/// conventions, warnings, refactors, errors (some found by inference across
/// modules), a file with a syntax error, an empty file, and a configuration
/// with a problem of its own (counted once however many batches run).
fn varied_project(modules: usize) -> (tempfile::TempDir, Vec<String>) {
    let dir = project(&[(
        "pyproject.toml",
        "[tool.pylint.main]\nbogus-option = 1\n\n[tool.pylint.\"messages control\"]\ndisable = [\"too-few-public-methods\"]\n",
    )]);
    let mut files = Vec::new();
    for package in 0..modules.div_ceil(25) {
        let init = format!("pkg{package}/__init__.py");
        write(
            dir.path(),
            &init,
            &format!("\"\"\"Package {package}.\"\"\"\n"),
        );
        files.push(init);
    }
    for i in 0..modules {
        let package = i / 25;
        let path = format!("pkg{package}/mod{i}.py");
        let text = match i % 6 {
            0 => format!(
                "\"\"\"Module {i}.\"\"\"\nimport os\n\n\ndef func_{i}(arg_{i}):\n    \"\"\"Add {i}.\"\"\"\n    spare_{i} = {i}\n    return arg_{i} + {i}\n"
            ),
            1 => format!(
                "def func_{i}(arg_{i}):\n    if arg_{i} > {i}:\n        return arg_{i}\n    else:\n        return {i}\n"
            ),
            2 => format!(
                "\"\"\"Module {i}.\"\"\"\n\nVALUE_{i} = undefined_name_{i} + {i}\n"
            ),
            // Inference through another module: func_{j} takes one argument.
            3 => {
                let j = i - 3;
                format!(
                    "\"\"\"Module {i}.\"\"\"\nfrom pkg{}.mod{j} import func_{j}\n\nRESULT_{i} = func_{j}({i}, {j})\n",
                    j / 25
                )
            }
            4 => format!(
                "\"\"\"Module {i}.\"\"\"\n\n\nclass Thing{i}:\n    \"\"\"A thing.\"\"\"\n\n    def __init__(self):\n        self.value_{i} = {i}\n\n    def get_{i}(self):\n        \"\"\"The value.\"\"\"\n        return self.value_{i}\n"
            ),
            _ => format!("\"\"\"Module {i}.\"\"\"\nCONSTANT_{i} = {i}\n"),
        };
        write(dir.path(), &path, &text);
        files.push(path);
    }
    write(dir.path(), "broken.py", "def f(:\n    return 1\n");
    write(dir.path(), "empty.py", "");
    files.push("broken.py".into());
    files.push("empty.py".into());
    (dir, files)
}

fn settings(batch_files: usize) -> LintSettings {
    LintSettings {
        batch_files,
        processes: 2,
        ..LintSettings::new(Duration::from_secs(120))
    }
}

fn sorted_messages(report: &LintReport) -> Vec<(String, u32, u32, String)> {
    let mut messages: Vec<(String, u32, u32, String)> = report
        .messages
        .iter()
        .map(|m| (m.path.clone(), m.line, m.column, m.symbol.clone()))
        .collect();
    messages.sort();
    messages
}

fn run(root: &Path, files: &[String], settings: &LintSettings, cache: &LintCache) -> LintReport {
    run_pylint(
        &system_env(),
        &sandbox_for(root),
        root,
        files,
        settings,
        cache,
        &Cancel::new(),
    )
    .expect("pylint runs")
}

#[test]
fn batches_in_parallel_give_the_score_and_messages_of_one_plain_run() {
    let (dir, files) = varied_project(300);
    let batched = run(dir.path(), &files, &settings(40), &LintCache::in_memory());
    assert!(batched.batches.len() >= 8, "{:?}", batched.batches);
    assert!(batched
        .batches
        .iter()
        .all(|b| b.files <= 40 && b.outcome == "linted"));
    assert_eq!(batched.linted, files.len());

    let plain = plain_pylint(dir.path(), &files);
    assert_eq!(sorted_messages(&batched), plain.messages);
    assert_eq!(batched.score, plain.score);
    assert_eq!(sorted_messages(&batched), plain.messages);
    let symbols: std::collections::BTreeSet<&str> =
        plain.messages.iter().map(|m| m.3.as_str()).collect();
    for expected in [
        "syntax-error",
        "undefined-variable",
        "too-many-function-args",
        "unused-import",
        "unused-variable",
        "no-else-return",
        "missing-module-docstring",
        "unrecognized-option",
    ] {
        assert!(symbols.contains(expected), "{expected} not in {symbols:?}");
    }
    let config_problems = batched
        .messages
        .iter()
        .filter(|m| m.symbol == "unrecognized-option")
        .count();
    assert_eq!(config_problems, 1, "counted once, as in one run");
}

#[test]
fn an_unchanged_tree_comes_from_the_cache_and_a_change_relints_the_file_and_its_importers() {
    let (dir, files) = varied_project(60);
    let cache_dir = tempfile::tempdir().expect("cache dir");
    let settings = settings(25);
    let first = run(
        dir.path(),
        &files,
        &settings,
        &LintCache::new(Some(cache_dir.path())),
    );
    assert_eq!((first.linted, first.from_cache), (files.len(), 0));

    // Another run (a new cache over the same folder): no pylint at all.
    let second = run(
        dir.path(),
        &files,
        &settings,
        &LintCache::new(Some(cache_dir.path())),
    );
    assert_eq!((second.linted, second.from_cache), (0, files.len()));
    assert!(second.batches.is_empty(), "{:?}", second.batches);
    assert_eq!(second.score, first.score);
    assert_eq!(second.messages, first.messages);

    // mod0 is imported by mod3 (and belongs to pkg0, whose __init__ it does
    // not change): give func_0 a second parameter.
    write(
        dir.path(),
        "pkg0/mod0.py",
        "\"\"\"Module 0.\"\"\"\n\n\ndef func_0(arg_0, extra):\n    \"\"\"Add.\"\"\"\n    return arg_0 + extra\n",
    );
    let cache = LintCache::new(Some(cache_dir.path()));
    let third = run(dir.path(), &files, &settings, &cache);
    assert_eq!(third.linted, 2, "{:?}", third.batches);
    assert_eq!(third.from_cache, files.len() - 2);
    let plain = plain_pylint(dir.path(), &files);
    assert_eq!(third.score, plain.score);
    assert_eq!(sorted_messages(&third), plain.messages);
    assert!(!third
        .messages
        .iter()
        .any(|m| m.path == "pkg0/mod3.py" && m.symbol == "too-many-function-args"));

    // The same measurement again in this process: memory alone.
    let fourth = run(dir.path(), &files, &settings, &cache);
    assert_eq!(fourth.from_cache, files.len());
    assert!(fourth.batches.is_empty());

    // A configuration change touches every key.
    write(dir.path(), "setup.cfg", "[metadata]\nname = x\n");
    let fifth = run(dir.path(), &files, &settings, &cache);
    assert_eq!(fifth.linted, files.len());
}

#[test]
fn batches_that_time_out_cost_their_own_lint_not_the_run() {
    let dir = project(&[]);
    let mut files = Vec::new();
    for i in 0..4 {
        files.push(format!("ok_{i}.py"));
    }
    for i in 0..48 {
        files.push(format!("slow_{i}.py"));
    }
    for file in &files {
        write(dir.path(), file, "import os\n");
    }
    let env = fake_pylint_env(dir.path(), "python-hangs");
    let settings = LintSettings {
        batch_files: 4,
        processes: 2,
        ..LintSettings::new(Duration::from_millis(500))
    };
    let report = run_pylint(
        &env,
        &sandbox_for(dir.path()),
        dir.path(),
        &files,
        &settings,
        &LintCache::in_memory(),
        &Cancel::new(),
    )
    .expect("timeouts are not an error");
    // The batch of good files is linted and scored: 4 warnings, 16 statements.
    assert_eq!(report.linted, 4);
    assert_eq!(report.score, Some(7.5));
    let skipped: Vec<&str> = report.skipped.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(skipped.len(), 48, "{skipped:?}");
    assert!(skipped.iter().all(|p| p.starts_with("slow_")));
    assert!(report
        .skipped
        .iter()
        .any(|s| s.reason == "pylint did not finish it within 0.5s"));
    assert!(report
        .skipped
        .iter()
        .any(|s| s.reason.contains("ran out of runs")));
    // 13 batches, plus at most the search's 16 extra runs.
    assert!(report.batches.len() <= 13 + 16, "{}", report.batches.len());
    // 12 batches did not finish: 10 notes, a count, then the skips.
    assert!(
        report.notes[..10]
            .iter()
            .all(|n| n.starts_with("pylint timed out after 0.5s on 4 file(s)")),
        "{:?}",
        report.notes
    );
    assert_eq!(
        report.notes[10],
        "pylint did not finish 2 more batch(es) within the timeout either"
    );
    assert_eq!(report.notes.len(), 11 + 11, "{:?}", report.notes);
    assert!(report
        .notes
        .iter()
        .any(|n| n == "skipped the lint of 38 more file(s) for the same reasons"));
}
