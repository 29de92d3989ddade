//! The only module that touches reqwest: chat models behind one trait.
//!
//! Providers: OpenAI-compatible chat completions, Gemini generateContent,
//! Anthropic Messages — each streamed, with a plain fallback for servers
//! that refuse streaming — and replay (answers from a recorded experiment
//! log or cassette, no network). Time-outs on silence with a total cap per
//! request, retries with backoff on 429/5xx/stalls, token usage, prices, and
//! secrets that never print.
//!
//! Submodules: one per wire format (`openai`, `gemini`, `anthropic`), the
//! shared retrying transport (`retry`) and its waits (`backoff`), reading a
//! reply as it arrives (`stream`, `sse`), error bodies in one line (`body`),
//! `replay` and `cassette` (recording), `price` (cost per model), `reply`
//! (refusal/empty-reply checks) and `utf8` (why a reply's bytes are not
//! text). Nothing here prints; failures are [`LlmError`] values, progress
//! and retries are [`crate::log::Event`]s for a sink the caller gives.

mod anthropic;
mod backoff;
mod body;
mod cassette;
mod gemini;
mod openai;
mod preflight;
mod price;
mod provider;
mod replay;
mod reply;
mod retry;
mod sse;
mod stream;
mod utf8;
mod window;

pub use anthropic::AnthropicChat;
pub use backoff::RetryPolicy;
pub use cassette::{Cassette, Interaction, RecordedResponse, RecordingModel};
pub use gemini::GeminiChat;
pub use openai::OpenAiChat;
pub use preflight::{preflight, Preflight};
pub use price::{price_for, Price, PriceTable};
pub use provider::{provider_env_vars, Provider, PROVIDERS};
pub use replay::ReplayModel;
pub use reply::{estimate_tokens, is_empty_reply, looks_like_refusal, says_no_change_needed};
pub use retry::{url_host, DEFAULT_ATTEMPT_TIMEOUT, DEFAULT_MAX_TIME};
pub use window::{budget_tokens, context_window_for, prompt_tokens, Windowed};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Which wire format to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    OpenAi,
    Gemini,
    Anthropic,
    Replay,
}

/// An API key: `Debug` and `Display` never show it.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    /// Wraps a key.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    /// The key itself, only for building a request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Who speaks a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
}

/// What is sent to a model.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChatRequest {
    pub system: String,
    pub messages: Vec<ChatMessage>,
    pub max_output_tokens: u32,
    pub temperature: f32,
}

impl ChatRequest {
    /// A stable hash of the request (model-independent), used by replay.
    ///
    /// The sha256 (lowercase hex) of the compact JSON
    /// `{"system":…,"messages":[{"role":…,"content":…},…],"max_output_tokens":…}`
    /// with the fields in that order. The model, the key and the temperature
    /// are not part of it, so a recording made with one model replays for
    /// another.
    pub fn hash(&self) -> String {
        use sha2::{Digest, Sha256};

        #[derive(serde::Serialize)]
        struct Canonical<'a> {
            system: &'a str,
            messages: &'a [ChatMessage],
            max_output_tokens: u32,
        }
        let canonical = Canonical {
            system: &self.system,
            messages: &self.messages,
            max_output_tokens: self.max_output_tokens,
        };
        let bytes =
            serde_json::to_vec(&canonical).expect("strings and integers always serialize to JSON");
        hex::encode(Sha256::digest(&bytes))
    }

    /// The exact prompt as one text: the system prompt and every message,
    /// as logged in `input_prompt`.
    ///
    /// Format: one block per part, blocks separated by one blank line; each
    /// block is a header line (`[system]`, `[user]` or `[assistant]`)
    /// followed by the text verbatim:
    ///
    /// ```text
    /// [system]
    /// You fix Python code.
    ///
    /// [user]
    /// Fix this file.
    /// ```
    ///
    /// The `[system]` block is left out when the system prompt is empty.
    pub fn transcript(&self) -> String {
        let mut blocks = Vec::with_capacity(self.messages.len() + 1);
        if !self.system.is_empty() {
            blocks.push(format!("[system]\n{}", self.system));
        }
        for message in &self.messages {
            let header = match message.role {
                Role::User => "[user]",
                Role::Assistant => "[assistant]",
            };
            blocks.push(format!("{header}\n{}", message.content));
        }
        blocks.join("\n\n")
    }

    /// A request with one user message.
    pub fn single(
        system: impl Into<String>,
        user: impl Into<String>,
        max_output_tokens: u32,
    ) -> Self {
        Self {
            system: system.into(),
            messages: vec![ChatMessage {
                role: Role::User,
                content: user.into(),
            }],
            max_output_tokens,
            temperature: 0.0,
        }
    }
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    Stop,
    /// Cut off by the output token limit.
    Length,
    /// Blocked by a safety filter.
    Filtered,
    Other(String),
}

/// Tokens used by one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// True when the API gave no usage and these are estimates.
    pub estimated: bool,
}

/// A model's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatResponse {
    /// The raw reply text.
    pub text: String,
    pub finish: Finish,
    pub usage: Usage,
    /// HTTP attempts it took (1 without retries).
    pub attempts: u32,
}

/// A call that failed after every retry.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("{provider}: {message}")]
    Config { provider: String, message: String },
    #[error("{provider}: HTTP {status} after {attempts} attempt(s): {body}")]
    Http {
        provider: String,
        status: u16,
        attempts: u32,
        body: String,
    },
    /// The model sent nothing (headers, first token, next chunk) for
    /// `timeout`, the idle limit, on every attempt.
    #[error(
        "{provider}: no data for {timeout:?} after {attempts} attempt(s); raise --llm-timeout \
         if the model is this slow to start or between tokens"
    )]
    Timeout {
        provider: String,
        timeout: Duration,
        attempts: u32,
    },
    #[error("{provider}: cannot connect to {url} after {attempts} attempt(s): {message}")]
    Connect {
        provider: String,
        url: String,
        attempts: u32,
        message: String,
    },
    /// The preflight found the endpoint missing, wrong or closed to us.
    #[error("{provider}: {url}: {what} — {check}")]
    Unreachable {
        provider: String,
        url: String,
        what: String,
        check: String,
    },
    /// A reply that had started broke off (connection lost, or a stream
    /// that ended without saying how the reply ended).
    #[error("{provider}: the reply from {url} broke off after {attempts} attempt(s): {message}")]
    BrokenOff {
        provider: String,
        url: String,
        attempts: u32,
        message: String,
    },
    #[error("{provider}: unexpected reply: {message}: {body}")]
    Malformed {
        provider: String,
        message: String,
        body: String,
    },
    /// A 2xx reply whose bytes are not valid UTF-8 (or whose JSON encodes a
    /// lone surrogate). Never decoded lossily: a reply with U+FFFD in place
    /// of what the model sent must not reach a file. Callers treat it as an
    /// unusable reply, not as an unreachable model.
    #[error("{provider}: the reply is not valid UTF-8 ({detail}), so none of it was used")]
    NotUtf8 { provider: String, detail: String },
    #[error("replay: {0}")]
    Replay(String),
    /// A request the model's context window cannot hold, refused before
    /// sending (see [`Windowed`]).
    #[error(
        "{model}: a request of about {prompt} prompt tokens plus {reply} reply tokens does not fit \
         the context window of {window} tokens, so it was not sent; declare a bigger \
         `context-window` if the model has one, or use a model with a larger window"
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

/// A chat model.
#[async_trait::async_trait]
pub trait ChatModel: Send + Sync {
    fn kind(&self) -> ProviderKind;
    /// The model id, as logged.
    fn model(&self) -> &str;
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;
}

/// Shows the provider and the model, never a key.
impl std::fmt::Debug for dyn ChatModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatModel")
            .field("kind", &self.kind())
            .field("model", &self.model())
            .finish()
    }
}

/// Everything needed to build a provider.
#[derive(Clone, Debug)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub model: String,
    /// Overrides the provider's default base URL.
    pub base_url: Option<String>,
    pub api_key: Option<Secret>,
    /// The longest silence per HTTP request: the wait for the response
    /// headers, the first token and between chunks (zero:
    /// [`DEFAULT_ATTEMPT_TIMEOUT`]).
    pub timeout: Duration,
    /// The longest one HTTP request may take however steadily it streams
    /// (zero: [`DEFAULT_MAX_TIME`]); a reply cut there is truncated
    /// ([`Finish::Length`]).
    pub max_time: Duration,
    /// Total HTTP attempts (1 = no retry; 0 is taken as 1).
    pub max_attempts: u32,
    /// For replay: the experiment log or cassette to answer from.
    pub replay_file: Option<PathBuf>,
}

/// Builds the provider, with the default [`RetryPolicy`].
///
/// Errors (`LlmError::Config`) when a network provider has no key (naming the
/// environment variable to set), or when replay has no readable recording.
/// An OpenAI-compatible provider with an explicit `base_url` may go without a
/// key (local servers such as Ollama): no `Authorization` header is sent.
pub fn build(config: &ProviderConfig) -> Result<Arc<dyn ChatModel>, LlmError> {
    build_with_retry(config, RetryPolicy::default())
}

/// Like [`build`], with an explicit backoff policy (tests use tiny delays).
pub fn build_with_retry(
    config: &ProviderConfig,
    retry: RetryPolicy,
) -> Result<Arc<dyn ChatModel>, LlmError> {
    build_inner(config, retry, None)
}

/// Like [`build`], reporting each call's streaming progress
/// ([`Event::ModelProgress`](crate::log::Event::ModelProgress), at most once
/// a second) and its retries with their reasons
/// ([`Event::ModelRetry`](crate::log::Event::ModelRetry)) to `events`.
pub fn build_reporting(
    config: &ProviderConfig,
    retry: RetryPolicy,
    events: Arc<dyn crate::log::EventSink>,
) -> Result<Arc<dyn ChatModel>, LlmError> {
    build_inner(config, retry, Some(events))
}

fn build_inner(
    config: &ProviderConfig,
    retry: RetryPolicy,
    events: Option<Arc<dyn crate::log::EventSink>>,
) -> Result<Arc<dyn ChatModel>, LlmError> {
    (config.kind.provider().build)(config, retry, events)
}

impl std::fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The key of `config`, or a `Config` error naming the variables to set
/// (and, for a provider that can do without one, the way around it).
fn require_key(config: &ProviderConfig) -> Result<Secret, LlmError> {
    match &config.api_key {
        Some(key) if !key.expose().trim().is_empty() => Ok(key.clone()),
        _ => {
            let provider = config.kind.provider();
            let alternative = if provider.keyless_with_base_url {
                " (or give a base URL for a local server that needs no key)"
            } else {
                ""
            };
            Err(LlmError::Config {
                provider: provider.name.to_string(),
                message: format!("no API key: set {}{alternative}", provider.key_var_list()),
            })
        }
    }
}

/// The model id of `config`, or the provider's default when it is blank.
fn model_or_default(config: &ProviderConfig) -> String {
    let model = config.model.trim();
    if model.is_empty() {
        default_model(config.kind).to_string()
    } else {
        model.to_string()
    }
}

/// The default model of each provider.
pub fn default_model(kind: ProviderKind) -> &'static str {
    kind.provider().default_model
}

/// The base URL of `config` (or its provider's default), without trailing
/// slashes and without the provider's version path (e.g. `/v1beta`) when a
/// user added it to a base that is meant to be the host root.
fn resolve_base_url(config: &ProviderConfig) -> String {
    let provider = config.kind.provider();
    let (default, version_suffix) = (provider.default_base_url, provider.version_suffix);
    let base = config
        .base_url
        .as_deref()
        .map(str::trim)
        .filter(|base| !base.is_empty())
        .unwrap_or(default)
        .trim_end_matches('/');
    match version_suffix.and_then(|suffix| base.strip_suffix(suffix)) {
        Some(root) => root.trim_end_matches('/').to_string(),
        None => base.to_string(),
    }
}

/// A JSON number for a temperature, rounded to 3 decimals (an `f32` would
/// otherwise serialize as `0.20000000298023224`).
fn temperature_json(temperature: f32) -> serde_json::Value {
    let rounded = (f64::from(temperature) * 1000.0).round() / 1000.0;
    serde_json::json!(rounded)
}

/// Wraps `model` so every call is also recorded in the cassette at `path`.
pub fn record_to(
    model: Arc<dyn ChatModel>,
    path: &std::path::Path,
) -> Result<Arc<dyn ChatModel>, LlmError> {
    Ok(Arc::new(RecordingModel::new(model, path)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ChatRequest {
        ChatRequest {
            system: "You fix Python.".into(),
            messages: vec![
                ChatMessage {
                    role: Role::User,
                    content: "Fix a.py".into(),
                },
                ChatMessage {
                    role: Role::Assistant,
                    content: "```diff\n```".into(),
                },
            ],
            max_output_tokens: 100,
            temperature: 0.2,
        }
    }

    #[test]
    fn transcript_shows_every_part() {
        assert_eq!(
            request().transcript(),
            "[system]\nYou fix Python.\n\n[user]\nFix a.py\n\n[assistant]\n```diff\n```"
        );
        let mut no_system = request();
        no_system.system.clear();
        assert!(no_system.transcript().starts_with("[user]\nFix a.py"));
    }

    #[test]
    fn hash_ignores_temperature_but_not_content() {
        let base = request();
        let hash = base.hash();
        assert_eq!(hash.len(), 64);
        let mut warmer = base.clone();
        warmer.temperature = 0.9;
        assert_eq!(warmer.hash(), hash);
        let mut longer = base.clone();
        longer.max_output_tokens = 101;
        assert_ne!(longer.hash(), hash);
        let mut other = base;
        other.messages[0].content.push('!');
        assert_ne!(other.hash(), hash);
    }

    #[test]
    fn base_urls_are_normalised() {
        let mut config = ProviderConfig {
            kind: ProviderKind::Gemini,
            model: String::new(),
            base_url: Some("http://host:1/v1beta/".into()),
            api_key: None,
            timeout: Duration::from_secs(1),
            max_time: Duration::ZERO,
            max_attempts: 1,
            replay_file: None,
        };
        assert_eq!(resolve_base_url(&config), "http://host:1");
        config.base_url = None;
        assert_eq!(
            resolve_base_url(&config),
            "https://generativelanguage.googleapis.com"
        );
        config.kind = ProviderKind::OpenAi;
        config.base_url = Some("http://127.0.0.1:8080/v1/".into());
        assert_eq!(resolve_base_url(&config), "http://127.0.0.1:8080/v1");
    }

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
    fn missing_keys_name_the_variable() {
        let config = ProviderConfig {
            kind: ProviderKind::Anthropic,
            model: String::new(),
            base_url: None,
            api_key: Some(Secret::new("  ")),
            timeout: Duration::from_secs(1),
            max_time: Duration::ZERO,
            max_attempts: 1,
            replay_file: None,
        };
        let err = build(&config).expect_err("blank key");
        assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
    }
}
