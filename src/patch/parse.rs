//! From a model reply to file edits: finds diffs (fenced or bare) and, when
//! there are none, whole-file answers; resolves paths; merges several diffs
//! of the same file into one edit.

use super::diff::{self, Origin, RawFileDiff, RawPath};
use super::{fence, paths, whole, EditOp, FileEdit, Hunk, HunkLine, PatchError, ReplyContext};

/// Fence languages that announce a diff.
const DIFF_LANGUAGES: &[&str] = &["diff", "patch", "udiff", "git"];

/// See [`super::parse_reply`].
pub(crate) fn parse(reply: &str, ctx: &ReplyContext) -> Result<Vec<FileEdit>, PatchError> {
    let normalized = reply.replace("\r\n", "\n");
    let lines: Vec<&str> = normalized.lines().collect();
    let segments = fence::segments(&lines);
    let mut raws: Vec<RawFileDiff> = Vec::new();
    for seg in &segments {
        let origin = match &seg.info {
            None => Origin::Bare,
            Some(_) if DIFF_LANGUAGES.contains(&seg.language().as_str()) => Origin::DiffBlock,
            Some(_) => Origin::Fenced,
        };
        if origin != Origin::DiffBlock && !diff::looks_like_diff(seg.lines) {
            continue;
        }
        raws.extend(diff::parse_diffs(seg.lines, origin));
    }
    if !raws.is_empty() {
        return edits_from_diffs(raws, ctx);
    }
    let files = whole::extract(&segments, ctx)?;
    if files.is_empty() {
        return Err(PatchError::NoChange);
    }
    let edits = files
        .into_iter()
        .map(|f| FileEdit {
            path: f.path,
            op: EditOp::Replace(f.text),
        })
        .collect();
    merge(edits)
}

/// Turns raw diffs into edits.
fn edits_from_diffs(
    raws: Vec<RawFileDiff>,
    ctx: &ReplyContext,
) -> Result<Vec<FileEdit>, PatchError> {
    let mut edits = Vec::new();
    let mut empty: Vec<String> = Vec::new();
    for raw in raws {
        let resolve = |p: &Option<RawPath>| match p {
            Some(RawPath::Path(p)) if !p.is_empty() => Some(paths::resolve(p, ctx)),
            _ => None,
        };
        let (old, new) = (resolve(&raw.old), resolve(&raw.new));
        let deleted = raw.new == Some(RawPath::DevNull) || raw.git_deleted;
        let created = raw.old == Some(RawPath::DevNull) || raw.git_new;
        let path = match (&old, &new) {
            _ if deleted => old.clone().or(new.clone()),
            _ if created => new.clone().or(old.clone()),
            (Some(o), Some(n)) if o != n && ctx.requested.contains(o) => Some(o.clone()),
            _ => new.clone().or(old.clone()),
        };
        let path = match (path, ctx.requested.as_slice()) {
            (Some(p), _) => p,
            (None, [only]) => only.clone(),
            (None, requested) => {
                return Err(PatchError::Parse(format!(
                    "a hunk has no `--- a/<path>` and `+++ b/<path>` header lines, and {} files \
                     were shown, so it is unclear which file it changes; start each file's diff \
                     with those two lines",
                    requested.len()
                )))
            }
        };
        if deleted {
            edits.push(FileEdit {
                path,
                op: EditOp::Delete,
            });
            continue;
        }
        let hunks: Vec<Hunk> = raw
            .hunks
            .into_iter()
            .filter(Hunk::changes_something)
            .collect();
        if hunks.is_empty() {
            empty.push(path);
            continue;
        }
        let op = if created {
            EditOp::Create(created_text(&path, &hunks)?)
        } else {
            EditOp::Patch(hunks)
        };
        edits.push(FileEdit { path, op });
    }
    if edits.is_empty() {
        let names = empty
            .iter()
            .map(|p| format!("`{p}`"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(PatchError::Parse(format!(
            "the diff for {names} changes nothing: it has no hunk with `-` or `+` lines; write \
             each hunk as `@@ ... @@` followed by ` ` (unchanged), `-` (removed) and `+` (added) lines"
        )));
    }
    merge(edits)
}

/// The text of a new file from its hunks.
fn created_text(path: &str, hunks: &[Hunk]) -> Result<String, PatchError> {
    let mut text = String::new();
    let mut final_newline = true;
    for hunk in hunks {
        for line in &hunk.lines {
            match line {
                HunkLine::Add(t) | HunkLine::Context(t) => {
                    text.push_str(t);
                    text.push('\n');
                }
                HunkLine::Remove(t) => {
                    return Err(PatchError::Parse(format!(
                        "the diff creates `{path}` (`--- /dev/null`) but removes a line from it \
                         (`-{t}`); a new file has only `+` lines"
                    )))
                }
            }
        }
        final_newline = !hunk.new_no_eol;
    }
    if !final_newline {
        text.pop();
    }
    Ok(text)
}

/// One edit per path: hunks of several diffs of one file are joined.
fn merge(edits: Vec<FileEdit>) -> Result<Vec<FileEdit>, PatchError> {
    let mut out: Vec<FileEdit> = Vec::new();
    for edit in edits {
        let Some(existing) = out.iter_mut().find(|e| e.path == edit.path) else {
            out.push(edit);
            continue;
        };
        match (&mut existing.op, edit.op) {
            (EditOp::Patch(hunks), EditOp::Patch(more)) => {
                for hunk in more {
                    if !hunks.contains(&hunk) {
                        hunks.push(hunk);
                    }
                }
            }
            (a, b) if *a == b => {}
            _ => {
                return Err(PatchError::Parse(format!(
                    "the reply changes `{}` more than once in different ways (for example a \
                     whole file and a diff); send one change per file",
                    edit.path
                )))
            }
        }
    }
    Ok(out)
}
