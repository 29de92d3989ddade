//! Google Gemini `generateContent`
//! (`POST {base}/v1beta/models/{model}:generateContent`).
//!
//! The base URL is the host root; the key goes in the `x-goog-api-key`
//! header, never in the URL (URLs end up in logs and error messages).
//!
//! Replies are streamed (`:streamGenerateContent?alt=sse`: each event is a
//! partial `GenerateContentResponse`, the last with `finishReason`;
//! `usageMetadata` as it grows); a server that refuses streaming is asked
//! at `:generateContent`, and one that answers with JSON (one response, or
//! an array of them) is read as that.

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
        let key = require_key(config)?;
        let base_url = resolve_base_url(config);
        let transport = Transport::new(
            config.kind.name(),
            config,
            &base_url,
            Some(key.clone()),
            retry,
        )?;
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

    /// Reports progress and retries to `events`, if given.
    pub(crate) fn reporting(mut self, events: Option<Arc<dyn crate::log::EventSink>>) -> Self {
        if let Some(events) = events {
            self.transport.report_to(events);
        }
        self
    }

    /// The endpoint this provider posts to when not streaming.
    pub fn endpoint(&self) -> String {
        format!(
            "{}/v1beta/models/{}:generateContent",
            self.base_url, self.model
        )
    }

    /// The streaming endpoint (server-sent events).
    pub fn stream_endpoint(&self) -> String {
        format!(
            "{}/v1beta/models/{}:streamGenerateContent?alt=sse",
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
        if let Some(chunks) = value.as_array() {
            // `streamGenerateContent` without `alt=sse`: the chunks as one array.
            let mut stream = GeminiStream::default();
            for chunk in chunks {
                stream
                    .chunk(chunk)
                    .map_err(|_| self.transport.malformed("the API sent an error", body))?;
            }
            return Ok(stream.into_parts().into_reply(request));
        }
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
        let finish = finish_of(candidate.get("finishReason").and_then(Value::as_str));
        let texts = candidate_texts(candidate);
        if texts.is_empty() && finish == Finish::Stop {
            return Err(self
                .transport
                .malformed("the first candidate has no text parts", body));
        }
        let text = texts.concat();
        let usage = self.usage(&value, request, &text);
        Ok((text, finish, usage))
    }

    /// Usage from `usageMetadata`, or an estimate.
    fn usage(&self, value: &Value, request: &ChatRequest, text: &str) -> Usage {
        reported_usage(value).unwrap_or_else(|| estimated_usage(request, text))
    }
}

/// `finishReason` as a [`Finish`] (absent: a normal stop).
fn finish_of(reason: Option<&str>) -> Finish {
    match reason {
        None | Some("STOP") => Finish::Stop,
        Some("MAX_TOKENS") => Finish::Length,
        Some(
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY",
        ) => Finish::Filtered,
        Some(other) => Finish::Other(other.to_string()),
    }
}

/// The text parts of a candidate, thoughts left out.
fn candidate_texts(candidate: &Value) -> Vec<&str> {
    let parts = candidate
        .get("content")
        .and_then(|content| content.get("parts"))
        .and_then(Value::as_array);
    parts
        .into_iter()
        .flatten()
        .filter(|part| {
            !part
                .get("thought")
                .and_then(Value::as_bool)
                .unwrap_or(false)
        })
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect()
}

/// Usage from `usageMetadata` (thinking tokens count as output).
fn reported_usage(value: &Value) -> Option<Usage> {
    let usage = value.get("usageMetadata")?;
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
}

/// Reads `streamGenerateContent` chunks; the stream ends with the
/// connection, after a chunk with `finishReason`.
#[derive(Debug, Default)]
struct GeminiStream {
    text: String,
    finish: Option<Finish>,
    usage: Option<Usage>,
}

impl GeminiStream {
    /// Reads one `GenerateContentResponse` chunk; `Err` when it is an error.
    fn chunk(&mut self, value: &Value) -> Result<(), ()> {
        if value.get("error").is_some_and(|error| !error.is_null()) {
            return Err(());
        }
        if let Some(usage) = reported_usage(value) {
            self.usage = Some(usage);
        }
        let blocked = value
            .get("promptFeedback")
            .and_then(|feedback| feedback.get("blockReason"))
            .is_some();
        let candidate = value
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|candidates| candidates.first());
        match candidate {
            Some(candidate) => {
                self.text.push_str(&candidate_texts(candidate).concat());
                if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
                    self.finish = Some(finish_of(Some(reason)));
                }
            }
            None if blocked => self.finish = Some(Finish::Filtered),
            None => {}
        }
        Ok(())
    }
}

impl StreamDecoder for GeminiStream {
    fn event(&mut self, event: &SseEvent) -> Result<Flow, StreamFault> {
        let value = event_json(event)?;
        self.chunk(&value)
            .map_err(|()| StreamFault::Api(event.data.clone()))?;
        Ok(Flow::More)
    }

    fn text(&self) -> &str {
        &self.text
    }

    fn output_tokens(&self) -> Option<u64> {
        self.usage.map(|usage| usage.output_tokens)
    }

    fn is_complete(&self) -> bool {
        self.finish.is_some()
    }

    fn into_parts(self) -> StreamedParts {
        StreamedParts {
            text: self.text,
            finish: self.finish.unwrap_or(Finish::Stop),
            usage: self.usage,
        }
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
        let exchange = Exchange {
            stream_url: self.stream_endpoint(),
            stream_body: self.request_body(request),
            plain_url: self.endpoint(),
            plain_body: self.request_body(request),
            headers: &headers,
        };
        let (received, attempts) = self
            .transport
            .send(&exchange, GeminiStream::default)
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
    fn a_stream_of_chunks_gives_text_finish_and_usage() {
        let stream = concat!(
            "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Fix \"}]}}],",
            "\"usageMetadata\":{\"promptTokenCount\":7,\"candidatesTokenCount\":1}}\r\n\r\n",
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"plan\",\"thought\":true},{\"text\":\"it\"}]},",
            "\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":7,\"candidatesTokenCount\":3,",
            "\"thoughtsTokenCount\":2}}\r\n\r\n",
        );
        let mut parser = crate::llm::sse::SseParser::default();
        let mut decoder = GeminiStream::default();
        for event in parser.feed(stream.as_bytes()).expect("text") {
            assert_eq!(decoder.event(&event).expect("a good event"), Flow::More);
        }
        assert!(decoder.is_complete());
        let parts = decoder.into_parts();
        assert_eq!(parts.text, "Fix it");
        assert_eq!(parts.finish, Finish::Stop);
        assert_eq!(
            parts.usage,
            Some(Usage {
                input_tokens: 7,
                output_tokens: 5,
                estimated: false
            })
        );
    }

    #[test]
    fn a_blocked_prompt_ends_the_stream_filtered() {
        let mut decoder = GeminiStream::default();
        let event = SseEvent {
            event: None,
            data: r#"{"promptFeedback":{"blockReason":"SAFETY"}}"#.into(),
        };
        decoder.event(&event).expect("an answer");
        assert!(decoder.is_complete());
        assert_eq!(decoder.into_parts().finish, Finish::Filtered);
    }
}
