//! Effective settings: flags override environment variables, which override
//! the config files (the project's `.swarm.toml` or `[tool.swarm]` in a
//! `pyproject.toml`, found from the target up to the repository root, then
//! the user's `~/.config/swarm/config.toml`), which override defaults. Every value remembers
//! where it came from, for `swarm config`.
//!
//! It states facts: its errors ([`ConfigError`]) name the file, the place
//! and the source error, never what to do about them.

mod dotenv;
mod error;

pub use dotenv::DotEnv;
pub use error::{ConfigError, Place, Problem};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::llm::{Provider, ProviderKind, Secret, PROVIDERS};

/// Where a setting came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Flag(&'static str),
    Env(String),
    File(PathBuf),
    Default,
    /// The default for a model served from this machine or the local
    /// network (see [`is_local_url`]).
    LocalDefault,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Flag(name) => write!(f, "flag {name}"),
            Source::Env(name) => write!(f, "env {name}"),
            Source::File(path) => write!(f, "file {}", path.display()),
            Source::Default => f.write_str("default"),
            Source::LocalDefault => f.write_str("default for a local model server"),
        }
    }
}

/// A value and its source.
#[derive(Clone, Debug)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

/// The `[tool.swarm]` table or `.swarm.toml`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FileConfig {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub max_iterations: Option<u32>,
    pub test_timeout: Option<u64>,
    /// Seconds one test may run; 0 disables.
    pub test_case_timeout: Option<u64>,
    pub lint_timeout: Option<u64>,
    pub llm_timeout: Option<u64>,
    pub llm_max_time: Option<u64>,
    /// Whether the model is served locally (default: from the base URL).
    pub local_model: Option<bool>,
    pub retries: Option<u32>,
    pub jobs: Option<usize>,
    pub max_tokens_total: Option<u64>,
    pub max_cost: Option<f64>,
    pub allow_test_edits: Option<bool>,
    /// `true` is `--allow-secrets`: the code's secrets are sent as they are.
    pub allow_secrets: Option<bool>,
    /// `true` is `--offline`: ruff's fixes, no model.
    pub offline: Option<bool>,
    /// `true` is `--install-deps`: the project's declared environment in
    /// swarm's cache.
    #[serde(alias = "install_deps")]
    pub install_deps: Option<bool>,
    /// `false` is `--no-generate-tests`.
    #[serde(alias = "generate_tests")]
    pub generate_tests: Option<bool>,
    pub size_limits: Option<SizeLimitsConfig>,
    /// Model id → USD per million input/output tokens.
    pub prices: Option<BTreeMap<String, PriceConfig>>,
    /// The sandbox of the code under test.
    pub sandbox: Option<SandboxConfig>,
    /// The model's context window in tokens (known models have a default).
    pub context_window: Option<u64>,
    /// Prompt allowances per request kind.
    pub budget: Option<BudgetConfig>,
}

/// `[budget]`: how many tokens each kind of prompt may take (each capped by
/// the context window).
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BudgetConfig {
    pub plan_tokens: Option<u64>,
    pub fix_tokens: Option<u64>,
    pub test_tokens: Option<u64>,
}

/// `[sandbox]`: what confines pytest, pylint and the import checks.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SandboxConfig {
    /// `false` is `--no-sandbox`.
    pub enabled: Option<bool>,
    /// Address space per process, MiB (default 4096; 0 = no limit).
    pub memory_mb: Option<u64>,
    /// Largest file a process may write, MiB (default 1024; 0 = no limit).
    pub file_size_mb: Option<u64>,
    /// Processes and threads in the sandbox (default 1024; 0 = no limit).
    pub processes: Option<u64>,
    /// Extra folders the code under test may read (relative to the target).
    pub read_paths: Option<Vec<PathBuf>>,
}

/// Changed-line limits per severity, and the changed bytes allowed per
/// line of the limit (`bytes-per-line`, default 120: a low-severity file
/// may change by 40 lines and 4,800 bytes).
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeLimitsConfig {
    pub low: Option<usize>,
    pub medium: Option<usize>,
    pub high: Option<usize>,
    #[serde(rename = "bytes-per-line")]
    pub bytes_per_line: Option<usize>,
}

/// A price override.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceConfig {
    pub input: f64,
    pub output: f64,
}

/// The config files that apply to a target, nearest first: the project's
/// (the nearest `.swarm.toml`, or `pyproject.toml` with a `[tool.swarm]`
/// table, from the target folder up to the repository root) and the user's
/// (`$XDG_CONFIG_HOME/swarm/config.toml`, else `~/.config/swarm/config.toml`).
/// A setting comes from the nearest file that sets it; a table
/// (`[sandbox]`, `[budget]`, `[size_limits]`) comes whole from one file.
#[derive(Debug, Default)]
pub struct ConfigFiles {
    layers: Vec<(PathBuf, FileConfig)>,
}

impl ConfigFiles {
    /// Finds and reads the files for `target`.
    pub fn load(target: &Path, env: &dyn Environment) -> Result<Self, ConfigError> {
        let mut layers = Vec::new();
        let root = repository_root(target);
        let mut dir = Some(target);
        while let Some(here) = dir {
            if let Some(found) = project_file(here)? {
                layers.push(found);
                break;
            }
            if root.is_none_or(|root| here == root) {
                break;
            }
            dir = here.parent();
        }
        if let Some(path) = user_config_path(env).filter(|p| p.is_file()) {
            let cfg = parse_swarm_toml(&path)?;
            layers.push((path, cfg));
        }
        Ok(Self { layers })
    }

    /// The value `get` finds in the nearest file that sets it, with that
    /// file's path.
    pub fn value<T>(&self, get: impl Fn(&FileConfig) -> Option<T>) -> Option<(T, &Path)> {
        self.layers
            .iter()
            .find_map(|(path, file)| get(file).map(|v| (v, path.as_path())))
    }

    /// The files, nearest first.
    pub fn layers(&self) -> &[(PathBuf, FileConfig)] {
        &self.layers
    }
}

/// The folder holding `.git` at or above `dir` (`None` outside a
/// repository: then only `dir` itself is searched).
pub fn repository_root(dir: &Path) -> Option<&Path> {
    dir.ancestors().find(|d| d.join(".git").exists())
}

/// The user's config file.
fn user_config_path(env: &dyn Environment) -> Option<PathBuf> {
    let base = match env.var("XDG_CONFIG_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env.var("HOME")?).join(".config"),
    };
    Some(base.join("swarm").join("config.toml"))
}

/// Reads the config file of one folder: `.swarm.toml` wins over
/// `pyproject.toml`'s `[tool.swarm]`. `None` when neither exists.
pub fn project_file(dir: &Path) -> Result<Option<(PathBuf, FileConfig)>, ConfigError> {
    let dot = dir.join(".swarm.toml");
    if dot.is_file() {
        let cfg = parse_swarm_toml(&dot)?;
        return Ok(Some((dot, cfg)));
    }
    let py = dir.join("pyproject.toml");
    if py.is_file() {
        let text = read(&py)?;
        let doc: toml::Table = toml::from_str(&text)
            .map_err(|e| ConfigError::toml(Problem::NotToml, &py, &text, e))?;
        let Some(section) = doc.get("tool").and_then(|t| t.get("swarm")) else {
            return Ok(None);
        };
        let cfg: FileConfig = section
            .clone()
            .try_into()
            .map_err(|e| ConfigError::tool_table(&py, e))?;
        return Ok(Some((py, cfg)));
    }
    Ok(None)
}

/// A `.swarm.toml` (or the user's `config.toml`).
fn parse_swarm_toml(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = read(path)?;
    toml::from_str(&text).map_err(|e| ConfigError::toml(Problem::NotSwarmConfig, path, &text, e))
}

/// The text of a config file.
fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|source| ConfigError::Unreadable {
        path: path.to_path_buf(),
        source,
    })
}

/// swarm's cache folder: `SWARM_CACHE_DIR`, else `<user cache dir>/swarm`
/// (`~/.cache/swarm` on Linux); `None` when neither can be found. Tool
/// environments and run worktrees live under it.
pub fn cache_dir(env: &dyn Environment) -> Option<PathBuf> {
    match env.var("SWARM_CACHE_DIR") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => dirs::cache_dir().map(|dir| dir.join("swarm")),
    }
}

/// Reads environment variables (a seam for tests).
pub trait Environment {
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment; empty values count as unset.
///
/// After [`ProcessEnv::capture`] (done by [`crate::harden::harden`] at
/// start-up, before keys are removed from the live environment) it reads
/// the captured copy; otherwise the live environment.
pub struct ProcessEnv;

static CAPTURED: std::sync::OnceLock<BTreeMap<String, String>> = std::sync::OnceLock::new();

impl ProcessEnv {
    /// Keeps a copy of the environment as it is now (the first call wins).
    pub fn capture() {
        CAPTURED.get_or_init(|| {
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect()
        });
    }
}

impl Environment for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        let value = match CAPTURED.get() {
            Some(vars) => vars.get(name).cloned(),
            None => std::env::var(name).ok(),
        };
        value.filter(|v| !v.trim().is_empty())
    }
}

/// Every variable that holds a provider key, for every provider.
pub fn all_key_vars() -> Vec<&'static str> {
    PROVIDERS
        .iter()
        .flat_map(|p| p.key_vars.iter().copied())
        .collect()
}

/// Picks the first of flag, env, file, default.
pub fn pick<T>(
    flag: Option<T>,
    flag_name: &'static str,
    env: Option<(T, &'static str)>,
    file: Option<(T, &Path)>,
    default: T,
) -> Sourced<T> {
    if let Some(value) = flag {
        return Sourced {
            value,
            source: Source::Flag(flag_name),
        };
    }
    if let Some((value, name)) = env {
        return Sourced {
            value,
            source: Source::Env(name.to_string()),
        };
    }
    if let Some((value, path)) = file {
        return Sourced {
            value,
            source: Source::File(path.to_path_buf()),
        };
    }
    Sourced {
        value: default,
        source: Source::Default,
    }
}

/// Parses a provider name (or one of its aliases).
pub fn parse_provider(name: &str) -> Result<ProviderKind, ConfigError> {
    Provider::named(name)
        .map(|p| p.kind)
        .ok_or_else(|| ConfigError::UnknownProvider {
            name: name.trim().to_ascii_lowercase(),
        })
}

/// The provider's key variables, in order of preference.
pub fn key_vars(kind: ProviderKind) -> &'static [&'static str] {
    kind.provider().key_vars
}

/// The provider's base-URL variable.
pub fn base_url_var(kind: ProviderKind) -> Option<&'static str> {
    kind.provider().base_url_var
}

/// Chooses the provider when none was named: the first whose key is set,
/// else one whose base URL alone is enough (a local server).
pub fn detect_provider(env: &dyn Environment) -> Option<(ProviderKind, &'static str)> {
    let keyed = PROVIDERS.iter().find_map(|p| {
        p.key_vars
            .iter()
            .find(|var| env.var(var).is_some())
            .map(|var| (p.kind, *var))
    });
    keyed.or_else(|| {
        PROVIDERS
            .iter()
            .filter(|p| p.keyless_with_base_url)
            .find_map(|p| {
                p.base_url_var
                    .filter(|var| env.var(var).is_some())
                    .map(|var| (p.kind, var))
            })
    })
}

/// What to set when no provider is configured (a hint for the error), from
/// the provider table.
pub fn no_provider_hint() -> String {
    let mut parts: Vec<String> = Vec::new();
    for p in PROVIDERS.iter().filter(|p| !p.key_vars.is_empty()) {
        let mut part = p.key_vars[0].to_string();
        if p.key_vars.len() > 1 {
            part.push_str(&format!(" (or {})", p.key_vars[1..].join(", ")));
        }
        if let (true, Some(base)) = (p.keyless_with_base_url, p.base_url_var) {
            part.push_str(&format!(
                " (with {base} for Ollama, vLLM, llama.cpp, LM Studio)"
            ));
        }
        parts.push(part);
    }
    let last = parts.pop().unwrap_or_default();
    format!(
        "set {} or {last}, or pass --provider replay --cassette FILE; or try --offline (ruff's fixes, no model, no key)",
        parts.join(", ")
    )
}

/// The key for `kind` from the environment, with the variable it came from.
pub fn key_for(kind: ProviderKind, env: &dyn Environment) -> Option<(Secret, &'static str)> {
    key_vars(kind)
        .iter()
        .find_map(|var| env.var(var).map(|v| (Secret::new(v), *var)))
}

/// `sk-…abcd`: enough to recognise a key, never enough to use it.
pub fn mask(secret: &Secret) -> String {
    let s = secret.expose();
    let tail: String = s
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if s.chars().count() <= 8 {
        "****".into()
    } else {
        format!("****{tail}")
    }
}

/// Whether a base URL points at this machine or the local network: a
/// loopback or private address, `localhost`, or a `.local`, `.lan`,
/// `.internal` or `.localhost` host name. Such servers are usually a model
/// on a CPU or a small GPU: slow to start and to answer.
pub fn is_local_url(url: &str) -> bool {
    let host = crate::llm::url_host(url);
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return match ip {
            std::net::IpAddr::V4(v4) => {
                v4.is_loopback() || v4.is_private() || v4.is_link_local() || v4.is_unspecified()
            }
            std::net::IpAddr::V6(v6) => {
                let first = v6.segments()[0];
                v6.is_loopback()
                    || v6.is_unspecified()
                    || (first & 0xfe00) == 0xfc00
                    || (first & 0xffc0) == 0xfe80
            }
        };
    }
    host == "localhost"
        || [".localhost", ".local", ".lan", ".internal"]
            .iter()
            .any(|suffix| host.ends_with(suffix))
}

/// A fixed set of variables, for tests.
#[cfg(test)]
pub(crate) struct FakeEnv(pub Vec<(&'static str, &'static str)>);

#[cfg(test)]
impl Environment for FakeEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_beat_env_beat_file_beat_default() {
        let path = Path::new("x/.swarm.toml");
        let s = pick(
            Some(3),
            "--max-iterations",
            Some((4, "E")),
            Some((5, path)),
            10,
        );
        assert_eq!((s.value, s.source), (3, Source::Flag("--max-iterations")));
        let s = pick(None, "--m", Some((4, "E")), Some((5, path)), 10);
        assert_eq!(s.source, Source::Env("E".into()));
        let s = pick(None, "--m", None, Some((5, path)), 10);
        assert_eq!((s.value, s.source), (5, Source::File(path.to_path_buf())));
        let s: Sourced<i32> = pick(None, "--m", None, None, 10);
        assert_eq!(s.source, Source::Default);
    }

    #[test]
    fn detects_the_provider_whose_key_is_set() {
        assert_eq!(detect_provider(&FakeEnv(vec![])), None);
        let env = FakeEnv(vec![("OPENAI_API_KEY", "sk-1")]);
        assert_eq!(
            detect_provider(&env).map(|d| d.0),
            Some(ProviderKind::OpenAi)
        );
        let env = FakeEnv(vec![("GOOGLE_API_KEY", "g")]);
        assert_eq!(
            detect_provider(&env).map(|d| d.0),
            Some(ProviderKind::Gemini)
        );
        let env = FakeEnv(vec![("ANTHROPIC_API_KEY", "a")]);
        assert_eq!(
            detect_provider(&env).map(|d| d.0),
            Some(ProviderKind::Anthropic)
        );
    }

    #[test]
    fn reads_tool_swarm_from_pyproject_and_rejects_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("pyproject.toml"),
            "[project]\nname='x'\n[tool.swarm]\nmodel = 'm1'\nmax-iterations = 3\n[tool.swarm.size-limits]\nlow = 20\nbytes-per-line = 200\n",
        )
        .unwrap();
        let (path, cfg) = project_file(dir.path()).unwrap().unwrap();
        assert!(path.ends_with("pyproject.toml"));
        assert_eq!(cfg.model.as_deref(), Some("m1"));
        assert_eq!(cfg.max_iterations, Some(3));
        assert_eq!(cfg.size_limits.unwrap().low, Some(20));
        assert_eq!(cfg.size_limits.unwrap().bytes_per_line, Some(200));
        std::fs::write(dir.path().join(".swarm.toml"), "modle = 'typo'\n").unwrap();
        let err = project_file(dir.path()).unwrap_err();
        assert!(err.to_string().contains(".swarm.toml"), "{err}");
    }

    #[test]
    fn masks_keys() {
        assert_eq!(mask(&Secret::new("sk-abcdefghijkl")), "****ijkl");
        assert_eq!(mask(&Secret::new("short")), "****");
    }

    #[test]
    fn local_model_servers_are_recognised_by_their_address() {
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434/v1",
            "http://192.168.1.20:8000/v1",
            "http://10.0.0.5/v1",
            "http://172.20.0.2:1234/v1",
            "http://[::1]:8080/v1",
            "http://gpu-box.local:8080/v1",
            "http://user:pw@ollama.lan/v1",
        ] {
            assert!(is_local_url(url), "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "https://openrouter.ai/api/v1",
            "http://172.32.0.1/v1",
            "https://generativelanguage.googleapis.com",
        ] {
            assert!(!is_local_url(url), "{url}");
        }
    }
}
