//! A module that does not compile still keeps its behaviour, end to end:
//! in a project without tests, `mean()` lacks its colon. Before any fix,
//! swarm repairs just that (the parser points at the missing token) and
//! keeps the result as the module's reference: the behaviour check and the
//! tests generated against it judge every change, so a reply that fixes
//! the colon and turns the result into `None` is a regression, and the
//! honest repair is delivered. When no reference can be made (two errors,
//! and the model's "syntax" repair changes a value), a change is delivered
//! as "compiles and imports only", and the status says so.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::Value;

use super::{run_openai, summary_of};
use crate::support::fixture::{prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};
use crate::support::repo::TestRepo;

/// `mean()` lacks its colon: the module does not compile.
const STATS: &str = "\"\"\"Small statistics.\"\"\"\n\n\n\
def mean(values)\n    \"\"\"The arithmetic mean of `values`.\"\"\"\n    total = 0\n    \
for value in values:\n        total += value\n    return total / len(values)\n";

const REPORT: &str = "\"\"\"Prints a report.\"\"\"\nfrom stats import mean\n\n\n\
def main():\n    \"\"\"Prints the mean of three numbers.\"\"\"\n    print(mean([1, 2, 3]))\n";

const PLAN: &str = "# Refactoring plan\n\n## Summary\n\nOne module does not compile.\n\n\
## stats.py\n\n- **Type**: bug\n  **Severity**: high\n  **Location**: `mean()`, line 4\n  \
**Description**: `def mean(values)` lacks its colon.\n  **Suggested fix**: Add the colon.\n";

/// Tests of what `mean()` does, written against the reference.
const GENERATED: &str = "from stats import mean\n\n\n\
def test_mean_of_three():\n    assert mean([1, 2, 3]) == 2.0\n\n\n\
def test_mean_of_one():\n    assert mean([4]) == 4.0\n";

fn untested_repo(stats: &str) -> FixtureRepo {
    let repo = TestRepo::with_files(&[("stats.py", stats), ("report.py", REPORT)]);
    let target = repo.root.clone();
    FixtureRepo {
        name: "does_not_compile".into(),
        repo,
        target,
        target_rel: String::new(),
    }
}

/// Plans, writes `GENERATED`, answers the syntax-repair request with
/// `repair` and the n-th fix request for `stats.py` with `fixes[n]` (the
/// last one again after that), as whole files.
fn model(repair: &'static str, fixes: Vec<String>) -> LlmServer {
    let asked = Arc::new(AtomicUsize::new(0));
    LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        let text = if prompt.starts_with("Write a refactoring plan") {
            PLAN.to_string()
        } else if prompt.starts_with("Write pytest tests for `stats.py`") {
            format!("```python\n{GENERATED}```\n")
        } else if prompt.starts_with("Repair the syntax of `stats.py`") {
            repair.to_string()
        } else if prompt.starts_with("Fix and improve `stats.py`") {
            let n = asked.fetch_add(1, Ordering::SeqCst).min(fixes.len() - 1);
            format!("Fix the module.\n\n```python\n{}```\n", fixes[n])
        } else {
            "This file looks fine as it is; no change is needed.".to_string()
        };
        Reply::text_for(req, &text)
    })
}

fn with_colon(stats: &str) -> String {
    stats.replace("def mean(values)\n", "def mean(values):\n")
}

fn tool_entries(fx: &FixtureRepo, tool: &str) -> Vec<Value> {
    fx.log()
        .into_iter()
        .filter(|e| e["details"]["tool"] == tool)
        .collect()
}

#[test]
fn a_repair_that_destroys_the_result_is_caught_against_the_reference_and_the_honest_one_delivered()
{
    let fx = untested_repo(STATS);
    let regressed = with_colon(STATS).replace("return total / len(values)", "return None");
    let honest = with_colon(STATS);
    let server = model("", vec![regressed, honest.clone()]);
    let out = run_openai(
        &fx,
        &server,
        &["--max-iterations", "3", "--test-timeout", "20"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    assert_eq!(fx.repo.read("stats.py"), honest);

    // The reference: the colon the parser pointed at, no model asked.
    let repairs = tool_entries(&fx, "syntax_repair");
    assert_eq!(repairs.len(), 1, "{repairs:?}");
    assert_eq!(repairs[0]["details"]["repaired"], true);
    assert!(repairs[0]["details"]["how"]
        .as_str()
        .unwrap()
        .contains("inserted \":\" on line 4"));
    assert!(server
        .requests()
        .iter()
        .all(|r| !prompt_of(r).starts_with("Repair the syntax")));

    // The first reply compiled and imported, yet was a regression: the
    // behaviour check compared mean() with the reference's.
    let run_id = summary["run_id"].as_str().unwrap();
    let first = fx.repo.git(&[
        "log",
        "-1",
        "--format=%B",
        &format!("swarm/{run_id}/attempt-1"),
    ]);
    assert!(first.contains("Swarm-Verdict: regressed"), "{first}");
    let checks = tool_entries(&fx, "behaviour_check");
    let regression = &checks[0]["details"]["behaviour"];
    assert_eq!(regression["outcome"], "regressed", "{regression}");
    let call = regression["differences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["call"] == "mean([1, 2, 3])")
        .unwrap_or_else(|| panic!("mean([1, 2, 3]) not compared: {regression}"));
    assert_eq!(call["before"], "2.0");
    assert_eq!(call["after"], "None");

    // The Tester wrote tests against the reference; they are held out (not
    // delivered: the module did not compile) and judged the honest repair.
    let tester = tool_entries(&fx, "tester");
    let note = tester[0]["details"]["generated_tests"]["note"]
        .as_str()
        .unwrap_or_default();
    assert!(
        note.contains("validated against the syntax repair"),
        "{note}"
    );
    let held = tool_entries(&fx, "held_out");
    let on_second = held
        .iter()
        .find(|e| e["details"]["attempt"] == 2)
        .expect("the reference tests judged attempt 2");
    assert_eq!(on_second["details"]["failed"], false, "{on_second}");
    assert_eq!(
        on_second["details"]["held_out"]["required"], 2,
        "{on_second}"
    );
    assert!(!fx.repo.root.join("tests").exists());

    // What verified the delivered change: the behaviour check.
    assert_eq!(
        summary["verification"]["stats.py"]["by"], "behaviour_check",
        "{summary}"
    );
    assert_eq!(summary["no_reference"], serde_json::json!([]));
}

/// Two missing colons: no one token makes it parse.
const TWICE_BROKEN: &str = "\"\"\"Small statistics.\"\"\"\n\n\n\
def mean(values)\n    \"\"\"The arithmetic mean of `values`.\"\"\"\n    total = 0\n    \
for value in values\n        total += value\n    return total / len(values)\n";

/// A "syntax" repair that also changes the result.
const NOT_SYNTAX_ONLY: &str = "```diff\n--- a/stats.py\n+++ b/stats.py\n@@ -4,7 +4,7 @@\n\
-def mean(values)\n+def mean(values):\n     \"\"\"The arithmetic mean of `values`.\"\"\"\n     total = 0\n\
-    for value in values\n+    for value in values:\n         total += value\n\
-    return total / len(values)\n+    return 0\n```\n";

#[test]
fn without_a_reference_the_status_says_compiles_and_imports_only() {
    let fx = untested_repo(TWICE_BROKEN);
    let honest = TWICE_BROKEN
        .replace("def mean(values)\n", "def mean(values):\n")
        .replace("for value in values\n", "for value in values:\n");
    let server = model(NOT_SYNTAX_ONLY, vec![honest.clone()]);
    let out = run_openai(&fx, &server, &["--test-timeout", "20"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(fx.repo.read("stats.py"), honest);
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success_unverified", "{summary}");
    assert_eq!(summary["no_reference"], serde_json::json!(["stats.py"]));
    assert_eq!(
        summary["verification"]["stats.py"]["by"], "compiles_and_imports_only",
        "{summary}"
    );
    assert!(
        stderr.contains("swarm success, compiles and imports only (stats.py did not compile"),
        "{stderr}"
    );
    // The model was asked, and its repair refused for changing a value.
    let repairs = tool_entries(&fx, "syntax_repair");
    assert_eq!(repairs[0]["details"]["repaired"], false);
    let how = repairs[0]["details"]["how"].as_str().unwrap();
    assert!(how.contains("not syntax only"), "{how}");
}
