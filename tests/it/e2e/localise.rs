//! Finding the bug with a model that is not perfect, end to end: a small
//! `ledger` package whose `__init__.py` re-exports `to_cents` and
//! `apply_discount` from `ledger/money.py` (the tests do `from ledger import
//! ...`, so no traceback names `money.py`), and a loopback model that reads
//! each prompt and answers the way real models do: after a vague or wrong
//! plan, with a fix that breaks another function, or one bug per reply.
//! Every run must end green with the fix on the user's branch.

use serde_json::Value;

use super::{summary_of, FAKE_KEY};
use crate::support::fixture::{prompt_of, read_log, swarm_in};
use crate::support::llm_server::{LlmServer, RecordedRequest, Reply};
use crate::support::repo::TestRepo;

const INIT: &str = "\"\"\"Ledger: money helpers and printable lines.\"\"\"\n\n\
from .report import total_line\n\
from .money import apply_discount, to_cents\n\n\
__all__ = [\"apply_discount\", \"to_cents\", \"total_line\"]\n";

const REPORT: &str = "\"\"\"Printable ledger lines.\"\"\"\n\n\
from .money import to_cents\n\n\n\
def total_line(label, amount):\n    \
    \"\"\"Return `label: N cents` for an amount in whole units.\"\"\"\n    \
    return f\"{label}: {to_cents(amount)} cents\"\n";

const CENTS_BUG: &str = "    return int(amount * 10)\n";
const CENTS_FIX: &str = "    return round(amount * 100)\n";
const DISCOUNT_BUG: &str = "    return price * percent / 100\n";
const DISCOUNT_FIX: &str = "    return price - price * percent / 100\n";
/// The fix that forgets its `return`: `apply_discount` gives `None`.
const DISCOUNT_NONE: &str = "    price - price * percent / 100\n";

fn money() -> String {
    format!(
        "\"\"\"Money arithmetic.\"\"\"\n\n\n\
         def to_cents(amount):\n    \"\"\"Return the amount in whole cents.\"\"\"\n{CENTS_BUG}\n\n\
         def apply_discount(price, percent):\n    \
         \"\"\"Return the price after a discount of `percent` percent.\"\"\"\n{DISCOUNT_BUG}"
    )
}

/// The tests; `half_price` adds one that passes before the fix (and fails
/// when `apply_discount` returns `None`).
fn tests(half_price: bool) -> String {
    let mut text = String::from(
        "\"\"\"Tests of the ledger package.\"\"\"\n\n\
         from ledger import apply_discount, to_cents, total_line\n\n\n\
         def test_to_cents():\n    assert to_cents(1.25) == 125\n\n\n\
         def test_to_cents_of_zero():\n    assert to_cents(0) == 0\n\n\n\
         def test_apply_discount():\n    assert apply_discount(200.0, 25) == 150.0\n\n\n\
         def test_total_line_of_nothing():\n    assert total_line(\"fee\", 0) == \"fee: 0 cents\"\n",
    );
    if half_price {
        text.push_str("\n\ndef test_half_price():\n    assert apply_discount(100.0, 50) == 50.0\n");
    }
    text
}

const PYPROJECT: &str = "[project]\nname = \"ledger\"\nversion = \"0.1.0\"\n\n\
[tool.pytest.ini_options]\npythonpath = [\".\"]\ntestpaths = [\"tests\"]\n";

fn ledger_repo(half_price: bool) -> TestRepo {
    TestRepo::with_files(&[
        ("pyproject.toml", PYPROJECT),
        ("ledger/__init__.py", INIT),
        ("ledger/report.py", REPORT),
        ("ledger/money.py", &money()),
        ("tests/test_ledger.py", &tests(half_price)),
    ])
}

/// A plan that names nothing useful.
const VAGUE_PLAN: &str = "# Refactoring plan\n\n## Summary\n\nSome tests fail. The package \
needs a closer look.\n";

/// A plan that blames the wrong file.
const WRONG_PLAN: &str = "# Refactoring plan\n\n## Summary\n\nThe printable lines are wrong.\n\n\
## ledger/report.py\n\n- **Type**: bug\n  **Severity**: high\n  **Location**: `total_line()`\n  \
**Description**: the total is computed wrongly.\n  **Suggested fix**: check the arithmetic.\n";

/// The file a fix prompt is about and its current text, when shown whole.
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

fn diff_reply(file: &str, before: &str, after: &str) -> String {
    let body = similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{file}"), &format!("b/{file}"))
        .to_string();
    format!("Fix {file}.\n\n```diff\n{body}```\n")
}

/// How the model behaves on `money.py`: the new text for the current one
/// and the prompt, `None` for "no change".
type MoneyEdit = fn(&str, &str) -> Option<String>;

/// A model answering plans with `plan`, `money.py` with `edit`, and every
/// other file with `NO CHANGE`.
fn model(plan: &'static str, edit: MoneyEdit) -> LlmServer {
    LlmServer::start(move |request: &RecordedRequest| {
        let prompt = prompt_of(request);
        if prompt.starts_with("Write a refactoring plan") {
            return Reply::text_for(request, plan);
        }
        let text = match asked(&prompt) {
            Some((file, current)) if file == "ledger/money.py" => match edit(&current, &prompt) {
                Some(new) if new != current => diff_reply(&file, &current, &new),
                _ => "NO CHANGE: the module looks right to me.".to_string(),
            },
            Some((file, _)) => format!("NO CHANGE: `{file}` looks right to me."),
            None => "NO CHANGE: I cannot see the file.".to_string(),
        };
        Reply::text_for(request, &text)
    })
}

/// Fixes both bugs at once.
fn fix_all(current: &str, _prompt: &str) -> Option<String> {
    Some(
        current
            .replace(CENTS_BUG, CENTS_FIX)
            .replace(DISCOUNT_BUG, DISCOUNT_FIX),
    )
}

/// Fixes the first bug still there, one per reply.
fn one_bug_per_reply(current: &str, _prompt: &str) -> Option<String> {
    if current.contains(CENTS_BUG) {
        Some(current.replace(CENTS_BUG, CENTS_FIX))
    } else {
        Some(current.replace(DISCOUNT_BUG, DISCOUNT_FIX))
    }
}

/// Fixes `to_cents` but drops `apply_discount`'s `return`, and sends that
/// same change again until a prompt names the test it broke; then fixes
/// what is left.
fn breaks_apply_discount(current: &str, prompt: &str) -> Option<String> {
    let told = prompt.contains("broke") && prompt.contains("test_half_price");
    if current.contains(CENTS_BUG) && !told {
        return Some(
            current
                .replace(CENTS_BUG, CENTS_FIX)
                .replace(DISCOUNT_BUG, DISCOUNT_NONE),
        );
    }
    Some(
        current
            .replace(CENTS_BUG, CENTS_FIX)
            .replace(DISCOUNT_BUG, DISCOUNT_FIX)
            .replace(DISCOUNT_NONE, DISCOUNT_FIX),
    )
}

/// Fixes `to_cents` and leaves `apply_discount` returning `None` (its
/// test failed before and still fails); fixes it when shown it again.
fn leaves_apply_discount_none(current: &str, _prompt: &str) -> Option<String> {
    if current.contains(CENTS_BUG) {
        return Some(
            current
                .replace(CENTS_BUG, CENTS_FIX)
                .replace(DISCOUNT_BUG, DISCOUNT_NONE),
        );
    }
    Some(current.replace(DISCOUNT_NONE, DISCOUNT_FIX))
}

fn run(repo: &TestRepo, server: &LlmServer) -> std::process::Output {
    let cwd = repo.tmp().join("cwd");
    std::fs::create_dir_all(&cwd).expect("cwd");
    let base = format!("{}/v1", server.base_url());
    let target = repo.root.to_string_lossy().into_owned();
    swarm_in(
        &cwd,
        &repo.home,
        &["--target_dir", &target, "--json", "--max-iterations", "6"],
        &[("OPENAI_API_KEY", FAKE_KEY), ("OPENAI_BASE_URL", &base)],
    )
}

/// The Fixer's model calls in the log, in order.
fn fixer_calls(repo: &TestRepo) -> Vec<Value> {
    read_log(&repo.tmp().join("cwd/logs/experiment_data.json"))
        .into_iter()
        .filter(|e| e["agent"] == "Fixer" && e["details"]["kind"] == "llm_call")
        .collect()
}

fn file_of(call: &Value) -> String {
    call["details"]["file"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The run ended green, `money.py` fixed on `main`, the tests untouched.
fn assert_green(repo: &TestRepo, out: &std::process::Output, start: &str, half_price: bool) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    assert_ne!(repo.head(), start, "HEAD did not move");
    assert!(repo.git(&["status", "--porcelain"]).is_empty());
    let fixed = repo.read("ledger/money.py");
    assert!(
        fixed.contains(CENTS_FIX) && fixed.contains(DISCOUNT_FIX),
        "{fixed}"
    );
    assert_eq!(repo.read("tests/test_ledger.py"), tests(half_price));
    assert_eq!(repo.read("ledger/__init__.py"), INIT);
}

/// `ledger/__init__.py` only passes names on: it is never the file asked
/// about, and `money.py` is asked about in the first round.
fn assert_localised(repo: &TestRepo) {
    let calls = fixer_calls(repo);
    let files: Vec<String> = calls.iter().map(file_of).collect();
    assert!(
        !files.iter().any(|f| f == "ledger/__init__.py"),
        "{files:?}"
    );
    let first = calls
        .iter()
        .find(|c| file_of(c) == "ledger/money.py")
        .expect("money.py was asked about");
    assert_eq!(first["details"]["iteration"], 1, "{files:?}");
}

#[test]
fn a_vague_plan_still_reaches_the_module_behind_the_package() {
    let repo = ledger_repo(true);
    let start = repo.head();
    let server = model(VAGUE_PLAN, fix_all);
    let out = run(&repo, &server);
    assert_green(&repo, &out, &start, true);
    assert_localised(&repo);
    // money.py's prompt shows, read-only, who calls what it is asked to change.
    let calls = fixer_calls(&repo);
    let prompt = calls[0]["details"]["input_prompt"].as_str().unwrap();
    assert!(
        prompt.contains("## Related code in other files"),
        "{prompt}"
    );
    assert!(
        prompt.contains("`ledger/report.py` lines 6-8: `total_line` (calls to_cents)"),
        "{prompt}"
    );
}

#[test]
fn a_plan_blaming_the_wrong_file_is_only_a_hint() {
    let repo = ledger_repo(true);
    let start = repo.head();
    let server = model(WRONG_PLAN, fix_all);
    let out = run(&repo, &server);
    assert_green(&repo, &out, &start, true);
    assert_localised(&repo);
}

#[test]
fn one_bug_per_reply_keeps_the_run_going_to_green() {
    let repo = ledger_repo(true);
    let start = repo.head();
    let server = model(VAGUE_PLAN, one_bug_per_reply);
    let out = run(&repo, &server);
    assert_green(&repo, &out, &start, true);
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["accepted"], 2, "{summary}");
}

#[test]
fn a_fix_that_breaks_a_passing_test_is_regressed_and_named_in_the_next_prompt() {
    let repo = ledger_repo(true);
    let start = repo.head();
    let server = model(VAGUE_PLAN, breaks_apply_discount);
    let out = run(&repo, &server);
    assert_green(&repo, &out, &start, true);
    // The breaking attempt is on its own branch, judged regressed, never on main.
    let log = repo.git(&[
        "log",
        "--all",
        "--format=%H %(trailers:key=Swarm-Verdict,valueonly)",
    ]);
    let regressed: Vec<&str> = log.lines().filter(|l| l.ends_with(" regressed")).collect();
    assert_eq!(regressed.len(), 1, "{log}");
    let commit = regressed[0].split(' ').next().unwrap();
    assert!(!repo.git_ok(&["merge-base", "--is-ancestor", commit, "HEAD"]));
    // The next prompt on money.py names the broken test, its traceback and
    // the lines that broke it.
    let calls = fixer_calls(&repo);
    let later = calls
        .iter()
        .filter(|c| file_of(c) == "ledger/money.py")
        .nth(1)
        .expect("money.py was asked again");
    let prompt = later["details"]["input_prompt"].as_str().unwrap();
    assert!(prompt.contains("test_half_price"), "{prompt}");
    assert!(prompt.contains("assert None == 50.0"), "{prompt}");
    assert!(prompt.contains(&format!("+{DISCOUNT_NONE}")), "{prompt}");
}

#[test]
fn a_fix_that_leaves_another_function_broken_brings_its_file_back() {
    let repo = ledger_repo(false);
    let start = repo.head();
    let server = model(VAGUE_PLAN, leaves_apply_discount_none);
    let out = run(&repo, &server);
    assert_green(&repo, &out, &start, false);
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["accepted"], 2, "{summary}");
}

#[test]
fn a_fix_spanning_two_files_is_one_multi_file_diff() {
    let repo = ledger_repo(true);
    let start = repo.head();
    let old_doc = "Return `label: N cents` for an amount in whole units.";
    let new_doc = "Return `label: N cents` for `amount` in whole units.";
    let server = LlmServer::start(move |request: &RecordedRequest| {
        let prompt = prompt_of(request);
        if prompt.starts_with("Write a refactoring plan") {
            return Reply::text_for(request, VAGUE_PLAN);
        }
        let text = match asked(&prompt) {
            Some((file, current)) if file == "ledger/money.py" => {
                let shows_report = prompt.contains("## Related code in other files")
                    && prompt.contains("`ledger/report.py`");
                let money = diff_reply(&file, &current, &fix_all(&current, &prompt).unwrap());
                if shows_report && current.contains(CENTS_BUG) {
                    let report = diff_reply(
                        "ledger/report.py",
                        REPORT,
                        &REPORT.replace(old_doc, new_doc),
                    );
                    format!("{money}\n{report}")
                } else {
                    money
                }
            }
            Some((file, _)) => format!("NO CHANGE: `{file}` looks right to me."),
            None => "NO CHANGE: I cannot see the file.".to_string(),
        };
        Reply::text_for(request, &text)
    });
    let out = run(&repo, &server);
    assert_green(&repo, &out, &start, true);
    // One accepted attempt changed both files.
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["accepted"], 1, "{summary}");
    let changed = repo.git(&["diff", "--name-only", &start, "HEAD"]);
    assert_eq!(changed, "ledger/money.py\nledger/report.py");
    assert!(repo.read("ledger/report.py").contains(new_doc));
}

/// Breaks `apply_discount` first; once told, fixes one bug per reply.
fn breaks_then_one_bug_per_reply(current: &str, prompt: &str) -> Option<String> {
    let told = prompt.contains("broke") && prompt.contains("test_half_price");
    if current.contains(CENTS_BUG) && !told {
        return breaks_apply_discount(current, prompt);
    }
    one_bug_per_reply(current, prompt)
}

#[test]
fn a_file_fruitless_for_two_rounds_rests_while_another_candidate_remains() {
    let repo = ledger_repo(true);
    let start = repo.head();
    // The plan blames report.py; the model's change to it is a comment,
    // judged the same (then refused as a repeat): never accepted.
    let server = LlmServer::start(move |request: &RecordedRequest| {
        let prompt = prompt_of(request);
        if prompt.starts_with("Write a refactoring plan") {
            return Reply::text_for(request, WRONG_PLAN);
        }
        let text = match asked(&prompt) {
            Some((file, current)) if file == "ledger/money.py" => {
                let new = breaks_then_one_bug_per_reply(&current, &prompt).unwrap();
                diff_reply(&file, &current, &new)
            }
            Some((file, current)) if file == "ledger/report.py" => {
                let new = current.replacen("\n\n\ndef", "\n\n\n# One printable line.\ndef", 1);
                diff_reply(&file, &current, &new)
            }
            Some((file, _)) => format!("NO CHANGE: `{file}` looks right to me."),
            None => "NO CHANGE: I cannot see the file.".to_string(),
        };
        Reply::text_for(request, &text)
    });
    let out = run(&repo, &server);
    assert_green(&repo, &out, &start, true);
    let calls = fixer_calls(&repo);
    let rounds_of = |file: &str| -> Vec<u64> {
        calls
            .iter()
            .filter(|c| file_of(c) == file)
            .map(|c| c["details"]["iteration"].as_u64().unwrap())
            .collect()
    };
    // money.py: broken (regressed), then one bug per round. report.py rests
    // in round 3 while money.py remains; once the tests pass, its plan item
    // is the only candidate and gets its last try.
    assert_eq!(rounds_of("ledger/money.py"), vec![1, 2, 3]);
    assert_eq!(rounds_of("ledger/report.py"), vec![1, 2, 4]);
    assert_eq!(repo.read("ledger/report.py"), REPORT);
}
