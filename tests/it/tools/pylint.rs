//! Real pylint on small projects, and a fake old pylint for the json fallback.

use std::time::Duration;

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
fn pylint_timeout_is_a_failure_naming_it() {
    let dir = project(&[("a.py", "X = 1\n")]);
    let err = run_pylint(
        &system_env(),
        dir.path(),
        &["a.py".to_string()],
        Duration::from_millis(50),
        &Cancel::new(),
    )
    .expect_err("50 ms is too short for pylint");
    let ToolError::Failed { command, message } = err else {
        panic!("expected Failed, got {err:?}");
    };
    assert!(command.contains("pylint"));
    assert!(message.contains("timed out"), "{message}");
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
