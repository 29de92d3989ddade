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
        if let Some((from, to)) = renamed(&raw, ctx) {
            let hunks = raw.hunks.into_iter().filter(Hunk::changes_something);
            edits.push(FileEdit {
                path: from.clone(),
                op: EditOp::Delete,
            });
            edits.push(FileEdit {
                path: to,
                op: EditOp::Move {
                    from,
                    hunks: hunks.collect(),
                },
            });
            continue;
        }
        match edit_of(raw, ctx)? {
            Ok(edit) => edits.push(edit),
            Err(nothing) => empty.push(nothing),
        }
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

/// The edit one file's diff (not a rename) makes: `Ok(Err(path))` when it
/// changes nothing.
fn edit_of(raw: RawFileDiff, ctx: &ReplyContext) -> Result<Result<FileEdit, String>, PatchError> {
    let deleted = raw.new == Some(RawPath::DevNull) || raw.git_deleted;
    let created = raw.old == Some(RawPath::DevNull) || raw.git_new;
    let path = path_of(&raw, ctx, deleted, created)?;
    if deleted {
        return Ok(Ok(FileEdit {
            path,
            op: EditOp::Delete,
        }));
    }
    if !raw.hunks.iter().any(Hunk::changes_something) && !created {
        // Only unmarked lines: each hunk may be a region's new text.
        let hunks: Vec<Hunk> = raw.hunks.into_iter().filter(Hunk::may_change).collect();
        if hunks.is_empty() {
            return Ok(Err(path));
        }
        return Ok(Ok(FileEdit {
            path,
            op: EditOp::Patch(hunks),
        }));
    }
    let hunks: Vec<Hunk> = raw.hunks.into_iter().filter(Hunk::may_change).collect();
    if hunks.is_empty() {
        return Ok(Err(path));
    }
    let op = if created {
        EditOp::Create(created_text(&path, &hunks)?)
    } else {
        EditOp::Patch(hunks)
    };
    Ok(Ok(FileEdit { path, op }))
}

/// The file one diff changes: the side its headers name (an unsafe side
/// first, so the Reviewer refuses it by name instead of the change
/// landing on the other side's file), else the only file requested.
fn path_of(
    raw: &RawFileDiff,
    ctx: &ReplyContext,
    deleted: bool,
    created: bool,
) -> Result<String, PatchError> {
    let resolve = |p: &Option<RawPath>| match p {
        Some(RawPath::Path(p)) if !p.is_empty() => Some(paths::resolve(p, ctx)),
        _ => None,
    };
    let (old, new) = (resolve(&raw.old), resolve(&raw.new));
    let unsafe_side = [&old, &new]
        .into_iter()
        .flatten()
        .find(|p| paths::is_unsafe(p))
        .cloned();
    let path = match (&old, &new) {
        _ if unsafe_side.is_some() => unsafe_side,
        _ if deleted => old.clone().or(new.clone()),
        _ if created => new.clone().or(old.clone()),
        (Some(o), Some(n)) if o != n && ctx.requested.contains(o) => Some(o.clone()),
        _ => new.clone().or(old.clone()),
    };
    match (path, ctx.requested.as_slice()) {
        (Some(p), _) => Ok(p),
        (None, _) if raw.unread_git_header.is_some() => Err(PatchError::Parse(format!(
            "the line `diff --git {}` names no file in the `a/<path> b/<path>` form, so \
             it is unclear which file the diff changes; start each file's diff with \
             `--- a/<path>` and `+++ b/<path>` lines",
            raw.unread_git_header.clone().unwrap_or_default()
        ))),
        (None, [only]) => Ok(only.clone()),
        (None, requested) => Err(PatchError::Parse(format!(
            "a hunk has no `--- a/<path>` and `+++ b/<path>` header lines, and {} files \
             were shown, so it is unclear which file it changes; start each file's diff \
             with those two lines",
            requested.len()
        ))),
    }
}

/// The two paths of a git rename (`rename from` / `rename to`, which
/// the `diff --git` line's paths stand in for when one is missing), when
/// they differ.
fn renamed(raw: &RawFileDiff, ctx: &ReplyContext) -> Option<(String, String)> {
    if raw.rename_from.is_none() && raw.rename_to.is_none() {
        return None;
    }
    let side = |named: &Option<String>, header: &Option<RawPath>| match (named, header) {
        (Some(p), _) if !p.is_empty() => Some(paths::resolve(p, ctx)),
        (_, Some(RawPath::Path(p))) if !p.is_empty() => Some(paths::resolve(p, ctx)),
        _ => None,
    };
    let from = side(&raw.rename_from, &raw.old)?;
    let to = side(&raw.rename_to, &raw.new)?;
    (from != to).then_some((from, to))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ReplyContext {
        ReplyContext {
            target_prefix: String::new(),
            requested: vec!["stats.py".into()],
            language: crate::CodeLanguage::python(),
        }
    }

    fn paths_of(reply: &str) -> Result<Vec<String>, PatchError> {
        parse(reply, &ctx()).map(|edits| edits.into_iter().map(|e| e.path).collect())
    }

    #[test]
    fn a_whole_file_labelled_with_an_unsafe_path_keeps_that_path() {
        let reply = "FILE: .git/hooks/post-merge\n```\nimport os\nos.system('id')\n```\n";
        assert_eq!(paths_of(reply).unwrap(), vec![".git/hooks/post-merge"]);
        let reply = "### /etc/cron.d/job\n```python\nx = 1\n```\n";
        assert_eq!(paths_of(reply).unwrap(), vec!["/etc/cron.d/job"]);
    }

    #[test]
    fn a_label_that_is_no_path_is_named_in_the_reason() {
        let reply = "FILE: post-merge\n```\nx = 1\n```\n";
        let err = paths_of(reply).unwrap_err();
        assert!(
            matches!(&err, PatchError::Parse(m) if m.contains("`post-merge`")),
            "{err}"
        );
    }

    #[test]
    fn a_diff_naming_an_unsafe_side_is_kept_on_that_side() {
        let reply = "```diff\n--- a/stats.py\n+++ b/.git/hooks/post-merge\n@@ @@\n-x\n+y\n```\n";
        assert_eq!(paths_of(reply).unwrap(), vec![".git/hooks/post-merge"]);
        let reply = "```diff\n--- a/../outside.py\n+++ b/stats.py\n@@ @@\n-x\n+y\n```\n";
        assert_eq!(paths_of(reply).unwrap(), vec!["../outside.py"]);
        // An ordinary rename-looking header still lands on the requested file.
        let reply = "```diff\n--- a/stats.py\n+++ b/stats_fixed.py\n@@ @@\n-x\n+y\n```\n";
        assert_eq!(paths_of(reply).unwrap(), vec!["stats.py"]);
    }

    #[test]
    fn an_unreadable_git_header_never_falls_back_to_the_requested_file() {
        let reply = "```diff\ndiff --git one two three\n@@ @@\n-x\n+y\n```\n";
        let err = paths_of(reply).unwrap_err();
        assert!(
            matches!(&err, PatchError::Parse(m) if m.contains("one two three")),
            "{err}"
        );
        let reply = "```diff\ndiff --git .git/config .git/config\n@@ @@\n-x\n+y\n```\n";
        assert_eq!(paths_of(reply).unwrap(), vec![".git/config"]);
        // A hunk with no header at all still belongs to the one requested file.
        let reply = "```diff\n@@ @@\n-x\n+y\n```\n";
        assert_eq!(paths_of(reply).unwrap(), vec!["stats.py"]);
    }

    #[test]
    fn a_git_rename_moves_the_file_with_its_hunks_and_deletes_the_old_one() {
        let read = |p: &str| match p {
            "shop/cart.py" => Some(b"def total(xs):\n    return sum(xs)\n".to_vec()),
            _ => None,
        };
        let reply = "```diff\ndiff --git a/shop/cart.py b/shop/basket.py\nsimilarity index 90%\n\
                     rename from shop/cart.py\nrename to shop/basket.py\n--- a/shop/cart.py\n\
                     +++ b/shop/basket.py\n@@ -1,2 +1,2 @@\n-def total(xs):\n+def total(items):\n\
                     -    return sum(xs)\n+    return sum(items)\n```\n";
        let edits = parse(reply, &ctx()).unwrap();
        assert_eq!(
            edits.iter().map(|e| e.path.as_str()).collect::<Vec<_>>(),
            vec!["shop/cart.py", "shop/basket.py"]
        );
        let outcomes = crate::apply(&edits, &read).unwrap();
        assert_eq!(outcomes[0].after, None, "the old path is deleted");
        assert_eq!(
            outcomes[1].after.as_deref(),
            Some(&b"def total(items):\n    return sum(items)\n"[..])
        );
        // A pure rename (no hunks) moves the text as it is.
        let reply = "diff --git a/shop/cart.py b/shop/basket.py\nsimilarity index 100%\n\
                     rename from shop/cart.py\nrename to shop/basket.py\n";
        let outcomes = crate::apply(&parse(reply, &ctx()).unwrap(), &read).unwrap();
        assert_eq!(outcomes[1].after, read("shop/cart.py"));
        // A rename onto an existing file, or of a missing one, changes nothing.
        let onto = |p: &str| read(p).or_else(|| (p == "shop/basket.py").then(Vec::new));
        assert!(crate::apply(&parse(reply, &ctx()).unwrap(), &onto).is_err());
        assert!(crate::apply(&parse(reply, &ctx()).unwrap(), &|_| None).is_err());
    }
}
