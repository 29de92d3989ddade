//! Applies edits all together or not at all: every hunk of every file is
//! located first; only when all succeed are the new contents computed.
//! Keeps line endings, BOM, final newline, tabs and non-ASCII text.

use super::intent::{self, Reading};
use super::locate::{self, FileView, Level, Located, Placement, Reindent};
use super::report;
use super::text::{self, Document, Line};
use super::{EditOp, FileEdit, FileOutcome, Hunk, HunkLine, PatchError};

/// A file as it evolves while the edits of one reply are applied.
struct Slot {
    path: String,
    before: Option<Vec<u8>>,
    after: Option<Vec<u8>>,
}

/// See [`super::apply`] and [`super::apply_partial`]: the outcomes and
/// the hunks left out (only with `partial`).
pub(crate) fn apply_all(
    edits: &[FileEdit],
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
    partial: bool,
) -> Result<(Vec<FileOutcome>, Vec<String>), PatchError> {
    let mut left: Vec<String> = Vec::new();
    let mut slots: Vec<Slot> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for edit in edits {
        let index = match slots.iter().position(|s| s.path == edit.path) {
            Some(i) => i,
            None => {
                let before = read(&edit.path);
                slots.push(Slot {
                    path: edit.path.clone(),
                    after: before.clone(),
                    before,
                });
                slots.len() - 1
            }
        };
        let slot = &mut slots[index];
        if let EditOp::Move { from, hunks } = &edit.op {
            match apply_move(&edit.path, from, hunks, slot.after.as_deref(), read) {
                Ok(after) => slot.after = Some(after),
                Err(mut reasons) => failures.append(&mut reasons),
            }
            continue;
        }
        if let (true, EditOp::Patch(hunks), Some(bytes)) = (partial, &edit.op, &slot.after) {
            let some =
                decode(&edit.path, bytes).and_then(|doc| patch_some(&edit.path, &doc, hunks, true));
            match some {
                Ok((doc, mut rest)) => {
                    slot.after = Some(doc.encode());
                    left.append(&mut rest);
                }
                Err(mut reasons) => failures.append(&mut reasons),
            }
            continue;
        }
        match apply_one(&edit.path, &edit.op, slot.after.as_deref()) {
            Ok(after) => slot.after = after,
            Err(mut reasons) => failures.append(&mut reasons),
        }
    }
    if !failures.is_empty() {
        let count = failures.len();
        let mut message = format!(
            "the patch was not applied (no file was changed); {count} problem{} to fix:",
            if count == 1 { "" } else { "s" }
        );
        for failure in failures {
            message.push_str("\n- ");
            message.push_str(&failure);
        }
        return Err(PatchError::Apply(message));
    }
    let outcomes = slots
        .into_iter()
        .map(|s| FileOutcome {
            path: s.path,
            before: s.before,
            after: s.after,
        })
        .collect();
    Ok((outcomes, left))
}

/// The new bytes of one file (`None`: deleted), or the reasons it failed.
fn apply_one(
    path: &str,
    op: &EditOp,
    current: Option<&[u8]>,
) -> Result<Option<Vec<u8>>, Vec<String>> {
    match (op, current) {
        (EditOp::Delete, None) => Err(vec![format!(
            "`{path}` cannot be deleted: it does not exist"
        )]),
        (EditOp::Delete, Some(_)) => Ok(None),
        (EditOp::Create(text) | EditOp::Replace(text), None) => Ok(Some(text.as_bytes().to_vec())),
        (EditOp::Create(text), Some(bytes)) => {
            let same =
                Document::decode(bytes).is_some_and(|d| d.to_text().replace("\r\n", "\n") == *text);
            if bytes.is_empty() || same {
                Ok(Some(match Document::decode(bytes) {
                    Some(doc) if !bytes.is_empty() => text::restyle(text, &doc).encode(),
                    _ => text.as_bytes().to_vec(),
                }))
            } else {
                Err(vec![format!(
                    "`{path}` already exists, so it cannot be created (`--- /dev/null`); send a \
                     diff against its current text instead"
                )])
            }
        }
        (EditOp::Replace(text), Some(bytes)) => {
            let doc = decode(path, bytes)?;
            Ok(Some(text::restyle(text, &doc).encode()))
        }
        (EditOp::Patch(hunks), None) => {
            if hunks.iter().all(|h| locate::old_side(&h.lines).is_empty()) {
                let doc = patch_document(path, &Document::from_text(false, ""), hunks)?;
                Ok(Some(doc.encode()))
            } else {
                Err(vec![format!(
                    "`{path}` does not exist, so its diff cannot be applied; to create a new \
                     file, use `--- /dev/null` and `+++ b/{path}` with only `+` lines"
                )])
            }
        }
        (EditOp::Patch(hunks), Some(bytes)) => {
            let doc = decode(path, bytes)?;
            Ok(Some(patch_document(path, &doc, hunks)?.encode()))
        }
        (EditOp::Move { from, .. }, _) => {
            Err(vec![format!("`{from}` cannot be renamed to `{path}` here")])
        }
    }
}

/// The new bytes of a file moved from `from` (its text before the reply,
/// with `hunks` applied), or the reasons it failed: `from` must exist and
/// `path` must not.
fn apply_move(
    path: &str,
    from: &str,
    hunks: &[Hunk],
    current: Option<&[u8]>,
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Result<Vec<u8>, Vec<String>> {
    if current.is_some() {
        return Err(vec![format!(
            "`{from}` cannot be renamed to `{path}`: `{path}` already exists"
        )]);
    }
    let Some(bytes) = read(from) else {
        return Err(vec![format!(
            "`{from}` cannot be renamed to `{path}`: it does not exist"
        )]);
    };
    if hunks.is_empty() {
        return Ok(bytes);
    }
    let doc = decode(from, &bytes)?;
    Ok(patch_document(path, &doc, hunks)?.encode())
}

/// Decodes a file or explains why it cannot be patched.
fn decode(path: &str, bytes: &[u8]) -> Result<Document, Vec<String>> {
    Document::decode(bytes).ok_or_else(|| {
        vec![format!(
            "`{path}` is not valid UTF-8 text, so it cannot be patched"
        )]
    })
}

/// Applies all hunks to one document, or returns every failing hunk.
pub(crate) fn patch_document(
    path: &str,
    doc: &Document,
    hunks: &[Hunk],
) -> Result<Document, Vec<String>> {
    let (out, left) = patch_some(path, doc, hunks, false)?;
    debug_assert!(left.is_empty());
    Ok(out)
}

/// One hunk placed: the file lines it replaces and their new text.
struct Placed {
    hunk: usize,
    start: usize,
    len: usize,
    lines: Vec<Line>,
}

/// Applies the hunks to one document. With `partial`, hunks that cannot be
/// placed are left out (and described in the second value) when at least
/// one hunk is placed and none of the left ones is tied to a placed one
/// (see [`intent::independent`]); otherwise every failing hunk is an error.
pub(crate) fn patch_some(
    path: &str,
    doc: &Document,
    hunks: &[Hunk],
    partial: bool,
) -> Result<(Document, Vec<String>), Vec<String>> {
    let texts = doc.texts();
    let (mut placed, mut failures, failed) = place_all(path, doc, &texts, hunks);
    placed.sort_by_key(|p| p.start);
    let mut overlaps = Vec::new();
    for pair in placed.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if a.start + a.len > b.start || a.len == 0 && b.start == a.start {
            overlaps.push(report::overlap(
                path,
                (a.hunk, a.start + 1, a.start + a.len),
                (b.hunk, b.start + 1, b.start + b.len),
            ));
        }
    }
    let leave = partial
        && overlaps.is_empty()
        && !placed.is_empty()
        && failed.iter().all(|&f| {
            placed
                .iter()
                .all(|p| intent::independent(&hunks[f], &hunks[p.hunk], &texts))
        });
    if !overlaps.is_empty() || !failures.is_empty() && !leave {
        failures.append(&mut overlaps);
        return Err(failures);
    }
    let mut lines: Vec<Line> = Vec::with_capacity(doc.lines.len() + 16);
    let mut cursor = 0;
    let mut final_newline = doc.final_newline;
    for p in placed {
        let hunk = &hunks[p.hunk];
        lines.extend_from_slice(&doc.lines[cursor..p.start]);
        lines.extend(p.lines);
        cursor = p.start + p.len;
        if cursor == doc.lines.len() && hunk.old_no_eol != hunk.new_no_eol {
            final_newline = !hunk.new_no_eol;
        }
    }
    lines.extend_from_slice(&doc.lines[cursor..]);
    let mut out = Document {
        bom: doc.bom,
        lines,
        eol: doc.eol,
        final_newline,
    };
    out.settle_endings(final_newline);
    Ok((out, failures))
}

/// Every hunk placed, or why not: the placed ones, the failures and the
/// indexes of the failing hunks.
fn place_all(
    path: &str,
    doc: &Document,
    texts: &[&str],
    hunks: &[Hunk],
) -> (Vec<Placed>, Vec<String>, Vec<usize>) {
    let texts = texts.to_vec();
    let view = FileView::new(&texts);
    let mut placed: Vec<Placed> = Vec::new();
    let mut failures = Vec::new();
    let mut failed = Vec::new();
    for (k, hunk) in hunks.iter().enumerate() {
        let label = report::hunk_label(k, hunks.len(), hunk);
        // A hunk without markers is only ever a region's new text: the
        // looser matches of `locate` (edge lines trimmed) would read it as
        // "no change" wherever part of it fits.
        let located = if hunk.changes_something() {
            locate::locate(&view, hunk)
        } else {
            Located::NotFound
        };
        let failure = match located {
            Located::Found(p) => {
                placed.push(Placed {
                    hunk: k,
                    start: p.start,
                    len: p.len,
                    lines: replacement(doc, hunk, &p),
                });
                continue;
            }
            Located::Ambiguous(lines) => report::ambiguous(path, &label, &lines),
            Located::NotFound => match intent::read(&texts, hunk) {
                Reading::Region(region) => {
                    placed.push(Placed {
                        hunk: k,
                        start: region.start,
                        len: region.len,
                        lines: region
                            .lines
                            .into_iter()
                            .map(|text| Line { text, eol: "" })
                            .collect(),
                    });
                    continue;
                }
                Reading::Ambiguous(lines) => report::ambiguous_region(path, &label, &lines),
                Reading::Unreadable => report::not_found(path, &label, hunk, &texts),
            },
            Located::NoAnchor => report::no_anchor(path, &label),
        };
        failures.push(failure);
        failed.push(k);
    }
    (placed, failures, failed)
}

/// The lines that replace the region a hunk covers: the file's own context
/// lines (byte for byte) and the added lines (re-indented if needed).
fn replacement(doc: &Document, hunk: &Hunk, p: &Placement) -> Vec<Line> {
    let kept = &hunk.lines[p.lead..hunk.lines.len() - p.tail];
    let reindent = (p.level == Level::Indentation).then(|| {
        let file: Vec<&str> = doc.lines[p.start..p.start + p.len]
            .iter()
            .map(|l| l.text.as_str())
            .collect();
        Reindent::learn(kept, &file)
    });
    let mut out: Vec<Line> = Vec::with_capacity(kept.len());
    let mut at = p.start;
    let mut i = 0;
    while i < kept.len() {
        match &kept[i] {
            HunkLine::Context(_) => {
                out.push(doc.lines[at].clone());
                at += 1;
            }
            HunkLine::Remove(_) => at += 1,
            HunkLine::Add(_) => {
                let run: Vec<&str> = kept[i..]
                    .iter()
                    .map_while(|l| match l {
                        HunkLine::Add(t) => Some(t.as_str()),
                        _ => None,
                    })
                    .collect();
                let first = i;
                i += run.len();
                // A pure addition whose text stands right there already (or
                // that is written twice in a row) is not made twice.
                let run = intent::once(&run).to_vec();
                let pure = first == 0 || !matches!(kept[first - 1], HunkLine::Remove(_));
                let texts: Vec<&str> = doc.lines[p.start.saturating_sub(run.len())..p.start]
                    .iter()
                    .chain(&out)
                    .map(|l| l.text.as_str())
                    .collect();
                let next: Vec<&str> = doc.lines[at..].iter().map(|l| l.text.as_str()).collect();
                if pure && intent::repeats(&run, &texts, &next) {
                    continue;
                }
                out.extend(run.iter().map(|t| Line {
                    text: match &reindent {
                        Some(r) => r.apply(t),
                        None => t.to_string(),
                    },
                    eol: "",
                }));
                continue;
            }
        }
        i += 1;
    }
    out
}
