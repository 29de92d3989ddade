//! The Fixer: asks the model for a change to one file (which files, and in
//! what order, is [`super::reach`]'s), and turns the reply into a `Proposal`. A reply that is cut off,
//! empty, a refusal, not valid UTF-8 or holds no usable diff is asked again
//! once with a message naming what was wrong; after that it is a failed
//! attempt ([`Unusable`]), not an error that ends the run. A reply saying
//! the file needs no change is an answer: it is not asked again.

use super::excerpt::Excerpt;
use super::prompt::{self, FixInput, FixPrompt};
use super::{call_model, ModelCall};
use crate::llm::{self, ChatModel, Finish, LlmError};
use crate::patch::{self, FileEdit, ReplyContext};

/// What the model proposed for a file.
#[derive(Clone, Debug)]
pub struct Proposal {
    /// Target-relative path the prompt was about.
    pub file: String,
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
    #[error("the reply was blocked by the provider's safety filter")]
    Filtered,
    #[error("the reply was empty")]
    Empty,
    #[error("the reply declined the task instead of proposing a change")]
    Refusal,
    /// The model says the file needs no change: an answer, not asked again.
    #[error("the model found nothing to change in this file")]
    NoChangeNeeded,
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
            ReplyProblem::Filtered => "filtered",
            ReplyProblem::Empty => "empty",
            ReplyProblem::Refusal => "refusal",
            ReplyProblem::NoChangeNeeded => "no_change_needed",
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

/// What stands in for a reply whose bytes could not be read, in the
/// follow-up request's history.
const UNREADABLE_REPLY: &str = "(this reply could not be read: it was not valid UTF-8)";

impl Proposal {
    /// One line saying what was tried: the reply's first line of prose, or a default.
    pub fn summary(&self) -> String {
        let prose = self
            .reply
            .lines()
            .map(str::trim)
            .take_while(|l| {
                !l.starts_with("```") && !l.starts_with("---") && !l.starts_with("diff ")
            })
            .find(|l| l.len() >= 12 && !l.starts_with('#'));
        match prose {
            Some(line) => {
                let line = line.trim_start_matches(['*', '-', ' ']);
                let clipped = prompt::clip(line, 72);
                clipped.trim_end_matches([':', '.']).to_string()
            }
            None if self.debugging => format!("fix failing tests in {}", self.file),
            None => format!("clean up {}", self.file),
        }
    }
}

/// Asks the model for a change to one file. `Err` only when the model could
/// not be reached after its retries; every model call made is returned for
/// the log either way.
pub async fn propose(
    model: &dyn ChatModel,
    input: &FixInput<'_>,
    ctx: &ReplyContext,
) -> (Vec<ModelCall>, Result<Proposal, LlmError>) {
    let FixPrompt { request, excerpts } = prompt::fix_prompt(input);
    let debugging = input.is_debugging();
    let proposal = |reply: String, edits| Proposal {
        file: input.path.to_string(),
        reply,
        edits,
        debugging,
        excerpts: excerpts.clone(),
    };
    let mut calls = Vec::new();
    let (call, first) = call_model(model, request.clone()).await;
    calls.push(call);
    let (first_text, problem) = match read_reply(first, ctx) {
        Err(e) => return (calls, Err(e)),
        Ok((text, Ok(edits))) => return (calls, Ok(proposal(text, Ok(edits)))),
        Ok((text, Err(ReplyProblem::NoChangeNeeded))) => {
            let declined = Unusable {
                problem: ReplyProblem::NoChangeNeeded,
                first: None,
            };
            return (calls, Ok(proposal(text, Err(declined))));
        }
        Ok((text, Err(problem))) => (text, problem),
    };
    let follow = match problem {
        ReplyProblem::CutOff => prompt::reask_truncated(),
        _ => prompt::reask_unusable(&problem.to_string()),
    };
    let shown = match problem {
        ReplyProblem::NotUtf8 { .. } => UNREADABLE_REPLY,
        _ => first_text.as_str(),
    };
    let retry = prompt::follow_up_within(request, shown, follow, input.allowance);
    let (call, second) = call_model(model, retry).await;
    calls.push(call);
    let (text, edits) = match read_reply(second, ctx) {
        Err(e) => return (calls, Err(e)),
        Ok(read) => read,
    };
    let edits = edits.map_err(|second| Unusable {
        problem: second,
        first: Some(problem),
    });
    (calls, Ok(proposal(text, edits)))
}

/// The text of a model's answer and its edits (or what is wrong with it).
/// `Err` only when the model could not be reached: a reply that was not
/// valid UTF-8 is an unusable reply, not a failed call.
type ReadReply = (String, Result<Vec<FileEdit>, ReplyProblem>);

fn read_reply(
    answer: Result<llm::ChatResponse, LlmError>,
    ctx: &ReplyContext,
) -> Result<ReadReply, LlmError> {
    match answer {
        Ok(r) => {
            let edits = edits_in_reply(&r.text, &r.finish, ctx);
            Ok((r.text, edits))
        }
        Err(LlmError::NotUtf8 { detail, .. }) => {
            Ok((String::new(), Err(ReplyProblem::NotUtf8 { detail })))
        }
        Err(e) => Err(e),
    }
}

/// The edits in a reply, or what is wrong with it.
fn edits_in_reply(
    text: &str,
    finish: &Finish,
    ctx: &ReplyContext,
) -> Result<Vec<FileEdit>, ReplyProblem> {
    if *finish == Finish::Length {
        return Err(ReplyProblem::CutOff);
    }
    if *finish == Finish::Filtered {
        return Err(ReplyProblem::Filtered);
    }
    if llm::is_empty_reply(text) {
        return Err(ReplyProblem::Empty);
    }
    if llm::looks_like_refusal(text) {
        return Err(ReplyProblem::Refusal);
    }
    if llm::says_no_change_needed(text) {
        return Err(ReplyProblem::NoChangeNeeded);
    }
    match patch::parse_reply(text, ctx) {
        Ok(edits) if edits.is_empty() => Err(ReplyProblem::Patch(patch::PatchError::NoChange)),
        Ok(edits) => Ok(edits),
        Err(e) => Err(ReplyProblem::Patch(e)),
    }
}

#[cfg(test)]
mod tests;
