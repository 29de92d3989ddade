//! The only module that touches reqwest: chat models behind one trait.
//!
//! Providers: OpenAI-compatible chat completions, Gemini generateContent,
//! Anthropic Messages, and replay (answers from a recorded experiment log or
//! cassette, no network). Retries with backoff on 429/5xx/timeouts, token
//! usage, prices, and secrets that never print.

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
    pub fn hash(&self) -> String {
        unimplemented!()
    }

    /// The exact prompt as one text: the system prompt and every message,
    /// as logged in `input_prompt`.
    pub fn transcript(&self) -> String {
        unimplemented!()
    }
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
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
    #[error("{provider}: no answer within {timeout:?} after {attempts} attempt(s)")]
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
    #[error("{provider}: unexpected reply: {message}: {body}")]
    Malformed {
        provider: String,
        message: String,
        body: String,
    },
    #[error("replay: {0}")]
    Replay(String),
}

/// A chat model.
#[async_trait::async_trait]
pub trait ChatModel: Send + Sync {
    fn kind(&self) -> ProviderKind;
    /// The model id, as logged.
    fn model(&self) -> &str;
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;
}

/// Everything needed to build a provider.
#[derive(Clone, Debug)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub model: String,
    /// Overrides the provider's default base URL.
    pub base_url: Option<String>,
    pub api_key: Option<Secret>,
    /// Per HTTP attempt.
    pub timeout: Duration,
    /// Total HTTP attempts (1 = no retry).
    pub max_attempts: u32,
    /// For replay: the experiment log or cassette to answer from.
    pub replay_file: Option<PathBuf>,
}

/// Builds the provider.
pub fn build(config: &ProviderConfig) -> Result<Arc<dyn ChatModel>, LlmError> {
    let _ = config;
    unimplemented!()
}

/// The default model of each provider.
pub fn default_model(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi => "gpt-4o-mini",
        ProviderKind::Gemini => "gemini-2.5-flash",
        ProviderKind::Anthropic => "claude-sonnet-4-5",
        ProviderKind::Replay => "replay",
    }
}

/// Whether a reply is empty (helper's).
pub fn is_empty_reply(text: &str) -> bool {
    text.trim().is_empty()
}

/// Whether a reply declines the task (helper's).
pub fn looks_like_refusal(text: &str) -> bool {
    let _ = text;
    false
}

/// USD per million tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
}

impl Price {
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input + usage.output_tokens as f64 * self.output) / 1e6
    }
}

/// Known price of a model (helper's).
pub fn price_for(model: &str) -> Option<Price> {
    let _ = model;
    None
}

/// Wraps a model so every call is recorded in a cassette (helper's).
pub fn record_to(
    model: Arc<dyn ChatModel>,
    path: &std::path::Path,
) -> Result<Arc<dyn ChatModel>, LlmError> {
    let _ = path;
    Ok(model)
}
