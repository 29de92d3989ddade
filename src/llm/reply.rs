//! Checks on reply text that do not depend on the provider: refusals, empty
//! replies, and the token estimate used when an API reports no usage.

use super::chat::{ChatRequest, Usage};

/// Openings of a refusal, lowercase, with straight apostrophes.
const REFUSAL_OPENINGS: &[&str] = &[
    "i cannot",
    "i can't",
    "i can not",
    "i am unable",
    "i'm unable",
    "i am not able",
    "i'm not able",
    "i won't",
    "i will not",
    "i'm sorry",
    "i am sorry",
    "sorry, but",
    "sorry, i",
    "i apologize, but",
    "as an ai",
    "unfortunately, i can",
];

/// Whether a reply is a refusal rather than an answer: it opens like one
/// ("I cannot", "I can't help", "I'm sorry, but", …) and holds no code
/// (no fenced block, no diff, no Python definition).
pub fn looks_like_refusal(text: &str) -> bool {
    let opening = opening(text, 80);
    let opens_like_refusal = REFUSAL_OPENINGS
        .iter()
        .any(|refusal| opening.starts_with(refusal));
    opens_like_refusal && !contains_code(text)
}

/// What a model says when it finds nothing to change, lowercase, with
/// straight apostrophes (the fix prompt asks for the first).
const NO_CHANGE_PHRASES: &[&str] = &[
    "no change is needed",
    "no changes are needed",
    "no changes needed",
    "no changes are required",
    "no change is required",
    "needs no change",
    "need no change",
    "does not need any change",
    "doesn't need any change",
    "does not need to change",
    "doesn't need to change",
    "no modifications are needed",
    "no modification is needed",
    "nothing to change",
    "nothing to fix",
    "nothing needs to change",
    "is already correct",
    "looks fine as it is",
];

/// Whether a reply says the file needs no change, and holds no code: it
/// opens with `NO CHANGE` or, within its first lines, says so in one of
/// the usual ways ("no change is needed", "nothing to fix", …).
pub fn says_no_change_needed(text: &str) -> bool {
    if contains_code(text) {
        return false;
    }
    let opening = opening(text, 400);
    opening.starts_with("no change") || NO_CHANGE_PHRASES.iter().any(|p| opening.contains(p))
}

/// The first `chars` characters of a reply, lowercase, with straight
/// apostrophes: what the phrase lists above are matched against.
fn opening(text: &str, chars: usize) -> String {
    text.trim_start()
        .chars()
        .take(chars)
        .collect::<String>()
        .to_lowercase()
        .replace(['\u{2019}', '\u{2018}'], "'")
}

/// Whether a reply carries nothing: only whitespace, or code fences with
/// nothing inside them.
pub fn is_empty_reply(text: &str) -> bool {
    text.lines().all(|line| {
        let line = line.trim();
        line.is_empty() || is_fence(line)
    })
}

/// A rough token count of `text`: one token per 4 characters, rounded up.
pub fn estimate_tokens(text: &str) -> u64 {
    let chars = text.chars().count() as u64;
    chars.div_ceil(4)
}

/// Usage estimated from the prompt and the reply, marked `estimated`.
pub(crate) fn estimated_usage(request: &ChatRequest, reply: &str) -> Usage {
    Usage {
        input_tokens: estimate_tokens(&request.transcript()),
        output_tokens: estimate_tokens(reply),
        estimated: true,
    }
}

/// A fence line: three backticks or tildes, maybe a language tag.
fn is_fence(line: &str) -> bool {
    let Some(rest) = line
        .strip_prefix("```")
        .or_else(|| line.strip_prefix("~~~"))
    else {
        return false;
    };
    rest.chars()
        .all(|ch| ch.is_alphanumeric() || matches!(ch, '`' | '~' | '-' | '_' | '+' | '.'))
}

/// Whether a reply holds code a caller could use.
fn contains_code(text: &str) -> bool {
    text.contains("```")
        || text.contains("~~~")
        || text.lines().any(|line| {
            line.starts_with("@@ ")
                || line.starts_with("--- ")
                || line.starts_with("+++ ")
                || line.starts_with("diff --git")
                || line.starts_with("def ")
                || line.starts_with("class ")
                || line.starts_with("import ")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_that_finds_nothing_to_change_is_recognised_unless_it_holds_code() {
        for text in [
            "NO CHANGE: this module only re-exports names.",
            "This file looks fine as it is; no change is needed.",
            "The bug is not in this file, so nothing needs to change here.",
            "`billing/__init__.py` doesn\u{2019}t need any changes: it only imports.",
        ] {
            assert!(says_no_change_needed(text), "{text}");
        }
        for text in [
            "No change in behaviour:\n```diff\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n```\n",
            "Return the price, not the discount.",
            "",
        ] {
            assert!(!says_no_change_needed(text), "{text}");
        }
    }

    #[test]
    fn refusals_are_recognised() {
        assert!(looks_like_refusal("I cannot help with that request."));
        assert!(looks_like_refusal(
            "  I can't help with modifying this code."
        ));
        assert!(looks_like_refusal(
            "I’m sorry, but I can’t assist with that."
        ));
        assert!(looks_like_refusal(
            "Sorry, but that is not something I can do."
        ));
    }

    #[test]
    fn answers_are_not_refusals() {
        assert!(!looks_like_refusal(
            "Here is the fix:\n```diff\n-a\n+b\n```"
        ));
        assert!(!looks_like_refusal(
            "I cannot run the tests, but this should fix it:\n```python\nx = 1\n```"
        ));
        assert!(!looks_like_refusal(
            "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
        ));
        assert!(!looks_like_refusal(
            "The bug is in average(): I cannot see a guard."
        ));
    }

    #[test]
    fn empty_replies_are_recognised() {
        assert!(is_empty_reply(""));
        assert!(is_empty_reply("  \n\t\n"));
        assert!(is_empty_reply("```diff\n\n```"));
        assert!(!is_empty_reply("```python\nx = 1\n```"));
        assert!(!is_empty_reply("ok"));
    }

    #[test]
    fn tokens_are_estimated_from_characters() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
    }
}
