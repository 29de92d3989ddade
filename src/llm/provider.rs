//! The provider table: every fact about a provider in one row — its names,
//! the variables that hold its key and base URL, its default model and
//! address, where it lists its models, the headers of its requests, and how
//! its client is built — and the reading of a [`ProviderConfig`] against
//! its row (model, base URL, key).
//!
//! Settings (`config`), the preflight, the scrubbed environment of child
//! processes and the hints attached to errors all read these rows; none of
//! them names a provider's variables itself. Adding a provider is its
//! wire-format file (like `openai.rs`, a [`WireFormat`]), a [`ProviderKind`]
//! variant and one row here. This file sits on top of the clients it
//! builds: nothing below it reads the table.

use std::sync::Arc;

use super::anthropic::Anthropic;
use super::backoff::RetryPolicy;
use super::chat::{ChatModel, ProviderKind};
use super::error::LlmError;
use super::gemini::Gemini;
use super::http::HttpChat;
use super::openai::OpenAi;
use super::replay::ReplayModel;
use super::settings::{ProviderConfig, Secret};
use super::wire::WireFormat;
use crate::log::EventSink;

/// Builds a provider's client; `events` receives its progress and retries.
type Build = fn(
    &ProviderConfig,
    RetryPolicy,
    Option<Arc<dyn EventSink>>,
) -> Result<Arc<dyn ChatModel>, LlmError>;

/// The headers that carry a key (and any other header every request needs).
type Headers = fn(Option<&str>) -> Vec<(&'static str, String)>;

/// One provider.
pub struct Provider {
    pub kind: ProviderKind,
    /// The name in messages, logs and `--provider`.
    pub name: &'static str,
    /// Other names `--provider` accepts.
    pub aliases: &'static [&'static str],
    /// Variables holding the key, in order of preference.
    pub key_vars: &'static [&'static str],
    /// The variable holding the base URL, if the provider has one.
    pub base_url_var: Option<&'static str>,
    /// What to tell a user about the base URL when a connection fails.
    pub base_url_note: &'static str,
    /// Whether a base URL alone (a local server) is enough, with no key.
    pub keyless_with_base_url: bool,
    /// The model used when none is given.
    pub default_model: &'static str,
    /// The address used when no base URL is given ("" when it has none).
    pub default_base_url: &'static str,
    /// The version path a user may have added to a base URL that is meant
    /// to be the host root (`/v1beta`); it is taken off again.
    pub version_suffix: Option<&'static str>,
    /// The path under the base URL that lists the models (`None`: nothing
    /// to ask, as for recorded replies).
    pub models_path: Option<&'static str>,
    /// The headers of a request with this key.
    pub headers: Headers,
    /// Builds the client.
    pub build: Build,
}

/// Every provider, in the order a key in the environment chooses one when
/// none is named.
pub static PROVIDERS: [Provider; 4] = [
    Provider {
        kind: ProviderKind::Gemini,
        name: "gemini",
        aliases: &["google"],
        key_vars: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        base_url_var: Some("GEMINI_BASE_URL"),
        base_url_note: "",
        keyless_with_base_url: false,
        default_model: "gemini-2.5-flash",
        default_base_url: "https://generativelanguage.googleapis.com",
        version_suffix: Some("/v1beta"),
        models_path: Some("/v1beta/models"),
        headers: Gemini::headers,
        build: connect::<Gemini>,
    },
    Provider {
        kind: ProviderKind::OpenAi,
        name: "openai",
        aliases: &["openai-compatible", "ollama"],
        key_vars: &["OPENAI_API_KEY"],
        base_url_var: Some("OPENAI_BASE_URL"),
        base_url_note: " (a local server's usually ends in /v1)",
        keyless_with_base_url: true,
        default_model: "gpt-4o-mini",
        default_base_url: "https://api.openai.com/v1",
        version_suffix: None,
        models_path: Some("/models"),
        headers: OpenAi::headers,
        build: connect::<OpenAi>,
    },
    Provider {
        kind: ProviderKind::Anthropic,
        name: "anthropic",
        aliases: &["claude"],
        key_vars: &["ANTHROPIC_API_KEY"],
        base_url_var: Some("ANTHROPIC_BASE_URL"),
        base_url_note: "",
        keyless_with_base_url: false,
        default_model: "claude-sonnet-4-5",
        default_base_url: "https://api.anthropic.com",
        version_suffix: Some("/v1"),
        models_path: Some("/v1/models"),
        headers: Anthropic::headers,
        build: connect::<Anthropic>,
    },
    Provider {
        kind: ProviderKind::Replay,
        name: "replay",
        aliases: &[],
        key_vars: &[],
        base_url_var: None,
        base_url_note: "",
        keyless_with_base_url: true,
        default_model: "replay",
        default_base_url: "",
        version_suffix: None,
        models_path: None,
        headers: |_| Vec::new(),
        build: |config, _, _| {
            let model = config.kind.provider().model_of(config);
            Ok(Arc::new(ReplayModel::open(
                config.replay_file.as_deref(),
                model,
            )?))
        },
    },
];

impl ProviderKind {
    /// This provider's row.
    pub fn provider(self) -> &'static Provider {
        PROVIDERS
            .iter()
            .find(|p| p.kind == self)
            .expect("every ProviderKind has a row in PROVIDERS")
    }

    /// The provider's name in messages and logs.
    pub fn name(self) -> &'static str {
        self.provider().name
    }
}

impl std::fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Provider {
    /// The provider called `name` or one of its aliases (any case).
    pub fn named(name: &str) -> Option<&'static Provider> {
        let name = name.trim().to_ascii_lowercase();
        PROVIDERS
            .iter()
            .find(|p| p.name == name || p.aliases.contains(&name.as_str()))
    }

    /// The key variables as a user reads them: `A or B`.
    pub fn key_var_list(&self) -> String {
        self.key_vars.join(" or ")
    }

    /// The model id of `config`, or this provider's default when it is blank.
    pub fn model_of(&self, config: &ProviderConfig) -> String {
        let model = config.model.trim();
        if model.is_empty() {
            self.default_model.to_string()
        } else {
            model.to_string()
        }
    }

    /// The base URL of `config` (or this provider's default), without
    /// trailing slashes and without the provider's version path (e.g.
    /// `/v1beta`) when a user added it to a base that is meant to be the
    /// host root.
    pub fn base_url_of(&self, config: &ProviderConfig) -> String {
        let base = config
            .base_url
            .as_deref()
            .map(str::trim)
            .filter(|base| !base.is_empty())
            .unwrap_or(self.default_base_url)
            .trim_end_matches('/');
        match self
            .version_suffix
            .and_then(|suffix| base.strip_suffix(suffix))
        {
            Some(root) => root.trim_end_matches('/').to_string(),
            None => base.to_string(),
        }
    }

    /// The key of `config`. A provider that can do without one goes without
    /// when a base URL is given (a local server); any other needs one
    /// ([`LlmError::MissingKey`]).
    pub fn key_of(&self, config: &ProviderConfig) -> Result<Option<Secret>, LlmError> {
        match config.given_key() {
            Some(key) => Ok(Some(key)),
            None if self.keyless_with_base_url && config.base_url.is_some() => Ok(None),
            None => Err(LlmError::MissingKey {
                provider: self.name.to_string(),
            }),
        }
    }
}

/// Builds the HTTP chat client of `config`, speaking the wire format `W`.
fn connect<W: WireFormat>(
    config: &ProviderConfig,
    retry: RetryPolicy,
    events: Option<Arc<dyn EventSink>>,
) -> Result<Arc<dyn ChatModel>, LlmError> {
    let provider = config.kind.provider();
    let key = provider.key_of(config)?;
    let base_url = provider.base_url_of(config);
    let wire = W::new(base_url.clone(), provider.model_of(config));
    let mut chat = HttpChat::new(provider.name, wire, &base_url, key, config, retry)?;
    if let Some(events) = events {
        chat.report_to(events);
    }
    Ok(Arc::new(chat))
}

/// Every environment variable that configures a provider: keys and base
/// URLs. Child processes never see them.
pub fn provider_env_vars() -> impl Iterator<Item = &'static str> {
    PROVIDERS
        .iter()
        .flat_map(|p| p.key_vars.iter().copied().chain(p.base_url_var))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_exactly_one_row_and_names_are_unique() {
        for kind in [
            ProviderKind::OpenAi,
            ProviderKind::Gemini,
            ProviderKind::Anthropic,
            ProviderKind::Replay,
        ] {
            assert_eq!(PROVIDERS.iter().filter(|p| p.kind == kind).count(), 1);
            assert_eq!(kind.provider().kind, kind);
        }
        let mut names: Vec<&str> = PROVIDERS
            .iter()
            .flat_map(|p| std::iter::once(p.name).chain(p.aliases.iter().copied()))
            .collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all, "a name or alias is used twice");
    }

    #[test]
    fn names_and_aliases_find_their_provider_in_any_case() {
        assert_eq!(
            Provider::named(" Claude ").map(|p| p.kind),
            Some(ProviderKind::Anthropic)
        );
        assert_eq!(
            Provider::named("OLLAMA").map(|p| p.kind),
            Some(ProviderKind::OpenAi)
        );
        assert_eq!(
            Provider::named("google").map(|p| p.kind),
            Some(ProviderKind::Gemini)
        );
        assert!(Provider::named("mistral").is_none());
    }

    fn config(kind: ProviderKind, base_url: Option<&str>, key: Option<&str>) -> ProviderConfig {
        ProviderConfig {
            kind,
            model: String::new(),
            base_url: base_url.map(str::to_string),
            api_key: key.map(Secret::new),
            timeout: std::time::Duration::from_secs(1),
            max_time: std::time::Duration::ZERO,
            max_attempts: 1,
            replay_file: None,
        }
    }

    #[test]
    fn every_variable_is_listed_for_child_processes() {
        let vars: Vec<&str> = provider_env_vars().collect();
        assert!(vars.contains(&"ANTHROPIC_BASE_URL") && vars.contains(&"GOOGLE_API_KEY"));
        assert_eq!(
            ProviderKind::Gemini.provider().key_var_list(),
            "GEMINI_API_KEY or GOOGLE_API_KEY"
        );
    }

    #[test]
    fn base_urls_are_normalised() {
        let gemini = ProviderKind::Gemini.provider();
        let url = gemini.base_url_of(&config(
            ProviderKind::Gemini,
            Some("http://host:1/v1beta/"),
            None,
        ));
        assert_eq!(url, "http://host:1");
        let url = gemini.base_url_of(&config(ProviderKind::Gemini, None, None));
        assert_eq!(url, "https://generativelanguage.googleapis.com");
        let openai = ProviderKind::OpenAi.provider();
        let given = config(
            ProviderKind::OpenAi,
            Some("http://127.0.0.1:8080/v1/"),
            None,
        );
        assert_eq!(openai.base_url_of(&given), "http://127.0.0.1:8080/v1");
    }

    #[test]
    fn blank_models_take_the_default() {
        let mut given = config(ProviderKind::Anthropic, None, None);
        let anthropic = ProviderKind::Anthropic.provider();
        assert_eq!(anthropic.model_of(&given), "claude-sonnet-4-5");
        given.model = " claude-x ".into();
        assert_eq!(anthropic.model_of(&given), "claude-x");
    }

    #[test]
    fn only_a_local_server_may_go_without_a_key() {
        let openai = ProviderKind::OpenAi.provider();
        let local = config(ProviderKind::OpenAi, Some("http://127.0.0.1:1/v1"), None);
        assert!(matches!(openai.key_of(&local), Ok(None)));
        let remote = config(ProviderKind::OpenAi, None, Some("  "));
        assert!(matches!(
            openai.key_of(&remote),
            Err(LlmError::MissingKey { ref provider }) if provider == "openai"
        ));
        let anthropic = ProviderKind::Anthropic.provider();
        let local = config(ProviderKind::Anthropic, Some("http://127.0.0.1:1"), None);
        assert!(matches!(
            anthropic.key_of(&local),
            Err(LlmError::MissingKey { .. })
        ));
        let keyed = config(ProviderKind::Anthropic, None, Some("k"));
        assert!(matches!(anthropic.key_of(&keyed), Ok(Some(_))));
    }
}
