//! Anthropic Messages (`POST {base}/v1/messages`).
//!
//! The base URL is the host root; the key goes in `x-api-key`, with
//! `anthropic-version: 2023-06-01`.

use serde_json::{json, Value};

use super::reply::estimated_usage;
use super::retry::{RetryPolicy, Transport};
use super::{
    model_or_default, require_key, resolve_base_url, temperature_json, ChatModel, ChatRequest,
    ChatResponse, Finish, LlmError, ProviderConfig, ProviderKind, Role, Secret, Usage,
};

/// Anthropic API host root.
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The API version sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A Claude model.
#[derive(Debug)]
pub struct AnthropicChat {
    model: String,
    base_url: String,
    key: Secret,
    transport: Transport,
}

impl AnthropicChat {
    /// A provider for `config`; the key is required.
    pub fn new(config: &ProviderConfig, retry: RetryPolicy) -> Result<Self, LlmError> {
        let key = require_key(config, "ANTHROPIC_API_KEY")?;
        let base_url = resolve_base_url(config, ANTHROPIC_DEFAULT_BASE_URL, Some("/v1"));
        let transport = Transport::new("anthropic", config, &base_url, Some(key.clone()), retry)?;
        Ok(Self {
            model: model_or_default(config),
            base_url,
            key,
            transport,
        })
    }

    /// The endpoint this provider posts to.
    pub fn endpoint(&self) -> String {
        format!("{}/v1/messages", self.base_url)
    }

    /// The JSON body for `request`.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let messages: Vec<Value> = request
            .messages
            .iter()
            .map(|message| {
                let role = match message.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                };
                json!({"role": role, "content": message.content})
            })
            .collect();
        let mut body = json!({
            "model": self.model,
            "max_tokens": request.max_output_tokens,
            "messages": messages,
            "temperature": temperature_json(request.temperature),
        });
        if !request.system.is_empty() {
            body["system"] = json!(request.system);
        }
        body
    }

    /// Reads a Messages reply.
    fn parse(
        &self,
        request: &ChatRequest,
        body: &str,
    ) -> Result<(String, Finish, Usage), LlmError> {
        let value = self.transport.parse_json(body, &self.endpoint())?;
        if value.get("type").and_then(Value::as_str) == Some("error") {
            return Err(self
                .transport
                .malformed("the API answered with an error instead of a message", body));
        }
        let Some(content) = value.get("content").and_then(Value::as_array) else {
            return Err(self.transport.malformed("no `content` in the reply", body));
        };
        let finish = match value.get("stop_reason").and_then(Value::as_str) {
            None | Some("end_turn" | "stop_sequence") => Finish::Stop,
            Some("max_tokens") => Finish::Length,
            Some("refusal") => Finish::Filtered,
            Some(other) => Finish::Other(other.to_string()),
        };
        let texts: Vec<&str> = content
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect();
        if texts.is_empty() && finish == Finish::Stop {
            let message = if content.is_empty() {
                "`content` is empty"
            } else {
                "`content` has no text block"
            };
            return Err(self.transport.malformed(message, body));
        }
        let text = texts.concat();
        let usage = value
            .get("usage")
            .and_then(|usage| {
                Some(Usage {
                    input_tokens: usage.get("input_tokens")?.as_u64()?
                        + cache_tokens(usage, "cache_creation_input_tokens")
                        + cache_tokens(usage, "cache_read_input_tokens"),
                    output_tokens: usage.get("output_tokens")?.as_u64()?,
                    estimated: false,
                })
            })
            .unwrap_or_else(|| estimated_usage(request, &text));
        Ok((text, finish, usage))
    }
}

/// A cache token counter of `usage`, 0 when absent or null.
fn cache_tokens(usage: &Value, field: &str) -> u64 {
    usage.get(field).and_then(Value::as_u64).unwrap_or(0)
}

#[async_trait::async_trait]
impl ChatModel for AnthropicChat {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Anthropic
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let headers = [
            ("x-api-key", self.key.expose().to_string()),
            ("anthropic-version", ANTHROPIC_VERSION.to_string()),
        ];
        let (body, attempts) = self
            .transport
            .post_json(&self.endpoint(), &headers, &self.request_body(request))
            .await?;
        let (text, finish, usage) = self.parse(request, &body)?;
        Ok(ChatResponse {
            text,
            finish,
            usage,
            attempts,
        })
    }
}
