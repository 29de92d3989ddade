//! Anthropic Messages (`POST {base}/v1/messages`).
//!
//! The base URL is the host root; the key goes in `x-api-key`, with
//! `anthropic-version: 2023-06-01`.
//!
//! The wire format only: the stream (`stream: true`: `message_start` with
//! the input usage, `content_block_delta` text, `message_delta` with the
//! stop reason and output usage, `message_stop`), the plain body for a
//! server that refuses streaming, and a JSON reply. Sending, retrying and
//! timing are the HTTP chat client's (`http`).

use serde_json::{json, Value};

use super::chat::{ChatRequest, Finish, ProviderKind, Role, Usage};
use super::decode::{event_json, Flow, ReplyParts, StreamDecoder, StreamFault};
use super::sse::SseEvent;
use super::wire::{temperature_json, WireFormat};

/// The API version sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The Anthropic Messages format.
#[derive(Debug)]
pub(crate) struct Anthropic {
    model: String,
    base_url: String,
}

impl WireFormat for Anthropic {
    const KIND: ProviderKind = ProviderKind::Anthropic;
    type Events = AnthropicStream;

    fn new(base_url: String, model: String) -> Self {
        Self { model, base_url }
    }

    fn model(&self) -> &str {
        &self.model
    }

    /// `anthropic-version`, and the key in `x-api-key`.
    fn headers(key: Option<&str>) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION.to_string())];
        headers.extend(key.map(|key| ("x-api-key", key.to_string())));
        headers
    }

    fn stream_url(&self) -> String {
        self.plain_url()
    }

    fn plain_url(&self) -> String {
        format!("{}/v1/messages", self.base_url)
    }

    /// [`Self::plain_body`] with `stream: true`.
    fn stream_body(&self, request: &ChatRequest) -> Value {
        let mut body = self.plain_body(request);
        body["stream"] = json!(true);
        body
    }

    /// The conversation, the output limit and the temperature; the
    /// Messages API has no penalty, so the request's sampling adds nothing.
    fn plain_body(&self, request: &ChatRequest) -> Value {
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

    /// Reads a Messages reply: its text blocks, stop reason and usage.
    fn read_reply(&self, value: &Value) -> Result<ReplyParts, &'static str> {
        if value.get("type").and_then(Value::as_str) == Some("error") {
            return Err("the API answered with an error instead of a message");
        }
        let Some(content) = value.get("content").and_then(Value::as_array) else {
            return Err("no `content` in the reply");
        };
        let finish = finish_of(value.get("stop_reason").and_then(Value::as_str));
        let texts: Vec<&str> = content
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect();
        if texts.is_empty() && finish == Finish::Stop {
            return Err(if content.is_empty() {
                "`content` is empty"
            } else {
                "`content` has no text block"
            });
        }
        let usage = value.get("usage").and_then(|usage| {
            Some(Usage {
                input_tokens: input_tokens(usage)?,
                output_tokens: usage.get("output_tokens")?.as_u64()?,
                estimated: false,
            })
        });
        Ok(ReplyParts {
            text: texts.concat(),
            finish,
            usage,
        })
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
pub(crate) struct AnthropicStream {
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

    fn into_parts(self) -> ReplyParts {
        let usage = match (self.input_tokens, self.output_tokens) {
            (Some(input_tokens), Some(output_tokens)) => Some(Usage {
                input_tokens,
                output_tokens,
                estimated: false,
            }),
            _ => None,
        };
        ReplyParts {
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
