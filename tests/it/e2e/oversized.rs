//! An oversized reply that keeps the part that fixes the bug, end to end,
//! as on QuixBugs with a model that returns the reference solution: one
//! small hunk fixes the bug, one large hunk beside it (alternative
//! implementations in a trailing string) is past the file's size limit, and
//! no split along hunk boundaries can carry it. The small hunk is judged
//! alone and delivered; the log, the summary and the attempt's commit name
//! the hunk left out. When the part is not enough, the model is asked again
//! with the limit and the reason, as for any refused proposal.

use std::time::Duration;

use serde_json::Value;

use super::{run_openai, summary_of};
use crate::support::fixture::{prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};
use crate::support::repo::TestRepo;

/// QuixBugs' `is_valid_parenthesization`, with its bug: the depth left at
/// the end is not looked at.
const BUGGY: &str = "def is_valid_parenthesization(parens):\n    depth = 0\n    for paren in parens:\n        if paren == '(':\n            depth += 1\n        else:\n            depth -= 1\n            if depth < 0:\n                return False\n\n    return True\n";
const FIXED: &str = "def is_valid_parenthesization(parens):\n    depth = 0\n    for paren in parens:\n        if paren == '(':\n            depth += 1\n        else:\n            depth -= 1\n            if depth < 0:\n                return False\n\n    return depth == 0\n";
/// A fix that fixes nothing.
const WRONG: &str = "def is_valid_parenthesization(parens):\n    depth = 0\n    for paren in parens:\n        if paren == '(':\n            depth += 1\n        else:\n            depth -= 1\n            if depth < 0:\n                return False\n\n    return depth >= 0\n";
const TESTS: &str = "import pytest\n\nfrom is_valid_parenthesization import is_valid_parenthesization\n\n\n@pytest.mark.parametrize(\n    \"parens, expected\",\n    [(\"((()()))()\", True), (\")()(\", False), (\"((\", False), (\"()\", True), (\"(()\", False)],\n)\ndef test_is_valid_parenthesization(parens, expected):\n    assert is_valid_parenthesization(parens) == expected\n";
const PLAN: &str = "# Refactoring plan\n\n## Summary\n\nOne function, one bug.\n\n## is_valid_parenthesization.py\n\n- **Type**: bug\n  **Severity**: high\n  **Location**: `is_valid_parenthesization()`, line 11\n  **Description**: an unclosed parenthesis is accepted.\n  **Suggested fix**: return whether the depth is back to 0.\n";
const FILE: &str = "is_valid_parenthesization.py";

/// The reference solution's padding: alternative implementations in a
/// trailing string, 60 lines.
fn alternatives() -> String {
    let mut text = String::from("\n\n\"\"\"\nAlternative implementations\n");
    for k in 0..28 {
        text.push_str(&format!(
            "def is_valid_parenthesization_{k}(parens):\n    return parens.count('(') == parens.count(')')  # variant {k}\n"
        ));
    }
    text.push_str("\"\"\"\n");
    text
}

/// The project, committed in a fresh repository.
fn project() -> FixtureRepo {
    let repo = TestRepo::with_files(&[(FILE, BUGGY), ("test_is_valid_parenthesization.py", TESTS)]);
    let target = repo.root.clone();
    FixtureRepo {
        name: "quixbugs".into(),
        repo,
        target,
        target_rel: String::new(),
    }
}

/// A fenced diff of the file from `before` to `after`.
fn diff(before: &str, after: &str) -> String {
    let body = similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{FILE}"), &format!("b/{FILE}"))
        .to_string();
    format!("Here is the reference solution.\n\n```diff\n{body}```\n")
}

/// A model that writes [`PLAN`], no held-out tests, and answers the n-th
/// fix request with `fixes[n]` (the last one from then on), as a diff of
/// the text shown.
fn model(fixes: Vec<String>) -> LlmServer {
    let asked_before = std::sync::atomic::AtomicUsize::new(0);
    LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        if prompt.starts_with("Write a refactoring plan") {
            return Reply::stream_for(req, PLAN, 3, Duration::ZERO);
        }
        if prompt.starts_with("Write held-out pytest tests") {
            return Reply::stream_for(req, "No held-out tests.", 1, Duration::ZERO);
        }
        let asked = prompt.matches("Fix and improve `").count();
        assert_eq!(asked, 1, "one file per request");
        let shown = if prompt.contains("return depth >= 0") {
            WRONG
        } else {
            BUGGY
        };
        let n = asked_before
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            .min(fixes.len() - 1);
        Reply::stream_for(req, &diff(shown, &fixes[n]), 5, Duration::ZERO)
    })
}

#[test]
fn the_small_fixing_hunk_is_delivered_without_the_oversized_unrelated_one() {
    let fx = project();
    let start = fx.repo.head();
    let server = model(vec![format!("{FIXED}{}", alternatives())]);
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_ne!(fx.repo.head(), start);
    assert_eq!(fx.repo.read(FILE), FIXED, "the fix only, no padding");
    let fixes = server
        .requests()
        .iter()
        .filter(|r| prompt_of(r).starts_with("Fix and improve"))
        .count();
    assert_eq!(fixes, 1, "the part was enough: never asked again");

    let left_out_hunk =
        "hunk 2 of 2 (is_valid_parenthesization.py after line 11: 0 removed, 61 added)";
    let unrelated = "it touches nothing the failing tests, what they call or the plan point at";
    // The log: the proposal refused for its size, then the part accepted.
    let reviews: Vec<Value> = fx
        .log()
        .into_iter()
        .filter(|e| e["agent"] == "Reviewer")
        .collect();
    assert_eq!(reviews.len(), 2, "{reviews:?}");
    assert_eq!(reviews[0]["details"]["verdict"], "rejected");
    assert_eq!(reviews[0]["details"]["rule"], "too_many_lines");
    let part = &reviews[1]["details"];
    assert_eq!(part["verdict"], "accepted", "{part}");
    assert_eq!(part["left_out"][0]["hunk"], left_out_hunk, "{part}");
    assert_eq!(part["left_out"][0]["why"], unrelated);
    assert_eq!(
        part["kept"][0]["hunk"],
        "hunk 1 of 2 (is_valid_parenthesization.py line 11: 1 removed, 1 added)"
    );
    assert!(
        part["kept"][0]["why"]
            .as_str()
            .unwrap()
            .starts_with("`is_valid_parenthesization`"),
        "{part}"
    );
    // The summary and the attempt's commit.
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["left_out"][0]["hunk"], left_out_hunk, "{summary}");
    assert_eq!(summary["left_out"][0]["attempt"], 1);
    let message = fx.repo.git(&["log", "-1", "--format=%B", "HEAD"]);
    assert!(
        message.contains(&format!("Swarm-Left-Out: {left_out_hunk}: {unrelated}")),
        "{message}"
    );
    assert!(
        stderr.contains(&format!(
            "left out: {left_out_hunk} of attempt 1: {unrelated}"
        )),
        "{stderr}"
    );
}

#[test]
fn a_part_that_does_not_fix_it_is_asked_again_with_the_limit_and_the_reason() {
    let fx = project();
    let server = model(vec![
        format!("{WRONG}{}", alternatives()),
        FIXED.to_string(),
    ]);
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(fx.repo.read(FILE), FIXED);
    let prompts: Vec<String> = server
        .requests()
        .iter()
        .map(prompt_of)
        .filter(|p| p.starts_with("Fix and improve"))
        .collect();
    assert_eq!(prompts.len(), 2, "asked again once");
    let again = &prompts[1];
    assert!(again.contains("Change at most 40 lines"), "the limit");
    assert!(
        again.contains(
            "rejected by the Reviewer: the change to is_valid_parenthesization.py has 63 \
             changed lines; the limit for a low-severity file is 40"
        ),
        "the reason:\n{again}"
    );
    assert!(
        again.contains("only its hunks the evidence points at were tried, without hunk 2 of 2"),
        "{again}"
    );
}
