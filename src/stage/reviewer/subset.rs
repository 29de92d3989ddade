//! A proposal refused for its size that no split into steps can carry (one
//! of its hunks alone is past the limit: a rewritten docstring, an added
//! example block, alternative implementations in a trailing string) keeps
//! the part that fixes the bug: the hunks that touch what the evidence
//! points at ([`Focus`]: the definitions and lines of the failing tests'
//! tracebacks, what they call, the plan's locations), most important first,
//! and hunks that only add or drop imports (the kept ones may need them),
//! as many as pass every rule together — the size rules included. Every
//! hunk left out is named with why ([`LeftOut`]). The size rules
//! themselves do not change. Planned in memory; nothing is written.

use std::collections::BTreeMap;

use super::{check_edits, readable_edits, rebase, Proposal, Rejection, ReviewContext};
use crate::pipeline::Change;
use swarm_analysis::{self as analysis, Outline};
use swarm_patch::{EditOp, FileEdit, FileSteps, HunkLines};

/// Proposals with more hunks than this are not cut.
const MAX_HUNKS: usize = 64;

/// One place the evidence points at in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pointer {
    /// The definition it is (`name`, `Class.method`); `None` for lines
    /// outside any function.
    pub definition: Option<String>,
    /// Its first and last line (1-based) in the file as it is.
    pub start: usize,
    pub end: usize,
    /// Why it is pointed at (`` `mean`: line 10 in the traceback of test_x ``).
    pub why: String,
}

/// What the evidence points at, per target-relative file, most important
/// first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Focus {
    files: BTreeMap<String, Vec<Pointer>>,
}

impl Focus {
    /// Adds `pointer` to `file`'s, after those added before (a place
    /// already there keeps its first reason).
    pub fn add(&mut self, file: &str, pointer: Pointer) {
        let pointers = self.files.entry(file.to_string()).or_default();
        let known = pointers.iter().any(|p| {
            p.definition == pointer.definition && (p.start, p.end) == (pointer.start, pointer.end)
        });
        if !known {
            pointers.push(pointer);
        }
    }

    /// The places pointed at in `file`, most important first.
    pub fn of(&self, file: &str) -> &[Pointer] {
        self.files.get(file).map_or(&[], Vec::as_slice)
    }
}

/// One hunk of a proposal, as the log and the commit name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    /// 1-based, among all the proposal's hunks in file order.
    pub index: usize,
    pub of: usize,
    pub file: String,
    /// Where it is in the file as it is: `lines 40-46`, `after line 46`,
    /// `the whole file`.
    pub place: String,
    /// Lines it removes and adds (its changed lines).
    pub removed: usize,
    pub added: usize,
}

impl std::fmt::Display for Hunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "hunk {} of {} ({} {}: {} removed, {} added)",
            self.index, self.of, self.file, self.place, self.removed, self.added
        )
    }
}

/// A hunk kept, and the place of the evidence it touches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    pub hunk: Hunk,
    pub why: String,
}

/// A hunk left out, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{hunk}: {why}")]
pub struct LeftOut {
    pub hunk: Hunk,
    pub why: LeftOutWhy,
}

/// Why a hunk was left out.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LeftOutWhy {
    #[error("it touches nothing the failing tests, what they call or the plan point at")]
    Unrelated,
    #[error("it writes, creates or deletes a whole file")]
    Whole,
    /// With it, the hunks kept would not pass review (past the size
    /// limit, most often).
    #[error("with it the change is refused: {0}")]
    Refused(Box<Rejection>),
}

/// The part of a proposal tried alone: the change of the hunks kept, and
/// every hunk of the proposal either kept or left out.
#[derive(Clone, Debug)]
pub struct Subset {
    /// What the kept hunks change; it passes every rule.
    pub change: Change,
    pub kept: Vec<Kept>,
    pub left_out: Vec<LeftOut>,
}

/// Why no part of a proposal could be tried alone. `Display` completes
/// the sentence "no part of it could be tried alone: …".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubsetFailure {
    /// The proposal itself does not get as far as the size rules.
    #[error("{0}")]
    Unreviewable(Box<Rejection>),
    #[error("it has {count} hunks; at most {MAX_HUNKS} are looked at")]
    TooManyHunks { count: usize },
    #[error(
        "none of its hunks touches what the failing tests, what they call or the plan point at"
    )]
    NothingPointedAt,
    /// Every hunk the evidence points at is refused, alone or with the
    /// ones before it.
    #[error("no hunk the evidence points at passes review ({0})")]
    NoneFits(Box<Rejection>),
}

/// One hunk of the proposal while it is planned.
struct Unit {
    hunk: Hunk,
    /// The file's hunk number, or `None` for a whole file.
    step: Option<usize>,
    /// Rank of the most important place it touches, with why.
    touches: Option<(usize, String)>,
    imports_only: bool,
}

/// One changed file: its hunks, and its text before and after.
struct Changed {
    steps: FileSteps,
    before: Vec<String>,
    after: Vec<String>,
    outlines: (Outline, Outline),
}

/// The subset of `proposal` to try (see the module doc).
pub fn subset(
    proposal: &Proposal,
    ctx: &ReviewContext<'_>,
    focus: &Focus,
) -> Result<Subset, SubsetFailure> {
    let unreviewable = |r: Rejection| SubsetFailure::Unreviewable(Box::new(r));
    let edits = readable_edits(proposal).map_err(unreviewable)?;
    let read = |p: &str| crate::stage::read_source(ctx.root, p);
    let (outcomes, _) =
        rebase::apply_whole_or_rebase(edits, ctx.shown, &read).map_err(unreviewable)?;
    let mut files: BTreeMap<String, Changed> = BTreeMap::new();
    let mut units: Vec<Unit> = Vec::new();
    for outcome in outcomes.into_iter().filter(|o| o.before != o.after) {
        let text = |b: &Option<Vec<u8>>| {
            b.as_deref()
                .and_then(|b| std::str::from_utf8(b).ok())
                .map(str::to_string)
        };
        match (text(&outcome.before), text(&outcome.after)) {
            (Some(before), Some(after)) => {
                let outlines = (analysis::outline(&before), analysis::outline(&after));
                let after_lines = lines(&after);
                let mut steps = FileSteps::fine(&before, &after);
                cut_at_definitions(&mut steps, &outlines.1, &after_lines);
                let changed = Changed {
                    steps,
                    before: lines(&before),
                    after: after_lines,
                    outlines,
                };
                let pointers = focus.of(&outcome.path);
                units.extend(
                    (0..changed.steps.len())
                        .map(|k| hunk_unit(&outcome.path, k, &changed, pointers)),
                );
                files.insert(outcome.path, changed);
            }
            _ => units.push(whole_unit(outcome.path)),
        }
    }
    if units.len() > MAX_HUNKS {
        return Err(SubsetFailure::TooManyHunks { count: units.len() });
    }
    let total = units.len();
    for (k, unit) in units.iter_mut().enumerate() {
        unit.hunk.index = k + 1;
        unit.hunk.of = total;
    }
    choose(units, &files, ctx, &read)
}

/// Tries the hunks the evidence points at (most important first), then the
/// imports, each kept when the hunks kept so far still pass review with it.
fn choose(
    units: Vec<Unit>,
    files: &BTreeMap<String, Changed>,
    ctx: &ReviewContext<'_>,
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Result<Subset, SubsetFailure> {
    let mut order: Vec<usize> = (0..units.len())
        .filter(|&k| units[k].touches.is_some())
        .collect();
    if order.is_empty() {
        return Err(SubsetFailure::NothingPointedAt);
    }
    order.sort_by_key(|&k| units[k].touches.as_ref().map(|(rank, _)| *rank));
    order.extend((0..units.len()).filter(|&k| units[k].touches.is_none() && units[k].imports_only));
    let mut chosen: Vec<usize> = Vec::new();
    let mut change = None;
    let mut refused: BTreeMap<usize, Rejection> = BTreeMap::new();
    for k in order {
        chosen.push(k);
        match check_edits(&edits_of(&units, &chosen, files), ctx, read) {
            Ok(accepted) => change = Some(accepted),
            Err(rejection) => {
                chosen.pop();
                refused.insert(k, rejection);
            }
        }
    }
    let Some(change) = change else {
        let first = refused.into_values().next().unwrap_or(Rejection::NoChange);
        return Err(SubsetFailure::NoneFits(Box::new(first)));
    };
    let (mut kept, mut left_out) = (Vec::new(), Vec::new());
    for (k, unit) in units.into_iter().enumerate() {
        if chosen.contains(&k) {
            let why = match unit.touches {
                Some((_, why)) => why,
                None => "it only adds or drops imports, which the hunks kept may need".into(),
            };
            kept.push(Kept {
                hunk: unit.hunk,
                why,
            });
            continue;
        }
        let why = match refused.remove(&k) {
            Some(rejection) => LeftOutWhy::Refused(Box::new(rejection)),
            None if unit.step.is_none() => LeftOutWhy::Whole,
            None => LeftOutWhy::Unrelated,
        };
        left_out.push(LeftOut {
            hunk: unit.hunk,
            why,
        });
    }
    Ok(Subset {
        change,
        kept,
        left_out,
    })
}

/// Each file with the chosen hunks applied and no other.
fn edits_of(units: &[Unit], chosen: &[usize], files: &BTreeMap<String, Changed>) -> Vec<FileEdit> {
    files
        .iter()
        .filter_map(|(path, changed)| {
            let steps: Vec<usize> = chosen
                .iter()
                .filter(|&&k| units[k].hunk.file == *path)
                .filter_map(|&k| units[k].step)
                .collect();
            (!steps.is_empty()).then(|| FileEdit {
                path: path.clone(),
                op: EditOp::Replace(changed.steps.text_choosing(|k| steps.contains(&k))),
            })
        })
        .collect()
}

/// Cuts every hunk where the lines it adds pass from one top-level
/// definition (or the module's own lines) to another, so that a fixed line
/// at the end of a function is not tied to the block added after it.
fn cut_at_definitions(steps: &mut FileSteps, after: &Outline, after_lines: &[String]) {
    for k in (0..steps.len()).rev() {
        let Some(lines) = steps.changed(k).cloned() else {
            continue;
        };
        let scope = |line: usize| after.enclosing(line + 1).first().copied();
        // Each added line's scope; a blank line belongs with the next
        // line that is not blank (the block it comes before).
        let mut scopes: Vec<Option<Option<usize>>> = lines
            .new
            .clone()
            .map(|line| (!after_lines[line].trim().is_empty()).then(|| scope(line)))
            .collect();
        let mut next = None;
        for slot in scopes.iter_mut().rev() {
            match slot {
                Some(known) => next = Some(*known),
                None => *slot = next,
            }
        }
        let boundaries: Vec<usize> = (1..scopes.len())
            .filter(|&i| scopes[i].is_some() && scopes[i] != scopes[i - 1])
            .map(|i| lines.new.start + i)
            .collect();
        for at in boundaries.into_iter().rev() {
            steps.cut(k, at);
        }
    }
}

/// Hunk `k` of the change to `path`, with what it touches of `pointers`.
fn hunk_unit(path: &str, k: usize, changed: &Changed, pointers: &[Pointer]) -> Unit {
    let lines = changed.steps.changed(k).cloned().unwrap_or(HunkLines {
        old: 0..0,
        new: 0..0,
    });
    let place = match (lines.old.start, lines.old.len()) {
        (0, 0) => "at its start".to_string(),
        (after, 0) => format!("after line {after}"),
        (start, 1) => format!("line {}", start + 1),
        (start, n) => format!("lines {}-{}", start + 1, start + n),
    };
    let removed = &changed.before[lines.old.clone()];
    let added = &changed.after[lines.new.clone()];
    Unit {
        hunk: Hunk {
            index: 0,
            of: 0,
            file: path.to_string(),
            place,
            removed: removed.len(),
            added: added.len(),
        },
        step: Some(k),
        touches: touched(pointers, &changed.outlines, &lines),
        imports_only: removed.iter().chain(added).all(|l| is_import_or_blank(l)),
    }
}

/// A file created, deleted or not text: one unit that cannot be cut.
fn whole_unit(path: String) -> Unit {
    Unit {
        hunk: Hunk {
            index: 0,
            of: 0,
            file: path,
            place: "the whole file".into(),
            removed: 0,
            added: 0,
        },
        step: None,
        touches: None,
        imports_only: false,
    }
}

/// The most important of `pointers` a hunk touches (its rank, and why): a
/// definition that holds one of the lines it removes (in the text before)
/// or adds (in the text after), or lines it changes or inserts between.
fn touched(
    pointers: &[Pointer],
    (before, after): &(Outline, Outline),
    lines: &HunkLines,
) -> Option<(usize, String)> {
    let mut names: Vec<&str> = Vec::new();
    enclosing_names(before, &lines.old, &mut names);
    enclosing_names(after, &lines.new, &mut names);
    let old = &lines.old;
    pointers
        .iter()
        .enumerate()
        .find(|(_, p)| match &p.definition {
            Some(name) => names.contains(&name.as_str()),
            // Changed lines overlap, or lines inserted inside.
            None if old.is_empty() => p.start <= old.start && old.start < p.end,
            None => p.start <= old.end && old.start < p.end,
        })
        .map(|(rank, p)| (rank, p.why.clone()))
}

/// Adds the names of the definitions holding any of `range`'s lines
/// (0-based) to `names`.
fn enclosing_names<'a>(
    outline: &'a Outline,
    range: &std::ops::Range<usize>,
    names: &mut Vec<&'a str>,
) {
    for line in range.start + 1..=range.end {
        for index in outline.enclosing(line) {
            let name = outline.definitions[index].name.as_str();
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
}

/// Whether a line is blank or an import statement.
fn is_import_or_blank(line: &str) -> bool {
    let line = line.trim();
    line.is_empty() || line.starts_with("import ") || line.starts_with("from ")
}

/// Lines with their endings, as `FileSteps` counts them.
fn lines(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_string).collect()
}

#[cfg(test)]
mod tests;
