//! A model that proposes exactly a reference refactoring, in one of the
//! three shapes replies come in: the whole change at once; one file's hunk
//! per reply (the task red in the middle); diffs without git's `a/` `b/`
//! prefixes. Each reply is written against the files as the prompt shows
//! them, so a reply builds on whatever state the task is in, and the model
//! says `TASK DONE` once every file is as the reference leaves it.

use super::model;
use crate::support::llm_server::LlmServer;

/// How the reference change is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Every file's diff in one reply.
    Whole,
    /// One file's diff per reply, in the reference's order.
    OneFilePerReply,
    /// Every file's diff in one reply, headers without `a/` and `b/`.
    NoPrefixes,
}

pub const SHAPES: [Shape; 3] = [Shape::Whole, Shape::OneFilePerReply, Shape::NoPrefixes];

/// The files a reference refactoring leaves, in the order a person would
/// edit them: each path with its text after (`None`: deleted).
pub type Reference = Vec<(String, Option<String>)>;

/// The text of `path` as the prompt shows it; `None` when the prompt says
/// it does not exist (or does not show it).
pub fn shown(prompt: &str, path: &str) -> Option<String> {
    let head = format!("### `{path}`\n```");
    let fence = prompt.find(&head)? + head.len();
    let start = fence + prompt[fence..].find('\n')? + 1;
    let end = prompt[start..].find("\n```\n")? + start + 1;
    Some(prompt[start..end].to_string())
}

/// A fenced unified diff of `path`, with or without `a/` `b/` prefixes.
pub fn diff_as(path: &str, before: Option<&str>, after: Option<&str>, prefixed: bool) -> String {
    let side = |prefix: &str, present: bool| {
        if !present {
            "/dev/null".to_string()
        } else if prefixed {
            format!("{prefix}{path}")
        } else {
            path.to_string()
        }
    };
    let body = similar::TextDiff::from_lines(before.unwrap_or(""), after.unwrap_or(""))
        .unified_diff()
        .context_radius(3)
        .header(&side("a/", before.is_some()), &side("b/", after.is_some()))
        .to_string();
    format!("```diff\n{body}```\n")
}

/// The reply to a task prompt: the reference's files not yet as it leaves
/// them, sent in `shape`; `TASK DONE` when there are none.
pub fn reply(shape: Shape, reference: &Reference, prompt: &str) -> String {
    let pending: Vec<(&str, Option<String>, Option<&str>)> = reference
        .iter()
        .map(|(path, after)| (path.as_str(), shown(prompt, path), after.as_deref()))
        .filter(|(_, now, after)| now.as_deref() != *after)
        .collect();
    if pending.is_empty() {
        return "TASK DONE: every file is as the task asks.".into();
    }
    let take = if shape == Shape::OneFilePerReply {
        1
    } else {
        pending.len()
    };
    let mut text = String::from("Here is the change.\n");
    for (path, now, after) in pending.into_iter().take(take) {
        text.push_str(&diff_as(
            path,
            now.as_deref(),
            after,
            shape != Shape::NoPrefixes,
        ));
    }
    text
}

/// A model that plans `plan` and answers every task request with the
/// reference refactoring in `shape`.
pub fn reference_model(plan: &str, shape: Shape, reference: Reference) -> LlmServer {
    model(plan.to_string(), move |_, prompt| {
        reply(shape, &reference, prompt)
    })
}

/// A one-task plan of `kind` over the files `change`, `create`, `delete`.
pub fn plan(title: &str, kind: &str, change: &[&str], create: &[&str], delete: &[&str]) -> String {
    let list = |files: &[&str]| {
        let quoted: Vec<String> = files.iter().map(|f| format!("\"{f}\"")).collect();
        format!("[{}]", quoted.join(", "))
    };
    format!(
        "```json\n{{\"tasks\": [{{\"title\": \"{title}\", \"kind\": \"{kind}\", \"change\": {}, \
         \"create\": {}, \"delete\": {}}}]}}\n```\n",
        list(change),
        list(create),
        list(delete)
    )
}
