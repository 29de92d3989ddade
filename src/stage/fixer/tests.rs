use super::*;
use crate::llm::{ChatRequest, ChatResponse, ProviderKind, Usage};
use crate::pipeline::{TestCase, TestOutcome};
use std::sync::Mutex;

/// Answers with canned replies in order and keeps the requests. A
/// reply whose text is [`GARBLED`] stands for bytes that were not UTF-8.
struct Scripted {
    replies: Mutex<Vec<(String, Finish)>>,
    seen: Mutex<Vec<ChatRequest>>,
}

const GARBLED: &str = "\u{0}garbled";

impl Scripted {
    fn new(replies: &[(&str, Finish)]) -> Self {
        Self {
            replies: Mutex::new(
                replies
                    .iter()
                    .rev()
                    .map(|(t, f)| (t.to_string(), f.clone()))
                    .collect(),
            ),
            seen: Mutex::new(Vec::new()),
        }
    }
}

#[async_trait::async_trait]
impl ChatModel for Scripted {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Replay
    }
    fn model(&self) -> &str {
        "scripted"
    }
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.seen.lock().unwrap().push(request.clone());
        let (text, finish) = self
            .replies
            .lock()
            .unwrap()
            .pop()
            .expect("a scripted reply");
        if text == GARBLED {
            return Err(LlmError::NotUtf8 {
                provider: "openai".into(),
                detail: "byte 0xff at offset 40 of the body".into(),
            });
        }
        Ok(ChatResponse {
            text,
            finish,
            usage: Usage::default(),
            attempts: 1,
        })
    }
}

const GOOD: &str = "Fix it.\n```diff\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n```\n";

fn input() -> FixInput<'static> {
    FixInput {
        path: "a.py",
        text: "x = 1\n",
        plan_items: None,
        lint: vec![],
        failing: vec![],
        problems: vec![],
        history: &[],
        related: &[],
        max_changed_lines: 40,
        max_changed_bytes: 4_800,
        allowance: crate::stage::budget::Budget::default().fix,
    }
}

fn ctx() -> ReplyContext {
    ReplyContext {
        target_prefix: String::new(),
        requested: vec!["a.py".into()],
        language: crate::lang::code_language(&[]),
    }
}

async fn propose_with(replies: &[(&str, Finish)]) -> (Scripted, Vec<ModelCall>, Proposal) {
    let model = Scripted::new(replies);
    let (calls, proposal) = propose(&model, &input(), &ctx()).await;
    (model, calls, proposal.expect("the model answered"))
}

#[tokio::test]
async fn a_truncated_reply_is_never_applied_and_is_asked_again_smaller() {
    let (model, calls, p) =
        propose_with(&[(&GOOD[..60], Finish::Length), (GOOD, Finish::Stop)]).await;
    assert_eq!(calls.len(), 2);
    assert!(p.edits.is_ok());
    let seen = model.seen.lock().unwrap();
    let follow = &seen[1].messages;
    assert_eq!(follow.len(), 3);
    assert!(
        follow[2].content.contains("cut off"),
        "{}",
        follow[2].content
    );
}

#[tokio::test]
async fn refusals_and_empty_replies_are_asked_again_once_with_the_reason() {
    let (model, _, p) = propose_with(&[
        ("I'm sorry, but I cannot help with that.", Finish::Stop),
        (GOOD, Finish::Stop),
    ])
    .await;
    assert!(p.edits.is_ok());
    assert!(model.seen.lock().unwrap()[1].messages[2]
        .content
        .contains("declined"));

    let (_, calls, p) = propose_with(&[("   ", Finish::Stop), ("", Finish::Stop)]).await;
    assert_eq!(calls.len(), 2, "asked again exactly once");
    let reason = p.edits.unwrap_err();
    assert_eq!(reason.problem, ReplyProblem::Empty);
    assert_eq!(reason.first, Some(ReplyProblem::Empty));
}

#[tokio::test]
async fn a_second_truncation_is_a_failed_attempt() {
    let (_, calls, p) =
        propose_with(&[(&GOOD[..60], Finish::Length), (&GOOD[..50], Finish::Length)]).await;
    assert_eq!(calls.len(), 2);
    assert_eq!(p.edits.unwrap_err().problem, ReplyProblem::CutOff);
}

#[tokio::test]
async fn a_reply_that_is_not_utf8_is_asked_again_then_a_failed_attempt() {
    // Asked again with the reason; the second reply is used.
    let (model, calls, p) = propose_with(&[(GARBLED, Finish::Stop), (GOOD, Finish::Stop)]).await;
    assert_eq!(calls.len(), 2);
    assert!(calls[0].reply.is_err(), "the failed call is logged as one");
    assert!(p.edits.is_ok());
    let follow = model.seen.lock().unwrap()[1].messages.clone();
    assert_eq!(follow[1].content, UNREADABLE_REPLY);
    assert!(
        follow[2].content.contains("not valid UTF-8"),
        "{}",
        follow[2].content
    );

    // Twice: a failed attempt with that reason, not a model failure.
    let (_, calls, p) = propose_with(&[(GARBLED, Finish::Stop), (GARBLED, Finish::Stop)]).await;
    assert_eq!(calls.len(), 2);
    let reason = p.edits.unwrap_err();
    assert!(matches!(reason.problem, ReplyProblem::NotUtf8 { .. }));
    assert_eq!(reason.problem.kind(), "not_utf8");
    assert!(reason.to_string().contains("0xff"), "{reason}");
    assert_eq!(p.reply, "", "nothing of the garbled reply is kept");
}

#[tokio::test]
async fn a_reply_without_a_diff_names_what_was_wrong() {
    let (model, _, p) = propose_with(&[
        ("The code looks fine to me.", Finish::Stop),
        (GOOD, Finish::Stop),
    ])
    .await;
    assert!(p.edits.is_ok());
    let seen = model.seen.lock().unwrap();
    assert!(seen[1].messages[2].content.contains("could not be used"));
}

#[test]
fn summary_prefers_prose() {
    let p = Proposal {
        file: "a.py".into(),
        reply: "Fix average() on empty input.\n```diff\n--- a/a.py\n```".into(),
        edits: Err(ReplyProblem::Empty.into()),
        debugging: true,
        excerpts: None,
    };
    assert_eq!(p.summary(), "Fix average() on empty input");
    let q = Proposal {
        reply: "```diff\n--- a/a.py\n```".into(),
        ..p
    };
    assert_eq!(q.summary(), "fix failing tests in a.py");
}

#[tokio::test]
async fn a_large_file_is_asked_about_in_excerpts_and_the_reask_fits_too() {
    let text: String = (0..3_000)
        .map(|i| format!("def f_{i}(x):\n    return x * {i}\n\n"))
        .collect();
    let case = TestCase {
        id: "test_a.py::test_f".into(),
        outcome: TestOutcome::Failed,
        message: Some("ZeroDivisionError".into()),
        details: Some("a.py:4501: ZeroDivisionError".into()),
    };
    let allowance = crate::stage::budget::Allowance {
        prompt_tokens: 2_000,
        reply_tokens: 1_024,
    };
    let input = FixInput {
        text: &text,
        failing: vec![&case],
        allowance,
        ..input()
    };
    // A rambling first answer far longer than a reply limit.
    let rambling = "Let me think about this carefully. ".repeat(500);
    let model = Scripted::new(&[(&rambling, Finish::Stop), (GOOD, Finish::Stop)]);
    let (calls, proposal) = propose(&model, &input, &ctx()).await;
    let proposal = proposal.expect("the model answered");
    let excerpts = proposal.excerpts.expect("shown in excerpts");
    assert!(excerpts
        .iter()
        .any(|e| e.start <= 4501 && 4501 <= e.end && e.why.contains("`f_1500`")));
    assert_eq!(calls.len(), 2);
    let seen = model.seen.lock().unwrap();
    assert!(llm::prompt_tokens(&seen[0]) <= 2_000);
    let limit = 2_000 + 1_024 + crate::stage::budget::FOLLOW_UP_TOKENS;
    assert!(llm::prompt_tokens(&seen[1]) <= limit);
    assert!(seen[1].messages[1].content.starts_with("Let me think"));
}

#[tokio::test]
async fn a_reply_that_repeated_itself_is_asked_again_without_it() {
    let looping = format!("Fix.\n```diff\n{}", "import a; ".repeat(300));
    let repeated = Finish::Repeated { tokens: 750 };
    let (model, calls, p) = propose_with(&[(&looping, repeated), (GOOD, Finish::Stop)]).await;
    assert_eq!(calls.len(), 2);
    assert!(p.edits.is_ok());
    let seen = model.seen.lock().unwrap();
    let (first, again) = (&seen[0], &seen[1]);
    assert_eq!(
        again.messages.len(),
        first.messages.len(),
        "no reply in between"
    );
    let said: String = again.messages.iter().map(|m| m.content.as_str()).collect();
    assert!(!said.contains("import a;"), "the loop is not fed back");
    let last = &again.messages.last().unwrap().content;
    assert!(last.starts_with(&first.messages.last().unwrap().content));
    assert!(last.ends_with(crate::stage::prompt::DIFF_ONLY), "{last}");
    assert_eq!(again.sampling, crate::llm::Sampling::AGAINST_REPETITION);
    assert_eq!(first.sampling, crate::llm::Sampling::default());
}

#[tokio::test]
async fn a_reply_that_repeats_twice_is_unusable_and_its_loop_is_not_its_summary() {
    let looping = format!("import a; {}", "import a; ".repeat(300));
    let repeated = Finish::Repeated { tokens: 750 };
    let (_, calls, p) = propose_with(&[(&looping, repeated.clone()), (&looping, repeated)]).await;
    assert_eq!(calls.len(), 2);
    let unusable = p.edits.as_ref().expect_err("nothing usable");
    assert_eq!(unusable.problem.kind(), "repeated");
    assert_eq!(
        unusable.to_string(),
        "the reply repeated itself; stopped after 750 tokens (also after asking again; \
         first reply: the reply repeated itself; stopped after 750 tokens)"
    );
    assert_eq!(p.summary(), "clean up a.py");
}

#[test]
fn a_reply_is_named_by_its_form() {
    use super::reply_form;
    let diff = "```diff\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n```\n";
    assert_eq!(reply_form(diff, "m.py"), "diff");
    assert_eq!(reply_form("```python\nx = 2\n```\n", "m.py"), "whole file");
    assert_eq!(reply_form("I would change x.", "m.py"), "none");
}

/// `to_base.py` of the benchmark, and the real model's reply to a request
/// for it whole: the file exactly as it was (Qwen2.5-Coder-1.5B, recorded
/// 2026-11-28, `benches/real-model`).
const TO_BASE: &str = "import string\n\n\ndef to_base(num, b):\n    result = ''\n    alphabet = string.digits + string.ascii_uppercase\n    while num > 0:\n        i = num % b\n        num = num // b\n        result = result + alphabet[i]\n    return result\n";

#[tokio::test]
async fn a_whole_file_sent_back_unchanged_is_asked_again_for_a_diff_naming_what_fails() {
    let copied = format!("```python\n{TO_BASE}```\n");
    let fix = "```diff\n--- a/to_base.py\n+++ b/to_base.py\n@@ -7,5 +7,5 @@\n     while num > 0:\n         i = num % b\n         num = num // b\n-        result = result + alphabet[i]\n+        result = alphabet[i] + result\n     return result\n```\n";
    let failing = TestCase {
        id: "test_to_base.py::test_binary".into(),
        outcome: TestOutcome::Failed,
        message: Some("AssertionError: assert '0001' == '1000'\n  - 1000".into()),
        details: None,
    };
    let input = FixInput {
        path: "to_base.py",
        text: TO_BASE,
        failing: vec![&failing],
        ..input()
    };
    let ctx = ReplyContext {
        requested: vec!["to_base.py".into()],
        ..ctx()
    };
    let model = Scripted::new(&[(&copied, Finish::Stop), (fix, Finish::Stop)]);
    let (calls, p) = propose(&model, &input, &ctx).await;
    assert_eq!(calls.len(), 2);
    let edits = p.expect("answered").edits.expect("the diff is used");
    assert!(matches!(&edits[0].op, patch::EditOp::Patch(_)), "{edits:?}");
    let seen = model.seen.lock().unwrap();
    assert_eq!(seen[0].temperature, prompt::FIX_TEMPERATURE);
    let follow = &seen[1].messages[2].content;
    assert!(follow.contains("exactly as it is"), "{follow}");
    assert!(follow.contains("`test_binary` still fails"), "{follow}");
    assert!(follow.contains("assert '0001' == '1000')"), "{follow}");
    assert!(follow.contains("```diff"), "{follow}");
    assert!(seen[1].temperature >= prompt::RETRY_TEMPERATURE);
}

#[tokio::test]
async fn a_whole_file_sent_back_unchanged_twice_is_an_unusable_reply() {
    let copied = "```python\nx = 1\n```\n";
    let (_, calls, p) = propose_with(&[(copied, Finish::Stop), (copied, Finish::Stop)]).await;
    assert_eq!(calls.len(), 2);
    let unusable = p.edits.expect_err("a copy is no change");
    assert_eq!(unusable.problem, ReplyProblem::Unchanged);
    assert_eq!(unusable.first, Some(ReplyProblem::Unchanged));
    assert!(
        unusable.to_string().contains("exactly as it is"),
        "{unusable}"
    );
    // A changed whole file is used at once.
    let (_, calls, p) = propose_with(&[("```python\nx = 2\n```\n", Finish::Stop)]).await;
    assert_eq!(calls.len(), 1);
    assert!(p.edits.is_ok());
}
