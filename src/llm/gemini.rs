//! Google Gemini `generateContent`
//! (`POST {base}/v1beta/models/{model}:generateContent`).
//!
//! The base URL is the host root; the key goes in the `x-goog-api-key`
//! header, never in the URL (URLs end up in logs and error messages).

use serde_json::{json, Value};

use super::reply::estimated_usage;
use super::retry::{RetryPolicy, Transport};
use super::{
    model_or_default, require_key, resolve_base_url, temperature_json, ChatModel, ChatRequest,
    ChatResponse, Finish, LlmError, ProviderConfig, ProviderKind, Role, Secret, Usage,
};

/// Gemini API host root.
pub const GEMINI_DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// A Gemini model.
#[derive(Debug)]
pub struct GeminiChat {
    model: String,
    base_url: String,
    key: Secret,
    transport: Transport,
}

impl GeminiChat {
    /// A provider for `config`; the key is required.
    pub fn new(config: &ProviderConfig, retry: RetryPolicy) -> Result<Self, LlmError> {
        let key = require_key(config, "GEMINI_API_KEY or GOOGLE_API_KEY")?;
        let base_url = resolve_base_url(config, GEMINI_DEFAULT_BASE_URL, Some("/v1beta"));
        let transport = Transport::new("gemini", config, &base_url, Some(key.clone()), retry)?;
        let model = model_or_default(config);
        let model = model
            .strip_prefix("models/")
            .map_or(model.clone(), str::to_string);
        Ok(Self {
            model,
            base_url,
            key,
            transport,
        })
    }

    /// The endpoint this provider posts to.
    pub fn endpoint(&self) -> String {
        format!(
            "{}/v1beta/models/{}:generateContent",
            self.base_url, self.model
        )
    }

    /// The JSON body for `request`.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let contents: Vec<Value> = request
            .messages
            .iter()
            .map(|message| {
                let role = match message.role {
                    Role::User => "user",
                    Role::Assistant => "model",
                };
                json!({"role": role, "parts": [{"text": message.content}]})
            })
            .collect();
        let mut body = json!({
            "contents": contents,
            "generationConfig": {
                "maxOutputTokens": request.max_output_tokens,
                "temperature": temperature_json(request.temperature),
            },
        });
        if !request.system.is_empty() {
            body["systemInstruction"] = json!({"parts": [{"text": request.system}]});
        }
        body
    }

    /// Reads a `generateContent` reply.
    fn parse(
        &self,
        request: &ChatRequest,
        body: &str,
    ) -> Result<(String, Finish, Usage), LlmError> {
        let value = self.transport.parse_json(body, &self.endpoint())?;
        let candidates = value.get("candidates").and_then(Value::as_array);
        let candidate = candidates.and_then(|candidates| candidates.first());
        let block_reason = value
            .get("promptFeedback")
            .and_then(|feedback| feedback.get("blockReason"))
            .and_then(Value::as_str);
        let Some(candidate) = candidate else {
            if let Some(reason) = block_reason {
                // The prompt itself was blocked: an answer, not a broken reply.
                tracing::debug!(reason, "gemini blocked the prompt");
                let usage = self.usage(&value, request, "");
                return Ok((String::new(), Finish::Filtered, usage));
            }
            let message = match value.get("error") {
                Some(_) => "the API answered with an error instead of candidates",
                None if candidates.is_some() => "`candidates` is empty",
                None => "no `candidates` in the reply",
            };
            return Err(self.transport.malformed(message, body));
        };
        let finish = match candidate.get("finishReason").and_then(Value::as_str) {
            None | Some("STOP") => Finish::Stop,
            Some("MAX_TOKENS") => Finish::Length,
            Some(
                "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII"
                | "IMAGE_SAFETY",
            ) => Finish::Filtered,
            Some(other) => Finish::Other(other.to_string()),
        };
        let parts = candidate
            .get("content")
            .and_then(|content| content.get("parts"))
            .and_then(Value::as_array);
        let texts: Vec<&str> = parts
            .into_iter()
            .flatten()
            .filter(|part| {
                !part
                    .get("thought")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
            })
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect();
        if texts.is_empty() && finish == Finish::Stop {
            return Err(self
                .transport
                .malformed("the first candidate has no text parts", body));
        }
        let text = texts.concat();
        let usage = self.usage(&value, request, &text);
        Ok((text, finish, usage))
    }

    /// Usage from `usageMetadata` (thinking tokens count as output), or an
    /// estimate.
    fn usage(&self, value: &Value, request: &ChatRequest, text: &str) -> Usage {
        value
            .get("usageMetadata")
            .and_then(|usage| {
                let input = usage.get("promptTokenCount")?.as_u64()?;
                let candidates = usage
                    .get("candidatesTokenCount")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                let thoughts = usage
                    .get("thoughtsTokenCount")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                Some(Usage {
                    input_tokens: input,
                    output_tokens: candidates + thoughts,
                    estimated: false,
                })
            })
            .unwrap_or_else(|| estimated_usage(request, text))
    }
}

#[async_trait::async_trait]
impl ChatModel for GeminiChat {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Gemini
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let headers = [("x-goog-api-key", self.key.expose().to_string())];
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
