//! Turns model replies into file changes and applies them — exactly once, or
//! not at all. Pure functions over text; no I/O, no git.
//!
//! - [`parse_reply`] finds unified diffs (fenced or bare, git-style or plain,
//!   with wrong or missing hunk numbers, creations, deletions and git's
//!   renames) and whole-file answers.
//! - [`apply`] locates every hunk by its text (exact, then ignoring trailing
//!   whitespace, then ignoring indentation, then with edge context trimmed),
//!   requires exactly one match, and changes all files or none.
//! - [`rebase`] merges a diff written against an earlier version of a file
//!   onto its current text (three-way, diffy); a conflict names its lines.
//! - [`FileSteps`] cuts a file's change into hunks and applies a prefix of
//!   them, to split an oversized change into steps.
//! - [`changed_lines`], [`changed_bytes`] and [`unified_diff`] measure and
//!   show a change.

mod apply;
mod diff;
mod fence;
mod intent;
mod locate;
mod merge;
mod numbers;
mod parse;
mod paths;
mod report;
mod stats;
mod steps;
mod text;
mod whole;

pub use merge::{ConflictRegion, MergeConflict, Rebase};
pub use steps::{FileSteps, HunkLines};

/// What one reply proposes for one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEdit {
    /// Target-relative path as resolved from the reply (`/` separators). It
    /// is not validated here: it may contain `..` or be absolute; the
    /// Reviewer decides.
    pub path: String,
    /// What happens to the file.
    pub op: EditOp,
}

/// The kind of change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditOp {
    /// Hunks of a unified diff (opaque to callers).
    Patch(Vec<Hunk>),
    /// A new file with this text.
    Create(String),
    /// Delete the file.
    Delete,
    /// A whole-file answer: the new text.
    Replace(String),
    /// The file is `from`'s text with these hunks applied (none: a pure
    /// move), written under the edit's path; a git rename (`rename from` /
    /// `rename to`). The reply's edits also delete `from`.
    Move { from: String, hunks: Vec<Hunk> },
}

/// One hunk of a unified diff, as the model wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    /// The `@@ … @@` line, if there was one.
    pub(crate) header: Option<String>,
    /// The header's old start line, kept only when the header's counts fit
    /// the body (then it may break ties between equal matches).
    pub(crate) old_start: Option<usize>,
    pub(crate) lines: Vec<HunkLine>,
    /// `\ No newline at end of file` after an old-side / new-side line.
    pub(crate) old_no_eol: bool,
    pub(crate) new_no_eol: bool,
}

impl HunkLine {
    pub(crate) fn text(&self) -> &str {
        let (HunkLine::Context(t) | HunkLine::Remove(t) | HunkLine::Add(t)) = self;
        t
    }
}

/// One body line of a hunk, without its marker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HunkLine {
    Context(String),
    Remove(String),
    Add(String),
}

impl Hunk {
    /// Number of `-` lines.
    pub fn removed(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| matches!(l, HunkLine::Remove(_)))
            .count()
    }

    /// Number of `+` lines.
    pub fn added(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| matches!(l, HunkLine::Add(_)))
            .count()
    }

    /// The `@@ … @@` header line as written, if any.
    pub fn header(&self) -> Option<&str> {
        self.header.as_deref()
    }

    /// True when the hunk adds or removes at least one line.
    pub(crate) fn changes_something(&self) -> bool {
        self.lines
            .iter()
            .any(|l| !matches!(l, HunkLine::Context(_)))
    }

    /// True when the hunk may change something: it adds or removes a line,
    /// or it has no markers at all and may be a region's new text (read
    /// when applied; one that matches the file as it is changes nothing).
    pub(crate) fn may_change(&self) -> bool {
        self.changes_something() || self.lines.iter().any(|l| !l.text().trim().is_empty())
    }
}

/// What the prompt asked about, to resolve paths in the reply.
#[derive(Clone, Debug, Default)]
pub struct ReplyContext {
    /// The target folder relative to the repository root (`""` at the root).
    pub target_prefix: String,
    /// Target-relative paths of the files the prompt showed.
    pub requested: Vec<String>,
    /// The language of the files the prompt showed.
    pub language: CodeLanguage,
}

/// The language of the files a prompt asks about, as a reply's code blocks
/// name it: a block without a file name counts as the requested file only
/// when its fence tag is one of this language's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodeLanguage {
    /// Its name in prose, for what is said back to the model.
    pub name: String,
    /// The fence tags its blocks may carry (`""`: a block with no tag).
    pub fences: Vec<String>,
}

#[cfg(test)]
impl CodeLanguage {
    /// The language the crate's own tests ask about.
    pub(crate) fn python() -> Self {
        CodeLanguage {
            name: "Python".into(),
            fences: ["", "python", "py", "python3", "py3"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }
}

/// Why a reply could not be used; `Display` is the reason sent back to the model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// Nothing in the reply reads as a change.
    #[error("the reply contains no unified diff and no whole-file block")]
    NoChange,
    /// The reply has a change, but it cannot be read.
    #[error("{0}")]
    Parse(String),
    /// The change cannot be applied; nothing was changed.
    #[error("{0}")]
    Apply(String),
}

/// Extracts every file change in `reply`.
///
/// Paths are target-relative (`a/`/`b/` and `ctx.target_prefix/` stripped;
/// a bare file name resolves to the one requested file with that name), one
/// edit per path. Never panics, whatever the input.
pub fn parse_reply(reply: &str, ctx: &ReplyContext) -> Result<Vec<FileEdit>, PatchError> {
    parse::parse(reply, ctx)
}

/// A file before and after applying a reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileOutcome {
    /// Target-relative path.
    pub path: String,
    /// The bytes before (`None`: the file did not exist).
    pub before: Option<Vec<u8>>,
    /// The bytes after (`None`: the file is deleted).
    pub after: Option<Vec<u8>>,
}

/// Applies all edits or none. `read` gives a file's current bytes by
/// target-relative path (`None`: it does not exist). Returns one outcome
/// per path, in the order of first appearance; on failure, the error lists
/// every failing hunk of every file.
pub fn apply(
    edits: &[FileEdit],
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Result<Vec<FileOutcome>, PatchError> {
    apply::apply_all(edits, read, false).map(|(outcomes, _)| outcomes)
}

/// A reply applied as far as it could be (see [`apply_partial`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partial {
    /// One outcome per path, as [`apply`] gives them.
    pub outcomes: Vec<FileOutcome>,
    /// Why each hunk left out could not be applied (empty: all applied).
    pub left: Vec<String>,
}

/// Like [`apply`], but a file's hunks that cannot be placed are left out
/// when at least one of its hunks applies and none of those left uses a
/// word another applied hunk brings into the file (an import, a new
/// function); the reasons of the hunks left are in [`Partial::left`]. A
/// file none of whose hunks applies, hunks that overlap, or a left hunk tied
/// to an applied one fail the whole reply, as with [`apply`].
pub fn apply_partial(
    edits: &[FileEdit],
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Result<Partial, PatchError> {
    apply::apply_all(edits, read, true).map(|(outcomes, left)| Partial { outcomes, left })
}

/// Rebases `hunks` of `path`, written against the `earlier` bytes of the
/// file, onto its `current` bytes by a three-way merge: the merged bytes
/// (in the current file's style), the conflicting regions, or
/// [`Rebase::NotApplicable`] when the hunks do not fit `earlier` either.
pub fn rebase(path: &str, hunks: &[Hunk], earlier: &[u8], current: &[u8]) -> Rebase {
    merge::rebase(path, hunks, earlier, current)
}

/// Lines added plus lines removed between two texts.
pub fn changed_lines(before: &str, after: &str) -> usize {
    stats::changed_lines(before, after)
}

/// Bytes of the lines added plus the lines removed between two texts (line
/// ends included): one 10 MB line is one changed line but 10 MB here.
pub fn changed_bytes(before: &str, after: &str) -> usize {
    stats::changed_bytes(before, after)
}

/// A unified diff of one file (`a/path`, `b/path` headers), for prompts and logs.
pub fn unified_diff(path: &str, before: &str, after: &str) -> String {
    stats::unified_diff(path, before, after)
}
