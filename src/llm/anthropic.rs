//! Anthropic Messages (`POST {base}/v1/messages`).
//!
//! The base URL is the host root; the key goes in `x-api-key`, with
//! `anthropic-version: 2023-06-01`.
//!
//! Replies are streamed (`stream: true`: `message_start` with the input
//! usage, `content_block_delta` text, `message_delta` with the stop reason
//! and output usage, `message_stop`); a server that refuses streaming is
//! asked the plain way, and one that answers with one JSON body is read as
//! that.

use std::sync::Arc;

use serde_json::{json, Value};

use super::reply::estimated_usage;
use super::retry::{Exchange, Received, Transport};
use super::sse::SseEvent;
use super::stream::{event_json, Flow, StreamDecoder, StreamFault, StreamedParts};
use super::RetryPolicy;
use super::{
    model_or_default, require_key, resolve_base_url, temperature_json, ChatModel, ChatRequest,
    ChatResponse, Finish, LlmError, ProviderConfig, ProviderKind, Role, Secret, Usage,
};

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
        let key = require_key(config)?;
        let base_url = resolve_base_url(config);
        let transport = Transport::new(
            config.kind.name(),
            config,
            &base_url,
            Some(key.clone()),
            retry,
        )?;
        Ok(Self {
            model: model_or_default(config),
            base_url,
            key,
            transport,
        })
    }

    /// Reports progress and retries to `events`, if given.
    pub(crate) fn reporting(mut self, events: Option<Arc<dyn crate::log::EventSink>>) -> Self {
        if let Some(events) = events {
            self.transport.report_to(events);
        }
        self
    }

    /// The endpoint this provider posts to.
    pub fn endpoint(&self) -> String {
        format!("{}/v1/messages", self.base_url)
    }

    /// The JSON body for `request`, streamed: [`Self::request_body`] with
    /// `stream: true`.
    pub fn stream_body(&self, request: &ChatRequest) -> Value {
        let mut body = self.request_body(request);
        body["stream"] = json!(true);
        body
    }

    /// The JSON body for `request`, not streamed.
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
        let finish = finish_of(value.get("stop_reason").and_then(Value::as_str));
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
                    input_tokens: input_tokens(usage)?,
                    output_tokens: usage.get("output_tokens")?.as_u64()?,
                    estimated: false,
                })
            })
            .unwrap_or_else(|| estimated_usage(request, &text));
        Ok((text, finish, usage))
    }
}

/// `stop_reason` as a [`Finish`] (absent: a normal stop).
fn finish_of(reason: Option<&str>) -> Finish {
    match reason {
        None | Some("end_turn" | "stop_sequence") => Finish::Stop,
        Some("max_tokens") => Finish::Length,
        Some("refusal") => Finish::Filtered,
        Some(other) => Finish::Other(other.to_string()),
    }
}

/// Input tokens of a `usage` object, cache reads and writes included.
fn input_tokens(usage: &Value) -> Option<u64> {
    Some(
        usage.get("input_tokens")?.as_u64()?
            + cache_tokens(usage, "cache_creation_input_tokens")
            + cache_tokens(usage, "cache_read_input_tokens"),
    )
}

/// Reads a Messages event stream up to `message_stop`.
#[derive(Debug, Default)]
struct AnthropicStream {
    text: String,
    finish: Option<Finish>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    stopped: bool,
}

impl StreamDecoder for AnthropicStream {
    fn event(&mut self, event: &SseEvent) -> Result<Flow, StreamFault> {
        let value = event_json(event)?;
        match value.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                if let Some(usage) = value.get("message").and_then(|m| m.get("usage")) {
                    self.input_tokens = input_tokens(usage).or(self.input_tokens);
                    self.output_tokens = usage.get("output_tokens").and_then(Value::as_u64);
                }
            }
            Some("content_block_delta") => {
                let delta = value.get("delta");
                let is_text = delta
                    .and_then(|delta| delta.get("type"))
                    .and_then(Value::as_str)
                    == Some("text_delta");
                if let Some(text) = delta
                    .filter(|_| is_text)
                    .and_then(|delta| delta.get("text"))
                    .and_then(Value::as_str)
                {
                    self.text.push_str(text);
                }
            }
            Some("message_delta") => {
                if let Some(reason) = value
                    .get("delta")
                    .and_then(|delta| delta.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.finish = Some(finish_of(Some(reason)));
                }
                if let Some(usage) = value.get("usage") {
                    if let Some(output) = usage.get("output_tokens").and_then(Value::as_u64) {
                        self.output_tokens = Some(output);
                    }
                    if let Some(input) = input_tokens(usage) {
                        self.input_tokens = Some(input);
                    }
                }
            }
            Some("message_stop") => {
                self.stopped = true;
                return Ok(Flow::Done);
            }
            Some("error") => return Err(StreamFault::Api(event.data.clone())),
            // ping, content_block_start/stop, and events added later.
            _ => {}
        }
        Ok(Flow::More)
    }

    fn text(&self) -> &str {
        &self.text
    }

    fn output_tokens(&self) -> Option<u64> {
        self.output_tokens
    }

    fn is_complete(&self) -> bool {
        self.stopped || self.finish.is_some()
    }

    fn into_parts(self) -> StreamedParts {
        let usage = match (self.input_tokens, self.output_tokens) {
            (Some(input_tokens), Some(output_tokens)) => Some(Usage {
                input_tokens,
                output_tokens,
                estimated: false,
            }),
            _ => None,
        };
        StreamedParts {
            text: self.text,
            finish: self.finish.unwrap_or(Finish::Stop),
            usage,
        }
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
        let exchange = Exchange {
            stream_url: self.endpoint(),
            stream_body: self.stream_body(request),
            plain_url: self.endpoint(),
            plain_body: self.request_body(request),
            headers: &headers,
        };
        let (received, attempts) = self
            .transport
            .send(&exchange, AnthropicStream::default)
            .await?;
        let (text, finish, usage) = match received {
            Received::Body(body) => self.parse(request, &body)?,
            Received::Stream(streamed) => streamed.into_parts().into_reply(request),
        };
        Ok(ChatResponse {
            text,
            finish,
            usage,
            attempts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_stream_gives_text_stop_reason_and_usage() {
        let stream = concat!(
            "event: message_start\n",
            "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[],",
            "\"usage\":{\"input_tokens\":20,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\n",
            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: ping\ndata: {\"type\": \"ping\"}\n\n",
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"caf\\u00e9 \"}}\n\n",
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n",
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n",
            "event: message_delta\n",
            "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":15}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        let mut parser = crate::llm::sse::SseParser::default();
        let mut decoder = AnthropicStream::default();
        let mut flows = Vec::new();
        for event in parser.feed(stream.as_bytes()).expect("text") {
            flows.push(decoder.event(&event).expect("a good event"));
        }
        assert_eq!(flows.last(), Some(&Flow::Done));
        assert!(decoder.is_complete());
        let parts = decoder.into_parts();
        assert_eq!(parts.text, "café ok");
        assert_eq!(parts.finish, Finish::Length);
        assert_eq!(
            parts.usage,
            Some(Usage {
                input_tokens: 25,
                output_tokens: 15,
                estimated: false
            })
        );
    }

    #[test]
    fn an_error_event_is_a_fault() {
        let mut decoder = AnthropicStream::default();
        let event = SseEvent {
            event: Some("error".into()),
            data: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
                .into(),
        };
        assert!(matches!(decoder.event(&event), Err(StreamFault::Api(_))));
        assert!(!decoder.is_complete());
    }
}
