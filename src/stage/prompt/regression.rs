//! What a regressed attempt broke, for the next prompt on its file: the
//! tests that passed before it and failed after it, with their tracebacks,
//! and the hunks of the attempt's diff (the lines that caused it).

use std::fmt::Write as _;

use super::trim::Trim;
use super::{clip, one_line, stable, tail_lines, PastAttempt};
use crate::pipeline::Snapshot;
use crate::pipeline::TestCase;

/// At most this many broken tests are named.
const MAX_BROKEN: usize = 4;
/// At most this many lines of the attempt's hunks are shown.
const MAX_HUNK_LINES: usize = 40;
/// Traceback lines per broken test when the trim keeps tracebacks.
const TRACE_LINES: usize = 12;

/// The tests that passed in `before` and fail in `after`, in `after`'s
/// order: what an attempt judged regressed broke.
pub fn broken_tests(before: &Snapshot, after: &Snapshot) -> Vec<TestCase> {
    let Some(passed) = before.tests.as_ref().map(|t| &t.passed) else {
        return Vec::new();
    };
    after
        .failing()
        .iter()
        .filter(|case| passed.contains(&case.id))
        .cloned()
        .collect()
}

/// The hunks of a unified diff: its `@@` sections with their lines, file
/// headers left out.
fn hunks(diff: &str) -> String {
    let mut out = Vec::new();
    let mut inside = false;
    for line in diff.lines() {
        if line.starts_with("@@") {
            inside = true;
        } else if line.starts_with("--- ") || line.starts_with("+++ ") || line.starts_with("diff ")
        {
            inside = false;
            continue;
        }
        if inside {
            out.push(line);
        }
    }
    let shown = out.len().min(MAX_HUNK_LINES);
    let mut text = out[..shown].join("\n");
    if out.len() > shown {
        let _ = write!(text, "\n… ({} more lines)", out.len() - shown);
    }
    text
}

/// The section naming what the latest attempt broke, when it was judged
/// regressed with tests that broke; nothing otherwise.
pub(super) fn regression_section(p: &mut String, history: &[PastAttempt], trim: &Trim) {
    let Some(last) = history.last().filter(|a| !a.broke.is_empty()) else {
        return;
    };
    let _ = writeln!(
        p,
        "\n## Tests your last change broke\n{}: {} — not kept: these tests passed before it and \
         failed after it.",
        last.label,
        clip(&last.summary, 200)
    );
    let trace_lines = trim.trace_lines.min(TRACE_LINES);
    for case in last.broke.iter().take(MAX_BROKEN) {
        let message = one_line(case.message.as_deref());
        let _ = writeln!(p, "### {}\n{}", case.id, stable(&message));
        if let (Some(details), true) = (&case.details, trace_lines > 0) {
            let _ = writeln!(p, "```\n{}\n```", stable(&tail_lines(details, trace_lines)));
        }
    }
    if last.broke.len() > MAX_BROKEN {
        let _ = writeln!(p, "({} more broken tests)", last.broke.len() - MAX_BROKEN);
    }
    if let (Some(diff), true) = (&last.diff, trim.history_entries > 0) {
        let _ = writeln!(
            p,
            "The lines of that change:\n```diff\n{}\n```\nKeep what it fixed; do not break these \
             tests again.",
            hunks(diff)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::TestOutcome;
    use crate::pipeline::TestState;

    fn case(id: &str, message: &str) -> TestCase {
        TestCase {
            id: id.into(),
            outcome: TestOutcome::Failed,
            message: Some(message.into()),
            details: Some(format!("tests/t.py:3: in {id}\nE   {message}")),
        }
    }

    fn snapshot(passed: &[&str], failing: Vec<TestCase>) -> Snapshot {
        Snapshot {
            tests: Some(TestState {
                passed: passed.iter().map(|s| s.to_string()).collect(),
                total: passed.len() + failing.len(),
                failing,
                ..TestState::default()
            }),
            checks: None,
            lint_score: None,
            lint: Default::default(),
        }
    }

    #[test]
    fn broken_tests_are_those_that_passed_before() {
        let before = snapshot(&["t::a", "t::b"], vec![case("t::c", "x")]);
        let after = snapshot(
            &["t::c"],
            vec![case("t::a", "assert None == 50.0"), case("t::d", "new")],
        );
        let broke = broken_tests(&before, &after);
        assert_eq!(broke.len(), 1);
        assert_eq!(broke[0].id, "t::a");
        assert!(broken_tests(&after, &after).is_empty());
    }

    #[test]
    fn the_section_names_tests_traceback_and_hunks_of_the_last_attempt_only() {
        let diff = "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n def f():\n-    return 1\n+    1\n";
        let regressed = PastAttempt {
            label: "attempt 2".into(),
            summary: "fix f".into(),
            outcome: "the Judge found it regressed: 3/5 passed".into(),
            diff: Some(diff.into()),
            broke: vec![case("tests/t.py::test_f", "assert None == 1")],
        };
        let trim = super::super::trim::TRIMS[0];
        let mut p = String::new();
        regression_section(&mut p, std::slice::from_ref(&regressed), &trim);
        assert!(p.contains("## Tests your last change broke"), "{p}");
        assert!(
            p.contains("### tests/t.py::test_f\nassert None == 1"),
            "{p}"
        );
        assert!(p.contains("E   assert None == 1"), "{p}");
        assert!(
            p.contains("@@ -1,3 +1,3 @@\n def f():\n-    return 1\n+    1"),
            "{p}"
        );
        assert!(!p.contains("+++ b/m.py"), "{p}");
        // An older regression is not repeated once a later attempt came.
        let later = PastAttempt {
            label: "attempt 3".into(),
            ..PastAttempt::default()
        };
        let mut q = String::new();
        regression_section(&mut q, &[regressed, later], &trim);
        assert!(q.is_empty(), "{q}");
    }
}
