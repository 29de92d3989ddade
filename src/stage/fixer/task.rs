//! The Fixer for a task of refactoring on request (`--task`): asks for the
//! task's change with the request the orchestrator built (see
//! [`crate::stage::prompt::task`]) and reads the reply — edits to any of
//! the task's files (created, deleted, moved), or the answer that the task
//! needs nothing more ([`TASK_DONE`], or any "no change needed"). A reply
//! with nothing usable is asked again once, as for a repair.

use super::read_reply;
use crate::llm::{ChatModel, ChatRequest, LlmError};
use crate::pipeline::{Proposal, ReplyProblem, TargetPath, Unusable};
use crate::stage::budget::Allowance;
use crate::stage::prompt::{self, task::TASK_DONE};
use crate::stage::{call_model, restore_secrets, ModelCall};
use swarm_patch::ReplyContext;

/// What the model answered for a task.
#[derive(Clone, Debug)]
pub enum TaskAnswer {
    /// The task needs no further change: the reply saying so.
    Done(String),
    /// A change (or why none could be read).
    Proposal(Proposal),
}

/// Asks for the task's change. `file` names the proposal (the task's first
/// file); `ctx.requested` are all of the task's files. `Err` only when the
/// model could not be reached; every call made is returned for the log.
pub async fn propose_task(
    model: &dyn ChatModel,
    request: ChatRequest,
    file: &str,
    ctx: &ReplyContext,
    allowance: Allowance,
) -> (Vec<ModelCall>, Result<TaskAnswer, LlmError>) {
    let proposal = |reply: String, edits| Proposal {
        file: TargetPath::new(file),
        reply,
        edits,
        debugging: false,
        excerpts: None,
    };
    // Edits are read with the withheld secrets' placeholders mapped back.
    let restore = |text: &str| restore_secrets(model, text);
    let mut calls = Vec::new();
    let (call, first) = call_model(model, request.clone()).await;
    calls.push(call);
    let (text, problem) = match read_reply(first, ctx, &restore) {
        Err(e) => return (calls, Err(e)),
        Ok((text, Ok(edits))) => {
            return (calls, Ok(TaskAnswer::Proposal(proposal(text, Ok(edits)))))
        }
        Ok((text, Err(_))) if says_done(&text) => return (calls, Ok(TaskAnswer::Done(text))),
        Ok((text, Err(ReplyProblem::NoChangeNeeded))) => {
            return (calls, Ok(TaskAnswer::Done(text)))
        }
        Ok((text, Err(problem))) => (text, problem),
    };
    let follow = match problem {
        ReplyProblem::CutOff => prompt::reask_truncated(),
        _ => format!(
            "{} If the task needs no further change, reply `{TASK_DONE}` instead.",
            prompt::reask_unusable(&problem.to_string())
        ),
    };
    let retry = prompt::follow_up_within(request, &text, follow, allowance);
    let (call, second) = call_model(model, retry).await;
    calls.push(call);
    let answer = match read_reply(second, ctx, &restore) {
        Err(e) => return (calls, Err(e)),
        Ok((text, Ok(edits))) => TaskAnswer::Proposal(proposal(text, Ok(edits))),
        Ok((text, Err(_))) if says_done(&text) => TaskAnswer::Done(text),
        Ok((text, Err(ReplyProblem::NoChangeNeeded))) => TaskAnswer::Done(text),
        Ok((text, Err(second))) => TaskAnswer::Proposal(proposal(
            text,
            Err(Unusable {
                problem: second,
                first: Some(problem),
            }),
        )),
    };
    (calls, Ok(answer))
}

/// Whether a reply without a change says the task is complete.
fn says_done(text: &str) -> bool {
    let opening: String = text.trim_start().chars().take(200).collect();
    let opening = opening.to_ascii_uppercase();
    opening
        .trim_start_matches(['*', '`', '#', ' '])
        .starts_with(TASK_DONE)
}

#[cfg(test)]
mod tests {
    #[test]
    fn task_done_opens_the_reply() {
        assert!(super::says_done("TASK DONE: everything is moved."));
        assert!(super::says_done("**Task done** — nothing left."));
        assert!(!super::says_done("The task is not done yet."));
    }
}
