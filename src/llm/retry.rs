//! The retrying HTTP transport shared by the network providers.
//!
//! Owns: one reqwest client per provider, the per-attempt timeout, retries
//! with exponential backoff and jitter on 408/429/5xx, connection errors and
//! timeouts, `Retry-After` (seconds or HTTP date, capped), and the final
//! error with a short, key-free excerpt of the reply. It knows nothing of any
//! wire format: it posts JSON and hands back the body of a 2xx reply — only
//! when that body is valid UTF-8 ([`LlmError::NotUtf8`] otherwise; it is
//! never decoded lossily, and not retried here: the caller decides).

use std::time::Duration;

use super::{utf8, LlmError, ProviderConfig, Secret};

/// How long to wait between attempts.
///
/// Attempt `n` (1-based) that failed waits `base_delay * 2^(n-1)`, capped at
/// `max_delay`, times a random factor in `[0.5, 1.0]` (jitter), unless the
/// server sent `Retry-After`, which is honoured up to `retry_after_cap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Delay after the first failed attempt, before jitter.
    pub base_delay: Duration,
    /// Upper bound of the exponential delay.
    pub max_delay: Duration,
    /// Upper bound of a server's `Retry-After`.
    pub retry_after_cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
            retry_after_cap: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// A policy with millisecond delays, for tests.
    pub fn fast() -> Self {
        Self {
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(40),
            retry_after_cap: Duration::from_secs(60),
        }
    }

    /// The backoff after failed attempt `attempt` (1-based), with jitter.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exponent = attempt.saturating_sub(1).min(16);
        let raw = self.base_delay.saturating_mul(1u32 << exponent);
        let capped = raw.min(self.max_delay);
        capped.mul_f64(0.5 + fastrand::f64() * 0.5)
    }

    /// How long to wait for a server that sent `Retry-After: value`.
    pub fn retry_after(&self, value: &str) -> Option<Duration> {
        parse_retry_after(value, chrono::Utc::now()).map(|wait| wait.min(self.retry_after_cap))
    }
}

/// Parses `Retry-After`: delta seconds, or an HTTP date (then the time left
/// until it, zero when it is past).
pub(crate) fn parse_retry_after(
    value: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    if let Ok(seconds) = value.parse::<f64>() {
        if seconds.is_finite() && seconds >= 0.0 {
            return Some(Duration::from_secs_f64(seconds.min(86_400.0)));
        }
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let left = date.with_timezone(&chrono::Utc) - now;
    Some(left.to_std().unwrap_or(Duration::ZERO))
}

/// The per-attempt timeout used when the config gives zero.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(120);

/// What one attempt produced.
enum Outcome {
    Success(String),
    /// A 2xx body that is not UTF-8: what is wrong with it.
    NotUtf8(String),
    Status {
        status: u16,
        body: String,
        retry_after: Option<String>,
    },
    Timeout,
    Connect(String),
}

/// A JSON-over-HTTPS client with retries, for one provider.
#[derive(Debug)]
pub(crate) struct Transport {
    client: reqwest::Client,
    provider: &'static str,
    timeout: Duration,
    max_attempts: u32,
    retry: RetryPolicy,
    /// Only used to scrub the key out of error excerpts.
    key: Option<Secret>,
}

impl Transport {
    /// A transport for `config`, talking to `base_url`. A zero timeout means
    /// [`DEFAULT_ATTEMPT_TIMEOUT`]; zero attempts mean one.
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
            timeout,
            max_attempts: config.max_attempts.max(1),
            retry,
            key,
        })
    }

    /// POSTs `body` to `url` with `headers`, retrying, and returns the body
    /// of the first 2xx reply with the number of attempts it took.
    pub(crate) async fn post_json(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &serde_json::Value,
    ) -> Result<(String, u32), LlmError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = self.attempt(url, headers, body).await;
            let (wait, error) = match outcome {
                Outcome::Success(text) => return Ok((text, attempt)),
                Outcome::NotUtf8(detail) => {
                    return Err(LlmError::NotUtf8 {
                        provider: self.provider.to_string(),
                        detail,
                    })
                }
                Outcome::Status {
                    status,
                    body,
                    retry_after,
                } => {
                    let error = LlmError::Http {
                        provider: self.provider.to_string(),
                        status,
                        attempts: attempt,
                        body: self.excerpt(&body),
                    };
                    if !is_retryable_status(status) {
                        return Err(error);
                    }
                    let wait = retry_after
                        .as_deref()
                        .and_then(|value| self.retry.retry_after(value))
                        .unwrap_or_else(|| self.retry.backoff(attempt));
                    (wait, error)
                }
                Outcome::Timeout => (
                    self.retry.backoff(attempt),
                    LlmError::Timeout {
                        provider: self.provider.to_string(),
                        timeout: self.timeout,
                        attempts: attempt,
                    },
                ),
                Outcome::Connect(message) => (
                    self.retry.backoff(attempt),
                    LlmError::Connect {
                        provider: self.provider.to_string(),
                        url: url.to_string(),
                        attempts: attempt,
                        message: self.scrub(&message),
                    },
                ),
            };
            if attempt >= self.max_attempts {
                return Err(error);
            }
            tracing::debug!(provider = self.provider, attempt, ?wait, %error, "retrying");
            tokio::time::sleep(wait).await;
        }
    }

    async fn attempt(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &serde_json::Value,
    ) -> Outcome {
        let mut request = self.client.post(url).json(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let exchange = async {
            let response = request.send().await?;
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .map(str::to_string);
            let bytes = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, retry_after, bytes))
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Err(_) => Outcome::Timeout,
            Ok(Err(err)) if err.is_timeout() => Outcome::Timeout,
            Ok(Err(err)) => Outcome::Connect(error_chain(&err)),
            Ok(Ok((status, _, bytes))) if (200..300).contains(&status) => {
                match String::from_utf8(bytes.to_vec()) {
                    Ok(text) => Outcome::Success(text),
                    Err(err) => Outcome::NotUtf8(utf8::describe_error(err.utf8_error(), &bytes)),
                }
            }
            // An error body only ever goes into a message: lossy is fine.
            Ok(Ok((status, retry_after, bytes))) => Outcome::Status {
                status,
                body: String::from_utf8_lossy(&bytes).into_owned(),
                retry_after,
            },
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
            Some(escape) => LlmError::NotUtf8 {
                provider: self.provider.to_string(),
                detail: format!("the JSON escape `{escape}` is a lone surrogate"),
            },
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

/// 408, 429 and 5xx are worth another attempt; other statuses are final.
fn is_retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..=599).contains(&status)
}

/// The error and its sources, `: `-joined (reqwest hides the cause).
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Whether `url` points at this machine (then no proxy is used).
pub(crate) fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host_port = rest.split('/').next().unwrap_or_default();
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        host_port.split(':').next().unwrap_or_default()
    };
    host.eq_ignore_ascii_case("localhost")
        || host.starts_with("127.")
        || host == "::1"
        || host == "0.0.0.0"
}

/// Longest excerpt of a body put in an error, in characters.
pub(crate) const EXCERPT_CHARS: usize = 300;

/// Turns a reply body into a one-line explanation of at most
/// [`EXCERPT_CHARS`] characters: the `error.message` of a JSON error, the
/// title and text of an HTML page, or the body itself.
pub(crate) fn explain_body(body: &str) -> String {
    let trimmed = body.trim();
    let text = if trimmed.is_empty() {
        "(empty body)".to_string()
    } else if let Some(message) = json_error_message(trimmed) {
        message
    } else if looks_like_html(trimmed) {
        format!("HTML page instead of JSON: {}", html_text(trimmed))
    } else {
        trimmed.to_string()
    };
    truncate_chars(&collapse_whitespace(&text), EXCERPT_CHARS)
}

/// The message of `{"error": {"message": …}}` (OpenAI, Anthropic, Gemini)
/// or `{"error": "…"}` (Ollama and others), with its type or status.
fn json_error_message(body: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    let error = value.get("error")?;
    if let Some(text) = error.as_str() {
        return Some(text.to_string());
    }
    let message = error.get("message")?.as_str()?;
    let kind = error
        .get("type")
        .or_else(|| error.get("status"))
        .and_then(|kind| kind.as_str());
    Some(match kind {
        Some(kind) => format!("{kind}: {message}"),
        None => message.to_string(),
    })
}

/// Whether a body is an HTML page (proxies, gateways, wrong base URLs).
pub(crate) fn looks_like_html(body: &str) -> bool {
    let head: String = body
        .trim_start()
        .chars()
        .take(100)
        .collect::<String>()
        .to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html") || head.starts_with("<head")
}

/// The title and visible text of an HTML page, tags and scripts removed.
fn html_text(page: &str) -> String {
    let lower = page.to_ascii_lowercase();
    let title = lower.find("<title").and_then(|start| {
        let open_end = start + lower[start..].find('>')? + 1;
        let close = open_end + lower[open_end..].find("</title")?;
        Some(page[open_end..close].trim().to_string())
    });
    let body_start = lower.find("<body").unwrap_or(0);
    let mut text = String::new();
    let mut in_tag = false;
    let mut skip_until: Option<&str> = None;
    let mut index = body_start;
    while index < page.len() {
        let rest = &lower[index..];
        if let Some(end) = skip_until {
            if rest.starts_with(end) {
                skip_until = None;
            }
            index += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        }
        if rest.starts_with("<script") {
            skip_until = Some("</script");
        } else if rest.starts_with("<style") {
            skip_until = Some("</style");
        }
        let ch = page[index..].chars().next().unwrap_or(' ');
        match ch {
            '<' => {
                in_tag = true;
                text.push(' ');
            }
            '>' => in_tag = false,
            _ if !in_tag => text.push(ch),
            _ => {}
        }
        index += ch.len_utf8();
    }
    let text = collapse_whitespace(&text);
    match title {
        Some(title) if !title.is_empty() && !text.starts_with(&title) => {
            format!("{title} — {text}")
        }
        _ => text,
    }
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters of `text`, with `…` when cut.
pub(crate) fn truncate_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_accepts_seconds_and_dates() {
        let now = chrono::DateTime::parse_from_rfc2822("Wed, 21 Oct 2015 07:28:00 GMT")
            .expect("valid date")
            .with_timezone(&chrono::Utc);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn retry_after_is_capped() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.retry_after("3600"), Some(Duration::from_secs(60)));
    }

    #[test]
    fn backoff_grows_and_stays_capped() {
        let policy = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
            retry_after_cap: Duration::from_secs(60),
        };
        for _ in 0..50 {
            let first = policy.backoff(1);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let third = policy.backoff(3);
            assert!(third >= Duration::from_millis(200) && third <= Duration::from_millis(400));
            assert!(policy.backoff(30) <= Duration::from_millis(1000));
        }
    }

    #[test]
    fn html_pages_are_explained() {
        let page = "<!DOCTYPE html><html><head><title>502 Bad Gateway</title>\
                    <style>body{color:red}</style></head><body><h1>Bad Gateway</h1>\
                    <script>var x = 1;</script><p>nginx</p></body></html>";
        let text = explain_body(page);
        assert_eq!(
            text,
            "HTML page instead of JSON: 502 Bad Gateway — Bad Gateway nginx"
        );
    }

    #[test]
    fn json_errors_show_their_message() {
        let body = r#"{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}"#;
        assert_eq!(explain_body(body), "rate_limit_error: Rate limit reached");
        assert_eq!(
            explain_body(r#"{"error":"model not found"}"#),
            "model not found"
        );
    }

    #[test]
    fn excerpts_are_bounded() {
        let long = "x".repeat(1000);
        assert_eq!(explain_body(&long).chars().count(), EXCERPT_CHARS);
    }

    #[test]
    fn loopback_hosts_are_recognised() {
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://[::1]:80"));
        assert!(!is_loopback("https://api.openai.com/v1"));
    }
}
