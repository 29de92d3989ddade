//! The part of an oversized proposal tried alone (see
//! [`crate::stage::reviewer::subset`]): what the evidence points at in the files it
//! changes ([`focus`]), and what is told, logged, written in the attempt's
//! commit and kept for the summary of the hunks left out. Judging the part
//! is the attempt's (`attempt`), like any proposal's.

use super::record::Recorder;
use super::summary::LeftOutHunk;
use super::{RunContext, RunState};
use crate::error::SwarmError;
use crate::lang;
use crate::log::Event;
use crate::pipeline::{Proposal, TestCase};
use crate::stage::excerpt::{self, Evidence};
use crate::stage::reviewer::{Focus, Pointer, Subset, SubsetFailure};
use crate::stage::{auditor, reach};

/// What the evidence points at in the files `proposal` changes: in each,
/// the places of the failing tests' tracebacks and import problems, the
/// definitions the failing tests call, the plan's locations — and pylint's
/// messages only when nothing fails.
pub(super) fn focus(cx: &RunContext<'_>, state: &RunState, proposal: &Proposal) -> Focus {
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
        let short = case.id.rsplit("::").next().unwrap_or(&case.id);
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

/// What came of looking for a part of a proposal no split can carry: the
/// end of what the Fixer is told of it (`; …`, empty when none was looked
/// for), and the part to judge, if any — told and logged, its change
/// counted as tried.
pub(super) fn take(
    cx: &RunContext<'_>,
    rec: &mut Recorder<'_>,
    state: &mut RunState,
    file: &str,
    part: Option<Result<Subset, SubsetFailure>>,
) -> Result<(String, Option<Subset>), SwarmError> {
    let part = match part {
        None => return Ok((String::new(), None)),
        Some(Err(why)) => {
            cx.events.emit(Event::Notice {
                message: format!("{file}: no part of the proposal can be tried alone: {why}"),
            });
            return Ok((format!("; no part of it could be tried alone: {why}"), None));
        }
        Some(Ok(part)) => part,
    };
    rec.subset(file, state.progress.iterations, &part)?;
    state.progress.seen.insert(part.change.hash.clone());
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

/// The commit trailers naming the hunks left out.
pub(super) fn trailers(subset: &Subset) -> Vec<String> {
    subset
        .left_out
        .iter()
        .map(|left| format!("Swarm-Left-Out: {left}"))
        .collect()
}

/// Keeps the hunks left out of the accepted attempt `attempt` for the
/// run's summary.
pub(super) fn adopted(state: &mut RunState, file: &str, attempt: usize, subset: &Subset) {
    for left in &subset.left_out {
        state.progress.left_out.push(LeftOutHunk {
            file: file.to_string(),
            attempt: attempt as u32,
            hunk: left.hunk.to_string(),
            why: left.why.to_string(),
        });
    }
}
