//! Every text swarm sends to a model. Prompts are deterministic: no run ids,
//! times or absolute paths, so a recorded run replays by request hash.

use std::fmt::Write as _;

use super::budget::{Allowance, FOLLOW_UP_TOKENS};
use super::excerpt::{self, Evidence};
use super::reach::Related;
use crate::llm::{self, ChatMessage, ChatRequest, Role};
pub use crate::pipeline::clip;
use crate::pipeline::Excerpt;
use crate::pipeline::{LintMessage, ReplyProblem, TestCase};
use evidence::evidence_text;
pub use regression::broken_tests;
use trim::TRIMS;

/// `{language}` is the file's language (see [`crate::lang::worded`]).
const FIX_SYSTEM: &str =
    "You are the Fixer of swarm, an automated refactoring tool for {language} \
projects. You fix bugs so that the project's tests pass, and you clean up code (names, docstrings, \
simpler logic) without changing tested behaviour. You answer with a unified diff against the exact \
current text of the file you are given, in a ```diff fenced block, with `--- a/<path>` and \
`+++ b/<path>` headers and enough unchanged context lines (3) for every hunk to be located. You \
never modify test files. You keep each change small and focused.";

/// The same, for a reply asked as the whole file ([`asks_whole_file`]).
const FIX_SYSTEM_WHOLE: &str =
    "You are the Fixer of swarm, an automated refactoring tool for {language} \
projects. You fix bugs so that the project's tests pass, and you clean up code without changing \
tested behaviour. You answer with the whole new text of the file you are given, every line, in one \
fenced code block. You never modify test files. You keep each change small and focused.";

/// A file of at most this many lines, and [`WHOLE_FILE_CHARS`] characters,
/// is asked for whole: small models write a whole small file far more
/// reliably than a diff of it, and swarm makes the diff itself.
pub const WHOLE_FILE_LINES: usize = 60;
/// See [`WHOLE_FILE_LINES`].
pub const WHOLE_FILE_CHARS: usize = 2_400;
/// After a diff of a file could not be used, a file of at most this many
/// lines is asked for whole; longer files stay diffs.
pub const WHOLE_FILE_AFTER_FAILURE_LINES: usize = 200;

/// What the outcome of an attempt whose diff could not be used starts with.
pub const DIFF_NOT_USED: &str = "no usable change";

/// Whether the Fixer asks for `text` whole rather than as a diff: a small
/// file (see [`WHOLE_FILE_LINES`]), or one of at most
/// [`WHOLE_FILE_AFTER_FAILURE_LINES`] lines whose last reply could not be used;
/// not a file whose last reply was that file exactly as it was.
pub fn asks_whole_file(text: &str, history: &[PastAttempt]) -> bool {
    let lines = text.lines().count();
    let small = lines <= WHOLE_FILE_LINES && text.chars().count() <= WHOLE_FILE_CHARS;
    let failed = history.last().is_some_and(|past| {
        past.outcome.starts_with(DIFF_NOT_USED)
            || past.outcome.contains("did not apply")
            || past.outcome.contains("the patch was not applied")
    });
    // A file the model sent back whole as it was, even when asked again
    // (`ReplyProblem::Unchanged`), is asked for as a diff next: copying it
    // is what the model did instead of changing it. A diff that changes
    // nothing (the Reviewer's "leaves every file exactly as it is") does
    // not count, so the two forms take turns.
    let copied = history
        .last()
        .is_some_and(|past| past.outcome.contains(&ReplyProblem::Unchanged.to_string()));
    !copied && (small || failed && lines <= WHOLE_FILE_AFTER_FAILURE_LINES)
}

/// One earlier attempt on a file, as the Fixer remembers it.
#[derive(Clone, Debug, Default)]
pub struct PastAttempt {
    /// `attempt 3` or `proposal in round 2` (rejected before commit).
    pub label: String,
    /// What was tried, one line.
    pub summary: String,
    /// What came of it, one line (the Reviewer's reason or the Judge's verdict).
    pub outcome: String,
    /// The diff that was tried, if any.
    pub diff: Option<String>,
    /// The tests that passed before this attempt and failed after it
    /// ([`broken_tests`]); empty unless it was judged regressed.
    pub broke: Vec<TestCase>,
}

/// What a fix prompt is built from.
pub struct FixInput<'a> {
    pub path: &'a str,
    pub text: &'a str,
    pub plan_items: Option<&'a str>,
    pub lint: Vec<&'a LintMessage>,
    pub failing: Vec<&'a TestCase>,
    /// Import or compile problems of this file (no-tests mode).
    pub problems: Vec<&'a str>,
    pub history: &'a [PastAttempt],
    /// Definitions in other files the failing tests and this file call,
    /// and their callers: shown read-only.
    pub related: &'a [Related],
    pub max_changed_lines: usize,
    /// The byte limit of a change to this file.
    pub max_changed_bytes: usize,
    /// How big the prompt may be and the reply limit to ask for.
    pub allowance: Allowance,
}

impl FixInput<'_> {
    /// Whether the prompt analyses errors (failing tests or broken imports).
    pub fn is_debugging(&self) -> bool {
        !self.failing.is_empty() || !self.problems.is_empty()
    }
}

/// The evidence may take at most this share (in fifths) of what a prompt
/// in excerpts has left after its fixed parts; the excerpts get the rest.
const EVIDENCE_FIFTHS: u64 = 2;

/// A fix request and what it shows of the file.
#[derive(Clone, Debug)]
pub struct FixPrompt {
    pub request: ChatRequest,
    /// The parts of the file shown, when it did not fit whole.
    pub excerpts: Option<Vec<Excerpt>>,
}

/// The Fixer's request for one file, within `input.allowance.prompt_tokens`
/// by [`llm::prompt_tokens`]: the whole file with as much evidence as fits
/// beside it, else the file in excerpts ([`excerpt`]) beside a share of
/// the evidence. The closing instructions are never cut.
pub fn fix_prompt(input: &FixInput<'_>) -> FixPrompt {
    let allowance = input.allowance.prompt_tokens;
    let whole = format!(
        "\n## Current text of `{}`\n```{}\n{}\n```\n",
        input.path,
        crate::lang::fence_of(input.path),
        input.text.trim_end_matches('\n')
    );
    for trim in &TRIMS {
        let request = fix_chat(input, &evidence_text(input, trim), &whole);
        if llm::prompt_tokens(&request) <= allowance {
            return FixPrompt {
                request,
                excerpts: None,
            };
        }
    }
    let fixed = llm::prompt_tokens(&fix_chat(input, "", ""));
    let share = allowance.saturating_sub(fixed) * EVIDENCE_FIFTHS / 5;
    let barest = evidence_text(input, &TRIMS[TRIMS.len() - 1]);
    let evidence = TRIMS
        .iter()
        .map(|trim| evidence_text(input, trim))
        .find(|text| llm::budget_tokens(text) <= share)
        .or_else(|| {
            // Past its share, the barest evidence still beats a bigger excerpt.
            (llm::budget_tokens(&barest) < allowance.saturating_sub(fixed)).then_some(barest)
        })
        .unwrap_or_default();
    let room = allowance.saturating_sub(llm::prompt_tokens(&fix_chat(input, &evidence, "")));
    let pointers = Evidence {
        failing: &input.failing,
        problems: &input.problems,
        lint: &input.lint,
        plan_items: input.plan_items,
    };
    let shown = excerpt::excerpts(input.path, input.text, &pointers, room);
    FixPrompt {
        request: fix_chat(input, &evidence, &shown.text),
        excerpts: Some(shown.excerpts),
    }
}

/// The request around `evidence` and the file's section (the whole file,
/// excerpts, or nothing while the fixed parts are measured).
fn fix_chat(input: &FixInput<'_>, evidence: &str, file: &str) -> ChatRequest {
    let mut p = String::new();
    let _ = writeln!(p, "Fix and improve `{}`.", input.path);
    p.push_str(evidence);
    p.push_str(file);
    let shown_whole = file.starts_with("\n## Current text of");
    if shown_whole && asks_whole_file(input.text, input.history) {
        let _ = writeln!(
            p,
            "\nReply with the whole new text of `{path}` in one ```{fence} block: every line, \
             changed or not, no diff. Change at most {max} lines. Fix the failing tests first; keep \
             public names that tests use; do not edit tests. If `{path}` needs no change, reply \
             `NO CHANGE` and one sentence why.",
            path = input.path,
            fence = crate::lang::fence_of(input.path),
            max = input.max_changed_lines,
        );
        return ChatRequest {
            system: crate::lang::worded(FIX_SYSTEM_WHOLE, &[input.path]),
            messages: vec![user(p)],
            max_output_tokens: input.allowance.reply_tokens,
            temperature: FIX_TEMPERATURE,
            sampling: Default::default(),
        };
    }
    let _ = writeln!(
        p,
        "\nReply with one unified diff of `{path}` in a ```diff block (`--- a/{path}`, `+++ b/{path}`). \
         Change at most {max} lines (added plus removed) and {bytes} bytes. Fix the failing tests first; do not \
         edit test files or test configuration; keep public names that tests use. If `{path}` needs no \
         change, reply `NO CHANGE` and one sentence why, without a diff.",
        path = input.path,
        max = input.max_changed_lines,
        bytes = input.max_changed_bytes
    );
    ChatRequest {
        system: crate::lang::worded(FIX_SYSTEM, &[input.path]),
        messages: vec![user(p)],
        max_output_tokens: input.allowance.reply_tokens,
        temperature: FIX_TEMPERATURE,
        sampling: Default::default(),
    }
}

/// The temperature of a fix request. (Its `NO CHANGE` sentence is worded
/// the same whether failing tests reach the file or not: worded "only when
/// the fault is in another file", it made Qwen2.5-Coder-1.5B's first
/// whole-file reply a copy or a part-fix far more often, 2 green first
/// replies of 16 on the benchmark's `wordfreq` against 5 of 11; a `NO
/// CHANGE` the failing tests contradict is pushed back instead.)
pub const FIX_TEMPERATURE: f32 = 0.2;

/// The temperature of the request asked again after a whole file came
/// back exactly as it was: near-greedy sampling gives a small model's
/// same reply to the same conversation word for word. Only there: a
/// later round's request stays at [`FIX_TEMPERATURE`], because at 0.6
/// Qwen2.5-Coder-1.5B wandered off the fix into rewrites (typing imports,
/// `Counter`) that the tests judged worse.
pub const RETRY_TEMPERATURE: f32 = 0.6;

/// The follow-up after a reply cut off by the output limit.
pub fn reask_truncated() -> String {
    "Your reply was cut off by the output length limit before the diff was complete, so none of \
     it was applied. Send a smaller unified diff: only the hunks needed for the most important fix, \
     with 3 lines of context each."
        .into()
}

/// What a request asked again after a reply that repeated itself says, at
/// the end of its last message.
pub const DIFF_ONLY: &str = "Your previous answer to this request repeated the same text over \
and over and was discarded. Answer with the diff only: one ```diff block, nothing before or \
after it.";

/// The request asked again after a reply that repeated itself: the same
/// conversation, none of the reply, [`DIFF_ONLY`] after its last message,
/// and sampling that weighs down what was already said
/// ([`llm::Sampling::AGAINST_REPETITION`], sent where the provider takes
/// it).
pub fn after_repetition(mut request: ChatRequest) -> ChatRequest {
    match request.messages.last_mut() {
        Some(last) if last.role == Role::User => {
            last.content = format!("{}\n\n{DIFF_ONLY}", last.content.trim_end());
        }
        _ => request.messages.push(user(DIFF_ONLY.to_string())),
    }
    request.sampling = llm::Sampling::AGAINST_REPETITION;
    request
}

/// The follow-up after a reply with nothing usable.
pub fn reask_unusable(problem: &str) -> String {
    format!(
        "Your reply could not be used: {problem}. Reply with exactly one ```diff fenced block holding a \
         unified diff of the file against its current text, with `--- a/<path>` / `+++ b/<path>` headers \
         and @@ hunks, and nothing else."
    )
}

/// The follow-up after a diff that could not be used, for a file asked
/// whole from then on ([`WHOLE_FILE_AFTER_FAILURE_LINES`]): short — the one
/// thing wrong and the form to answer in (the file's text is in the
/// request already).
pub fn reask_whole_file(problem: &str, path: &str) -> String {
    let problem = problem.lines().next().unwrap_or(problem);
    format!(
        "Your reply could not be used ({problem}). Reply instead with the whole new text of \
         `{path}` in one ```{} block: every line, changed or not, and nothing else.",
        crate::lang::fence_of(path)
    )
}

/// The follow-up to a whole-file reply that is the file as it was: what
/// still fails (its first line), and the change asked for as a diff.
pub fn reask_unchanged(path: &str, failing: &[&TestCase]) -> String {
    let still = match failing.first() {
        Some(case) => {
            let name = case.name();
            let why = case
                .message
                .as_deref()
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("")
                .trim();
            format!(" `{name}` still fails with it ({why}).")
        }
        None => String::new(),
    };
    format!(
        "That is `{path}` exactly as it is: nothing changed.{still} Reply with a unified diff of \
         `{path}` in a ```diff block that changes the lines that make the failing tests fail."
    )
}

/// What stands after a reply shown cut in a follow-up.
const REPLY_CUT: &str = "\n… (the rest of this reply is not shown)";

/// [`follow_up`] within what `allowance` leaves for asking again: the
/// first request's prompt allowance, one reply and [`FOLLOW_UP_TOKENS`]
/// (see `budget`). A reply longer than that (by [`llm::budget_tokens`]) is
/// shown cut, and an overlong follow-up message is clipped.
pub fn follow_up_within(
    request: ChatRequest,
    reply: &str,
    message: String,
    allowance: Allowance,
) -> ChatRequest {
    let limit = allowance.prompt_tokens + u64::from(allowance.reply_tokens) + FOLLOW_UP_TOKENS;
    let first = llm::prompt_tokens(&request);
    let overhead = llm::prompt_tokens(&follow_up(request.clone(), "", String::new())) - first;
    let message = clip_tokens(&message, FOLLOW_UP_TOKENS.saturating_sub(overhead)).to_string();
    let without_reply = llm::prompt_tokens(&follow_up(request.clone(), "", message.clone()));
    let room = limit.saturating_sub(without_reply);
    let shown = if llm::budget_tokens(reply) <= room {
        reply.to_string()
    } else {
        let cut = clip_tokens(reply, room.saturating_sub(llm::budget_tokens(REPLY_CUT)));
        format!("{cut}{REPLY_CUT}")
    };
    follow_up(request, &shown, message)
}

/// At most `max` tokens of `text` by [`llm::budget_tokens`], cut at a char boundary.
pub fn clip_tokens(text: &str, max: u64) -> &str {
    if llm::budget_tokens(text) <= max {
        return text;
    }
    let (mut ascii, mut other) = (0u64, 0u64);
    for (i, c) in text.char_indices() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
        if ascii.div_ceil(3) + other > max {
            return &text[..i];
        }
    }
    text
}

/// A request continued with the model's reply and a follow-up.
pub fn follow_up(mut request: ChatRequest, reply: &str, message: String) -> ChatRequest {
    request.messages.push(ChatMessage {
        role: Role::Assistant,
        content: reply.to_string(),
    });
    request.messages.push(user(message));
    request
}

fn user(content: String) -> ChatMessage {
    ChatMessage {
        role: Role::User,
        content,
    }
}

/// Text with run-specific noise removed (object addresses such as
/// `<Item object at 0x7f…>`), so the same failure gives the same prompt.
pub fn stable(text: &str) -> String {
    static ADDRESS: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re =
        ADDRESS.get_or_init(|| regex::Regex::new(r"\bat 0x[0-9a-fA-F]+").expect("static regex"));
    re.replace_all(text, "at 0x…").into_owned()
}

/// First line of an optional message, or `(no message)`.
pub fn one_line(message: Option<&str>) -> String {
    let line = message
        .and_then(|m| m.lines().next())
        .unwrap_or("(no message)");
    clip(line, 300).to_string()
}
/// The last `n` lines of `text`.
pub fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    lines[start..].join("\n")
}

/// The first `n` lines of `text`.
pub fn head_lines(text: &str, n: usize) -> String {
    text.lines().take(n).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(n: u32) -> PastAttempt {
        PastAttempt {
            label: format!("attempt {n}"),
            summary: format!("idea {n}"),
            outcome: "tests regressed".into(),
            diff: Some("--- a/x.py\n+++ b/x.py\n@@\n-a\n+b".into()),
            broke: Vec::new(),
        }
    }

    fn input<'a>(history: &'a [PastAttempt]) -> FixInput<'a> {
        FixInput {
            path: "pkg/x.py",
            text: "a = 1\n",
            plan_items: Some("- **Type**: bug"),
            lint: vec![],
            failing: vec![],
            problems: vec![],
            history,
            related: &[],
            max_changed_lines: 40,
            max_changed_bytes: 4_800,
            allowance: crate::stage::budget::Budget::default().fix,
        }
    }

    #[test]
    fn related_code_is_shown_read_only_and_capped() {
        let related: Vec<Related> = (0..6)
            .map(|i| Related {
                file: format!("pkg/r{i}.py"),
                name: format!("f{i}"),
                why: "calls g".into(),
                start: 3,
                end: 4,
                text: format!("def f{i}():\n    return g()"),
            })
            .collect();
        let with = FixInput {
            related: &related,
            ..input(&[])
        };
        let text = fix_prompt(&with).request.messages[0].content.clone();
        assert!(
            text.contains("## Related code in other files (for context"),
            "{text}"
        );
        assert!(text.contains("### `pkg/r0.py` lines 3-4: `f0` (calls g)\n```python\ndef f0():\n    return g()\n```"), "{text}");
        // At most four definitions.
        assert!(text.contains("`f3`") && !text.contains("`f4`"), "{text}");
        let bare = fix_prompt(&input(&[])).request.messages[0].content.clone();
        assert!(!bare.contains("Related code"), "{bare}");
    }

    #[test]
    fn a_small_file_is_asked_whole_and_a_long_one_as_a_diff_until_a_diff_fails() {
        let small = fix_prompt(&input(&[])).request;
        let text = &small.messages[0].content;
        assert!(
            text.contains("Reply with the whole new text of `pkg/x.py`"),
            "{text}"
        );
        assert!(small.system.contains("whole new text"), "{}", small.system);
        let long: String = (0..120).map(|i| format!("v{i} = {i}\n")).collect();
        let big = FixInput {
            text: &long,
            ..input(&[])
        };
        let text = fix_prompt(&big).request.messages[0].content.clone();
        assert!(text.contains("Reply with one unified diff"), "{text}");
        let failed = [PastAttempt {
            outcome: "rejected by the Reviewer: the patch was not applied (no file was changed)"
                .into(),
            ..attempt(1)
        }];
        let after = FixInput {
            text: &long,
            ..input(&failed)
        };
        let text = fix_prompt(&after).request.messages[0].content.clone();
        assert!(text.contains("Reply with the whole new text"), "{text}");
    }

    #[test]
    fn addresses_are_stable() {
        assert_eq!(
            stable("where 10 = <m.Item object at 0x7f4461c4de10>.quantity"),
            "where 10 = <m.Item object at 0x…>.quantity"
        );
    }

    #[test]
    fn history_is_tiered() {
        let first = fix_prompt(&input(&[])).request.messages[0].content.clone();
        assert!(!first.contains("Previous attempt") && !first.contains("Earlier attempts"));
        let one = [attempt(1)];
        let second = fix_prompt(&input(&one)).request.messages[0].content.clone();
        assert!(second.contains("## Previous attempt") && second.contains("```diff"));
        let three = [attempt(1), attempt(2), attempt(3)];
        let third = fix_prompt(&input(&three)).request.messages[0]
            .content
            .clone();
        assert!(third.contains("Earlier attempts (3)"));
        assert!(third.contains("Tried idea 1; idea 2; idea 3"));
        assert!(third.contains("different approach"));
        assert!(third.contains("at most 40 lines"));
    }

    #[test]
    fn a_file_copied_whole_is_asked_as_a_diff_next_and_a_no_op_diff_as_a_whole_file() {
        let small = "def f():\n    return 1\n";
        let after = |outcome: String| {
            [PastAttempt {
                outcome,
                ..attempt(1)
            }]
        };
        assert!(asks_whole_file(small, &[]));
        let copied = crate::pipeline::Unusable {
            problem: crate::pipeline::ReplyProblem::Unchanged,
            first: Some(crate::pipeline::ReplyProblem::Unchanged),
        };
        let copied = after(format!("{DIFF_NOT_USED}: {copied}"));
        assert!(!asks_whole_file(small, &copied));
        let no_op =
            after("rejected by the Reviewer: the change leaves every file exactly as it is".into());
        assert!(asks_whole_file(small, &no_op));
        // Every round's first ask is sampled alike, with history or not.
        let history = [attempt(1)];
        assert_eq!(fix_prompt(&input(&[])).request.temperature, FIX_TEMPERATURE);
        assert_eq!(
            fix_prompt(&input(&history)).request.temperature,
            FIX_TEMPERATURE
        );
    }
}

#[cfg(test)]
mod budget_tests;
mod evidence;
pub mod held_out;
mod regression;
pub mod repair;
pub mod task;
pub mod tester;
mod trim;
