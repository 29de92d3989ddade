//! Splits a proposal refused for its size alone into reviewer-sized steps
//! along hunk boundaries ([`patch::FileSteps`]): each step is the largest
//! run of the next hunks that passes every rule — the size rules included —
//! on the files as the steps before it leave them. A run of hunks that does
//! not pass alone (it does not parse, say) is grouped with its neighbours;
//! when no run starting at a hunk passes, the split fails. The size rules
//! themselves do not change. Steps are planned in memory; nothing is written.

use std::collections::BTreeMap;

use super::{check_edits, readable_edits, rebase, Proposal, Rejection, ReviewContext};
use swarm_patch::{EditOp, FileEdit, FileSteps};

/// Proposals with more hunks than this are not split.
const MAX_HUNKS: usize = 64;

/// One step of a split proposal: edits for the best state as the steps
/// before it leave it.
#[derive(Clone, Debug)]
pub struct Step {
    pub edits: Vec<FileEdit>,
    /// Changed lines of the step (within the size limit).
    pub changed_lines: usize,
}

/// Why a proposal could not be split. `Display` completes the sentence
/// "it could not be split into reviewer-sized steps: …".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SplitFailure {
    /// The proposal itself does not get as far as the size rules.
    #[error("{0}")]
    Unreviewable(Box<Rejection>),
    #[error("it has {count} hunks; at most {MAX_HUNKS} are split")]
    TooManyHunks { count: usize },
    /// No run of hunks starting at `hunk` (1-based) passes every rule.
    #[error(
        "no run of hunks starting at hunk {hunk} of {total} passes review on its own \
         ({rejection})"
    )]
    NoStep {
        hunk: usize,
        total: usize,
        rejection: Box<Rejection>,
    },
}

/// One hunk of the proposal: a hunk of a file's change, or a whole file
/// created, deleted or not readable as text (which cannot be cut).
enum Unit {
    Hunk(String),
    Whole(String, Option<Vec<u8>>),
}

impl Unit {
    fn path(&self) -> &str {
        match self {
            Unit::Hunk(path) | Unit::Whole(path, _) => path,
        }
    }
}

/// Bytes as text, when they are UTF-8.
fn text(bytes: &Option<Vec<u8>>) -> Option<&str> {
    bytes.as_deref().and_then(|b| std::str::from_utf8(b).ok())
}

/// Where the planned steps have taken each file.
#[derive(Default)]
struct Progress {
    /// Hunks applied so far, per file.
    hunks: BTreeMap<String, usize>,
    /// Whole files written so far.
    whole: BTreeMap<String, Option<Vec<u8>>>,
}

/// Splits `proposal` into steps (see the module doc).
pub fn split(proposal: &Proposal, ctx: &ReviewContext<'_>) -> Result<Vec<Step>, SplitFailure> {
    let unreviewable = |r: Rejection| SplitFailure::Unreviewable(Box::new(r));
    let edits = readable_edits(proposal).map_err(unreviewable)?;
    let read = |p: &str| crate::stage::read_source(ctx.root, p);
    let (outcomes, _) =
        rebase::apply_whole_or_rebase(edits, ctx.shown, &read).map_err(unreviewable)?;
    let mut files: BTreeMap<String, FileSteps> = BTreeMap::new();
    let mut units = Vec::new();
    for outcome in outcomes.into_iter().filter(|o| o.before != o.after) {
        match (text(&outcome.before), text(&outcome.after)) {
            (Some(before), Some(after)) => {
                let steps = FileSteps::new(before, after);
                units.extend((0..steps.len()).map(|_| Unit::Hunk(outcome.path.clone())));
                files.insert(outcome.path, steps);
            }
            _ => units.push(Unit::Whole(outcome.path, outcome.after)),
        }
    }
    if units.len() > MAX_HUNKS {
        return Err(SplitFailure::TooManyHunks { count: units.len() });
    }
    let mut progress = Progress::default();
    let mut steps = Vec::new();
    let mut next = 0;
    while next < units.len() {
        let (end, change) = largest_step(&units, next, &files, &progress, ctx, &read)?;
        for unit in &units[next..end] {
            progress.take(unit);
        }
        steps.push(Step {
            edits: step_edits(&units[next..end], &files, &progress),
            changed_lines: change,
        });
        next = end;
    }
    Ok(steps)
}

/// The end of the longest run of units from `start` that passes review,
/// with its changed lines. A run refused for its size ends the search.
fn largest_step(
    units: &[Unit],
    start: usize,
    files: &BTreeMap<String, FileSteps>,
    progress: &Progress,
    ctx: &ReviewContext<'_>,
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Result<(usize, usize), SplitFailure> {
    let mut best = None;
    let mut last_rejection = None;
    let mut trial = Progress {
        hunks: progress.hunks.clone(),
        whole: progress.whole.clone(),
    };
    for end in start + 1..=units.len() {
        trial.take(&units[end - 1]);
        let edits = step_edits(&units[start..end], files, &trial);
        let overlay = |p: &str| progress.read(p, files).or_else(|| read(p));
        match check_edits(&edits, ctx, &overlay) {
            Ok(change) => best = Some((end, change.changed_lines)),
            Err(rejection) if rejection.is_size() => {
                last_rejection = Some(rejection);
                break;
            }
            Err(rejection) => last_rejection = Some(rejection),
        }
    }
    best.ok_or_else(|| SplitFailure::NoStep {
        hunk: start + 1,
        total: units.len(),
        rejection: Box::new(last_rejection.unwrap_or(Rejection::NoChange)),
    })
}

impl Progress {
    /// Counts `unit` as applied.
    fn take(&mut self, unit: &Unit) {
        match unit {
            Unit::Hunk(path) => *self.hunks.entry(path.clone()).or_default() += 1,
            Unit::Whole(path, after) => {
                self.whole.insert(path.clone(), after.clone());
            }
        }
    }

    /// A file's bytes as the steps so far leave it; `None` when they have
    /// not touched it or deleted it (a file is one whole unit or hunks, so
    /// no later step reads a file an earlier one deleted).
    fn read(&self, path: &str, files: &BTreeMap<String, FileSteps>) -> Option<Vec<u8>> {
        if let Some(after) = self.whole.get(path) {
            return after.clone();
        }
        let applied = *self.hunks.get(path)?;
        files.get(path).map(|f| f.text_with(applied).into_bytes())
    }
}

/// The edits of a step: each file it touches, as `progress` (which counts
/// the step) leaves it.
fn step_edits(
    units: &[Unit],
    files: &BTreeMap<String, FileSteps>,
    progress: &Progress,
) -> Vec<FileEdit> {
    let mut edits: Vec<FileEdit> = Vec::new();
    for unit in units {
        if edits.iter().any(|e| e.path == unit.path()) {
            continue;
        }
        let op = match unit {
            Unit::Whole(_, None) => EditOp::Delete,
            Unit::Whole(_, Some(bytes)) => EditOp::Replace(String::from_utf8_lossy(bytes).into()),
            Unit::Hunk(path) => {
                let applied = progress.hunks.get(path).copied().unwrap_or(0);
                match files.get(path) {
                    Some(steps) => EditOp::Replace(steps.text_with(applied)),
                    None => continue,
                }
            }
        };
        edits.push(FileEdit {
            path: unit.path().to_string(),
            op,
        });
    }
    edits
}
