//! The Judge's part of an attempt: the change written into the worktree
//! and measured, its verdict asked of the run's bar for the attempt's
//! purpose ([`crate::pipeline::Bar::judge`]), then what is checked beyond
//! the tests — for a repair the behaviour of changed modules no test
//! reaches and the held-out tests (see `super::super::held_out`), for a
//! behaviour-preserving task the public names — each finding handed to the
//! bar again. It runs the checks and logs them; it decides nothing itself.

use std::time::{Duration, Instant};

use super::Purpose;
use crate::error::SwarmError;
use crate::git::RunWorkspace;
use crate::lang;
use crate::log::Agent;
use crate::orchestrator::record::Recorder;
use crate::orchestrator::timing::AttemptTimes;
use crate::orchestrator::{RunContext, RunState};
use crate::pipeline::{Change, Snapshot, Task, TaskKind, Verdict};
use crate::stage::executor;
use crate::stage::judge::answers::{self, HardCoded};
use crate::stage::judge::api::{self, ApiCheck};
use crate::stage::judge::behaviour::{self, BehaviourRun, ChangedModule};
use crate::stage::judge::exports;
use crate::stage::judge::{self as stage_judge, Tools};

/// What the Judge made of an attempt.
pub(super) struct Judgement {
    /// The state measured with the change.
    pub result: Snapshot,
    pub verdict: Verdict,
    /// What the checks beyond the tests found, as told with the tests
    /// (`; …`, or empty).
    pub note: String,
    /// Why, in one line for the Fixer's next prompt.
    pub why: String,
    /// What the behaviour check ran on (a repair the tests accept).
    pub behaviour: Option<BehaviourRun>,
    /// The source files of the target with the change.
    pub files: Vec<String>,
    /// The files whose error-class messages rose with it.
    pub risen: Vec<String>,
    /// A task's conflict with the tests: the line that stops the run.
    pub conflict: Option<String>,
    /// Writing and judging; the rest is filled in by the commit.
    pub times: AttemptTimes,
}

/// Writes `change` (proposed for `file`) into the worktree, measures it,
/// and has the bar and the checks beyond the tests judge attempt `k`.
pub(super) fn judge(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    purpose: Purpose<'_>,
    (file, change): (&str, &Change),
    k: u32,
) -> Result<Judgement, SwarmError> {
    let stage = purpose.stage(k, file);
    let started = Instant::now();
    executor::write_to_worktree(ws, change)?;
    let apply = started.elapsed();
    let files = files_after(state, change);
    let started = Instant::now();
    let (measured, tools) = measured(cx, ws, state, purpose, (&files, &stage))?;
    let measuring = started.elapsed();
    let judging = Instant::now();
    rec.measurement(Agent::Judge, &measured, Some(k))?;
    let mut snapshot = measured.snapshot;
    let bar = &state.facts.bar;
    let verdict = match purpose {
        Purpose::Task(_) if cx.config.allow_test_edits => {
            let rewritten = rewritten_tests(change);
            let verdict = bar.task_verdict_rewriting(&state.progress.best, &snapshot, &rewritten);
            // The tests this change or an earlier task removed on purpose
            // are not missing, and not counted.
            let mut retired = rewritten;
            if let Some(book) = &state.work.tasks {
                retired.extend(book.rewritten_tests());
            }
            if let Some(tests) = snapshot.tests.as_mut() {
                tests.retire(&retired);
            }
            verdict
        }
        _ => bar.judge(purpose.judging(), &state.progress.best, &snapshot),
    };
    let checked = (change, &snapshot, files.as_slice());
    let found = match purpose {
        Purpose::Repair => beyond_repair(cx, ws, rec, state, checked, (verdict, k, tools))?,
        Purpose::Task(task) => beyond_task(cx, ws, rec, state, task, checked, (verdict, k, tools))?,
    };
    let best = &state.progress.best;
    let risen = crate::pipeline::bar::risen_errors(best, &snapshot);
    let risen: Vec<String> = risen.iter().map(|m| m.path.clone()).collect();
    let why = found
        .why
        .unwrap_or_else(|| format!("{}{}", snapshot.describe(), found.note));
    let times = AttemptTimes {
        review: Duration::ZERO,
        apply,
        // The measurement and the checks beyond the tests.
        judge: measuring + judging.elapsed(),
        commit: Duration::ZERO,
        worktree: Duration::ZERO,
    };
    Ok(Judgement {
        result: snapshot,
        verdict: found.verdict,
        note: found.note,
        why,
        behaviour: found.behaviour,
        files,
        risen,
        conflict: found.conflict,
        times,
    })
}

/// The test files a task's change writes (with `--allow-test-edits`).
pub(super) fn rewritten_tests(change: &Change) -> Vec<String> {
    change
        .files
        .iter()
        .filter(|f| lang::is_test(f))
        .map(|f| f.to_string())
        .collect()
}

/// The measurement of the worktree as it is, and the tools the checks
/// beyond the tests run with: a repair's measurement may stop early once
/// it cannot be better (see `stage::judge::early`); a task's runs the full
/// suite.
fn measured<'t>(
    cx: &'t RunContext<'_>,
    ws: &RunWorkspace,
    state: &RunState,
    purpose: Purpose<'_>,
    (files, stage): (&[String], &'t str),
) -> Result<(crate::pipeline::Measurement, Tools<'t>), SwarmError> {
    let known = executor::worktree_content(ws, &state.facts.target)?;
    // The measurement knows the worktree's files by their blob ids.
    let (tools, measuring) = (cx.tools(stage), cx.tools_knowing(stage, &known));
    let (root, limits, cancel) = (cx.root, cx.config.limits, cx.cancel);
    let baseline = state.facts.baseline.tests.as_ref();
    let best = &state.progress.best;
    let measured = tokio::task::block_in_place(|| match purpose {
        Purpose::Repair => {
            stage_judge::measure_attempt(measuring, root, files, limits, cancel, baseline, best)
        }
        Purpose::Task(_) => stage_judge::measure(measuring, root, files, limits, cancel, baseline),
    })?;
    Ok((measured, tools))
}

/// The source files of the target once `change` is applied: those it
/// deletes gone, those it creates added.
fn files_after(state: &RunState, change: &Change) -> Vec<String> {
    let deleted: Vec<&str> = change
        .writes
        .iter()
        .zip(&change.files)
        .filter(|(w, _)| w.content.is_none())
        .map(|(_, f)| f.as_str())
        .collect();
    let mut files: Vec<String> = state
        .facts
        .files
        .iter()
        .filter(|f| !deleted.contains(&f.as_str()))
        .cloned()
        .collect();
    for f in &change.files {
        if lang::is_source(f) && !deleted.contains(&f.as_str()) && !files.iter().any(|g| f == g) {
            files.push(f.to_string());
        }
    }
    files
}

/// The verdict once the Judge looked beyond the tests, and what it found.
struct Beyond {
    verdict: Verdict,
    behaviour: Option<BehaviourRun>,
    /// What is told with the tests (`; …`, or empty).
    note: String,
    /// Why it is not accepted, when that replaces the tests' account.
    why: Option<String>,
    /// A task's conflict with the tests: the line that stops the run.
    conflict: Option<String>,
}

/// What the Judge checks of a repair the tests would accept: the behaviour
/// of modules no test reaches (see [`behaviour`]), then the held-out tests
/// that apply to it; a held-out failure is kept for the summary. Of one
/// the tests refuse, the type errors it adds.
fn beyond_repair(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    (change, snapshot, files): (&Change, &Snapshot, &[String]),
    (verdict, k, tools): (Verdict, u32, Tools<'_>),
) -> Result<Beyond, SwarmError> {
    if !verdict.is_accepted() {
        let note = type_errors_note(&state.progress.best, snapshot);
        return Ok(Beyond {
            verdict,
            behaviour: None,
            note,
            why: None,
            conflict: None,
        });
    }
    let behaviour = check_behaviour(cx, ws, state, change, (snapshot, files), tools)?;
    let (mut verdict, mut note) = (verdict, String::new());
    if let Some(check) = &behaviour.check {
        rec.behaviour(check, k)?;
        verdict = state.facts.bar.after_behaviour(verdict, check.outcome);
        note = format!("; {}", check.describe());
    }
    if verdict.is_accepted() {
        let held = crate::orchestrator::held_out::check(
            cx,
            ws,
            rec,
            state,
            (change, snapshot),
            (k, tools),
        )?;
        for check in held.iter().filter(|c| c.is_failed()) {
            verdict = state.facts.bar.after_held_out(verdict, true);
            note.push_str(&format!("; {}", check.fixer_note()));
            let overfit = crate::orchestrator::held_out::overfit_of(check, k);
            state.progress.overfitted.extend(overfit);
        }
    }
    for found in literal_answers(cx, ws, state, change, k)? {
        rec.literal_answers(&found)?;
        verdict = state.facts.bar.after_literal_answers(verdict, true);
        note.push_str(&format!("; {}", found.fixer_note()));
        state.progress.hard_coded.push(found);
    }
    Ok(Beyond {
        verdict,
        behaviour: Some(behaviour),
        note,
        why: None,
        conflict: None,
    })
}

/// The literal answers the change adds, per module, for the inputs of the
/// best state's failing tests (see [`answers`]).
fn literal_answers(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    state: &RunState,
    change: &Change,
    k: u32,
) -> Result<Vec<HardCoded>, SwarmError> {
    let read = |p: &str| crate::stage::read_source_text(cx.root, p);
    let tests: Vec<String> = state
        .progress
        .best
        .failing()
        .iter()
        .filter_map(|case| crate::stage::tester::held_out::test_code(case, &read))
        .collect();
    let mut found = Vec::new();
    if tests.is_empty() {
        return Ok(found);
    }
    let modules = change
        .files
        .iter()
        .filter(|f| lang::beyond::checks(f) && !lang::is_test(f));
    for file in modules {
        let path = state.facts.target.repo_path(file).into_string();
        let Some(after) = change.writes.iter().find(|w| w.path == path) else {
            continue;
        };
        let Some(after) = after.content.as_deref() else {
            continue;
        };
        let before = ws.file_at_best(&path)?.unwrap_or_default();
        let texts = (
            String::from_utf8_lossy(&before),
            String::from_utf8_lossy(after),
        );
        found.extend(answers::hard_coded(
            file.as_str(),
            k,
            (&texts.0, &texts.1),
            &tests,
        ));
    }
    Ok(found)
}

/// What the Judge finds of a task's change beyond the tests: what it lost
/// and whether it conflicts with the tests (decided by
/// [`crate::pipeline::task::test_conflict`]); of a behaviour-preserving
/// task's change the tests and lint accept, the public names of the
/// modules it touched.
fn beyond_task(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    rec: &mut Recorder<'_>,
    state: &RunState,
    task: &Task,
    (change, snapshot, files): (&Change, &Snapshot, &[String]),
    (verdict, k, tools): (Verdict, u32, Tools<'_>),
) -> Result<Beyond, SwarmError> {
    let best = &state.progress.best;
    let broken = crate::stage::prompt::broken_tests(best, snapshot);
    let broke: Vec<String> = broken.iter().map(|t| t.id.clone()).collect();
    let named: Vec<String> = broken
        .iter()
        .map(
            |t| match t.message.as_deref().and_then(|m| m.lines().next()) {
                Some(m) => format!("{} ({})", t.id, crate::pipeline::clip(m.trim(), 160)),
                None => t.id.clone(),
            },
        )
        .collect();
    let allow_test_edits = cx.config.allow_test_edits;
    let mut found = Beyond {
        verdict,
        behaviour: None,
        note: String::new(),
        why: Some(why_regressed(best, snapshot, &broke)),
        conflict: crate::pipeline::task::test_conflict(task, allow_test_edits, &named),
    };
    if !verdict.is_accepted() || task.kind != TaskKind::Preserving {
        return Ok(found);
    }
    let check = public_names(cx, ws, state, task, (change, files), tools)?;
    rec.api_check(&check, k)?;
    found.verdict = state.facts.bar.after_behaviour(verdict, check.outcome);
    found.note = format!("; {}", check.describe());
    if found.verdict == Verdict::Regressed {
        found.why = Some(check.describe());
    }
    Ok(found)
}

/// The Judge's behaviour check (see [`behaviour`]) of the changed
/// modules no test reaches, against their text at the best state.
fn check_behaviour(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    state: &RunState,
    change: &Change,
    (snapshot, files): (&Snapshot, &[String]),
    tools: Tools<'_>,
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
            let original = crate::orchestrator::reference::original_for(state, file, best);
            let file = file.clone();
            modules.push(ChangedModule { file, original });
        }
    }
    let check = if modules.is_empty() {
        None
    } else {
        Some(tokio::task::block_in_place(|| {
            behaviour::check(tools, cx.root, &modules, files, cx.config.limits, cx.cancel)
        })?)
    };
    Ok(BehaviourRun { untested, check })
}

/// The public-name check of the modules the change touched that existed
/// at the best state.
fn public_names(
    cx: &RunContext<'_>,
    ws: &RunWorkspace,
    state: &RunState,
    task: &Task,
    (change, files): (&Change, &[String]),
    tools: Tools<'_>,
) -> Result<ApiCheck, SwarmError> {
    let mut modules = Vec::new();
    for file in change
        .files
        .iter()
        .filter(|f| crate::lang::beyond::checks(f))
    {
        let path = state.facts.target.repo_path(file);
        if let Some(bytes) = ws.file_at_best(path.as_str())? {
            modules.push(ChangedModule {
                file: file.to_string(),
                original: String::from_utf8_lossy(&bytes).into_owned(),
            });
        }
    }
    let stated = state
        .work
        .tasks
        .as_ref()
        .map(|b| crate::pipeline::task::stated::stated(&b.instruction))
        .unwrap_or_default();
    let best = |rel: &str| {
        let path = state.facts.target.repo_path(rel);
        let bytes = ws.file_at_best(path.as_str()).ok().flatten()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    };
    let renamed = api::Renamed::of(&stated, &task.renames, &best);
    let probed = if modules.is_empty() {
        None
    } else {
        Some(tokio::task::block_in_place(|| {
            api::check_api(
                tools,
                cx.root,
                &modules,
                files,
                &renamed,
                cx.config.limits,
                cx.cancel,
            )
        })?)
    };
    let now = |rel: &str| crate::stage::read_source_text(cx.root, rel);
    let changed: Vec<String> = change.files.iter().map(|f| f.to_string()).collect();
    let exported = exports::check_exports(&changed, files, (&best, &now), &renamed);
    Ok(match probed {
        Some(probed) => probed.join(exported),
        None => exported,
    })
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

/// What the Judge found a task's change lost (`broke`: the tests that
/// passed and now fail), in one line for the next prompt.
fn why_regressed(best: &Snapshot, new: &Snapshot, broke: &[String]) -> String {
    let risen = crate::pipeline::bar::risen_errors(best, new);
    let errors: Vec<String> = risen
        .iter()
        .take(6)
        .map(|m| format!("{}:{}: {} ({})", m.path, m.line, m.message, m.symbol))
        .collect();
    let mut parts = Vec::new();
    if !broke.is_empty() {
        parts.push(format!("tests that passed now fail: {}", broke.join(", ")));
    }
    if !errors.is_empty() {
        let paths: Vec<String> = risen.iter().map(|m| m.path.clone()).collect();
        parts.push(format!(
            "new {} errors: {}",
            lang::linters_of(&paths, " and "),
            errors.join("; ")
        ));
    }
    if parts.is_empty() {
        parts.push(new.describe());
    }
    parts.join("; ")
}
