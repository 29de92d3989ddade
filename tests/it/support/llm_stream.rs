//! Streamed replies for [`LlmServer`](super::llm_server::LlmServer):
//! server-sent events in each provider's wire format (OpenAI chat
//! completion chunks, Gemini `streamGenerateContent?alt=sse`, Anthropic's
//! message stream), cut into pieces written a pause apart, and replies that
//! stall mid-stream. The server writes them chunk by chunk.
// Shared by every test area; not every area uses every helper.
#![allow(dead_code)]

use std::time::Duration;

use serde_json::{json, Value};

use super::llm_server::{Chunk, RecordedRequest, Reply, REPLY_INPUT_TOKENS, REPLY_OUTPUT_TOKENS};

/// Streamed replies: server-sent events in each provider's format.
impl Reply {
    /// A 200 `text/event-stream` reply of `events` (each one event's lines,
    /// without the blank line that ends it), one chunk per event, each after
    /// `pause`.
    pub fn sse(events: Vec<String>, pause: Duration) -> Self {
        let chunks = events
            .into_iter()
            .map(|event| Chunk {
                pause,
                bytes: format!("{event}\n\n").into_bytes(),
            })
            .collect();
        Self {
            chunks,
            ..Self::status(200, "").with_header("content-type", "text/event-stream")
        }
    }

    /// An OpenAI chat completion stream of `text` in `pieces` deltas, with
    /// `finish_reason`, a usage chunk and `[DONE]`.
    pub fn openai_stream_with_finish(
        text: &str,
        finish_reason: &str,
        pieces: usize,
        pause: Duration,
    ) -> Self {
        let chunk = |delta: Value, finish: Value| {
            format!(
                "data: {}",
                json!({
                    "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0,
                    "model": "test-model",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                })
            )
        };
        let mut events = vec![chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )];
        for piece in split_text(text, pieces) {
            events.push(chunk(json!({"content": piece}), Value::Null));
        }
        events.push(chunk(json!({}), json!(finish_reason)));
        events.push(format!(
            "data: {}",
            json!({
                "id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": [],
                "usage": {
                    "prompt_tokens": REPLY_INPUT_TOKENS,
                    "completion_tokens": REPLY_OUTPUT_TOKENS,
                    "total_tokens": REPLY_INPUT_TOKENS + REPLY_OUTPUT_TOKENS,
                },
            })
        ));
        events.push("data: [DONE]".to_string());
        Self::sse(events, pause)
    }

    /// An OpenAI stream of `text` that ends normally.
    pub fn openai_stream(text: &str, pieces: usize, pause: Duration) -> Self {
        Self::openai_stream_with_finish(text, "stop", pieces, pause)
    }

    /// A Gemini `streamGenerateContent?alt=sse` stream of `text` in
    /// `pieces` chunks, the last with `finishReason: STOP` and the usage.
    pub fn gemini_stream(text: &str, pieces: usize, pause: Duration) -> Self {
        let parts = split_text(text, pieces);
        let last = parts.len() - 1;
        let events = parts
            .into_iter()
            .enumerate()
            .map(|(index, piece)| {
                let mut candidate = json!({
                    "content": {"role": "model", "parts": [{"text": piece}]},
                    "index": 0,
                });
                if index == last {
                    candidate["finishReason"] = json!("STOP");
                }
                let output = if index == last {
                    REPLY_OUTPUT_TOKENS
                } else {
                    index as u64 + 1
                };
                format!(
                    "data: {}",
                    json!({
                        "candidates": [candidate],
                        "usageMetadata": {
                            "promptTokenCount": REPLY_INPUT_TOKENS,
                            "candidatesTokenCount": output,
                        },
                        "modelVersion": "gemini-test",
                    })
                )
            })
            .collect();
        Self::sse(events, pause)
    }

    /// An Anthropic Messages stream of `text` in `pieces` text deltas:
    /// message_start, content_block_start, a ping, the deltas,
    /// content_block_stop, message_delta (`end_turn`, usage), message_stop.
    pub fn anthropic_stream(text: &str, pieces: usize, pause: Duration) -> Self {
        let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}");
        let mut events = vec![
            event(
                "message_start",
                json!({"type": "message_start", "message": {
                    "id": "msg_test", "type": "message", "role": "assistant", "model": "claude-test",
                    "content": [], "stop_reason": null,
                    "usage": {"input_tokens": REPLY_INPUT_TOKENS, "output_tokens": 1},
                }}),
            ),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "text", "text": ""}}),
            ),
            event("ping", json!({"type": "ping"})),
        ];
        for piece in split_text(text, pieces) {
            events.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        events.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ));
        events.push(event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                   "usage": {"output_tokens": REPLY_OUTPUT_TOKENS}}),
        ));
        events.push(event("message_stop", json!({"type": "message_stop"})));
        Self::sse(events, pause)
    }

    /// A streamed reply with `text` in the wire format `request` was sent
    /// in (told by its path, like [`Reply::text_for`]), in `pieces` pieces
    /// `pause` apart.
    pub fn stream_for(
        request: &RecordedRequest,
        text: &str,
        pieces: usize,
        pause: Duration,
    ) -> Self {
        let path = request.path.split('?').next().unwrap_or_default();
        if path.ends_with("/chat/completions") {
            Self::openai_stream(text, pieces, pause)
        } else if path.ends_with(":streamGenerateContent") || path.ends_with(":generateContent") {
            Self::gemini_stream(text, pieces, pause)
        } else if path.ends_with("/v1/messages") {
            Self::anthropic_stream(text, pieces, pause)
        } else {
            Self::text_for(request, text)
        }
    }

    /// Sends only the first `chunks` chunks of a streamed reply, then keeps
    /// the connection open and silent (a model that stalled mid-stream).
    pub fn stall_after(mut self, chunks: usize) -> Self {
        self.chunks.truncate(chunks);
        self.stall = true;
        self
    }
}

/// Whether `request` asked for a streamed reply: `"stream": true` in its
/// body, or Gemini's streaming endpoint.
pub fn is_streaming(request: &RecordedRequest) -> bool {
    request.body_json()["stream"] == json!(true) || request.path.contains(":streamGenerateContent")
}

/// `text` cut into `pieces` parts of about equal length, on character
/// boundaries (at least one part, none empty unless `text` is).
fn split_text(text: &str, pieces: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let pieces = pieces.clamp(1, chars.len().max(1));
    let size = chars.len().div_ceil(pieces).max(1);
    let parts: Vec<String> = chars
        .chunks(size)
        .map(|part| part.iter().collect())
        .collect();
    if parts.is_empty() {
        vec![String::new()]
    } else {
        parts
    }
}
