//! The report's model: what one run did, gathered from its log entries.
//!
//! Pure: it takes the run's entries (in log order, as `crate::log` types)
//! and a price table and returns plain values; it reads the kinds the
//! orchestrator writes (run start and end, model calls, reviews, pytest and
//! pylint runs, commits) but nothing of HTML, which is `render`'s.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::llm::{PriceTable, Usage};
use crate::log::{
    Agent, Commit, Decision, Entry, Kind, ModelCall, Review, RunEnd, Status, TestTally, ToolRun,
};

/// Tests passed out of total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    pub passed: u64,
    pub total: u64,
}

/// What the run spent on the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Spend {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// USD, when the model's price is known.
    pub cost_usd: Option<f64>,
    pub calls: u64,
}

/// How the run ended, from its `run_end` entry (`None` in [`RunReport`]
/// when the run stopped with an error before it).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Ending {
    /// `success`, `gave_up`, `model_failure`, …
    pub status: String,
    pub exit_code: u64,
    pub stop_reason: String,
    /// What happened to the user's branch (`updated`, `left`, …).
    pub delivery: String,
}

/// One proposal that reached the Reviewer, and what became of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Attempt {
    /// The round it was proposed in.
    pub iteration: u64,
    pub file: String,
    /// `rejected`, the Judge's verdict (`improved`, `regressed`, …), or
    /// `not judged` when the run stopped before the Judge.
    pub verdict: String,
    /// The Reviewer's rule and reason, for a rejection.
    pub rule: Option<String>,
    pub reason: Option<String>,
    /// `2 of 5` for a step of a split proposal.
    pub step: Option<String>,
    /// The attempt number and commit, once committed.
    pub number: Option<u64>,
    pub commit: Option<String>,
    pub tests: Option<Count>,
    #[serde(rename = "pylint")]
    pub lint: Option<f64>,
    /// The committed change as a unified diff.
    pub diff: Option<String>,
    /// For a rejection: the model's reply that proposed it.
    pub proposal: Option<String>,
}

/// One measured state: the baseline or an attempt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    /// `baseline` or `attempt 3 (round 2)`.
    pub label: String,
    pub tests: Option<Count>,
    #[serde(rename = "pylint")]
    pub lint: Option<f64>,
}

/// One model call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Call {
    pub agent: String,
    pub file: Option<String>,
    pub iteration: Option<u64>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: Option<f64>,
    pub seconds: f64,
    /// The call failed (no reply).
    pub failed: bool,
}

/// Everything the report shows about one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunReport {
    pub run_id: String,
    pub target: String,
    pub model: String,
    pub started: String,
    pub ending: Option<Ending>,
    pub tests_before: Option<Count>,
    pub tests_after: Option<Count>,
    #[serde(rename = "pylint_before")]
    pub lint_before: Option<f64>,
    #[serde(rename = "pylint_after")]
    pub lint_after: Option<f64>,
    pub seconds: Option<f64>,
    pub spend: Spend,
    /// Each plan the model wrote (Markdown), in order.
    pub plans: Vec<String>,
    /// Refactoring on request (`--task`): where each task got (absent for
    /// a run without tasks, as in logs written before tasks existed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<crate::log::TaskRecord>,
    pub attempts: Vec<Attempt>,
    /// The baseline, then each judged attempt.
    pub series: Vec<Point>,
    pub calls: Vec<Call>,
}

impl From<TestTally> for Count {
    fn from(tally: TestTally) -> Self {
        Self {
            passed: tally.passed,
            total: tally.total,
        }
    }
}

/// Per attempt number: tests and pylint.
type Measured = BTreeMap<u64, (Option<Count>, Option<f64>)>;

/// Builds the report of run `run_id` from its entries.
pub fn gather(run_id: &str, entries: &[Entry], prices: &PriceTable) -> RunReport {
    let mut report = RunReport {
        run_id: run_id.to_string(),
        ..RunReport::default()
    };
    // The Fixer's last reply per file, shown with a rejection of it.
    let mut replies: BTreeMap<String, String> = BTreeMap::new();
    let mut measured = Measured::new();
    for entry in entries {
        match &entry.details.kind {
            Kind::RunStart(start) => {
                report.target = start.target.clone().unwrap_or_default();
                report.model = entry.model.clone();
                report.started = entry.timestamp.clone();
            }
            Kind::LlmCall(call) => {
                let reply = &entry.details.output_response;
                if entry.agent == Agent::Auditor && entry.status == Status::Success {
                    report.plans.push(reply.clone());
                }
                if let (Some(file), Agent::Fixer) = (&call.file, entry.agent) {
                    replies.insert(file.clone(), reply.clone());
                }
                report.calls.push(call_of(entry, call, prices));
            }
            Kind::Review(review) => report.attempts.push(review_of(review, &replies)),
            Kind::Tool(tool) => measurement(tool, &mut report, &mut measured),
            Kind::Commit(commit) => committed(commit, &mut report.attempts),
            Kind::Task(task) => report.tasks.push(task.clone()),
            Kind::RunEnd(end) => ending(entry, end, &mut report),
            _ => {}
        }
    }
    if report.ending.is_none() {
        fill_without_ending(&mut report, entries);
    }
    for attempt in &mut report.attempts {
        if let Some((tests, lint)) = attempt.number.and_then(|k| measured.get(&k)) {
            attempt.tests = *tests;
            attempt.lint = *lint;
        }
    }
    series(&mut report);
    report
}

fn call_of(entry: &Entry, call: &ModelCall, prices: &PriceTable) -> Call {
    let usage = Usage {
        input_tokens: call.input_tokens.unwrap_or(0),
        output_tokens: call.output_tokens.unwrap_or(0),
        estimated: call.tokens_estimated.unwrap_or(false),
    };
    Call {
        agent: entry.agent.as_str().to_string(),
        file: call.file.clone(),
        iteration: call.iteration.map(u64::from),
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cost_usd: prices.cost(&entry.model, &usage),
        seconds: call.elapsed_ms as f64 / 1000.0,
        failed: entry.status == Status::Failure,
    }
}

fn review_of(review: &Review, replies: &BTreeMap<String, String>) -> Attempt {
    let (verdict, rule, reason) = match &review.decision {
        Decision::Accepted => ("not judged", None, None),
        Decision::Rejected { rule, reason } => ("rejected", rule.clone(), Some(reason.clone())),
    };
    Attempt {
        iteration: u64::from(review.iteration),
        verdict: verdict.to_string(),
        rule,
        reason,
        step: review.step.clone(),
        proposal: replies
            .get(&review.file)
            .filter(|_| verdict == "rejected")
            .cloned(),
        file: review.file.clone(),
        ..Attempt::default()
    }
}

/// pytest and pylint results: the baseline's (no attempt) or an attempt's.
fn measurement(tool: &ToolRun, report: &mut RunReport, measured: &mut Measured) {
    match tool {
        ToolRun::Tests(run) => {
            let count = Some(Count {
                passed: run.passed as u64,
                total: run.total as u64,
            });
            match run.attempt {
                None => report.tests_before = report.tests_before.or(count),
                Some(k) => measured.entry(u64::from(k)).or_default().0 = count,
            }
        }
        ToolRun::Lint(run) => match run.attempt {
            None => report.lint_before = report.lint_before.or(run.score),
            Some(k) => measured.entry(u64::from(k)).or_default().1 = run.score,
        },
        _ => {}
    }
}

/// The Executor's commit completes the latest accepted proposal of its file.
fn committed(commit: &Commit, attempts: &mut [Attempt]) {
    let open = attempts
        .iter_mut()
        .rev()
        .find(|a| a.file == commit.file && a.verdict == "not judged" && a.commit.is_none());
    if let Some(attempt) = open {
        attempt.verdict = commit.verdict.as_str().to_string();
        attempt.number = Some(u64::from(commit.attempt));
        attempt.commit = Some(commit.commit.clone());
        attempt.diff = Some(commit.diff.clone());
    }
}

/// The run's end: the summary it printed.
fn ending(entry: &Entry, end: &RunEnd, report: &mut RunReport) {
    let summary = entry.run_summary().unwrap_or_default();
    report.ending = Some(Ending {
        status: summary.status,
        exit_code: u64::from(end.exit_code),
        stop_reason: summary.stop_reason,
        delivery: summary.delivery.state,
    });
    report.tests_before = summary
        .tests_before
        .map(Count::from)
        .or(report.tests_before);
    report.tests_after = summary.tests_after.map(Count::from);
    report.lint_before = summary.lint_before.or(report.lint_before);
    report.lint_after = summary.lint_after;
    report.seconds = end.seconds;
    report.spend = Spend {
        input_tokens: summary.tokens.input,
        output_tokens: summary.tokens.output,
        cost_usd: summary.tokens.cost_usd,
        calls: summary.tokens.calls,
    };
}

/// A run that stopped before its summary: spend from its calls, duration
/// from its first and last entries.
fn fill_without_ending(report: &mut RunReport, entries: &[Entry]) {
    let calls = &report.calls;
    let costs: Vec<f64> = calls.iter().filter_map(|c| c.cost_usd).collect();
    report.spend = Spend {
        input_tokens: calls.iter().map(|c| c.input_tokens).sum(),
        output_tokens: calls.iter().map(|c| c.output_tokens).sum(),
        cost_usd: (!costs.is_empty()).then(|| costs.iter().sum()),
        calls: calls.iter().filter(|c| !c.failed).count() as u64,
    };
    let time =
        |e: Option<&Entry>| e.and_then(|e| chrono::DateTime::parse_from_rfc3339(&e.timestamp).ok());
    if let (Some(first), Some(last)) = (time(entries.first()), time(entries.last())) {
        report.seconds = Some((last - first).num_milliseconds() as f64 / 1000.0);
    }
}

/// The baseline, then each judged attempt in order.
fn series(report: &mut RunReport) {
    let mut points = vec![Point {
        label: "baseline".to_string(),
        tests: report.tests_before,
        lint: report.lint_before,
    }];
    let mut judged: Vec<&Attempt> = report
        .attempts
        .iter()
        .filter(|a| a.number.is_some())
        .collect();
    judged.sort_by_key(|a| a.number);
    for a in judged {
        points.push(Point {
            label: format!(
                "attempt {} (round {})",
                a.number.unwrap_or_default(),
                a.iteration
            ),
            tests: a.tests,
            lint: a.lint,
        });
    }
    report.series = points;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// An entry as the log holds it, read through the log's types.
    fn e(agent: &str, status: &str, details: Value) -> Entry {
        serde_json::from_value(
            json!({"agent": agent, "model": "gpt-4o-mini", "status": status,
               "timestamp": "2026-11-22T10:15:00.000+00:00", "details": details}),
        )
        .unwrap()
    }

    fn run_entries() -> Vec<Entry> {
        let summary = json!({"status": "success", "stop_reason": "green",
            "tests_before": {"passed": 4, "total": 8}, "tests_after": {"passed": 8, "total": 8},
            "pylint_before": 5.5, "pylint_after": 9.1, "delivery": {"state": "updated"},
            "tokens": {"input": 300, "output": 90, "total": 390, "cost_usd": 0.01, "calls": 4}});
        vec![
            e(
                "System",
                "INFO",
                json!({"kind": "run_start", "input_prompt": "swarm run on /r"}),
            ),
            e(
                "Auditor",
                "SUCCESS",
                json!({"kind": "tool", "tool": "pytest", "attempt": null, "passed": 4, "total": 8}),
            ),
            e(
                "Auditor",
                "SUCCESS",
                json!({"kind": "tool", "tool": "pylint", "attempt": null, "score": 5.5}),
            ),
            e(
                "Auditor",
                "SUCCESS",
                json!({"kind": "llm_call", "output_response": "# Plan\n1. fix", "input_tokens": 100, "output_tokens": 30}),
            ),
            e(
                "Fixer",
                "SUCCESS",
                json!({"kind": "llm_call", "file": "a.py", "iteration": 1, "output_response": "edit the tests", "input_tokens": 50, "output_tokens": 20}),
            ),
            e(
                "Reviewer",
                "SUCCESS",
                json!({"kind": "review", "file": "a.py", "iteration": 1, "verdict": "rejected", "rule": "test_file", "output_response": "rejected: test_a.py is a test file\nsplit into 2 steps"}),
            ),
            e(
                "Fixer",
                "SUCCESS",
                json!({"kind": "llm_call", "file": "a.py", "iteration": 2, "output_response": "diff", "input_tokens": 50, "output_tokens": 20}),
            ),
            e(
                "Reviewer",
                "SUCCESS",
                json!({"kind": "review", "file": "a.py", "iteration": 2, "verdict": "accepted", "rule": null, "output_response": "accepted"}),
            ),
            e(
                "Judge",
                "SUCCESS",
                json!({"kind": "tool", "tool": "pytest", "attempt": 1, "passed": 8, "total": 8}),
            ),
            e(
                "Judge",
                "SUCCESS",
                json!({"kind": "tool", "tool": "pylint", "attempt": 1, "score": 9.1}),
            ),
            e(
                "Executor",
                "SUCCESS",
                json!({"kind": "commit", "file": "a.py", "attempt": 1, "commit": "abc", "verdict": "improved", "diff": "--- a/a.py\n+++ b/a.py\n"}),
            ),
            e(
                "System",
                "INFO",
                json!({"kind": "run_end", "exit_code": 0, "seconds": 12.5, "output_response": summary.to_string()}),
            ),
        ]
    }

    #[test]
    fn gathers_the_header_the_attempts_and_the_series() {
        let report = gather("r1", &run_entries(), &PriceTable::new());
        assert_eq!(report.target, "/r");
        assert_eq!(report.model, "gpt-4o-mini");
        assert_eq!(report.plans, ["# Plan\n1. fix"]);
        let ending = report.ending.as_ref().unwrap();
        assert_eq!((ending.status.as_str(), ending.exit_code), ("success", 0));
        assert_eq!(ending.delivery, "updated");
        assert_eq!(
            report.tests_after,
            Some(Count {
                passed: 8,
                total: 8
            })
        );
        assert_eq!(report.seconds, Some(12.5));
        assert_eq!(report.spend.cost_usd, Some(0.01));
        let [rejected, accepted] = report.attempts.as_slice() else {
            panic!("{:?}", report.attempts)
        };
        assert_eq!(rejected.verdict, "rejected");
        assert_eq!(rejected.reason.as_deref(), Some("test_a.py is a test file"));
        assert_eq!(rejected.proposal.as_deref(), Some("edit the tests"));
        assert_eq!(accepted.verdict, "improved");
        assert_eq!(accepted.number, Some(1));
        assert_eq!(accepted.lint, Some(9.1));
        assert!(accepted.diff.as_deref().unwrap().starts_with("--- a/a.py"));
        assert_eq!(report.series.len(), 2);
        assert_eq!(report.series[1].label, "attempt 1 (round 2)");
        assert_eq!(report.calls.len(), 3);
        assert!(
            report.calls[0].cost_usd.is_some(),
            "gpt-4o-mini has a price"
        );
    }

    #[test]
    fn a_run_without_its_end_sums_its_calls() {
        let mut entries = run_entries();
        entries.pop();
        let report = gather("r1", &entries, &PriceTable::new());
        assert!(report.ending.is_none());
        assert_eq!(report.spend.input_tokens, 200);
        assert_eq!(report.spend.calls, 3);
        assert_eq!(
            report.tests_before,
            Some(Count {
                passed: 4,
                total: 8
            })
        );
        assert_eq!(report.seconds, Some(0.0));
    }
}
