//! Turns flags, environment and config file into a validated run
//! configuration before any work starts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::RunArgs;
use crate::config::{self, Environment, FileConfig, Source, Sourced};
use crate::error::SwarmError;
use crate::llm::{Price, PriceTable, ProviderConfig, ProviderKind};
use crate::orchestrator::RunConfig;
use crate::stage::budget::{Budget, BudgetSettings};
use crate::stage::judge::Limits;
use crate::stage::reviewer::SizeLimits;
use crate::tools::{ResourceLimits, SandboxPolicy};

/// Everything a run needs, and where each setting came from.
pub struct Resolved {
    pub run: RunConfig,
    pub provider: ProviderConfig,
    pub record: Option<PathBuf>,
    /// (setting, shown value, source) for `swarm config`.
    pub rows: Vec<(String, String, Source)>,
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

/// Resolves the settings of a run.
pub fn resolve(args: &RunArgs, env: &dyn Environment) -> Result<Resolved, SwarmError> {
    let target = check_target(args.target_dir.as_deref())?;
    let (file_path, file) = match config::load_file(&target)? {
        Some((p, f)) => (Some(p), f),
        None => (None, FileConfig::default()),
    };
    let fp = file_path.as_deref();
    let mut rows: Vec<(String, String, Source)> = Vec::new();
    let mut row = |name: &str, value: String, source: &Source| {
        rows.push((name.into(), value, source.clone()))
    };

    // Provider: flag, SWARM_PROVIDER, file, else the one whose key is set.
    let named: Option<Sourced<String>> = if let Some(p) = &args.provider {
        Some(Sourced {
            value: p.clone(),
            source: Source::Flag("--provider"),
        })
    } else if let Some(p) = env.var("SWARM_PROVIDER") {
        Some(Sourced {
            value: p,
            source: Source::Env("SWARM_PROVIDER"),
        })
    } else {
        in_file(fp, file.provider.clone()).map(|(v, p)| Sourced {
            value: v,
            source: Source::File(p.to_path_buf()),
        })
    };
    let provider: Sourced<ProviderKind> = match named {
        Some(s) => Sourced {
            value: config::parse_provider(&s.value)?,
            source: s.source,
        },
        None => match config::detect_provider(env) {
            Some((kind, var)) => Sourced {
                value: kind,
                source: Source::Env(var),
            },
            None => {
                return Err(SwarmError::invalid("no model provider configured")
                    .hint(config::no_provider_hint()))
            }
        },
    };
    let kind = provider.value;
    row("provider", kind.name().to_string(), &provider.source);

    let model = config::pick(
        args.model.clone(),
        "--model",
        env.var("SWARM_MODEL").map(|m| (m, "SWARM_MODEL")),
        in_file(fp, file.model.clone()),
        crate::llm::default_model(kind).to_string(),
    );
    row("model", model.value.clone(), &model.source);

    let base_var = config::base_url_var(kind);
    let base_url = config::pick(
        args.base_url.clone().map(Some),
        "--base-url",
        base_var.and_then(|v| env.var(v).map(|u| (Some(u), v))),
        in_file(fp, file.base_url.clone().map(Some)),
        None,
    );
    row(
        "base_url",
        base_url
            .value
            .clone()
            .unwrap_or_else(|| "(provider default)".into()),
        &base_url.source,
    );

    // A model on this machine or the local network gets slower defaults.
    let local = config::pick(
        args.local_model,
        "--local-model",
        None,
        in_file(fp, file.local_model),
        base_url.value.as_deref().is_some_and(config::is_local_url),
    );
    row("local_model", local.value.to_string(), &local.source);
    let local = local.value;
    let key = config::key_for(kind, env);
    match &key {
        Some((secret, var)) => row("api_key", config::mask(secret), &Source::Env(var)),
        None => row("api_key", "(not set)".into(), &Source::Default),
    }

    let num = |flag: Option<u64>, name: &'static str, file_v: Option<u64>, default: u64| {
        config::pick(flag, name, None, in_file(fp, file_v), default)
    };
    let max_iterations = config::pick(
        args.max_iterations,
        "--max-iterations",
        None,
        in_file(fp, file.max_iterations),
        10,
    );
    let test_timeout = num(args.test_timeout, "--test-timeout", file.test_timeout, 60);
    let test_case_timeout = num(
        args.test_case_timeout,
        "--test-case-timeout",
        file.test_case_timeout,
        crate::tools::DEFAULT_TEST_CASE_TIMEOUT.as_secs(),
    );
    let lint_timeout = num(args.lint_timeout, "--lint-timeout", file.lint_timeout, 30);
    let (timeout_default, max_time_default) = if local { (600, 3_600) } else { (120, 900) };
    let llm_timeout = local_default(
        num(
            args.llm_timeout,
            "--llm-timeout",
            file.llm_timeout,
            timeout_default,
        ),
        local,
    );
    let llm_max_time = local_default(
        num(
            args.llm_max_time,
            "--llm-max-time",
            file.llm_max_time,
            max_time_default,
        ),
        local,
    );
    let retries = config::pick(
        args.retries,
        "--retries",
        None,
        in_file(fp, file.retries),
        4,
    );
    let jobs = config::pick(args.jobs, "--jobs", None, in_file(fp, file.jobs), 1);
    for (name, value, source) in [
        (
            "max_iterations",
            max_iterations.value as u64,
            &max_iterations.source,
        ),
        ("test_timeout", test_timeout.value, &test_timeout.source),
        ("lint_timeout", lint_timeout.value, &lint_timeout.source),
        ("llm_timeout", llm_timeout.value, &llm_timeout.source),
        ("llm_max_time", llm_max_time.value, &llm_max_time.source),
        ("retries", retries.value as u64, &retries.source),
        ("jobs", jobs.value as u64, &jobs.source),
    ] {
        if value == 0 {
            return Err(SwarmError::invalid(format!(
                "{name} must be at least 1 (from {source})"
            )));
        }
        row(name, value.to_string(), source);
    }
    row(
        "test_case_timeout",
        match test_case_timeout.value {
            0 => "0 (off)".to_string(),
            secs => secs.to_string(),
        },
        &test_case_timeout.source,
    );
    let max_tokens = config::pick(
        args.max_tokens_total.map(Some),
        "--max-tokens-total",
        None,
        in_file(fp, file.max_tokens_total.map(Some)),
        None,
    );
    row(
        "max_tokens_total",
        opt(max_tokens.value),
        &max_tokens.source,
    );
    let max_cost = config::pick(
        args.max_cost.map(Some),
        "--max-cost",
        None,
        in_file(fp, file.max_cost.map(Some)),
        None,
    );
    row("max_cost", opt(max_cost.value), &max_cost.source);
    let allow_tests = config::pick(
        args.allow_test_edits.then_some(true),
        "--allow-test-edits",
        None,
        in_file(fp, file.allow_test_edits),
        false,
    );
    row(
        "allow_test_edits",
        allow_tests.value.to_string(),
        &allow_tests.source,
    );
    let defaults = SizeLimits::default();
    let limits = file.size_limits.unwrap_or_default();
    let size_limits = SizeLimits {
        low: limits.low.unwrap_or(defaults.low),
        medium: limits.medium.unwrap_or(defaults.medium),
        high: limits.high.unwrap_or(defaults.high),
        bytes_per_line: limits.bytes_per_line.unwrap_or(defaults.bytes_per_line),
    };
    let limits_source = match (file.size_limits.is_some(), fp) {
        (true, Some(p)) => Source::File(p.to_path_buf()),
        _ => Source::Default,
    };
    row(
        "size_limits",
        format!(
            "low {}, medium {}, high {} lines; {} bytes per line",
            size_limits.low, size_limits.medium, size_limits.high, size_limits.bytes_per_line
        ),
        &limits_source,
    );
    let sandbox = sandbox_policy(args, &file, fp, &target);
    row("sandbox", describe_sandbox(&sandbox.value), &sandbox.source);
    let budget = budget_settings(args, &file, fp, &model.value, local)?;
    row("budget", describe_budget(&budget.value), &budget.source);
    let lock_timeout = config::pick(args.lock_timeout, "--lock-timeout", None, None, 60);
    row(
        "lock_timeout",
        lock_timeout.value.to_string(),
        &lock_timeout.source,
    );
    let cache_dir = config::cache_dir(env);
    row(
        "cache_dir",
        cache_dir
            .as_ref()
            .map(|dir| dir.display().to_string())
            .unwrap_or_else(|| "(none: set SWARM_CACHE_DIR)".into()),
        &if env.var("SWARM_CACHE_DIR").is_some() {
            Source::Env("SWARM_CACHE_DIR")
        } else {
            Source::Default
        },
    );
    let log_file = config::pick(
        args.log_file.clone(),
        "--log-file",
        None,
        None,
        PathBuf::from("logs/experiment_data.json"),
    );
    row(
        "log_file",
        log_file.value.display().to_string(),
        &log_file.source,
    );

    let replay_file = if kind == ProviderKind::Replay {
        let Some(c) = args
            .cassette
            .clone()
            .or_else(|| env.var("SWARM_CASSETTE").map(PathBuf::from))
        else {
            return Err(SwarmError::invalid(
                "--provider replay needs --cassette FILE (a cassette from --record, or an experiment log)",
            ));
        };
        if !c.is_file() {
            return Err(SwarmError::invalid(format!(
                "no such cassette: {}",
                c.display()
            )));
        }
        row(
            "cassette",
            c.display().to_string(),
            &Source::Flag("--cassette"),
        );
        Some(c)
    } else {
        None
    };
    let mut prices = PriceTable::new();
    if let Some(table) = &file.prices {
        for (m, p) in table {
            prices = prices.with_override(m.clone(), Price::new(p.input, p.output));
            row(
                &format!("price {m}"),
                format!("{} / {} USD per Mtok", p.input, p.output),
                &Source::File(fp.map(Path::to_path_buf).unwrap_or_default()),
            );
        }
    }

    let secrets = key.iter().map(|(s, _)| s.clone()).collect();
    let provider_config = ProviderConfig {
        kind,
        model: model.value,
        base_url: base_url.value,
        api_key: key.map(|(s, _)| s),
        timeout: Duration::from_secs(llm_timeout.value),
        max_time: Duration::from_secs(llm_max_time.value),
        max_attempts: retries.value,
        replay_file,
    };
    let run = RunConfig {
        target,
        max_iterations: max_iterations.value,
        limits: Limits {
            tests: Duration::from_secs(test_timeout.value),
            test_case: (test_case_timeout.value > 0)
                .then(|| Duration::from_secs(test_case_timeout.value)),
            lint: Duration::from_secs(lint_timeout.value),
        },
        log_file: log_file.value,
        dry_run: args.dry_run,
        allow_test_edits: allow_tests.value,
        size_limits,
        bootstrap: !args.no_bootstrap,
        jobs: jobs.value,
        max_tokens_total: max_tokens.value,
        max_cost: max_cost.value,
        secrets,
        prices,
        cache_dir,
        lock_timeout: Duration::from_secs(lock_timeout.value),
        sandbox: sandbox.value,
        budget: budget.value,
        preflight: (!args.no_preflight && kind != ProviderKind::Replay)
            .then(|| provider_config.clone()),
    };
    Ok(Resolved {
        run,
        provider: provider_config,
        record: args.record.clone(),
        rows,
    })
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

/// The sandbox policy: `--no-sandbox` over `[sandbox]` over the defaults.
fn sandbox_policy(
    args: &RunArgs,
    file: &FileConfig,
    fp: Option<&Path>,
    target: &Path,
) -> Sourced<SandboxPolicy> {
    let table = file.sandbox.clone().unwrap_or_default();
    // A size in MiB from the file; 0 means no limit.
    let limit = |value: Option<u64>, scale: u64, default: Option<u64>| match value {
        Some(0) => None,
        Some(n) => Some(n.saturating_mul(scale)),
        None => default,
    };
    let defaults = ResourceLimits::default();
    let mib = 1024 * 1024;
    let policy = SandboxPolicy {
        // The run's worktree and scratch folder are filled in when they exist.
        writable: Vec::new(),
        readable: table
            .read_paths
            .unwrap_or_default()
            .into_iter()
            .map(|p| target.join(p))
            .collect(),
        limits: ResourceLimits {
            address_space: limit(table.memory_mb, mib, defaults.address_space),
            file_size: limit(table.file_size_mb, mib, defaults.file_size),
            processes: limit(table.processes, 1, defaults.processes),
            ..defaults
        },
        isolate: !args.no_sandbox && table.enabled.unwrap_or(true),
        scratch_parent: None,
    };
    let source = if args.no_sandbox {
        Source::Flag("--no-sandbox")
    } else {
        match fp {
            Some(p) if file.sandbox.is_some() => Source::File(p.to_path_buf()),
            _ => Source::Default,
        }
    };
    Sourced {
        value: policy,
        source,
    }
}

/// `on: memory 4096 MiB, files 1024 MiB, 1024 processes` or `off (...)`.
fn describe_sandbox(policy: &SandboxPolicy) -> String {
    if !policy.isolate {
        return "off: environment allow-list and parent-death signal only".into();
    }
    let mib = |v: Option<u64>| {
        v.map_or("unlimited".to_string(), |b| {
            format!("{} MiB", b / (1024 * 1024))
        })
    };
    let mut text = format!(
        "on: memory {}, files {}, {} processes",
        mib(policy.limits.address_space),
        mib(policy.limits.file_size),
        policy
            .limits
            .processes
            .map_or("unlimited".to_string(), |n| n.to_string())
    );
    if !policy.readable.is_empty() {
        let paths: Vec<String> = policy
            .readable
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        text.push_str(&format!("; also readable: {}", paths.join(", ")));
    }
    text
}

/// A file value with the file's path, when there is a file.
/// The prompt allowances from `--context-window`, `context-window` and
/// `[budget]`, checked against the model's window now, before anything runs.
fn budget_settings(
    args: &RunArgs,
    file: &FileConfig,
    fp: Option<&Path>,
    model: &str,
    local: bool,
) -> Result<Sourced<BudgetSettings>, SwarmError> {
    let window = config::pick(
        args.context_window.map(Some),
        "--context-window",
        None,
        in_file(fp, file.context_window.map(Some)),
        None,
    );
    let table = file.budget.unwrap_or_default();
    let defaults = if local {
        BudgetSettings::local()
    } else {
        BudgetSettings::default()
    };
    let settings = BudgetSettings {
        context_window: window.value,
        plan_tokens: table.plan_tokens.unwrap_or(defaults.plan_tokens),
        fix_tokens: table.fix_tokens.unwrap_or(defaults.fix_tokens),
        test_tokens: table.test_tokens.unwrap_or(defaults.test_tokens),
        local,
    };
    if settings.context_window == Some(0) {
        return Err(SwarmError::invalid(
            "context-window must be a positive number of tokens",
        ));
    }
    Budget::new(&settings, model).map_err(|e| SwarmError::invalid(e.to_string()))?;
    let source = match (&window.source, file.budget.is_some(), fp) {
        (Source::Default, true, Some(p)) => Source::File(p.to_path_buf()),
        (Source::Default, false, _) if local => Source::LocalDefault,
        (source, _, _) => source.clone(),
    };
    Ok(Sourced {
        value: settings,
        source,
    })
}

fn describe_budget(settings: &BudgetSettings) -> String {
    let window = settings
        .context_window
        .map(|w| format!("window {w} tokens"))
        .unwrap_or_else(|| "window of the model (built-in when known)".into());
    let replies = if settings.local {
        "; short replies (local model)"
    } else {
        ""
    };
    format!(
        "{window}; prompts: plan {}, fix {}, tests {} tokens{replies}",
        settings.plan_tokens, settings.fix_tokens, settings.test_tokens
    )
}

fn in_file<T>(fp: Option<&Path>, v: Option<T>) -> Option<(T, &Path)> {
    v.and_then(|v| fp.map(|p| (v, p)))
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "none".into())
}
