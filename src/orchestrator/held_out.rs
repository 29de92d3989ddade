//! Held-out tests in the run (see [`held_out`]): after the plan and the
//! Tester, before the first round, each module the failing tests point at
//! (at most [`held_out::MAX_MODULES`]) gets tests of the same behaviour on
//! other inputs; the candidate file is put in the worktree at the original
//! code, validated, and removed again. The kept tests live in the run's
//! state only: every accepted attempt they apply to runs them (the file is
//! written into the worktree for that run and removed right after), and
//! one that fails them is not accepted — the log and the summary name the
//! visible tests it was fitted to, the Fixer is told without being shown
//! them. Nothing of them is committed or delivered.
//!
//! Off with `--no-generate-tests`; in a replayed run the model is asked
//! only when the recording holds the request (recorded replies are handed
//! out in order otherwise: a run recorded without them replays as it was);
//! not asked once the run's token or cost budget is spent.

use std::time::Instant;

use super::record::Recorder;
use super::{RunContext, RunState};
use crate::error::SwarmError;
use crate::git::{FileWrite, RunWorkspace};
use crate::log::Event;
use crate::pipeline::{Change, Snapshot, TestCase};
use crate::stage::tester::held_out::{self, HeldOut, HeldOutCheck, Origin, Overfit};
use crate::stage::tester::Generated;
use crate::stage::{is_test_path, reach, read_source_text};

/// Asks for, validates and keeps the held-out tests of the modules the
/// best state's failing tests point at.
pub(super) async fn generate(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
) -> Result<(), SwarmError> {
    if !cx.config.generate_tests {
        return Ok(());
    }
    let failing: Vec<TestCase> = state.progress.best.failing().to_vec();
    if failing.is_empty() {
        return Ok(());
    }
    let read = |p: &str| read_source_text(cx.root, p);
    let broken = state.progress.best.broken_files();
    let modules: Vec<String> = reach::implicated_files(&failing, &state.facts.files, &read, &[])
        .into_iter()
        .filter(|f| !is_test_path(f) && crate::lang::beyond::checks(f) && !broken.contains(f))
        .take(held_out::MAX_MODULES)
        .collect();
    for file in modules {
        if super::over_budget(cx.config, &state.spend) {
            // The run stops at its budget: no request past it.
            break;
        }
        let Some((generated, held)) = generate_for(cx, ws, rec, state, &file, &failing).await?
        else {
            continue;
        };
        rec.held_out(&generated)?;
        if let Some(held) = held {
            cx.events.emit(Event::Notice {
                message: format!(
                    "held-out: {} test(s) of {} kept to check every fix (never shown to the Fixer)",
                    held.tests.len(),
                    held.file
                ),
            });
            state.progress.held_out.push(held);
        }
    }
    Ok(())
}

/// The record of `file` when the Tester is not asked, and why.
fn skipped(file: &str, why: &str) -> (Generated, Option<HeldOut>) {
    let mut generated = held_out::prepare(file, "", &[]);
    generated.note = Some(format!("no held-out tests: {why}"));
    (generated, None)
}

/// Asks for the held-out tests of `file` and validates them at the
/// original code; `None` when a replayed run's recording does not hold the
/// request (a run recorded before held-out tests existed replays as it
/// was, its log included).
async fn generate_for(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    file: &str,
    failing: &[TestCase],
) -> Result<Option<(Generated, Option<HeldOut>)>, SwarmError> {
    let read = |p: &str| read_source_text(cx.root, p);
    let Some(text) = read(file) else {
        return Ok(Some(skipped(file, "the module could not be read")));
    };
    let concerning: Vec<(TestCase, Option<String>)> =
        reach::failures_for(failing, file, &state.facts.files, &read)
            .into_iter()
            .take(held_out::MAX_FAILING_SHOWN)
            .map(|case| (case.clone(), held_out::test_code(case, &read)))
            .collect();
    // Owned, so the request does not hold the run's state while it is asked.
    let plan_item = state.work.plan.items.get(file).cloned();
    let ask = held_out::Ask {
        file,
        text: &text,
        plan_item: plan_item.as_deref(),
        failing: &concerning,
        allowance: cx.budget.tests,
    };
    if !cx.model.holds_reply_for(&held_out::request(&ask)) {
        return Ok(None);
    }
    let asked = held_out::ask(cx.model.as_ref(), &ask);
    let reply = match super::tests_asked::ask_tester(cx, rec, state, file, asked).await? {
        Ok(reply) => reply,
        Err(why) => return Ok(Some(skipped(file, &why))),
    };
    let visible: Vec<String> = concerning.iter().filter_map(|(_, c)| c.clone()).collect();
    let mut generated = held_out::prepare(file, &reply, &visible);
    if generated.kept() > 0 {
        super::tests_asked::write_candidate(ws, state, &generated)?;
        let exceptions = held_out::bug_exceptions(&concerning);
        let checked = tokio::task::block_in_place(|| {
            held_out::validate(
                cx.tools("validating held-out tests"),
                cx.root,
                &mut generated,
                &exceptions,
                cx.config.limits,
                cx.cancel,
            )
        });
        // The worktree goes back to the original code whatever the run gave.
        let reset = ws.reset_to(ws.best());
        checked?;
        reset?;
    }
    let ids = concerning.iter().map(|(c, _)| c.id.clone()).collect();
    let held = HeldOut::from_generated(&generated, Origin::FailingTests, ids);
    Ok(Some((generated, held)))
}

/// The generated tests of a module that did not compile, validated against
/// its reference, as a held-out suite every change to it must pass.
pub(super) fn keep_reference_tests(state: &mut RunState, generated: &Generated) -> Option<usize> {
    let mut held = HeldOut::from_generated(generated, Origin::Reference, Vec::new())?;
    held.test_file = held_out::held_out_path(&held.file);
    let count = held.tests.len();
    state.progress.held_out.push(held);
    Some(count)
}

/// Runs every held-out suite that applies to the attempt `k` (which
/// changes `change` and measured `measured`) with the Judge's `tools`,
/// each written into the worktree only while it runs; what each said,
/// logged.
pub(super) fn check(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &RunState,
    (change, measured): (&Change, &Snapshot),
    (k, tools): (u32, crate::stage::judge::Tools<'_>),
) -> Result<Vec<HeldOutCheck>, SwarmError> {
    let green = state.facts.bar.is_green(measured);
    let newly_passing: Vec<String> = match (&measured.tests, &state.progress.best.tests) {
        (Some(now), Some(best)) => now.passed.difference(&best.passed).cloned().collect(),
        _ => Vec::new(),
    };
    let changed: Vec<&str> = change.files.iter().map(|f| f.as_str()).collect();
    let mut checks = Vec::new();
    for held in state
        .progress
        .held_out
        .iter()
        .filter(|h| h.applies(&changed, green))
    {
        let path = state.facts.target.repo_path(&held.test_file).into_string();
        ws.write_files(&[FileWrite {
            path: path.clone(),
            content: Some(held.source.clone().into_bytes()),
        }])?;
        let started = Instant::now();
        let ran = tokio::task::block_in_place(|| {
            held_out::run(tools, cx.root, held, cx.config.limits, cx.cancel)
        });
        // Out of the worktree before anything else reads it.
        ws.write_files(&[FileWrite {
            path,
            content: None,
        }])?;
        let cases = ran?;
        let seconds = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        let check = held_out::judge(held, &cases, green, &newly_passing, seconds);
        rec.held_out_check(&check, k)?;
        checks.push(check);
    }
    Ok(checks)
}

/// What a failed held-out check of attempt `k` leaves for the summary.
pub(super) fn overfit_of(check: &HeldOutCheck, k: u32) -> Option<Overfit> {
    (check.is_failed() && check.origin == Origin::FailingTests).then(|| Overfit {
        attempt: k,
        file: check.file.clone(),
        overfitted_to: check.overfitted_to.clone(),
        failed: check.failed.iter().map(|f| f.test.clone()).collect(),
    })
}
