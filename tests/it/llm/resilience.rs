//! Scenarios every provider must pass: success, retries on 429/5xx/timeouts
//! and hang-ups, final errors, truncation, malformed and HTML replies,
//! refusals, and keys that never show. Each scenario runs once per wire.

use std::time::{Duration, Instant};

use swarm::llm::{looks_like_refusal, Finish, LlmError, Usage};

use super::{connect, request, Wire, KEY};
use crate::support::llm_server::{LlmServer, Reply, REPLY_INPUT_TOKENS, REPLY_OUTPUT_TOKENS};

async fn success(wire: Wire) {
    let server = LlmServer::start(move |_| (wire.text)("--- a/stats.py\n+++ b/stats.py\n"));
    let response = wire
        .model(&server)
        .complete(&request())
        .await
        .expect("a 200 reply is an answer");
    assert_eq!(response.text, "--- a/stats.py\n+++ b/stats.py\n");
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
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, wire.path);
    assert_eq!(requests[0].header("content-type"), Some("application/json"));
    assert!(
        !requests[0].path.contains(KEY),
        "the key stays out of the URL"
    );
}

async fn retry_after_429_is_honoured(wire: Wire) {
    let server = LlmServer::sequence(vec![
        Reply::json(
            429,
            &serde_json::json!({"error": {"message": "Rate limit reached", "type": "rate_limit"}}),
        )
        .with_header("retry-after", "1"),
        (wire.text)("ok"),
    ]);
    let started = Instant::now();
    let response = wire
        .model(&server)
        .complete(&request())
        .await
        .expect("retried");
    let waited = started.elapsed();
    assert_eq!(response.text, "ok");
    assert_eq!(response.attempts, 2);
    assert_eq!(server.requests().len(), 2);
    // The test backoff is at most 40 ms: only Retry-After explains a second.
    assert!(
        waited >= Duration::from_millis(950),
        "waited only {waited:?}"
    );
    assert!(waited < Duration::from_secs(3), "waited {waited:?}");
}

async fn server_error_500_is_retried(wire: Wire) {
    let server = LlmServer::sequence(vec![
        Reply::status(500, "internal error"),
        (wire.text)("second time lucky"),
    ]);
    let response = wire
        .model(&server)
        .complete(&request())
        .await
        .expect("retried");
    assert_eq!(response.text, "second time lucky");
    assert_eq!(response.attempts, 2);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].body, requests[1].body,
        "a retry resends the same body"
    );
}

async fn unavailable_503_exhausts_attempts(wire: Wire) {
    let server = LlmServer::start(|_| Reply::status(503, "upstream overloaded, try later"));
    let error = wire
        .model(&server)
        .complete(&request())
        .await
        .expect_err("503 every time");
    match &error {
        LlmError::Http {
            provider,
            status,
            attempts,
            body,
        } => {
            assert_eq!(provider, wire.kind.name());
            assert_eq!(*status, 503);
            assert_eq!(*attempts, 3);
            assert_eq!(body, "upstream overloaded, try later");
        }
        other => panic!("expected an HTTP error, got {other:?}"),
    }
    let shown = error.to_string();
    assert!(shown.contains("HTTP 503 after 3 attempt(s)"), "{shown}");
    assert!(shown.starts_with(wire.kind.name()), "{shown}");
    assert_eq!(server.requests().len(), 3);
}

async fn slow_reply_is_retried(wire: Wire) {
    let server = LlmServer::sequence(vec![
        (wire.text)("too late").with_delay(Duration::from_secs(3)),
        (wire.text)("in time"),
    ]);
    let mut config = wire.config(&server);
    config.timeout = Duration::from_millis(300);
    let started = Instant::now();
    let response = connect(&config)
        .complete(&request())
        .await
        .expect("retried");
    assert_eq!(response.text, "in time");
    assert_eq!(response.attempts, 2);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

async fn always_slow_times_out(wire: Wire) {
    let server =
        LlmServer::start(move |_| (wire.text)("never seen").with_delay(Duration::from_secs(3)));
    let mut config = wire.config(&server);
    config.timeout = Duration::from_millis(200);
    config.max_attempts = 2;
    let started = Instant::now();
    let error = connect(&config)
        .complete(&request())
        .await
        .expect_err("every attempt is too slow");
    assert!(
        matches!(
            error,
            LlmError::Timeout { timeout, attempts: 2, .. } if timeout == Duration::from_millis(200)
        ),
        "{error:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 2);
}

async fn hang_up_is_retried(wire: Wire) {
    let server = LlmServer::sequence(vec![Reply::hang_up(), (wire.text)("after a reconnect")]);
    let response = wire
        .model(&server)
        .complete(&request())
        .await
        .expect("retried");
    assert_eq!(response.text, "after a reconnect");
    assert_eq!(response.attempts, 2);
}

async fn refused_connection_is_a_connect_error(wire: Wire) {
    let server = LlmServer::start(|_| Reply::status(200, ""));
    let mut config = wire.config(&server);
    drop(server);
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address").port()
    };
    let base = format!("http://127.0.0.1:{port}");
    config.base_url = Some(if wire.kind == swarm::llm::ProviderKind::OpenAi {
        format!("{base}/v1")
    } else {
        base
    });
    config.max_attempts = 2;
    let error = connect(&config)
        .complete(&request())
        .await
        .expect_err("nobody listens");
    match &error {
        LlmError::Connect { url, attempts, .. } => {
            assert_eq!(*attempts, 2);
            assert!(url.ends_with(wire.path), "{url}");
        }
        other => panic!("expected a connect error, got {other:?}"),
    }
}

async fn truncated_reply_is_length(wire: Wire) {
    let server = LlmServer::start(move |_| (wire.truncated)("--- a/stats.py\n+++ b/st"));
    let response = wire
        .model(&server)
        .complete(&request())
        .await
        .expect("an answer");
    assert_eq!(response.finish, Finish::Length);
    assert_eq!(response.text, "--- a/stats.py\n+++ b/st");
}

async fn malformed_json_is_malformed(wire: Wire) {
    let server = LlmServer::start(|_| Reply::malformed_json());
    let error = wire
        .model(&server)
        .complete(&request())
        .await
        .expect_err("not JSON");
    match &error {
        LlmError::Malformed { message, body, .. } => {
            assert!(message.contains("not valid JSON"), "{message}");
            assert!(body.contains("unterminated"), "{body}");
        }
        other => panic!("expected Malformed, got {other:?}"),
    }
    assert_eq!(
        server.requests().len(),
        1,
        "a malformed reply is not retried"
    );
}

async fn empty_reply_is_malformed(wire: Wire) {
    let server = LlmServer::start(move |_| (wire.empty)());
    let error = wire
        .model(&server)
        .complete(&request())
        .await
        .expect_err("nothing to answer with");
    match &error {
        LlmError::Malformed { message, .. } => {
            assert!(message.contains("empty"), "{message}");
        }
        other => panic!("expected Malformed, got {other:?}"),
    }
}

async fn html_error_page_is_explained(wire: Wire) {
    let server = LlmServer::start(|_| Reply::html(502, "502 Bad Gateway"));
    let error = wire
        .model(&server)
        .complete(&request())
        .await
        .expect_err("a gateway error page");
    let shown = error.to_string();
    assert!(
        matches!(
            error,
            LlmError::Http {
                status: 502,
                attempts: 3,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        shown.contains("HTML page instead of JSON: 502 Bad Gateway"),
        "{shown}"
    );
    assert!(!shown.contains("<html"), "{shown}");

    let server = LlmServer::start(|_| Reply::html(200, "Welcome to nginx!"));
    let error = wire
        .model(&server)
        .complete(&request())
        .await
        .expect_err("a web page where the API should be");
    let shown = error.to_string();
    assert!(matches!(error, LlmError::Malformed { .. }), "{error:?}");
    assert!(shown.contains("base URL"), "{shown}");
    assert!(shown.contains("Welcome to nginx!"), "{shown}");
}

async fn refusal_is_recognised(wire: Wire) {
    let server =
        LlmServer::start(move |_| (wire.text)("I'm sorry, but I can't help with that request."));
    let response = wire
        .model(&server)
        .complete(&request())
        .await
        .expect("an answer");
    assert!(looks_like_refusal(&response.text), "{}", response.text);
}

async fn key_never_shows(wire: Wire) {
    let server = LlmServer::start(|_| {
        Reply::json(
            401,
            &serde_json::json!({"error": {
                "message": format!("Incorrect API key provided: {KEY}"),
                "type": "invalid_request_error"
            }}),
        )
    });
    let config = wire.config(&server);
    let model = wire.model(&server);
    let error = model.complete(&request()).await.expect_err("unauthorised");
    assert!(
        matches!(
            error,
            LlmError::Http {
                status: 401,
                attempts: 1,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 1, "401 is not retried");
    let shown = [
        error.to_string(),
        format!("{error:?}"),
        format!("{model:?}"),
        format!("{config:?}"),
    ];
    for text in shown {
        assert!(!text.contains(KEY), "the key leaked: {text}");
    }
    assert!(error
        .to_string()
        .contains("Incorrect API key provided: ***"));

    let server = LlmServer::start(|_| Reply::status(503, "busy"));
    let mut config = wire.config(&server);
    config.max_attempts = 1;
    let error = connect(&config)
        .complete(&request())
        .await
        .expect_err("busy");
    assert!(!format!("{error} {error:?}").contains(KEY));
}

macro_rules! scenarios {
    ($module:ident, $wire:expr) => {
        mod $module {
            use super::*;

            #[tokio::test]
            async fn success() {
                super::success($wire).await;
            }
            #[tokio::test]
            async fn retry_after_429_is_honoured() {
                super::retry_after_429_is_honoured($wire).await;
            }
            #[tokio::test]
            async fn server_error_500_is_retried() {
                super::server_error_500_is_retried($wire).await;
            }
            #[tokio::test]
            async fn unavailable_503_exhausts_attempts() {
                super::unavailable_503_exhausts_attempts($wire).await;
            }
            #[tokio::test]
            async fn slow_reply_is_retried() {
                super::slow_reply_is_retried($wire).await;
            }
            #[tokio::test]
            async fn always_slow_times_out() {
                super::always_slow_times_out($wire).await;
            }
            #[tokio::test]
            async fn hang_up_is_retried() {
                super::hang_up_is_retried($wire).await;
            }
            #[tokio::test]
            async fn refused_connection_is_a_connect_error() {
                super::refused_connection_is_a_connect_error($wire).await;
            }
            #[tokio::test]
            async fn truncated_reply_is_length() {
                super::truncated_reply_is_length($wire).await;
            }
            #[tokio::test]
            async fn malformed_json_is_malformed() {
                super::malformed_json_is_malformed($wire).await;
            }
            #[tokio::test]
            async fn empty_reply_is_malformed() {
                super::empty_reply_is_malformed($wire).await;
            }
            #[tokio::test]
            async fn html_error_page_is_explained() {
                super::html_error_page_is_explained($wire).await;
            }
            #[tokio::test]
            async fn refusal_is_recognised() {
                super::refusal_is_recognised($wire).await;
            }
            #[tokio::test]
            async fn key_never_shows() {
                super::key_never_shows($wire).await;
            }
        }
    };
}

scenarios!(openai, Wire::OPENAI);
scenarios!(gemini, Wire::GEMINI);
scenarios!(anthropic, Wire::ANTHROPIC);
