//! Reading one HTTP reply as it arrives: server-sent events or a whole body,
//! under two clocks.
//!
//! Owns: the idle limit (the longest wait for the headers, the first chunk
//! and every chunk after it) and the total cap per request; feeding events
//! to a wire format's [`StreamDecoder`] and the text they give to a
//! [`RepetitionGuard`]; throttled progress events. A reply that keeps
//! streaming past the cap is handed back as cut off (the caller makes it a
//! `Finish::Length` reply), one that repeats itself is handed back as soon
//! as the guard says so (a `Finish::Repeated` reply: the connection is
//! dropped, so the server stops generating) — never as an error. It sends
//! no request and does not retry (that is `http`) and knows no wire format.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::decode::{Flow, StreamDecoder, StreamEnd, StreamFault, Streamed};
use super::error::BrokeOff;
use super::repeat::RepetitionGuard;
use super::reply::estimate_tokens;
use super::sse::SseParser;
use super::utf8;
use crate::log::{Event, EventSink};

/// The two clocks of one request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clocks {
    /// Longest silence: headers, first chunk, between chunks.
    pub idle: Duration,
    /// When the request must end, however steadily it streams.
    pub deadline: Instant,
}

/// How a wait ended.
pub(crate) enum Waited<T> {
    Done(T),
    /// Nothing came within the idle limit.
    Idle,
    /// The total cap was reached.
    Capped,
}

impl Clocks {
    /// Clocks for a request that starts now.
    pub fn start(idle: Duration, max_time: Duration) -> Self {
        Self {
            idle,
            deadline: Instant::now() + max_time,
        }
    }

    /// Waits for `future` at most the idle limit, and never past the cap.
    pub async fn wait<T>(&self, future: impl Future<Output = T>) -> Waited<T> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Waited::Capped;
        }
        let (limit, capped) = if left < self.idle {
            (left, true)
        } else {
            (self.idle, false)
        };
        match tokio::time::timeout(limit, future).await {
            Ok(value) => Waited::Done(value),
            Err(_) if capped => Waited::Capped,
            Err(_) => Waited::Idle,
        }
    }
}

/// How reading a 2xx reply ended.
pub(crate) enum Read<D> {
    /// A body that is not an event stream, read whole (UTF-8 checked).
    Body(String),
    Stream(Streamed<D>),
    /// A body or stream that was not UTF-8: where.
    NotUtf8(String),
    /// Silence longer than the idle limit.
    Stalled,
    /// The connection broke, or the stream ended without saying how the
    /// reply ended.
    Broken(BrokeOff),
    Fault(StreamFault),
}

/// Reads the rest of `response`, an event stream when its content type
/// says so, else a whole body. A whole body cut by the cap is an empty
/// capped stream: nothing of it is usable.
pub(crate) async fn read_reply<D: StreamDecoder>(
    mut response: reqwest::Response,
    clocks: &Clocks,
    decoder: D,
    progress: &mut Progress,
) -> Read<D> {
    let is_stream = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("text/event-stream"));
    if is_stream {
        return read_events(response, clocks, decoder, progress).await;
    }
    match read_body(&mut response, clocks).await {
        Waited::Done(Ok(bytes)) if looks_like_events(&bytes) => {
            // Events under another content type: read them all the same.
            decode_events(&bytes, decoder)
        }
        Waited::Done(Ok(bytes)) => match String::from_utf8(bytes) {
            Ok(text) => Read::Body(text),
            Err(err) => Read::NotUtf8(utf8::describe_error(err.utf8_error(), err.as_bytes())),
        },
        Waited::Done(Err(err)) => Read::Broken(BrokeOff::Connection(err)),
        Waited::Idle => Read::Stalled,
        Waited::Capped => Read::Stream(Streamed::capped(decoder)),
    }
}

/// Whether a body that was not labelled `text/event-stream` is one.
fn looks_like_events(body: &[u8]) -> bool {
    let start = body
        .iter()
        .position(|byte| !byte.is_ascii_whitespace())
        .unwrap_or(body.len());
    let head = &body[start..];
    head.starts_with(b"data:") || head.starts_with(b"event:")
}

/// Decodes a whole body of events.
fn decode_events<D: StreamDecoder>(body: &[u8], mut decoder: D) -> Read<D> {
    let mut parser = SseParser::default();
    let events = match parser.feed(body) {
        Ok(mut events) => match parser.finish() {
            Ok(last) => {
                events.extend(last);
                events
            }
            Err(detail) => return Read::NotUtf8(detail),
        },
        Err(detail) => return Read::NotUtf8(detail),
    };
    for event in &events {
        match decoder.event(event) {
            Ok(Flow::More) => {}
            Ok(Flow::Done) => break,
            Err(fault) => return Read::Fault(fault),
        }
    }
    if !decoder.is_complete() {
        return Read::Broken(ended_early(&decoder));
    }
    // Read whole, it cannot be cut early; a loop in it is still a loop.
    let end = match RepetitionGuard::find_in(decoder.text()) {
        Some(found) => StreamEnd::Repeated {
            tokens: estimate_tokens(decoder.text().get(..found.seen).unwrap_or_default()),
        },
        None => StreamEnd::Whole,
    };
    Read::Stream(Streamed { decoder, end })
}

/// Reads a whole body chunk by chunk, each chunk under the clocks.
pub(crate) async fn read_body(
    response: &mut reqwest::Response,
    clocks: &Clocks,
) -> Waited<Result<Vec<u8>, reqwest::Error>> {
    let mut body = Vec::new();
    loop {
        match clocks.wait(response.chunk()).await {
            Waited::Done(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            Waited::Done(Ok(None)) => return Waited::Done(Ok(body)),
            Waited::Done(Err(err)) => return Waited::Done(Err(err)),
            Waited::Idle => return Waited::Idle,
            Waited::Capped => return Waited::Capped,
        }
    }
}

/// A stream that ended before its decoder heard how the reply ended.
fn ended_early<D: StreamDecoder>(decoder: &D) -> BrokeOff {
    BrokeOff::EndedEarly {
        received: decoder.text().chars().count(),
    }
}

/// Reads an event stream chunk by chunk, each chunk under the clocks,
/// until it ends, breaks, stalls, reaches the cap or repeats itself.
async fn read_events<D: StreamDecoder>(
    mut response: reqwest::Response,
    clocks: &Clocks,
    mut decoder: D,
    progress: &mut Progress,
) -> Read<D> {
    let mut parser = SseParser::default();
    let mut watch = Watch::default();
    loop {
        let events = match clocks.wait(response.chunk()).await {
            Waited::Done(Ok(Some(chunk))) => match parser.feed(&chunk) {
                Ok(events) => events,
                Err(detail) => return Read::NotUtf8(detail),
            },
            Waited::Done(Ok(None)) => match parser.finish() {
                Ok(last) => {
                    if let Some(event) = last {
                        if let Err(fault) = decoder.event(&event) {
                            return Read::Fault(fault);
                        }
                    }
                    if decoder.is_complete() {
                        return watch.ended(decoder, progress);
                    }
                    return Read::Broken(ended_early(&decoder));
                }
                Err(detail) => return Read::NotUtf8(detail),
            },
            Waited::Done(Err(err)) => return Read::Broken(BrokeOff::Connection(err)),
            Waited::Idle => {
                if decoder.is_complete() {
                    // A server that said how the reply ended but kept the
                    // connection open: the reply is whole.
                    return watch.ended(decoder, progress);
                }
                progress.done();
                return Read::Stalled;
            }
            Waited::Capped => {
                progress.done();
                return Read::Stream(Streamed::capped(decoder));
            }
        };
        for event in &events {
            match decoder.event(event) {
                Ok(Flow::More) => {}
                Ok(Flow::Done) => return watch.ended(decoder, progress),
                Err(fault) => return Read::Fault(fault),
            }
        }
        if watch.repeats(&decoder) {
            return Read::Stream(watch.cut(decoder, progress));
        }
        progress.tick(&decoder);
    }
}

/// The text of a stream so far, fed to a [`RepetitionGuard`] as it grows.
#[derive(Default)]
struct Watch {
    guard: RepetitionGuard,
    /// Bytes of the decoder's text fed so far.
    fed: usize,
}

impl Watch {
    /// Feeds what the decoder's text gained; whether it repeats itself.
    fn repeats<D: StreamDecoder>(&mut self, decoder: &D) -> bool {
        let text = decoder.text();
        let new = text.get(self.fed..).unwrap_or_default();
        self.fed = text.len();
        self.guard.feed(new).is_some()
    }

    /// A stream cut because it repeated itself, its progress line closed
    /// with a word saying so.
    fn cut<D: StreamDecoder>(&mut self, decoder: D, progress: &mut Progress) -> Streamed<D> {
        let tokens = decoder
            .output_tokens()
            .unwrap_or_else(|| estimate_tokens(decoder.text()));
        progress.repeated(tokens);
        Streamed {
            decoder,
            end: StreamEnd::Repeated { tokens },
        }
    }

    /// A stream that said how it ended: whole, unless its last bytes
    /// complete a repetition.
    fn ended<D: StreamDecoder>(mut self, decoder: D, progress: &mut Progress) -> Read<D> {
        if self.repeats(&decoder) || self.guard.settle().is_some() {
            return Read::Stream(self.cut(decoder, progress));
        }
        progress.done();
        Read::Stream(Streamed::whole(decoder))
    }
}

/// How often a streaming call reports progress.
pub(crate) const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// Throttled progress events of one call.
pub(crate) struct Progress {
    events: Option<Arc<dyn EventSink>>,
    call: u64,
    model: String,
    started: Instant,
    last: Instant,
    shown: bool,
    tokens: u64,
}

impl Progress {
    /// Progress of call `call` to `model`, reported to `events` if any.
    pub fn new(events: Option<Arc<dyn EventSink>>, call: u64, model: &str) -> Self {
        let now = Instant::now();
        Self {
            events,
            call,
            model: model.to_string(),
            started: now,
            last: now,
            shown: false,
            tokens: 0,
        }
    }

    /// Reports the tokens so far, at most once per [`PROGRESS_EVERY`].
    pub fn tick<D: StreamDecoder>(&mut self, decoder: &D) {
        self.tokens = decoder
            .output_tokens()
            .unwrap_or_else(|| estimate_tokens(decoder.text()));
        if self.last.elapsed() >= PROGRESS_EVERY {
            self.last = Instant::now();
            self.shown = true;
            self.emit(false);
        }
    }

    /// Reading stopped after `tokens` because the reply repeated itself:
    /// said always, and the progress line closed.
    pub fn repeated(&mut self, tokens: u64) {
        self.tokens = tokens;
        self.done();
        if let Some(events) = &self.events {
            events.emit(Event::ModelRepeated {
                call: self.call,
                model: self.model.clone(),
                tokens,
            });
        }
    }

    /// The stream ended: a last event, only if progress was shown.
    pub fn done(&mut self) {
        if std::mem::take(&mut self.shown) {
            self.emit(true);
        }
    }

    fn emit(&self, done: bool) {
        let Some(events) = &self.events else { return };
        let seconds = self.started.elapsed().as_secs_f64();
        let rate = if seconds > 0.0 {
            self.tokens as f64 / seconds
        } else {
            0.0
        };
        events.emit(Event::ModelProgress {
            call: self.call,
            model: self.model.clone(),
            tokens: self.tokens,
            tokens_per_second: (rate * 10.0).round() / 10.0,
            done,
        });
    }
}

/// A call that ends any way (an error, a cancelled run) closes its
/// progress line.
impl Drop for Progress {
    fn drop(&mut self) {
        self.done();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::decode::tests::Text;
    use crate::log::events::Collect;

    #[test]
    fn progress_is_throttled_and_closed_once() {
        let sink = Arc::new(Collect::default());
        let mut progress = Progress::new(Some(sink.clone()), 3, "m");
        let decoder = Text("x".repeat(400));
        progress.tick(&decoder);
        assert!(sink.events().is_empty(), "nothing in the first second");
        progress.last -= PROGRESS_EVERY;
        progress.started -= Duration::from_secs(4);
        progress.tick(&decoder);
        progress.tick(&decoder);
        progress.done();
        progress.done();
        let events = sink.events();
        assert_eq!(events.len(), 2, "{events:?}");
        match &events[0] {
            Event::ModelProgress {
                call,
                model,
                tokens,
                tokens_per_second,
                done,
            } => {
                assert_eq!(
                    (*call, model.as_str(), *tokens, *done),
                    (3, "m", 100, false)
                );
                assert!(
                    (24.0..=26.0).contains(tokens_per_second),
                    "{tokens_per_second}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(events[1], Event::ModelProgress { done: true, .. }));
    }

    #[test]
    fn events_without_their_content_type_are_still_events() {
        assert!(looks_like_events(b"\n data: {}\n\n"));
        assert!(looks_like_events(b"event: ping\n"));
        assert!(!looks_like_events(br#"{"choices": []}"#));
        match decode_events(b"data: ab\n\ndata: c\n", Text(String::new())) {
            Read::Stream(streamed) => assert_eq!(streamed.into_parts().text, "abc"),
            _ => panic!("a whole stream"),
        }
        let looping = format!("data: {}\n\n", "import x; ".repeat(200));
        match decode_events(looping.as_bytes(), Text(String::new())) {
            Read::Stream(streamed) => assert!(matches!(
                streamed.end,
                StreamEnd::Repeated { tokens } if tokens > 200
            )),
            _ => panic!("a whole stream"),
        }
    }

    #[test]
    fn a_dropped_call_closes_its_progress_line() {
        let sink = Arc::new(Collect::default());
        let mut progress = Progress::new(Some(sink.clone()), 1, "m");
        progress.last -= PROGRESS_EVERY;
        progress.tick(&Text("abcd".into()));
        drop(progress);
        let events = sink.events();
        assert!(
            matches!(
                events.as_slice(),
                [
                    Event::ModelProgress { done: false, .. },
                    Event::ModelProgress { done: true, .. }
                ]
            ),
            "{events:?}"
        );
    }

    #[test]
    fn a_quick_stream_reports_nothing() {
        let sink = Arc::new(Collect::default());
        let mut progress = Progress::new(Some(sink.clone()), 1, "m");
        progress.tick(&Text("abc".into()));
        progress.done();
        assert!(sink.events().is_empty());
    }

    #[tokio::test]
    async fn the_cap_wins_over_the_idle_limit_when_it_comes_first() {
        let clocks = Clocks::start(Duration::from_secs(5), Duration::from_millis(50));
        let waited = clocks.wait(std::future::pending::<()>()).await;
        assert!(matches!(waited, Waited::Capped));
        let clocks = Clocks::start(Duration::from_millis(50), Duration::from_secs(5));
        let waited = clocks.wait(std::future::pending::<()>()).await;
        assert!(matches!(waited, Waited::Idle));
        let waited = clocks.wait(async { 7 }).await;
        assert!(matches!(waited, Waited::Done(7)));
    }
}
