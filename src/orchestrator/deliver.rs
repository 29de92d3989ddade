//! The end of a run: what happens to the user's branch (fast-forwarded,
//! left with the command that takes it, or nothing to take), the exit
//! code that follows, and the summary.
//!
//! The user's checkout is written here and nowhere else, and only through
//! [`Repo::fast_forward`], which checks first, shields the merge from
//! signals and verifies after.

use super::record::Recorder;
use super::summary::Safety;
use super::{Delivery, FinalCheck, RunConfig, RunState, StopReason, Summary, TestCount};
use crate::cancel::Cancel;
use crate::error::{ExitKind, SwarmError};
use crate::git::{CommitId, FastForward, Repo};
use crate::pipeline::Snapshot;

/// How the loop ended, with everything the summary reports.
pub(crate) struct Ending {
    pub state: RunState,
    pub stop: StopReason,
    /// The best state measured with the base commit's harness.
    pub final_check: Option<FinalCheck>,
    pub safety: Safety,
    /// The run branch, `swarm/<run>/best`; `None` when the run accepted
    /// nothing and the branch was deleted.
    pub branch: Option<String>,
    /// Its tip: the best state.
    pub best: CommitId,
    /// How many secrets were withheld from the model, and where.
    pub secrets: crate::secrets::Report,
}

/// Fast-forwards (or not) and builds the summary.
pub(crate) fn deliver(
    config: &RunConfig,
    repo: &Repo,
    start: &CommitId,
    ending: Ending,
    cancel: &Cancel,
    rec: &mut Recorder<'_>,
) -> Result<Summary, SwarmError> {
    let green =
        ending.state.deliverable() && ending.final_check.as_ref().is_none_or(|check| check.passed);
    let interrupted = ending.stop == StopReason::Interrupted || cancel.is_cancelled();
    let delivery = match &ending.branch {
        Some(branch) if interrupted => left(branch, "the run was interrupted"),
        // Interrupted with nothing accepted: nothing to take.
        None if interrupted => Delivery::NotAccepted,
        _ if !green => Delivery::NotAccepted,
        _ if &ending.best == start => Delivery::Unchanged,
        Some(branch) if config.dry_run => left(branch, "dry run: the target was not updated"),
        Some(branch) => fast_forward(repo, start, &ending.best, branch, &ending.state)?,
        // No branch means nothing was accepted: the best state is the start.
        None => Delivery::Unchanged,
    };
    let improved = green && &ending.best != start;
    let exit = match ending.stop {
        _ if matches!(delivery, Delivery::Failed { .. }) => ExitKind::Git,
        StopReason::Interrupted => ExitKind::Interrupted,
        _ if interrupted && !matches!(delivery, Delivery::Updated { .. }) => ExitKind::Interrupted,
        StopReason::ModelFailure if !improved => ExitKind::Llm,
        _ if green => ExitKind::Success,
        _ => ExitKind::GaveUp,
    };
    let no_reference = unreferenced_changes(&ending.state);
    let mut summary = summary_of(config, ending, delivery, exit);
    summary.time = rec.run_time();
    if exit == ExitKind::Success && !no_reference.is_empty() {
        summary.status = "success_unverified";
    }
    summary.no_reference = no_reference;
    rec.system_end(&summary)?;
    Ok(summary)
}

/// Moves the user's branch to the best state, when git finds that safe.
fn fast_forward(
    repo: &Repo,
    start: &CommitId,
    best: &CommitId,
    branch: &str,
    state: &RunState,
) -> Result<Delivery, SwarmError> {
    let touched: Vec<String> = state
        .progress
        .touched
        .iter()
        .map(|p| p.to_string())
        .collect();
    // The merge cannot be interrupted half way (see git::fastforward);
    // a Ctrl-C that arrives during it takes effect after it.
    let outcome = tokio::task::block_in_place(|| repo.fast_forward(start, best, branch, &touched))?;
    Ok(match outcome {
        FastForward::Updated {
            branch, to, undo, ..
        } => Delivery::Updated {
            branch,
            commit: to.0,
            undo,
        },
        FastForward::NothingToDo => Delivery::Unchanged,
        FastForward::Skipped { reason, command } => Delivery::Left { reason, command },
        FastForward::Failed { reason, command } => Delivery::Failed { reason, command },
    })
}

/// What the run reports: the state reached, the delivery and the exit.
fn summary_of(config: &RunConfig, ending: Ending, delivery: Delivery, exit: ExitKind) -> Summary {
    let Ending {
        state,
        stop,
        final_check,
        safety,
        branch,
        secrets,
        ..
    } = ending;
    let count = |s: &Snapshot| {
        let (passed, total) = s.counts();
        TestCount { passed, total }
    };
    // Held-out tests are written for a fix of failing tests; a file fixed
    // without any that held is said to be checked by the visible tests only.
    let unguarded: Vec<String> = if state.facts.baseline.failing().is_empty() {
        Vec::new()
    } else {
        let guarded = |f: &String| state.progress.held_out.iter().any(|h| &h.file == f);
        state
            .progress
            .verified
            .keys()
            .filter(|f| !guarded(f))
            .cloned()
            .collect()
    };
    Summary {
        status: status_of(exit),
        exit_code: exit.code(),
        exit,
        run_id: state.facts.run_id.clone(),
        branch: branch.clone().unwrap_or_default(),
        stop_reason: stop,
        verified_by_tests: state.progress.best.has_tests(),
        verification: state.progress.verified.clone(),
        generated_tests: state
            .progress
            .generated
            .iter()
            .map(|(file, g)| (file.clone(), g.report()))
            .collect(),
        tests_before: count(&state.facts.baseline),
        tests_after: count(&state.progress.best),
        lint_before: state.facts.baseline.lint_score,
        lint_after: state.progress.best.lint_score,
        linter: crate::lang::linters_of(&state.facts.files, " and "),
        iterations: state.progress.iterations,
        attempts: state.progress.commits.len() as u32,
        accepted: state.progress.accepted,
        commits: state.progress.commits,
        tokens: state.spend,
        coverage: state.work.coverage.summary(),
        tasks: state.work.tasks.as_ref().map(super::task::TaskBook::report),
        delivery,
        inspect: match &branch {
            Some(branch) => format!("git log {branch}"),
            None => format!("git log --branches='swarm/{}/*'", state.facts.run_id),
        },
        log_file: config.log_file.display().to_string(),
        dry_run: config.dry_run,
        final_check,
        safety,
        left_out: state.progress.left_out,
        replies: super::summary::Replies {
            would_help: state.progress.replies.advice().map(str::to_string),
            ..state.progress.replies
        },
        unguarded,
        time: super::summary::RunTime::default(),
        secrets,
        overfitted: state.progress.overfitted,
        hard_coded: state.progress.hard_coded,
        no_reference: Vec::new(),
    }
}

/// The changed modules of the best state that did not compile and got no
/// reference, so only compiling and importing verified them.
fn unreferenced_changes(state: &RunState) -> Vec<String> {
    use crate::stage::judge::behaviour::Verification;
    state
        .progress
        .verified
        .iter()
        .filter(|(file, how)| {
            state.progress.unreferenced.contains(*file)
                && matches!(how, Verification::CompilesAndImportsOnly { .. })
        })
        .map(|(file, _)| file.clone())
        .collect()
}

/// Left on the run branch, with the command that takes it.
fn left(branch: &str, reason: &str) -> Delivery {
    Delivery::Left {
        reason: reason.to_string(),
        command: crate::git::take_command(branch),
    }
}

/// The summary's `status` for an exit kind.
fn status_of(exit: ExitKind) -> &'static str {
    match exit {
        ExitKind::Git => "delivery_failed",
        ExitKind::Success => "success",
        ExitKind::Interrupted => "interrupted",
        ExitKind::Llm => "model_failure",
        _ => "gave_up",
    }
}
