//! OpenAI-compatible chat completions (`POST {base}/chat/completions`).
//!
//! The base URL ends in `/v1`, as with OpenAI's own client, so the same code
//! talks to OpenAI, OpenRouter, Ollama, vLLM, llama.cpp and LM Studio. The key
//! goes in `Authorization: Bearer`; a local server given by base URL may have
//! no key, and then no `Authorization` header is sent.
//!
//! The wire format only: the streamed body (`stream: true` with
//! `stream_options.include_usage`, so the last chunk carries the usage), the
//! plain body for a server that refuses streaming (with `frequency_penalty`
//! and `presence_penalty` when the request's sampling asks for them), the
//! reply and its chunks.
//! Sending, retrying and timing are the HTTP chat client's (`http`).

use serde_json::{json, Value};

use super::chat::{ChatRequest, Finish, ProviderKind, Role, Usage};
use super::decode::{event_json, Flow, ReplyParts, StreamDecoder, StreamFault};
use super::sse::SseEvent;
use super::wire::{temperature_json, WireFormat};

/// The OpenAI-compatible chat completions format.
#[derive(Debug)]
pub(crate) struct OpenAi {
    model: String,
    base_url: String,
}

impl WireFormat for OpenAi {
    const KIND: ProviderKind = ProviderKind::OpenAi;
    type Events = OpenAiStream;

    fn new(base_url: String, model: String) -> Self {
        Self { model, base_url }
    }

    fn model(&self) -> &str {
        &self.model
    }

    /// `Authorization: Bearer`, only when there is a key (a local server
    /// may need none).
    fn headers(key: Option<&str>) -> Vec<(&'static str, String)> {
        key.map(|key| vec![("authorization", format!("Bearer {key}"))])
            .unwrap_or_default()
    }

    fn stream_url(&self) -> String {
        self.plain_url()
    }

    fn plain_url(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    /// [`Self::plain_body`] with `stream` and `stream_options.include_usage`.
    fn stream_body(&self, request: &ChatRequest) -> Value {
        let mut body = self.plain_body(request);
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
        body
    }

    fn plain_body(&self, request: &ChatRequest) -> Value {
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
            // Reasoning models take no penalty either.
            let sampling = &request.sampling;
            if let Some(penalty) = sampling.frequency_penalty {
                body["frequency_penalty"] = temperature_json(penalty);
            }
            if let Some(penalty) = sampling.presence_penalty {
                body["presence_penalty"] = temperature_json(penalty);
            }
        }
        body
    }

    /// Reads a chat completion: the first choice's message, or its refusal.
    fn read_reply(&self, value: &Value) -> Result<ReplyParts, &'static str> {
        let choices = value.get("choices").and_then(Value::as_array);
        let Some(choice) = choices.and_then(|choices| choices.first()) else {
            return Err(match value.get("error") {
                Some(_) => "the API answered with an error instead of choices",
                None if choices.is_some() => "`choices` is empty",
                None => "no `choices` in the reply",
            });
        };
        let finish = finish_of(choice.get("finish_reason").and_then(Value::as_str));
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
            (None, None) => return Err("the first choice has no `message.content` text"),
        };
        let usage = value.get("usage").and_then(reported_usage);
        Ok(ReplyParts {
            text,
            finish,
            usage,
        })
    }
}

/// `finish_reason` as a [`Finish`] (absent: a normal stop).
fn finish_of(reason: Option<&str>) -> Finish {
    match reason {
        None | Some("stop") => Finish::Stop,
        Some("length") => Finish::Length,
        Some("content_filter") => Finish::Filtered,
        Some(other) => Finish::Other(other.to_string()),
    }
}

/// The `usage` object's token counts, when both are there.
fn reported_usage(usage: &Value) -> Option<Usage> {
    Some(Usage {
        input_tokens: usage.get("prompt_tokens")?.as_u64()?,
        output_tokens: usage.get("completion_tokens")?.as_u64()?,
        estimated: false,
    })
}

/// Reads `chat.completion.chunk` events up to `data: [DONE]`.
#[derive(Debug, Default)]
pub(crate) struct OpenAiStream {
    text: String,
    refusal: String,
    finish: Option<Finish>,
    usage: Option<Usage>,
    done: bool,
}

impl StreamDecoder for OpenAiStream {
    fn event(&mut self, event: &SseEvent) -> Result<Flow, StreamFault> {
        if event.data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Flow::Done);
        }
        let value = event_json(event)?;
        if value.get("error").is_some_and(|error| !error.is_null()) {
            return Err(StreamFault::Api(event.data.clone()));
        }
        if let Some(usage) = value.get("usage").and_then(reported_usage) {
            self.usage = Some(usage);
        }
        let choice = value
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| choices.first());
        if let Some(choice) = choice {
            let delta = choice.get("delta");
            if let Some(text) = delta.and_then(|delta| message_text(delta.get("content")?)) {
                self.text.push_str(&text);
            }
            if let Some(refusal) = delta
                .and_then(|delta| delta.get("refusal"))
                .and_then(Value::as_str)
            {
                self.refusal.push_str(refusal);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish = Some(finish_of(Some(reason)));
            }
        }
        Ok(Flow::More)
    }

    fn text(&self) -> &str {
        &self.text
    }

    fn output_tokens(&self) -> Option<u64> {
        self.usage.map(|usage| usage.output_tokens)
    }

    fn is_complete(&self) -> bool {
        self.done || self.finish.is_some()
    }

    fn into_parts(self) -> ReplyParts {
        let finish = self.finish.unwrap_or(Finish::Stop);
        let (text, finish) = if self.text.is_empty() && !self.refusal.is_empty() {
            (self.refusal, Finish::Filtered)
        } else {
            (self.text, finish)
        };
        ReplyParts {
            text,
            finish,
            usage: self.usage,
        }
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

    fn read(stream: &str) -> (ReplyParts, bool) {
        let mut parser = crate::llm::sse::SseParser::default();
        let mut decoder = OpenAiStream::default();
        for event in parser.feed(stream.as_bytes()).expect("text") {
            if decoder.event(&event).expect("a good event") == Flow::Done {
                break;
            }
        }
        let complete = decoder.is_complete();
        (decoder.into_parts(), complete)
    }

    #[test]
    fn a_stream_gives_text_finish_and_usage() {
        let (parts, complete) = read(concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"--- a/x.py\\n\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"+++ b/x.py\"},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4}}\n\n",
            "data: [DONE]\n\n",
        ));
        assert!(complete);
        assert_eq!(parts.text, "--- a/x.py\n+++ b/x.py");
        assert_eq!(parts.finish, Finish::Length);
        assert_eq!(
            parts.usage,
            Some(Usage {
                input_tokens: 9,
                output_tokens: 4,
                estimated: false
            })
        );
    }

    #[test]
    fn a_streamed_refusal_is_filtered_and_errors_are_faults() {
        let (parts, _) = read(
            "data: {\"choices\":[{\"delta\":{\"refusal\":\"I can't\"},\"finish_reason\":\"stop\"}]}\n\n",
        );
        assert_eq!(
            (parts.text.as_str(), parts.finish),
            ("I can't", Finish::Filtered)
        );
        let mut decoder = OpenAiStream::default();
        let event = SseEvent {
            event: None,
            data: r#"{"error":{"message":"overloaded"}}"#.into(),
        };
        assert!(matches!(decoder.event(&event), Err(StreamFault::Api(_))));
        let (parts, complete) =
            read("data: {\"choices\":[{\"delta\":{\"content\":\"half\"}}]}\n\n");
        assert!(
            !complete,
            "no finish reason, no [DONE]: the stream broke off"
        );
        assert_eq!(parts.text, "half");
    }

    #[test]
    fn penalties_are_sent_when_asked_and_not_to_reasoning_models() {
        let mut request = ChatRequest::single("s", "u", 10);
        let wire = |model: &str| OpenAi::new("http://x/v1".into(), model.into());
        let body = wire("llama3.1:8b").plain_body(&request);
        assert!(body.get("frequency_penalty").is_none(), "{body}");
        request.sampling = crate::llm::Sampling::AGAINST_REPETITION;
        let body = wire("llama3.1:8b").stream_body(&request);
        assert_eq!(body["frequency_penalty"], json!(0.5));
        assert_eq!(body["presence_penalty"], json!(0.3));
        let body = wire("o4-mini").plain_body(&request);
        assert!(body.get("frequency_penalty").is_none(), "{body}");
    }

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
