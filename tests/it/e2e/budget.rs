//! Prompts within a budget on repositories bigger than one prompt: the plan
//! shows the files the evidence points at, names or counts the rest, never
//! sends more than the model's window holds, and says before spending
//! anything when even the essentials do not fit.

use serde_json::Value;

use super::{assert_fixed_and_delivered, run_openai, summary_of};
use crate::support::fixture::{good_model, prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, RecordedRequest};

/// Adds `n` small clean modules, two per folder, and commits them.
fn add_clean_modules(fx: &FixtureRepo, n: usize) {
    for i in 0..n {
        fx.repo.write(
            &format!("lib/pkg{}/mod_{i}.py", i / 2),
            &format!(
                "\"\"\"Helpers number {i}.\"\"\"\n\n\ndef value_{i}(amount):\n    \"\"\"Return amount plus {i}.\"\"\"\n    return amount + {i}\n\n\ndef scaled_{i}(amount, factor=2):\n    \"\"\"Return amount times factor, plus {i}.\"\"\"\n    return amount * factor + {i}\n"
            ),
        );
    }
    fx.repo.commit_all("many small modules");
}

/// Characters of everything a request sends the model, and its reply limit.
fn request_size(request: &RecordedRequest) -> (usize, u64) {
    let body = request.body_json();
    let chars = body["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter_map(|m| m["content"].as_str())
                .map(|text| text.chars().count())
                .sum()
        })
        .unwrap_or(0);
    let reply = body["max_tokens"]
        .as_u64()
        .or_else(|| body["max_completion_tokens"].as_u64())
        .unwrap_or(0);
    (chars, reply)
}

fn plan_selections(log: &[Value]) -> Vec<&Value> {
    log.iter()
        .filter(|e| e["details"]["kind"] == "plan_selection")
        .collect()
}

#[test]
fn a_repository_larger_than_the_plan_shows_the_evidence_in_full_and_counts_the_rest() {
    let fx = FixtureRepo::new("single_module");
    add_clean_modules(&fx, 300);
    let start = fx.repo.head();
    let server = LlmServer::start(good_model("single_module", &fx.target_rel));
    let window = 16_000;
    let out = run_openai(&fx, &server, &["--context-window", &window.to_string()]);
    assert_fixed_and_delivered(&fx, &out, &start);

    let requests = server.requests();
    assert!(!requests.is_empty());
    for request in &requests {
        let (chars, reply) = request_size(request);
        // The budget counts three characters per token at most, so a
        // request within the window has at most this many characters.
        assert!(
            chars as u64 <= 3 * (window - reply),
            "request {} has {chars} characters and a reply limit of {reply}",
            request.index
        );
    }
    let plan = prompt_of(&requests[0]);
    assert!(plan.starts_with("Write a refactoring plan"), "{plan}");
    assert!(
        plan.contains("### stats.py"),
        "the buggy file is shown in full"
    );
    assert!(plan.contains("def mean("), "with its source");
    assert!(plan.contains("count per folder"), "the rest is counted");
    assert!(
        plan.len() < 300 * 200,
        "the plan prompt did not shrink: {} characters",
        plan.len()
    );

    let log = fx.log();
    let selections = plan_selections(&log);
    assert_eq!(selections.len(), 1, "one plan was enough");
    let details = &selections[0]["details"];
    assert_eq!(details["in_full"][0]["path"], "stats.py");
    let why = details["in_full"][0]["why"].to_string();
    assert!(why.contains("test_stats.py"), "{why}");
    let shown = details["in_full"].as_array().unwrap().len() as u64
        + details["summarised_count"].as_u64().unwrap()
        + details["counted_count"].as_u64().unwrap();
    assert_eq!(shown, 301, "every source file is shown, named or counted");
    assert!(
        details["prompt_tokens"].as_u64().unwrap() <= details["allowance_tokens"].as_u64().unwrap()
    );

    let summary = summary_of(&out.stdout);
    let coverage = &summary["coverage"];
    assert_eq!(coverage["source_files"], 301, "{coverage}");
    assert_eq!(coverage["plans"], 1);
    let in_depth = coverage["in_depth"].as_u64().unwrap();
    let summarised = coverage["summarised"].as_u64().unwrap();
    let not_reached = coverage["not_reached"].as_u64().unwrap();
    assert!(in_depth >= 1 && not_reached > 0, "{coverage}");
    assert_eq!(in_depth + summarised + not_reached, 301);
}

#[test]
fn essentials_larger_than_the_window_stop_the_run_before_any_request() {
    let fx = FixtureRepo::new("single_module");
    // 150 folders: even one count line per folder is more than the plan
    // allowance of the smallest window a fix request fits in.
    add_clean_modules(&fx, 300);
    let start = fx.repo.head();
    let server = LlmServer::start(good_model("single_module", &fx.target_rel));
    let out = run_openai(&fx, &server, &["--context-window", "3900"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(server.requests().is_empty(), "a request was sent");
    assert!(
        stderr.contains("the plan request for 301 files"),
        "{stderr}"
    );
    assert!(stderr.contains("--target_dir"), "{stderr}");
    assert!(stderr.contains("context window"), "{stderr}");
    assert_eq!(fx.repo.head(), start);
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["exit_code"], 1);
}

#[test]
fn a_window_too_small_for_any_request_is_refused_at_the_start() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let server = LlmServer::start(good_model("single_module", &fx.target_rel));
    let out = run_openai(&fx, &server, &["--context-window", "2000"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(server.requests().is_empty());
    assert!(stderr.contains("2000 tokens"), "{stderr}");
    assert_eq!(
        stderr.trim().lines().count(),
        1,
        "one line that says what to do: {stderr}"
    );
    assert_eq!(fx.repo.head(), start);
    let log = fx.repo.tmp().join("cwd/logs/experiment_data.json");
    assert!(!log.exists(), "nothing ran, so nothing was logged");
}
