//! Streamed replies, for every wire format: text, usage and finish read
//! from the stream; the idle limit is a limit on silence, not on length; a
//! stalled stream is asked again once; the total cap gives a truncated
//! reply that is not resent; a server that refuses streaming is asked the
//! plain way from then on; a reply that loops is cut within seconds of the
//! loop's start and said so; progress and retries are reported as events.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use swarm::error::SwarmError;
use swarm::llm::{build_reporting, Finish, LlmError, RetryPolicy, Usage};
use swarm::log::{Event, EventSink};

use super::{connect, request, Wire};
use crate::support::llm_server::{
    is_streaming, LlmServer, Reply, REPLY_INPUT_TOKENS, REPLY_OUTPUT_TOKENS,
};

const DIFF: &str = "--- a/stats.py\n+++ b/stats.py\n@@ -1 +1 @@\n-x = 1\n+x = 2 # café ✓\n";

/// Collects every event.
#[derive(Default)]
struct Events(Mutex<Vec<Event>>);

impl EventSink for Events {
    fn emit(&self, event: Event) {
        self.0.lock().expect("not poisoned").push(event);
    }
}

async fn a_stream_gives_text_usage_and_finish(wire: Wire) {
    let server = LlmServer::start(|req| Reply::stream_for(req, DIFF, 7, Duration::from_millis(5)));
    let response = wire
        .model(&server)
        .complete(&request())
        .await
        .expect("a streamed answer");
    assert_eq!(response.text, DIFF);
    assert_eq!(response.finish, Finish::Stop);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: REPLY_INPUT_TOKENS,
            output_tokens: REPLY_OUTPUT_TOKENS,
            estimated: false,
        }
    );
    assert_eq!(response.attempts, 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(is_streaming(&requests[0]), "{}", requests[0].path);
}

async fn silence_is_limited_not_length(wire: Wire) {
    // 1.2 s of reply, never more than 0.1 s of silence, under a 0.4 s limit.
    let server =
        LlmServer::start(|req| Reply::stream_for(req, DIFF, 12, Duration::from_millis(100)));
    let mut config = wire.config(&server);
    config.timeout = Duration::from_millis(400);
    let started = Instant::now();
    let response = connect(&config)
        .complete(&request())
        .await
        .expect("a slow but steady stream is an answer");
    assert!(started.elapsed() > Duration::from_millis(1000));
    assert_eq!(response.text, DIFF);
    assert_eq!(response.attempts, 1);
    assert_eq!(server.requests().len(), 1);
}

async fn a_stall_is_asked_again_once(wire: Wire) {
    let server = LlmServer::start(|req| {
        Reply::stream_for(req, DIFF, 8, Duration::from_millis(5)).stall_after(3)
    });
    let mut config = wire.config(&server);
    config.timeout = Duration::from_millis(300);
    config.max_attempts = 4;
    let events = Arc::new(Events::default());
    let model = build_reporting(&config, RetryPolicy::fast(), events.clone()).expect("builds");
    let started = Instant::now();
    let error = model
        .complete(&request())
        .await
        .expect_err("a model that stalls twice");
    assert!(
        matches!(error, LlmError::Timeout { attempts: 2, .. }),
        "{error:?}"
    );
    assert_eq!(
        SwarmError::from(error).to_string(),
        format!(
            "{}: no data for 300ms after 2 attempt(s); raise --llm-timeout if the model is this \
             slow to start or between tokens",
            wire.kind
        )
    );
    assert_eq!(server.requests().len(), 2, "one retry, not --retries");
    assert!(started.elapsed() < Duration::from_secs(3));
    let retries: Vec<Event> = events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|event| matches!(event, Event::ModelRetry { .. }))
        .cloned()
        .collect();
    assert_eq!(retries.len(), 1, "{retries:?}");
    match &retries[0] {
        Event::ModelRetry {
            call,
            attempt,
            reason,
            ..
        } => {
            assert_eq!((*call, *attempt), (1, 2));
            assert!(reason.contains("no data for 0.3 s"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

async fn a_stall_then_an_answer(wire: Wire) {
    let server = LlmServer::start(|req| {
        let reply = Reply::stream_for(req, DIFF, 8, Duration::from_millis(5));
        if req.index == 0 {
            reply.stall_after(2)
        } else {
            reply
        }
    });
    let mut config = wire.config(&server);
    config.timeout = Duration::from_millis(300);
    let response = connect(&config)
        .complete(&request())
        .await
        .expect("asked again");
    assert_eq!(response.text, DIFF);
    assert_eq!(response.attempts, 2);
}

async fn the_total_cap_truncates_and_does_not_resend(wire: Wire) {
    // 4 s of steady streaming against a 0.8 s cap.
    let server =
        LlmServer::start(|req| Reply::stream_for(req, DIFF, 40, Duration::from_millis(100)));
    let mut config = wire.config(&server);
    config.timeout = Duration::from_millis(500);
    config.max_time = Duration::from_millis(800);
    let started = Instant::now();
    let response = connect(&config)
        .complete(&request())
        .await
        .expect("a capped reply is an answer");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(response.finish, Finish::Length);
    assert!(
        !response.text.is_empty() && DIFF.starts_with(&response.text) && response.text != DIFF,
        "{:?}",
        response.text
    );
    assert!(response.usage.estimated);
    assert_eq!(response.attempts, 1);
    assert_eq!(server.requests().len(), 1, "never resent");
}

async fn a_refusal_of_streaming_is_remembered(wire: Wire) {
    let server = LlmServer::start(move |req| {
        if is_streaming(req) {
            Reply::json(
                400,
                &json!({"error": {"message": "stream is not supported by this server"}}),
            )
        } else {
            (wire.text)("plain answer")
        }
    });
    let model = wire.model(&server);
    let first = model.complete(&request()).await.expect("the fallback");
    assert_eq!(first.text, "plain answer");
    assert_eq!(first.attempts, 2);
    let second = model.complete(&request()).await.expect("plain at once");
    assert_eq!(second.attempts, 1);
    let streamed: Vec<bool> = server.requests().iter().map(is_streaming).collect();
    assert_eq!(streamed, vec![true, false, false]);
}

async fn progress_is_reported_while_streaming(wire: Wire) {
    let server =
        LlmServer::start(|req| Reply::stream_for(req, DIFF, 25, Duration::from_millis(100)));
    let events = Arc::new(Events::default());
    let model = build_reporting(&wire.config(&server), RetryPolicy::fast(), events.clone())
        .expect("builds");
    model.complete(&request()).await.expect("an answer");
    let progress: Vec<(u64, u64, bool)> = events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            Event::ModelProgress {
                call, tokens, done, ..
            } => Some((*call, *tokens, *done)),
            _ => None,
        })
        .collect();
    // 2.5 s of streaming: one report a second, then the closing one.
    assert!((2..=4).contains(&progress.len()), "{progress:?}");
    assert!(progress.iter().all(|(call, _, _)| *call == 1));
    assert!(progress[0].1 > 0, "{progress:?}");
    assert!(!progress[0].2 && progress.last().unwrap().2, "{progress:?}");
}

async fn bytes_that_are_not_utf8_are_refused(wire: Wire) {
    let server = LlmServer::start(|req| {
        let mut reply = Reply::stream_for(req, "caf\u{e9}", 1, Duration::ZERO);
        // Turn the é (0xc3 0xa9) into Latin-1 (0xe9) in whichever chunk holds it.
        for chunk in &mut reply.chunks {
            if let Some(at) = chunk.bytes.windows(2).position(|w| w == [0xc3, 0xa9]) {
                chunk.bytes.splice(at..at + 2, [0xe9]);
            }
        }
        reply
    });
    let error = wire
        .model(&server)
        .complete(&request())
        .await
        .expect_err("not UTF-8");
    match error {
        LlmError::NotUtf8 { detail, .. } => {
            assert!(
                detail.contains("0xe9") && detail.contains("of the stream"),
                "{detail}"
            )
        }
        other => panic!("expected NotUtf8, got {other:?}"),
    }
}

async fn a_looping_stream_is_cut_within_seconds(wire: Wire) {
    // A good start, then a loop that would stream for a minute.
    let unit = "import test_tokenize_is_case_insensitive; ";
    let text = format!("{DIFF}+{}", unit.repeat(1_200));
    let server = LlmServer::start(move |req| {
        Reply::stream_for(req, &text, 1_200, Duration::from_millis(50))
    });
    let events = Arc::new(Events::default());
    let model = build_reporting(&wire.config(&server), RetryPolicy::fast(), events.clone())
        .expect("builds");
    let started = Instant::now();
    let response = model
        .complete(&request())
        .await
        .expect("a cut reply is an answer");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "read for {took:?}");
    let Finish::Repeated { tokens } = response.finish else {
        panic!("{:?}", response.finish);
    };
    assert!(response.text.starts_with(DIFF) && response.text.contains(unit));
    assert!(
        response.text.len() < DIFF.len() + 2_000,
        "{} bytes read",
        response.text.len()
    );
    assert!(response.usage.estimated, "the stream's usage never came");
    assert_eq!(response.attempts, 1);
    assert_eq!(server.requests().len(), 1, "a loop is not asked again here");
    let said: Vec<u64> = events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            Event::ModelRepeated {
                call: 1, tokens, ..
            } => Some(*tokens),
            _ => None,
        })
        .collect();
    assert_eq!(said, vec![tokens]);
}

macro_rules! scenarios {
    ($name:ident, $wire:expr) => {
        mod $name {
            use super::super::Wire;

            #[tokio::test]
            async fn a_stream_gives_text_usage_and_finish() {
                super::a_stream_gives_text_usage_and_finish($wire).await;
            }
            #[tokio::test]
            async fn silence_is_limited_not_length() {
                super::silence_is_limited_not_length($wire).await;
            }
            #[tokio::test]
            async fn a_stall_is_asked_again_once() {
                super::a_stall_is_asked_again_once($wire).await;
            }
            #[tokio::test]
            async fn a_stall_then_an_answer() {
                super::a_stall_then_an_answer($wire).await;
            }
            #[tokio::test]
            async fn the_total_cap_truncates_and_does_not_resend() {
                super::the_total_cap_truncates_and_does_not_resend($wire).await;
            }
            #[tokio::test]
            async fn a_refusal_of_streaming_is_remembered() {
                super::a_refusal_of_streaming_is_remembered($wire).await;
            }
            #[tokio::test]
            async fn progress_is_reported_while_streaming() {
                super::progress_is_reported_while_streaming($wire).await;
            }
            #[tokio::test]
            async fn a_looping_stream_is_cut_within_seconds() {
                super::a_looping_stream_is_cut_within_seconds($wire).await;
            }
            #[tokio::test]
            async fn bytes_that_are_not_utf8_are_refused() {
                super::bytes_that_are_not_utf8_are_refused($wire).await;
            }
        }
    };
}

/// A server that refuses sampling penalties (Gemini's OpenAI-compatible
/// endpoint does): asked again without them, and never sent them again.
#[tokio::test]
async fn a_refused_penalty_is_dropped_and_remembered() {
    let server = LlmServer::start(|req| {
        if req.body_json().get("frequency_penalty").is_some() {
            Reply::json(
                400,
                &json!({"error": {"message": "Invalid JSON payload received. Unknown name \"frequency_penalty\": Cannot find field."}}),
            )
        } else {
            Reply::stream_for(req, DIFF, 3, Duration::ZERO)
        }
    });
    let model = Wire::OPENAI.model(&server);
    let mut nudged = request();
    nudged.sampling = swarm::llm::Sampling::AGAINST_REPETITION;
    let first = model.complete(&nudged).await.expect("asked again without");
    assert_eq!(first.text, DIFF);
    assert_eq!(first.attempts, 2, "at no cost to the attempts");
    let second = model.complete(&nudged).await.expect("without at once");
    assert_eq!(second.attempts, 1);
    let sent: Vec<bool> = server
        .requests()
        .iter()
        .map(|r| r.body_json().get("frequency_penalty").is_some())
        .collect();
    assert_eq!(sent, vec![true, false, false]);
}

scenarios!(openai, Wire::OPENAI);
scenarios!(gemini, Wire::GEMINI);
scenarios!(anthropic, Wire::ANTHROPIC);
