//! OpenAI-compatible chat completions: what goes over the wire.

use std::time::Duration;

use serde_json::json;
use swarm::error::SwarmError;
use swarm::llm::{build, Finish, LlmError, ProviderConfig, ProviderKind, Usage};

use super::{connect, request, Wire, KEY};
use crate::support::llm_server::{LlmServer, Reply};

#[tokio::test]
async fn sends_bearer_key_system_message_and_limits() {
    let server = LlmServer::start(|_| Reply::openai_text("ok"));
    let model = Wire::OPENAI.model(&server);
    assert_eq!(model.kind(), ProviderKind::OpenAi);
    assert_eq!(model.model(), "gpt-test");
    model.complete(&request()).await.expect("an answer");

    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        sent.body_json(),
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "You repair Python code. Answer with a unified diff."},
                {"role": "user", "content": "Fix average() in stats.py."},
                {"role": "assistant", "content": "Which file?"},
                {"role": "user", "content": "stats.py, line 3."},
            ],
            "max_tokens": 256,
            "temperature": 0.2,
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
}

#[tokio::test]
async fn reasoning_models_get_max_completion_tokens() {
    let server = LlmServer::start(|_| Reply::openai_text("ok"));
    let mut config = Wire::OPENAI.config(&server);
    config.model = "o4-mini".into();
    connect(&config)
        .complete(&request())
        .await
        .expect("an answer");
    let body = server.requests()[0].body_json();
    assert_eq!(body["max_completion_tokens"], json!(256));
    assert!(
        body.get("max_tokens").is_none() && body.get("temperature").is_none(),
        "{body}"
    );
}

#[tokio::test]
async fn local_server_works_without_a_key() {
    let server = LlmServer::start(|_| {
        // Ollama reports usage but some servers do not: estimate then.
        Reply::json(
            200,
            &json!({"choices": [{"message": {"role": "assistant", "content": "abcdefgh"},
                                 "finish_reason": "stop"}]}),
        )
    });
    let config = ProviderConfig {
        kind: ProviderKind::OpenAi,
        model: "llama3.1:8b".into(),
        base_url: Some(format!("{}/v1/", server.base_url())),
        api_key: None,
        timeout: Duration::from_secs(5),
        max_time: Duration::ZERO,
        max_attempts: 1,
        replay_file: None,
    };
    let response = connect(&config)
        .complete(&request())
        .await
        .expect("an answer");
    assert_eq!(response.text, "abcdefgh");
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: request().transcript().chars().count().div_ceil(4) as u64,
            output_tokens: 2,
            estimated: true,
        }
    );
    let sent = &server.requests()[0];
    assert_eq!(
        sent.path, "/v1/chat/completions",
        "trailing slash tolerated"
    );
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.body_json()["model"], json!("llama3.1:8b"));
}

#[test]
fn the_real_api_needs_a_key() {
    let config = ProviderConfig {
        kind: ProviderKind::OpenAi,
        model: "gpt-4o-mini".into(),
        base_url: None,
        api_key: None,
        timeout: Duration::from_secs(5),
        max_time: Duration::ZERO,
        max_attempts: 1,
        replay_file: None,
    };
    let error = build(&config).expect_err("no key for api.openai.com");
    assert!(matches!(error, LlmError::MissingKey { .. }), "{error:?}");
    assert_eq!(
        SwarmError::from(error).to_string(),
        "openai: no API key; set OPENAI_API_KEY (or give a base URL for a local server that \
         needs no key)"
    );
}

#[tokio::test]
async fn content_filter_and_refusal_are_filtered() {
    let server = LlmServer::sequence(vec![
        Reply::openai_with_finish("", "content_filter"),
        Reply::json(
            200,
            &json!({"choices": [{"message": {"role": "assistant", "content": null,
                                             "refusal": "I can't help with that."},
                                 "finish_reason": "stop"}]}),
        ),
    ]);
    let model = Wire::OPENAI.model(&server);
    let filtered = model.complete(&request()).await.expect("an answer");
    assert_eq!(filtered.finish, Finish::Filtered);
    let refused = model.complete(&request()).await.expect("an answer");
    assert_eq!(refused.finish, Finish::Filtered);
    assert_eq!(refused.text, "I can't help with that.");
}

#[tokio::test]
async fn error_object_in_a_200_is_malformed() {
    // OpenRouter and some proxies answer 200 with an error object.
    let server = LlmServer::start(|_| {
        Reply::json(
            200,
            &json!({"error": {"message": "No endpoints found", "code": 404}}),
        )
    });
    let error = Wire::OPENAI
        .model(&server)
        .complete(&request())
        .await
        .expect_err("no choices");
    let shown = error.to_string();
    assert!(matches!(error, LlmError::Malformed { .. }), "{error:?}");
    assert!(shown.contains("No endpoints found"), "{shown}");
}

#[tokio::test]
async fn http_date_retry_after_is_honoured() {
    let at = chrono::Utc::now() + chrono::Duration::seconds(2);
    let date = at.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    let server = LlmServer::sequence(vec![
        Reply::status(429, "slow down").with_header("retry-after", &date),
        Reply::openai_text("ok"),
    ]);
    let started = std::time::Instant::now();
    let response = Wire::OPENAI
        .model(&server)
        .complete(&request())
        .await
        .expect("retried");
    assert_eq!(response.attempts, 2);
    // The date has whole seconds: the wait is between 1 and 2 seconds.
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");
}

#[tokio::test]
async fn retry_after_is_capped_by_the_policy() {
    let server = LlmServer::sequence(vec![
        Reply::status(429, "slow down").with_header("retry-after", "3600"),
        Reply::openai_text("ok"),
    ]);
    let policy = swarm::llm::RetryPolicy {
        retry_after_cap: Duration::from_millis(50),
        ..swarm::llm::RetryPolicy::fast()
    };
    let model =
        swarm::llm::build_with_retry(&Wire::OPENAI.config(&server), policy).expect("builds");
    let started = std::time::Instant::now();
    model.complete(&request()).await.expect("retried");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn bad_request_is_not_retried() {
    let server = LlmServer::start(|_| {
        Reply::json(
            400,
            &json!({"error": {"message": "max_tokens is too large", "type": "invalid_request_error"}}),
        )
    });
    let error = Wire::OPENAI
        .model(&server)
        .complete(&request())
        .await
        .expect_err("400");
    assert_eq!(
        error.to_string(),
        "openai: HTTP 400 after 1 attempt(s): invalid_request_error: max_tokens is too large"
    );
    assert_eq!(server.requests().len(), 1);
}
