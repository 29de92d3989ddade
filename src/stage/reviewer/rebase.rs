//! The `does_not_apply` rule with memory: a reply's diff that does not fit
//! a file's current text but fits a version of it the model was shown
//! earlier in the run ([`ShownVersions`]) is rebased onto the current text
//! by a three-way merge ([`patch::rebase`]); a conflict is a
//! [`Rejection::MergeConflict`] naming the lines. Reads files only through
//! the `read` it is given.

use std::collections::BTreeMap;

use super::Rejection;
use crate::pipeline::{Rebased, TargetPath};
use swarm_patch::{self as patch, EditOp, FileEdit, FileOutcome, MergeConflict, Rebase};

/// At most this many versions of one file are remembered: the first shown
/// (usually the original) and the most recent others.
const VERSIONS_PER_FILE: usize = 4;
/// Texts longer than this are not remembered (no prompt shows them whole).
const MAX_TEXT_BYTES: usize = 512 * 1024;

/// The texts of files the model was shown in this run, so that a reply
/// written against one of them can be rebased onto the current text.
/// Bounded: [`VERSIONS_PER_FILE`] per file, none over [`MAX_TEXT_BYTES`].
#[derive(Clone, Debug, Default)]
pub struct ShownVersions {
    by_file: BTreeMap<String, Vec<ShownVersion>>,
}

/// One text of a file as a prompt showed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShownVersion {
    /// The round whose prompt first showed this text.
    pub round: u32,
    pub text: String,
}

impl ShownVersions {
    /// Remembers that a prompt of `round` showed `text` as `file`'s
    /// current text (a text already remembered keeps its first round).
    pub fn remember(&mut self, file: &str, round: u32, text: &str) {
        if text.len() > MAX_TEXT_BYTES {
            return;
        }
        let versions = self.by_file.entry(file.to_string()).or_default();
        if versions.iter().any(|v| v.text == text) {
            return;
        }
        versions.push(ShownVersion {
            round,
            text: text.to_string(),
        });
        if versions.len() > VERSIONS_PER_FILE {
            // Keep the first shown; drop the oldest of the others.
            versions.remove(1);
        }
    }

    /// The versions of `file`, most recent first.
    pub fn of(&self, file: &str) -> impl Iterator<Item = &ShownVersion> {
        self.by_file.get(file).into_iter().flatten().rev()
    }
}

/// The edits applied in memory, with the files merged from an earlier
/// version and the hunks left out (see [`apply_or_rebase`]).
type Applied = (Vec<FileOutcome>, Vec<Rebased>, Vec<String>);

/// The edits applied in memory: as they are, or with the diffs that fit
/// only an earlier shown version rebased onto the current text, or — when
/// neither fits whole — the hunks that apply, the failing ones left out
/// when they are independent of them ([`patch::apply_partial`]).
pub(super) fn apply_or_rebase(
    edits: &[FileEdit],
    shown: &ShownVersions,
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Result<Applied, Rejection> {
    match apply_whole_or_rebase(edits, shown, read) {
        Ok((applied, rebased)) => Ok((applied, rebased, Vec::new())),
        Err(Rejection::DoesNotApply(error)) => match patch::apply_partial(edits, read) {
            Ok(partial) if partial.outcomes.iter().any(|o| o.before != o.after) => {
                Ok((partial.outcomes, Vec::new(), partial.left))
            }
            _ => Err(Rejection::DoesNotApply(error)),
        },
        Err(other) => Err(other),
    }
}

/// The edits applied as they are, or rebased; all or nothing (a split and
/// a subset are made of whole hunks).
pub(super) fn apply_whole_or_rebase(
    edits: &[FileEdit],
    shown: &ShownVersions,
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Result<(Vec<FileOutcome>, Vec<Rebased>), Rejection> {
    let error = match patch::apply(edits, read) {
        Ok(applied) => return Ok((applied, Vec::new())),
        Err(error) => error,
    };
    let mut edits = edits.to_vec();
    let mut rebased = Vec::new();
    let mut conflicts: Vec<MergeConflict> = Vec::new();
    for edit in &mut edits {
        let (EditOp::Patch(hunks), Some(current)) = (&edit.op, read(&edit.path)) else {
            continue;
        };
        if patch::apply(std::slice::from_ref(edit), read).is_ok() {
            continue;
        }
        for version in shown.of(&edit.path) {
            if version.text.as_bytes() == current.as_slice() {
                continue;
            }
            match patch::rebase(&edit.path, hunks, version.text.as_bytes(), &current) {
                Rebase::Merged(bytes) => {
                    rebased.push(Rebased {
                        file: TargetPath::new(edit.path.as_str()),
                        shown_in_round: version.round,
                    });
                    edit.op = EditOp::Replace(String::from_utf8_lossy(&bytes).into_owned());
                    break;
                }
                Rebase::Conflicts(regions) => {
                    conflicts.push(MergeConflict {
                        path: edit.path.clone(),
                        version: format!("shown in round {}", version.round),
                        regions,
                    });
                }
                Rebase::NotApplicable => {}
            }
        }
    }
    let unmerged = |c: &MergeConflict| !rebased.iter().any(|r| r.file == c.path);
    if let Some(conflict) = conflicts.into_iter().find(unmerged) {
        return Err(Rejection::MergeConflict(conflict));
    }
    if rebased.is_empty() {
        return Err(Rejection::DoesNotApply(error));
    }
    match patch::apply(&edits, read) {
        Ok(applied) => Ok((applied, rebased)),
        Err(error) => Err(Rejection::DoesNotApply(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_keeps_the_first_version_and_the_most_recent_others() {
        let mut shown = ShownVersions::default();
        for round in 1..=6 {
            shown.remember("m.py", round, &format!("x = {round}\n"));
            // Showing the same text again changes nothing.
            shown.remember("m.py", round + 10, &format!("x = {round}\n"));
        }
        let rounds: Vec<u32> = shown.of("m.py").map(|v| v.round).collect();
        assert_eq!(rounds, vec![6, 5, 4, 1]);
        assert_eq!(shown.of("other.py").count(), 0);
        shown.remember("big.py", 1, &"x".repeat(MAX_TEXT_BYTES + 1));
        assert_eq!(shown.of("big.py").count(), 0);
    }
}
