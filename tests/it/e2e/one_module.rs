//! A one-module project in repair mode, as a small local model is used on
//! it: the plan is built from the failing tests and lint, with no request
//! (the log says so, with no model call made up for it), and the fix still
//! lands. The run's prompt characters, from the log, are printed for
//! docs/performance.md.

use serde_json::Value;

use super::{run_openai, summary_of};
use crate::support::fixture::{prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};
use crate::support::repo::TestRepo;

const GCD: &str =
    "def gcd(a, b):\n    if b == 0:\n        return a\n    else:\n        return gcd(a % b, b)\n";

const FIXED: &str =
    "def gcd(a, b):\n    if b == 0:\n        return a\n    else:\n        return gcd(b, a % b)\n";

const TESTS: &str = "from gcd import gcd\n\n\n\
def test_zero():\n    assert gcd(17, 0) == 17\n\n\n\
def test_common_factor():\n    assert gcd(35, 21) == 7\n\n\n\
def test_larger():\n    assert gcd(300, 42) == 6\n";

const HELD_OUT: &str = "from gcd import gcd\n\n\n\
def test_other_common_factor():\n    assert gcd(48, 18) == 6\n\n\n\
def test_coprime():\n    assert gcd(9, 4) == 1\n";

fn repo() -> FixtureRepo {
    let repo = TestRepo::with_files(&[("gcd.py", GCD), ("test_gcd.py", TESTS)]);
    let target = repo.root.clone();
    FixtureRepo {
        name: "one-module".into(),
        repo,
        target,
        target_rel: String::new(),
    }
}

fn model() -> LlmServer {
    LlmServer::start(|req| {
        let prompt = prompt_of(req);
        let text = if prompt.starts_with("Write held-out pytest tests") {
            format!("```python\n{HELD_OUT}```\n")
        } else if prompt.starts_with("Fix and improve `gcd.py`") {
            format!("```python\n{FIXED}```\n")
        } else if prompt.starts_with("Write a refactoring plan") {
            "# Refactoring plan\n\n## gcd.py\n\n- Fix the recursion of `gcd()`.\n".to_string()
        } else {
            "The code looks correct.".to_string()
        };
        Reply::text_for(req, &text)
    })
}

/// The log's model calls: (agent, prompt characters).
fn model_calls(log: &[Value]) -> Vec<(String, usize)> {
    log.iter()
        .filter(|e| e["details"]["kind"] == "llm_call")
        .map(|e| {
            let prompt = e["details"]["input_prompt"].as_str().unwrap_or_default();
            (
                e["agent"].as_str().unwrap_or_default().to_string(),
                prompt.chars().count(),
            )
        })
        .collect()
}

#[test]
fn a_one_module_project_is_planned_from_its_evidence_without_a_request() {
    let fx = repo();
    let server = model();
    let out = run_openai(
        &fx,
        &server,
        &["--max-iterations", "3", "--test-timeout", "30"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = summary_of(&out.stdout);
    let log = fx.log();
    let calls = model_calls(&log);
    eprintln!(
        "model calls (agent, prompt chars): {calls:?}; total {} chars in {} requests",
        calls.iter().map(|(_, n)| n).sum::<usize>(),
        calls.len()
    );
    assert_eq!(out.status.code(), Some(0), "{summary}\nstderr:\n{stderr}");
    assert_eq!(fx.repo.read("gcd.py"), FIXED);
    // No plan was asked of the model, nor logged as if it had been.
    for request in server.requests() {
        let prompt = prompt_of(&request);
        assert!(!prompt.starts_with("Write a refactoring plan"), "{prompt}");
    }
    assert!(
        calls.iter().all(|(agent, _)| agent != "Auditor"),
        "{calls:?}"
    );
    let planned = log
        .iter()
        .find(|e| e["agent"] == "Auditor" && e["details"]["kind"] == "plan_from_evidence")
        .expect("the plan built from the evidence is logged");
    assert_eq!(planned["status"], "SUCCESS", "{planned}");
    let response = planned["details"]["output_response"]
        .as_str()
        .unwrap_or_default();
    assert!(
        response.contains("test_gcd.py::test_common_factor"),
        "{planned}"
    );
    assert_eq!(summary["coverage"]["plans"], 0, "{summary}");
}

#[test]
fn a_recording_of_a_one_module_run_replays_as_it_was_recorded() {
    // Recorded by this version: no plan request in the cassette.
    let fx = repo();
    let server = model();
    let cassette = fx.repo.tmp().join("one-module.cassette.json");
    let cassette_arg = cassette.to_string_lossy().into_owned();
    // The loopback server stands for a hosted model, as the replay below
    // does (a local model's shorter budget changes prompts).
    let args = [
        "--max-iterations",
        "3",
        "--test-timeout",
        "30",
        "--local-model",
        "false",
        "--record",
        &cassette_arg,
    ];
    let out = run_openai(&fx, &server, &args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recorded = fx.log();
    let recorded_calls = model_calls(&recorded);
    assert!(recorded_calls.iter().all(|(agent, _)| agent != "Auditor"));

    // Replayed offline on a fresh copy: planned from the evidence again, so
    // the recorded replies answer the requests they were recorded for.
    let again = repo();
    let target = again.target.to_string_lossy().into_owned();
    let out = again.swarm(
        &[
            "--target_dir",
            &target,
            "--json",
            "--max-iterations",
            "3",
            "--test-timeout",
            "30",
            "--provider",
            "replay",
            "--cassette",
            &cassette_arg,
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(again.repo.read("gcd.py"), FIXED);
    // The same calls by the same agents, none of them a plan.
    let agents = |calls: Vec<(String, usize)>| -> Vec<String> {
        calls.into_iter().map(|(agent, _)| agent).collect()
    };
    let replayed = again.log();
    assert_eq!(agents(model_calls(&replayed)), agents(recorded_calls));
    assert!(replayed
        .iter()
        .any(|e| e["details"]["kind"] == "plan_from_evidence"));
    let hashes = |log: &[Value]| -> Vec<String> {
        log.iter()
            .filter(|e| e["details"]["kind"] == "llm_call")
            .map(|e| {
                e["details"]["request_hash"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(hashes(&replayed), hashes(&recorded));
}
