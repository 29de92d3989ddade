//! The settings that bound what a run may take: counts and time limits,
//! the sandbox policy and the prompt budget, each with the line `swarm
//! config` shows for it.

use std::path::Path;

use std::time::Duration;

use super::{local_default, Resolver, RunArgs};
use crate::config::{self, ConfigFiles, Source, Sourced};
use crate::error::SwarmError;
use crate::stage::budget::{Budget, BudgetSettings};
use crate::stage::judge::Limits;
use crate::tools::{ResourceLimits, SandboxPolicy};

/// The sandbox policy: `--no-sandbox` over `[sandbox]` over the defaults.
pub(super) fn sandbox_policy(
    args: &RunArgs,
    files: &ConfigFiles,
    target: &Path,
) -> Sourced<SandboxPolicy> {
    let file = files.value(|f| f.sandbox.clone());
    let table = file.as_ref().map(|(t, _)| t.clone()).unwrap_or_default();
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
        super::env_of(args, "--no-sandbox").map_or(Source::Flag("--no-sandbox"), Source::Env)
    } else {
        match file {
            Some((_, path)) => Source::File(path.to_path_buf()),
            None => Source::Default,
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
    files: &ConfigFiles,
    model: &str,
    local: bool,
) -> Result<Sourced<BudgetSettings>, SwarmError> {
    let window = config::pick(
        args.context_window.map(Some),
        "--context-window",
        None,
        files.value(|f| f.context_window.map(Some)),
        None,
    );
    let budget = files.value(|f| f.budget);
    let table = budget.map(|(t, _)| t).unwrap_or_default();
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
    let source = match (&window.source, budget) {
        (Source::Default, Some((_, path))) => Source::File(path.to_path_buf()),
        (Source::Default, None) if local => Source::LocalDefault,
        (source, _) => source.clone(),
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

/// Counts and time limits, each checked to be at least 1 (0 turns the
/// per-test limit off).
pub(super) struct Counts {
    pub max_iterations: u32,
    pub limits: Limits,
    pub llm_timeout: u64,
    pub llm_max_time: u64,
    pub retries: u32,
    pub jobs: usize,
}

impl Resolver<'_> {
    /// How long one model request may stay silent and take in all: a local
    /// model's defaults are longer.
    fn model_times(&self, local: bool) -> (Sourced<u64>, Sourced<u64>) {
        let args = self.args;
        let (timeout_default, max_time_default) = if local { (600, 3_600) } else { (120, 900) };
        let llm_timeout = self.number(
            args.llm_timeout,
            "--llm-timeout",
            |f| f.llm_timeout,
            timeout_default,
        );
        let llm_max_time = self.number(
            args.llm_max_time,
            "--llm-max-time",
            |f| f.llm_max_time,
            max_time_default,
        );
        (
            local_default(llm_timeout, local),
            local_default(llm_max_time, local),
        )
    }

    /// Iterations, time limits, retries and jobs.
    pub(super) fn counts(&mut self, local: bool) -> Result<Counts, SwarmError> {
        let args = self.args;
        let max_iterations = self.pick(
            args.max_iterations,
            "--max-iterations",
            None,
            self.in_file(|f| f.max_iterations),
            10,
        );
        let test_timeout = self.number(args.test_timeout, "--test-timeout", |f| f.test_timeout, 60);
        let test_case_timeout = self.number(
            args.test_case_timeout,
            "--test-case-timeout",
            |f| f.test_case_timeout,
            crate::tools::DEFAULT_TEST_CASE_TIMEOUT.as_secs(),
        );
        let lint_timeout = self.number(args.lint_timeout, "--lint-timeout", |f| f.lint_timeout, 30);
        let (llm_timeout, llm_max_time) = self.model_times(local);
        let retries = self.pick(
            args.retries,
            "--retries",
            None,
            self.in_file(|f| f.retries),
            4,
        );
        let jobs = self.pick(args.jobs, "--jobs", None, self.in_file(|f| f.jobs), 1);
        for (name, value, source) in [
            (
                "max_iterations",
                u64::from(max_iterations.value),
                &max_iterations.source,
            ),
            ("test_timeout", test_timeout.value, &test_timeout.source),
            ("lint_timeout", lint_timeout.value, &lint_timeout.source),
            ("llm_timeout", llm_timeout.value, &llm_timeout.source),
            ("llm_max_time", llm_max_time.value, &llm_max_time.source),
            ("retries", u64::from(retries.value), &retries.source),
            ("jobs", jobs.value as u64, &jobs.source),
        ] {
            if value == 0 {
                return Err(SwarmError::invalid(format!(
                    "{name} must be at least 1 (from {source})"
                )));
            }
            self.row(name, value.to_string(), source);
        }
        let shown = match test_case_timeout.value {
            0 => "0 (off)".to_string(),
            secs => secs.to_string(),
        };
        self.row("test_case_timeout", shown, &test_case_timeout.source);
        Ok(Counts {
            max_iterations: max_iterations.value,
            limits: Limits {
                tests: Duration::from_secs(test_timeout.value),
                test_case: (test_case_timeout.value > 0)
                    .then(|| Duration::from_secs(test_case_timeout.value)),
                lint: Duration::from_secs(lint_timeout.value),
            },
            llm_timeout: llm_timeout.value,
            llm_max_time: llm_max_time.value,
            retries: retries.value,
            jobs: jobs.value,
        })
    }
}
