//! The Tester, end to end: on a repository with no tests, the model is
//! asked (CODE_GEN) for pytest tests of the module the plan touches before
//! the Fixer changes it; every generated test goes through the validation
//! chain, the ones that hold are committed in their own attempt commit
//! with a `Swarm-Generated-Tests` trailer and judge the Fixer's attempts,
//! and the user receives them with the fix.

use std::process::Command;

use serde_json::Value;

use super::{assert_log_valid, run_openai, summary_of};
use crate::support::fixture::{prompt_of, swarm_in, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};
use crate::support::repo::TestRepo;

/// `stats.py` as committed: it works, but `spread()` keeps an unused
/// variable and `mean()` sums by hand.
const STATS: &str = "\"\"\"Small statistics.\"\"\"\n\n\n\
def mean(values):\n    \"\"\"The arithmetic mean of `values`.\"\"\"\n    total = 0\n    \
for value in values:\n        total += value\n    return total / len(values)\n\n\n\
def spread(values):\n    \"\"\"The largest value minus the smallest.\"\"\"\n    unused = 0\n    \
return max(values) - min(values)\n";

/// A module of the repository that calls `mean()`.
const REPORT: &str = "\"\"\"Prints a report.\"\"\"\nfrom stats import mean\n\n\n\
def main():\n    \"\"\"Prints the mean of three numbers.\"\"\"\n    print(mean([1, 2, 3]))\n";

const PLAN: &str = "# Refactoring plan\n\n## Summary\n\nOne module needs tidying.\n\n\
## stats.py\n\n- **Type**: style\n  **Severity**: low\n  **Location**: `spread()`, line 15\n  \
**Description**: `unused` is never used; `mean()` sums by hand.\n  \
**Suggested fix**: Drop the variable; use `sum()`.\n";

/// The generated file: three tests that hold, and one of each kind the
/// chain must drop — no real assertion, failing on the original, hanging
/// on the original (an endless input), flaky (it passes only on its first
/// run).
const GENERATED: &str = "import pathlib\n\nimport pytest\n\nfrom stats import mean, spread\n\n\n\
def test_mean_of_three():\n    assert mean([1, 2, 3]) == 2.0\n\n\n\
def test_spread():\n    assert spread([4, 1, 9]) == 8\n\n\n\
def test_mean_of_nothing_raises():\n    with pytest.raises(ZeroDivisionError):\n        mean([])\n\n\n\
def test_mean_does_not_raise():\n    mean([5, 6])\n\n\n\
def test_mean_is_five():\n    assert mean([1, 2, 3]) == 5\n\n\n\
def test_mean_of_endless_zeros():\n    assert mean(0 for _ in iter(int, 1)) == 0\n\n\n\
def test_mean_first_time_only():\n    marker = pathlib.Path(__file__).with_name(\"first_run_marker\")\n    \
first = not marker.exists()\n    marker.write_text(\"ran\")\n    assert first and mean([2, 4]) == 3\n";

const KEPT: [&str; 3] = [
    "test_mean_of_three",
    "test_spread",
    "test_mean_of_nothing_raises",
];

/// `STATS` tidied as the plan says, same results.
fn refactored() -> String {
    STATS
        .replace("    unused = 0\n", "")
        .replace(
            "    total = 0\n    for value in values:\n        total += value\n    return total / len(values)\n",
            "    return sum(values) / len(values)\n",
        )
}

fn untested_repo() -> FixtureRepo {
    let repo = TestRepo::with_files(&[("stats.py", STATS), ("report.py", REPORT)]);
    let target = repo.root.clone();
    FixtureRepo {
        name: "untested_tidy".into(),
        repo,
        target,
        target_rel: String::new(),
    }
}

/// Writes `PLAN`, answers the Tester with `GENERATED` and every fix
/// request for `stats.py` with `stats` as the whole file.
fn model(stats: String) -> LlmServer {
    LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        let text = if prompt.starts_with("Write a refactoring plan") {
            PLAN.to_string()
        } else if prompt.starts_with("Write pytest tests for `stats.py`") {
            format!("Characterization tests.\n\n```python\n{GENERATED}```\n")
        } else if prompt.starts_with("Fix and improve `stats.py`") {
            format!("Tidy it up.\n\n```python\n{stats}```\n")
        } else {
            "This file looks fine as it is; no change is needed.".to_string()
        };
        Reply::text_for(req, &text)
    })
}

/// The Tester's validation entries of the log.
fn validations(fx: &FixtureRepo) -> Vec<Value> {
    fx.log()
        .into_iter()
        .filter(|e| e["details"]["tool"] == "tester")
        .collect()
}

fn reason_of<'a>(generated: &'a Value, test: &str) -> &'a str {
    generated["tests"]
        .as_array()
        .expect("tests")
        .iter()
        .find(|t| t["test"] == test)
        .unwrap_or_else(|| panic!("{test} not in {generated}"))["reason"]
        .as_str()
        .unwrap_or("")
}

#[test]
fn a_fix_with_a_refactoring_is_delivered_with_the_generated_tests_that_hold() {
    let fx = untested_repo();
    let start = fx.repo.head();
    let server = model(refactored());
    let out = run_openai(&fx, &server, &["--test-timeout", "30"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");

    // The user's branch holds the fix and the kept tests, and nothing else.
    assert_eq!(fx.repo.read("stats.py"), refactored(), "{stderr}");
    let tests = fx.repo.read("tests/test_stats_swarm.py");
    for kept in KEPT {
        assert!(tests.contains(&format!("def {kept}(")), "{kept}:\n{tests}");
    }
    for dropped in [
        "test_mean_does_not_raise",
        "test_mean_is_five",
        "test_mean_of_endless_zeros",
        "test_mean_first_time_only",
    ] {
        assert!(!tests.contains(dropped), "{dropped} delivered:\n{tests}");
    }
    // They pass on the result, run as the user would run them.
    let pytest = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .current_dir(&fx.repo.root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs");
    let said = String::from_utf8_lossy(&pytest.stdout);
    assert!(pytest.status.success(), "{said}");
    assert!(said.contains("3 passed"), "{said}");

    // The tests came first, in their own commit with the trailer; the
    // Fixer's commit follows it.
    let history = fx
        .repo
        .git(&["log", "--format=%H", &format!("{start}..HEAD")]);
    let commits: Vec<&str> = history.lines().collect();
    assert_eq!(commits.len(), 2, "{history}");
    let tests_commit = commits[1];
    let message = fx.repo.git(&["log", "-1", "--format=%B", tests_commit]);
    let trailer = fx.repo.git(&[
        "log",
        "-1",
        "--format=%(trailers:key=Swarm-Generated-Tests,valueonly)",
        tests_commit,
    ]);
    assert_eq!(trailer.trim(), "3", "{message}");
    let touched = fx
        .repo
        .git(&["diff", "--name-only", start.as_str(), tests_commit]);
    assert_eq!(touched.trim(), "tests/test_stats_swarm.py");
    let fix = fx
        .repo
        .git(&["diff", "--name-only", tests_commit, commits[0]]);
    assert_eq!(fix.trim(), "stats.py");

    // The request and the reply are logged as CODE_GEN, in a log the
    // course's grader accepts: the format, every agent, at most two
    // entries that are not SUCCESS, every file named.
    let log = fx.log();
    assert_log_valid(
        &log,
        &[
            "Auditor", "Fixer", "Reviewer", "Judge", "Executor", "System",
        ],
    );
    let not_success: Vec<&Value> = log.iter().filter(|e| e["status"] != "SUCCESS").collect();
    assert!(not_success.len() <= 2, "{not_success:?}");
    let text = serde_json::to_string(&log).unwrap();
    for file in ["stats.py", "report.py", "tests/test_stats_swarm.py"] {
        assert!(text.contains(file), "{file} not named in the log");
    }
    let asked = log
        .iter()
        .find(|e| e["action"] == "CODE_GEN" && e["details"]["kind"] == "llm_call")
        .expect("a CODE_GEN model call in the log");
    assert!(asked["details"]["input_prompt"]
        .as_str()
        .unwrap()
        .contains("Write pytest tests for `stats.py`"));
    assert!(asked["details"]["output_response"]
        .as_str()
        .unwrap()
        .contains("def test_mean_first_time_only"));

    // Every test's steps and the reasons of the dropped ones are logged.
    // The first entry is the validation before the rounds; the second
    // settles the test set aside for failing on the original.
    let entries = validations(&fx);
    assert_eq!(entries.len(), 2, "{entries:?}");
    let before = &entries[0]["details"]["generated_tests"];
    let set_aside = reason_of(before, "test_mean_is_five");
    assert!(
        set_aside.starts_with("fails on the original code (assert 2.0 == 5)"),
        "{set_aside}"
    );
    let generated = &entries[1]["details"]["generated_tests"];
    assert_eq!(generated["kept"], 3, "{generated}");
    assert_eq!(generated["discarded"], 4, "{generated}");
    let assert_free = reason_of(generated, "test_mean_does_not_raise");
    assert!(assert_free.starts_with("real_assertions:"), "{assert_free}");
    let failing = reason_of(generated, "test_mean_is_five");
    assert!(
        failing.starts_with("fails on the original code and still fails on the delivered code"),
        "{failing}"
    );
    // Set aside, it was shown to the Fixer as possible evidence of a bug.
    let fix_prompt = server
        .requests()
        .iter()
        .map(prompt_of)
        .find(|p| p.starts_with("Fix and improve `stats.py`"))
        .expect("a fix prompt");
    assert!(
        fix_prompt.contains("test_mean_is_five")
            && fix_prompt.contains("possible evidence of a bug"),
        "{fix_prompt}"
    );
    // A hang in the original costs the per-test timeout, not the run's.
    let hang = reason_of(before, "test_mean_of_endless_zeros");
    assert!(
        hang.starts_with("fails on the original code (") && hang.contains("timed out"),
        "{hang}"
    );
    let validation = before["seconds"].as_f64().expect("seconds");
    assert!(
        validation < 30.0,
        "the validation waited out the run: {validation} s"
    );
    let flaky = reason_of(generated, "test_mean_first_time_only");
    assert!(flaky.starts_with("flaky: passed on run 1"), "{flaky}");
    let kept = generated["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["test"] == "test_spread")
        .unwrap();
    let steps: Vec<&str> = kept["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "parses",
            "imports_module",
            "real_assertions",
            "runs",
            "passes_on_original",
            "not_flaky"
        ]
    );

    // The summary says what verified the change, with the same reasons.
    let verified = &summary["verification"]["stats.py"];
    assert_eq!(verified["by"], "generated_tests", "{summary}");
    assert_eq!(verified["kept"], 3, "{verified}");
    assert_eq!(verified["discarded"], 4, "{verified}");
    let reasons = verified["reasons"].as_array().expect("reasons");
    assert!(
        reasons.iter().any(|r| r
            .as_str()
            .unwrap()
            .starts_with("test_mean_first_time_only: flaky")),
        "{verified}"
    );
    assert!(
        stderr.contains("verified: stats.py: generated tests (3 kept, 4 discarded"),
        "{stderr}"
    );
}

#[test]
fn no_generate_tests_asks_for_none_and_delivers_none() {
    let fx = untested_repo();
    let server = model(refactored());
    let out = run_openai(
        &fx,
        &server,
        &["--test-timeout", "30", "--no-generate-tests"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(fx.repo.read("stats.py"), refactored());
    assert!(!fx.repo.root.join("tests").exists());
    assert!(server
        .requests()
        .iter()
        .all(|r| !prompt_of(r).starts_with("Write pytest tests")));
    assert!(fx.log().iter().all(|e| e["action"] != "CODE_GEN"));
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["verification"]["stats.py"]["by"], "behaviour_check");
}

#[test]
fn a_regression_is_caught_by_the_generated_tests_and_never_delivered() {
    let fx = untested_repo();
    let start = fx.repo.head();
    let broken = refactored().replace("return sum(values) / len(values)", "return None");
    let server = model(broken);
    let out = run_openai(
        &fx,
        &server,
        &["--test-timeout", "30", "--max-iterations", "2"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = summary_of(&out.stdout);
    let run_id = summary["run_id"].as_str().expect("run id");
    assert_eq!(summary["accepted"], 0, "{stderr}");
    let attempt = fx.repo.git(&[
        "log",
        "-1",
        "--format=%B",
        &format!("swarm/{run_id}/attempt-2"),
    ]);
    assert!(attempt.contains("Swarm-Verdict: regressed"), "{attempt}");
    assert!(
        attempt.contains("Swarm-Tests: 1/3 passed"),
        "the generated tests judged it: {attempt}"
    );
    // Whatever the user's branch received, the regression is not in it:
    // stats.py is as committed, and no commit since the start touched it.
    assert_eq!(fx.repo.read("stats.py"), STATS, "{stderr}");
    let touching = fx.repo.git(&[
        "log",
        "--format=%H",
        &format!("{start}..HEAD"),
        "--",
        "stats.py",
    ]);
    assert!(touching.trim().is_empty(), "{touching}");
    // The Fixer's next prompt names the generated test it broke.
    let last = server
        .requests()
        .iter()
        .map(prompt_of)
        .rfind(|p| p.starts_with("Fix and improve `stats.py`"))
        .expect("a fix prompt");
    assert!(last.contains("test_mean_of_three"), "{last}");
}

#[test]
fn the_tester_is_turned_off_by_flag_variable_or_config_file() {
    let repo = TestRepo::with_files(&[("a.py", "x = 1\n")]);
    let cwd = repo.tmp().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let root = repo.root.to_str().unwrap().to_string();
    let row = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = vec!["config", "--target_dir", root.as_str()];
        args.extend_from_slice(extra);
        let mut vars = vec![("OPENAI_API_KEY", "sk-test-key-0000")];
        vars.extend_from_slice(env);
        let out = swarm_in(&cwd, &repo.home, &args, &vars);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some("generate_tests"))
            .unwrap_or_else(|| panic!("no generate_tests row in {stdout}"))
            .to_string()
    };
    assert!(row(&[], &[]).contains("true  (default)"));
    assert!(row(&["--no-generate-tests"], &[]).contains("false  (flag --no-generate-tests)"));
    let by_env = row(&[], &[("SWARM_NO_GENERATE_TESTS", "1")]);
    assert!(
        by_env.contains("false  (env SWARM_NO_GENERATE_TESTS)"),
        "{by_env}"
    );
    repo.write(".swarm.toml", "generate-tests = false\n");
    let by_file = row(&[], &[]);
    assert!(
        by_file.contains("false") && by_file.contains(".swarm.toml"),
        "{by_file}"
    );
    // The key as the issue spells it works too.
    repo.write(".swarm.toml", "generate_tests = false\n");
    assert!(row(&[], &[]).contains("false"));
}

/// `mean()` floors its result, and the plan says that is the bug.
const FLOORED: &str = "\"\"\"Small statistics.\"\"\"\n\n\n\
def mean(values):\n    \"\"\"The arithmetic mean of `values`.\"\"\"\n    unused = 0\n    \
return sum(values) // len(values)\n";

const BUG_PLAN: &str =
    "# Refactoring plan\n\n## stats.py\n\n- **Type**: bug\n  **Severity**: high\n  \
**Location**: `mean()`, line 7\n  **Description**: `mean()` floors its result: the mean of \
[1, 2] is 1.5, not 1.\n  **Suggested fix**: divide with `/`; drop the unused variable.\n";

const BUG_TESTS: &str = "from stats import mean\n\n\n\
def test_mean_of_three():\n    assert mean([1, 2, 3]) == 2\n\n\n\
def test_mean_of_two():\n    assert mean([1, 2]) == 1.5\n";

#[test]
fn a_test_failing_on_the_original_is_committed_once_the_planned_fix_makes_it_pass() {
    let repo = TestRepo::with_files(&[("stats.py", FLOORED)]);
    let target = repo.root.clone();
    let fx = FixtureRepo {
        name: "floored".into(),
        repo,
        target,
        target_rel: String::new(),
    };
    let fixed = FLOORED.replace("    unused = 0\n", "").replace("//", "/");
    let reply = fixed.clone();
    let server = LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        let text = if prompt.starts_with("Write a refactoring plan") {
            BUG_PLAN.to_string()
        } else if prompt.starts_with("Write pytest tests for `stats.py`") {
            format!("```python\n{BUG_TESTS}```\n")
        } else {
            format!("Divide, do not floor.\n\n```python\n{reply}```\n")
        };
        Reply::text_for(req, &text)
    });
    let out = run_openai(&fx, &server, &["--test-timeout", "30"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(fx.repo.read("stats.py"), fixed);
    // Both tests are delivered: the second in a commit of its own after
    // the fix, which made it pass.
    let tests = fx.repo.read("tests/test_stats_swarm.py");
    assert!(tests.contains("def test_mean_of_two("), "{tests}");
    let trailers = fx.repo.git(&[
        "log",
        "--format=%(trailers:key=Swarm-Generated-Tests,valueonly)",
        "HEAD",
    ]);
    let counts: Vec<&str> = trailers.split_whitespace().collect();
    assert_eq!(counts, ["2", "1"], "{trailers}");
    let verified = &summary_of(&out.stdout)["verification"]["stats.py"];
    assert_eq!(verified["kept"], 2, "{verified}");
    assert_eq!(verified["discarded"], 0, "{verified}");
    let entries = validations(&fx);
    let last = &entries.last().expect("a settling entry")["details"]["generated_tests"];
    let settled = last["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["test"] == "test_mean_of_two")
        .unwrap();
    assert_eq!(settled["kept"], true, "{last}");
    let step = settled["steps"].as_array().unwrap().last().unwrap();
    assert_eq!(step["step"], "fixed_by_change", "{settled}");
    assert!(
        step["detail"]
            .as_str()
            .unwrap()
            .contains("the plan calls `mean` of stats.py a bug"),
        "{step}"
    );
}
