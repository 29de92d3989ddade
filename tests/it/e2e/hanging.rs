//! Projects whose bug makes a test hang. The per-test limit stops the
//! hanging test alone, so the baseline shows its true counts and the Fixer
//! sees which test hung and where it was stuck; code that disarms the
//! per-test limit still meets the whole run's limit, and the tests that
//! finished before keep their outcomes.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use super::{summary_of, FAKE_KEY};
use crate::support::fixture::{prompt_of, read_log, swarm_in};
use crate::support::llm_server::{LlmServer, RecordedRequest, Reply};
use crate::support::repo::TestRepo;

const PYPROJECT: &str = r#"[project]
name = "shop"
version = "0.1.0"

[tool.pytest.ini_options]
pythonpath = ["."]
testpaths = ["tests"]
"#;

/// A binary search whose lower bound never moves past the middle: any
/// price above the middle of the list makes it loop forever.
const SEARCH: &str = r#""""Looking up prices in a sorted price list."""


def find_price_index(prices, target):
    """Return the index of `target` in the sorted list `prices`, or -1."""
    low, high = 0, len(prices) - 1
    while low <= high:
        middle = (low + high) // 2
        if prices[middle] == target:
            return middle
        if prices[middle] < target:
            low = middle
        else:
            high = middle - 1
    return -1
"#;

const SEARCH_TESTS: &str = r#"from prices.search import find_price_index

PRICES = [1.5, 3.0, 4.25, 7.0]


def test_finds_a_price_in_the_middle():
    assert find_price_index(PRICES, 3.0) == 1


def test_finds_the_first_price():
    assert find_price_index(PRICES, 1.5) == 0


def test_finds_the_last_price():
    assert find_price_index(PRICES, 7.0) == 3
"#;

/// Runs `work()` under a deadline with SIGALRM; `signal.alarm` takes whole
/// seconds, so a deadline under one second becomes `alarm(0)`: no alarm at
/// all (and any other timer on the process is cancelled).
const DEADLINE: &str = r#""""Running a job under a deadline."""
import signal


class DeadlineExceeded(Exception):
    """The job ran past its deadline."""


def _expired(_signum, _frame):
    raise DeadlineExceeded("the job ran past its deadline")


def run_with_deadline(work, seconds):
    """Return `work()`, or raise DeadlineExceeded after `seconds`."""
    previous = signal.signal(signal.SIGALRM, _expired)
    signal.alarm(int(seconds))
    try:
        return work()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
"#;

const DEADLINE_TESTS: &str = r#"import pytest

from jobs.deadline import DeadlineExceeded, run_with_deadline


def spin():
    while True:
        pass


def test_a_quick_job_returns_its_result():
    assert run_with_deadline(lambda: 42, 1) == 42


def test_b_a_job_past_half_a_second_is_stopped():
    with pytest.raises(DeadlineExceeded):
        run_with_deadline(spin, 0.5)


def test_c_the_handler_is_restored():
    run_with_deadline(lambda: None, 1)
"#;

/// A project committed on `main`.
fn committed(files: &[(&str, &str)]) -> (TestRepo, String) {
    let repo = TestRepo::with_files(files);
    let start = repo.head();
    (repo, start)
}

/// A model that plans a fix of `path`, answers the fix request for it with
/// a diff from `buggy` to `fixed`, and finds nothing to change elsewhere.
fn model_fixing(path: &'static str, buggy: &'static str, fixed: String) -> LlmServer {
    LlmServer::start(move |request| {
        let prompt = prompt_of(request);
        let first = prompt.lines().next().unwrap_or_default();
        let text = if first.contains("refactoring plan") {
            format!(
                "# Refactoring plan\n\n## {path}\n\n- **Type**: bug\n  **Severity**: high\n  \
                 **Location**: module\n  **Description**: a test hangs.\n  **Suggested fix**: \
                 make the loop end.\n"
            )
        } else if first.contains(&format!("`{path}`")) {
            let diff = similar::TextDiff::from_lines(buggy, &fixed)
                .unified_diff()
                .context_radius(3)
                .header(&format!("a/{path}"), &format!("b/{path}"))
                .to_string();
            format!("Make the loop end.\n\n```diff\n{diff}```\n")
        } else {
            "This file looks fine as it is; no change is needed.".to_string()
        };
        Reply::text_for(request, &text)
    })
}

/// Runs swarm with `--json` on `repo` from a folder of its own.
fn run(repo: &TestRepo, server: &LlmServer, extra: &[&str]) -> (Output, std::path::PathBuf) {
    let cwd = repo.tmp().join("cwd");
    std::fs::create_dir_all(&cwd).expect("create cwd");
    let root = repo.root.to_string_lossy().into_owned();
    let base = format!("{}/v1", server.base_url());
    let mut args = vec!["--target_dir", root.as_str(), "--json"];
    args.extend_from_slice(extra);
    let out = swarm_in(
        &cwd,
        &repo.home,
        &args,
        &[("OPENAI_API_KEY", FAKE_KEY), ("OPENAI_BASE_URL", &base)],
    );
    (out, cwd)
}

/// The first prompt that asks to fix `path`, from the server and from the log.
fn fix_prompts(server: &LlmServer, cwd: &Path, path: &str) -> (String, String) {
    let asked = |first: &str| first.starts_with("Fix") && first.contains(&format!("`{path}`"));
    let requests: Vec<RecordedRequest> = server.requests();
    let sent = requests
        .iter()
        .map(prompt_of)
        .find(|p| asked(p.lines().next().unwrap_or_default()))
        .unwrap_or_else(|| panic!("no fix request for {path}"));
    let log = read_log(&cwd.join("logs/experiment_data.json"));
    let logged = log
        .iter()
        .filter(|e| e["agent"] == "Fixer" && e["details"]["kind"] == "llm_call")
        .filter_map(|e| e["details"]["input_prompt"].as_str())
        .find(|p| p.contains(&format!("`{path}`")))
        .unwrap_or_else(|| panic!("no Fixer call about {path} in the log"))
        .to_string();
    (sent, logged)
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .chars()
        .take(4_000)
        .collect()
}

/// An infinite loop with the default per-test limit: the baseline is
/// "2/3", the Fixer is told which test hung and where, the run is green.
#[test]
fn a_hanging_test_fails_alone_and_the_fixer_sees_its_name_and_stack() {
    let (repo, start) = committed(&[
        ("pyproject.toml", PYPROJECT),
        ("prices/__init__.py", "\"\"\"Prices.\"\"\"\n"),
        ("prices/search.py", SEARCH),
        ("tests/test_search.py", SEARCH_TESTS),
    ]);
    let fixed = SEARCH.replacen("low = middle\n", "low = middle + 1\n", 1);
    let server = model_fixing("prices/search.py", SEARCH, fixed.clone());
    let (out, cwd) = run(&repo, &server, &[]);

    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", stderr_of(&out));
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    assert_eq!(
        summary["tests_before"],
        serde_json::json!({"passed": 2, "total": 3}),
        "{summary}"
    );
    assert_eq!(
        summary["tests_after"],
        serde_json::json!({"passed": 3, "total": 3}),
        "{summary}"
    );
    assert_ne!(repo.head(), start, "HEAD did not move");
    assert_eq!(repo.read("prices/search.py"), fixed);

    // The hanging test, the per-test limit and the loop it was stuck in.
    let (sent, logged) = fix_prompts(&server, &cwd, "prices/search.py");
    for prompt in [&sent, &logged] {
        assert!(
            prompt.contains("tests/test_search.py::test_finds_the_last_price"),
            "{prompt}"
        );
        assert!(prompt.contains("timed out after 10 s"), "{prompt}");
        assert!(
            prompt.contains("File \"prices/search.py\"") && prompt.contains("in find_price_index"),
            "{prompt}"
        );
        assert!(
            !prompt.contains("did not finish within"),
            "the whole run's limit fired:\n{prompt}"
        );
    }

    // The Judge's baseline in the log: pytest was not killed.
    let log = read_log(&cwd.join("logs/experiment_data.json"));
    let pytest_runs: Vec<&Value> = log
        .iter()
        .filter(|e| e["details"]["tool"] == "pytest")
        .collect();
    assert!(!pytest_runs.is_empty(), "no pytest entry in the log");
    for entry in pytest_runs {
        let output = entry["details"]["output_response"].as_str().unwrap_or("");
        assert!(!output.contains("was killed"), "{output}");
    }
}

/// Code that cancels every SIGALRM timer (its own deadline of under a
/// second becomes `alarm(0)`) hangs past the per-test limit; the whole
/// run's limit stops pytest, the test that passed keeps its outcome, the
/// hanging one fails with its stack, and the last one is not run.
#[test]
fn when_the_whole_run_is_stopped_the_finished_tests_keep_their_outcomes() {
    let (repo, start) = committed(&[
        ("pyproject.toml", PYPROJECT),
        ("jobs/__init__.py", "\"\"\"Jobs.\"\"\"\n"),
        ("jobs/deadline.py", DEADLINE),
        ("tests/test_deadline.py", DEADLINE_TESTS),
    ]);
    let fixed = DEADLINE.replacen(
        "signal.alarm(int(seconds))\n",
        "signal.setitimer(signal.ITIMER_REAL, seconds)\n",
        1,
    );
    let server = model_fixing("jobs/deadline.py", DEADLINE, fixed.clone());
    let (out, cwd) = run(
        &repo,
        &server,
        &["--test-timeout", "6", "--test-case-timeout", "1"],
    );

    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", stderr_of(&out));
    let summary = summary_of(&out.stdout);
    assert_eq!(
        summary["tests_before"],
        serde_json::json!({"passed": 1, "total": 3}),
        "{summary}"
    );
    assert_eq!(
        summary["tests_after"],
        serde_json::json!({"passed": 3, "total": 3}),
        "{summary}"
    );
    assert_ne!(repo.head(), start, "HEAD did not move");
    assert_eq!(repo.read("jobs/deadline.py"), fixed);

    let (sent, logged) = fix_prompts(&server, &cwd, "jobs/deadline.py");
    for prompt in [&sent, &logged] {
        let hung = "tests/test_deadline.py::test_b_a_job_past_half_a_second_is_stopped";
        assert!(prompt.contains(hung), "{prompt}");
        assert!(
            prompt.contains("did not finish: the whole test run was stopped at its limit of 6 s"),
            "{prompt}"
        );
        assert!(
            prompt.contains("File \"jobs/deadline.py\"") && prompt.contains("in run_with_deadline"),
            "{prompt}"
        );
    }
    let log = read_log(&cwd.join("logs/experiment_data.json"));
    let baseline = log
        .iter()
        .find(|e| e["details"]["tool"] == "pytest")
        .expect("the baseline's pytest entry");
    let output = baseline["details"]["output_response"]
        .as_str()
        .unwrap_or("");
    assert!(output.contains("1 not run"), "{output}");
}

/// `test-case-timeout` in the config file, the flag over it, and 0 for off.
#[test]
fn swarm_config_shows_the_per_test_limit_and_where_it_came_from() {
    let repo = TestRepo::with_files(&[
        ("a.py", "x = 1\n"),
        (".swarm.toml", "test-case-timeout = 4\n"),
    ]);
    let target = repo.root.to_string_lossy().into_owned();
    let line = |extra: &[&str]| {
        let mut args = vec!["config", "--target_dir", target.as_str()];
        args.extend_from_slice(extra);
        let out = swarm_in(
            repo.tmp(),
            &repo.home,
            &args,
            &[("OPENAI_API_KEY", FAKE_KEY)],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.starts_with("test_case_timeout"))
            .unwrap_or_default()
            .to_string()
    };
    let from_file = line(&[]);
    assert!(
        from_file.contains(" 4 ") && from_file.contains(".swarm.toml"),
        "{from_file}"
    );
    let off = line(&["--test-case-timeout", "0"]);
    assert!(
        off.contains("0 (off)") && off.contains("flag --test-case-timeout"),
        "{off}"
    );
}
