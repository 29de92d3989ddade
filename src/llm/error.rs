//! How a model call fails: [`LlmError`], with the pieces it is made of
//! ([`BrokeOff`], [`RecordingProblem`]).
//!
//! Every message states what happened — the provider, the URL, the status,
//! how many attempts — and keeps the error it came from as its source
//! (`reqwest`'s, `serde_json`'s, an io error). None says what to do about it
//! in terms of swarm's flags, variables or commands: that advice is
//! attached once, where an error reaches the user (`From<LlmError> for
//! SwarmError`). A `reqwest` error names a URL, never a header, so no
//! message here can carry a key.

use std::path::PathBuf;
use std::time::Duration;

/// A call that failed after every retry.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("{provider}: {message}")]
    Config { provider: String, message: String },
    /// A network provider given no key (its row in the provider table
    /// names the variables that hold one).
    #[error("{provider}: no API key")]
    MissingKey { provider: String },
    /// The HTTP client could not be made.
    #[error("{provider}: cannot create the HTTP client: {source}")]
    Client {
        provider: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{provider}: HTTP {status} after {attempts} attempt(s): {body}")]
    Http {
        provider: String,
        status: u16,
        attempts: u32,
        body: String,
    },
    /// The model sent nothing (headers, first token, next chunk) for
    /// `timeout`, the idle limit, on every attempt.
    #[error("{provider}: no data for {timeout:?} after {attempts} attempt(s)")]
    Timeout {
        provider: String,
        timeout: Duration,
        attempts: u32,
    },
    #[error("{provider}: cannot connect to {url} after {attempts} attempt(s): {}", chain(.source))]
    Connect {
        provider: String,
        url: String,
        attempts: u32,
        #[source]
        source: reqwest::Error,
    },
    /// The preflight found the endpoint missing, wrong or closed to us.
    #[error("{provider}: {url}: {what}")]
    Unreachable {
        provider: String,
        url: String,
        what: String,
        /// The request's own error, when it failed rather than answered.
        #[source]
        source: Option<reqwest::Error>,
    },
    /// A reply that had started broke off.
    #[error("{provider}: the reply from {url} broke off after {attempts} attempt(s): {cause}")]
    BrokenOff {
        provider: String,
        url: String,
        attempts: u32,
        #[source]
        cause: BrokeOff,
    },
    #[error("{provider}: unexpected reply: {message}: {body}")]
    Malformed {
        provider: String,
        message: String,
        body: String,
        /// The JSON error, when the reply is not JSON.
        #[source]
        source: Option<serde_json::Error>,
    },
    /// A 2xx reply whose bytes are not valid UTF-8 (or whose JSON encodes a
    /// lone surrogate). Never decoded lossily: a reply with U+FFFD in place
    /// of what the model sent must not reach a file. Callers treat it as an
    /// unusable reply, not as an unreachable model.
    #[error("{provider}: the reply is not valid UTF-8 ({detail}), so none of it was used")]
    NotUtf8 { provider: String, detail: String },
    #[error("replay: {0}")]
    Replay(String),
    /// A recording that cannot be read or written.
    #[error("{provider}: cannot {doing} {}: {source}", path.display())]
    RecordingIo {
        provider: String,
        /// `read` or `write cassette`.
        doing: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A recording whose content cannot be replayed.
    #[error("{provider}: {}: {problem}", path.display())]
    Recording {
        provider: String,
        path: PathBuf,
        #[source]
        problem: RecordingProblem,
    },
    /// A request the model's context window cannot hold, refused before
    /// sending (see [`Windowed`](super::Windowed)).
    #[error(
        "{model}: a request of about {prompt} prompt tokens plus {reply} reply tokens does not fit \
         the context window of {window} tokens, so it was not sent"
    )]
    OverWindow {
        model: String,
        prompt: u64,
        reply: u32,
        window: u64,
    },
}

impl LlmError {
    /// The detail of a [`LlmError::NotUtf8`] from its message (as an
    /// experiment log keeps it), or `None` for any other error's message.
    pub fn not_utf8_detail(message: &str) -> Option<String> {
        let (_, rest) = message.split_once(": the reply is not valid UTF-8 (")?;
        let (detail, _) = rest.rsplit_once("), so none of it was used")?;
        Some(detail.to_string())
    }
}

/// How a reply that had started broke off.
#[derive(Debug, thiserror::Error)]
pub enum BrokeOff {
    /// The connection failed while the reply was being read.
    #[error("{}", chain(.0))]
    Connection(#[source] reqwest::Error),
    /// The stream ended without saying how the reply ended.
    #[error("the stream ended before the reply did ({received} characters received)")]
    EndedEarly { received: usize },
}

/// Why a recording (an experiment log or a cassette) cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum RecordingProblem {
    #[error("not JSON, so neither an experiment log nor a cassette: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error(
        "neither an experiment log (a JSON array of entries) nor a cassette \
         (an object with `interactions`)"
    )]
    Neither,
    #[error("not a cassette: {0}")]
    NotACassette(#[source] serde_json::Error),
    #[error("cassette version {found} is not supported (expected {expected})")]
    Version { found: u32, expected: u32 },
}

/// The error and its sources, `: `-joined (`reqwest` keeps the cause, such
/// as "connection refused", out of its own message).
pub(crate) fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_utf8_details_survive_the_message() {
        let err = LlmError::NotUtf8 {
            provider: "gemini".into(),
            detail: "byte 0xc3 at offset 7 of the body".into(),
        };
        assert_eq!(
            LlmError::not_utf8_detail(&err.to_string()).as_deref(),
            Some("byte 0xc3 at offset 7 of the body")
        );
        assert_eq!(LlmError::not_utf8_detail("openai: HTTP 500"), None);
    }

    #[test]
    fn sources_are_kept_and_named_in_the_message() {
        let json = serde_json::from_str::<serde_json::Value>("{").expect_err("cut short");
        let shown = json.to_string();
        let err = LlmError::Recording {
            provider: "replay".into(),
            path: PathBuf::from("log.json"),
            problem: RecordingProblem::NotJson(json),
        };
        assert_eq!(
            err.to_string(),
            format!(
                "replay: log.json: not JSON, so neither an experiment log nor a cassette: {shown}"
            )
        );
        let problem = std::error::Error::source(&err).expect("the problem is the source");
        let json = problem.source().expect("the JSON error is kept");
        assert!(json.downcast_ref::<serde_json::Error>().is_some());
    }

    #[test]
    fn messages_state_facts_without_advice() {
        let timeout = LlmError::Timeout {
            provider: "openai".into(),
            timeout: Duration::from_millis(300),
            attempts: 2,
        };
        assert_eq!(
            timeout.to_string(),
            "openai: no data for 300ms after 2 attempt(s)"
        );
        let key = LlmError::MissingKey {
            provider: "anthropic".into(),
        };
        assert_eq!(key.to_string(), "anthropic: no API key");
    }
}
