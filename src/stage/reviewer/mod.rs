//! The Reviewer: rules, no model. A proposal is accepted only when every
//! rule holds; otherwise the first rule that fails gives a typed
//! [`Rejection`] (its `Display` goes back to the model, its
//! [`Rejection::rule`] name into the log). Each rule is one entry of
//! `rules::RULES` (name, when it runs, whether `--allow-test-edits` lifts
//! it, doc, checks). The order is fixed, by kind, then table order:
//!
//! 1. the reply holds a readable change (`unusable_reply`);
//! 2. the path checks, on every path the reply names (nothing applied yet);
//! 3. the hunks apply exactly once, in memory (`does_not_apply`); a diff
//!    that fits only a version of the file the model was shown earlier in
//!    the run is rebased onto the current text by a three-way merge
//!    ([`rebase`]), refused as `merge_conflict` when the merge conflicts;
//! 4. the file checks, on every file the change alters;
//! 5. for a task (`--task`), the checks on its change as a whole (its size,
//!    lines moved unchanged not counted; the names of its new modules);
//! 6. the checks on every change as a whole (`no_change`,
//!    `whitespace_only`, `repeat`).
//!
//! A proposal refused for its size alone may be [`split`] into steps that
//! each pass every rule, the size rules included; when no split fits, the
//! [`subset`] of its hunks the evidence points at may be tried alone.
//!
//! The Reviewer reads the best state's files and never writes anything.
//! Its static checks are an early warning; the sandbox the Judge runs in and
//! the final re-check with the base commit's test harness are the guards.

mod rebase;
mod rules;
mod split;
mod subset;

use crate::pipeline::{TargetDir, TargetPath};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use sha2::{Digest, Sha256};

pub use rebase::ShownVersions;
pub use rules::Rejection;
pub use split::{split, SplitFailure, Step};
pub use subset::{subset, Focus, Pointer, Subset, SubsetFailure};

use crate::git::FileWrite;
use crate::pipeline::{Change, Proposal, ReplyProblem};
use rules::{ChangedFile, WholeChange};
use swarm_analysis::Severity;
use swarm_patch::{self as patch, PatchError};

/// Changed-line limits per severity (defaults from the multi-agent
/// refactoring paper: low 40, medium 100, high 180), and the changed-byte
/// limit derived from them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SizeLimits {
    pub low: usize,
    pub medium: usize,
    pub high: usize,
    /// Changed bytes allowed per changed line of the limit: a file may
    /// change by at most `limit × bytes_per_line` bytes (added and removed
    /// lines, line ends included), so one 10 MB line is refused although it
    /// is one line. Default [`SizeLimits::DEFAULT_BYTES_PER_LINE`].
    pub bytes_per_line: usize,
}

impl Default for SizeLimits {
    fn default() -> Self {
        Self {
            low: 40,
            medium: 100,
            high: 180,
            bytes_per_line: Self::DEFAULT_BYTES_PER_LINE,
        }
    }
}

impl SizeLimits {
    /// Bytes per changed line allowed by default (well above ordinary code).
    pub const DEFAULT_BYTES_PER_LINE: usize = 120;

    /// The changed-line limit for a file of this severity.
    pub fn for_severity(&self, severity: Severity) -> usize {
        match severity {
            Severity::Low => self.low,
            Severity::Medium => self.medium,
            Severity::High => self.high,
        }
    }

    /// The changed-byte limit for a file of this severity.
    pub fn bytes_for_severity(&self, severity: Severity) -> usize {
        self.for_severity(severity)
            .saturating_mul(self.bytes_per_line)
    }
}

/// What the Reviewer needs to know.
pub struct ReviewContext<'a> {
    /// The target folder inside the run's worktree (files as in the best state).
    pub root: &'a Path,
    /// The target folder relative to the repository root.
    pub target: &'a TargetDir,
    pub severities: &'a BTreeMap<String, Severity>,
    pub limits: SizeLimits,
    pub allow_test_edits: bool,
    /// Hashes of every change tried so far in the run.
    pub seen: &'a HashSet<String>,
    /// The commit the change applies to: the same change on a new best
    /// state is a new attempt.
    pub base: &'a str,
    /// Git submodules inside the target, target-relative: nothing in them
    /// may change.
    pub submodules: &'a [String],
    /// What the model was shown of each file in this run, to rebase
    /// replies written against an earlier version.
    pub shown: &'a ShownVersions,
    /// A task of refactoring on request (`--task`): its size limit holds
    /// for the change as a whole instead of per file, and a new module may
    /// not shadow a standard-library module or an installed package.
    pub task: Option<TaskReview<'a>>,
    /// Which files are tests (the project's pytest configuration and
    /// collection, not name patterns alone): none of them may change.
    pub tests: &'a crate::tools::TestFiles,
}

/// What the Reviewer holds a task's change to (see `rules/task_size.rs`).
#[derive(Clone, Copy, Debug)]
pub struct TaskReview<'a> {
    /// Changed lines allowed for the whole change, lines moved unchanged
    /// between (or within) files not counted.
    pub max_changed_lines: usize,
    /// Changed bytes allowed, likewise.
    pub max_changed_bytes: usize,
    /// Top-level module names a new module must not take: the standard
    /// library's and the installed packages'.
    pub taken_names: &'a std::collections::BTreeSet<String>,
}

/// The Reviewer's answer.
#[derive(Clone, Debug)]
pub enum Review {
    Accepted(Change),
    Rejected(Rejection),
}

/// Reviews a proposal.
pub fn review(proposal: &Proposal, ctx: &ReviewContext<'_>) -> Review {
    match check(proposal, ctx) {
        Ok(change) => Review::Accepted(change),
        Err(rejection) => Review::Rejected(rejection),
    }
}

/// The rules in their order (see the module doc); the change when all hold.
fn check(proposal: &Proposal, ctx: &ReviewContext<'_>) -> Result<Change, Rejection> {
    let edits = readable_edits(proposal)?;
    let read = |p: &str| crate::stage::read_source(ctx.root, p);
    check_edits(edits, ctx, &read)
}

/// The rules after `unusable_reply`, with files read through `read`
/// (the best state, or the best state with earlier steps of a split).
fn check_edits(
    edits: &[patch::FileEdit],
    ctx: &ReviewContext<'_>,
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Result<Change, Rejection> {
    rules::check_paths(edits, ctx)?;
    let (applied, rebased, unplaced) = rebase::apply_or_rebase(edits, ctx.shown, read)?;
    let outcomes: Vec<&patch::FileOutcome> =
        applied.iter().filter(|o| o.before != o.after).collect();
    let texts = texts_of(&outcomes);
    let files = changed_files(&outcomes, &texts, ctx);
    rules::check_files(&files, ctx)?;
    let hash = hash_of(&outcomes, ctx.base);
    rules::check_change(
        &WholeChange {
            files: &files,
            hash: &hash,
        },
        ctx,
    )?;
    let mut change = change_of(&outcomes, &files, ctx, hash);
    change.rebased = rebased;
    change.unplaced = unplaced;
    Ok(change)
}

/// `unusable_reply`: the reply's edits, when it holds any.
fn readable_edits(proposal: &Proposal) -> Result<&[patch::FileEdit], Rejection> {
    let edits = proposal
        .edits
        .as_ref()
        .map_err(|unusable| Rejection::Unusable(unusable.clone()))?;
    if edits.is_empty() {
        let problem = ReplyProblem::Patch(PatchError::NoChange);
        return Err(Rejection::Unusable(problem.into()));
    }
    Ok(edits)
}

/// Each changed file's text before and after, as text.
fn texts_of(outcomes: &[&patch::FileOutcome]) -> Vec<(Option<String>, Option<String>)> {
    let text = |b: &Option<Vec<u8>>| {
        b.as_deref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    };
    outcomes
        .iter()
        .map(|o| (text(&o.before), text(&o.after)))
        .collect()
}

/// What the file rules look at: each changed file with its severity.
fn changed_files<'a>(
    outcomes: &[&'a patch::FileOutcome],
    texts: &'a [(Option<String>, Option<String>)],
    ctx: &ReviewContext<'_>,
) -> Vec<ChangedFile<'a>> {
    outcomes
        .iter()
        .zip(texts)
        .map(|(o, (before, after))| ChangedFile {
            path: &o.path,
            before: before.as_deref(),
            after: after.as_deref(),
            severity: ctx
                .severities
                .get(&o.path)
                .copied()
                .unwrap_or(Severity::Medium),
        })
        .collect()
}

/// The hash of the base and every file's new content, so the same change
/// is never tried twice on the same state.
fn hash_of(outcomes: &[&patch::FileOutcome], base: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(base.as_bytes());
    hasher.update([0]);
    for outcome in outcomes {
        hasher.update(outcome.path.as_bytes());
        hasher.update([0]);
        hasher.update(outcome.after.as_deref().unwrap_or(b"\x00deleted"));
        hasher.update([0]);
    }
    hex::encode(hasher.finalize())
}

/// The accepted change: its writes, diff, size and `hash` ([`hash_of`]).
fn change_of(
    outcomes: &[&patch::FileOutcome],
    files: &[ChangedFile<'_>],
    ctx: &ReviewContext<'_>,
    hash: String,
) -> Change {
    let mut change = Change {
        writes: Vec::new(),
        files: Vec::new(),
        changed_lines: 0,
        diff: String::new(),
        hash,
        rebased: Vec::new(),
        unplaced: Vec::new(),
    };
    for (outcome, file) in outcomes.iter().zip(files) {
        let (b, a) = (file.before.unwrap_or(""), file.after.unwrap_or(""));
        change.changed_lines += patch::changed_lines(b, a);
        change
            .diff
            .push_str(&patch::unified_diff(&outcome.path, b, a));
        change.writes.push(FileWrite {
            path: ctx.target.repo_path(&outcome.path).into_string(),
            content: outcome.after.clone(),
        });
        change.files.push(TargetPath::new(outcome.path.as_str()));
    }
    change
}

#[cfg(test)]
mod gaming_tests;
#[cfg(test)]
mod half_right_tests;
#[cfg(test)]
mod tests;
