//! The Fixer: asks the model for a change to one file (which files, and in
//! what order, is [`super::reach`]'s), and turns the reply into a `Proposal`. A reply that is cut off,
//! empty, a refusal, not valid UTF-8 or holds no usable diff is asked again
//! once with a message naming what was wrong; after that it is a failed
//! attempt ([`Unusable`]), not an error that ends the run. A reply that
//! repeated itself (cut while it streamed, see `llm::Finish::Repeated`) is
//! asked again once without it: the same request, told to answer with the
//! diff only, its sampling nudged against repetition. A reply saying the
//! file needs no change is an answer: it is not asked again. The
//! placeholders of withheld secrets in a reply are mapped back to their
//! values before its edits are read (see [`crate::secrets`]).
//!
//! A small file is asked for whole ([`prompt::asks_whole_file`]), and so is
//! a file of up to [`prompt::WHOLE_FILE_AFTER_FAILURE_LINES`] lines once a
//! diff of it could not be used; the reply is turned into a diff here (an
//! `EditOp::Replace`, reviewed as the change from the current text).
//! [`reply_form`] names which form a reply was, for the log and summary.
//! A whole-file reply that is the file exactly as it was is asked again at
//! once for a diff, naming the test that still fails, at
//! [`prompt::RETRY_TEMPERATURE`]; a second copy is unusable
//! ([`ReplyProblem::Unchanged`]).

use super::prompt::{self, FixInput, FixPrompt};
use super::{call_model, restore_secrets, ModelCall};
use crate::llm::{self, ChatModel, Finish, LlmError};
use crate::pipeline::{Proposal, ReplyProblem, TargetPath, Unusable};
use swarm_patch::{self as patch, FileEdit, ReplyContext};

/// What stands in for a reply whose bytes could not be read, in the
/// follow-up request's history.
const UNREADABLE_REPLY: &str = "(this reply could not be read: it was not valid UTF-8)";

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
        file: TargetPath::new(input.path),
        reply,
        edits,
        debugging,
        excerpts: excerpts.clone(),
    };
    let mut calls = Vec::new();
    let (call, first) = call_model(model, request.clone()).await;
    calls.push(call);
    let restore = |text: &str| restore_secrets(model, text);
    let (first_text, problem) = match read_reply(first, ctx, &restore) {
        Err(e) => return (calls, Err(e)),
        Ok((text, Ok(edits))) if is_unchanged_whole_file(&edits, input) => {
            (text, ReplyProblem::Unchanged)
        }
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
    let retry = retry_request(request, &first_text, &problem, input);
    let (call, second) = call_model(model, retry).await;
    calls.push(call);
    let (text, edits) = match read_reply(second, ctx, &restore) {
        Err(e) => return (calls, Err(e)),
        Ok((text, Ok(edits))) if is_unchanged_whole_file(&edits, input) => {
            (text, Err(ReplyProblem::Unchanged))
        }
        Ok(read) => read,
    };
    let edits = edits.map_err(|second| Unusable {
        problem: second,
        first: Some(problem),
    });
    (calls, Ok(proposal(text, edits)))
}

/// The request that asks again after a first reply with `problem`.
fn retry_request(
    request: llm::ChatRequest,
    first_text: &str,
    problem: &ReplyProblem,
    input: &FixInput<'_>,
) -> llm::ChatRequest {
    match problem {
        ReplyProblem::Repeated { .. } => prompt::after_repetition(request),
        ReplyProblem::Unchanged => {
            // The file sent back as it was: what still fails, and the change
            // asked for as a diff (copying the file is what the model did),
            // at a temperature that lets it say something else.
            let follow = prompt::reask_unchanged(input.path, &input.failing);
            let mut retry = prompt::follow_up_within(request, first_text, follow, input.allowance);
            retry.temperature = retry.temperature.max(prompt::RETRY_TEMPERATURE);
            retry
        }
        ReplyProblem::CutOff => prompt::follow_up_within(
            request,
            first_text,
            prompt::reask_truncated(),
            input.allowance,
        ),
        ReplyProblem::NotUtf8 { .. } => {
            let follow = prompt::reask_unusable(&problem.to_string());
            prompt::follow_up_within(request, UNREADABLE_REPLY, follow, input.allowance)
        }
        ReplyProblem::Patch(_)
            if input.text.lines().count() <= prompt::WHOLE_FILE_AFTER_FAILURE_LINES =>
        {
            // Short: the one thing wrong and the whole file asked for.
            let follow = prompt::reask_whole_file(&problem.to_string(), input.path);
            prompt::follow_up_within(request, first_text, follow, input.allowance)
        }
        _ => {
            let follow = prompt::reask_unusable(&problem.to_string());
            prompt::follow_up_within(request, first_text, follow, input.allowance)
        }
    }
}

/// Whether a reply is the requested file whole, exactly as it is (line
/// ends and trailing blanks aside): a small model asked for the whole file
/// often sends it back unchanged.
fn is_unchanged_whole_file(edits: &[FileEdit], input: &FixInput<'_>) -> bool {
    fn lines(text: &str) -> Vec<&str> {
        let mut v: Vec<&str> = text.lines().map(str::trim_end).collect();
        while v.last().is_some_and(|l| l.is_empty()) {
            v.pop();
        }
        v
    }
    let same = |text: &str| lines(text) == lines(input.text);
    !edits.is_empty()
        && edits.iter().all(
            |e| matches!(&e.op, patch::EditOp::Replace(text) if e.path == input.path && same(text)),
        )
}

/// The text of a model's answer and its edits (or what is wrong with it).
/// `Err` only when the model could not be reached: a reply that was not
/// valid UTF-8 is an unusable reply, not a failed call.
type ReadReply = (String, Result<Vec<FileEdit>, ReplyProblem>);

/// The reply's edits are read with its secrets' placeholders mapped back
/// (`restore`); the text kept is the reply as the model wrote it.
fn read_reply(
    answer: Result<llm::ChatResponse, LlmError>,
    ctx: &ReplyContext,
    restore: &dyn Fn(&str) -> String,
) -> Result<ReadReply, LlmError> {
    match answer {
        Ok(r) => {
            let edits = edits_in_reply(&restore(&r.text), &r.finish, ctx);
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
    if let Finish::Repeated { tokens } = finish {
        return Err(ReplyProblem::Repeated { tokens: *tokens });
    }
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

/// Which form a reply's change was: `"whole file"` when it rewrites a file
/// whole, `"diff"` when it is hunks, `"none"` when it holds no change.
pub fn reply_form(text: &str, file: &str) -> &'static str {
    let ctx = ReplyContext {
        target_prefix: String::new(),
        requested: vec![file.to_string()],
        language: crate::lang::code_language(&[file.to_string()]),
    };
    match patch::parse_reply(text, &ctx) {
        Ok(edits)
            if edits
                .iter()
                .any(|e| matches!(e.op, patch::EditOp::Replace(_))) =>
        {
            "whole file"
        }
        Ok(edits) if !edits.is_empty() => "diff",
        _ => "none",
    }
}

pub mod task;

#[cfg(test)]
mod tests;
