//! Real pylint on small projects, and fake pylints for timeouts, crashes and
//! huge file lists. Batching, the exact score and the cache are in
//! `pylint_scale`.

use std::path::Path;
use std::time::{Duration, Instant};

use swarm::cancel::Cancel;
use swarm::tools::*;

use crate::support::fake_pylint::fake_pylint_env;
use crate::support::*;

/// pylint with the default settings, nothing cached before.
pub fn lint(
    env: &PythonEnv,
    root: &Path,
    files: &[String],
    timeout: Duration,
) -> Result<LintReport, ToolError> {
    run_pylint(
        env,
        &sandbox_for(root),
        root,
        files,
        &LintSettings::new(timeout),
        &LintCache::in_memory(),
        &Cancel::new(),
    )
}

#[test]
fn pylint_gives_a_score_and_messages() {
    let dir = project(&[
        ("pkg/__init__.py", "\"\"\"Package.\"\"\"\n"),
        ("pkg/messy.py", "import os\n\ndef f(x):\n    y = 1\n    return x\n"),
        ("pkg/clean.py", "\"\"\"Clean module.\"\"\"\n\n\ndef double(value):\n    \"\"\"Twice the value.\"\"\"\n    return value * 2\n"),
    ]);
    let files = vec!["pkg/messy.py".to_string(), "pkg/clean.py".to_string()];
    let report =
        lint(&system_env(), dir.path(), &files, Duration::from_secs(120)).expect("pylint runs");
    let score = report.score.expect("a score");
    assert!(score > 0.0 && score < 10.0, "{score}");
    let symbols: Vec<(&str, &str, u32)> = report
        .messages
        .iter()
        .map(|m| (m.path.as_str(), m.symbol.as_str(), m.line))
        .collect();
    for expected in [
        ("pkg/messy.py", "missing-module-docstring", 1),
        ("pkg/messy.py", "unused-import", 1),
        ("pkg/messy.py", "missing-function-docstring", 3),
        ("pkg/messy.py", "unused-variable", 4),
    ] {
        assert!(
            symbols.contains(&expected),
            "{expected:?} not in {symbols:?}"
        );
    }
    assert!(symbols.iter().all(|(path, _, _)| *path == "pkg/messy.py"));
    let unused = report
        .messages
        .iter()
        .find(|m| m.symbol == "unused-import")
        .expect("message");
    assert_eq!(
        (unused.kind.name(), unused.message_id.as_str()),
        ("warning", "W0611")
    );
    assert!(report.command.contains("--jobs=1"), "{}", report.command);
    assert!(report.command.ends_with("pkg/messy.py pkg/clean.py"));
    assert!(report.output.contains("unused-import"));
    assert_eq!((report.linted, report.from_cache), (2, 0));
    assert_eq!(report.batches.len(), 1, "a small set is one batch");
}

#[test]
fn pylint_reports_syntax_errors_as_messages() {
    let dir = project(&[("broken.py", "def f(:\n    return 1\n")]);
    let report = lint(
        &system_env(),
        dir.path(),
        &["broken.py".to_string()],
        Duration::from_secs(120),
    )
    .expect("a syntax error is still a report");
    let syntax = report
        .messages
        .iter()
        .find(|m| m.symbol == "syntax-error")
        .expect("syntax-error message");
    assert_eq!(
        (syntax.path.as_str(), syntax.line, syntax.kind.name()),
        ("broken.py", 1, "error")
    );
}

#[test]
fn a_file_pylint_cannot_finish_in_time_is_skipped_not_fatal() {
    let dir = project(&[("a.py", "X = 1\n")]);
    let report = lint(
        &system_env(),
        dir.path(),
        &["a.py".to_string()],
        Duration::from_millis(50),
    )
    .expect("a timeout is a report, not an error");
    assert_eq!(report.score, None);
    assert_eq!(
        report.skipped,
        [SkippedLint {
            path: "a.py".into(),
            reason: "pylint did not finish it within 0.05s".into()
        }]
    );
    assert!(report.command.contains("pylint"), "{}", report.command);
    assert!(
        report.notes.iter().any(|n| n.contains("no pylint score")),
        "{:?}",
        report.notes
    );
    assert!(report.output.contains("[swarm] skipped the lint of a.py"));
}

#[test]
fn a_configured_evaluation_gives_the_score_pylint_gives() {
    let dir = project(&[
        (
            "a.py",
            "import os\n\n\ndef f(x):\n    y = 1\n    return x\n",
        ),
        (
            ".pylintrc",
            "[MAIN]\nevaluation=10.0 - 3 * warning - convention / statement\n",
        ),
    ]);
    let files = vec!["a.py".to_string()];
    let report =
        lint(&system_env(), dir.path(), &files, Duration::from_secs(120)).expect("pylint runs");
    let plain = plain_pylint(dir.path(), &files);
    assert_eq!(report.score, plain.score);
    // 2 warnings, 2 conventions over 4 statements.
    assert_eq!(report.score, Some(10.0 - 6.0 - 0.5));
}

/// One plain `python -m pylint --output-format=json2` run over `files`,
/// outside swarm, with the options swarm gives its own runs (one process,
/// no saved statistics, files as given): what the batched lint must equal.
pub struct PlainRun {
    pub score: Option<f64>,
    /// (path, line, column, symbol), sorted.
    pub messages: Vec<(String, u32, u32, String)>,
}

pub fn plain_pylint(root: &Path, files: &[String]) -> PlainRun {
    let out = std::process::Command::new(real_python())
        .args(["-m", "pylint", "--output-format=json2"])
        .args(["--jobs=1", "--persistent=n", "--recursive=n"])
        .args(files)
        .current_dir(root)
        .output()
        .expect("pylint runs");
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("pylint prints json2");
    let mut messages: Vec<(String, u32, u32, String)> = report["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap_or_default().to_string(),
                m["line"].as_u64().unwrap_or(0) as u32,
                m["column"].as_u64().unwrap_or(0) as u32,
                m["symbol"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    messages.sort();
    // serde_json may read a float one unit in the last place off: the
    // score is read with Rust's exact parser.
    let text = String::from_utf8_lossy(&out.stdout);
    let score = regex::Regex::new(r#""score": (-?[0-9.eE+-]+)"#)
        .expect("valid pattern")
        .captures(&text)
        .and_then(|c| c[1].parse::<f64>().ok());
    assert_eq!(score.is_some(), report["statistics"]["score"].is_number());
    PlainRun { score, messages }
}

#[test]
fn pylint_without_files_reports_nothing() {
    let dir = project(&[]);
    let report = lint(&system_env(), dir.path(), &[], Duration::from_secs(10))
        .expect("nothing to lint is not an error");
    assert!(report.messages.is_empty());
    assert_eq!(report.score, None);
}

#[test]
fn a_large_report_is_parsed_whole() {
    // 400 `eval-used` warnings: a JSON report far beyond the default capture cap.
    let source: String = (0..400).map(|i| format!("X{i} = eval('{i}')\n")).collect();
    let dir = project(&[("many.py", &source)]);
    let report = lint(
        &system_env(),
        dir.path(),
        &["many.py".to_string()],
        Duration::from_secs(120),
    )
    .expect("pylint runs");
    let evals = report
        .messages
        .iter()
        .filter(|m| m.symbol == "eval-used")
        .count();
    assert_eq!(evals, 400);
    assert!(
        report.output.contains("bytes cut"),
        "the log copy is capped"
    );
}

#[test]
fn option_like_file_names_are_linted_not_obeyed() {
    let dir = project(&[
        ("x.py", "\"\"\"Kept.\"\"\"\nX = 1\n"),
        ("--output=x.py", "import os\n"),
        ("--init-hook=import os;os.mkdir('pwned')#.py", "Y = 2\n"),
    ]);
    let files = vec![
        "--output=x.py".to_string(),
        "--init-hook=import os;os.mkdir('pwned')#.py".to_string(),
        "x.py".to_string(),
    ];
    let report =
        lint(&system_env(), dir.path(), &files, Duration::from_secs(120)).expect("pylint runs");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("x.py")).expect("x.py"),
        "\"\"\"Kept.\"\"\"\nX = 1\n",
        "x.py was overwritten by a report"
    );
    assert!(
        !dir.path().join("pwned").exists(),
        "a file name ran as code"
    );
    assert!(
        report
            .messages
            .iter()
            .any(|m| m.path == "--output=x.py" && m.symbol == "unused-import"),
        "{:?}",
        report.messages
    );
    assert!(report.score.is_some());
    assert!(
        report.command.contains("./--output=x.py"),
        "{}",
        report.command
    );
}

fn names(files: &[&str]) -> Vec<String> {
    files.iter().map(|f| f.to_string()).collect()
}

#[test]
fn a_slow_file_is_found_skipped_with_a_note_and_remembered() {
    let dir = project(&[
        ("a.py", "A = 1\n"),
        ("b.py", "B = 1\n"),
        ("slow_generated.py", "S = 1\n"),
        ("c.py", "C = 1\n"),
        ("d.py", "D = 1\n"),
    ]);
    let env = fake_pylint_env(dir.path(), "python-slow");
    let sandbox = sandbox_for(dir.path());
    let files = names(&["a.py", "b.py", "slow_generated.py", "c.py", "d.py"]);
    let lint = || {
        let started = Instant::now();
        // Nothing cached between the calls: each lints every file it can.
        let report = run_pylint(
            &env,
            &sandbox,
            dir.path(),
            &files,
            &LintSettings::new(Duration::from_secs(2)),
            &LintCache::in_memory(),
            &Cancel::new(),
        )
        .expect("a slow file is not an error");
        (report, started.elapsed())
    };
    let (report, took) = lint();
    assert_eq!(report.score, Some(7.5), "the rest is linted in one run");
    let linted: Vec<&str> = report.messages.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(linted, ["a.py", "b.py", "c.py", "d.py"]);
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].path, "slow_generated.py");
    assert_eq!(
        report.skipped[0].reason,
        "pylint did not finish it within 2s"
    );
    assert!(
        report.notes[0].starts_with("pylint timed out after 2s on 5 file(s)"),
        "{:?}",
        report.notes
    );
    assert!(report
        .output
        .contains("[swarm] skipped the lint of slow_generated.py"));
    assert!(took >= Duration::from_secs(4), "{took:?}");

    // The same file again: skipped at once, without a timeout.
    let (again, took) = lint();
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert_eq!(again.score, Some(7.5));
    assert_eq!(again.skipped[0].path, "slow_generated.py");
    assert!(
        again.skipped[0].reason.contains("on an earlier run"),
        "{}",
        again.skipped[0].reason
    );

    // Changed, it is tried again.
    write(dir.path(), "slow_generated.py", "S = 2\n");
    let (changed, took) = lint();
    assert!(took >= Duration::from_secs(4), "{took:?}");
    assert_eq!(
        changed.skipped[0].reason,
        "pylint did not finish it within 2s"
    );
}

#[test]
fn files_slow_only_together_are_linted_in_smaller_sets() {
    let dir = project(&[
        ("a.py", "A = 1\n"),
        ("b.py", "B = 1\n"),
        ("c.py", "C = 1\n"),
        ("d.py", "D = 1\n"),
    ]);
    let env = fake_pylint_env(dir.path(), "python-SLOW_TOGETHER");
    let report = lint(
        &env,
        dir.path(),
        &names(&["a.py", "b.py", "c.py", "d.py"]),
        Duration::from_secs(2),
    )
    .expect("not an error");
    // The halves finish: every file is linted and the score is whole.
    assert_eq!(report.score, Some(7.5));
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert_eq!(report.linted, 4);
    let outcomes: Vec<(usize, &str)> = report
        .batches
        .iter()
        .map(|b| (b.files, b.outcome.as_str()))
        .collect();
    assert_eq!(
        outcomes,
        [(4, "timed out after 2s"), (2, "linted"), (2, "linted")]
    );
    assert!(
        report.notes[0].starts_with("pylint timed out after 2s on 4 file(s)"),
        "{:?}",
        report.notes
    );
}

#[test]
fn cancelling_the_search_for_slow_files_is_an_error() {
    let dir = project(&[("a.py", "A = 1\n"), ("slow.py", "S = 1\n")]);
    let env = fake_pylint_env(dir.path(), "python-slow");
    let cancel = Cancel::new();
    let flag = cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(2500));
        flag.cancel();
    });
    let started = Instant::now();
    let result = run_pylint(
        &env,
        &sandbox_for(dir.path()),
        dir.path(),
        &names(&["a.py", "slow.py"]),
        &LintSettings::new(Duration::from_secs(2)),
        &LintCache::in_memory(),
        &cancel,
    );
    canceller.join().expect("canceller");
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_huge_file_list_is_capped_in_the_command_line() {
    let dir = project(&[]);
    let files: Vec<String> = (0..10_000).map(|i| format!("m{i}.py")).collect();
    for file in &files[..3] {
        write(dir.path(), file, "M = 1\n");
    }
    let env = fake_pylint_env(dir.path(), "python-fast");
    let report = lint(&env, dir.path(), &files, Duration::from_secs(60)).expect("the fake lints");
    assert_eq!(report.messages.len(), 10_000);
    assert!(
        report.command.ends_with("m9.py … and 9,990 more files"),
        "{}",
        report.command
    );
    assert!(report.command.len() < 600, "{}", report.command.len());
    assert_eq!(report.batches.len(), 50, "batches of 200 files");
    assert_eq!(report.linted, 10_000);

    // A crash in one batch of many: the error names a short command line.
    let crashing = script(
        dir.path(),
        "python-crash-late",
        &format!(
            "#!/bin/sh\ncase \"$*\" in *m9999.py*) exec {:?} -c 'import ctypes; ctypes.string_at(0)' ;; esac\nexec {:?} \"$@\"\n",
            real_python(),
            env.python
        ),
    );
    let env = PythonEnv {
        python: crashing,
        ..system_env()
    };
    let err =
        lint(&env, dir.path(), &files, Duration::from_secs(60)).expect_err("a crash is a failure");
    let ToolError::Failed { command, message } = &err else {
        panic!("expected Failed, got {err:?}");
    };
    assert_eq!(message, "killed by signal 11");
    assert!(command.ends_with("… and 190 more files"), "{command}");
    assert!(err.to_string().len() < 600, "{err}");
}

#[test]
fn a_tool_that_crashes_is_reported_with_its_signal() {
    let dir = project(&[("a.py", "A = 1\n")]);
    // The tool process faults (SIGSEGV) as PID 1 of its namespace; the
    // runner must still see the signal, not an exit code.
    let crashing = script(
        dir.path(),
        "python-crash",
        &format!(
            "#!/bin/sh\nexec {:?} -c 'import ctypes; ctypes.string_at(0)'\n",
            real_python()
        ),
    );
    let env = PythonEnv {
        python: crashing,
        ..system_env()
    };
    let err = lint(&env, dir.path(), &names(&["a.py"]), Duration::from_secs(30))
        .expect_err("a crash is a failure");
    let ToolError::Failed { message, .. } = err else {
        panic!("expected Failed, got {err:?}");
    };
    assert_eq!(message, "killed by signal 11");
}
