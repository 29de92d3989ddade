//! The LLM layer against real HTTP on 127.0.0.1: every provider's wire
//! format, retries, timeouts and error replies, replay and recording.

mod anthropic;
mod gemini;
mod hints;
mod openai;
mod prices;
mod record_replay;
mod resilience;
mod streaming;

use std::sync::Arc;
use std::time::Duration;

use swarm::llm::{
    build_with_retry, ChatMessage, ChatModel, ChatRequest, ProviderConfig, ProviderKind,
    RetryPolicy, Role, Secret,
};

use crate::support::llm_server::{LlmServer, Reply};

/// The key every test sends; it must never show in an error or `Debug`.
pub const KEY: &str = "sk-test-SECRET-7f3a9c";

/// How one provider speaks, for the scenarios shared by all three.
#[derive(Clone, Copy)]
pub struct Wire {
    pub kind: ProviderKind,
    pub model: &'static str,
    /// The path the provider must post to.
    pub path: &'static str,
    /// The base URL to configure for a server (OpenAI's ends in `/v1`).
    pub base: fn(&LlmServer) -> String,
    pub text: fn(&str) -> Reply,
    pub truncated: fn(&str) -> Reply,
    /// A 200 reply with no choices / candidates / content.
    pub empty: fn() -> Reply,
}

impl Wire {
    pub const OPENAI: Wire = Wire {
        kind: ProviderKind::OpenAi,
        model: "gpt-test",
        path: "/v1/chat/completions",
        base: |server| format!("{}/v1", server.base_url()),
        text: Reply::openai_text,
        truncated: Reply::openai_truncated,
        empty: || {
            Reply::json(
                200,
                &serde_json::json!({"id": "x", "object": "chat.completion", "choices": []}),
            )
        },
    };

    pub const GEMINI: Wire = Wire {
        kind: ProviderKind::Gemini,
        model: "gemini-test",
        path: "/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
        base: LlmServer::base_url,
        text: Reply::gemini_text,
        truncated: Reply::gemini_truncated,
        empty: || {
            Reply::json(
                200,
                &serde_json::json!({"candidates": [], "usageMetadata": {"promptTokenCount": 3}}),
            )
        },
    };

    pub const ANTHROPIC: Wire = Wire {
        kind: ProviderKind::Anthropic,
        model: "claude-test",
        path: "/v1/messages",
        base: LlmServer::base_url,
        text: Reply::anthropic_text,
        truncated: Reply::anthropic_truncated,
        empty: || {
            Reply::json(
                200,
                &serde_json::json!({
                    "id": "msg", "type": "message", "role": "assistant", "content": [],
                    "stop_reason": "end_turn",
                    "usage": {"input_tokens": 3, "output_tokens": 0}
                }),
            )
        },
    };

    /// A config for this provider talking to `server`.
    pub fn config(&self, server: &LlmServer) -> ProviderConfig {
        ProviderConfig {
            kind: self.kind,
            model: self.model.to_string(),
            base_url: Some((self.base)(server)),
            api_key: Some(Secret::new(KEY)),
            timeout: Duration::from_secs(5),
            max_time: Duration::ZERO,
            max_attempts: 3,
            replay_file: None,
        }
    }

    /// The provider for `server`, with millisecond backoffs.
    pub fn model(&self, server: &LlmServer) -> Arc<dyn ChatModel> {
        connect(&self.config(server))
    }
}

/// Builds `config` with millisecond backoffs.
pub fn connect(config: &ProviderConfig) -> Arc<dyn ChatModel> {
    build_with_retry(config, RetryPolicy::fast()).expect("a complete config builds")
}

/// A request with a system prompt and a short conversation.
pub fn request() -> ChatRequest {
    ChatRequest {
        system: "You repair Python code. Answer with a unified diff.".into(),
        messages: vec![
            ChatMessage {
                role: Role::User,
                content: "Fix average() in stats.py.".into(),
            },
            ChatMessage {
                role: Role::Assistant,
                content: "Which file?".into(),
            },
            ChatMessage {
                role: Role::User,
                content: "stats.py, line 3.".into(),
            },
        ],
        max_output_tokens: 256,
        temperature: 0.2,
        sampling: Default::default(),
    }
}
