//! What the Judge's verdict leaves behind, past the measurement: the
//! behaviour check of the changed modules no test reaches (which may still
//! refuse an attempt the tests accept), and an accepted change made the
//! run's best state, with what verified each file it changed. Called by
//! `attempt` once an attempt is measured; it judges nothing itself.

use super::{RunContext, RunState};
use crate::error::SwarmError;
use crate::git::RunWorkspace;
use crate::pipeline::{Change, RepoPath, Snapshot};
use crate::stage::judge::behaviour::{self, BehaviourRun, ChangedModule, Verification};
use crate::tools::imports::is_importable_module;

/// Makes an accepted change the run's best state: what it touched, what
/// verified it, and the files it added.
pub(super) fn adopt(
    state: &mut RunState,
    change: &Change,
    best: Snapshot,
    behaviour: Option<&BehaviourRun>,
    files: Vec<String>,
) {
    let progress = &mut state.progress;
    progress.best = best;
    progress.accepted += 1;
    progress
        .touched
        .extend(change.writes.iter().map(|w| RepoPath::new(w.path.as_str())));
    state.work.declined.clear();
    if let Some(run) = behaviour {
        for file in change.files.iter().filter(|f| is_importable_module(f)) {
            progress_verified(state, file, run.verification(file));
        }
    }
    state.facts.files = files;
}

/// The Judge's behaviour check (see [`behaviour`]) of the changed
/// modules no test reaches, against their text at the best state.
pub(super) fn check_behaviour(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    state: &RunState,
    change: &Change,
    (snapshot, files): (&Snapshot, &[String]),
    stage: &str,
) -> Result<BehaviourRun, SwarmError> {
    let read = |p: &str| crate::stage::read_source_text(cx.root, p);
    let untested = behaviour::untested_modules(
        &change.files,
        files,
        &state.facts.tests,
        snapshot.has_tests(),
        &read,
    );
    let mut modules = Vec::new();
    for file in &untested {
        let path = state.facts.target.repo_path(file);
        if let Some(bytes) = ws.file_at_best(&path)? {
            let original = String::from_utf8_lossy(&bytes).into_owned();
            let file = file.clone();
            modules.push(ChangedModule { file, original });
        }
    }
    let check = if modules.is_empty() {
        None
    } else {
        Some(tokio::task::block_in_place(|| {
            behaviour::check(
                cx.tools(stage),
                cx.root,
                &modules,
                files,
                cx.config.limits,
                cx.cancel,
            )
        })?)
    };
    Ok(BehaviourRun { untested, check })
}

/// Records what verified the accepted change to `file`.
fn progress_verified(state: &mut RunState, file: &str, how: Verification) {
    let how = match state.progress.generated.get(file) {
        Some(generated) if how == Verification::ExistingTests && generated.kept() > 0 => {
            Verification::GeneratedTests {
                kept: generated.kept(),
                discarded: generated.discarded(),
                reasons: generated.reasons(),
            }
        }
        _ => how,
    };
    state.progress.verified.insert(file.to_string(), how);
}
