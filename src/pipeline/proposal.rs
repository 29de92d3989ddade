//! What the Fixer hands on: a [`Proposal`] (the reply, and the edits read
//! from it or why none could be), and the parts of the file its prompt
//! showed ([`Excerpt`]). Read by the Reviewer, logged by the orchestrator.

use super::path::TargetPath;
use swarm_patch::{self as patch, FileEdit};

/// What the model proposed for a file.
#[derive(Clone, Debug)]
pub struct Proposal {
    /// The file the prompt was about.
    pub file: TargetPath,
    /// The raw reply that was used.
    pub reply: String,
    /// What the reply is, or why nothing in it can be used.
    pub edits: Result<Vec<FileEdit>, Unusable>,
    /// Whether the prompt analysed errors (logged as DEBUG) or not (FIX).
    pub debugging: bool,
    /// The parts of the file the prompt showed, when it did not show it whole.
    pub excerpts: Option<Vec<Excerpt>>,
}

/// What is wrong with one reply, so that nothing in it can be used.
/// `Display` is the sentence sent back to the model and logged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplyProblem {
    #[error("the reply was cut off by the output length limit")]
    CutOff,
    /// swarm stopped reading a reply that looped (see
    /// `llm::Finish::Repeated`); nothing of it is shown to the model again.
    #[error("the reply repeated itself; stopped after {tokens} tokens")]
    Repeated { tokens: u64 },
    #[error("the reply was blocked by the provider's safety filter")]
    Filtered,
    #[error("the reply was empty")]
    Empty,
    #[error("the reply declined the task instead of proposing a change")]
    Refusal,
    /// The model says the file needs no change: an answer, not asked again.
    #[error("the model found nothing to change in this file")]
    NoChangeNeeded,
    /// A whole-file reply that is the file exactly as it was: asked again
    /// at once, for a diff.
    #[error("the reply was the file exactly as it is: nothing changed")]
    Unchanged,
    /// The provider's bytes were not UTF-8 (see [`LlmError::NotUtf8`]).
    #[error("the reply was not valid UTF-8 ({detail}); send plain UTF-8 text")]
    NotUtf8 { detail: String },
    /// No change could be read from it.
    #[error("{0}")]
    Patch(patch::PatchError),
}

impl ReplyProblem {
    /// A stable snake_case name, for logs and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            ReplyProblem::CutOff => "cut_off",
            ReplyProblem::Repeated { .. } => "repeated",
            ReplyProblem::Filtered => "filtered",
            ReplyProblem::Empty => "empty",
            ReplyProblem::Refusal => "refusal",
            ReplyProblem::NoChangeNeeded => "no_change_needed",
            ReplyProblem::Unchanged => "unchanged",
            ReplyProblem::NotUtf8 { .. } => "not_utf8",
            ReplyProblem::Patch(patch::PatchError::NoChange) => "no_change",
            ReplyProblem::Patch(_) => "unreadable_change",
        }
    }
}

/// Why a proposal holds no change: the last reply's problem, and the first
/// reply's when the model was asked again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unusable {
    /// What was wrong with the reply that was kept.
    pub problem: ReplyProblem,
    /// What was wrong with the first reply, when the model was asked again.
    pub first: Option<ReplyProblem>,
}

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.first {
            None => write!(f, "{}", self.problem),
            Some(first) => write!(
                f,
                "{} (also after asking again; first reply: {first})",
                self.problem
            ),
        }
    }
}

impl From<ReplyProblem> for Unusable {
    fn from(problem: ReplyProblem) -> Self {
        Self {
            problem,
            first: None,
        }
    }
}

/// One piece of the file shown in a prompt: lines `start..=end` (1-based)
/// and why they were chosen.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Excerpt {
    pub start: usize,
    pub end: usize,
    pub why: String,
}

impl Proposal {
    /// One line saying what was tried: the reply's first line of prose, or a
    /// default (always for a reply that repeated itself: nothing of it is
    /// said again).
    pub fn summary(&self) -> String {
        let looped = matches!(
            &self.edits,
            Err(Unusable {
                problem: ReplyProblem::Repeated { .. },
                ..
            })
        );
        let reply = if looped { "" } else { self.reply.as_str() };
        let prose = reply
            .lines()
            .map(str::trim)
            .take_while(|l| {
                !l.starts_with("```") && !l.starts_with("---") && !l.starts_with("diff ")
            })
            .find(|l| l.len() >= 12 && !l.starts_with('#'));
        match prose {
            Some(line) => {
                let line = line.trim_start_matches(['*', '-', ' ']);
                let clipped = clip(line, 72);
                clipped.trim_end_matches([':', '.']).to_string()
            }
            None if self.debugging => format!("fix failing tests in {}", self.file),
            None => format!("clean up {}", self.file),
        }
    }
}

/// At most `max` bytes of `text`, cut at a char boundary.
pub fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
