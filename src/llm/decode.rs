//! Turning a provider's events into a reply: the [`StreamDecoder`] each wire
//! format implements, what a finished reply holds ([`ReplyParts`]), and why
//! an event cannot be used ([`StreamFault`]).
//!
//! Pure: no HTTP, no clocks, no retries (reading a response as it arrives
//! is `stream`, asking again is `http`). Wire formats sit on top of this
//! file; nothing here knows any of them.

use serde_json::Value;

use super::chat::{ChatRequest, Finish, Usage};
use super::repeat::RepetitionGuard;
use super::reply::{estimate_tokens, estimated_usage};
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
    /// Marks a reply read whole that repeats itself (see `repeat`) as
    /// [`Finish::Repeated`], with the tokens up to where the repetition
    /// became clear; those tokens. A reply the provider filtered is left
    /// as it is.
    pub fn mark_repetition(&mut self) -> Option<u64> {
        if self.finish == Finish::Filtered {
            return None;
        }
        let found = RepetitionGuard::find_in(&self.text)?;
        let tokens = estimate_tokens(self.text.get(..found.seen).unwrap_or_default());
        self.finish = Finish::Repeated { tokens };
        Some(tokens)
    }

    /// The reply's text, finish and usage, estimating the usage the API
    /// did not report.
    pub fn into_reply(self, request: &ChatRequest) -> (String, Finish, Usage) {
        let usage = self
            .usage
            .unwrap_or_else(|| estimated_usage(request, &self.text));
        (self.text, self.finish, usage)
    }
}

/// A stream that was read to its end, cut off by the total cap, or cut by
/// swarm because it repeated itself.
#[derive(Debug)]
pub(crate) struct Streamed<D> {
    pub decoder: D,
    pub end: StreamEnd,
}

/// How a stream that gave a reply ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamEnd {
    /// The stream said how the reply ended.
    Whole,
    /// The total cap ended it: a truncated reply.
    Capped,
    /// Reading stopped because the reply repeated itself, after `tokens`
    /// output tokens.
    Repeated { tokens: u64 },
}

impl<D: StreamDecoder> Streamed<D> {
    /// A stream read to its end.
    pub fn whole(decoder: D) -> Self {
        Self {
            decoder,
            end: StreamEnd::Whole,
        }
    }

    /// A stream the total cap ended.
    pub fn capped(decoder: D) -> Self {
        Self {
            decoder,
            end: StreamEnd::Capped,
        }
    }

    /// The parts of the reply; a capped one finishes with
    /// [`Finish::Length`], a repeating one with [`Finish::Repeated`], and
    /// neither reports usage (the caller estimates it).
    pub fn into_parts(self) -> ReplyParts {
        let mut parts = self.decoder.into_parts();
        match self.end {
            StreamEnd::Whole => {}
            StreamEnd::Capped => {
                parts.finish = Finish::Length;
                parts.usage = None;
            }
            StreamEnd::Repeated { tokens } => {
                parts.finish = Finish::Repeated { tokens };
                parts.usage = None;
            }
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
        let parts = Streamed::capped(Text("half a di".into())).into_parts();
        assert_eq!(parts.finish, Finish::Length);
        assert_eq!(parts.text, "half a di");
        let repeated = Streamed {
            decoder: Text("x x x".into()),
            end: StreamEnd::Repeated { tokens: 3 },
        };
        let parts = repeated.into_parts();
        assert_eq!(parts.finish, Finish::Repeated { tokens: 3 });
        assert_eq!(parts.usage, None);
    }

    #[test]
    fn a_whole_reply_that_loops_is_marked_and_a_filtered_one_is_not() {
        let mut parts = ReplyParts {
            text: format!("Here:\n{}", "+    x = x\n".repeat(300)),
            finish: Finish::Length,
            usage: None,
        };
        let tokens = parts.mark_repetition().expect("a loop");
        assert_eq!(parts.finish, Finish::Repeated { tokens });
        assert!(tokens < 600, "{tokens}");
        parts.finish = Finish::Filtered;
        assert_eq!(parts.mark_repetition(), None);
        let mut fine = ReplyParts {
            text: "--- a/x.py\n+++ b/x.py\n".into(),
            finish: Finish::Stop,
            usage: None,
        };
        assert_eq!(fine.mark_repetition(), None);
        assert_eq!(fine.finish, Finish::Stop);
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
