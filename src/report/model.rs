//! The report's model: what one run did, gathered from its log entries.
//!
//! Pure: it takes the run's entries (in log order) and a price table and
//! returns plain values; it knows the entry kinds `crate::orchestrator`
//! writes (`run_start`, `llm_call`, `review`, `tool`, `commit`, `run_end`)
//! but nothing of HTML, which is `render`'s.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::llm::{PriceTable, Usage};

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
    pub pylint: Option<f64>,
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
    pub pylint: Option<f64>,
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
    pub pylint_before: Option<f64>,
    pub pylint_after: Option<f64>,
    pub seconds: Option<f64>,
    pub spend: Spend,
    /// Each plan the model wrote (Markdown), in order.
    pub plans: Vec<String>,
    pub attempts: Vec<Attempt>,
    /// The baseline, then each judged attempt.
    pub series: Vec<Point>,
    pub calls: Vec<Call>,
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_default()
}

fn count(v: &Value) -> Option<Count> {
    Some(Count {
        passed: v["passed"].as_u64()?,
        total: v["total"].as_u64()?,
    })
}

/// A rejection's reason: the first line of the Reviewer's output, without
/// its `rejected: ` prefix.
fn rejection_reason(output: &str) -> String {
    let first = output.lines().next().unwrap_or_default();
    first
        .strip_prefix("rejected: ")
        .unwrap_or(first)
        .to_string()
}

/// Builds the report of run `run_id` from its entries.
pub fn gather(run_id: &str, entries: &[Value], prices: &PriceTable) -> RunReport {
    let mut report = RunReport {
        run_id: run_id.to_string(),
        ..RunReport::default()
    };
    // The Fixer's last reply per file, shown with a rejection of it.
    let mut replies: BTreeMap<String, String> = BTreeMap::new();
    // Per attempt number: tests and pylint.
    let mut measured: BTreeMap<u64, (Option<Count>, Option<f64>)> = BTreeMap::new();
    for entry in entries {
        let details = &entry["details"];
        match text(details, "kind") {
            "run_start" => {
                let prompt = text(details, "input_prompt");
                report.target = prompt
                    .strip_prefix("swarm run on ")
                    .unwrap_or(prompt)
                    .into();
                report.model = text(entry, "model").to_string();
                report.started = text(entry, "timestamp").to_string();
            }
            "llm_call" => {
                let agent = text(entry, "agent");
                let reply = text(details, "output_response");
                if agent == "Auditor" && entry["status"] == "SUCCESS" {
                    report.plans.push(reply.to_string());
                }
                if let (Some(file), "Fixer") = (details["file"].as_str(), agent) {
                    replies.insert(file.to_string(), reply.to_string());
                }
                report.calls.push(call_of(entry, prices));
            }
            "review" => report.attempts.push(review_of(details, &replies)),
            "tool" => measurement(details, &mut report, &mut measured),
            "commit" => committed(details, &mut report.attempts),
            "run_end" => ending(details, &mut report),
            _ => {}
        }
    }
    if report.ending.is_none() {
        fill_without_ending(&mut report, entries);
    }
    for attempt in &mut report.attempts {
        if let Some((tests, pylint)) = attempt.number.and_then(|k| measured.get(&k)) {
            attempt.tests = *tests;
            attempt.pylint = *pylint;
        }
    }
    series(&mut report);
    report
}

fn call_of(entry: &Value, prices: &PriceTable) -> Call {
    let details = &entry["details"];
    let usage = Usage {
        input_tokens: details["input_tokens"].as_u64().unwrap_or(0),
        output_tokens: details["output_tokens"].as_u64().unwrap_or(0),
        estimated: details["tokens_estimated"].as_bool().unwrap_or(false),
    };
    Call {
        agent: text(entry, "agent").to_string(),
        file: details["file"].as_str().map(str::to_string),
        iteration: details["iteration"].as_u64(),
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cost_usd: prices.cost(text(entry, "model"), &usage),
        seconds: details["elapsed_ms"].as_f64().unwrap_or(0.0) / 1000.0,
        failed: entry["status"] == "FAILURE",
    }
}

fn review_of(details: &Value, replies: &BTreeMap<String, String>) -> Attempt {
    let file = text(details, "file").to_string();
    let rejected = text(details, "verdict") == "rejected";
    Attempt {
        iteration: details["iteration"].as_u64().unwrap_or(0),
        verdict: if rejected { "rejected" } else { "not judged" }.to_string(),
        rule: details["rule"].as_str().map(str::to_string),
        reason: rejected.then(|| rejection_reason(text(details, "output_response"))),
        step: details["step"].as_str().map(str::to_string),
        proposal: replies.get(&file).filter(|_| rejected).cloned(),
        file,
        ..Attempt::default()
    }
}

/// pytest and pylint results: the baseline's (no attempt) or an attempt's.
fn measurement(
    details: &Value,
    report: &mut RunReport,
    measured: &mut BTreeMap<u64, (Option<Count>, Option<f64>)>,
) {
    let tool = text(details, "tool");
    if tool != "pytest" && tool != "pylint" {
        return;
    }
    let Some(k) = details["attempt"].as_u64() else {
        match tool {
            "pytest" => report.tests_before = report.tests_before.or(count(details)),
            _ => report.pylint_before = report.pylint_before.or(details["score"].as_f64()),
        }
        return;
    };
    let slot = measured.entry(k).or_default();
    match tool {
        "pytest" => slot.0 = count(details),
        _ => slot.1 = details["score"].as_f64(),
    }
}

/// The Executor's commit completes the latest accepted proposal of its file.
fn committed(details: &Value, attempts: &mut [Attempt]) {
    let file = text(details, "file");
    let open = attempts
        .iter_mut()
        .rev()
        .find(|a| a.file == file && a.verdict == "not judged" && a.commit.is_none());
    if let Some(attempt) = open {
        attempt.verdict = text(details, "verdict").to_string();
        attempt.number = details["attempt"].as_u64();
        attempt.commit = details["commit"].as_str().map(str::to_string);
        attempt.diff = details["diff"].as_str().map(str::to_string);
    }
}

/// The run's end: the summary it printed.
fn ending(details: &Value, report: &mut RunReport) {
    let summary: Value =
        serde_json::from_str(text(details, "output_response")).unwrap_or(Value::Null);
    report.ending = Some(Ending {
        status: text(&summary, "status").to_string(),
        exit_code: details["exit_code"].as_u64().unwrap_or(0),
        stop_reason: text(&summary, "stop_reason").to_string(),
        delivery: text(&summary["delivery"], "state").to_string(),
    });
    report.tests_before = count(&summary["tests_before"]).or(report.tests_before);
    report.tests_after = count(&summary["tests_after"]);
    report.pylint_before = summary["pylint_before"].as_f64().or(report.pylint_before);
    report.pylint_after = summary["pylint_after"].as_f64();
    report.seconds = details["seconds"].as_f64();
    let tokens = &summary["tokens"];
    report.spend = Spend {
        input_tokens: tokens["input"].as_u64().unwrap_or(0),
        output_tokens: tokens["output"].as_u64().unwrap_or(0),
        cost_usd: tokens["cost_usd"].as_f64(),
        calls: tokens["calls"].as_u64().unwrap_or(0),
    };
}

/// A run that stopped before its summary: spend from its calls, duration
/// from its first and last entries.
fn fill_without_ending(report: &mut RunReport, entries: &[Value]) {
    let calls = &report.calls;
    let costs: Vec<f64> = calls.iter().filter_map(|c| c.cost_usd).collect();
    report.spend = Spend {
        input_tokens: calls.iter().map(|c| c.input_tokens).sum(),
        output_tokens: calls.iter().map(|c| c.output_tokens).sum(),
        cost_usd: (!costs.is_empty()).then(|| costs.iter().sum()),
        calls: calls.iter().filter(|c| !c.failed).count() as u64,
    };
    let time = |e: Option<&Value>| {
        e.and_then(|e| chrono::DateTime::parse_from_rfc3339(text(e, "timestamp")).ok())
    };
    if let (Some(first), Some(last)) = (time(entries.first()), time(entries.last())) {
        report.seconds = Some((last - first).num_milliseconds() as f64 / 1000.0);
    }
}

/// The baseline, then each judged attempt in order.
fn series(report: &mut RunReport) {
    let mut points = vec![Point {
        label: "baseline".to_string(),
        tests: report.tests_before,
        pylint: report.pylint_before,
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
            pylint: a.pylint,
        });
    }
    report.series = points;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn e(agent: &str, status: &str, details: Value) -> Value {
        json!({"agent": agent, "model": "gpt-4o-mini", "status": status,
               "timestamp": "2026-11-22T10:15:00.000+00:00", "details": details})
    }

    fn run_entries() -> Vec<Value> {
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
        assert_eq!(accepted.pylint, Some(9.1));
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
