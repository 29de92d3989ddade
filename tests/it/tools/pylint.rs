//! Real pylint on small projects, and a fake old pylint for the json fallback.

use std::time::{Duration, Instant};

use swarm::cancel::Cancel;
use swarm::tools::*;

use crate::support::*;

#[test]
fn pylint_gives_a_score_and_messages() {
    let dir = project(&[
        ("pkg/__init__.py", "\"\"\"Package.\"\"\"\n"),
        ("pkg/messy.py", "import os\n\ndef f(x):\n    y = 1\n    return x\n"),
        ("pkg/clean.py", "\"\"\"Clean module.\"\"\"\n\n\ndef double(value):\n    \"\"\"Twice the value.\"\"\"\n    return value * 2\n"),
    ]);
    let files = vec!["pkg/messy.py".to_string(), "pkg/clean.py".to_string()];
    let report = run_pylint(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        &files,
        Duration::from_secs(120),
        &Cancel::new(),
    )
    .expect("pylint runs");
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
        (unused.kind.as_str(), unused.message_id.as_str()),
        ("warning", "W0611")
    );
    assert!(report.command.contains("--output-format=json2"));
    assert!(report.output.contains("unused-import"));
}

#[test]
fn pylint_reports_syntax_errors_as_messages() {
    let dir = project(&[("broken.py", "def f(:\n    return 1\n")]);
    let report = run_pylint(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        &["broken.py".to_string()],
        Duration::from_secs(120),
        &Cancel::new(),
    )
    .expect("a syntax error is still a report");
    let syntax = report
        .messages
        .iter()
        .find(|m| m.symbol == "syntax-error")
        .expect("syntax-error message");
    assert_eq!(
        (syntax.path.as_str(), syntax.line, syntax.kind.as_str()),
        ("broken.py", 1, "error")
    );
}

#[test]
fn a_file_pylint_cannot_finish_in_time_is_skipped_not_fatal() {
    let dir = project(&[("a.py", "X = 1\n")]);
    let report = run_pylint(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        &["a.py".to_string()],
        Duration::from_millis(50),
        &Cancel::new(),
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

/// A fake interpreter standing for pylint 2.x: it rejects `json2` like old
/// pylint does and answers `json` with a list and a rating line.
const OLD_PYLINT: &str = r#"#!/bin/sh
case "$*" in
  *json2*) echo "pylint.exceptions.InvalidReporterError: json2" >&2; exit 1 ;;
esac
echo '[{"type": "warning", "module": "a", "obj": "", "line": 2, "column": 0, "path": "a.py", "symbol": "unused-import", "message": "Unused import os", "message-id": "W0611"}]'
echo 'Your code has been rated at 6.50/10'
exit 4
"#;

#[test]
fn old_pylint_falls_back_to_json_and_the_rating_line() {
    let dir = project(&[("a.py", "X = 1\nimport os\n")]);
    let fake = script(dir.path(), "old-python", OLD_PYLINT);
    for version in ["4.1.4", "2.17.7"] {
        let env = PythonEnv {
            python: fake.clone(),
            pylint_version: version.to_string(),
            ..system_env()
        };
        let report = run_pylint(
            &env,
            &sandbox_for(dir.path()),
            dir.path(),
            &["a.py".to_string()],
            Duration::from_secs(10),
            &Cancel::new(),
        )
        .expect("fallback works");
        assert_eq!(report.score, Some(6.5), "pylint {version}");
        assert_eq!(report.messages.len(), 1);
        assert_eq!(report.messages[0].message_id, "W0611");
        assert!(report.command.contains("--output-format=json "));
    }
}

#[test]
fn pylint_without_files_reports_nothing() {
    let dir = project(&[]);
    let report = run_pylint(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        &[],
        Duration::from_secs(10),
        &Cancel::new(),
    )
    .expect("nothing to lint is not an error");
    assert!(report.messages.is_empty());
    assert_eq!(report.score, None);
}

#[test]
fn a_large_report_is_parsed_whole() {
    // 400 `eval-used` warnings: a JSON report far beyond the default capture cap.
    let source: String = (0..400).map(|i| format!("X{i} = eval('{i}')\n")).collect();
    let dir = project(&[("many.py", &source)]);
    let report = run_pylint(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        &["many.py".to_string()],
        Duration::from_secs(120),
        &Cancel::new(),
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
    let report = run_pylint(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        &files,
        Duration::from_secs(120),
        &Cancel::new(),
    )
    .expect("pylint runs");
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

/// A fake interpreter standing for pylint: it answers json2 at once with
/// one message per file, but takes 30 s over any file named `slow*.py`,
/// and, with `SLOW_TOGETHER` in its name, over 3 or more files at once.
const SLOW_PYLINT: &str = r#"#!/bin/sh
count=0
for a in "$@"; do
  case "$a" in
    *slow*.py) sleep 30 ;;
    -*) ;;
    *.py) count=$((count + 1)) ;;
  esac
done
case "$0" in
  *SLOW_TOGETHER*) [ "$count" -ge 3 ] && sleep 30 ;;
esac
printf '{"messages": ['
sep=''
for a in "$@"; do
  case "$a" in
    -*) ;;
    *.py) printf '%s{"type": "convention", "symbol": "missing-module-docstring", "message": "Missing module docstring", "messageId": "C0114", "line": 1, "column": 0, "path": "%s"}' "$sep" "$a"; sep=', ' ;;
  esac
done
printf '], "statistics": {"score": 7.5}}\n'
exit 16
"#;

fn fake_env(dir: &std::path::Path, name: &str) -> PythonEnv {
    PythonEnv {
        python: script(dir, name, SLOW_PYLINT),
        ..system_env()
    }
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
    let env = fake_env(dir.path(), "python-slow");
    let sandbox = sandbox_for(dir.path());
    let files = names(&["a.py", "b.py", "slow_generated.py", "c.py", "d.py"]);
    let lint = || {
        let started = Instant::now();
        let report = run_pylint(
            &env,
            &sandbox,
            dir.path(),
            &files,
            Duration::from_secs(2),
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
fn files_slow_only_together_give_a_report_without_a_score() {
    let dir = project(&[
        ("a.py", "A = 1\n"),
        ("b.py", "B = 1\n"),
        ("c.py", "C = 1\n"),
        ("d.py", "D = 1\n"),
    ]);
    let env = fake_env(dir.path(), "python-SLOW_TOGETHER");
    let report = run_pylint(
        &env,
        &sandbox_for(dir.path()),
        dir.path(),
        &names(&["a.py", "b.py", "c.py", "d.py"]),
        Duration::from_secs(2),
        &Cancel::new(),
    )
    .expect("not an error");
    assert_eq!(report.score, None);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("on the remaining 4 file(s) as well: no score this time")),
        "{:?}",
        report.notes
    );
}

#[test]
fn cancelling_the_search_for_slow_files_is_an_error() {
    let dir = project(&[("a.py", "A = 1\n"), ("slow.py", "S = 1\n")]);
    let env = fake_env(dir.path(), "python-slow");
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
        Duration::from_secs(2),
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
    let env = fake_env(dir.path(), "python-fast");
    let report = run_pylint(
        &env,
        &sandbox_for(dir.path()),
        dir.path(),
        &files,
        Duration::from_secs(60),
        &Cancel::new(),
    )
    .expect("the fake lints");
    assert_eq!(report.messages.len(), 10_000);
    assert!(
        report.command.ends_with("m9.py … and 9,990 more files"),
        "{}",
        report.command
    );
    assert!(report.command.len() < 600, "{}", report.command.len());
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
    let err = run_pylint(
        &env,
        &sandbox_for(dir.path()),
        dir.path(),
        &names(&["a.py"]),
        Duration::from_secs(30),
        &Cancel::new(),
    )
    .expect_err("a crash is a failure");
    let ToolError::Failed { message, .. } = err else {
        panic!("expected Failed, got {err:?}");
    };
    assert_eq!(message, "killed by signal 11");
}
