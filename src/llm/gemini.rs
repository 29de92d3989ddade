//! Google Gemini `generateContent`
//! (`POST {base}/v1beta/models/{model}:generateContent`).
//!
//! The base URL is the host root; the key goes in the `x-goog-api-key`
//! header, never in the URL (URLs end up in logs and error messages).
//!
//! The wire format only: the stream (`:streamGenerateContent?alt=sse`: each
//! event is a partial `GenerateContentResponse`, the last with
//! `finishReason`; `usageMetadata` as it grows), `:generateContent` for a
//! server that refuses streaming, and a JSON reply (one response, or an
//! array of them). Sending, retrying and timing are the HTTP chat client's
//! (`http`).

use serde_json::{json, Value};

use super::chat::{ChatRequest, Finish, ProviderKind, Role, Usage};
use super::decode::{event_json, Flow, ReplyParts, StreamDecoder, StreamFault};
use super::sse::SseEvent;
use super::wire::{temperature_json, WireFormat};

/// The Gemini `generateContent` format.
#[derive(Debug)]
pub(crate) struct Gemini {
    model: String,
    base_url: String,
}

impl WireFormat for Gemini {
    const KIND: ProviderKind = ProviderKind::Gemini;
    type Events = GeminiStream;

    /// A model given as `models/…` is named without that prefix.
    fn new(base_url: String, model: String) -> Self {
        let model = model
            .strip_prefix("models/")
            .map_or(model.clone(), str::to_string);
        Self { model, base_url }
    }

    fn model(&self) -> &str {
        &self.model
    }

    /// `x-goog-api-key`: the key never goes in the URL.
    fn headers(key: Option<&str>) -> Vec<(&'static str, String)> {
        key.map(|key| vec![("x-goog-api-key", key.to_string())])
            .unwrap_or_default()
    }

    /// Server-sent events from `:streamGenerateContent?alt=sse`.
    fn stream_url(&self) -> String {
        format!(
            "{}/v1beta/models/{}:streamGenerateContent?alt=sse",
            self.base_url, self.model
        )
    }

    fn plain_url(&self) -> String {
        format!(
            "{}/v1beta/models/{}:generateContent",
            self.base_url, self.model
        )
    }

    /// The same body as [`Self::plain_body`]: the URL asks for the stream.
    fn stream_body(&self, request: &ChatRequest) -> Value {
        self.plain_body(request)
    }

    /// The conversation, the output limit and the temperature. No penalty
    /// is sent, whatever the request's sampling asks: Gemini 2.5 models
    /// refuse `frequencyPenalty` and `presencePenalty` ("Penalty is not
    /// enabled").
    fn plain_body(&self, request: &ChatRequest) -> Value {
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

    /// Reads a `generateContent` reply, or the chunks of a stream sent as
    /// one JSON array.
    fn read_reply(&self, value: &Value) -> Result<ReplyParts, &'static str> {
        if let Some(chunks) = value.as_array() {
            // `streamGenerateContent` without `alt=sse`: the chunks as one array.
            let mut stream = GeminiStream::default();
            for chunk in chunks {
                stream.chunk(chunk).map_err(|()| "the API sent an error")?;
            }
            return Ok(stream.into_parts());
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
                return Ok(ReplyParts {
                    text: String::new(),
                    finish: Finish::Filtered,
                    usage: reported_usage(value),
                });
            }
            return Err(match value.get("error") {
                Some(_) => "the API answered with an error instead of candidates",
                None if candidates.is_some() => "`candidates` is empty",
                None => "no `candidates` in the reply",
            });
        };
        let finish = finish_of(candidate.get("finishReason").and_then(Value::as_str));
        let texts = candidate_texts(candidate);
        if texts.is_empty() && finish == Finish::Stop {
            return Err("the first candidate has no text parts");
        }
        Ok(ReplyParts {
            text: texts.concat(),
            finish,
            usage: reported_usage(value),
        })
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
pub(crate) struct GeminiStream {
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

    fn into_parts(self) -> ReplyParts {
        ReplyParts {
            text: self.text,
            finish: self.finish.unwrap_or(Finish::Stop),
            usage: self.usage,
        }
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
