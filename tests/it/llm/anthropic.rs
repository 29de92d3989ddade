//! Anthropic Messages: what goes over the wire.

use std::time::Duration;

use serde_json::json;
use swarm::error::SwarmError;
use swarm::llm::{build, Finish, LlmError, ProviderConfig, ProviderKind};

use super::{request, Wire, KEY};
use crate::support::llm_server::{LlmServer, Reply};

#[tokio::test]
async fn sends_key_version_system_and_max_tokens() {
    let server = LlmServer::start(|_| Reply::anthropic_text("ok"));
    let model = Wire::ANTHROPIC.model(&server);
    assert_eq!(model.kind(), ProviderKind::Anthropic);
    model.complete(&request()).await.expect("an answer");

    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body_json(),
        json!({
            "model": "claude-test",
            "system": "You repair Python code. Answer with a unified diff.",
            "messages": [
                {"role": "user", "content": "Fix average() in stats.py."},
                {"role": "assistant", "content": "Which file?"},
                {"role": "user", "content": "stats.py, line 3."},
            ],
            "max_tokens": 256,
            "temperature": 0.2,
            "stream": true,
        })
    );
}

#[tokio::test]
async fn refusal_stop_reason_is_filtered() {
    let server = LlmServer::start(|_| Reply::anthropic_with_stop("", "refusal"));
    let response = Wire::ANTHROPIC
        .model(&server)
        .complete(&request())
        .await
        .expect("an answer");
    assert_eq!(response.finish, Finish::Filtered);
}

#[tokio::test]
async fn overloaded_529_is_retried() {
    let server = LlmServer::sequence(vec![
        Reply::json(
            529,
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        Reply::anthropic_text("ok"),
    ]);
    let response = Wire::ANTHROPIC
        .model(&server)
        .complete(&request())
        .await
        .expect("retried");
    assert_eq!(response.attempts, 2);
}

#[test]
fn a_key_is_required_and_named() {
    let config = ProviderConfig {
        kind: ProviderKind::Anthropic,
        model: String::new(),
        base_url: Some("http://127.0.0.1:9".into()),
        api_key: None,
        timeout: Duration::from_secs(5),
        max_time: Duration::ZERO,
        max_attempts: 1,
        replay_file: None,
    };
    let error = build(&config).expect_err("no key");
    assert!(matches!(error, LlmError::MissingKey { .. }), "{error:?}");
    assert_eq!(
        SwarmError::from(error).to_string(),
        "anthropic: no API key; set ANTHROPIC_API_KEY"
    );
}
