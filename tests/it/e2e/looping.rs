//! Replies that loop, end to end, as a user of a small local model meets
//! them: a fix reply that falls into a loop while it streams is cut within
//! seconds — in each provider's stream format — the log and the progress
//! say so, and the next request goes out without the loop, told to answer
//! with the diff only and (where the API takes it) with a penalty on
//! repetition. A diff that repeats for a reason (a table of similar rows,
//! a long run of comment lines) is applied as it is.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::{assert_fixed_and_delivered, run_openai, summary_of, FAKE_KEY};
use crate::support::fixture::{good_model_reply, prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, RecordedRequest, Reply};
use crate::support::repo::TestRepo;

const PLAN_PROMPT: &str = "Write a refactoring plan";
/// The Tester's request for held-out tests, asked once before the fixes:
/// these models write none.
const HELD_OUT_PROMPT: &str = "Write held-out pytest tests";
const NO_HELD_OUT: &str = "No held-out tests.";
/// What the looping model says over and over.
const LOOP_UNIT: &str = "import test_stats_mean_is_case_insensitive; ";
/// Pieces of the looping reply, one `LOOP_PAUSE` apart: two minutes of
/// looping when nothing cuts it.
const LOOP_PIECES: usize = 2_400;
const LOOP_PAUSE: Duration = Duration::from_millis(50);

/// A model for single_module whose first fix reply starts well and falls
/// into a loop, streamed in the request's wire format; every other reply is
/// a good one. The fix requests it got are kept.
fn looping_model(fx: &FixtureRepo) -> (LlmServer, Arc<Mutex<Vec<RecordedRequest>>>) {
    let target = fx.target_rel.clone();
    let fixes = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&fixes);
    let server = LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        let good = good_model_reply("single_module", &target, &prompt);
        if prompt.starts_with(PLAN_PROMPT) {
            return Reply::stream_for(req, &good, 4, Duration::from_millis(10));
        }
        if prompt.starts_with(HELD_OUT_PROMPT) {
            return Reply::stream_for(req, NO_HELD_OUT, 1, Duration::from_millis(10));
        }
        let mut fixes = seen.lock().expect("not poisoned");
        fixes.push(req.clone());
        if fixes.len() > 1 {
            return Reply::stream_for(req, &good, 4, Duration::from_millis(10));
        }
        let looping = format!(
            "I will fix `stats.py`.\n\n```diff\n--- a/stats.py\n+++ b/stats.py\n@@ -1,3 +1,4 @@\n+{}",
            LOOP_UNIT.repeat(LOOP_PIECES)
        );
        Reply::stream_for(req, &looping, LOOP_PIECES, LOOP_PAUSE)
    });
    (server, fixes)
}

/// Every text a request sends, in any wire format.
fn all_text(request: &RecordedRequest) -> String {
    let body = request.body_json();
    let mut texts = Vec::new();
    collect_strings(&body, &mut texts);
    texts.join("\n")
}

fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// What must hold after a run whose first fix reply looped: delivered,
/// the loop cut within seconds and said so in the log and on stderr, and
/// the second fix request free of it and told to answer with the diff only.
fn assert_loop_cut_and_not_fed_back(
    fx: &FixtureRepo,
    out: &std::process::Output,
    start: &str,
    fixes: &Mutex<Vec<RecordedRequest>>,
) -> RecordedRequest {
    assert_fixed_and_delivered(fx, out, start);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the reply repeated itself; stopped after"),
        "the progress says so:\n{stderr}"
    );
    let calls: Vec<Value> = fx
        .log()
        .into_iter()
        .filter(|e| e["details"]["kind"] == "llm_call" && e["agent"] == "Fixer")
        .collect();
    assert_eq!(calls.len(), 2, "the looping reply and the one asked again");
    let cut = &calls[0]["details"];
    let note = cut["cut"].as_str().expect("the log says why it was cut");
    let tokens = cut["finish"]["repeated"]["tokens"]
        .as_u64()
        .unwrap_or_else(|| panic!("finish names the repetition: {cut}"));
    assert_eq!(
        note,
        format!("the reply repeated itself; stopped after {tokens} tokens")
    );
    // Two minutes of loop on the wire; read for a few seconds at most.
    let elapsed = cut["elapsed_ms"].as_u64().expect("elapsed_ms");
    assert!(elapsed < 20_000, "the loop was read for {elapsed} ms");
    assert!(
        tokens < 1_000,
        "stopped soon after the loop began: {tokens} tokens"
    );
    assert!(calls[1]["details"]["cut"].is_null());
    let fixes = fixes.lock().expect("not poisoned");
    assert_eq!(fixes.len(), 2, "one loop, one request asked again");
    let again = all_text(&fixes[1]);
    assert!(!again.contains(LOOP_UNIT.trim()), "the loop is fed back");
    assert!(
        again.contains("Answer with the diff only"),
        "the request asked again says how to answer"
    );
    let (asked, again) = (prompt_of(&fixes[0]), prompt_of(&fixes[1]));
    assert!(
        again.starts_with(asked.trim_end()) && again.len() < asked.len() + 300,
        "the same request, a short instruction after it"
    );
    fixes[1].clone()
}

#[test]
fn a_looping_openai_stream_is_cut_and_asked_again_without_it_with_a_penalty() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let (server, fixes) = looping_model(&fx);
    let out = run_openai(&fx, &server, &[]);
    let again = assert_loop_cut_and_not_fed_back(&fx, &out, &start, &fixes);
    let body = again.body_json();
    assert_eq!(body["frequency_penalty"], Value::from(0.5), "{body}");
    assert_eq!(body["presence_penalty"], Value::from(0.3), "{body}");
    let first = fixes.lock().unwrap()[0].body_json();
    assert!(first.get("frequency_penalty").is_none(), "{first}");
    assert_eq!(body["temperature"], first["temperature"]);
    drop(server);
}

#[test]
fn a_looping_gemini_stream_is_cut_and_asked_again_without_it() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let (server, fixes) = looping_model(&fx);
    let target = fx.target.to_string_lossy().into_owned();
    let base = server.base_url();
    let out = fx.swarm(
        &["--target_dir", &target, "--json", "--provider", "gemini"],
        &[("GEMINI_API_KEY", FAKE_KEY), ("GEMINI_BASE_URL", &base)],
    );
    let again = assert_loop_cut_and_not_fed_back(&fx, &out, &start, &fixes);
    let config = &again.body_json()["generationConfig"];
    assert!(
        config.get("frequencyPenalty").is_none(),
        "Gemini 2.5 refuses penalties: {config}"
    );
}

#[test]
fn a_looping_anthropic_stream_is_cut_and_asked_again_without_it() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let (server, fixes) = looping_model(&fx);
    let target = fx.target.to_string_lossy().into_owned();
    let base = server.base_url();
    let out = fx.swarm(
        &["--target_dir", &target, "--json", "--provider", "anthropic"],
        &[
            ("ANTHROPIC_API_KEY", FAKE_KEY),
            ("ANTHROPIC_BASE_URL", &base),
        ],
    );
    assert_loop_cut_and_not_fed_back(&fx, &out, &start, &fixes);
}

#[test]
fn a_plain_reply_that_looped_to_the_cap_is_not_fed_back_either() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let target = fx.target_rel.clone();
    let fixes = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&fixes);
    // A server that never streams: the whole loop arrives at once.
    let server = LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        let good = good_model_reply("single_module", &target, &prompt);
        if req.body_json()["stream"] == Value::Bool(true) {
            return Reply::json(
                400,
                &serde_json::json!({"error": {"message": "stream is not supported"}}),
            );
        }
        if prompt.starts_with(PLAN_PROMPT) {
            return Reply::openai_text(&good);
        }
        if prompt.starts_with(HELD_OUT_PROMPT) {
            return Reply::openai_text(NO_HELD_OUT);
        }
        let mut fixes = seen.lock().expect("not poisoned");
        fixes.push(req.clone());
        if fixes.len() > 1 {
            return Reply::openai_text(&good);
        }
        let looping = format!("I will fix it.\n```diff\n{}", LOOP_UNIT.repeat(400));
        Reply::openai_truncated(&looping)
    });
    let out = run_openai(&fx, &server, &[]);
    assert_fixed_and_delivered(&fx, &out, &start);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the reply repeated itself; stopped after"),
        "{stderr}"
    );
    let fixes = fixes.lock().unwrap();
    assert_eq!(fixes.len(), 2);
    assert!(!all_text(&fixes[1]).contains(LOOP_UNIT.trim()));
    assert!(all_text(&fixes[1]).contains("Answer with the diff only"));
}

/// A module whose table is wrong, and its fixed version: 150 rows alike
/// but for their numbers, and a run of 250 comment-only lines.
fn squares_module(fixed: bool) -> String {
    let mut text = String::from("\"\"\"Squares, looked up.\"\"\"\n\nSQUARES = [\n");
    for k in 0..150u64 {
        let square = if fixed || k < 100 { k * k } else { k * k + 1 };
        text.push_str(&format!("    ({k}, {square}),\n"));
    }
    text.push_str("]\n\nSEPARATORS = [\n");
    for k in 0..250 {
        text.push_str(if fixed && k % 5 != 0 {
            "    #\n"
        } else {
            "    # -\n"
        });
    }
    text.push_str("]\n\n\ndef square(k):\n    \"\"\"The square of k, from the table.\"\"\"\n    return dict(SQUARES)[k]\n");
    text
}

#[test]
fn a_diff_that_repeats_for_a_reason_is_applied() {
    let tests = "from squares import square\n\n\ndef test_squares():\n    for k in range(150):\n        assert square(k) == k * k\n";
    let before = squares_module(false);
    let after = squares_module(true);
    let repo = TestRepo::with_files(&[
        ("squares.py", &before),
        ("test_squares.py", tests),
        // The change is large on purpose: its size is not what is tested.
        (
            ".swarm.toml",
            "[size-limits]\nlow = 1000\nmedium = 1000\nhigh = 1000\n",
        ),
    ]);
    let target = repo.root.clone();
    let fx = FixtureRepo {
        name: "squares".into(),
        repo,
        target,
        target_rel: String::new(),
    };
    let start = fx.repo.head();
    let diff = similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header("a/squares.py", "b/squares.py")
        .to_string();
    let reply = format!("Fix the table.\n\n```diff\n{diff}```\n");
    let server = LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        let text = if prompt.starts_with(PLAN_PROMPT) {
            "# Refactoring plan\n\n## squares.py\n\n- **Type**: bug\n  **Location**: `SQUARES`\n  \
             **Description**: rows past 99 are off by one.\n"
                .to_string()
        } else if prompt.starts_with(HELD_OUT_PROMPT) {
            NO_HELD_OUT.to_string()
        } else {
            reply.clone()
        };
        // Small pieces, as a model streams them.
        Reply::stream_for(req, &text, text.len() / 8, Duration::ZERO)
    });
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("repeated itself"), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    assert_ne!(fx.repo.head(), start);
    assert_eq!(fx.repo.read("squares.py"), after);
    let fix_requests = server
        .requests()
        .iter()
        .filter(|r| !prompt_of(r).starts_with(PLAN_PROMPT))
        .filter(|r| !prompt_of(r).starts_with(HELD_OUT_PROMPT))
        .count();
    assert_eq!(fix_requests, 1, "read whole, applied at once");
}
