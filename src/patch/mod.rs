//! Turns model replies into file changes and applies them — exactly once, or
//! not at all. Pure functions over text; no I/O, no git.

/// What one reply proposes for one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEdit {
    /// Target-relative path as resolved from the reply (`/` separators). It
    /// is not validated here: it may contain `..` or be absolute; the
    /// Reviewer decides.
    pub path: String,
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
}

/// One hunk of a unified diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    _private: (),
}

/// What the prompt asked about, to resolve paths in the reply.
#[derive(Clone, Debug, Default)]
pub struct ReplyContext {
    /// The target folder relative to the repository root (`""` at the root).
    pub target_prefix: String,
    /// Target-relative paths of the files the prompt showed.
    pub requested: Vec<String>,
}

/// Why a reply could not be used; `Display` is the reason sent back to the model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    #[error("the reply contains no unified diff and no whole-file block")]
    NoChange,
    #[error("{0}")]
    Parse(String),
    #[error("{0}")]
    Apply(String),
}

/// Extracts every file change in `reply`.
pub fn parse_reply(reply: &str, ctx: &ReplyContext) -> Result<Vec<FileEdit>, PatchError> {
    let _ = (reply, ctx);
    unimplemented!()
}

/// A file before and after applying a reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileOutcome {
    pub path: String,
    pub before: Option<Vec<u8>>,
    pub after: Option<Vec<u8>>,
}

/// Applies all edits or none. `read` gives a file's current bytes by
/// target-relative path (`None`: it does not exist).
pub fn apply(
    edits: &[FileEdit],
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Result<Vec<FileOutcome>, PatchError> {
    let _ = (edits, read);
    unimplemented!()
}

/// Lines added plus lines removed between two texts.
pub fn changed_lines(before: &str, after: &str) -> usize {
    let _ = (before, after);
    unimplemented!()
}

/// A unified diff of one file (`a/path`, `b/path` headers), for prompts and logs.
pub fn unified_diff(path: &str, before: &str, after: &str) -> String {
    let _ = (path, before, after);
    unimplemented!()
}
