//! Untested code, end to end: a repository with no tests, where compiling
//! and importing is all the tests can say. The Judge's behaviour check runs
//! the best state's functions and the changed ones side by side; a change
//! that destroys what a function did is a regression, never delivered,
//! however well the file now compiles.

use serde_json::Value;

use super::{run_openai, summary_of};
use crate::support::fixture::{good_model, prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};
use crate::support::repo::TestRepo;

/// `stats.py` as committed: `mean()` works, `spread()` lacks its colon, so
/// the module does not compile.
const STATS: &str = "\"\"\"Small statistics.\"\"\"\n\n\n\
def mean(values):\n    \"\"\"The arithmetic mean of `values`.\"\"\"\n    total = 0\n    \
for value in values:\n        total += value\n    return total / len(values)\n\n\n\
def spread(values)\n    \"\"\"The largest value minus the smallest.\"\"\"\n    \
return max(values) - min(values)\n";

/// A module of the repository that calls `mean()` with literal arguments.
const REPORT: &str = "\"\"\"Prints a report.\"\"\"\nfrom stats import mean\n\n\n\
def main():\n    \"\"\"Prints the mean of three numbers.\"\"\"\n    print(mean([1, 2, 3]))\n";

const PLAN: &str = "# Refactoring plan\n\n## Summary\n\nOne module does not compile.\n\n\
## stats.py\n\n- **Type**: bug\n  **Severity**: high\n  **Location**: `spread()`, line 12\n  \
**Description**: `def spread(values)` lacks its colon.\n  **Suggested fix**: Add the colon.\n";

/// `STATS` with the syntax error fixed and `transform` applied.
fn fixed_stats(transform: impl Fn(&str) -> String) -> String {
    transform(&STATS.replace("def spread(values)\n", "def spread(values):\n"))
}

/// A no-tests repository holding `stats.py` and `report.py`.
fn untested_repo() -> FixtureRepo {
    let repo = TestRepo::with_files(&[("stats.py", STATS), ("report.py", REPORT)]);
    let target = repo.root.clone();
    FixtureRepo {
        name: "untested".into(),
        repo,
        target,
        target_rel: String::new(),
    }
}

/// A model that writes `PLAN`, then answers every fix request for
/// `stats.py` with `stats` as the whole file (and declines others).
fn model_writing(stats: String) -> LlmServer {
    LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        let text = if prompt.starts_with("Write a refactoring plan") {
            PLAN.to_string()
        } else if prompt.starts_with("Fix and improve `stats.py`") {
            format!("Fix the syntax error.\n\n```python\n{stats}```\n")
        } else {
            "This file looks fine as it is; no change is needed.".to_string()
        };
        Reply::text_for(req, &text)
    })
}

/// The Judge's log entries for attempts, with their behaviour check.
fn behaviour_checks(fx: &FixtureRepo) -> Vec<Value> {
    fx.log()
        .into_iter()
        .filter(|e| e["agent"] == "Judge" && !e["details"]["behaviour"].is_null())
        .map(|e| e["details"]["behaviour"].clone())
        .collect()
}

#[test]
fn a_fix_that_destroys_what_an_untested_function_returned_is_never_delivered() {
    let fx = untested_repo();
    let start = fx.repo.head();
    let before = fx.repo.snapshot();
    let broken = fixed_stats(|s| s.replace("return total / len(values)", "return None"));
    let server = model_writing(broken);
    let out = run_openai(
        &fx,
        &server,
        &["--max-iterations", "2", "--test-timeout", "20"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "stderr:\n{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "gave_up", "{summary}");
    assert_eq!(fx.repo.head(), start, "the user's branch moved");
    assert_eq!(fx.repo.snapshot(), before, "the user's files changed");
    assert!(fx
        .repo
        .read("stats.py")
        .contains("return total / len(values)"));

    // Every attempt was committed as a regression, none became the best
    // state: with nothing accepted, no run branch is kept.
    let run_id = summary["run_id"].as_str().expect("run id");
    assert_eq!(summary["accepted"], 0);
    let best = format!("swarm/{run_id}/best");
    assert!(
        !fx.repo.git_ok(&["rev-parse", "--verify", "-q", &best]),
        "an empty run branch was left behind"
    );
    let attempt = fx.repo.git(&[
        "log",
        "-1",
        "--format=%B",
        &format!("swarm/{run_id}/attempt-1"),
    ]);
    assert!(attempt.contains("Swarm-Verdict: regressed"), "{attempt}");

    // The log names the differing call, the literal call site among them.
    let checks = behaviour_checks(&fx);
    assert!(!checks.is_empty(), "no behaviour check in the log");
    let first = &checks[0];
    assert_eq!(first["outcome"], "regressed", "{first}");
    let differences = first["differences"].as_array().expect("differences");
    let call_site = differences
        .iter()
        .find(|d| d["call"] == "mean([1, 2, 3])")
        .unwrap_or_else(|| panic!("mean([1, 2, 3]) not among {differences:?}"));
    assert_eq!(call_site["before"], "2.0");
    assert_eq!(call_site["after"], "None");

    // A module that does not compile is tested against its reference, the
    // smallest repair that lets it parse (the colon the parser points at):
    // the Tester is shown that text. This model writes no tests.
    let tester_prompt = server
        .requests()
        .iter()
        .map(prompt_of)
        .find(|p| p.starts_with("Write pytest tests for `stats.py`"))
        .expect("the Tester is asked about the repaired module");
    assert!(
        tester_prompt.contains("def spread(values):\n"),
        "{tester_prompt}"
    );
    let tested = fx
        .log()
        .into_iter()
        .find(|e| e["details"]["tool"] == "tester")
        .expect("a Tester entry");
    let note = tested["details"]["generated_tests"]["note"]
        .as_str()
        .unwrap();
    assert!(
        note.contains("the reply holds no Python test file"),
        "{note}"
    );

    // The Fixer's next prompt shows it.
    let fix_prompts: Vec<String> = server
        .requests()
        .iter()
        .map(prompt_of)
        .filter(|p| p.starts_with("Fix and improve `stats.py`"))
        .collect();
    assert!(fix_prompts.len() >= 2, "{} fix prompts", fix_prompts.len());
    let last = fix_prompts.last().expect("a second prompt");
    assert!(
        last.contains("mean([1, 2, 3])") && last.contains("was 2.0, now None"),
        "{last}"
    );
}

#[test]
fn a_fix_that_keeps_what_untested_functions_return_is_delivered() {
    let fx = untested_repo();
    let start = fx.repo.head();
    // The syntax error fixed and mean() rewritten: the same results.
    let refactored = fixed_stats(|s| {
        s.replace(
            "    total = 0\n    for value in values:\n        total += value\n    return total / len(values)\n",
            "    return sum(values) / len(values)\n",
        )
    });
    let server = model_writing(refactored.clone());
    let out = run_openai(&fx, &server, &["--test-timeout", "20"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    assert_ne!(fx.repo.head(), start);
    assert_eq!(fx.repo.read("stats.py"), refactored);
    let checks = behaviour_checks(&fx);
    let first = checks.first().expect("a behaviour check in the log");
    assert_eq!(first["outcome"], "same", "{first}");
    assert!(
        first["calls"].as_u64().expect("calls") >= 3,
        "too few calls compared: {first}"
    );
    let summary = summary_of(&out.stdout);
    assert_eq!(
        summary["verification"]["stats.py"]["by"], "behaviour_check",
        "{summary}"
    );
    assert!(
        stderr.contains("verified: stats.py: behaviour check:"),
        "{stderr}"
    );
}

#[test]
fn the_summary_says_per_file_what_verified_the_change() {
    let fx = FixtureRepo::new("no_tests");
    let server = LlmServer::start(good_model("no_tests", &fx.target_rel));
    let out = run_openai(&fx, &server, &["--test-timeout", "5"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let summary = summary_of(&out.stdout);
    let verification = &summary["verification"];
    // The renamed helpers are compared with their old names' functions.
    assert_eq!(
        verification["helpers.py"]["by"], "behaviour_check",
        "{verification}"
    );
    assert_eq!(verification["helpers.py"]["functions"], 3, "{verification}");
    assert!(verification["helpers.py"]["calls"].as_u64().unwrap() >= 6);
    // The script module had no function to compare. The one function of
    // config_loader.py was the line that did not parse: it is compared
    // with the module's reference, the colon the parser pointed at.
    assert_eq!(
        verification["watcher.py"]["by"], "compiles_and_imports_only",
        "{verification}"
    );
    assert_eq!(
        verification["config_loader.py"]["by"], "behaviour_check",
        "{verification}"
    );
    assert_eq!(
        verification["config_loader.py"]["functions"], 1,
        "{verification}"
    );
    assert!(
        stderr.contains("verified: helpers.py: behaviour check:"),
        "{stderr}"
    );
    assert!(
        stderr.contains("verified: watcher.py: compiles and imports only"),
        "{stderr}"
    );
    // The log's run summary carries the same.
    let end = fx
        .log()
        .into_iter()
        .find(|e| e["details"]["kind"] == "run_end")
        .expect("a run_end entry");
    let logged: Value =
        serde_json::from_str(end["details"]["output_response"].as_str().unwrap()).unwrap();
    assert_eq!(&logged["verification"], verification);
}
