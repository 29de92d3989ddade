//! The settings that bound what the code under test and the prompts may
//! take: the sandbox policy and the prompt budget, each with the line
//! `swarm config` shows for it.

use std::path::Path;

use super::{in_file, RunArgs};
use crate::config::{self, FileConfig, Source, Sourced};
use crate::error::SwarmError;
use crate::stage::budget::{Budget, BudgetSettings};
use crate::tools::{ResourceLimits, SandboxPolicy};

/// The sandbox policy: `--no-sandbox` over `[sandbox]` over the defaults.
pub(super) fn sandbox_policy(
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
pub(super) fn describe_sandbox(policy: &SandboxPolicy) -> String {
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

/// The prompt allowances from `--context-window`, `context-window` and
/// `[budget]`, checked against the model's window now, before anything runs.
pub(super) fn budget_settings(
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

pub(super) fn describe_budget(settings: &BudgetSettings) -> String {
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
