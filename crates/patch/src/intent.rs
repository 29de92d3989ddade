//! Reads a hunk that does not fit the file as written for what a small model
//! means by it: "this region should read like this". Small models write the
//! line they change once, as context (`ranked = sorted(…, reverse=True)`
//! where the file has no `reverse=True`), mark the new text as removed, or
//! leave the markers off altogether. The hunk's intended text is then its
//! context and added lines (and removed lines that are not in the file);
//! the region is anchored by its first and last lines that do match the
//! file, and must be the only such region.
//!
//! What keeps this honest: every file line the reading drops is either
//! removed by the hunk itself or replaced, in the same place, by a line the
//! model wrote (a block of the region's diff never deletes more lines than
//! it inserts, removed lines aside); an intended text that is already there
//! changes nothing; an inserted block whose text the region already holds
//! right beside it is not inserted again.

use similar::{capture_diff_slices, Algorithm, DiffOp};

use super::locate::Reindent;
use super::{Hunk, HunkLine};

/// Where a read hunk goes and what the file lines there become.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Region {
    /// First file line replaced (0-based).
    pub(crate) start: usize,
    /// Number of file lines replaced.
    pub(crate) len: usize,
    /// Their new text (file lines kept are the file's own text).
    pub(crate) lines: Vec<String>,
}

/// The outcome of reading a hunk as a region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reading {
    Region(Region),
    /// Several regions fit: their first lines (1-based).
    Ambiguous(Vec<usize>),
    /// No region fits.
    Unreadable,
}

/// Lines compared ignoring trailing whitespace, then ignoring indentation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Trailing,
    Indentation,
}

fn key(line: &str, level: Level) -> &str {
    match level {
        Level::Trailing => line.trim_end(),
        Level::Indentation => line.trim(),
    }
}

/// The hunk's intended text and the texts it explicitly removes. Removed
/// lines replaced by added ones are dropped; removed lines with no added
/// line after them stay removed when the file has them, and are the new
/// text when it does not. Stale (third value) when a removed line replaced
/// by added ones is not in the file (and is not their text either): the
/// diff was written against another text, and reading it would overwrite
/// that line's current text with the model's (a rebase's business) — it
/// may then only be found already applied.
fn intended<'h>(hunk: &'h Hunk, file: &[&str]) -> (Vec<&'h str>, Vec<&'h str>, bool) {
    let in_file = |t: &str| file.iter().any(|f| f.trim_end() == t.trim_end());
    let mut text = Vec::new();
    let mut removed = Vec::new();
    let mut is_stale = false;
    let lines = &hunk.lines;
    let mut i = 0;
    while i < lines.len() {
        if let HunkLine::Context(t) = &lines[i] {
            text.push(t.as_str());
            i += 1;
            continue;
        }
        let run_end = lines[i..]
            .iter()
            .position(|l| matches!(l, HunkLine::Context(_)))
            .map_or(lines.len(), |p| i + p);
        let run = &lines[i..run_end];
        let adds = run.iter().any(|l| matches!(l, HunkLine::Add(_)));
        let added = |t: &str| {
            run.iter()
                .any(|l| matches!(l, HunkLine::Add(a) if a.trim() == t.trim()))
        };
        let stale = |l: &HunkLine| matches!(l, HunkLine::Remove(t) if !in_file(t) && !added(t));
        is_stale |= adds && run.iter().any(stale);
        for line in run {
            match line {
                HunkLine::Add(t) => text.push(t.as_str()),
                HunkLine::Remove(t) if adds || in_file(t) => removed.push(t.as_str()),
                HunkLine::Remove(t) => text.push(t.as_str()),
                HunkLine::Context(_) => {}
            }
        }
        i = run_end;
    }
    (text, removed, is_stale)
}

/// Reads `hunk` as the new text of one region of `file`.
pub(crate) fn read(file: &[&str], hunk: &Hunk) -> Reading {
    let (text, removed, stale) = intended(hunk, file);
    if text.iter().all(|t| t.trim().is_empty()) {
        return Reading::Unreadable;
    }
    for level in [Level::Trailing, Level::Indentation] {
        let mut found = candidates(file, &text, &removed, level);
        if stale {
            found.retain(|r| r.len == 0 && r.lines.is_empty());
        }
        match found.len() {
            0 => continue,
            1 => {
                return found
                    .into_iter()
                    .next()
                    .map_or(Reading::Unreadable, Reading::Region)
            }
            _ => {
                let mut starts: Vec<usize> = found.iter().map(|r| r.start + 1).collect();
                starts.sort_unstable();
                starts.dedup();
                return Reading::Ambiguous(starts);
            }
        }
    }
    Reading::Unreadable
}

/// True when the lines hold something besides whitespace.
fn solid(lines: &[&str]) -> bool {
    lines.iter().any(|l| !l.trim().is_empty())
}

/// Every region of `file` that `text` can be read as the new text of.
fn candidates(file: &[&str], text: &[&str], removed: &[&str], level: Level) -> Vec<Region> {
    let n = text.len();
    let eq = |t: &str, f: &str| key(t, level) == key(f, level);
    let mut found: Vec<Region> = Vec::new();
    for s in 0..file.len() {
        let lead = (0..n)
            .take_while(|&i| s + i < file.len() && eq(text[i], file[s + i]))
            .count();
        if lead == 0 || !solid(&text[..lead]) {
            continue;
        }
        if lead == n {
            // Already reads like this: nothing to change.
            found.push(Region {
                start: s,
                len: 0,
                lines: Vec::new(),
            });
            continue;
        }
        let longest = (n - lead) + removed.len();
        for e in (s + lead + 1)..=(s + lead + longest).min(file.len()) {
            let tail = (0..n - lead)
                .take_while(|&j| e - 1 - j >= s + lead && eq(text[n - 1 - j], file[e - 1 - j]))
                .count();
            if tail == 0 || !solid(&text[n - tail..]) {
                continue;
            }
            let middle = &file[s + lead..e - tail];
            let wanted = &text[lead..n - tail];
            let anchors: Vec<(&str, &str)> = (0..lead)
                .map(|i| (text[i], file[s + i]))
                .chain((0..tail).map(|j| (text[n - 1 - j], file[e - 1 - j])))
                .collect();
            if let Some(lines) = rewrite(middle, wanted, removed, level, &anchors) {
                found.push(Region {
                    start: s + lead,
                    len: middle.len(),
                    lines,
                });
            }
        }
    }
    found.dedup_by(|a, b| a.start == b.start && a.len == b.len);
    if found.is_empty() {
        found = one_sided(file, text, level);
    }
    found
}

/// Lines alike enough to be one line changed (not one line for another).
fn alike(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    a == b || similar::TextDiff::from_chars(a, b).ratio() >= 0.6
}

/// Regions anchored on one side only (a hunk that ends, or starts, at the
/// line it changes): the rest of `text` replaces as many file lines right
/// after (or before) the anchor, each by a line alike to it.
fn one_sided(file: &[&str], text: &[&str], level: Level) -> Vec<Region> {
    let n = text.len();
    let eq = |t: &str, f: &str| key(t, level) == key(f, level);
    let mut found = Vec::new();
    for s in 0..file.len() {
        let lead = (0..n)
            .take_while(|&i| s + i < file.len() && eq(text[i], file[s + i]))
            .count();
        let start = s + lead;
        if lead == 0 || lead == n || !solid(&text[..lead]) || start + (n - lead) > file.len() {
            continue;
        }
        let rest = &text[lead..];
        let there = &file[start..start + rest.len()];
        if rest.iter().zip(there).all(|(t, f)| alike(t, f)) {
            found.push(Region {
                start,
                len: rest.len(),
                lines: fitted(rest, &text[..lead], &file[s..start], level),
            });
        }
    }
    for e in (1..=file.len()).rev() {
        let tail = (0..n)
            .take_while(|&j| j < e && eq(text[n - 1 - j], file[e - 1 - j]))
            .count();
        if tail == 0 || tail == n || !solid(&text[n - tail..]) || e - tail < n - tail {
            continue;
        }
        let rest = &text[..n - tail];
        let start = e - tail - rest.len();
        let there = &file[start..e - tail];
        if rest.iter().zip(there).all(|(t, f)| alike(t, f)) {
            found.push(Region {
                start,
                len: rest.len(),
                lines: fitted(rest, &text[n - tail..], &file[e - tail..e], level),
            });
        }
    }
    found.sort_by_key(|r| (r.start, r.len));
    found.dedup_by(|a, b| a.start == b.start && a.len == b.len);
    found
}

/// `lines` as the file's lines, re-indented like the anchors when they
/// matched ignoring indentation.
fn fitted(lines: &[&str], anchor_text: &[&str], anchor_file: &[&str], level: Level) -> Vec<String> {
    if level == Level::Trailing {
        return lines.iter().map(|l| l.to_string()).collect();
    }
    let kept: Vec<HunkLine> = anchor_text
        .iter()
        .map(|t| HunkLine::Context(t.to_string()))
        .collect();
    let reindent = Reindent::learn(&kept, anchor_file);
    lines.iter().map(|l| reindent.apply(l)).collect()
}

/// The new text of `middle` when it reads as `wanted`: `None` when that
/// would drop a file line the model neither removed nor replaced.
fn rewrite(
    middle: &[&str],
    wanted: &[&str],
    removed: &[&str],
    level: Level,
    anchors: &[(&str, &str)],
) -> Option<Vec<String>> {
    let old: Vec<&str> = middle.iter().map(|l| key(l, level)).collect();
    let new: Vec<&str> = wanted.iter().map(|l| key(l, level)).collect();
    let reindent = (level == Level::Indentation).then(|| {
        let kept: Vec<HunkLine> = anchors
            .iter()
            .map(|(t, _)| HunkLine::Context(t.to_string()))
            .collect();
        let file: Vec<&str> = anchors.iter().map(|(_, f)| *f).collect();
        Reindent::learn(&kept, &file)
    });
    let fresh = |t: &str| match &reindent {
        Some(r) => r.apply(t),
        None => t.to_string(),
    };
    let mut out: Vec<String> = Vec::with_capacity(wanted.len());
    for op in capture_diff_slices(Algorithm::Myers, &old, &new) {
        match op {
            DiffOp::Equal { old_index, len, .. } => out.extend(
                middle[old_index..old_index + len]
                    .iter()
                    .map(|l| l.to_string()),
            ),
            DiffOp::Delete {
                old_index, old_len, ..
            } => {
                if !all_removed(&middle[old_index..old_index + old_len], removed) {
                    return None;
                }
            }
            DiffOp::Insert {
                new_index, new_len, ..
            } => {
                let block = once(&wanted[new_index..new_index + new_len]);
                let next = middle.get(op.old_range().start..).unwrap_or(&[]);
                if !repeats(block, &out, next) {
                    out.extend(block.iter().map(|t| fresh(t)));
                }
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                let gone = &middle[old_index..old_index + old_len];
                let unexplained = gone.iter().filter(|l| !is_removed(l, removed)).count();
                if unexplained > new_len {
                    return None;
                }
                out.extend(
                    once(&wanted[new_index..new_index + new_len])
                        .iter()
                        .map(|t| fresh(t)),
                );
            }
        }
    }
    Some(out)
}

/// A block written twice in a row (with some word in it) is meant once.
pub(crate) fn once<'a, 'b>(block: &'a [&'b str]) -> &'a [&'b str] {
    let half = block.len() / 2;
    let worded = block.iter().any(|l| l.chars().any(char::is_alphanumeric));
    if half > 0
        && block.len() % 2 == 0
        && worded
        && block[..half]
            .iter()
            .zip(&block[half..])
            .all(|(a, b)| a.trim() == b.trim())
    {
        &block[..half]
    } else {
        block
    }
}

fn is_removed(line: &str, removed: &[&str]) -> bool {
    removed.iter().any(|r| r.trim() == line.trim())
}

fn all_removed(lines: &[&str], removed: &[&str]) -> bool {
    lines.iter().all(|l| is_removed(l, removed))
}

/// True when an inserted `block` (with some word in it) already stands
/// right before it in `out` or right after it in `next`: inserting it would
/// apply the same addition twice.
pub(crate) fn repeats<S: AsRef<str>, T: AsRef<str>>(block: &[&str], out: &[S], next: &[T]) -> bool {
    if block.is_empty() || !block.iter().any(|l| l.chars().any(char::is_alphanumeric)) {
        return false;
    }
    let same = |a: &str, b: &str| a.trim() == b.trim();
    let before = out.len() >= block.len()
        && out[out.len() - block.len()..]
            .iter()
            .zip(block)
            .all(|(o, b)| same(o.as_ref(), b));
    let after = next.len() >= block.len()
        && next[..block.len()]
            .iter()
            .zip(block)
            .all(|(o, b)| same(o.as_ref(), b));
    before || after
}

/// The words a hunk brings into the file: identifiers in its added lines
/// (and lines it means as new) that the file does not have yet.
fn new_words<'h>(hunk: &'h Hunk, file: &[&str]) -> Vec<&'h str> {
    let mut words: Vec<&str> = Vec::new();
    for line in &hunk.lines {
        let (HunkLine::Add(t) | HunkLine::Context(t) | HunkLine::Remove(t)) = line;
        if matches!(line, HunkLine::Remove(_)) {
            continue;
        }
        for word in t.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if word.len() >= 2
                && !word.chars().all(|c| c.is_ascii_digit())
                && !words.contains(&word)
                && !file.iter().any(|f| contains_word(f, word))
            {
                words.push(word);
            }
        }
    }
    words
}

fn contains_word(line: &str, word: &str) -> bool {
    line.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| w == word)
}

/// True when two hunks of one file can be applied one without the other:
/// neither uses a word the other brings into the file (an import one adds
/// and the other uses, a function one defines and the other calls).
pub(crate) fn independent(a: &Hunk, b: &Hunk, file: &[&str]) -> bool {
    let (wa, wb) = (new_words(a, file), new_words(b, file));
    !wa.iter().any(|w| wb.contains(w))
}

#[cfg(test)]
mod tests;
