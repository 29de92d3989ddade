//! Planning in batches: each plan request shows what the evidence ranks
//! highest within the plan allowance; when a plan's files are worked off
//! and files the evidence says need work were never shown in full, the
//! next batch is planned (within the iteration limit). What each plan
//! showed is logged, and the run's coverage goes into the summary.

use std::collections::{BTreeMap, BTreeSet};

use super::cancellable;
use super::record::Recorder;
use super::{RunContext, RunState, StopReason};
use crate::error::SwarmError;
use crate::llm::ProviderKind;
use crate::log::{Action, Agent, Event, Step};
use crate::stage::planner::{self, Facts, Plan, PlanInput, Ranked, Selection};

/// What the run's plans and Fixer prompts have looked at.
#[derive(Clone, Debug, Default)]
pub(crate) struct Coverage {
    /// Source files of the target.
    pub sources: usize,
    /// Shown in full to a plan, or to the Fixer.
    pub in_depth: BTreeSet<String>,
    /// Shown in full to a plan (a later batch only names them).
    pub planned: BTreeSet<String>,
    /// Shown to a plan as one line only.
    pub summarised: BTreeSet<String>,
    /// Source files the evidence says need work.
    pub needs_work: BTreeSet<String>,
    /// Plan requests sent.
    pub batches: u32,
    /// The last batch showed nothing new: no further batch helps.
    pub exhausted: bool,
    /// The round count when the last batch was planned (one batch per round).
    pub last_round: u32,
    /// Each source file's place in the last evidence ranking (0 = most urgent).
    pub urgency: BTreeMap<String, usize>,
}

impl Coverage {
    /// Files that need work and no plan has shown in full yet.
    fn unplanned_needs(&self) -> usize {
        self.needs_work.difference(&self.planned).count()
    }

    /// Whether another plan batch is worth asking for after `rounds`
    /// rounds: files in need of work were never shown in full, the last
    /// batch showed something new, and a round ran since it.
    pub fn wants_batch(&self, rounds: u32) -> bool {
        !self.exhausted && rounds > self.last_round && self.unplanned_needs() > 0
    }

    /// For the summary.
    pub fn summary(&self) -> super::summary::Coverage {
        let in_depth = self.in_depth.len();
        let summarised = self.summarised.difference(&self.in_depth).count();
        super::summary::Coverage {
            source_files: self.sources,
            in_depth,
            summarised,
            not_reached: self.sources.saturating_sub(in_depth + summarised),
            plans: self.batches,
        }
    }
}

/// Asks for the next plan batch and folds it into the state. `Some` stop
/// reason when the model could not write it; `Err` (exit 1) when not even
/// the essentials fit the plan allowance.
pub(crate) async fn plan_batch(
    cx: &RunContext<'_>,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
) -> Result<Option<StopReason>, SwarmError> {
    let root = cx.root;
    let read = |path: &str| crate::stage::read_source_text(root, path);
    let sources = source_files(state);
    let ranked = rank_and_note(state, &sources, &read);
    let failing = state.progress.best.failing();
    let unchanged = |f: &str| state.unchanged_since_audit(f);
    let input = PlanInput {
        ranked: &ranked,
        metrics: &state.facts.metrics,
        lint: &state.progress.best.lint.messages,
        read: &read,
        unchanged: &unchanged,
        lint_score: state.progress.best.lint_score,
        tests_summary: state.progress.best.describe(),
        failing,
        planned: &state.work.coverage.planned,
        batch: state.work.coverage.batches + 1,
        allowance: cx.budget.plan,
    };
    let (request, selection) =
        planner::plan_request(&input).map_err(|e| SwarmError::invalid(e.to_string()))?;
    // A replayed run asks for the plan where its recording did (recordings
    // of earlier versions hold one for every project).
    let recorded = cx.model.kind() == ProviderKind::Replay && cx.model.recorded_like(&request);
    if state.work.coverage.batches == 0 && !recorded && evidence_plan(cx, rec, state)? {
        return Ok(None);
    }
    rec.plan_selection(&selection)?;
    note_selection(
        &mut state.work.coverage,
        &selection,
        state.progress.iterations,
    );
    let asking = Step::start(
        cx.events,
        format!(
            "asking {} for the refactoring plan (batch {})",
            cx.model.model(),
            state.work.coverage.batches
        ),
    );
    let (call, reply) = cancellable(
        cx.cancel,
        planner::ask(cx.model.as_ref(), request, &sources),
    )
    .await?;
    drop(asking);
    rec.model_call(Agent::Auditor, Action::CodeAnalysis, &call, None, None)?;
    let (plan, reply) = match reply {
        Ok(planned) => planned,
        Err(e) => {
            cx.events.emit(Event::Notice {
                message: format!(
                    "the model could not write the plan: {}",
                    SwarmError::from(e)
                ),
            });
            return Ok(Some(StopReason::ModelFailure));
        }
    };
    state.add_usage(&reply.usage, &cx.config.prices);
    let new = adopt(state, plan);
    cx.events.emit(Event::Planned { files: new });
    Ok(None)
}

/// The plan of a one-module project in repair mode: the failing tests and
/// the linter already say what its module needs, so the model is not asked
/// for a plan (a small local model spends a third of a short run on it);
/// the Fixer's prompt shows the same evidence. `false` (the model is
/// asked) when the project has more source modules or no failing test
/// points at its one module; only for the run's first plan.
fn evidence_plan(
    cx: &RunContext<'_>,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
) -> Result<bool, SwarmError> {
    let sources = source_files(state);
    let [file] = sources.as_slice() else {
        return Ok(false);
    };
    let read = |path: &str| crate::stage::read_source_text(cx.root, path);
    let failing: Vec<String> = crate::stage::reach::failures_for(
        state.progress.best.failing(),
        file,
        &state.facts.files,
        &read,
    )
    .iter()
    .map(|case| case.id.clone())
    .collect();
    let lint_messages = state
        .progress
        .best
        .lint
        .messages
        .iter()
        .filter(|m| m.path == *file)
        .count();
    if failing.is_empty() {
        // Without a failing test, the model's plan is what says what is
        // wrong (a bug no test shows, code to tidy).
        return Ok(false);
    }
    let plan = planner::evidence_plan(file, &failing, lint_messages);
    rec.plan_from_evidence(
        crate::log::PlanFromEvidence {
            file: file.clone(),
            failing,
            lint_messages,
        },
        &plan.markdown,
    )?;
    let coverage = &mut state.work.coverage;
    coverage.sources = 1;
    coverage.needs_work.insert(file.clone());
    coverage.planned.insert(file.clone());
    coverage.in_depth.insert(file.clone());
    coverage.exhausted = true;
    state.work.pending_plan.insert(file.clone(), 0);
    state.work.plan.extend(plan);
    cx.events.emit(Event::Planned {
        files: vec![file.clone()],
    });
    Ok(true)
}

/// The plan of an offline run: ruff's safe fixes to every source file, no
/// model asked.
pub(crate) fn ruff_plan(cx: &RunContext<'_>, state: &mut RunState) {
    let sources = source_files(state);
    state.work.coverage.sources = sources.len();
    let items = sources
        .iter()
        .map(|f| {
            (
                f.clone(),
                format!("- apply ruff's safe fixes ({})", crate::tools::ruff::RULES),
            )
        })
        .collect();
    let markdown = format!(
        "# Plan: ruff fixes\n\nruff's safe fixes ({}) to each source file; no model is asked (--offline).",
        crate::tools::ruff::RULES
    );
    let new = adopt(state, Plan { markdown, items });
    cx.events.emit(Event::Planned { files: new });
}

/// The target's source files (tests left out).
fn source_files(state: &RunState) -> Vec<String> {
    state.facts.sources()
}

/// The sources ranked by evidence from the best state, with the ranking
/// and the files that need work noted in the run's coverage.
fn rank_and_note(
    state: &mut RunState,
    sources: &[String],
    read: &dyn Fn(&str) -> Option<String>,
) -> Vec<Ranked> {
    let facts = Facts {
        sources,
        metrics: &state.facts.metrics,
        lint: &state.progress.best.lint.messages,
        failing: state.progress.best.failing(),
        read,
    };
    let ranked = planner::rank(&facts);
    let coverage = &mut state.work.coverage;
    coverage.sources = sources.len();
    coverage.urgency = ranked
        .iter()
        .enumerate()
        .map(|(i, r)| (r.path.clone(), i))
        .collect();
    coverage.needs_work.extend(
        ranked
            .iter()
            .filter(|r| r.needs_work())
            .map(|r| r.path.clone()),
    );
    ranked
}

/// Adds a batch's plan to the run's plan; returns the files it newly
/// names, which wait for their first round.
fn adopt(state: &mut RunState, plan: Plan) -> Vec<String> {
    let new: Vec<String> = plan
        .items
        .keys()
        .filter(|f| !state.work.plan.items.contains_key(*f))
        .cloned()
        .collect();
    for file in &new {
        state.work.pending_plan.insert(file.clone(), 0);
    }
    state.work.plan.extend(plan);
    new
}

/// Records what a plan showed in the run's coverage.
fn note_selection(coverage: &mut Coverage, selection: &Selection, round: u32) {
    coverage.batches += 1;
    coverage.last_round = round;
    let fresh = selection
        .in_full
        .iter()
        .filter(|s| !coverage.planned.contains(&s.path))
        .count();
    for shown in &selection.in_full {
        coverage.planned.insert(shown.path.clone());
        coverage.in_depth.insert(shown.path.clone());
    }
    coverage
        .summarised
        .extend(selection.summarised.iter().cloned());
    if fresh == 0 {
        coverage.exhausted = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::planner::request::Shown;

    fn shown(paths: &[&str]) -> Selection {
        Selection {
            in_full: paths
                .iter()
                .map(|p| Shown {
                    path: p.to_string(),
                    why: vec![],
                    partial: false,
                })
                .collect(),
            summarised: vec!["quiet.py".into()],
            ..Selection::default()
        }
    }

    #[test]
    fn batches_follow_unplanned_needs_once_per_round_until_nothing_new_is_shown() {
        let mut coverage = Coverage {
            sources: 4,
            needs_work: ["a.py", "b.py"].iter().map(|s| s.to_string()).collect(),
            ..Coverage::default()
        };
        note_selection(&mut coverage, &shown(&["a.py"]), 0);
        assert!(!coverage.wants_batch(0), "no round ran since the plan");
        assert!(coverage.wants_batch(1), "b.py was never shown in full");
        note_selection(&mut coverage, &shown(&["b.py"]), 1);
        assert!(!coverage.wants_batch(5), "everything in need was planned");
        coverage.needs_work.insert("c.py".into());
        note_selection(&mut coverage, &shown(&["a.py"]), 2);
        assert!(
            coverage.exhausted,
            "a batch that shows nothing new ends batching"
        );
        assert!(!coverage.wants_batch(9));
        let summary = coverage.summary();
        assert_eq!(summary.plans, 3);
        assert_eq!(summary.in_depth, 2);
        assert_eq!(summary.summarised, 1);
        assert_eq!(summary.not_reached, 1);
    }
}
