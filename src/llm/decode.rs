//! Turning a provider's events into a reply: the [`StreamDecoder`] each wire
//! format implements, what a finished reply holds ([`ReplyParts`]), and why
//! an event cannot be used ([`StreamFault`]).
//!
//! Pure: no HTTP, no clocks, no retries (reading a response as it arrives
//! is `stream`, asking again is `http`). Wire formats sit on top of this
//! file; nothing here knows any of them.

use serde_json::Value;

use super::chat::{ChatRequest, Finish, Usage};
use super::reply::estimated_usage;
use super::sse::SseEvent;
use super::utf8;

/// Whether a stream goes on after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    More,
    /// The reply is complete (OpenAI's `[DONE]`, Anthropic's
    /// `message_stop`): the rest of the connection is not read.
    Done,
}

/// Why an event cannot be used.
#[derive(Debug)]
pub(crate) enum StreamFault {
    /// The API reported an error inside the stream (overloaded, internal
    /// error): worth another attempt, like a 5xx.
    Api(String),
    /// An event whose data is not JSON.
    NotJson {
        data: String,
        source: serde_json::Error,
    },
    /// An event whose JSON escapes a lone surrogate.
    NotUtf8(String),
}

/// Turns one wire format's events into a reply.
pub(crate) trait StreamDecoder: Send {
    /// Reads one event.
    fn event(&mut self, event: &SseEvent) -> Result<Flow, StreamFault>;
    /// The reply text so far.
    fn text(&self) -> &str;
    /// Output tokens the stream reported so far, if it did.
    fn output_tokens(&self) -> Option<u64>;
    /// Whether the stream said how the reply ended (a finish reason or a
    /// stop event), so that its end is not a connection that broke off.
    fn is_complete(&self) -> bool;
    /// The text, why it ended and the usage reported by the stream (input,
    /// output), when it ended normally.
    fn into_parts(self) -> ReplyParts;
}

/// What a reply holds, streamed or read whole.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ReplyParts {
    pub text: String,
    pub finish: Finish,
    /// Input and output tokens, when the API reported both.
    pub usage: Option<Usage>,
}

impl ReplyParts {
    /// The reply's text, finish and usage, estimating the usage the API
    /// did not report.
    pub fn into_reply(self, request: &ChatRequest) -> (String, Finish, Usage) {
        let usage = self
            .usage
            .unwrap_or_else(|| estimated_usage(request, &self.text));
        (self.text, self.finish, usage)
    }
}

/// A stream that was read to its end or cut off by the total cap.
#[derive(Debug)]
pub(crate) struct Streamed<D> {
    pub decoder: D,
    /// The total cap ended it: a truncated reply.
    pub capped: bool,
}

impl<D: StreamDecoder> Streamed<D> {
    /// The parts of the reply; a capped one finishes with
    /// [`Finish::Length`] and reports no usage (the caller estimates it).
    pub fn into_parts(self) -> ReplyParts {
        let mut parts = self.decoder.into_parts();
        if self.capped {
            parts.finish = Finish::Length;
            parts.usage = None;
        }
        parts
    }
}

/// The JSON of an event's data, or why it is not JSON.
pub(crate) fn event_json(event: &SseEvent) -> Result<Value, StreamFault> {
    serde_json::from_str(&event.data).map_err(|source| match utf8::lone_surrogate(&event.data) {
        Some(escape) => {
            StreamFault::NotUtf8(format!("the JSON escape `{escape}` is a lone surrogate"))
        }
        None => StreamFault::NotJson {
            data: event.data.clone(),
            source,
        },
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A decoder that joins every event's data; complete at any point.
    pub(crate) struct Text(pub String);

    impl StreamDecoder for Text {
        fn event(&mut self, event: &SseEvent) -> Result<Flow, StreamFault> {
            self.0.push_str(&event.data);
            Ok(Flow::More)
        }
        fn text(&self) -> &str {
            &self.0
        }
        fn output_tokens(&self) -> Option<u64> {
            None
        }
        fn is_complete(&self) -> bool {
            true
        }
        fn into_parts(self) -> ReplyParts {
            ReplyParts {
                text: self.0,
                finish: Finish::Stop,
                usage: None,
            }
        }
    }

    #[test]
    fn a_capped_stream_is_cut_off() {
        let streamed = Streamed {
            decoder: Text("half a di".into()),
            capped: true,
        };
        let parts = streamed.into_parts();
        assert_eq!(parts.finish, Finish::Length);
        assert_eq!(parts.text, "half a di");
    }

    #[test]
    fn event_json_refuses_lone_surrogates() {
        let event = SseEvent {
            event: None,
            data: r#"{"t":"\udc80"}"#.into(),
        };
        assert!(matches!(event_json(&event), Err(StreamFault::NotUtf8(_))));
        let event = SseEvent {
            event: None,
            data: "{".into(),
        };
        assert!(matches!(
            event_json(&event),
            Err(StreamFault::NotJson { .. })
        ));
    }
}
