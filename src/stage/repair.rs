//! The reference of a module that does not compile: before its first fix,
//! the smallest repair that lets it parse stands for what it did, so the
//! behaviour check and generated tests have an original to compare every
//! later change with. First the one-token repair the parser points at
//! ([`swarm_analysis::repair_missing_token`]); else the model is asked for
//! a syntax-only change ([`crate::stage::prompt::repair`]), taken only when
//! it parses, changes at most [`MAX_LINES`] lines and only punctuation,
//! brackets, quotes, whitespace or a `pass` ([`syntax_only`]) — a reply
//! that also turns a result into `None` is not a syntax repair.
//!
//! Pure but for the model call; nothing here writes a file.

use similar::{ChangeTag, DiffOp, TextDiff};

use super::{call_model, restore_secrets, ModelCall};
use crate::llm::{ChatModel, ChatResponse, LlmError};
use crate::stage::budget::Allowance;
use crate::stage::prompt::repair::repair_request;
use swarm_patch::{self as patch, ReplyContext};

/// A model's syntax repair may change at most this many lines.
pub const MAX_LINES: usize = 5;

/// Characters a syntax repair may add or remove.
const SYNTAX_CHARS: &str = "()[]{}:,;'\"\\";

/// A module's text made to parse, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    pub text: String,
    /// `inserted ":" on line 6`, or the model's repair.
    pub how: String,
}

/// The one-token repair of `text`, when the parser points at one.
pub fn deterministic(text: &str) -> Option<Reference> {
    let repair = swarm_analysis::repair_missing_token(text)?;
    Some(Reference {
        how: format!(
            "inserted \"{}\" on line {} (where the parser points)",
            repair.inserted, repair.line
        ),
        text: repair.text,
    })
}

/// Why `after` is not a syntax-only change of `before`; `Ok` when every
/// character added or removed is punctuation, a bracket, a quote or
/// whitespace, or the word `pass`.
pub fn syntax_only(before: &str, after: &str) -> Result<(), String> {
    let diff = TextDiff::from_chars(before, after);
    for op in diff.ops() {
        if matches!(op, DiffOp::Equal { .. }) {
            continue;
        }
        for tag in [ChangeTag::Delete, ChangeTag::Insert] {
            let text: String = diff
                .iter_changes(op)
                .filter(|c| c.tag() == tag)
                .map(|c| c.value())
                .collect();
            let allowed = text.trim() == "pass"
                || text
                    .chars()
                    .all(|c| c.is_whitespace() || SYNTAX_CHARS.contains(c));
            if !allowed {
                let verb = if tag == ChangeTag::Delete {
                    "removes"
                } else {
                    "adds"
                };
                return Err(format!(
                    "it {verb} `{}`, more than punctuation, brackets, quotes or whitespace",
                    text.trim()
                ));
            }
        }
    }
    Ok(())
}

/// Asks the model for a syntax-only repair of `file` (`text`), whose first
/// syntax error is at `at` (line, column).
pub async fn ask(
    model: &dyn ChatModel,
    file: &str,
    text: &str,
    at: (usize, usize),
    allowance: Allowance,
) -> (ModelCall, Result<ChatResponse, LlmError>) {
    call_model(model, repair_request(file, text, at, MAX_LINES, allowance)).await
}

/// The reference the model's `reply` makes of `file` (`text`), or why it
/// makes none.
pub fn from_reply(
    model: &dyn ChatModel,
    file: &str,
    text: &str,
    reply: &str,
    ctx: &ReplyContext,
) -> Result<Reference, String> {
    let reply = restore_secrets(model, reply);
    let edits = patch::parse_reply(&reply, ctx).map_err(|e| format!("the reply: {e}"))?;
    let read = |p: &str| (p == file).then(|| text.as_bytes().to_vec());
    let outcomes = patch::apply(&edits, &read).map_err(|e| format!("the reply: {e}"))?;
    let [outcome] = outcomes.as_slice() else {
        return Err("the reply changes other files".to_string());
    };
    if outcome.path != file {
        return Err(format!("the reply changes {} instead", outcome.path));
    }
    let after = String::from_utf8_lossy(outcome.after.as_deref().unwrap_or_default()).into_owned();
    if let Err(issue) = swarm_analysis::check_syntax(&after) {
        return Err(format!(
            "the model's repair still does not parse (line {}, column {})",
            issue.line, issue.column
        ));
    }
    let lines = patch::changed_lines(text, &after);
    if lines > 2 * MAX_LINES {
        return Err(format!(
            "the model's repair changes {lines} lines (added and removed), more than a syntax repair"
        ));
    }
    syntax_only(text, &after)
        .map_err(|why| format!("the model's repair is not syntax only: {why}"))?;
    Ok(Reference {
        how: format!("the model's syntax-only repair ({lines} changed lines)"),
        text: after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BROKEN: &str = "def mean(values)\n    total = 0\n    for v in values:\n        total += v\n    return total / len(values)\n";

    #[test]
    fn the_missing_colon_is_the_deterministic_reference() {
        let reference = deterministic(BROKEN).expect("a reference");
        assert!(reference.text.starts_with("def mean(values):\n"));
        assert_eq!(
            reference.how,
            "inserted \":\" on line 1 (where the parser points)"
        );
    }

    #[test]
    fn only_punctuation_whitespace_and_pass_make_a_syntax_repair() {
        let fixed = BROKEN.replace("(values)\n", "(values):\n");
        assert_eq!(syntax_only(BROKEN, &fixed), Ok(()));
        assert_eq!(syntax_only("if x:\n", "if x:\n    pass\n"), Ok(()));
        assert_eq!(syntax_only("print 'a'\n", "print('a')\n"), Ok(()));
        let regressed = fixed.replace("return total / len(values)", "return None");
        let why = syntax_only(BROKEN, &regressed).unwrap_err();
        assert!(why.contains("removes") || why.contains("adds"), "{why}");
    }
}
