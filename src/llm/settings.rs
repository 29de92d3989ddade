//! What a provider is built from: [`ProviderConfig`] (kind, model, base
//! URL, key, limits, recording) and the [`Secret`] that holds a key.
//!
//! Owns the meaning of a zero limit (the default) and of a blank key (no
//! key). The defaults that differ per provider (model, address) are rows
//! of the provider table (`provider`), read above this file, never here.

use std::path::PathBuf;
use std::time::Duration;

use super::chat::ProviderKind;

/// The idle limit used when the config gives zero.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(120);

/// The total cap per request used when the config gives zero.
pub const DEFAULT_MAX_TIME: Duration = Duration::from_secs(900);

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
    /// ([`Finish::Length`](super::Finish::Length)).
    pub max_time: Duration,
    /// Total HTTP attempts (1 = no retry; 0 is taken as 1).
    pub max_attempts: u32,
    /// For replay: the experiment log or cassette to answer from.
    pub replay_file: Option<PathBuf>,
}

impl ProviderConfig {
    /// The longest silence per request: `timeout`, or the default for zero.
    pub fn idle_limit(&self) -> Duration {
        if self.timeout.is_zero() {
            DEFAULT_ATTEMPT_TIMEOUT
        } else {
            self.timeout
        }
    }

    /// The longest one request may take: `max_time`, or the default for zero.
    pub fn total_limit(&self) -> Duration {
        if self.max_time.is_zero() {
            DEFAULT_MAX_TIME
        } else {
            self.max_time
        }
    }

    /// The HTTP attempts a call may make in all (at least one).
    pub fn attempts(&self) -> u32 {
        self.max_attempts.max(1)
    }

    /// The key, unless none was given or it is blank.
    pub fn given_key(&self) -> Option<Secret> {
        self.api_key
            .clone()
            .filter(|key| !key.expose().trim().is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_limits_mean_the_defaults_and_blank_keys_mean_none() {
        let mut config = ProviderConfig {
            kind: ProviderKind::OpenAi,
            model: String::new(),
            base_url: None,
            api_key: Some(Secret::new("  ")),
            timeout: Duration::ZERO,
            max_time: Duration::ZERO,
            max_attempts: 0,
            replay_file: None,
        };
        assert_eq!(config.idle_limit(), DEFAULT_ATTEMPT_TIMEOUT);
        assert_eq!(config.total_limit(), DEFAULT_MAX_TIME);
        assert_eq!(config.attempts(), 1);
        assert!(config.given_key().is_none());
        config.timeout = Duration::from_secs(3);
        config.max_time = Duration::from_secs(9);
        config.max_attempts = 4;
        config.api_key = Some(Secret::new("k"));
        assert_eq!(config.idle_limit(), Duration::from_secs(3));
        assert_eq!(config.total_limit(), Duration::from_secs(9));
        assert_eq!(config.attempts(), 4);
        assert_eq!(
            config.given_key().map(|k| k.expose().to_string()),
            Some("k".into())
        );
        assert_eq!(format!("{:?}", Secret::new("sk-1")), "Secret(***)");
    }
}
