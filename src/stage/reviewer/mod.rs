//! The Reviewer: rules, no model. A proposal is accepted only when every
//! rule holds; otherwise the first rule that fails gives a typed
//! [`Rejection`] (its `Display` goes back to the model, its
//! [`Rejection::rule`] name into the log). The order is fixed:
//!
//! 1. `unusable_reply` — the reply holds a readable change;
//! 2. on every path the reply names (nothing applied yet): `empty_path`,
//!    `absolute_path`, `outside_target` (`..`), `inside_git`, `submodule`,
//!    `symlink_out`, then — unless `--allow-test-edits` — `startup_file`
//!    (`sitecustomize.py`, `usercustomize.py`, `*.pth`), `test_config`
//!    (`conftest.py`, `pytest.ini`, `.pytest.ini`, `pytest.toml`) and
//!    `test_file` (a test by name, or by what the project's pytest
//!    collects: [`ReviewContext::tests`]);
//! 3. `does_not_apply` — every hunk applies exactly once (in memory); a
//!    diff that fits only a version of the file the model was shown earlier
//!    in the run is rebased onto the current text by a three-way merge
//!    ([`rebase`]), and `merge_conflict` refuses it when the merge conflicts;
//! 4. on every file the change alters: `test_config` (the pytest sections of
//!    `setup.cfg`, `tox.ini`, `pyproject.toml`, `pytest11` entry points),
//!    `doctest` (a docstring example pytest runs, with `--doctest-modules`),
//!    `too_many_lines` and `too_many_bytes` (the severity's limits),
//!    `syntax_error`, `pytest_plugin` (plugin or hook code, or a pytest
//!    import, in a module that is not a test), `dangerous_call` (new
//!    dangerous calls and dynamic access, see `analysis`),
//!    `test_environment` and `framework_patch` (new reads of the test
//!    runner or the caller, new patches of the test framework, assertions,
//!    builtins or the exit, in a module that is not a test) and
//!    `secret_changed` (a secret of the file altered or dropped, or a
//!    placeholder that stands for none, see `crate::secrets`);
//!    For a task (`--task`), `too_many_lines` and `too_many_bytes` hold for
//!    the change as a whole, lines moved unchanged not counted
//!    ([`task_size`]), and `shadows_module` refuses a new module that takes
//!    the name of a standard-library module or an installed package;
//! 5. `no_change`, `whitespace_only`, `repeat` — on the change as a whole.
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
mod task_size;

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
use rules::{ChangedFile, FILE_RULES, PATH_RULES};
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

/// What the Reviewer holds a task's change to (see [`task_size`]).
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
    for rule in PATH_RULES {
        for edit in edits {
            rule(&edit.path, ctx)?;
        }
    }
    let (applied, rebased) = rebase::apply_or_rebase(edits, ctx.shown, read)?;
    let outcomes: Vec<&patch::FileOutcome> =
        applied.iter().filter(|o| o.before != o.after).collect();
    let texts = texts_of(&outcomes);
    let files = changed_files(&outcomes, &texts, ctx);
    for rule in FILE_RULES {
        for file in &files {
            rule(file, ctx)?;
        }
    }
    if let Some(task) = &ctx.task {
        task_size::check(&files, task)?;
        rules::shadows_module(&files, ctx)?;
    }
    is_a_change(&files)?;
    let mut change = change_of(&outcomes, &files, ctx);
    change.rebased = rebased;
    if ctx.seen.contains(&change.hash) {
        return Err(Rejection::Repeat);
    }
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

/// `no_change` and `whitespace_only`: the change as a whole alters code.
fn is_a_change(files: &[ChangedFile<'_>]) -> Result<(), Rejection> {
    if files.is_empty() {
        return Err(Rejection::NoChange);
    }
    let meaningful = files.iter().any(|f| {
        f.before.is_none()
            || f.after.is_none()
            || squeeze(f.before.unwrap_or("")) != squeeze(f.after.unwrap_or(""))
    });
    if meaningful {
        Ok(())
    } else {
        Err(Rejection::WhitespaceOnly)
    }
}

/// The accepted change: its writes, diff, size and hash (of the base and
/// every file's new content, so the same change is never tried twice).
fn change_of(
    outcomes: &[&patch::FileOutcome],
    files: &[ChangedFile<'_>],
    ctx: &ReviewContext<'_>,
) -> Change {
    let mut hasher = Sha256::new();
    hasher.update(ctx.base.as_bytes());
    hasher.update([0]);
    let mut change = Change {
        writes: Vec::new(),
        files: Vec::new(),
        changed_lines: 0,
        diff: String::new(),
        hash: String::new(),
        rebased: Vec::new(),
    };
    for (outcome, file) in outcomes.iter().zip(files) {
        let (b, a) = (file.before.unwrap_or(""), file.after.unwrap_or(""));
        hasher.update(outcome.path.as_bytes());
        hasher.update([0]);
        hasher.update(outcome.after.as_deref().unwrap_or(b"\x00deleted"));
        hasher.update([0]);
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
    change.hash = hex::encode(hasher.finalize());
    change
}

/// Text without any whitespace, to spot whitespace-only changes.
fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

#[cfg(test)]
mod gaming_tests;
#[cfg(test)]
mod half_right_tests;
#[cfg(test)]
mod tests;
