//! The Auditor's stage in the run: the files, their metrics and the
//! baseline (reused from an earlier run on the same tree when the cache
//! holds it), logged and told; which files are tests (the project's pytest
//! configuration and the baseline's collection); and, before any model
//! call, that the baseline's test suite ran at all. A suite that could not
//! run in this environment (a plugin, a module, the project itself not
//! installed, a usage error) stops the run with what is missing and how to
//! get it (see [`crate::tools::suite`]); a collection error in the
//! project's own code is left for the Fixer, as any failing test. Without
//! tests, the import checks stand in: a module the code imports that is not
//! installed stops the run the same way.

use super::record::Recorder;
use super::{setup, Facts, Progress, RunContext, RunState, Spend, Work};
use crate::error::SwarmError;
use crate::git::RunWorkspace;
use crate::log::Event;
use crate::pipeline::{Bar, Measurement, TargetDir};
use crate::stage::baseline_cache::{BaselineCache, BaselineKey, KeyInputs};
use crate::stage::{auditor, executor};
use crate::tools::TestFiles;

/// `Err` naming what the environment lacks when the baseline's test run
/// could not run the suite; `worktree` is the run's worktree (the project's
/// declarations are looked for from the target up to it).
fn ensure_suite_runs(
    cx: &RunContext<'_>,
    worktree: &std::path::Path,
    baseline: &Measurement,
    files: &[String],
    tests: &TestFiles,
) -> Result<(), SwarmError> {
    let found = crate::lang::suite_cannot_run(cx.suites, cx.root, worktree, baseline, files, tests);
    match found {
        Some(missing) => Err(missing.into()),
        None => Ok(()),
    }
}

/// The Auditor's stage: the files, their metrics and the baseline (reused
/// from an earlier run on the same tree when the cache holds it), logged
/// and reported; the run's state starts from it.
pub(super) fn audit(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    rec: &mut Recorder<'_>,
    scope: setup::Scope,
) -> Result<RunState, SwarmError> {
    let setup::Scope {
        run_id,
        target,
        files,
        submodules,
    } = scope;
    let cache = cx.config.cache_dir.as_deref().map(BaselineCache::new);
    let reuse = cache
        .as_ref()
        .zip(baseline_key(cx, ws, &target, &files))
        .map(|(cache, key)| auditor::BaselineReuse {
            cache,
            key,
            run_id: &run_id,
            worktree: ws.path(),
        });
    let known = executor::worktree_content(ws, &target)?;
    let audit = tokio::task::block_in_place(|| {
        auditor::audit(
            cx.tools_knowing("audit", &known),
            cx.root,
            files,
            cx.config.limits,
            cx.cancel,
            reuse.as_ref(),
            &auditor::MetricsCache::new(cx.config.cache_dir.as_deref()),
        )
    })?;
    rec.metrics(&audit.metrics)?;
    rec.measurement(crate::log::Agent::Auditor, &audit.baseline, None)?;
    tell_audit(cx, &audit);
    let tests =
        TestFiles::read(cx.root, ws.path()).with_collected(audit.baseline.test_run.as_ref());
    ensure_suite_runs(cx, ws.path(), &audit.baseline, &audit.files, &tests)?;
    let snapshot = audit.baseline.snapshot;
    Ok(RunState {
        facts: Facts {
            run_id,
            model_id: cx.model.model().to_string(),
            target,
            files: audit.files,
            submodules,
            metrics: audit.metrics,
            severities: audit.severities,
            bar: Bar::of(&snapshot),
            baseline: snapshot.clone(),
            tests,
        },
        work: Work::default(),
        progress: Progress::starting_at(snapshot),
        spend: Spend::default(),
    })
}

/// Everything the baseline depends on, hashed: the key of a cached
/// baseline (`None` when the tree id cannot be read, which only means no
/// reuse).
fn baseline_key(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    target: &TargetDir,
    files: &[String],
) -> Option<BaselineKey> {
    if !crate::lang::baselines_reusable(cx.suites) {
        // Other runners' tools and the user's installed dependencies are
        // not in the key: their baselines are measured every run.
        return None;
    }
    let tree = ws.base_tree_id("").ok().flatten()?;
    let policy = &cx.config.sandbox;
    Some(
        KeyInputs {
            tree: &tree,
            target_rel: target.as_str(),
            files,
            empty_submodules: ws.empty_submodules(),
            env: cx.env,
            limits: cx.config.limits,
            sandbox: cx.sandbox.report(),
            resource_limits: &format!("{:?}", policy.limits),
            isolate: policy.isolate,
        }
        .key(),
    )
}

/// Tells the user what the audit found: a reused baseline, pylint's notes,
/// the counts.
fn tell_audit(cx: &RunContext<'_>, audit: &auditor::Audit) {
    if let Some((earlier, when)) = &audit.reused_from {
        cx.events.emit(Event::Notice {
            message: format!(
                "baseline: reused from an earlier run on the same tree (run {earlier}, measured {when}): {} not run again",
                crate::lang::tools_of(&audit.files, " and ")
            ),
        });
    }
    let snapshot = &audit.baseline.snapshot;
    for note in &snapshot.lint.notes {
        cx.events.emit(Event::Notice {
            message: format!("{}: {note}", crate::lang::linters_of(&audit.files, " and ")),
        });
    }
    cx.events.emit(Event::Audited {
        files: audit.files.len(),
        language: crate::lang::names_of(&audit.files),
        linter: crate::lang::linters_of(&audit.files, " and "),
        tests_passed: snapshot.counts().0,
        tests_total: snapshot.counts().1,
        no_tests: !snapshot.has_tests(),
        lint_score: snapshot.lint_score,
    });
}
