//! The fix prompt within its allowance: what is given up first, the file
//! in excerpts, and the re-ask.

use super::*;
use crate::pipeline::TestOutcome;
use crate::stage::budget::{Budget, MIN_PROMPT_TOKENS};

/// A module of `n` small functions; `f_{i}` starts at line `5 + 5 * i`.
fn module(n: usize) -> String {
    let mut text = String::from("\"\"\"Helpers.\"\"\"\nimport math\nimport os\n\n");
    for i in 0..n {
        text.push_str(&format!(
            "def f_{i:04}(value):\n    \"\"\"Scale by {i}.\"\"\"\n    base = math.floor(value)\n    return base * {i} + {}\n\n",
            i * 7
        ));
    }
    text
}

/// Everything a fix input borrows.
struct Owned {
    text: String,
    plan: Option<String>,
    lint: Vec<LintMessage>,
    failing: Vec<TestCase>,
    problems: Vec<String>,
    history: Vec<PastAttempt>,
}

impl Owned {
    fn new(functions: usize, tests: usize, lint: usize, attempts: usize, plan: usize) -> Self {
        let trace: String = (0..30)
            .map(|i| format!("tests/test_x.py:{i}: in check_something_long_{i}\n"))
            .collect();
        Owned {
            text: module(functions),
            plan: (plan > 0)
                .then(|| format!("- **Location**: `f_0002`, line 17 {}", "x".repeat(plan))),
            lint: (0..lint)
                .map(|i| LintMessage {
                    path: "pkg/x.py".into(),
                    line: 7 + i as u32,
                    column: 0,
                    kind: if i % 2 == 0 { "convention" } else { "error" }.into(),
                    symbol: format!("symbol-{i}"),
                    message_id: "C0103".into(),
                    message: "a message of ordinary length about a name".into(),
                })
                .collect(),
            failing: (0..tests)
                .map(|i| TestCase {
                    id: format!("tests/test_x.py::test_{i}"),
                    outcome: TestOutcome::Failed,
                    message: Some(format!("assert {i} == 2")),
                    details: Some(format!("{trace}pkg/x.py:{}: AssertionError", 8 + i)),
                })
                .collect(),
            problems: Vec::new(),
            history: (0..attempts)
                .map(|i| PastAttempt {
                    label: format!("attempt {i}"),
                    summary: format!("idea {i}"),
                    outcome: "the Judge found it worse".into(),
                    diff: Some(
                        (0..80)
                            .map(|l| format!("-    old line {l} of the diff\n+    new line {l}\n"))
                            .collect(),
                    ),
                    broke: Vec::new(),
                })
                .collect(),
        }
    }

    fn input(&self, prompt_tokens: u64) -> FixInput<'_> {
        FixInput {
            path: "pkg/x.py",
            text: &self.text,
            plan_items: self.plan.as_deref(),
            lint: self.lint.iter().collect(),
            failing: self.failing.iter().collect(),
            problems: self.problems.iter().map(String::as_str).collect(),
            history: &self.history,
            related: &[],
            max_changed_lines: 40,
            max_changed_bytes: 4_800,
            allowance: Allowance {
                prompt_tokens,
                reply_tokens: 2_000,
            },
        }
    }
}

const INSTRUCTIONS: &str = "Reply with one unified diff of `pkg/x.py`";

fn text_of(prompt: &FixPrompt) -> &str {
    &prompt.request.messages[0].content
}

#[test]
fn a_file_that_fits_is_shown_whole_with_all_its_evidence() {
    let owned = Owned::new(20, 3, 10, 1, 200);
    let prompt = fix_prompt(&owned.input(Budget::default().fix.prompt_tokens));
    let text = text_of(&prompt);
    assert!(prompt.excerpts.is_none());
    assert!(text.contains("## Current text of `pkg/x.py`\n```python\n\"\"\"Helpers.\"\"\""));
    assert!(text.contains("```diff\n-    old line 0"));
    assert_eq!(text.matches("- line ").count(), 10);
    assert!(text.contains("in check_something_long_29"));
    assert!(!text.contains("left out for length"));
}

#[test]
fn evidence_is_given_up_in_order_before_the_file() {
    let owned = Owned::new(60, 8, 40, 1, 3_000);
    let full = llm::prompt_tokens(&fix_prompt(&owned.input(u64::MAX)).request);
    let mut seen_whole_and_bare = false;
    for allowance in (MIN_PROMPT_TOKENS..full).rev().step_by(37) {
        let prompt = fix_prompt(&owned.input(allowance));
        let text = text_of(&prompt);
        assert!(llm::prompt_tokens(&prompt.request) <= allowance);
        assert!(text.trim_end().ends_with(", without a diff."));
        if prompt.excerpts.is_some() {
            continue;
        }
        let diff = text.contains("```diff\n-    old line");
        let lint = text.matches("\n- line ").count();
        let long_traces = text.contains("check_something_long_10\n");
        let traces = text.contains("check_something_long_29");
        let plan_whole = !text.contains("the rest of the plan items is left out");
        if lint < 40 {
            assert!(!diff, "lint cut before the diff at {allowance}");
        }
        if !long_traces {
            assert!(lint <= 5, "traces cut before lint at {allowance}");
        }
        if !plan_whole {
            assert!(!traces, "plan cut before traces at {allowance}");
        }
        seen_whole_and_bare |= !plan_whole;
    }
    assert!(seen_whole_and_bare, "never reached the plan's turn");
    // Just short of everything: only the diff goes.
    let prompt = fix_prompt(&owned.input(full - 1));
    let text = text_of(&prompt);
    assert!(!text.contains("```diff\n-") && text.contains("## Previous attempt"));
    assert_eq!(text.matches("\n- line ").count(), 40);
    // The most serious lint stays when lint is cut.
    let fewer = (MIN_PROMPT_TOKENS..full)
        .rev()
        .map(|a| fix_prompt(&owned.input(a)))
        .find(|p| text_of(p).contains("more pylint messages left out"))
        .expect("some allowance cuts lint");
    assert!(text_of(&fewer).contains("(symbol-1)"));
    assert!(!text_of(&fewer).contains("(symbol-0)"));
}

#[test]
fn a_file_too_large_is_shown_in_excerpts_within_the_allowance() {
    let mut owned = Owned::new(1_000, 1, 3, 0, 0);
    let line = 5 + 5 * 461 + 3;
    owned.failing[0].details = Some(format!(
        "def test_0():\n>   assert f_0461(2) == 2\n\ntests/test_x.py:3: \n_ _ _\npkg/x.py:{line}: ZeroDivisionError"
    ));
    let allowance = Budget::default().fix.prompt_tokens;
    let prompt = fix_prompt(&owned.input(allowance));
    let text = text_of(&prompt);
    assert!(llm::prompt_tokens(&prompt.request) <= allowance);
    assert!(!text.contains("## Current text of"));
    assert!(text.contains("## Excerpts of `pkg/x.py`"));
    assert!(text.contains("    return base * 461 + 3227\n"));
    assert!(!text.contains("    return base * 900 + 6300\n"));
    assert!(text.len() < owned.text.len() / 3);
    assert!(text.trim_end().ends_with(", without a diff."));
    assert!(text.contains("## Failing tests\n### tests/test_x.py::test_0"));
    let excerpts = prompt.excerpts.expect("excerpts");
    assert!(excerpts
        .iter()
        .any(|e| e.start <= line && line <= e.end && e.why.contains("`f_0461`")));
}

#[test]
fn a_long_reply_is_shown_cut_in_a_reask_that_fits() {
    let owned = Owned::new(200, 2, 5, 0, 100);
    let input = owned.input(3_000);
    let request = fix_prompt(&input).request;
    let short = follow_up_within(
        request.clone(),
        "no diff here",
        reask_truncated(),
        input.allowance,
    );
    assert_eq!(
        short,
        follow_up(request.clone(), "no diff here", reask_truncated())
    );
    let long = "word ".repeat(10_000);
    let retry = follow_up_within(request, &long, reask_unusable("no diff"), input.allowance);
    let limit = 3_000 + 2_000 + FOLLOW_UP_TOKENS;
    assert!(llm::prompt_tokens(&retry) <= limit);
    assert!(retry.messages[1].content.ends_with(REPLY_CUT));
    assert!(retry.messages[2]
        .content
        .starts_with("Your reply could not be used"));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    #[test]
    fn every_fix_request_and_its_reask_fit(
        functions in 0usize..1_500,
        tests in 0usize..10,
        lint in 0usize..60,
        attempts in 0usize..5,
        plan in 0usize..6_000,
        allowance in MIN_PROMPT_TOKENS..15_000,
        reply_chars in 0usize..40_000,
    ) {
        let owned = Owned::new(functions, tests, lint, attempts, plan);
        let input = owned.input(allowance);
        let prompt = fix_prompt(&input);
        proptest::prop_assert!(llm::prompt_tokens(&prompt.request) <= allowance);
        let text = text_of(&prompt);
        // A small file shown whole is asked whole; any other as a diff.
        if prompt.excerpts.is_none() && asks_whole_file(&owned.text, &owned.history) {
            proptest::prop_assert!(text.contains("Reply with the whole new text of `pkg/x.py`"));
            proptest::prop_assert!(text.trim_end().ends_with("one sentence why."));
        } else {
            proptest::prop_assert!(text.contains(INSTRUCTIONS));
            proptest::prop_assert!(text.trim_end().ends_with(", without a diff."));
        }
        let retry = follow_up_within(
            prompt.request.clone(),
            &"r".repeat(reply_chars),
            reask_unusable("the reply held no diff"),
            input.allowance,
        );
        let limit = allowance + u64::from(input.allowance.reply_tokens) + FOLLOW_UP_TOKENS;
        proptest::prop_assert!(llm::prompt_tokens(&retry) <= limit);
    }
}
