//! The retrying HTTP transport shared by the network providers.
//!
//! Owns: one reqwest client per provider, retries with exponential backoff
//! and jitter on 408/429/5xx, connection errors and replies that broke off,
//! `Retry-After` (seconds or HTTP date, capped), a stalled stream asked again
//! at most once, the switch to plain requests for a server that refuses
//! streaming (remembered for the provider's life), retry events, and the
//! final error with a short, key-free excerpt of the reply. It knows nothing
//! of any wire format: it posts JSON and hands back a whole 2xx body or a
//! decoded stream (`stream` reads them) — only when the bytes are valid
//! UTF-8 ([`LlmError::NotUtf8`] otherwise; never decoded lossily, and not
//! retried here: the caller decides).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::backoff::RetryPolicy;
use super::body::{explain_body, looks_like_html};
use super::stream::{
    read_body, read_reply, Clocks, Progress, Read, StreamDecoder, StreamFault, Streamed, Waited,
};
use super::{utf8, LlmError, ProviderConfig, Secret};
use crate::log::{Event, EventSink};

/// The idle limit used when the config gives zero.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(120);

/// The total cap per request used when the config gives zero.
pub const DEFAULT_MAX_TIME: Duration = Duration::from_secs(900);

/// A call gives up at its second stall: a stalled stream is asked again at
/// most once (a model that went silent twice will not answer a third time).
const MAX_STALLS: u32 = 2;

/// One request in its two forms: streaming, and plain for servers that
/// refuse streaming.
pub(crate) struct Exchange<'a> {
    pub stream_url: String,
    pub stream_body: serde_json::Value,
    pub plain_url: String,
    pub plain_body: serde_json::Value,
    pub headers: &'a [(&'a str, String)],
}

/// A 2xx reply.
#[derive(Debug)]
pub(crate) enum Received<D> {
    /// A whole body: the plain request's, or a server that answered the
    /// streaming request with JSON. The caller parses it as before.
    Body(String),
    /// An event stream read to its end, or cut off by the total cap.
    Stream(Streamed<D>),
}

/// What one attempt produced.
enum Outcome<D> {
    Success(Received<D>),
    /// A 2xx body that is not UTF-8: what is wrong with it.
    NotUtf8(String),
    Status {
        status: u16,
        body: String,
        retry_after: Option<String>,
    },
    /// Silence past the idle limit.
    Stalled,
    Connect(String),
    /// The reply broke off after it had started.
    Broken(String),
    Fault(StreamFault),
}

/// A JSON-over-HTTPS client with retries, for one provider.
pub(crate) struct Transport {
    client: reqwest::Client,
    provider: &'static str,
    /// The model, as named in progress events.
    model: String,
    /// The longest silence: headers, first chunk, between chunks.
    timeout: Duration,
    /// The longest one request may take, however steadily it streams.
    max_time: Duration,
    max_attempts: u32,
    retry: RetryPolicy,
    /// Only used to scrub the key out of error excerpts.
    key: Option<Secret>,
    /// Set when the server refused a streaming request: every later call
    /// of this provider asks without streaming.
    plain_only: AtomicBool,
    /// Calls made so far (names each call in events).
    calls: AtomicU64,
    events: Option<Arc<dyn EventSink>>,
}

/// Never shows the key or the client's internals.
impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("provider", &self.provider)
            .field("timeout", &self.timeout)
            .field("max_time", &self.max_time)
            .field("max_attempts", &self.max_attempts)
            .field("plain_only", &self.plain_only)
            .finish_non_exhaustive()
    }
}

impl Transport {
    /// A transport for `config`, talking to `base_url`. A zero timeout means
    /// [`DEFAULT_ATTEMPT_TIMEOUT`], a zero cap [`DEFAULT_MAX_TIME`]; zero
    /// attempts mean one.
    pub(crate) fn new(
        provider: &'static str,
        config: &ProviderConfig,
        base_url: &str,
        key: Option<Secret>,
        retry: RetryPolicy,
    ) -> Result<Self, LlmError> {
        let timeout = if config.timeout.is_zero() {
            DEFAULT_ATTEMPT_TIMEOUT
        } else {
            config.timeout
        };
        let max_time = if config.max_time.is_zero() {
            DEFAULT_MAX_TIME
        } else {
            config.max_time
        };
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("swarm/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(timeout);
        if is_loopback(base_url) {
            // A proxy from the environment must not swallow a local server.
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|err| LlmError::Config {
            provider: provider.to_string(),
            message: format!("cannot create the HTTP client: {err}"),
        })?;
        Ok(Self {
            client,
            provider,
            model: super::model_or_default(config),
            timeout,
            max_time,
            max_attempts: config.max_attempts.max(1),
            retry,
            key,
            plain_only: AtomicBool::new(false),
            calls: AtomicU64::new(0),
            events: None,
        })
    }

    /// Reports progress and retries to `events`.
    pub(crate) fn report_to(&mut self, events: Arc<dyn EventSink>) {
        self.events = Some(events);
    }

    /// Sends `exchange`, streaming unless this server refused it before,
    /// retrying, and returns the first 2xx reply with the number of HTTP
    /// requests it took.
    ///
    /// Retried: 408/429/5xx (honouring `Retry-After`), connection errors, a
    /// reply that broke off and an error the API sent inside a stream, up
    /// to `max_attempts` in all; a stall (no data within the idle limit) at
    /// most once. A streaming request the server refuses is sent again
    /// without streaming, at no cost to the attempts. A reply cut off by
    /// the total cap is a reply (see [`Streamed::capped`]), never retried.
    pub(crate) async fn send<D: StreamDecoder>(
        &self,
        exchange: &Exchange<'_>,
        decoder: impl Fn() -> D,
    ) -> Result<(Received<D>, u32), LlmError> {
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let mut sent = 0;
        let mut failed = 0;
        let mut stalls = 0;
        loop {
            let streaming = !self.plain_only.load(Ordering::Relaxed);
            let (url, body) = if streaming {
                (&exchange.stream_url, &exchange.stream_body)
            } else {
                (&exchange.plain_url, &exchange.plain_body)
            };
            sent += 1;
            let outcome = self
                .attempt(url, exchange.headers, body, decoder(), call)
                .await;
            let (wait, error, reason) = match outcome {
                Outcome::Success(received) => return Ok((received, sent)),
                Outcome::NotUtf8(detail) => return Err(self.not_utf8(detail)),
                Outcome::Fault(StreamFault::NotUtf8(detail)) => return Err(self.not_utf8(detail)),
                Outcome::Fault(StreamFault::Malformed { message, data }) => {
                    return Err(self.malformed(message, &data))
                }
                Outcome::Status { status, body, .. }
                    if streaming && refuses_streaming(status, &body) =>
                {
                    self.plain_only.store(true, Ordering::Relaxed);
                    self.report_retry(
                        call,
                        sent + 1,
                        format!(
                            "the server refused a streaming request (HTTP {status}: {}); \
                             asking without streaming from now on",
                            self.excerpt(&body)
                        ),
                        Duration::ZERO,
                    );
                    continue;
                }
                Outcome::Status {
                    status,
                    body,
                    retry_after,
                } => {
                    let excerpt = self.excerpt(&body);
                    let reason = format!("HTTP {status}: {excerpt}");
                    let error = LlmError::Http {
                        provider: self.provider.to_string(),
                        status,
                        attempts: sent,
                        body: excerpt,
                    };
                    if !is_retryable_status(status) {
                        return Err(error);
                    }
                    let wait = retry_after
                        .as_deref()
                        .and_then(|value| self.retry.retry_after(value))
                        .unwrap_or_else(|| self.retry.backoff(failed + 1));
                    (wait, error, reason)
                }
                Outcome::Stalled => {
                    stalls += 1;
                    let error = LlmError::Timeout {
                        provider: self.provider.to_string(),
                        timeout: self.timeout,
                        attempts: sent,
                    };
                    if stalls >= MAX_STALLS {
                        return Err(error);
                    }
                    let reason = format!("no data for {} (--llm-timeout)", seconds(self.timeout));
                    (self.retry.backoff(failed + 1), error, reason)
                }
                Outcome::Connect(message) => {
                    let message = self.scrub(&message);
                    let reason = format!("cannot connect: {message}");
                    let error = LlmError::Connect {
                        provider: self.provider.to_string(),
                        url: url.to_string(),
                        attempts: sent,
                        message,
                    };
                    (self.retry.backoff(failed + 1), error, reason)
                }
                Outcome::Broken(message) => {
                    let message = self.scrub(&message);
                    let reason = format!("the reply broke off: {message}");
                    let error = LlmError::BrokenOff {
                        provider: self.provider.to_string(),
                        url: url.to_string(),
                        attempts: sent,
                        message,
                    };
                    (self.retry.backoff(failed + 1), error, reason)
                }
                Outcome::Fault(StreamFault::Api(data)) => {
                    let reason = format!("the API sent an error: {}", self.excerpt(&data));
                    let error = self.malformed("the API sent an error inside the stream", &data);
                    (self.retry.backoff(failed + 1), error, reason)
                }
            };
            failed += 1;
            if failed >= self.max_attempts {
                return Err(error);
            }
            tracing::debug!(provider = self.provider, attempt = sent, ?wait, %error, "retrying");
            self.report_retry(call, sent + 1, reason, wait);
            tokio::time::sleep(wait).await;
        }
    }

    async fn attempt<D: StreamDecoder>(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &serde_json::Value,
        decoder: D,
        call: u64,
    ) -> Outcome<D> {
        let clocks = Clocks::start(self.timeout, self.max_time);
        let mut request = self.client.post(url).json(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let mut response = match clocks.wait(request.send()).await {
            Waited::Done(Ok(response)) => response,
            Waited::Done(Err(err)) if err.is_timeout() => return Outcome::Stalled,
            Waited::Done(Err(err)) => return Outcome::Connect(error_chain(&err)),
            Waited::Idle => return Outcome::Stalled,
            Waited::Capped => {
                return Outcome::Success(Received::Stream(Streamed {
                    decoder,
                    capped: true,
                }))
            }
        };
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .map(str::to_string);
            return match read_body(&mut response, &clocks).await {
                // An error body only ever goes into a message: lossy is fine.
                Waited::Done(Ok(bytes)) => Outcome::Status {
                    status,
                    body: String::from_utf8_lossy(&bytes).into_owned(),
                    retry_after,
                },
                Waited::Done(Err(message)) => Outcome::Connect(message),
                Waited::Idle | Waited::Capped => Outcome::Stalled,
            };
        }
        let mut progress = Progress::new(self.events.clone(), call, &self.model);
        match read_reply(response, &clocks, decoder, &mut progress).await {
            Read::Body(text) => Outcome::Success(Received::Body(text)),
            Read::Stream(streamed) => Outcome::Success(Received::Stream(streamed)),
            Read::NotUtf8(detail) => Outcome::NotUtf8(detail),
            Read::Stalled => Outcome::Stalled,
            Read::Broken(message) => Outcome::Broken(message),
            Read::Fault(fault) => Outcome::Fault(fault),
        }
    }

    fn report_retry(&self, call: u64, attempt: u32, reason: String, wait: Duration) {
        if let Some(events) = &self.events {
            events.emit(Event::ModelRetry {
                call,
                model: self.model.clone(),
                attempt,
                of: self.max_attempts,
                reason,
                wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            });
        }
    }

    fn not_utf8(&self, detail: String) -> LlmError {
        LlmError::NotUtf8 {
            provider: self.provider.to_string(),
            detail,
        }
    }

    /// A short, key-free excerpt of a reply body for an error message.
    pub(crate) fn excerpt(&self, body: &str) -> String {
        self.scrub(&explain_body(body))
    }

    /// A `Malformed` error for a 2xx reply that cannot be used.
    pub(crate) fn malformed(&self, message: impl Into<String>, body: &str) -> LlmError {
        LlmError::Malformed {
            provider: self.provider.to_string(),
            message: message.into(),
            body: self.excerpt(body),
        }
    }

    /// Parses a 2xx reply as JSON, explaining HTML pages and other text.
    /// `endpoint` names what was expected, e.g. `…/v1/chat/completions`.
    pub(crate) fn parse_json(
        &self,
        body: &str,
        endpoint: &str,
    ) -> Result<serde_json::Value, LlmError> {
        if looks_like_html(body) {
            return Err(self.malformed(
                format!("got an HTML page, not JSON from {endpoint} (is the base URL right?)"),
                body,
            ));
        }
        serde_json::from_str(body).map_err(|err| match utf8::lone_surrogate(body) {
            Some(escape) => {
                self.not_utf8(format!("the JSON escape `{escape}` is a lone surrogate"))
            }
            None => self.malformed(format!("reply is not valid JSON ({err})"), body),
        })
    }

    /// `text` with the key replaced by `***`.
    fn scrub(&self, text: &str) -> String {
        match &self.key {
            Some(key) if !key.expose().is_empty() => text.replace(key.expose(), "***"),
            _ => text.to_string(),
        }
    }
}

/// Whether an error reply refuses streaming itself: 400, 404, 405, 415,
/// 422 or 501 whose body names `stream` (`stream`, `stream_options`,
/// `streaming`, `streamGenerateContent` — not `upstream`).
pub(crate) fn refuses_streaming(status: u16, body: &str) -> bool {
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

/// The error and its sources, `: `-joined (reqwest hides the cause).
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The host of `url`, lowercase, without scheme, credentials, port, path
/// or the brackets of an IPv6 address.
pub fn url_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host_port.split(':').next().unwrap_or_default(),
    }
    .to_ascii_lowercase()
}

/// Whether `url` points at this machine (then no proxy is used).
pub(crate) fn is_loopback(url: &str) -> bool {
    let host = url_host(url);
    host == "localhost" || host.starts_with("127.") || host == "::1" || host == "0.0.0.0"
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
    fn loopback_hosts_are_recognised() {
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://[::1]:80"));
        assert!(!is_loopback("https://api.openai.com/v1"));
    }
}
