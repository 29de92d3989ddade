//! The Auditor: finds the target's Python files, measures them (tree-sitter
//! metrics), takes the baseline (pytest, pylint) through the Judge's
//! measurement, and grades each file's severity. What the plan shows of all
//! this is the Planner's business.

use std::collections::BTreeMap;
use std::path::Path;

use super::baseline_cache::{BaselineCache, BaselineKey};
use super::judge::{self, Limits};
use crate::cancel::Cancel;
use crate::pipeline::LintMessage;
use crate::pipeline::Measurement;
use crate::tools::ToolError;
use swarm_analysis::{FileMetrics, Severity};

mod metrics_cache;
pub use metrics_cache::MetricsCache;

/// What the audit found.
pub struct Audit {
    /// The target's Python files, target-relative, sorted.
    pub files: Vec<String>,
    /// Metrics of every file that could be read.
    pub metrics: BTreeMap<String, FileMetrics>,
    /// pytest (or import checks) and pylint of the starting state.
    pub baseline: Measurement,
    /// Each file's severity: its metrics', raised by pylint errors.
    pub severities: BTreeMap<String, Severity>,
    /// Set when the baseline came from the cache: the run that measured it
    /// and when (RFC 3339).
    pub reused_from: Option<(String, String)>,
}

/// Where the audit may find its baseline and keep it (see
/// [`super::baseline_cache`]).
pub struct BaselineReuse<'a> {
    pub cache: &'a BaselineCache,
    /// Everything the baseline depends on, hashed.
    pub key: BaselineKey,
    /// This run, recorded with a stored baseline.
    pub run_id: &'a str,
    /// The run's worktree (stored paths are moved to it).
    pub worktree: &'a Path,
}

/// Audits `files` (target-relative) in `root`: metrics (from `metrics` for
/// the files `tools.known` names unchanged), then the baseline,
/// from `reuse`'s cache when it holds one (and kept there otherwise).
pub fn audit(
    tools: judge::Tools<'_>,
    root: &Path,
    files: Vec<String>,
    limits: Limits,
    cancel: &Cancel,
    reuse: Option<&BaselineReuse<'_>>,
    metrics: &MetricsCache,
) -> Result<Audit, ToolError> {
    // The metrics (parsing every file not in their cache) are made while
    // pytest and pylint take the baseline: neither waits for the other.
    let (metrics, measured) = std::thread::scope(|scope| {
        let metrics = scope.spawn(|| {
            let _step = tools.step("metrics");
            metrics.measure(root, &files, tools.known)
        });
        let measured = baseline(tools, root, &files, limits, cancel, reuse);
        let metrics = metrics
            .join()
            .expect("measuring metrics does not panic: parse errors are values");
        (metrics, measured)
    });
    let (baseline, reused_from) = measured?;
    let severities = files
        .iter()
        .map(|f| {
            let lint = lint_for(&baseline.snapshot.lint.messages, f);
            (f.clone(), severity(metrics.get(f), &lint))
        })
        .collect();
    Ok(Audit {
        files,
        metrics,
        baseline,
        severities,
        reused_from,
    })
}

/// The baseline from `reuse`'s cache when it holds one, else measured
/// (and kept there).
fn baseline(
    tools: judge::Tools<'_>,
    root: &Path,
    files: &[String],
    limits: Limits,
    cancel: &Cancel,
    reuse: Option<&BaselineReuse<'_>>,
) -> Result<(Measurement, Option<(String, String)>), ToolError> {
    if let Some(hit) = reuse.and_then(|r| r.cache.load(&r.key, r.worktree, root, files)) {
        return Ok((hit.measurement, Some((hit.run_id, hit.measured_at))));
    }
    let measured = judge::measure(tools, root, files, limits, cancel, None)?;
    if let Some(r) = reuse {
        r.cache.store(&r.key, &measured, r.run_id, r.worktree);
    }
    Ok((measured, None))
}

/// The file's severity: its metrics', raised to at least medium when pylint
/// reports errors in it.
pub fn severity(metrics: Option<&FileMetrics>, lint: &[&LintMessage]) -> Severity {
    let base = metrics.map(|m| m.severity).unwrap_or(Severity::Medium);
    if lint.iter().any(|m| m.kind.is_error()) {
        base.max(Severity::Medium)
    } else {
        base
    }
}

/// pylint messages for one target-relative file.
pub fn lint_for<'a>(messages: &'a [LintMessage], file: &str) -> Vec<&'a LintMessage> {
    messages
        .iter()
        .filter(|m| m.path.trim_start_matches("./") == file)
        .collect()
}
