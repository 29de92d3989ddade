//! The only module that touches reqwest: chat models behind one trait.
//!
//! Providers: OpenAI-compatible chat completions, Gemini generateContent,
//! Anthropic Messages — each streamed, with a plain fallback for servers
//! that refuse streaming — and replay (answers from a recorded experiment
//! log or cassette, no network). Time-outs on silence with a total cap per
//! request, a reply that loops cut while it streams
//! ([`Finish::Repeated`]), retries with backoff on 429/5xx/stalls, token
//! usage, prices, and secrets that never print. Nothing here prints; failures are [`LlmError`]
//! values that state facts (the advice that names swarm's flags is added
//! where they reach the user), progress and retries are
//! [`crate::log::Event`]s for a sink the caller gives.
//!
//! The files, from the bottom up (each uses only files listed before it):
//!
//! - `utf8`, `sse`, `body`, `backoff`, `address`, `repeat`: pure helpers —
//!   why bytes are not text, server-sent events, an error body in one line,
//!   how long to wait before asking again, a URL's host, whether a reply has
//!   fallen into a loop.
//! - `error` ([`LlmError`]), `chat` (requests, replies, the [`ChatModel`]
//!   trait), `settings` ([`ProviderConfig`], [`Secret`]); `reply` (refusal
//!   and empty-reply checks, token estimates), `price`, `window`.
//! - `decode`: the `StreamDecoder` a wire format implements, and what a
//!   finished reply holds.
//! - `wire`: the `WireFormat` trait — endpoint, headers, request body,
//!   reply and stream parsing; `openai`, `gemini` and `anthropic`
//!   implement it and hold nothing else.
//! - `stream`: reading one HTTP response as it arrives, under the idle and
//!   total limits, with progress events; `attempt`: one request sent and
//!   read, a reply or how it failed.
//! - `http`: the one HTTP chat client, `HttpChat` — the request, retries,
//!   accounting and retry events, for every wire format.
//! - `cassette` and `replay`: recording calls, and answering from a
//!   recording without a network.
//! - `provider`: the provider table, one row per provider, which builds
//!   the clients; `preflight` reads it too.
//! - `forge`: the pull-request client (GitHub's REST API), on the same
//!   HTTP stack and key handling; not a model.
//! - `withhold`: a model wrapper that is never shown the run's secrets
//!   (placeholders instead, see `crate::secrets`).

mod address;
mod anthropic;
mod attempt;
mod backoff;
mod body;
mod cassette;
mod chat;
mod decode;
mod error;
pub mod forge;
mod gemini;
mod http;
mod openai;
mod preflight;
mod price;
mod provider;
mod repeat;
mod replay;
mod reply;
mod settings;
mod sse;
mod stream;
mod utf8;
mod window;
mod wire;
pub mod withhold;

pub use address::url_host;
pub use backoff::RetryPolicy;
pub use cassette::{Cassette, Interaction, RecordedResponse, RecordingModel};
pub use chat::{
    ChatMessage, ChatModel, ChatRequest, ChatResponse, Finish, ProviderKind, Role, Sampling, Usage,
};
pub use error::{BrokeOff, LlmError, RecordingProblem};
pub use preflight::{preflight, Preflight};
pub use price::{price_for, Price, PriceTable};
pub use provider::{provider_env_vars, Provider, PROVIDERS};
pub use replay::ReplayModel;
pub use reply::{estimate_tokens, is_empty_reply, looks_like_refusal, says_no_change_needed};
pub use settings::{ProviderConfig, Secret, DEFAULT_ATTEMPT_TIMEOUT, DEFAULT_MAX_TIME};
pub use window::{budget_tokens, context_window_for, prompt_tokens, Windowed};
pub use withhold::Withholding;

use std::sync::Arc;

/// Builds the provider, with the default [`RetryPolicy`].
///
/// Errors when a network provider has no key ([`LlmError::MissingKey`]),
/// or when replay has no readable recording. An OpenAI-compatible provider
/// with an explicit `base_url` may go without a key (local servers such as
/// Ollama): no `Authorization` header is sent.
pub fn build(config: &ProviderConfig) -> Result<Arc<dyn ChatModel>, LlmError> {
    build_with_retry(config, RetryPolicy::default())
}

/// Like [`build`], with an explicit backoff policy (tests use tiny delays).
pub fn build_with_retry(
    config: &ProviderConfig,
    retry: RetryPolicy,
) -> Result<Arc<dyn ChatModel>, LlmError> {
    (config.kind.provider().build)(config, retry, None)
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
    (config.kind.provider().build)(config, retry, Some(events))
}

/// The default model of each provider.
pub fn default_model(kind: ProviderKind) -> &'static str {
    kind.provider().default_model
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

    #[test]
    fn missing_keys_are_refused_before_any_request() {
        let config = ProviderConfig {
            kind: ProviderKind::Anthropic,
            model: String::new(),
            base_url: None,
            api_key: Some(Secret::new("  ")),
            timeout: std::time::Duration::from_secs(1),
            max_time: std::time::Duration::ZERO,
            max_attempts: 1,
            replay_file: None,
        };
        let err = build(&config).expect_err("blank key");
        assert!(
            matches!(&err, LlmError::MissingKey { provider } if provider == "anthropic"),
            "{err:?}"
        );
    }
}
