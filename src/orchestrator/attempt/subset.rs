//! The part of a repair's oversized proposal tried alone, when no split
//! into reviewer-sized steps fits (see [`crate::stage::reviewer::subset`]):
//! what the evidence points at in the files it changes ([`focus`]), and
//! what is told and logged of the part found ([`tried_alone`]). Its commit
//! trailers and the hunks kept for the summary are the pipeline's
//! (`super::trailers`, `super::keep`); judging the part is the attempt's,
//! like any proposal's.

use crate::error::SwarmError;
use crate::lang;
use crate::log::Event;
use crate::orchestrator::record::Recorder;
use crate::orchestrator::{RunContext, RunState};
use crate::pipeline::{Proposal, TestCase};
use crate::stage::excerpt::{self, Evidence};
use crate::stage::reviewer::{self, Focus, Pointer, ReviewContext, Subset, SubsetFailure};
use crate::stage::{auditor, reach};

/// What the evidence points at in the files `proposal` changes: in each,
/// the places of the failing tests' tracebacks and import problems, the
/// definitions the failing tests call, the plan's locations — and pylint's
/// messages only when nothing fails.
fn focus(cx: &RunContext<'_>, state: &RunState, proposal: &Proposal) -> Focus {
    let read = |p: &str| crate::stage::read_source_text(cx.root, p);
    let sources: Vec<&String> = state
        .facts
        .files
        .iter()
        .filter(|f| !lang::is_test(f))
        .collect();
    let mut files = vec![proposal.file.to_string()];
    for edit in proposal.edits.iter().flatten() {
        if !files.contains(&edit.path) {
            files.push(edit.path.clone());
        }
    }
    let best = &state.progress.best;
    let mut focus = Focus::default();
    for file in &files {
        let Some(text) = read(file) else { continue };
        let failing = reach::failures_for(best.failing(), file, &state.facts.files, &read);
        let problems = best.problems_of(file);
        let problems: Vec<&str> = problems.iter().map(String::as_str).collect();
        let lint = if failing.is_empty() && problems.is_empty() {
            auditor::lint_for(&best.lint.messages, file)
        } else {
            Vec::new()
        };
        let evidence = Evidence {
            failing: &failing,
            problems: &problems,
            lint: &lint,
            plan_items: state.work.plan.items.get(file).map(String::as_str),
        };
        for place in excerpt::implicated(file, &text, &evidence) {
            let pointer = Pointer {
                definition: place.definition,
                start: place.start,
                end: place.end,
                why: place.why,
            };
            focus.add(file, pointer);
        }
        for pointer in called(file, &text, &failing, &sources, &read) {
            focus.add(file, pointer);
        }
    }
    focus
}

/// The definitions of `file` (its `text`) the `failing` tests call.
fn called(
    file: &str,
    text: &str,
    failing: &[&TestCase],
    sources: &[&String],
    read: &dyn Fn(&str) -> Option<String>,
) -> Vec<Pointer> {
    let outline = swarm_analysis::outline(text);
    let mut out = Vec::new();
    for case in failing {
        let short = case.name();
        for found in reach::called_definitions(case, sources, read) {
            if found.file != file {
                continue;
            }
            let definition = outline.definitions.iter().find(|d| d.name == found.name);
            if let Some(d) = definition {
                out.push(Pointer {
                    definition: Some(d.name.clone()),
                    start: d.start,
                    end: d.end,
                    why: format!("`{}`: called by the test {short}", d.name),
                });
            }
        }
    }
    out
}

/// Looks for the part of a proposal no split can carry that the evidence
/// points at and passes the Reviewer alone (see [`reviewer::subset`]):
/// the end of what the Fixer is told of it (`; …`), and the part to judge,
/// if any — told and logged.
pub(super) fn tried_alone(
    cx: &RunContext<'_>,
    rec: &mut Recorder<'_>,
    state: &RunState,
    proposal: &Proposal,
    ctx: &ReviewContext<'_>,
) -> Result<(String, Option<Subset>), SwarmError> {
    let file = &proposal.file;
    let focus = focus(cx, state, proposal);
    let found: Result<Subset, SubsetFailure> = reviewer::subset(proposal, ctx, &focus);
    let part = match found {
        Err(why) => {
            cx.events.emit(Event::Notice {
                message: format!("{file}: no part of the proposal can be tried alone: {why}"),
            });
            return Ok((format!("; no part of it could be tried alone: {why}"), None));
        }
        Ok(part) => part,
    };
    rec.subset(file, state.progress.iterations, &part)?;
    let left_out: Vec<String> = part.left_out.iter().map(ToString::to_string).collect();
    cx.events.emit(Event::Notice {
        message: format!(
            "{file}: the proposal is too big and cannot be split; trying the {} hunk(s) the \
             evidence points at ({} changed lines) without {}",
            part.kept.len(),
            part.change.changed_lines,
            left_out.join("; ")
        ),
    });
    let note = format!(
        "; only its hunks the evidence points at were tried, without {}",
        left_out.join("; ")
    );
    Ok((note, Some(part)))
}
