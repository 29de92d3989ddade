//! The groups a run's settings resolve into, and the [`RunConfig`] they
//! make, for an online and an offline run alike.

use std::path::PathBuf;
use std::time::Duration;

use super::limits::Counts;
use crate::cli::RunArgs;
use crate::llm::PriceTable;
use crate::orchestrator::{ProposalSource, RunConfig};
use crate::stage::budget::BudgetSettings;
use crate::stage::reviewer::SizeLimits;
use crate::tools::SandboxPolicy;

/// What the run may spend.
pub(super) struct Spending {
    pub(super) max_tokens_total: Option<u64>,
    pub(super) max_cost: Option<f64>,
}

/// What the Reviewer lets through.
pub(super) struct Review {
    pub(super) allow_test_edits: bool,
    /// Whether the Tester generates tests.
    pub(super) generate_tests: bool,
    pub(super) size_limits: SizeLimits,
    /// `--allow-secrets`: the code's secrets are sent as they are.
    pub(super) allow_secrets: bool,
}

/// Where the run keeps things, and how long it waits for another run.
pub(super) struct Places {
    pub(super) log_file: PathBuf,
    pub(super) cache_dir: Option<PathBuf>,
    pub(super) lock_timeout: Duration,
}

/// The settings an online and an offline run resolve alike.
pub(super) struct Shared {
    pub(super) counts: Counts,
    pub(super) spending: Spending,
    pub(super) review: Review,
    pub(super) sandbox: SandboxPolicy,
    pub(super) budget: BudgetSettings,
    pub(super) places: Places,
    pub(super) prices: PriceTable,
}

impl Shared {
    /// The run's configuration with no key to hide, no preflight and the
    /// model's proposals (each caller sets what differs).
    pub(super) fn into_run(self, args: &RunArgs, target: PathBuf) -> RunConfig {
        RunConfig {
            target,
            max_iterations: self.counts.max_iterations,
            limits: self.counts.limits,
            log_file: self.places.log_file,
            dry_run: args.dry_run,
            allow_test_edits: self.review.allow_test_edits,
            generate_tests: self.review.generate_tests,
            allow_secrets: self.review.allow_secrets,
            size_limits: self.review.size_limits,
            bootstrap: !args.no_bootstrap,
            install_deps: false,
            jobs: self.counts.jobs,
            max_tokens_total: self.spending.max_tokens_total,
            max_cost: self.spending.max_cost,
            secrets: Vec::new(),
            prices: self.prices,
            cache_dir: self.places.cache_dir,
            lock_timeout: self.places.lock_timeout,
            sandbox: self.sandbox,
            budget: self.budget,
            preflight: None,
            proposals: ProposalSource::Model,
            task: None,
        }
    }
}
