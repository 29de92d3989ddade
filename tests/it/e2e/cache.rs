//! Work a run need not repeat: the baseline of a tree measured by an
//! earlier run is reused (and measured again once a commit changes the
//! tree), and the Judge stops before the full suite when the tests that
//! failed at the best state still fail.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::Value;

use super::{assert_fixed_and_delivered, run_openai, summary_of};
use crate::support::fixture::{good_model, good_model_reply, prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};

const NOTICE: &str = "baseline: reused from an earlier run on the same tree";

/// The run's entries of `tool` by `agent`, in order.
fn tool_entries<'a>(log: &'a [Value], run_id: &str, agent: &str, tool: &str) -> Vec<&'a Value> {
    log.iter()
        .filter(|e| e["details"]["run_id"] == run_id)
        .filter(|e| e["agent"] == agent && e["details"]["tool"] == tool)
        .collect()
}

fn run_id(out: &std::process::Output) -> String {
    summary_of(&out.stdout)["run_id"]
        .as_str()
        .expect("run id")
        .to_string()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The Auditor's pytest and pylint entries of a run all say `cached`.
fn baseline_cached(log: &[Value], run: &str) -> bool {
    let pytest = tool_entries(log, run, "Auditor", "pytest");
    let pylint = tool_entries(log, run, "Auditor", "pylint");
    assert_eq!((pytest.len(), pylint.len()), (1, 1), "one baseline per run");
    let cached = pytest[0]["details"]["cached"]
        .as_bool()
        .expect("details.cached on the baseline's pytest entry");
    assert_eq!(pylint[0]["details"]["cached"], cached);
    cached
}

#[test]
fn a_second_run_on_the_same_tree_reuses_the_baseline() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let server = LlmServer::start(good_model("single_module", &fx.target_rel));

    // The first run leaves the target as it was.
    let first = run_openai(&fx, &server, &["--dry-run"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(fx.repo.head(), start);
    assert!(!stderr(&first).contains(NOTICE));
    let first_id = run_id(&first);
    assert!(!baseline_cached(&fx.log(), &first_id));
    let entries = fx.repo.home.join(".cache/swarm/baseline");
    assert_eq!(
        std::fs::read_dir(&entries)
            .expect("baseline folder")
            .count(),
        1
    );

    let second = run_openai(&fx, &server, &[]);
    assert_fixed_and_delivered(&fx, &second, &start);
    let notice = stderr(&second);
    assert!(
        notice.contains(NOTICE) && notice.contains(&first_id),
        "{notice}"
    );
    let log = fx.log();
    let second_id = run_id(&second);
    assert!(baseline_cached(&log, &second_id));
    // The same counts as measured, and the Judge measured its attempts.
    let baseline = &tool_entries(&log, &second_id, "Auditor", "pytest")[0]["details"];
    assert_eq!(
        (baseline["passed"].as_u64(), baseline["total"].as_u64()),
        (Some(4), Some(8))
    );
    let judged = tool_entries(&log, &second_id, "Judge", "pytest");
    assert!(!judged.is_empty());
    assert!(judged.iter().all(|e| e["details"]["cached"] == false));
    let summary = summary_of(&second.stdout);
    assert_eq!(
        summary["tests_before"],
        serde_json::json!({"passed": 4, "total": 8})
    );
    assert_eq!(
        summary["tests_after"],
        serde_json::json!({"passed": 8, "total": 8})
    );
}

#[test]
fn a_commit_that_changes_the_tree_measures_the_baseline_again() {
    let fx = FixtureRepo::new("single_module");
    let server = LlmServer::start(good_model("single_module", &fx.target_rel));
    let first = run_openai(&fx, &server, &["--dry-run"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));

    // One more passing test: the tree and the counts change.
    let tests = fx.repo.read("test_stats.py");
    fx.repo.write(
        "test_stats.py",
        &format!("{tests}\n\ndef test_stdev_of_two_values():\n    \"\"\"Two values one apart.\"\"\"\n    assert stdev([1, 2]) == pytest.approx(math.sqrt(0.5))\n"),
    );
    let start = fx.repo.commit_all("one more test");
    let second = run_openai(&fx, &server, &["--dry-run"]);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert!(!stderr(&second).contains(NOTICE), "{}", stderr(&second));
    let log = fx.log();
    let second_id = run_id(&second);
    assert!(!baseline_cached(&log, &second_id));
    let baseline = &tool_entries(&log, &second_id, "Auditor", "pytest")[0]["details"];
    assert_eq!(
        (baseline["passed"].as_u64(), baseline["total"].as_u64()),
        (Some(5), Some(9))
    );
    assert_eq!(fx.repo.head(), start);

    // And that tree's baseline is reused in turn.
    let third = run_openai(&fx, &server, &["--dry-run"]);
    assert!(stderr(&third).contains(NOTICE), "{}", stderr(&third));
    assert!(baseline_cached(&fx.log(), &run_id(&third)));
}

#[test]
fn the_judge_stops_early_on_an_attempt_that_leaves_the_failing_tests_failing() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let fixes = Arc::new(AtomicUsize::new(0));
    let asked = Arc::clone(&fixes);
    // The first fix only rewords an error message: the four failing tests
    // still fail and pylint's score does not move. Then the real fix.
    let server = LlmServer::start(move |request| {
        let prompt = prompt_of(request);
        let text = if prompt.starts_with("Fix and improve `stats.py`")
            && asked.fetch_add(1, Ordering::SeqCst) == 0
        {
            "Reword the error.\n\n```diff\n--- a/stats.py\n+++ b/stats.py\n@@ -15,5 +15,5 @@\n     n = len(s)\n     if n == 0:\n-        raise ValueError(\"median of empty data\")\n+        raise ValueError(\"median of an empty sample\")\n     if n % 2 == 1:\n         return s[n // 2]\n```\n".to_string()
        } else {
            good_model_reply("single_module", "", &prompt)
        };
        Reply::text_for(request, &text)
    });
    let out = run_openai(&fx, &server, &[]);
    assert_fixed_and_delivered(&fx, &out, &start);
    assert!(fixes.load(Ordering::SeqCst) >= 2);

    let log = fx.log();
    let id = run_id(&out);
    let judged = tool_entries(&log, &id, "Judge", "pytest");
    assert!(judged.len() >= 2, "{judged:?}");
    let early = &judged[0]["details"];
    assert_eq!(early["attempt"], 1);
    assert_eq!(early["stopped_early"], true, "{early}");
    let rerun: Vec<&str> = early["early_stop"]["rerun"]
        .as_array()
        .expect("rerun ids")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        rerun,
        [
            "test_stats.py::test_mean_of_empty_data_raises_value_error",
            "test_stats.py::test_median_of_even_count_averages_middle_pair",
            "test_stats.py::test_percentile_nearest_rank",
            "test_stats.py::test_percentile_100_is_maximum",
        ]
    );
    assert_eq!(early["early_stop"]["collected"], 8);
    assert_eq!(early["early_stop"]["verdict"], "not-improved");
    assert!(early["early_stop_reason"]
        .as_str()
        .expect("reason")
        .contains("still fail"));
    // Only the four ran: pytest's own summary says so.
    let output = early["output_response"].as_str().expect("output");
    assert!(
        output.contains("4 failed") && output.contains("4 deselected"),
        "{output}"
    );
    assert!(!output.contains("passed"), "{output}");
    let attempt = fx
        .repo
        .git(&["log", "-1", "--format=%B", &format!("swarm/{id}/attempt-1")]);
    assert!(attempt.contains("Swarm-Verdict: not-improved"), "{attempt}");

    // The real fix could be accepted: it got the full suite.
    let last = &judged[judged.len() - 1]["details"];
    assert_eq!(last["stopped_early"], false, "{last}");
    assert_eq!(
        (last["passed"].as_u64(), last["total"].as_u64()),
        (Some(8), Some(8))
    );
}
