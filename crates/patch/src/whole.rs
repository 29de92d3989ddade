//! Reads whole-file answers: a fenced block named by a path line just above
//! it (`FILE: path`, `path:`, `### path`, `` `path` ``) or in its info
//! string, or a single Python block when only one file was asked for.
//!
//! A block whose label names another place — `FILE: .git/hooks/post-merge`,
//! `### /etc/passwd` — is that place's block, never the requested file's:
//! the path is kept as written so the Reviewer refuses it by name. A label
//! naming something that is no path at all (`FILE: post-merge`) makes the
//! reply unusable, with that name in the reason.

use std::sync::OnceLock;

use regex::Regex;

use super::fence::Segment;
use super::{numbers, paths, PatchError, ReplyContext};

/// A whole-file answer: resolved path and new text (LF endings).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WholeFile {
    pub(crate) path: String,
    pub(crate) text: String,
}

/// Every whole-file answer in the segments (none of which is a diff).
pub(crate) fn extract(
    segments: &[Segment<'_>],
    ctx: &ReplyContext,
) -> Result<Vec<WholeFile>, PatchError> {
    let mut named = Vec::new();
    let mut nameless = Vec::new();
    for (i, seg) in segments.iter().enumerate() {
        if !seg.is_fenced() || seg.lines.iter().all(|l| l.trim().is_empty()) {
            continue;
        }
        let from_info = seg.info.as_deref().and_then(|info| path_in_info(info, ctx));
        let from_prose = || {
            i.checked_sub(1)
                .map(|p| &segments[p])
                .filter(|p| !p.is_fenced())
                .and_then(|p| p.lines.iter().rev().find(|l| !l.trim().is_empty()))
                .and_then(|line| path_in_line(line, ctx))
        };
        match from_info.map(Label::Path).or_else(from_prose) {
            Some(Label::Path(raw)) => named.push((paths::resolve(&raw, ctx), seg)),
            Some(Label::NotAPath(name)) => {
                return Err(PatchError::Parse(format!(
                    "a code block is labelled `{name}`, which is not a file path; label each \
                     whole-file block with the path of the file it replaces, or send a unified diff"
                )))
            }
            None if ctx.language.fences.contains(&seg.language()) => nameless.push(seg),
            None => {}
        }
    }
    let chosen: Vec<(String, &Segment<'_>)> = if !named.is_empty() {
        named
    } else {
        match (ctx.requested.as_slice(), nameless.as_slice()) {
            ([only], [seg]) => vec![(only.clone(), *seg)],
            ([_], [_, _, ..]) => {
                return Err(PatchError::Parse(format!(
                    "the reply has {} {} code blocks and none says which file it is; send \
                     one unified diff, or the complete file in a single block",
                    nameless.len(),
                    ctx.language.name
                )))
            }
            _ => Vec::new(),
        }
    };
    chosen
        .into_iter()
        .map(|(path, seg)| {
            let text = block_text(seg.lines);
            if let Some(marker) = elision(&text) {
                return Err(PatchError::Parse(format!(
                    "the whole-file block for `{path}` leaves code out (`{marker}`); send the \
                     complete file or a unified diff"
                )));
            }
            Ok(WholeFile { path, text })
        })
        .collect()
}

/// The block's text with echoed line numbers removed, ending in a newline.
fn block_text(lines: &[&str]) -> String {
    let stripped = numbers::strip_from_block(lines);
    let mut text = match stripped {
        Some(lines) => lines.join("\n"),
        None => lines.join("\n"),
    };
    text.push('\n');
    text
}

/// What the line above a block says the block is.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Label {
    /// A path (maybe an unsafe one: the Reviewer decides).
    Path(String),
    /// An explicit `FILE:` label followed by something that is no path.
    NotAPath(String),
}

/// A path in a fence info string (`python:a/b.py`, `py title="b.py"`, `b.py`,
/// `sh .git/hooks/x`).
fn path_in_info(info: &str, ctx: &ReplyContext) -> Option<String> {
    info.split(|c: char| c.is_whitespace() || c == ':' || c == '=' || c == ',')
        .map(|t| t.trim_matches(|c| c == '"' || c == '\'' || c == '{' || c == '}'))
        .find(|t| paths::looks_like_location(t, ctx))
        .map(str::to_string)
}

/// A path on the line just above a block.
fn path_in_line(line: &str, ctx: &ReplyContext) -> Option<Label> {
    let cleaned = line
        .trim()
        .trim_start_matches(['#', '-', '>', ' '])
        .trim_matches('*')
        .trim();
    let lower = cleaned.to_ascii_lowercase();
    for label in ["file:", "filename:", "file name:", "path:", "file path:"] {
        if lower.starts_with(label) {
            let rest = cleaned[label.len()..].trim().trim_matches(['*', '`', ' ']);
            // `FILE: x.py (fixed)`: the first word is the name.
            let name = rest
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .trim_matches(['*', '`']);
            return match name {
                "" => None,
                _ if paths::looks_like_location(name, ctx) => Some(Label::Path(name.to_string())),
                _ => Some(Label::NotAPath(name.to_string())),
            };
        }
    }
    let ticked: Vec<&str> = cleaned
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| paths::looks_like_location(t, ctx))
        .collect();
    if let Some(first) = ticked.first() {
        return ticked
            .iter()
            .all(|t| t == first)
            .then(|| Label::Path(first.to_string()));
    }
    let bare = cleaned.trim_end_matches(':').trim_matches('*').trim();
    paths::looks_like_location(bare, ctx).then(|| Label::Path(bare.to_string()))
}

/// The first line that says code was left out, if any.
fn elision(text: &str) -> Option<&str> {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    let pattern = PATTERN.get_or_init(|| {
        Regex::new(
            r"(?i)^\s*#\s*(\.\.\.|…)|^\s*#.*\b(rest of (the )?(file|code|module|class|function)|(code|file|functions?|methods?) (remains? |is |are )?unchanged|existing code|same as before)\b",
        )
        .expect("the pattern is a valid regex")
    });
    text.lines().find(|l| pattern.is_match(l)).map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(requested: &[&str]) -> ReplyContext {
        ReplyContext {
            target_prefix: String::new(),
            requested: requested.iter().map(|s| s.to_string()).collect(),
            language: crate::CodeLanguage::python(),
        }
    }

    fn path(p: &str) -> Option<Label> {
        Some(Label::Path(p.into()))
    }

    #[test]
    fn finds_paths_on_label_lines() {
        let c = ctx(&["a/b.py"]);
        assert_eq!(path_in_line("FILE: a/b.py", &c), path("a/b.py"));
        assert_eq!(path_in_line("### a/b.py", &c), path("a/b.py"));
        assert_eq!(path_in_line("a/b.py:", &c), path("a/b.py"));
        assert_eq!(path_in_line("**`a/b.py`**", &c), path("a/b.py"));
        assert_eq!(path_in_line("Here is the fixed `b.py`:", &c), path("b.py"));
        assert_eq!(path_in_line("FILE: a/b.py (fixed)", &c), path("a/b.py"));
        assert_eq!(path_in_line("Here is the fix:", &c), None);
    }

    #[test]
    fn labels_naming_other_places_are_kept_never_dropped() {
        let c = ctx(&["stats.py"]);
        assert_eq!(
            path_in_line("FILE: .git/hooks/post-merge", &c),
            path(".git/hooks/post-merge")
        );
        assert_eq!(
            path_in_line("### .git/hooks/post-merge", &c),
            path(".git/hooks/post-merge")
        );
        assert_eq!(path_in_line("`/etc/passwd`:", &c), path("/etc/passwd"));
        assert_eq!(
            path_in_line("FILE: post-merge", &c),
            Some(Label::NotAPath("post-merge".into()))
        );
        assert_eq!(
            path_in_info("sh .git/hooks/post-merge", &c).as_deref(),
            Some(".git/hooks/post-merge")
        );
    }

    #[test]
    fn detects_elided_code() {
        assert!(elision("x = 1\n# ... rest unchanged\n").is_some());
        assert!(elision("x = 1\n    # rest of the file\n").is_some());
        assert!(elision("def f(): ...\n# keep x as is\n").is_none());
    }
}
