//! The Tester's place in the run: after the plan and before the rounds,
//! each plan file no test reaches gets generated tests ([`tester`]); the
//! candidate file is put in the worktree at the original code, validated,
//! and removed again; the kept tests of every module are committed in one
//! attempt commit of their own (trailer `Swarm-Generated-Tests: <n>`) and
//! become the best state, so the Judge's existing-tests path judges every
//! Fixer attempt with them.
//!
//! A test set aside for failing on the original code is shown to the
//! Fixer as a failing test marked as possible evidence ([`evidence_for`]);
//! after the rounds it is committed only when the delivered code makes it
//! pass and the plan calls what it tests a bug (or a docstring example of
//! the original shows its call and result), else discarded
//! ([`settle_evidence`]).
//!
//! Off with `--no-generate-tests` (nothing asked, nothing logged). Not
//! asked, with a log entry saying why: in a replayed run (recorded replies
//! are handed out in order, so a request the recording never saw would
//! take another call's reply), and for a module that does not compile or
//! import as it is (its tests could not run) — unless it has a reference
//! (the smallest repair that lets it parse, see `super::reference`): then
//! its tests are validated against that and held out, never committed.

use std::time::Instant;

use super::record::Recorder;
use super::timing::AttemptTimes;
use super::{RunContext, RunState};
use crate::error::SwarmError;
use crate::git::{FileWrite, RunWorkspace};
use crate::llm::ProviderKind;
use crate::log::{Agent, Event};
use crate::pipeline::{RepoPath, Verdict};
use crate::stage::executor::{self, AttemptRecord};
use crate::stage::judge;
use crate::stage::judge::behaviour::Verification;
use crate::stage::read_source_text;
use crate::stage::tester::{self, Generated};

/// Generates, validates and commits tests for the plan's untested files.
pub(super) async fn generate(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
) -> Result<(), SwarmError> {
    if !cx.config.generate_tests {
        return Ok(());
    }
    let planned: Vec<String> = state.work.pending_plan.keys().cloned().collect();
    let read = |p: &str| read_source_text(cx.root, p);
    let subjects: Vec<String> = tester::subjects(
        &planned,
        &state.facts.files,
        &state.facts.tests,
        state.progress.best.has_tests(),
        &read,
    )
    .into_iter()
    .filter(|f| place_for(state, f).is_none_or(|place| !state.facts.files.contains(&place)))
    .collect();
    if subjects.is_empty() {
        return Ok(());
    }
    if cx.model.kind() == ProviderKind::Replay {
        // Said in the log only: a replayed run's output stays as recorded.
        for file in subjects {
            rec.tester(&skipped(
                &file,
                "a replayed run answers from its recording in order, so the Tester is not asked",
            ))?;
        }
        return Ok(());
    }
    let broken = state.progress.best.broken_files();
    let mut done = Vec::new();
    for file in subjects {
        if let Some(reference) = state.progress.references.get(&file).cloned() {
            against_reference(cx, ws, rec, state, &file, &reference).await?;
            continue;
        }
        if broken.contains(&file) {
            let skipped = skipped(&file, "the module does not compile or import as it is");
            rec.tester(&skipped)?;
            done.push(skipped);
            continue;
        }
        if place_for(state, &file).is_none() {
            let skipped = skipped(&file, crate::stage::tester::NO_PLACE_FOR_TESTS);
            rec.tester(&skipped)?;
            done.push(skipped);
            continue;
        }
        if let Some(generated) = generate_for(cx, ws, rec, state, &file).await? {
            rec.tester(&generated)?;
            cx.events.emit(Event::Notice {
                message: format!("tests: {}", generated.describe()),
            });
            done.push(generated);
        }
    }
    let kept_any = done.iter().any(|g| g.kept() > 0);
    if !deliver(cx, ws, rec, state, &mut done)? && kept_any {
        // What the log said before the commit was refused no longer holds.
        for generated in &done {
            rec.tester(generated)?;
        }
    }
    for generated in done {
        state
            .progress
            .generated
            .insert(generated.file.clone(), generated);
    }
    Ok(())
}

/// Where the generated tests of `file` go so that the project's pytest
/// collects them (see [`crate::tools::TestFiles::place_for`]); `None` when
/// no new file would be collected.
fn place_for(state: &RunState, file: &str) -> Option<String> {
    let stem = tester::module_of(file).replace('.', "_");
    state.facts.tests.place_for(&stem)
}

/// The tests of a module that does not compile, validated against its
/// reference (its text made to parse, see `super::reference`), which is
/// put in the worktree for the while. They cannot pass on the best state,
/// so they are not committed: they are held out, and every change to the
/// module must pass them (see [`super::held_out`]).
async fn against_reference(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    file: &str,
    reference: &crate::stage::repair::Reference,
) -> Result<(), SwarmError> {
    let module = FileWrite {
        path: state.facts.target.repo_path(file).into_string(),
        content: Some(reference.text.clone().into_bytes()),
    };
    ws.write_files(&[module])?;
    let generated = generate_for(cx, ws, rec, state, file).await;
    ws.reset_to(ws.best())?;
    let Some(mut generated) = generated? else {
        return Ok(());
    };
    if let Some(count) = super::held_out::keep_reference_tests(state, &generated) {
        generated.note = Some(format!(
            "{count} generated test(s) validated against the syntax repair of {file}, held out \
             to check every change to it (not committed: the module does not compile as it is)"
        ));
        cx.events.emit(Event::Notice {
            message: format!("tests: {}", generated.describe()),
        });
    }
    rec.tester(&generated)
}

/// The Tester's record of `file` when the model is not asked, and why.
fn skipped(file: &str, why: &str) -> Generated {
    let mut generated = tester::prepare(file, "");
    generated.note = Some(format!("no tests generated: {why}"));
    generated
}

/// Asks for and validates the tests of `file`; `None` when the file
/// cannot be read.
async fn generate_for(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    file: &str,
) -> Result<Option<Generated>, SwarmError> {
    let Some(text) = read_source_text(cx.root, file) else {
        return Ok(None);
    };
    let sources: Vec<(String, String)> = state
        .facts
        .sources()
        .into_iter()
        .filter_map(|f| read_source_text(cx.root, &f).map(|t| (f, t)))
        .collect();
    let sites = tester::call_sites(file, &text, &sources);
    // Owned, so the request does not hold the run's state while it is asked.
    let plan_item = state.work.plan.items.get(file).cloned();
    let ask = tester::Ask {
        file,
        text: &text,
        plan_item: plan_item.as_deref(),
        call_sites: &sites,
        allowance: cx.budget.tests,
    };
    let asked = tester::ask(cx.model.as_ref(), &ask);
    let reply = match super::tests_asked::ask_tester(cx, rec, state, file, asked).await? {
        Ok(reply) => reply,
        Err(why) => return Ok(Some(skipped(file, &why))),
    };
    let mut generated = tester::prepare(file, &reply);
    if let Some(place) = place_for(state, file) {
        generated.test_file = place;
    }
    if generated.kept() == 0 {
        return Ok(Some(generated));
    }
    super::tests_asked::write_candidate(ws, state, &generated)?;
    let validating = Instant::now();
    let checked = tokio::task::block_in_place(|| {
        tester::run::check(
            cx.tools("validating generated tests"),
            cx.root,
            &mut generated,
            cx.config.limits,
            cx.cancel,
        )
    });
    rec.charge_judge(validating.elapsed());
    // The worktree goes back to the original code whatever the run gave.
    let reset = ws.reset_to(ws.best());
    checked?;
    reset?;
    if generated.kept() == 0 {
        generated.note = Some(format!(
            "no tests kept: all {} generated test(s) failed validation",
            generated.tests.len()
        ));
    }
    Ok(Some(generated))
}

/// Commits the kept tests of `done` in one attempt commit that becomes the
/// best state, when together they pass on the original code; `Ok(false)`
/// when nothing was committed (the tests that were kept are then marked
/// discarded, with the reason).
fn deliver(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    done: &mut [Generated],
) -> Result<bool, SwarmError> {
    let target = state.facts.target.clone();
    let kept: Vec<(&Generated, String)> = done
        .iter()
        .filter_map(|g| {
            g.kept_text(&tester::module_of(&g.file))
                .map(|text| (g, text))
        })
        .collect();
    if kept.is_empty() {
        return Ok(false);
    }
    let started = Instant::now();
    let writes: Vec<FileWrite> = kept
        .iter()
        .map(|(g, text)| FileWrite {
            path: target.repo_path(&g.test_file).into_string(),
            content: Some(text.clone().into_bytes()),
        })
        .collect();
    ws.write_files(&writes)?;
    let apply = started.elapsed();
    let mut files = state.facts.files.clone();
    for (g, _) in &kept {
        if !files.contains(&g.test_file) {
            files.push(g.test_file.clone());
        }
    }
    let started = Instant::now();
    let measured = measure_written(cx, ws, &files)?;
    let judge_time = started.elapsed();
    let k = state.progress.commits.len() as u32 + 1;
    rec.measurement(Agent::Judge, &measured, Some(k))?;
    let passes = state.facts.bar.all_tests_pass(&measured.snapshot);
    if !passes {
        ws.reset_to(ws.best())?;
        set_back(cx, done, &measured.snapshot.describe());
        return Ok(false);
    }
    let names = commit_tests(
        cx,
        ws,
        rec,
        state,
        &kept,
        &writes,
        &measured,
        (apply, judge_time),
    )?;
    state.progress.best = measured.snapshot;
    let names: Vec<RepoPath> = names.into_iter().map(RepoPath::new).collect();
    state.progress.touched.extend(names.iter().cloned());
    state.progress.generated_files.extend(names);
    state.facts.files = files;
    Ok(true)
}

/// The Judge's measurement of the worktree with the generated tests
/// written into it (`files`, target-relative, includes them); a tool that
/// fails puts the worktree back to the best state first.
fn measure_written(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    files: &[String],
) -> Result<crate::pipeline::Measurement, SwarmError> {
    let measured = tokio::task::block_in_place(|| {
        judge::measure(
            cx.tools("judging the generated tests"),
            cx.root,
            files,
            cx.config.limits,
            cx.cancel,
            None,
        )
    });
    match measured {
        Ok(m) => Ok(m),
        Err(e) => {
            ws.reset_to(ws.best())?;
            Err(e.into())
        }
    }
}

/// The kept tests did not pass together on the original code: none of the
/// new ones is committed, each with that reason.
fn set_back(cx: &RunContext<'_>, done: &mut [Generated], measured: &str) {
    let why = format!(
        "together with the other kept tests it does not pass on the original code ({measured}): not committed"
    );
    // After the rounds only the set-aside tests are new: the others
    // are committed already.
    let settling = done
        .iter()
        .any(|g| g.tests.iter().any(|t| t.kept && t.fails_on_original));
    for fate in done.iter_mut().flat_map(|g| g.tests.iter_mut()) {
        if fate.kept && (!settling || fate.fails_on_original) {
            fate.kept = false;
            fate.reason = Some(why.clone());
        }
    }
    cx.events.emit(Event::Notice {
        message: format!("generated tests not committed: {why}"),
    });
}

/// Commits the kept tests written in `writes` (measured green) as an
/// attempt with a `Swarm-Generated-Tests` trailer, makes it the best state,
/// and logs it; returns the committed paths. `times` are the write's and
/// the Judge's.
#[allow(clippy::too_many_arguments)]
fn commit_tests(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    kept: &[(&Generated, String)],
    writes: &[FileWrite],
    measured: &crate::pipeline::Measurement,
    (apply, judge_time): (std::time::Duration, std::time::Duration),
) -> Result<Vec<String>, SwarmError> {
    let k = state.progress.commits.len() as u32 + 1;
    let count: usize = kept.iter().map(|(g, _)| g.kept()).sum();
    let names: Vec<String> = writes.iter().map(|w| w.path.clone()).collect();
    let lines: usize = kept.iter().map(|(_, text)| text.lines().count()).sum();
    let summary = format!(
        "add {count} generated characterization test(s) of {}",
        kept.iter()
            .map(|(g, _)| g.file.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut message = executor::commit_message(&AttemptRecord {
        run_id: &state.facts.run_id,
        iteration: state.progress.iterations,
        attempt: k,
        model: &state.facts.model_id,
        summary: &summary,
        file: &names.join(", "),
        verdict: Verdict::Improved,
        baseline: &state.facts.baseline,
        result: &measured.snapshot,
        changed_lines: lines,
    });
    message.push_str(&format!("Swarm-Generated-Tests: {count}\n"));
    let committing = Instant::now();
    let commit = ws.commit_attempt(k, writes, &message)?;
    ws.advance_best(&commit)?;
    let commit_time = committing.elapsed();
    let resetting = Instant::now();
    ws.reset_to(&commit)?;
    let times = AttemptTimes {
        apply,
        judge: judge_time,
        commit: commit_time,
        worktree: resetting.elapsed(),
        ..AttemptTimes::default()
    };
    let diff: String = writes
        .iter()
        .map(|w| {
            let text = String::from_utf8_lossy(w.content.as_deref().unwrap_or_default());
            swarm_patch::unified_diff(&w.path, "", &text)
        })
        .collect();
    rec.commit(
        &names.join(", "),
        k,
        &commit.0,
        &message,
        &diff,
        Verdict::Improved,
        times,
    )?;
    cx.events.emit(Event::Notice {
        message: format!(
            "tests: {count} generated test(s) committed ({})",
            names.join(", ")
        ),
    });
    state.progress.commits.push(commit.0.clone());
    Ok(names)
}

/// After the rounds: each test set aside for failing on the original code
/// is run on the best state. It is committed (with the file's kept tests)
/// when it passes there and the plan calls what it tests a bug or a
/// docstring of the original shows its call and result; otherwise
/// it is discarded, with the reason logged.
pub(super) fn settle_evidence(
    cx: &RunContext<'_>,
    ws: &mut RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
) -> Result<(), SwarmError> {
    let files: Vec<String> = state
        .progress
        .generated
        .iter()
        .filter(|(_, g)| !g.set_aside().is_empty())
        .map(|(f, _)| f.clone())
        .collect();
    let mut changed = Vec::new();
    for file in files {
        let mut generated = state.progress.generated[&file].clone();
        let aside = generated.set_aside();
        let started = Instant::now();
        let verdicts = if state.progress.verified.contains_key(&file) {
            rerun_on_best(cx, ws, state, &generated, &aside)?
        } else {
            aside
                .iter()
                .map(|t| {
                    (
                        t.clone(),
                        Some("no accepted change touched the file".to_string()),
                    )
                })
                .collect()
        };
        generated.seconds += (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        let plan_item = state.work.plan.items.get(&file).cloned();
        let original = ws
            .file_at_base(&state.facts.target.repo_path(&file))?
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        for (test, failed) in verdicts {
            let intended = generated.intended(&test, plan_item.as_deref(), original.as_deref());
            generated.settle(&test, failed, intended);
        }
        changed.push(generated);
    }
    let gained = changed
        .iter()
        .any(|g| g.tests.iter().any(|t| t.kept && t.fails_on_original));
    if gained {
        deliver(cx, ws, rec, state, &mut changed)?;
    }
    for generated in changed {
        rec.tester(&generated)?;
        // What verified the file now counts the settled tests.
        if let Some(how @ Verification::GeneratedTests { .. }) =
            state.progress.verified.get_mut(&generated.file)
        {
            *how = Verification::GeneratedTests {
                kept: generated.kept(),
                discarded: generated.discarded(),
                reasons: generated.reasons(),
            };
        }
        state
            .progress
            .generated
            .insert(generated.file.clone(), generated);
    }
    Ok(())
}

/// Runs the set-aside tests `aside` (with the file's kept ones) on the
/// best state; the worktree goes back to it after.
fn rerun_on_best(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    state: &RunState,
    generated: &Generated,
    aside: &[String],
) -> Result<std::collections::BTreeMap<String, Option<String>>, SwarmError> {
    let module = tester::module_of(&generated.file);
    let names: std::collections::BTreeSet<&str> = generated
        .tests
        .iter()
        .filter(|t| t.kept || t.fails_on_original)
        .map(|t| t.test.as_str())
        .collect();
    let trial = FileWrite {
        path: state
            .facts
            .target
            .repo_path(&generated.test_file)
            .into_string(),
        content: Some(generated.text_with(&module, &names).into_bytes()),
    };
    ws.write_files(&[trial])?;
    let verdicts = tokio::task::block_in_place(|| {
        tester::run::rerun(
            cx.tools("settling set-aside generated tests"),
            cx.root,
            &generated.test_file,
            aside,
            cx.config.limits,
            cx.cancel,
        )
    });
    let reset = ws.reset_to(ws.best());
    let verdicts = verdicts?;
    reset?;
    Ok(verdicts)
}
