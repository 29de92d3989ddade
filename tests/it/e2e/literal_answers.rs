//! A fix that answers the failing tests' inputs with literals, as a small
//! model writes it, when the model's held-out tests only repeat the
//! visible inputs (so none holds to guard the fix): the run does not call
//! it verified, does not deliver it, and says so for the file.

use super::{run_openai, summary_of};
use crate::support::fixture::{prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};
use crate::support::repo::TestRepo;

/// QuixBugs' gcd with its bug: the recursion never shrinks `b`.
const GCD: &str =
    "def gcd(a, b):\n    if b == 0:\n        return a\n    else:\n        return gcd(a % b, b)\n";

const TESTS: &str = "from gcd import gcd\n\n\n\
def test_zero():\n    assert gcd(17, 0) == 17\n\n\n\
def test_common_factor():\n    assert gcd(35, 21) == 7\n\n\n\
def test_larger():\n    assert gcd(300, 42) == 6\n";

/// The small model's fix: the tests' inputs and their answers.
const HARD_CODED: &str = "def gcd(a, b):\n    if a == 35 and b == 21:\n        return 7\n    \
if a == 300 and b == 42:\n        return 6\n    if b == 0:\n        return a\n    else:\n        \
return gcd(a % b, b)\n";

/// The model's held-out tests: the visible inputs again, so none is kept.
const HELD_OUT: &str = "from gcd import gcd\n\n\n\
def test_gcd():\n    assert gcd(35, 21) == 7\n    assert gcd(300, 42) == 6\n";

fn repo() -> FixtureRepo {
    let repo = TestRepo::with_files(&[("gcd.py", GCD), ("test_gcd.py", TESTS)]);
    let target = repo.root.clone();
    FixtureRepo {
        name: "literal-answers".into(),
        repo,
        target,
        target_rel: String::new(),
    }
}

fn model() -> LlmServer {
    LlmServer::start(|req| {
        let prompt = prompt_of(req);
        let text = if prompt.starts_with("Write held-out pytest tests") {
            format!("Here are the tests:\n\n```python\n{HELD_OUT}```\n")
        } else if prompt.starts_with("Fix and improve `gcd.py`") {
            format!("Here is the fixed code:\n\n```python\n{HARD_CODED}```\n")
        } else if prompt.starts_with("Write a refactoring plan") {
            "# Refactoring plan\n\n## gcd.py\n\n- Fix the recursion of `gcd()`.\n".to_string()
        } else {
            "The code looks correct.".to_string()
        };
        Reply::text_for(req, &text)
    })
}

#[test]
fn literal_answers_for_the_tests_inputs_are_not_called_verified_nor_delivered() {
    let fx = repo();
    let start = fx.repo.head();
    let server = model();
    let out = run_openai(
        &fx,
        &server,
        &["--max-iterations", "1", "--test-timeout", "30"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = summary_of(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{summary}\nstderr:\n{stderr}");
    assert_eq!(summary["status"], "gave_up", "{summary}");
    assert_eq!(summary["accepted"], 0, "{summary}");
    assert_eq!(fx.repo.head(), start, "the user's branch moved");
    assert_eq!(fx.repo.read("gcd.py"), GCD);
    // Nothing calls the file verified; the summary says what the fix did.
    assert!(summary["verification"].get("gcd.py").is_none(), "{summary}");
    let hard_coded = summary["hard_coded"].as_array().expect("hard_coded");
    assert_eq!(hard_coded.len(), 1, "{summary}");
    assert_eq!(hard_coded[0]["file"], "gcd.py");
    assert_eq!(hard_coded[0]["attempt"], 1);
    let calls: Vec<&str> = hard_coded[0]["answers"]
        .as_array()
        .expect("answers")
        .iter()
        .map(|a| a["call"].as_str().expect("call"))
        .collect();
    assert_eq!(calls, ["gcd(35, 21)", "gcd(300, 42)"], "{summary}");
    assert!(
        stderr.contains("gcd.py hard-codes the tests' inputs")
            && stderr.contains("gcd(35, 21) → 7")
            && stderr.contains("not verified"),
        "{stderr}"
    );
    // The attempt is on record, judged as no fix.
    let run_id = summary["run_id"].as_str().expect("run id");
    let message = fx.repo.git(&[
        "log",
        "-1",
        "--format=%B",
        &format!("swarm/{run_id}/attempt-1"),
    ]);
    assert!(message.contains("Swarm-Verdict: regressed"), "{message}");
    // And the log's Judge entry names the answers.
    let judged = fx
        .log()
        .into_iter()
        .find(|e| e["agent"] == "Judge" && e["details"]["tool"] == "literal_answers")
        .expect("the Judge's literal-answers entry");
    assert_eq!(judged["details"]["attempt"], 1, "{judged}");
    assert_eq!(judged["details"]["file"], "gcd.py", "{judged}");
}
