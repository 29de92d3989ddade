//! Gemini generateContent: what goes over the wire.

use std::time::Duration;

use serde_json::json;
use swarm::error::SwarmError;
use swarm::llm::{build, Finish, LlmError, ProviderConfig, ProviderKind, Usage};

use super::{connect, request, Wire, KEY};
use crate::support::llm_server::{LlmServer, Reply};

#[tokio::test]
async fn sends_key_header_system_instruction_and_generation_config() {
    let server = LlmServer::start(|_| Reply::gemini_text("ok"));
    let model = Wire::GEMINI.model(&server);
    assert_eq!(model.kind(), ProviderKind::Gemini);
    model.complete(&request()).await.expect("an answer");

    let sent = &server.requests()[0];
    assert_eq!(
        sent.path,
        "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    );
    assert!(!sent.path.contains("key="), "the key is never in the URL");
    assert_eq!(sent.header("x-goog-api-key"), Some(KEY));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body_json(),
        json!({
            "systemInstruction": {"parts": [{"text": "You repair Python code. Answer with a unified diff."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "Fix average() in stats.py."}]},
                {"role": "model", "parts": [{"text": "Which file?"}]},
                {"role": "user", "parts": [{"text": "stats.py, line 3."}]},
            ],
            "generationConfig": {"maxOutputTokens": 256, "temperature": 0.2},
        })
    );
}

#[tokio::test]
async fn versioned_base_url_and_resource_model_names_are_tolerated() {
    let server = LlmServer::start(|_| Reply::gemini_text("ok"));
    let mut config = Wire::GEMINI.config(&server);
    config.base_url = Some(format!("{}/v1beta/", server.base_url()));
    config.model = "models/gemini-2.5-flash".into();
    let model = connect(&config);
    assert_eq!(model.model(), "gemini-2.5-flash");
    model.complete(&request()).await.expect("an answer");
    assert_eq!(
        server.requests()[0].path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
}

#[tokio::test]
async fn blocked_prompt_and_safety_stop_are_filtered() {
    let server = LlmServer::sequence(vec![
        Reply::json(
            200,
            &json!({"promptFeedback": {"blockReason": "SAFETY"},
                    "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}}),
        ),
        Reply::json(
            200,
            &json!({"candidates": [{"finishReason": "RECITATION", "index": 0}]}),
        ),
    ]);
    let model = Wire::GEMINI.model(&server);
    let blocked = model.complete(&request()).await.expect("an answer");
    assert_eq!(blocked.finish, Finish::Filtered);
    assert_eq!(blocked.text, "");
    assert_eq!(blocked.usage.input_tokens, 9);
    let recitation = model.complete(&request()).await.expect("an answer");
    assert_eq!(recitation.finish, Finish::Filtered);
}

#[tokio::test]
async fn thoughts_are_skipped_but_counted() {
    let server = LlmServer::start(|_| {
        Reply::json(
            200,
            &json!({
                "candidates": [{"content": {"role": "model", "parts": [
                    {"text": "let me think", "thought": true},
                    {"text": "part one, "},
                    {"text": "part two"}
                ]}, "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                                  "thoughtsTokenCount": 20}
            }),
        )
    });
    let response = Wire::GEMINI
        .model(&server)
        .complete(&request())
        .await
        .expect("an answer");
    assert_eq!(response.text, "part one, part two");
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 10,
            output_tokens: 25,
            estimated: false
        }
    );
}

#[test]
fn a_key_is_required_and_named() {
    let config = ProviderConfig {
        kind: ProviderKind::Gemini,
        model: String::new(),
        base_url: None,
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
        "gemini: no API key; set GEMINI_API_KEY or GOOGLE_API_KEY"
    );
}
