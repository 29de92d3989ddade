//! OpenAI-compatible chat completions (`POST {base}/chat/completions`).
//!
//! The base URL ends in `/v1`, as with OpenAI's own client, so the same code
//! talks to OpenAI, OpenRouter, Ollama, vLLM, llama.cpp and LM Studio. The key
//! goes in `Authorization: Bearer`; a local server given by base URL may have
//! no key, and then no `Authorization` header is sent.

use serde_json::{json, Value};

use super::reply::estimated_usage;
use super::retry::{RetryPolicy, Transport};
use super::{
    model_or_default, require_key, resolve_base_url, temperature_json, ChatModel, ChatRequest,
    ChatResponse, Finish, LlmError, ProviderConfig, ProviderKind, Role, Secret, Usage,
};

/// OpenAI's API root.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A chat model behind an OpenAI-compatible API.
#[derive(Debug)]
pub struct OpenAiChat {
    model: String,
    base_url: String,
    key: Option<Secret>,
    transport: Transport,
}

impl OpenAiChat {
    /// A provider for `config`. The key may be missing only when a base URL
    /// is given (a local server).
    pub fn new(config: &ProviderConfig, retry: RetryPolicy) -> Result<Self, LlmError> {
        let key = if config.base_url.is_some() {
            config
                .api_key
                .clone()
                .filter(|key| !key.expose().trim().is_empty())
        } else {
            Some(require_key(
                config,
                "OPENAI_API_KEY (or give a base URL for a local server that needs no key)",
            )?)
        };
        let base_url = resolve_base_url(config, OPENAI_DEFAULT_BASE_URL, None);
        let transport = Transport::new("openai", config, &base_url, key.clone(), retry)?;
        Ok(Self {
            model: model_or_default(config),
            base_url,
            key,
            transport,
        })
    }

    /// The endpoint this provider posts to.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    /// The JSON body for `request`.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        for message in &request.messages {
            let role = match message.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            messages.push(json!({"role": role, "content": message.content}));
        }
        let mut body = json!({"model": self.model, "messages": messages});
        if is_reasoning_model(&self.model) {
            // Reasoning models reject `max_tokens` and any temperature but 1.
            body["max_completion_tokens"] = json!(request.max_output_tokens);
        } else {
            body["max_tokens"] = json!(request.max_output_tokens);
            body["temperature"] = temperature_json(request.temperature);
        }
        body
    }

    /// Reads a chat completion reply.
    fn parse(
        &self,
        request: &ChatRequest,
        body: &str,
    ) -> Result<(String, Finish, Usage), LlmError> {
        let endpoint = self.endpoint();
        let value = self.transport.parse_json(body, &endpoint)?;
        let choices = value.get("choices").and_then(Value::as_array);
        let Some(choice) = choices.and_then(|choices| choices.first()) else {
            let message = match value.get("error") {
                Some(_) => "the API answered with an error instead of choices",
                None if choices.is_some() => "`choices` is empty",
                None => "no `choices` in the reply",
            };
            return Err(self.transport.malformed(message, body));
        };
        let finish = match choice.get("finish_reason").and_then(Value::as_str) {
            None | Some("stop") => Finish::Stop,
            Some("length") => Finish::Length,
            Some("content_filter") => Finish::Filtered,
            Some(other) => Finish::Other(other.to_string()),
        };
        let message = choice.get("message");
        let content = message.and_then(|message| message_text(message.get("content")?));
        let refusal = message
            .and_then(|message| message.get("refusal"))
            .and_then(Value::as_str);
        let (text, finish) = match (content, refusal) {
            (Some(text), _) => (text, finish),
            (None, Some(refusal)) => (refusal.to_string(), Finish::Filtered),
            (None, None) if finish == Finish::Filtered || finish == Finish::Length => {
                (String::new(), finish)
            }
            (None, None) => {
                return Err(self
                    .transport
                    .malformed("the first choice has no `message.content` text", body))
            }
        };
        let usage = value
            .get("usage")
            .and_then(|usage| {
                Some(Usage {
                    input_tokens: usage.get("prompt_tokens")?.as_u64()?,
                    output_tokens: usage.get("completion_tokens")?.as_u64()?,
                    estimated: false,
                })
            })
            .unwrap_or_else(|| estimated_usage(request, &text));
        Ok((text, finish, usage))
    }
}

#[async_trait::async_trait]
impl ChatModel for OpenAiChat {
    fn kind(&self) -> ProviderKind {
        ProviderKind::OpenAi
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut headers = Vec::new();
        if let Some(key) = &self.key {
            headers.push(("authorization", format!("Bearer {}", key.expose())));
        }
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

/// Text of `message.content`: a string, or an array of `{"type":"text"}` parts.
fn message_text(content: &Value) -> Option<String> {
    match content {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.concat())
        }
        _ => None,
    }
}

/// OpenAI reasoning models (o1, o3, o4-mini, gpt-5…) take
/// `max_completion_tokens` and no temperature.
fn is_reasoning_model(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    let mut chars = name.chars();
    let o_series = chars.next() == Some('o') && chars.next().is_some_and(|ch| ch.is_ascii_digit());
    o_series || name.starts_with("gpt-5")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_models_are_recognised() {
        assert!(is_reasoning_model("o3"));
        assert!(is_reasoning_model("o4-mini"));
        assert!(is_reasoning_model("openai/gpt-5-mini"));
        assert!(!is_reasoning_model("gpt-4o-mini"));
        assert!(!is_reasoning_model("llama3.1:8b"));
        assert!(!is_reasoning_model("olmo-7b"));
    }
}
