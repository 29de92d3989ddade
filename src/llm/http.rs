//! The one HTTP chat client: [`HttpChat`] sends a [`ChatRequest`] to a
//! provider's API in that provider's [`WireFormat`] and makes a
//! [`ChatResponse`] of the reply.
//!
//! Owns, for every wire format alike: one reqwest client per provider; the
//! request, streamed unless the server refused streaming before (then plain
//! for the provider's life); retries with exponential backoff and jitter on
//! 408/429/5xx, connection errors, replies that broke off and errors sent
//! inside a stream, honouring `Retry-After`; a stalled stream asked again at
//! most once; a request whose sampling penalties the server refuses sent
//! again without them (then for the provider's life); the idle and total
//! limits (read by `stream`); a whole reply that repeats itself marked so
//! as a streamed one is cut (`stream`); accounting (the
//! attempts a call took, the usage reported or estimated); reporting
//! (`ModelProgress` through `stream`, `ModelRetry` here); whether a failed
//! attempt (`attempt`) is worth another and after how long; and the final
//! [`LlmError`], with a short, key-free excerpt of the reply. A 2xx reply
//! is used only when its bytes are valid UTF-8 ([`LlmError::NotUtf8`]
//! otherwise; never decoded lossily, and not retried here: the caller
//! decides). It knows no wire format beyond the trait.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::address::is_loopback;
use super::attempt::{attempt, Failure, Received};
use super::backoff::RetryPolicy;
use super::body::{explain_body, looks_like_html};
use super::chat::{ChatModel, ChatRequest, ChatResponse, ProviderKind, Sampling};
use super::decode::{ReplyParts, StreamFault};
use super::error::{chain, LlmError};
use super::settings::{ProviderConfig, Secret};
use super::stream::{Clocks, Progress};
use super::utf8;
use super::wire::WireFormat;
use crate::log::{Event, EventSink};

/// A call gives up at its second stall: a stalled stream is asked again at
/// most once (a model that went silent twice will not answer a third time).
const MAX_STALLS: u32 = 2;

/// A chat model behind an HTTP API that speaks the wire format `W`.
///
/// A call is retried on 408/429/5xx (honouring `Retry-After`), connection
/// errors, a reply that broke off and an error the API sent inside a
/// stream, up to the configured attempts in all; on a stall (no data within
/// the idle limit) at most once. A streaming request the server refuses is
/// sent again without streaming, at no cost to the attempts. A reply cut off
/// by the total cap is a reply ([`Finish::Length`](super::Finish::Length)),
/// never retried.
pub(crate) struct HttpChat<W> {
    wire: W,
    /// The provider's name, in errors and logs.
    provider: &'static str,
    client: reqwest::Client,
    /// Goes in the headers; also scrubbed out of error excerpts.
    key: Option<Secret>,
    /// The longest silence: headers, first chunk, between chunks.
    idle: Duration,
    /// The longest one request may take, however steadily it streams.
    max_time: Duration,
    max_attempts: u32,
    retry: RetryPolicy,
    /// Set when the server refused a streaming request: every later call
    /// of this provider asks without streaming.
    plain_only: AtomicBool,
    /// Set when the server refused a sampling penalty: every later call of
    /// this provider asks without any.
    bare_only: AtomicBool,
    /// Calls made so far (names each call in events).
    calls: AtomicU64,
    events: Option<Arc<dyn EventSink>>,
}

/// Never shows the key or the client's internals.
impl<W: WireFormat> std::fmt::Debug for HttpChat<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpChat")
            .field("provider", &self.provider)
            .field("model", &self.wire.model())
            .field("idle", &self.idle)
            .field("max_time", &self.max_time)
            .field("max_attempts", &self.max_attempts)
            .field("plain_only", &self.plain_only)
            .finish_non_exhaustive()
    }
}

/// One request in its forms: streaming, and plain for servers that refuse
/// streaming; each bare too (no sampling beyond the temperature) when the
/// request asks for more, for servers that refuse it.
struct Exchange {
    stream_url: String,
    plain_url: String,
    /// The streaming body and the plain one.
    bodies: (Value, Value),
    /// The same without the request's sampling, when it has any.
    bare: Option<(Value, Value)>,
    headers: Vec<(&'static str, String)>,
}

impl Exchange {
    /// The URL and body to send, streaming or not, bare or not.
    fn form(&self, streaming: bool, bare: bool) -> (&str, &Value) {
        let bodies = match &self.bare {
            Some(bare_bodies) if bare => bare_bodies,
            _ => &self.bodies,
        };
        if streaming {
            (&self.stream_url, &bodies.0)
        } else {
            (&self.plain_url, &bodies.1)
        }
    }
}

/// What to do after an attempt that gave no reply (when not giving up).
enum Next {
    /// Ask again at once without streaming, at no cost to the attempts.
    AskPlain { reason: String },
    /// Ask again at once without the sampling penalties, at no cost to the
    /// attempts.
    AskBare { reason: String },
    /// Wait, then ask again — unless the attempts are spent: then `error`.
    Retry {
        wait: Duration,
        error: LlmError,
        reason: String,
    },
}

/// The attempts of one call so far.
#[derive(Default)]
struct Tally {
    /// HTTP requests sent.
    sent: u32,
    /// Requests that failed in a way worth another attempt.
    failed: u32,
    /// Requests that went silent.
    stalls: u32,
}

impl<W: WireFormat> HttpChat<W> {
    /// A client for `wire`, talking to `base_url` as `provider` with `key`,
    /// under the limits of `config` (zero limits mean the defaults, zero
    /// attempts one).
    pub(crate) fn new(
        provider: &'static str,
        wire: W,
        base_url: &str,
        key: Option<Secret>,
        config: &ProviderConfig,
        retry: RetryPolicy,
    ) -> Result<Self, LlmError> {
        let idle = config.idle_limit();
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("swarm/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(idle);
        if is_loopback(base_url) {
            // A proxy from the environment must not swallow a local server.
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|source| LlmError::Client {
            provider: provider.to_string(),
            source,
        })?;
        Ok(Self {
            wire,
            provider,
            client,
            key,
            idle,
            max_time: config.total_limit(),
            max_attempts: config.attempts(),
            retry,
            plain_only: AtomicBool::new(false),
            bare_only: AtomicBool::new(false),
            calls: AtomicU64::new(0),
            events: None,
        })
    }

    /// Reports progress and retries to `events`.
    pub(crate) fn report_to(&mut self, events: Arc<dyn EventSink>) {
        self.events = Some(events);
    }

    /// `request` in its forms, with the headers that carry the key.
    fn exchange(&self, request: &ChatRequest) -> Exchange {
        let bodies = |request: &ChatRequest| {
            (
                self.wire.stream_body(request),
                self.wire.plain_body(request),
            )
        };
        let bare = (!request.sampling.is_plain()).then(|| {
            bodies(&ChatRequest {
                sampling: Sampling::default(),
                ..request.clone()
            })
        });
        Exchange {
            stream_url: self.wire.stream_url(),
            plain_url: self.wire.plain_url(),
            bodies: bodies(request),
            bare: bare.filter(|bare| *bare != bodies(request)),
            headers: W::headers(self.key.as_ref().map(Secret::expose)),
        }
    }

    /// Sends `exchange`, streaming unless this server refused it before,
    /// retrying (see [`HttpChat`]), and returns the first 2xx reply with
    /// the number of HTTP requests it took and the call's number.
    async fn send(&self, exchange: &Exchange) -> Result<(Received<W::Events>, u32, u64), LlmError> {
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let mut tally = Tally::default();
        loop {
            let streaming = !self.plain_only.load(Ordering::Relaxed);
            let bare = self.bare_only.load(Ordering::Relaxed);
            let (url, body) = exchange.form(streaming, bare);
            tally.sent += 1;
            let clocks = Clocks::start(self.idle, self.max_time);
            let request = self.client.post(url).json(body);
            let progress = || Progress::new(self.events.clone(), call, self.wire.model());
            let failure = match attempt(request, &exchange.headers, &clocks, progress).await {
                Ok(received) => return Ok((received, tally.sent, call)),
                Err(failure) => failure,
            };
            let has_sampling = exchange.bare.is_some() && !bare;
            match self.next(failure, url, (streaming, has_sampling), &mut tally)? {
                Next::AskPlain { reason } => {
                    self.plain_only.store(true, Ordering::Relaxed);
                    self.report_retry(call, tally.sent + 1, reason, Duration::ZERO);
                }
                Next::AskBare { reason } => {
                    self.bare_only.store(true, Ordering::Relaxed);
                    self.report_retry(call, tally.sent + 1, reason, Duration::ZERO);
                }
                Next::Retry {
                    wait,
                    error,
                    reason,
                } => {
                    tally.failed += 1;
                    if tally.failed >= self.max_attempts {
                        return Err(error);
                    }
                    tracing::debug!(
                        provider = self.provider,
                        attempt = tally.sent,
                        ?wait,
                        %error,
                        "retrying"
                    );
                    self.report_retry(call, tally.sent + 1, reason, wait);
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// What to do after `failure` of a request to `url` (streaming or not,
    /// with sampling penalties or not): `Err` when it is final, whatever
    /// attempts are left.
    fn next(
        &self,
        failure: Failure,
        url: &str,
        (streaming, has_sampling): (bool, bool),
        tally: &mut Tally,
    ) -> Result<Next, LlmError> {
        let wait = self.retry.backoff(tally.failed + 1);
        let (error, reason) = match failure {
            Failure::NotUtf8(detail) | Failure::Fault(StreamFault::NotUtf8(detail)) => {
                return Err(self.not_utf8(detail))
            }
            Failure::Fault(StreamFault::NotJson { data, source }) => {
                let message = format!("a stream event is not valid JSON ({source})");
                return Err(self.unexpected(message, &data, Some(source)));
            }
            Failure::Status { status, body, .. }
                if streaming && refuses_streaming(status, &body) =>
            {
                let reason = format!(
                    "the server refused a streaming request (HTTP {status}: {}); \
                     asking without streaming from now on",
                    self.excerpt(&body)
                );
                return Ok(Next::AskPlain { reason });
            }
            Failure::Status { status, body, .. }
                if has_sampling && refuses_sampling(status, &body) =>
            {
                let reason = format!(
                    "the server refused a sampling penalty (HTTP {status}: {}); \
                     asking without penalties from now on",
                    self.excerpt(&body)
                );
                return Ok(Next::AskBare { reason });
            }
            Failure::Status {
                status,
                body,
                retry_after,
            } => return self.after_status(status, &body, retry_after.as_deref(), tally),
            Failure::Stalled => return self.after_stall(tally),
            Failure::Connect(source) => {
                let reason = format!("cannot connect: {}", self.scrub(&chain(&source)));
                let error = LlmError::Connect {
                    provider: self.provider.to_string(),
                    url: url.to_string(),
                    attempts: tally.sent,
                    source,
                };
                (error, reason)
            }
            Failure::Broken(cause) => {
                let reason = format!("the reply broke off: {}", self.scrub(&cause.to_string()));
                let error = LlmError::BrokenOff {
                    provider: self.provider.to_string(),
                    url: url.to_string(),
                    attempts: tally.sent,
                    cause,
                };
                (error, reason)
            }
            Failure::Fault(StreamFault::Api(data)) => {
                let reason = format!("the API sent an error: {}", self.excerpt(&data));
                let error = self.unexpected("the API sent an error inside the stream", &data, None);
                (error, reason)
            }
        };
        Ok(Next::Retry {
            wait,
            error,
            reason,
        })
    }

    /// After an error status: retried (after `Retry-After` when the server
    /// sent one) when it is 408, 429 or 5xx, final otherwise.
    fn after_status(
        &self,
        status: u16,
        body: &str,
        retry_after: Option<&str>,
        tally: &Tally,
    ) -> Result<Next, LlmError> {
        let excerpt = self.excerpt(body);
        let reason = format!("HTTP {status}: {excerpt}");
        let error = LlmError::Http {
            provider: self.provider.to_string(),
            status,
            attempts: tally.sent,
            body: excerpt,
        };
        if !is_retryable_status(status) {
            return Err(error);
        }
        let wait = retry_after
            .and_then(|value| self.retry.retry_after(value))
            .unwrap_or_else(|| self.retry.backoff(tally.failed + 1));
        Ok(Next::Retry {
            wait,
            error,
            reason,
        })
    }

    /// After a stall: asked again once, final the second time.
    fn after_stall(&self, tally: &mut Tally) -> Result<Next, LlmError> {
        tally.stalls += 1;
        let error = LlmError::Timeout {
            provider: self.provider.to_string(),
            timeout: self.idle,
            attempts: tally.sent,
        };
        if tally.stalls >= MAX_STALLS {
            return Err(error);
        }
        Ok(Next::Retry {
            wait: self.retry.backoff(tally.failed + 1),
            error,
            reason: format!("no data for {} (--llm-timeout)", seconds(self.idle)),
        })
    }

    fn report_repeated(&self, call: u64, tokens: u64) {
        if let Some(events) = &self.events {
            events.emit(Event::ModelRepeated {
                call,
                model: self.wire.model().to_string(),
                tokens,
            });
        }
    }

    fn report_retry(&self, call: u64, attempt: u32, reason: String, wait: Duration) {
        if let Some(events) = &self.events {
            events.emit(Event::ModelRetry {
                call,
                model: self.wire.model().to_string(),
                attempt,
                of: self.max_attempts,
                reason,
                wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            });
        }
    }

    /// The parts of a whole 2xx body, read by the wire format.
    fn read_whole(&self, body: &str) -> Result<ReplyParts, LlmError> {
        let value = self.parse_json(body)?;
        self.wire
            .read_reply(&value)
            .map_err(|why| self.unexpected(why, body, None))
    }

    /// Parses a 2xx reply as JSON, explaining HTML pages and other text.
    fn parse_json(&self, body: &str) -> Result<Value, LlmError> {
        if looks_like_html(body) {
            let message = format!(
                "got an HTML page, not JSON from {} (is the base URL right?)",
                self.wire.plain_url()
            );
            return Err(self.unexpected(message, body, None));
        }
        serde_json::from_str(body).map_err(|err| match utf8::lone_surrogate(body) {
            Some(escape) => {
                self.not_utf8(format!("the JSON escape `{escape}` is a lone surrogate"))
            }
            None => self.unexpected(format!("reply is not valid JSON ({err})"), body, Some(err)),
        })
    }

    /// A `Malformed` error for a 2xx reply that cannot be used.
    fn unexpected(
        &self,
        message: impl Into<String>,
        body: &str,
        source: Option<serde_json::Error>,
    ) -> LlmError {
        LlmError::Malformed {
            provider: self.provider.to_string(),
            message: message.into(),
            body: self.excerpt(body),
            source,
        }
    }

    fn not_utf8(&self, detail: String) -> LlmError {
        LlmError::NotUtf8 {
            provider: self.provider.to_string(),
            detail,
        }
    }

    /// A short, key-free excerpt of a reply body for an error message.
    fn excerpt(&self, body: &str) -> String {
        self.scrub(&explain_body(body))
    }

    /// `text` with the key replaced by `***`.
    fn scrub(&self, text: &str) -> String {
        match &self.key {
            Some(key) if !key.expose().is_empty() => text.replace(key.expose(), "***"),
            _ => text.to_string(),
        }
    }
}

#[async_trait::async_trait]
impl<W: WireFormat> ChatModel for HttpChat<W> {
    fn kind(&self) -> ProviderKind {
        W::KIND
    }

    fn model(&self) -> &str {
        self.wire.model()
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let (received, attempts, call) = self.send(&self.exchange(request)).await?;
        let parts = match received {
            Received::Body(body) => {
                let mut parts = self.read_whole(&body)?;
                // Read whole, it could not be cut early; a loop in it is
                // still a loop, and not to be shown to the model again.
                if let Some(tokens) = parts.mark_repetition() {
                    self.report_repeated(call, tokens);
                }
                parts
            }
            Received::Stream(streamed) => streamed.into_parts(),
        };
        let (text, finish, usage) = parts.into_reply(request);
        Ok(ChatResponse {
            text,
            finish,
            usage,
            attempts,
        })
    }
}

/// Whether an error reply refuses streaming itself: 400, 404, 405, 415,
/// 422 or 501 whose body names `stream` (`stream`, `stream_options`,
/// `streaming`, `streamGenerateContent` — not `upstream`).
fn refuses_streaming(status: u16, body: &str) -> bool {
    if !matches!(status, 400 | 404 | 405 | 415 | 422 | 501) {
        return false;
    }
    let lower = body.to_ascii_lowercase();
    lower.match_indices("stream").any(|(at, _)| {
        !lower[..at]
            .chars()
            .next_back()
            .is_some_and(|ch| ch.is_ascii_alphabetic())
    })
}

/// Whether an error reply refuses a sampling penalty: 400 or 422 whose
/// body names a penalty (`frequency_penalty`, `presencePenalty`, "Penalty
/// is not enabled").
fn refuses_sampling(status: u16, body: &str) -> bool {
    matches!(status, 400 | 422) && body.to_ascii_lowercase().contains("penalty")
}

/// `duration` as people read it: `120 s`, `0.3 s`.
fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0} s")
    } else {
        format!("{secs:.1} s")
    }
}

/// 408, 429 and 5xx are worth another attempt; other statuses are final.
fn is_retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..=599).contains(&status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_of_streaming_are_told_from_other_errors() {
        let openai =
            r#"{"error":{"message":"Unrecognized request argument supplied: stream_options"}}"#;
        assert!(refuses_streaming(400, openai));
        assert!(refuses_streaming(400, "streaming is not supported"));
        assert!(refuses_streaming(
            404,
            "models/x is not supported for streamGenerateContent"
        ));
        assert!(refuses_streaming(
            422,
            "`stream`: extra fields not permitted"
        ));
        assert!(!refuses_streaming(400, "upstream rejected the prompt"));
        assert!(!refuses_streaming(400, "max_tokens is too large"));
        assert!(!refuses_streaming(500, "stream failed"), "a 5xx is retried");
        assert!(!refuses_streaming(401, "invalid key for stream"));
    }

    #[test]
    fn refusals_of_penalties_are_told_from_other_errors() {
        assert!(refuses_sampling(
            400,
            r#"{"error":{"message":"Unknown name \"frequency_penalty\": Cannot find field."}}"#
        ));
        assert!(refuses_sampling(400, "Penalty is not enabled for models/x"));
        assert!(!refuses_sampling(400, "max_tokens is too large"));
        assert!(!refuses_sampling(500, "penalty"), "a 5xx is retried");
    }

    #[test]
    fn waits_read_as_seconds() {
        assert_eq!(seconds(Duration::from_secs(120)), "120 s");
        assert_eq!(seconds(Duration::from_millis(300)), "0.3 s");
    }

    #[test]
    fn only_busy_or_failing_servers_are_asked_again() {
        for status in [408, 429, 500, 503, 599] {
            assert!(is_retryable_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 422] {
            assert!(!is_retryable_status(status), "{status}");
        }
    }
}
