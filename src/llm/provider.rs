//! The provider table: every fact about a provider in one row — its names,
//! the variables that hold its key and base URL, its default model and
//! address, where it lists its models, and how its client is built.
//!
//! Settings (`config`), the preflight, the scrubbed environment of child
//! processes and the error messages all read these rows; none of them names
//! a provider's variables itself. Adding a provider is its wire-format file
//! (like `openai.rs`), a [`ProviderKind`] variant and one row here.

use std::sync::Arc;

use super::anthropic::{AnthropicChat, ANTHROPIC_VERSION};
use super::gemini::GeminiChat;
use super::openai::OpenAiChat;
use super::{ChatModel, LlmError, ProviderConfig, ProviderKind, ReplayModel, RetryPolicy};
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
        headers: |key| {
            key.map(|k| vec![("x-goog-api-key", k.to_string())])
                .unwrap_or_default()
        },
        build: |config, retry, events| {
            Ok(Arc::new(GeminiChat::new(config, retry)?.reporting(events)))
        },
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
        headers: |key| {
            key.map(|k| vec![("authorization", format!("Bearer {k}"))])
                .unwrap_or_default()
        },
        build: |config, retry, events| {
            Ok(Arc::new(OpenAiChat::new(config, retry)?.reporting(events)))
        },
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
        headers: |key| {
            let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION.to_string())];
            headers.extend(key.map(|k| ("x-api-key", k.to_string())));
            headers
        },
        build: |config, retry, events| {
            Ok(Arc::new(
                AnthropicChat::new(config, retry)?.reporting(events),
            ))
        },
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
        build: |config, _, _| Ok(Arc::new(ReplayModel::new(config)?)),
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

    /// What to check when its endpoint cannot be used.
    pub fn check_hint(&self) -> String {
        match self.base_url_var {
            Some(base) => format!(
                "check {base}{} and {}, or pass --no-preflight to skip this check",
                self.base_url_note,
                self.key_var_list()
            ),
            None => "check the recording, or pass --no-preflight to skip this check".into(),
        }
    }
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

    #[test]
    fn hints_name_the_variables_to_check() {
        let hint = ProviderKind::OpenAi.provider().check_hint();
        assert!(
            hint.contains("OPENAI_BASE_URL (a local server's") && hint.contains("OPENAI_API_KEY")
        );
        let hint = ProviderKind::Gemini.provider().check_hint();
        assert!(hint.contains("GEMINI_API_KEY or GOOGLE_API_KEY"), "{hint}");
        let vars: Vec<&str> = provider_env_vars().collect();
        assert!(vars.contains(&"ANTHROPIC_BASE_URL") && vars.contains(&"GOOGLE_API_KEY"));
    }
}
