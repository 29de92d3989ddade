//! Turns flags, environment and config file into a validated run
//! configuration before any work starts.

use std::path::{Path, PathBuf};
use std::time::Duration;

mod limits;
mod model;
mod parts;

use limits::{budget_settings, describe_budget, describe_sandbox, sandbox_policy};
use parts::{Places, Review, Shared, Spending};

use super::RunArgs;
use crate::config::{
    self, ConfigFiles, DotEnv, Environment, FileConfig, SizeLimitsConfig, Source, Sourced,
};
use crate::error::SwarmError;
use crate::llm::{ProviderConfig, ProviderKind, Secret};
use crate::orchestrator::RunConfig;
use crate::stage::reviewer::SizeLimits;

/// Everything a run needs, and where each setting came from.
pub struct Resolved {
    pub run: RunConfig,
    /// The model's provider; `None` with `--offline` (ruff's fixes, no model).
    pub provider: Option<ProviderConfig>,
    pub record: Option<PathBuf>,
    /// (setting, shown value, source) for `swarm config`.
    pub rows: Vec<Row>,
}

/// Checks the target folder exists and is a folder.
pub fn check_target(target: Option<&Path>) -> Result<PathBuf, SwarmError> {
    let Some(target) = target else {
        return Err(SwarmError::invalid(
            "missing --target_dir DIR: name the folder to refactor (a git repository or a folder inside one)",
        ));
    };
    let meta = std::fs::metadata(target).map_err(|_| {
        SwarmError::invalid(format!(
            "no such folder: {} (check --target_dir)",
            target.display()
        ))
    })?;
    if !meta.is_dir() {
        return Err(SwarmError::invalid(format!(
            "{} is not a folder: --target_dir takes a folder",
            target.display()
        )));
    }
    target
        .canonicalize()
        .map_err(|e| SwarmError::invalid(format!("cannot open {}", target.display())).caused_by(e))
}

/// Resolves the settings of a run: each group of settings in its own step,
/// in the order `swarm config` shows them.
pub fn resolve(args: &RunArgs, env: &dyn Environment) -> Result<Resolved, SwarmError> {
    let target = check_target(args.target_dir.as_deref())?;
    let files = ConfigFiles::load(&target, env)?;
    let dotenv = DotEnv::load(config::repository_root(&target).unwrap_or(&target));
    let layered = dotenv.over(env);
    let mut r = Resolver::new(args, &layered, env, &dotenv, &files);
    let offline = r.offline();
    if offline {
        return resolve_offline(r, args, &files, target);
    }
    let Some(kind) = r.provider()? else {
        return Err(
            SwarmError::invalid("no model provider configured").hint(config::no_provider_hint())
        );
    };
    let endpoint = r.endpoint(kind);
    let counts = r.counts(endpoint.local)?;
    let spending = r.spending();
    let review = r.review();
    let sandbox = sandbox_policy(args, &files, &target);
    r.row("sandbox", describe_sandbox(&sandbox.value), &sandbox.source);
    let budget = budget_settings(args, &files, &endpoint.model, endpoint.local)?;
    r.row("budget", describe_budget(&budget.value), &budget.source);
    let places = r.places();
    let replay_file = r.replay_file(kind)?;
    let prices = r.prices();

    let secrets = endpoint.key.iter().map(|(s, _)| s.clone()).collect();
    let provider_config = ProviderConfig {
        kind,
        model: endpoint.model,
        base_url: endpoint.base_url,
        api_key: endpoint.key.map(|(s, _)| s),
        timeout: Duration::from_secs(counts.llm_timeout),
        max_time: Duration::from_secs(counts.llm_max_time),
        max_attempts: counts.retries,
        replay_file,
    };
    let shared = Shared {
        counts,
        spending,
        review,
        sandbox: sandbox.value,
        budget: budget.value,
        places,
        prices,
    };
    let install_deps = r.install_deps();
    let run = RunConfig {
        secrets,
        task: instruction(args)?,
        install_deps,
        preflight: (!args.no_preflight && kind != ProviderKind::Replay)
            .then(|| provider_config.clone()),
        ..shared.into_run(args, target)
    };
    Ok(Resolved {
        run,
        provider: Some(provider_config),
        record: args.record.clone(),
        rows: r.rows,
    })
}

/// The settings of an offline run: no provider, no key, no preflight; the
/// proposals are ruff's (the CLI finds ruff and sets them).
fn resolve_offline(
    mut r: Resolver<'_>,
    args: &RunArgs,
    files: &ConfigFiles,
    target: PathBuf,
) -> Result<Resolved, SwarmError> {
    if instruction(args)?.is_some() {
        return Err(SwarmError::invalid(
            "--task needs a model: offline, ruff's fixes cannot carry out an instruction",
        )
        .hint("drop --offline (and SWARM_OFFLINE), and set a provider's key"));
    }
    let counts = r.counts(false)?;
    let spending = r.spending();
    let review = r.review();
    let sandbox = sandbox_policy(args, files, &target);
    r.row("sandbox", describe_sandbox(&sandbox.value), &sandbox.source);
    let budget = budget_settings(args, files, "ruff", false)?;
    let places = r.places();
    let prices = r.prices();
    let shared = Shared {
        counts,
        spending,
        review,
        sandbox: sandbox.value,
        budget: budget.value,
        places,
        prices,
    };
    let install_deps = r.install_deps();
    let run = RunConfig {
        // No model to write tests: an offline run generates none.
        generate_tests: false,
        install_deps,
        ..shared.into_run(args, target)
    };
    Ok(Resolved {
        run,
        provider: None,
        record: args.record.clone(),
        rows: r.rows,
    })
}

/// The instruction of `--task` or `--task-file` (`SWARM_TASK`,
/// `SWARM_TASK_FILE`), checked; exit 1 when it is empty, oversized or its
/// file cannot be read.
fn instruction(args: &RunArgs) -> Result<Option<crate::pipeline::Instruction>, SwarmError> {
    let text = match (&args.task, &args.task_file) {
        (Some(text), _) => text.clone(),
        (None, Some(file)) => std::fs::read_to_string(file).map_err(|e| {
            SwarmError::invalid(format!("cannot read the task file {}: {e}", file.display()))
        })?,
        (None, None) => return Ok(None),
    };
    crate::pipeline::Instruction::new(&text)
        .map(Some)
        .map_err(|e| SwarmError::invalid(e.to_string()))
}

/// What `swarm config` shows: the target and one row per setting. Unlike
/// [`resolve`], it works with no provider configured (the provider's rows
/// say "not set").
pub fn show(args: &RunArgs, env: &dyn Environment) -> Result<(PathBuf, Vec<Row>), SwarmError> {
    let target = check_target(args.target_dir.as_deref())?;
    let files = ConfigFiles::load(&target, env)?;
    let dotenv = DotEnv::load(config::repository_root(&target).unwrap_or(&target));
    let layered = dotenv.over(env);
    let mut r = Resolver::new(args, &layered, env, &dotenv, &files);
    if r.provider()?.is_some() {
        return resolve(args, env).map(|resolved| (resolved.run.target, resolved.rows));
    }
    r.offline();
    r.install_deps();
    for name in ["model", "api_key"] {
        r.row(name, "(not set)".into(), &Source::Default);
    }
    r.counts(false)?;
    r.spending();
    r.review();
    let sandbox = sandbox_policy(args, &files, &target);
    r.row("sandbox", describe_sandbox(&sandbox.value), &sandbox.source);
    r.places();
    Ok((target, r.rows))
}

/// One row of `swarm config`: setting, shown value, source.
pub type Row = (String, String, Source);

/// Flags, environment and config file, and the rows of `swarm config` as
/// they are resolved.
struct Resolver<'a> {
    args: &'a RunArgs,
    env: &'a dyn Environment,
    /// The process environment alone (`env` adds the `.env` file's keys).
    process: &'a dyn Environment,
    dotenv: &'a DotEnv,
    /// The config files, nearest first.
    files: &'a ConfigFiles,
    rows: Vec<Row>,
}

/// Where the model is and who may call it.
struct Endpoint {
    model: String,
    base_url: Option<String>,
    /// Served from this machine or the local network: slower defaults.
    local: bool,
    key: Option<(Secret, &'static str)>,
}

impl<'a> Resolver<'a> {
    fn new(
        args: &'a RunArgs,
        env: &'a dyn Environment,
        process: &'a dyn Environment,
        dotenv: &'a DotEnv,
        files: &'a ConfigFiles,
    ) -> Self {
        Self {
            args,
            env,
            process,
            dotenv,
            files,
            rows: Vec::new(),
        }
    }

    /// [`config::pick`], with a flag clap took from its `SWARM_*` variable
    /// shown as that variable.
    fn pick<T>(
        &self,
        flag: Option<T>,
        name: &'static str,
        env: Option<(T, &'static str)>,
        file: Option<(T, &Path)>,
        default: T,
    ) -> Sourced<T> {
        let mut picked = config::pick(flag, name, env, file, default);
        match &picked.source {
            Source::Flag(flag) => {
                if let Some(var) = env_of(self.args, flag) {
                    picked.source = Source::Env(var);
                }
            }
            Source::Env(var) => picked.source = self.env_source(var),
            _ => {}
        }
        picked
    }

    /// Where variable `var` was found: the process environment, or `.env`.
    fn env_source(&self, var: &str) -> Source {
        if self.dotenv.provides(var, self.process) {
            Source::File(self.dotenv.path().to_path_buf())
        } else {
            Source::Env(var.to_string())
        }
    }

    fn row(&mut self, name: &str, value: String, source: &Source) {
        self.rows.push((name.into(), value, source.clone()));
    }

    /// A value from the nearest config file that sets it, with the file's
    /// path.
    fn in_file<T>(&self, value: impl Fn(&FileConfig) -> Option<T>) -> Option<(T, &'a Path)> {
        self.files.value(value)
    }

    /// A number from a flag, the file or the default.
    fn number(
        &self,
        flag: Option<u64>,
        name: &'static str,
        file: impl Fn(&FileConfig) -> Option<u64>,
        default: u64,
    ) -> Sourced<u64> {
        self.pick(flag, name, None, self.in_file(file), default)
    }

    /// The token and cost caps.
    fn spending(&mut self) -> Spending {
        let max_tokens = self.pick(
            self.args.max_tokens_total.map(Some),
            "--max-tokens-total",
            None,
            self.in_file(|f| f.max_tokens_total.map(Some)),
            None,
        );
        self.row(
            "max_tokens_total",
            opt(max_tokens.value),
            &max_tokens.source,
        );
        let max_cost = self.pick(
            self.args.max_cost.map(Some),
            "--max-cost",
            None,
            self.in_file(|f| f.max_cost.map(Some)),
            None,
        );
        self.row("max_cost", opt(max_cost.value), &max_cost.source);
        Spending {
            max_tokens_total: max_tokens.value,
            max_cost: max_cost.value,
        }
    }

    /// A switch from its flag (`Some` when given), the file or `default`,
    /// shown as the row `row`.
    fn switch(
        &mut self,
        row: &str,
        flag: Option<bool>,
        name: &'static str,
        file: impl Fn(&FileConfig) -> Option<bool>,
        default: bool,
    ) -> bool {
        let picked = self.pick(flag, name, None, self.in_file(file), default);
        self.row(row, picked.value.to_string(), &picked.source);
        picked.value
    }

    /// `--offline`, `SWARM_OFFLINE` or `offline = true`.
    fn offline(&mut self) -> bool {
        let flag = self.args.offline.then_some(true);
        self.switch("offline", flag, "--offline", |f| f.offline, false)
    }

    /// `--install-deps`, `SWARM_INSTALL_DEPS` or `install-deps = true`.
    fn install_deps(&mut self) -> bool {
        let flag = self.args.install_deps.then_some(true);
        self.switch(
            "install_deps",
            flag,
            "--install-deps",
            |f| f.install_deps,
            false,
        )
    }

    /// Whether tests may be edited, the size limits per severity,
    /// whether the Tester generates tests, and whether secrets may be sent.
    fn review(&mut self) -> Review {
        let flag = self.args.allow_test_edits.then_some(true);
        let allow_test_edits = self.switch(
            "allow_test_edits",
            flag,
            "--allow-test-edits",
            |f| f.allow_test_edits,
            false,
        );
        let defaults = SizeLimits::default();
        let (limits, source) = match self.in_file(|f| f.size_limits) {
            Some((limits, path)) => (limits, Source::File(path.to_path_buf())),
            None => (SizeLimitsConfig::default(), Source::Default),
        };
        let size_limits = SizeLimits {
            low: limits.low.unwrap_or(defaults.low),
            medium: limits.medium.unwrap_or(defaults.medium),
            high: limits.high.unwrap_or(defaults.high),
            bytes_per_line: limits.bytes_per_line.unwrap_or(defaults.bytes_per_line),
        };
        let shown = format!(
            "low {}, medium {}, high {} lines; {} bytes per line",
            size_limits.low, size_limits.medium, size_limits.high, size_limits.bytes_per_line
        );
        self.row("size_limits", shown, &source);
        let flag = self.args.no_generate_tests.then_some(false);
        let generate_tests = self.switch(
            "generate_tests",
            flag,
            "--no-generate-tests",
            |f| f.generate_tests,
            true,
        );
        let flag = self.args.allow_secrets.then_some(true);
        let allow_secrets = self.switch(
            "allow_secrets",
            flag,
            "--allow-secrets",
            |f| f.allow_secrets,
            false,
        );
        Review {
            allow_test_edits,
            generate_tests,
            size_limits,
            allow_secrets,
        }
    }

    /// The lock wait, the cache folder and the log file.
    fn places(&mut self) -> Places {
        let lock_timeout = self.pick(self.args.lock_timeout, "--lock-timeout", None, None, 60);
        self.row(
            "lock_timeout",
            lock_timeout.value.to_string(),
            &lock_timeout.source,
        );
        let cache_dir = config::cache_dir(self.env);
        let shown = cache_dir
            .as_ref()
            .map(|dir| dir.display().to_string())
            .unwrap_or_else(|| "(none: set SWARM_CACHE_DIR)".into());
        let source = if self.env.var("SWARM_CACHE_DIR").is_some() {
            Source::Env("SWARM_CACHE_DIR".into())
        } else {
            Source::Default
        };
        self.row("cache_dir", shown, &source);
        let log_file = self.pick(
            self.args.log_file.clone(),
            "--log-file",
            None,
            None,
            PathBuf::from("logs/experiment_data.json"),
        );
        self.row(
            "log_file",
            log_file.value.display().to_string(),
            &log_file.source,
        );
        Places {
            log_file: log_file.value,
            cache_dir,
            lock_timeout: Duration::from_secs(lock_timeout.value),
        }
    }
}

/// Marks a default as the one for a local model server.
fn local_default<T>(sourced: Sourced<T>, local: bool) -> Sourced<T> {
    match sourced.source {
        Source::Default if local => Sourced {
            value: sourced.value,
            source: Source::LocalDefault,
        },
        _ => sourced,
    }
}

/// The `SWARM_*` variable a flag's value came from, if it came from one.
fn env_of(args: &RunArgs, flag: &str) -> Option<String> {
    let id = flag.trim_start_matches('-').replace('-', "_");
    args.from_env.get(&id).cloned()
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "none".into())
}
