//! Streamed replies end to end, as a user with a slow local model meets
//! them: a reply that streams for longer than `--llm-timeout` completes; a
//! stream that stalls is cut after the idle limit and asked again once; a
//! reply that streams past `--llm-max-time` is a cut-off reply, asked again
//! for a shorter answer; a server that refuses streaming is served the
//! plain way; each provider's stream format once; the log keeps the full
//! reply.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{assert_fixed_and_delivered, run_openai, summary_of, FAKE_KEY};
use crate::support::fixture::{good_model_reply, prompt_of, FixtureRepo};
use crate::support::llm_server::{
    is_streaming, LlmServer, RecordedRequest, Reply, REPLY_OUTPUT_TOKENS,
};

const PLAN_PROMPT: &str = "Write a refactoring plan";
/// How the Tester's request for held-out tests starts.
const HELD_OUT_PROMPT: &str = "Write held-out pytest tests";

/// A good model for single_module that streams every reply in `pieces`
/// pieces `pause` apart, and remembers the text of each reply it sent.
fn streaming_model(
    fx: &FixtureRepo,
    pieces: usize,
    pause: Duration,
) -> (LlmServer, Arc<Mutex<Vec<String>>>) {
    let sent = Arc::new(Mutex::new(Vec::new()));
    let target = fx.target_rel.clone();
    let texts = Arc::clone(&sent);
    let server = LlmServer::start(move |req| {
        let text = good_model_reply("single_module", &target, &prompt_of(req));
        texts.lock().expect("not poisoned").push(text.clone());
        Reply::stream_for(req, &text, pieces, pause)
    });
    (server, sent)
}

/// The log's model calls: (output_response, output_tokens).
fn logged_calls(fx: &FixtureRepo) -> Vec<(String, Value)> {
    fx.log()
        .into_iter()
        .filter(|entry| entry["details"]["kind"] == "llm_call")
        .map(|entry| {
            (
                entry["details"]["output_response"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                entry["details"]["output_tokens"].clone(),
            )
        })
        .collect()
}

/// Every reply the server streamed is logged whole, with the stream's usage.
fn assert_log_keeps_full_replies(fx: &FixtureRepo, sent: &Mutex<Vec<String>>) {
    let sent = sent.lock().unwrap().clone();
    let logged = logged_calls(fx);
    assert_eq!(logged.len(), sent.len(), "{logged:?}");
    for (text, tokens) in &logged {
        assert!(
            sent.contains(text),
            "a logged reply was not sent whole: {text}"
        );
        assert_eq!(*tokens, Value::from(REPLY_OUTPUT_TOKENS));
    }
}

fn plan_requests(server: &LlmServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|req| prompt_of(req).starts_with(PLAN_PROMPT))
        .count()
}

#[test]
fn a_reply_streaming_longer_than_the_llm_timeout_completes() {
    let fx = FixtureRepo::planned("single_module");
    let start = fx.repo.head();
    // Each reply takes about 4.2 s in 24 pieces, 0.175 s apart: twice the
    // 2-second --llm-timeout, which is a limit on silence only.
    let (server, sent) = streaming_model(&fx, 24, Duration::from_millis(175));
    let began = Instant::now();
    let out = run_openai(&fx, &server, &["--llm-timeout", "2"]);
    assert_fixed_and_delivered(&fx, &out, &start);
    let requests = server.requests();
    assert!(
        began.elapsed() > Duration::from_secs(8),
        "three slow replies"
    );
    assert_eq!(
        requests.len(),
        3,
        "a plan, the held-out tests and a fix, none sent again"
    );
    for request in &requests {
        let body = request.body_json();
        assert_eq!(body["stream"], Value::Bool(true));
        assert_eq!(body["stream_options"]["include_usage"], Value::Bool(true));
    }
    assert_log_keeps_full_replies(&fx, &sent);
    let summary = summary_of(&out.stdout);
    assert_eq!(
        summary["tokens"]["output"],
        Value::from(3 * REPLY_OUTPUT_TOKENS),
        "usage read from the stream: {summary}"
    );
}

#[test]
fn a_stalled_stream_is_cut_after_the_idle_limit_and_asked_again_once() {
    let fx = FixtureRepo::planned("single_module");
    let start = fx.repo.head();
    let target = fx.target_rel.clone();
    let server = LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        let reply = Reply::stream_for(
            req,
            &good_model_reply("single_module", &target, &prompt),
            6,
            Duration::from_millis(20),
        );
        // The first plan request stalls after two chunks.
        if req.index == 0 {
            reply.stall_after(2)
        } else {
            reply
        }
    });
    let out = run_openai(&fx, &server, &["--llm-timeout", "2"]);
    assert_fixed_and_delivered(&fx, &out, &start);
    assert_eq!(
        plan_requests(&server),
        2,
        "the stalled plan is asked once more"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("model call 1: retry 1/")
            && stderr.contains("no data for 2 s (--llm-timeout)"),
        "the retry and its reason are shown at default verbosity:\n{stderr}"
    );
}

#[test]
fn a_model_that_stalls_again_fails_after_one_retry() {
    let fx = FixtureRepo::planned("single_module");
    let before = fx.repo.head();
    let server = LlmServer::start(|req| {
        Reply::stream_for(req, "# Summary\nnever finished", 4, Duration::ZERO).stall_after(1)
    });
    let began = Instant::now();
    let out = run_openai(&fx, &server, &["--llm-timeout", "2", "--retries", "4"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        server.requests().len(),
        2,
        "a stall is retried once, not --retries times"
    );
    assert!(stderr.contains("--llm-timeout"), "{stderr}");
    assert!(began.elapsed() < Duration::from_secs(60));
    assert_eq!(fx.repo.head(), before);
}

#[test]
fn a_reply_streaming_past_the_max_time_is_cut_off_and_asked_for_a_shorter_one() {
    let fx = FixtureRepo::planned("single_module");
    let start = fx.repo.head();
    let target = fx.target_rel.clone();
    let fix_requests = Arc::new(Mutex::new(0));
    let counter = Arc::clone(&fix_requests);
    let server = LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        let text = good_model_reply("single_module", &target, &prompt);
        if prompt.starts_with(PLAN_PROMPT) || prompt.starts_with(HELD_OUT_PROMPT) {
            return Reply::stream_for(req, &text, 4, Duration::from_millis(10));
        }
        let mut fixes = counter.lock().unwrap();
        *fixes += 1;
        if *fixes == 1 {
            // Steady, never silent for long, and endless for the cap: 60 s.
            Reply::stream_for(req, &text, 600, Duration::from_millis(100))
        } else {
            Reply::stream_for(req, &text, 4, Duration::from_millis(10))
        }
    });
    let began = Instant::now();
    let out = run_openai(&fx, &server, &["--llm-timeout", "2", "--llm-max-time", "3"]);
    assert_fixed_and_delivered(&fx, &out, &start);
    assert!(began.elapsed() < Duration::from_secs(50));
    let requests: Vec<RecordedRequest> = server
        .requests()
        .into_iter()
        .filter(|req| {
            let prompt = prompt_of(req);
            !prompt.starts_with(PLAN_PROMPT) && !prompt.starts_with(HELD_OUT_PROMPT)
        })
        .collect();
    assert_eq!(requests.len(), 2, "the cut-off fix and one follow-up");
    assert_ne!(
        requests[0].body, requests[1].body,
        "a cut-off reply is never resent as it was"
    );
    assert!(
        requests[1]
            .body_text()
            .contains("cut off by the output length limit"),
        "the follow-up asks for a shorter answer"
    );
}

#[test]
fn a_server_that_refuses_streaming_is_asked_the_plain_way() {
    let fx = FixtureRepo::planned("single_module");
    let start = fx.repo.head();
    let target = fx.target_rel.clone();
    let server = LlmServer::start(move |req| {
        if is_streaming(req) {
            return Reply::json(
                400,
                &serde_json::json!({"error": {
                    "message": "Unrecognized request argument supplied: stream_options",
                    "type": "invalid_request_error",
                }}),
            );
        }
        Reply::text_for(
            req,
            &good_model_reply("single_module", &target, &prompt_of(req)),
        )
    });
    let out = run_openai(&fx, &server, &[]);
    assert_fixed_and_delivered(&fx, &out, &start);
    let streamed: Vec<bool> = server.requests().iter().map(is_streaming).collect();
    assert!(streamed.len() >= 3, "{streamed:?}");
    assert!(streamed[0], "the first request streams");
    assert!(
        streamed[1..].iter().all(|s| !s),
        "then plain, for the rest of the run: {streamed:?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("refused a streaming request"), "{stderr}");
}

#[test]
fn gemini_streams_end_to_end() {
    let fx = FixtureRepo::planned("single_module");
    let start = fx.repo.head();
    let (server, sent) = streaming_model(&fx, 5, Duration::from_millis(20));
    let target = fx.target.to_string_lossy().into_owned();
    let base = server.base_url();
    let out = fx.swarm(
        &["--target_dir", &target, "--json", "--provider", "gemini"],
        &[("GEMINI_API_KEY", FAKE_KEY), ("GEMINI_BASE_URL", &base)],
    );
    assert_fixed_and_delivered(&fx, &out, &start);
    for request in server.requests() {
        assert_eq!(
            request.path,
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
    }
    assert_log_keeps_full_replies(&fx, &sent);
}

#[test]
fn anthropic_streams_end_to_end() {
    let fx = FixtureRepo::planned("single_module");
    let start = fx.repo.head();
    let (server, sent) = streaming_model(&fx, 5, Duration::from_millis(20));
    let target = fx.target.to_string_lossy().into_owned();
    let base = server.base_url();
    let out = fx.swarm(
        &["--target_dir", &target, "--json", "--provider", "anthropic"],
        &[
            ("ANTHROPIC_API_KEY", FAKE_KEY),
            ("ANTHROPIC_BASE_URL", &base),
        ],
    );
    assert_fixed_and_delivered(&fx, &out, &start);
    for request in server.requests() {
        assert_eq!(request.path, "/v1/messages");
        assert_eq!(request.body_json()["stream"], Value::Bool(true));
    }
    assert_log_keeps_full_replies(&fx, &sent);
}
