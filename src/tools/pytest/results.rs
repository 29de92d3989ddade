//! The results swarm's pytest plugin writes as tests finish (JSON lines),
//! read when pytest was killed before writing its junit XML.
//!
//! Each line is one event: `collected` (every test id, in run order),
//! `start` (a test began) and `report` (one phase of a test, or a collector
//! that failed, with pytest's outcome word and, when it did not pass, its
//! message and text). A line cut short by the kill is ignored. Outcomes
//! follow the junit reading: a failed call is [`TestOutcome::Failed`], a
//! failed setup, teardown or collection [`TestOutcome::Error`], and the
//! worst phase wins. The test that had started but not finished when the
//! run was stopped fails, with the stack faulthandler dumped shortly before;
//! collected tests that never started are [`TestOutcome::NotRun`].

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::super::junit::{rank, relativize, root_prefixes, trim_details};
use super::super::{TestCase, TestOutcome};

/// One line of the results file.
#[derive(Debug, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Event {
    Collected {
        ids: Vec<String>,
    },
    Start {
        id: String,
    },
    Report {
        id: String,
        when: String,
        outcome: String,
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        details: Option<String>,
    },
}

/// Every id collected before `--swarm-only` deselected the others, from
/// the plugin's `selection` line; `None` when there is none.
pub(in crate::tools) fn selection(results: &str) -> Option<Vec<String>> {
    #[derive(Deserialize)]
    struct Selection {
        event: String,
        all: Vec<String>,
    }
    results
        .lines()
        .filter_map(|line| serde_json::from_str::<Selection>(line).ok())
        .find(|s| s.event == "selection")
        .map(|s| s.all)
}

/// What is known of one test so far.
#[derive(Debug)]
struct Progress {
    case: Option<TestCase>,
    started: bool,
    finished: bool,
}

/// Why pytest ended before writing its junit XML.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::tools) enum Cut {
    /// Killed at the whole run's limit (`--test-timeout`).
    Limit(Duration),
    /// It ended by itself (a crash, `os._exit` in a test) with this exit
    /// code, or killed by a signal (`None`).
    Ended(Option<i32>),
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cut::Limit(limit) => write!(
                f,
                "the whole test run was stopped at its limit of {} s (--test-timeout)",
                limit.as_secs()
            ),
            Cut::Ended(Some(code)) => {
                write!(f, "pytest ended early with exit code {code}")
            }
            Cut::Ended(None) => f.write_str("pytest was killed by a signal"),
        }
    }
}

/// The cases of a run `cut` short, from the plugin's `results` text and
/// faulthandler's `stacks` dump, in run order. `root` (the rootdir) is
/// removed from texts.
pub(in crate::tools) fn cases_from_results(
    results: &str,
    stacks: Option<&str>,
    root: &Path,
    cut: Cut,
) -> Vec<TestCase> {
    let prefixes = root_prefixes(root);
    let mut tests = Tests::default();
    for event in results
        .lines()
        .filter_map(|line| serde_json::from_str::<Event>(line).ok())
    {
        tests.record(event, &prefixes);
    }
    let stack = stacks
        .map(|text| trim_details(&relativize(&test_frames(text), &prefixes)))
        .filter(|s| !s.is_empty());
    let Tests { order, mut known } = tests;
    order
        .into_iter()
        .filter_map(|id| {
            let progress = known.remove(&id)?;
            Some(at_cut(id, progress, cut, stack.as_deref()))
        })
        .collect()
}

/// Every test the events named, in the order first named.
#[derive(Debug, Default)]
struct Tests {
    order: Vec<String>,
    known: HashMap<String, Progress>,
}

impl Tests {
    /// Takes in one event: a test collected, started, or one of its phases
    /// reported (the worst phase's outcome wins). `prefixes` (the rootdir's)
    /// are removed from messages and tracebacks.
    fn record(&mut self, event: Event, prefixes: &[String]) {
        match event {
            Event::Collected { ids } => {
                for id in &ids {
                    self.track(id);
                }
            }
            Event::Start { id } => self.track(&id).started = true,
            Event::Report {
                id,
                when,
                outcome,
                message,
                details,
            } => {
                let progress = self.track(&id);
                if when == "teardown" || when == "collect" {
                    progress.finished = true;
                }
                let Some(outcome) = outcome_of(&when, &outcome) else {
                    return;
                };
                let case = TestCase {
                    id,
                    outcome,
                    message: message
                        .map(|m| relativize(&m, prefixes))
                        .filter(|m| !m.is_empty()),
                    details: details
                        .map(|d| trim_details(&relativize(&d, prefixes)))
                        .filter(|d| !d.is_empty()),
                };
                if progress
                    .case
                    .as_ref()
                    .is_none_or(|old| rank(case.outcome) > rank(old.outcome))
                {
                    progress.case = Some(case);
                }
            }
        }
    }

    /// The progress of `id`, added in order when first seen.
    fn track(&mut self, id: &str) -> &mut Progress {
        if !self.known.contains_key(id) {
            self.order.push(id.to_string());
        }
        self.known.entry(id.to_string()).or_insert(Progress {
            case: None,
            started: false,
            finished: false,
        })
    }
}

/// The case of test `id` when the run was `cut`: its outcome when it
/// finished; failed (with `stack` when the dump shows it) when it had
/// started and not finished; not run when it never started.
fn at_cut(id: String, progress: Progress, cut: Cut, stack: Option<&str>) -> TestCase {
    match (progress.started, progress.finished, progress.case) {
        (_, true, Some(case)) => case,
        (true, false, case) => TestCase {
            outcome: case.map_or(TestOutcome::Failed, |c| {
                if rank(c.outcome) > rank(TestOutcome::Failed) {
                    c.outcome
                } else {
                    TestOutcome::Failed
                }
            }),
            message: Some(format!("did not finish: {cut}")),
            details: stack.filter(|s| shows_test(s, &id)).map(str::to_string),
            id,
        },
        (_, _, Some(case)) => case,
        (_, _, None) => TestCase {
            id,
            outcome: TestOutcome::NotRun,
            message: Some(format!("not run: {cut} before this test started")),
            details: None,
        },
    }
}

/// Whether a stack dump shows the test `id` running (the dump is taken
/// shortly before the kill, and another test may have run then).
fn shows_test(stack: &str, id: &str) -> bool {
    let name = id.rsplit("::").next().unwrap_or(id);
    let function = name.split('[').next().unwrap_or(name);
    stack.contains(&format!(" in {function}\n")) || stack.ends_with(&format!(" in {function}"))
}

/// A phase's outcome as junit would report it; `None` for a phase that passed.
fn outcome_of(when: &str, outcome: &str) -> Option<TestOutcome> {
    match (when, outcome) {
        ("call", "passed") => Some(TestOutcome::Passed),
        ("call", "failed") => Some(TestOutcome::Failed),
        (_, "skipped") => Some(TestOutcome::Skipped),
        (_, "failed") => Some(TestOutcome::Error),
        _ => None,
    }
}

/// faulthandler's dump with pytest's and pluggy's own frames left out: for
/// each thread, its header and the frames above the first of theirs (the
/// dump lists the most recent call first).
fn test_frames(dump: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let mut in_runner = false;
    for line in dump.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("Thread 0x") || trimmed.starts_with("Current thread 0x") {
            in_runner = false;
            kept.push(line);
        } else if trimmed.starts_with("File ") {
            if line.contains("/_pytest/") || line.contains("/pluggy/") {
                in_runner = true;
            }
            if !in_runner {
                kept.push(line);
            }
        }
    }
    kept.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "/srv/tree";

    fn results(lines: &[&str]) -> String {
        lines.join("\n")
    }

    #[test]
    fn finished_tests_keep_their_outcomes_and_the_rest_are_not_run() {
        let text = results(&[
            r#"{"event": "collected", "ids": ["t.py::test_a", "t.py::test_b", "t.py::test_c", "t.py::test_d"]}"#,
            r#"{"event": "start", "id": "t.py::test_a"}"#,
            r#"{"event": "report", "id": "t.py::test_a", "when": "setup", "outcome": "passed"}"#,
            r#"{"event": "report", "id": "t.py::test_a", "when": "call", "outcome": "passed"}"#,
            r#"{"event": "report", "id": "t.py::test_a", "when": "teardown", "outcome": "passed"}"#,
            r#"{"event": "start", "id": "t.py::test_b"}"#,
            r#"{"event": "report", "id": "t.py::test_b", "when": "setup", "outcome": "passed"}"#,
            r#"{"event": "report", "id": "t.py::test_b", "when": "call", "outcome": "failed", "message": "assert 1 == 2", "details": "/srv/tree/t.py:4: AssertionError"}"#,
            r#"{"event": "report", "id": "t.py::test_b", "when": "teardown", "outcome": "passed"}"#,
            r#"{"event": "start", "id": "t.py::test_c"}"#,
            r#"{"event": "report", "id": "t.py::test_c", "when": "setup", "outcome": "passed"}"#,
            // The kill cut the last line short.
            r#"{"event": "report", "id": "t.py::te"#,
        ]);
        let dump = "Timeout (0:00:58)!\nThread 0x00007f43 (most recent call first):\n  \
                    File \"/srv/tree/pkg/loop.py\", line 14 in spin\n  \
                    File \"/srv/tree/t.py\", line 9 in test_c\n  \
                    File \"/usr/lib/python3/site-packages/_pytest/python.py\", line 187 in pytest_pyfunc_call\n  \
                    File \"/usr/lib/python3/site-packages/pluggy/_callers.py\", line 103 in _multicall\n";
        let cut = Cut::Limit(Duration::from_secs(60));
        let cases = cases_from_results(&text, Some(dump), Path::new(ROOT), cut);
        let summary: Vec<(&str, TestOutcome)> =
            cases.iter().map(|c| (c.id.as_str(), c.outcome)).collect();
        assert_eq!(
            summary,
            [
                ("t.py::test_a", TestOutcome::Passed),
                ("t.py::test_b", TestOutcome::Failed),
                ("t.py::test_c", TestOutcome::Failed),
                ("t.py::test_d", TestOutcome::NotRun),
            ]
        );
        assert_eq!(cases[1].message.as_deref(), Some("assert 1 == 2"));
        assert_eq!(cases[1].details.as_deref(), Some("t.py:4: AssertionError"));
        let running = &cases[2];
        assert_eq!(
            running.message.as_deref(),
            Some("did not finish: the whole test run was stopped at its limit of 60 s (--test-timeout)")
        );
        assert_eq!(
            running.details.as_deref(),
            Some(
                "Thread 0x00007f43 (most recent call first):\n  \
                 File \"pkg/loop.py\", line 14 in spin\n  \
                 File \"t.py\", line 9 in test_c"
            )
        );
        assert!(cases[3]
            .message
            .as_deref()
            .is_some_and(|m| m.starts_with("not run")));
    }

    #[test]
    fn phases_and_collection_errors_map_like_junit() {
        let text = results(&[
            r#"{"event": "report", "id": "tests/test_bad.py", "when": "collect", "outcome": "failed", "message": "ImportError", "details": "E   ImportError: no module x"}"#,
            r#"{"event": "collected", "ids": ["t.py::test_fixture", "t.py::test_skip", "t.py::test_teardown"]}"#,
            r#"{"event": "start", "id": "t.py::test_fixture"}"#,
            r#"{"event": "report", "id": "t.py::test_fixture", "when": "setup", "outcome": "failed", "message": "RuntimeError: boom", "details": "boom"}"#,
            r#"{"event": "report", "id": "t.py::test_fixture", "when": "teardown", "outcome": "passed"}"#,
            r#"{"event": "start", "id": "t.py::test_skip"}"#,
            r#"{"event": "report", "id": "t.py::test_skip", "when": "setup", "outcome": "skipped", "message": "later", "details": ""}"#,
            r#"{"event": "report", "id": "t.py::test_skip", "when": "teardown", "outcome": "passed"}"#,
            r#"{"event": "start", "id": "t.py::test_teardown"}"#,
            r#"{"event": "report", "id": "t.py::test_teardown", "when": "call", "outcome": "passed"}"#,
            r#"{"event": "report", "id": "t.py::test_teardown", "when": "teardown", "outcome": "failed", "message": "teardown broke"}"#,
            "not json at all",
        ]);
        let cases = cases_from_results(&text, None, Path::new(ROOT), Cut::Ended(Some(2)));
        let summary: Vec<(&str, TestOutcome)> =
            cases.iter().map(|c| (c.id.as_str(), c.outcome)).collect();
        assert_eq!(
            summary,
            [
                ("tests/test_bad.py", TestOutcome::Error),
                ("t.py::test_fixture", TestOutcome::Error),
                ("t.py::test_skip", TestOutcome::Skipped),
                ("t.py::test_teardown", TestOutcome::Error),
            ]
        );
        assert_eq!(cases[2].details, None);
        assert_eq!(cases[3].message.as_deref(), Some("teardown broke"));
        let collected = r#"{"event": "collected", "ids": ["t.py::test_x"]}"#;
        let killed = cases_from_results(collected, None, Path::new(ROOT), Cut::Ended(None));
        assert_eq!(
            killed[0].message.as_deref(),
            Some("not run: pytest was killed by a signal before this test started")
        );
    }

    #[test]
    fn a_test_running_at_the_kill_without_a_stack_dump_still_fails() {
        let text = results(&[
            r#"{"event": "collected", "ids": ["t.py::test_a"]}"#,
            r#"{"event": "start", "id": "t.py::test_a"}"#,
        ]);
        // The dump was taken while an earlier test still ran: not this one's stack.
        let other = "Thread 0x00007f43 (most recent call first):\n  \
                     File \"/srv/tree/t.py\", line 3 in test_before\n";
        let cut = Cut::Limit(Duration::from_secs(3));
        let cases = cases_from_results(&text, Some(other), Path::new(ROOT), cut);
        assert_eq!(cases.len(), 1);
        assert_eq!(cases[0].outcome, TestOutcome::Failed);
        assert_eq!(cases[0].details, None);
        assert!(cases[0]
            .message
            .as_deref()
            .is_some_and(|m| m.contains("3 s")));
        assert!(cases_from_results("", None, Path::new(ROOT), cut).is_empty());
    }
}
