//! Replies that are half right, end to end, on a small package like the
//! issue's (`ledger/__init__.py` re-exports `to_cents` and `apply_discount`
//! from `ledger/money.py`; the tests do `from ledger import ...`; two bugs):
//!
//! - a reply written against the version of `money.py` the model was shown
//!   in an earlier round (the original), after an earlier best state
//!   changed the file: it is rebased onto the current text by a three-way
//!   merge, and a reply that conflicts is refused with the lines named;
//! - an oversized first reply (both fixes plus a reformat of unrelated
//!   functions, past the Reviewer's size limit): it is split into
//!   reviewer-sized steps, each judged and committed on its own.
//!
//! The loopback model answers by reading the prompt: which file is asked
//! about and what its current text is.

use serde_json::Value;

use super::{run_openai, summary_of};
use crate::support::fixture::{prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, RecordedRequest, Reply};
use crate::support::repo::TestRepo;

const INIT: &str = "\"\"\"A tiny ledger: amounts in cents and discounts.\"\"\"\n\
from .money import apply_discount, to_cents\n\n__all__ = [\"apply_discount\", \"to_cents\"]\n";

/// `money.py` with its two bugs: ten cents to the euro, and the discount
/// returned instead of the reduced price.
const MONEY: &str = r#""""Money helpers."""


def to_cents(amount):
    """Convert an amount in euros to whole cents."""
    return round(amount * 10)


def apply_discount(price, percent):
    """Return the price after taking `percent` per cent off."""
    return price * percent / 100
"#;

const TESTS: &str = r#"from ledger import apply_discount, to_cents


def test_zero_euros_are_zero_cents():
    assert to_cents(0) == 0


def test_to_cents_counts_a_hundred_cents_per_euro():
    assert to_cents(12.34) == 1234


def test_apply_discount_returns_the_reduced_price():
    assert apply_discount(200.0, 25) == 150.0


def test_no_discount_keeps_the_price():
    assert apply_discount(80.0, 0) == 80.0
"#;

const PLAN: &str = "# Refactoring plan\n\n## Summary\n\n`ledger` converts euros to cents and \
applies discounts. Two functions of `ledger/money.py` are wrong.\n\n## ledger/money.py\n\n\
- **Type**: bug\n  **Severity**: high\n  **Location**: `to_cents()`, line 6\n  \
**Description**: counts ten cents to the euro.\n  **Suggested fix**: multiply by 100.\n\n\
- **Type**: bug\n  **Severity**: high\n  **Location**: `apply_discount()`, line 11\n  \
**Description**: returns the discount, not the reduced price.\n  **Suggested fix**: \
`price * (100 - percent) / 100`.\n";

const BUG_CENTS: &str = "return round(amount * 10)";
const FIX_CENTS: &str = "return round(amount * 100)";
const BUG_DISCOUNT: &str = "return price * percent / 100";
const FIX_DISCOUNT: &str = "return price * (100 - percent) / 100";

/// The ledger package committed in a fresh repository (`extra` files too).
fn ledger_repo(money: &str, extra: &[(&str, &str)]) -> FixtureRepo {
    let mut files = vec![
        ("ledger/__init__.py", INIT),
        ("ledger/money.py", money),
        ("tests/test_ledger.py", TESTS),
    ];
    files.extend_from_slice(extra);
    let repo = TestRepo::with_files(&files);
    let target = repo.root.clone();
    FixtureRepo {
        name: "ledger".into(),
        repo,
        target,
        target_rel: String::new(),
    }
}

/// A fenced unified diff of `path` from `before` to `after` with `radius`
/// lines of context.
fn diff(path: &str, before: &str, after: &str, radius: usize) -> String {
    let body = similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(radius)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    format!("```diff\n{body}```\n")
}

/// The file a fix prompt asks about and its current text, as shown.
fn asked(prompt: &str) -> Option<(String, String)> {
    let rest = prompt.strip_prefix("Fix and improve `")?;
    let file = rest[..rest.find('`')?].to_string();
    let marker = format!("## Current text of `{file}`\n```python\n");
    let start = prompt.rfind(&marker)? + marker.len();
    let end = prompt[start..]
        .find("\n```\n")
        .map_or(prompt.len(), |i| start + i);
    Some((file, format!("{}\n", &prompt[start..end])))
}

/// A model that writes [`PLAN`] and answers fix prompts about
/// `ledger/money.py` with `fix(current text, whole prompt)`; every other
/// file needs no change.
fn ledger_model(fix: impl Fn(&str, &str) -> String + Send + Sync + 'static) -> LlmServer {
    LlmServer::start(move |req: &RecordedRequest| {
        let prompt = prompt_of(req);
        let text = if prompt.starts_with("Write a refactoring plan") {
            PLAN.to_string()
        } else {
            match asked(&prompt) {
                Some((file, current)) if file == "ledger/money.py" => fix(&current, &prompt),
                Some((file, _)) => format!("`{file}` looks fine as it is; no change is needed."),
                None => "I do not understand the request.".to_string(),
            }
        };
        Reply::text_for(req, &text)
    })
}

/// The fix prompts the model received about `ledger/money.py`.
fn money_prompts(server: &LlmServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(prompt_of)
        .filter(|p| p.starts_with("Fix and improve `ledger/money.py`"))
        .collect()
}

/// The log's Reviewer entries.
fn reviews(log: &[Value]) -> Vec<&Value> {
    log.iter().filter(|e| e["agent"] == "Reviewer").collect()
}

/// Commit messages of the run branch from the start, oldest first.
fn run_commits(fx: &FixtureRepo, start: &str, branch: &str) -> Vec<String> {
    let range = format!("{start}..{branch}");
    let hashes = fx.repo.git(&["rev-list", "--reverse", &range]);
    hashes
        .lines()
        .map(|h| fx.repo.git(&["log", "-1", "--format=%B", h]))
        .collect()
}

/// A trailer's value in a commit message.
fn trailer<'a>(message: &'a str, key: &str) -> Option<&'a str> {
    message
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(": "))
}

/// What must hold after a run that fixes the ledger: exit 0, every test
/// passing, the user's branch fast-forwarded to the run branch, `money.py`
/// as `expected`. Returns the summary.
fn assert_green(
    fx: &FixtureRepo,
    out: &std::process::Output,
    start: &str,
    expected: &str,
) -> Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    assert_eq!(summary["tests_after"]["passed"], 4, "{summary}");
    assert_eq!(summary["tests_after"]["total"], 4, "{summary}");
    let branch = summary["branch"].as_str().expect("branch").to_string();
    assert_eq!(fx.repo.head(), fx.repo.git(&["rev-parse", &branch]));
    assert_ne!(fx.repo.head(), start);
    assert_eq!(fx.repo.read("ledger/money.py"), expected);
    assert_eq!(fx.repo.read("tests/test_ledger.py"), TESTS);
    summary
}

#[test]
fn a_reply_against_the_original_is_merged_onto_the_improved_file() {
    let fx = ledger_repo(MONEY, &[]);
    let start = fx.repo.head();
    // The reply to the second prompt remembers the original: one hunk from
    // the module docstring down to `apply_discount`, whose unchanged lines
    // include `to_cents` as it was before the first attempt fixed it.
    let stale = MONEY
        .replace(
            "\"\"\"Money helpers.\"\"\"",
            "\"\"\"Money helpers for the ledger.\"\"\"",
        )
        .replace(BUG_DISCOUNT, FIX_DISCOUNT);
    let server = ledger_model(move |current, _| {
        if current.contains(BUG_CENTS) {
            let fixed = current.replace(BUG_CENTS, FIX_CENTS);
            format!(
                "Count a hundred cents to the euro.\n\n{}",
                diff("ledger/money.py", current, &fixed, 3)
            )
        } else if current.contains(BUG_DISCOUNT) {
            format!(
                "Return the reduced price.\n\n{}",
                diff("ledger/money.py", MONEY, &stale, 10)
            )
        } else {
            "`ledger/money.py` is fixed; no change is needed.".to_string()
        }
    });
    let out = run_openai(&fx, &server, &["--max-iterations", "4"]);
    let expected = MONEY
        .replace(
            "\"\"\"Money helpers.\"\"\"",
            "\"\"\"Money helpers for the ledger.\"\"\"",
        )
        .replace(BUG_CENTS, FIX_CENTS)
        .replace(BUG_DISCOUNT, FIX_DISCOUNT);
    let summary = assert_green(&fx, &out, &start, &expected);
    assert_eq!(summary["iterations"], 2, "{summary}");
    assert_eq!(money_prompts(&server).len(), 2);

    // The merge is on record: the Reviewer's entry and the commit's trailer.
    let log = fx.log();
    let merged: Vec<&Value> = reviews(&log)
        .into_iter()
        .filter(|e| e["details"]["rebased"].is_array())
        .collect();
    assert_eq!(merged.len(), 1, "{:#?}", reviews(&log));
    let rebased = &merged[0]["details"]["rebased"][0];
    assert_eq!(rebased["file"], "ledger/money.py", "{rebased}");
    assert_eq!(rebased["shown_in_round"], 1, "{rebased}");
    assert_eq!(merged[0]["details"]["verdict"], "accepted");
    let branch = summary["branch"].as_str().expect("branch");
    let commits = run_commits(&fx, &start, branch);
    assert_eq!(commits.len(), 2, "{commits:#?}");
    assert_eq!(trailer(&commits[0], "Swarm-Rebased"), None);
    let rebased = trailer(&commits[1], "Swarm-Rebased").expect("a Swarm-Rebased trailer");
    assert!(rebased.contains("ledger/money.py"), "{rebased}");
    assert!(rebased.contains("round 1"), "{rebased}");
}

#[test]
fn a_reply_against_the_original_that_conflicts_is_refused_with_the_lines_named() {
    let fx = ledger_repo(MONEY, &[]);
    let start = fx.repo.head();
    // The second reply also rewrites `to_cents`' return, which the first
    // attempt changed: a conflict. The third reply, shown the conflict,
    // answers against the current text.
    let conflicting = MONEY
        .replace(BUG_CENTS, "return int(amount * 100)")
        .replace(BUG_DISCOUNT, FIX_DISCOUNT);
    let server = ledger_model(move |current, prompt| {
        if current.contains(BUG_CENTS) {
            let fixed = current.replace(BUG_CENTS, FIX_CENTS);
            format!(
                "Count cents.\n\n{}",
                diff("ledger/money.py", current, &fixed, 3)
            )
        } else if current.contains(BUG_DISCOUNT) && !prompt.contains("conflicts with") {
            format!(
                "Return the reduced price.\n\n{}",
                diff("ledger/money.py", MONEY, &conflicting, 10)
            )
        } else if current.contains(BUG_DISCOUNT) {
            let fixed = current.replace(BUG_DISCOUNT, FIX_DISCOUNT);
            format!(
                "Return the reduced price.\n\n{}",
                diff("ledger/money.py", current, &fixed, 3)
            )
        } else {
            "`ledger/money.py` is fixed; no change is needed.".to_string()
        }
    });
    let out = run_openai(&fx, &server, &["--max-iterations", "4"]);
    let expected = MONEY
        .replace(BUG_CENTS, FIX_CENTS)
        .replace(BUG_DISCOUNT, FIX_DISCOUNT);
    let summary = assert_green(&fx, &out, &start, &expected);
    assert_eq!(summary["iterations"], 3, "{summary}");
    let log = fx.log();
    let conflicts: Vec<&Value> = reviews(&log)
        .into_iter()
        .filter(|e| e["details"]["rule"] == "merge_conflict")
        .collect();
    assert_eq!(conflicts.len(), 1, "{:#?}", reviews(&log));
    let output = conflicts[0]["details"]["output_response"]
        .as_str()
        .expect("output");
    assert!(output.contains("ledger/money.py"), "{output}");
    assert!(output.contains("line 6"), "{output}");
    assert!(output.contains(FIX_CENTS), "{output}");
    assert!(output.contains("return int(amount * 100)"), "{output}");
    // The third prompt told the model why.
    let prompts = money_prompts(&server);
    assert_eq!(prompts.len(), 3);
    assert!(prompts[2].contains("conflicts with"), "{}", prompts[2]);
}

/// Unrelated helpers with no docstrings, written long-hand: what the
/// oversized reply reformats.
const HELPERS: &[&str] = &[
    "add", "subtract", "double", "halve", "negate", "triple", "square", "quarter",
];

fn helper(name: &str, index: usize) -> String {
    format!(
        "\n\ndef {name}_amount(amount):\n    result = amount\n    result = result + {index}\n    \
         result = result - {index}\n    return result\n"
    )
}

fn tidy_helper(name: &str, _index: usize) -> String {
    format!(
        "\n\ndef {name}_amount(amount):\n    \"\"\"Return `amount` unchanged ({name}).\"\"\"\n    \
         return amount\n"
    )
}

#[test]
fn an_oversized_first_reply_is_split_into_steps_that_each_pass_review() {
    let mut money = MONEY.to_string();
    let mut tidy = MONEY
        .replace(BUG_CENTS, FIX_CENTS)
        .replace(BUG_DISCOUNT, FIX_DISCOUNT);
    for (i, name) in HELPERS.iter().enumerate() {
        money.push_str(&helper(name, i + 1));
        tidy.push_str(&tidy_helper(name, i + 1));
    }
    // A limit of 12 changed lines per file, whatever its severity.
    let limits = "[size-limits]\nlow = 12\nmedium = 12\nhigh = 12\n";
    let fx = ledger_repo(&money, &[(".swarm.toml", limits)]);
    let start = fx.repo.head();
    let whole = tidy.clone();
    let server = ledger_model(move |current, _| {
        if current.contains(BUG_CENTS) {
            format!(
                "Fix both bugs and tidy the helpers.\n\n{}",
                diff("ledger/money.py", current, &whole, 1)
            )
        } else {
            "`ledger/money.py` is fixed; no change is needed.".to_string()
        }
    });
    let out = run_openai(&fx, &server, &["--max-iterations", "3"]);
    let summary = assert_green(&fx, &out, &start, &tidy);
    // One reply, never asked again: the split did the rest.
    assert_eq!(money_prompts(&server).len(), 1);
    assert_eq!(summary["iterations"], 1, "{summary}");

    // The reply as a whole was too big; its steps were not.
    let log = fx.log();
    let reviews = reviews(&log);
    let too_big = reviews
        .iter()
        .find(|e| e["details"]["rule"] == "too_many_lines")
        .expect("the whole reply was refused by the size rule");
    let steps = too_big["details"]["split_into"]
        .as_u64()
        .expect("split_into");
    assert!(steps >= 3, "{too_big}");
    let accepted = reviews
        .iter()
        .filter(|e| e["details"]["verdict"] == "accepted")
        .count();
    assert_eq!(accepted as u64, steps);

    // `git log` shows the steps, each its own commit with trailers, each
    // within the limit, each an improvement.
    let branch = summary["branch"].as_str().expect("branch");
    let commits = run_commits(&fx, &start, branch);
    assert_eq!(commits.len() as u64, steps, "{commits:#?}");
    for (k, message) in commits.iter().enumerate() {
        assert_eq!(
            trailer(message, "Swarm-Step"),
            Some(format!("{} of {steps}", k + 1).as_str()),
            "{message}"
        );
        let lines: usize = trailer(message, "Swarm-Changed-Lines")
            .expect("changed lines")
            .parse()
            .expect("a number");
        assert!(lines <= 12, "{message}");
        let verdict = trailer(message, "Swarm-Verdict").expect("verdict");
        assert!(["improved", "green"].contains(&verdict), "{message}");
    }
}
