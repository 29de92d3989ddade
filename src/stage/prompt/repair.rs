//! The request for a syntax-only repair of a module that does not compile
//! and that no one-token repair fixes: the model may change only what
//! makes it parse, within a few lines, so what it returns can stand for the
//! module's behaviour before any fix.

use std::fmt::Write as _;

use super::{clip_tokens, user};
use crate::llm::{self, ChatRequest};
use crate::stage::budget::Allowance;

const REPAIR_SYSTEM: &str = "You are the syntax repairer of swarm, an automated refactoring tool \
for Python projects. You make the smallest change that lets a module parse: add or remove \
brackets, colons, commas, quotes, indentation or a `pass`. You never change what the code does: \
no names, no values, no operators, no new logic. You answer with a unified diff in a ```diff \
fenced block.";

/// The request for a syntax-only repair of `path` (`text`), whose first
/// syntax error is at `line`:`column`; at most `max_lines` changed lines.
pub fn repair_request(
    path: &str,
    text: &str,
    (line, column): (usize, usize),
    max_lines: usize,
    allowance: Allowance,
) -> ChatRequest {
    let chat = |text: &str| {
        let mut p = String::new();
        let _ = writeln!(
            p,
            "Repair the syntax of `{path}`: it does not parse (first error at line {line}, \
             column {column})."
        );
        let _ = writeln!(
            p,
            "\n## Current text of `{path}`\n```python\n{}\n```",
            text.trim_end_matches('\n')
        );
        let _ = writeln!(
            p,
            "\nReply with a unified diff (`--- a/{path}`, `+++ b/{path}`) that changes at most \
             {max_lines} lines and only punctuation, brackets, quotes, indentation or a `pass`: \
             the smallest change that lets it parse. Change nothing else, even what looks wrong."
        );
        ChatRequest {
            system: REPAIR_SYSTEM.into(),
            messages: vec![user(p)],
            max_output_tokens: allowance.reply_tokens,
            temperature: 0.0,
            sampling: Default::default(),
        }
    };
    let request = chat(text);
    if llm::prompt_tokens(&request) <= allowance.prompt_tokens {
        return request;
    }
    let fixed = llm::prompt_tokens(&chat(""));
    chat(clip_tokens(
        text,
        allowance.prompt_tokens.saturating_sub(fixed),
    ))
}
