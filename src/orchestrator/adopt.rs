//! What the Judge's verdict leaves behind, past the measurement: the
//! behaviour check of the changed modules no test reaches and the held-out
//! tests (either may still refuse an attempt the tests accept), and an
//! accepted change made the
//! run's best state, with what verified each file it changed. Called by
//! `attempt` once an attempt is measured; it judges nothing itself.

use super::record::Recorder;
use super::{RunContext, RunState};
use crate::error::SwarmError;
use crate::git::RunWorkspace;
use crate::pipeline::{Change, RepoPath, Snapshot, Verdict};
use crate::stage::judge::behaviour::{self, BehaviourRun, ChangedModule, Verification};

/// Makes an accepted change the run's best state: what it touched, what
/// verified it, and the files it added.
pub(super) fn adopt(
    state: &mut RunState,
    change: &Change,
    best: Snapshot,
    behaviour: Option<&BehaviourRun>,
    files: Vec<String>,
    (suites, root): (&[Box<dyn crate::lang::Suite>], &std::path::Path),
) {
    let progress = &mut state.progress;
    progress.best = best;
    progress.accepted += 1;
    progress
        .touched
        .extend(change.writes.iter().map(|w| RepoPath::new(w.path.as_str())));
    state.work.declined.clear();
    if let Some(run) = behaviour {
        for file in change
            .files
            .iter()
            .filter(|f| crate::lang::beyond::checks(f))
        {
            progress_verified(state, file, run.verification(file));
        }
    }
    for file in change.files.iter() {
        if let Some(language) = crate::lang::beyond::not_available(file) {
            let language = language.name().to_string();
            progress_verified(state, file, Verification::NotAvailable { language });
        }
    }
    let changed: Vec<String> = change.files.iter().map(|f| f.to_string()).collect();
    for suite in suites {
        for (file, tools) in suite.verified_by(root, &changed, &files) {
            progress_verified(state, &file, Verification::LanguageTools { tools });
        }
    }
    state.facts.files = files;
}

/// The Judge's behaviour check (see [`behaviour`]) of the changed
/// modules no test reaches, against their text at the best state.
fn check_behaviour(
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
            let best = String::from_utf8_lossy(&bytes).into_owned();
            let original = super::reference::original_for(state, file, best);
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

/// What the Judge tells of the type errors a change adds (`; adds 1 type
/// error: src/a.ts:3 TS2322 …`), or nothing.
fn type_errors_note(best: &Snapshot, new: &Snapshot) -> String {
    let added = crate::pipeline::bar::added_type_errors(&best.lint.messages, &new.lint.messages);
    if added.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = added
        .iter()
        .take(5)
        .map(|m| {
            let text = m.message.trim_end_matches('.');
            format!("{}:{} {} {text}", m.path, m.line, m.symbol)
        })
        .collect();
    format!("; adds {} type error(s): {}", added.len(), shown.join("; "))
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

/// The Judge's verdict once it looked beyond the tests, what the
/// behaviour check ran on, and what the Fixer is told of it (`; …`, or
/// empty).
pub(super) struct Beyond {
    pub verdict: Verdict,
    pub behaviour: Option<BehaviourRun>,
    pub note: String,
}

/// What the Judge checks of a change the tests would accept: the behaviour
/// of modules no test reaches (see [`judge::behaviour`]), then the
/// held-out tests that apply to it (see [`super::held_out`]). A regression
/// found by either makes the verdict `regressed`; a held-out failure is
/// kept for the summary.
pub(super) fn beyond_tests(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    (change, snapshot, files): (&Change, &Snapshot, &[String]),
    (verdict, k, stage): (Verdict, u32, &str),
) -> Result<Beyond, SwarmError> {
    if !verdict.is_accepted() {
        return Ok(Beyond {
            verdict,
            behaviour: None,
            note: type_errors_note(&state.progress.best, snapshot),
        });
    }
    let behaviour = check_behaviour(cx, ws, state, change, (snapshot, files), stage)?;
    let (mut verdict, mut note) = (verdict, String::new());
    if let Some(check) = &behaviour.check {
        rec.behaviour(check, k)?;
        verdict = state.facts.bar.after_behaviour(verdict, check.outcome);
        note = format!("; {}", check.describe());
    }
    if verdict.is_accepted() {
        let checks = super::held_out::check(cx, ws, rec, state, (change, snapshot), (k, stage))?;
        for check in checks.iter().filter(|c| c.is_failed()) {
            verdict = Verdict::Regressed;
            note.push_str(&format!("; {}", check.fixer_note()));
            state
                .progress
                .overfitted
                .extend(super::held_out::overfit_of(check, k));
        }
    }
    Ok(Beyond {
        verdict,
        behaviour: Some(behaviour),
        note,
    })
}
