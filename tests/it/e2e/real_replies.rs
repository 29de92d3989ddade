//! Replies a real small model wrote (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M,
//! on llama.cpp), kept verbatim in `crates/patch/tests/real/`, served
//! through the loopback OpenAI-compatible server to the real binary on the
//! programs they were written for (`benches/real-model/fixtures/`), with
//! their pytest tests in a real git repository. Only the Fixer's replies
//! were recorded, so the held-out tests are not asked
//! (`--no-generate-tests`) and every Fixer request gets the recorded
//! replies in the order the model gave them, the last one again after.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::Value;

use super::{run_openai, summary_of};
use crate::support::fixture::{prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};
use crate::support::repo::TestRepo;

const GCD: &str = include_str!("../../../benches/real-model/fixtures/gcd/gcd.py");
const GCD_TESTS: &str = include_str!("../../../benches/real-model/fixtures/gcd/test_gcd.py");
const GCD_REPLY: &str = include_str!("../../../crates/patch/tests/real/gcd.reply.md");

const PARENS: &str =
    include_str!("../../../benches/real-model/fixtures/parens/is_valid_parenthesization.py");
const PARENS_TESTS: &str =
    include_str!("../../../benches/real-model/fixtures/parens/test_is_valid_parenthesization.py");
const PARENS_REPLIES: [&str; 2] = [
    include_str!("../../../crates/patch/tests/real/parens-1.reply.md"),
    include_str!("../../../crates/patch/tests/real/parens-2.reply.md"),
];

/// The model's first answer for `is_valid_parenthesization.py`, and its
/// whole file once told that the failing test contradicts it (the fix:
/// `return depth == 0`).
const PARENS_NO_CHANGE: &str =
    include_str!("../../../crates/patch/tests/real/parens-no-change.reply.md");
const PARENS_WHOLE: &str = include_str!("../../../crates/patch/tests/real/parens-whole.reply.md");

const TO_BASE: &str = include_str!("../../../benches/real-model/fixtures/to_base/to_base.py");
const TO_BASE_TESTS: &str =
    include_str!("../../../benches/real-model/fixtures/to_base/test_to_base.py");
/// `to_base.py` sent back whole as it was, then (asked for a diff) a hunk
/// rewriting `def to_base(num, b):` as itself.
const TO_BASE_COPY: &str = include_str!("../../../crates/patch/tests/real/to_base-copy.reply.md");
const TO_BASE_NOOP: &str =
    include_str!("../../../crates/patch/tests/real/to_base-noop-diff.reply.md");

fn repo(name: &str, files: &[(&str, &str)]) -> FixtureRepo {
    let repo = TestRepo::with_files(files);
    let target = repo.root.clone();
    FixtureRepo {
        name: name.into(),
        repo,
        target,
        target_rel: String::new(),
    }
}

/// Serves `replies` in order to the Fixer's requests (the last again once
/// they are used up); a plan, were one asked, is a line.
fn replaying(replies: &'static [&'static str]) -> LlmServer {
    let next = Arc::new(AtomicUsize::new(0));
    LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        let text = if prompt.starts_with("Write a refactoring plan") {
            "# Refactoring plan\n".to_string()
        } else {
            let i = next.fetch_add(1, Ordering::SeqCst);
            replies[i.min(replies.len() - 1)].to_string()
        };
        Reply::text_for(req, &text)
    })
}

fn run(fx: &FixtureRepo, server: &LlmServer) -> (std::process::Output, Value, String) {
    let out = run_openai(
        fx,
        server,
        &[
            "--max-iterations",
            "2",
            "--test-timeout",
            "30",
            "--no-generate-tests",
        ],
    );
    let summary = summary_of(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, summary, stderr)
}

/// The `reply_form` of each Fixer call in the log.
fn reply_forms(fx: &FixtureRepo) -> Vec<String> {
    fx.log()
        .iter()
        .filter(|e| e["agent"] == "Fixer" && e["details"]["kind"] == "llm_call")
        .map(|e| {
            e["details"]["reply_form"]
                .as_str()
                .unwrap_or("none")
                .to_string()
        })
        .collect()
}

/// The summary's `replies`: the reasons not used, and what would help.
fn unusable(summary: &Value) -> Vec<String> {
    summary["replies"]["unusable"]
        .as_array()
        .expect("replies.unusable")
        .iter()
        .map(|u| u.as_str().expect("a line").to_string())
        .collect()
}

#[test]
fn the_real_gcd_reply_changes_nothing_and_the_summary_says_why_and_what_would_help() {
    // The model's diff invents a docstring and rewrites `if b == 0:` as
    // itself: read as meant, it changes nothing, each time it is asked.
    static REPLIES: [&str; 1] = [GCD_REPLY];
    let fx = repo("real-gcd", &[("gcd.py", GCD), ("test_gcd.py", GCD_TESTS)]);
    let start = fx.repo.head();
    let server = replaying(&REPLIES);
    let (out, summary, stderr) = run(&fx, &server);
    assert_eq!(out.status.code(), Some(4), "{summary}\n{stderr}");
    assert_eq!(summary["status"], "gave_up", "{summary}");
    assert_eq!(fx.repo.head(), start, "the user's branch moved");
    assert_eq!(fx.repo.read("gcd.py"), GCD);
    assert_eq!(summary["attempts"], 0, "nothing to commit: {summary}");
    // Both replies were diffs, both are named as not used, and why.
    assert_eq!(reply_forms(&fx), ["diff", "diff"]);
    assert_eq!(summary["replies"]["diff"], 2, "{summary}");
    assert_eq!(
        unusable(&summary),
        ["gcd.py: the change leaves every file exactly as it is"; 2],
        "{summary}"
    );
    let help = summary["replies"]["would_help"]
        .as_str()
        .expect("would_help");
    assert!(help.contains("a larger model"), "{help}");
    assert!(
        stderr.contains("2 diff, 0 whole file; 2 could not be used")
            && stderr.contains("not used: gcd.py: the change leaves every file exactly as it is")
            && stderr.contains("would help"),
        "{stderr}"
    );
    // No plan was asked of the model for this one-module program.
    for request in server.requests() {
        assert!(!prompt_of(&request).starts_with("Write a refactoring plan"));
    }
}

#[test]
fn the_real_parens_replies_are_applied_where_they_can_be_and_judged() {
    // The first reply's hunks hold an invented docstring and code from the
    // model's own plan: nothing of it applies, and the summary says so.
    // The second adds an early `return True` below an invented docstring:
    // applied once, where it was written, and judged — no better.
    let fx = repo(
        "real-parens",
        &[
            ("is_valid_parenthesization.py", PARENS),
            ("test_is_valid_parenthesization.py", PARENS_TESTS),
        ],
    );
    let start = fx.repo.head();
    let server = replaying(&PARENS_REPLIES);
    let (out, summary, stderr) = run(&fx, &server);
    assert_eq!(out.status.code(), Some(4), "{summary}\n{stderr}");
    assert_eq!(summary["status"], "gave_up", "{summary}");
    assert_eq!(fx.repo.head(), start, "the user's branch moved");
    assert_eq!(fx.repo.read("is_valid_parenthesization.py"), PARENS);
    assert_eq!(reply_forms(&fx), ["diff", "diff"]);
    let unusable = unusable(&summary);
    assert_eq!(unusable.len(), 1, "{summary}");
    assert!(
        unusable[0].starts_with("is_valid_parenthesization.py: the patch was not applied")
            && unusable[0].contains("hunk 1 of 3"),
        "{unusable:?}"
    );
    assert!(summary["replies"]["would_help"].is_string(), "{summary}");
    // The second reply's change is on record as attempt 1, judged `same`.
    assert_eq!(summary["attempts"], 1, "{summary}");
    assert_eq!(summary["tests_after"]["passed"], 2, "{summary}");
    let run_id = summary["run_id"].as_str().expect("run id");
    let attempt = format!("swarm/{run_id}/attempt-1");
    let message = fx.repo.git(&["log", "-1", "--format=%B", &attempt]);
    assert!(message.contains("Swarm-Verdict: same"), "{message}");
    let changed = fx
        .repo
        .git(&["show", &format!("{attempt}:is_valid_parenthesization.py")]);
    assert!(
        changed.starts_with(
            "def is_valid_parenthesization(parens):\n    if parens.endswith(')'):\n        return True\n    depth = 0\n"
        ),
        "{changed}"
    );
    assert_eq!(changed.matches("endswith").count(), 1, "{changed}");
}

#[test]
fn a_no_change_for_the_module_the_tests_fail_in_is_pushed_back_and_the_real_fix_delivered() {
    // The model said `NO CHANGE` of the module its failing test calls; the
    // run took it as an answer and ended after one Fixer request (exit 4).
    // Pushed back, the model's next reply is the fix.
    static REPLIES: [&str; 2] = [PARENS_NO_CHANGE, PARENS_WHOLE];
    let fx = repo(
        "real-parens-no-change",
        &[
            ("is_valid_parenthesization.py", PARENS),
            ("test_is_valid_parenthesization.py", PARENS_TESTS),
        ],
    );
    let server = replaying(&REPLIES);
    let (out, summary, stderr) = run(&fx, &server);
    assert_eq!(out.status.code(), Some(0), "{summary}\n{stderr}");
    assert_eq!(summary["tests_after"]["passed"], 3, "{summary}");
    assert!(
        fx.repo
            .read("is_valid_parenthesization.py")
            .contains("return depth == 0"),
        "the fix is on the user's checkout"
    );
    let unusable = unusable(&summary);
    assert_eq!(unusable.len(), 1, "{summary}");
    assert!(
        unusable[0].starts_with(
            "is_valid_parenthesization.py: the reply said NO CHANGE, but test_unclosed"
        ),
        "{unusable:?}"
    );
    // The second request says why the first answer was not taken.
    let fixes: Vec<String> = server
        .requests()
        .iter()
        .map(prompt_of)
        .filter(|p| p.starts_with("Fix and improve"))
        .collect();
    assert_eq!(fixes.len(), 2, "{fixes:?}");
    assert!(
        fixes[1].contains("NO CHANGE is no answer while they fail"),
        "{}",
        fixes[1]
    );
}

#[test]
fn a_whole_file_sent_back_unchanged_is_asked_for_as_a_diff_and_the_summary_says_so() {
    // The model sent `to_base.py` back as it was; asked at once for a diff
    // naming the test that still fails, it sent the copy again, and then
    // (asked for a diff in the next round) rewrote a line as itself.
    static REPLIES: [&str; 3] = [TO_BASE_COPY, TO_BASE_COPY, TO_BASE_NOOP];
    let fx = repo(
        "real-to-base-copy",
        &[("to_base.py", TO_BASE), ("test_to_base.py", TO_BASE_TESTS)],
    );
    let start = fx.repo.head();
    let server = replaying(&REPLIES);
    let (out, summary, stderr) = run(&fx, &server);
    assert_eq!(out.status.code(), Some(4), "{summary}\n{stderr}");
    assert_eq!(fx.repo.head(), start, "the user's branch moved");
    assert_eq!(fx.repo.read("to_base.py"), TO_BASE);
    let requests = server.requests();
    let asked_again = requests
        .iter()
        .find_map(|r| {
            let body = r.body_json();
            let last = body["messages"].as_array()?.last()?["content"]
                .as_str()?
                .to_string();
            last.starts_with("That is `to_base.py` exactly as it is")
                .then_some(last)
        })
        .expect("the copy is asked again");
    assert!(
        asked_again.contains("`test_binary` still fails") && asked_again.contains("```diff block"),
        "{asked_again}"
    );
    // Every reply is named as not used, and the next round asks for a
    // diff rather than the whole file the model copied twice.
    let unusable = unusable(&summary);
    assert!(!unusable.is_empty(), "{summary}");
    assert!(
        unusable.iter().all(|u| u.contains("exactly as it is")),
        "{unusable:?}"
    );
    // (A re-ask repeats the first request's messages: only first asks.)
    let later: Vec<String> = requests
        .iter()
        .filter(|r| {
            r.body_json()["messages"]
                .as_array()
                .is_some_and(|m| m.len() <= 2)
        })
        .map(prompt_of)
        .filter(|p| p.starts_with("Fix and improve"))
        .skip(1)
        .collect();
    assert!(!later.is_empty());
    for prompt in &later {
        assert!(prompt.contains("Reply with one unified diff"), "{prompt}");
    }
}
