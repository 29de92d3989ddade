//! `--offline`, as a user without any key tries it: ruff's safe fixes go
//! through the same Reviewer, Executor, Judge and fast-forward, with no
//! model and no network; a fix that breaks a test is turned down by the
//! Judge; without ruff the run stops at once saying how to install it.

use std::process::Output;

use serde_json::Value;

use super::summary_of;
use crate::support::fixture::swarm_in;
use crate::support::repo::TestRepo;

const CALC: &str = r#"import os
import sys
from typing import List


def total(xs: List[int]) -> int:
    if not xs is None:
        return sum(xs)
    return 0


def label(n):
    if not n in [1, 2]:
        return f"other"
    return "small"
"#;

/// What ruff's safe fixes make of `CALC`.
const CALC_FIXED: &str = r#"

def total(xs: list[int]) -> int:
    if xs is not None:
        return sum(xs)
    return 0


def label(n):
    if n not in [1, 2]:
        return "other"
    return "small"
"#;

const TEST_CALC: &str = r#"from calc import label, total


def test_total():
    assert total([1, 2]) == 3
    assert total(None) == 0


def test_label():
    assert label(5) == "other"
    assert label(1) == "small"
"#;

/// ruff removes `json` as unused, but a test reaches it through the module.
const CODEC: &str = r#"import json


def encode(value):
    return str(value)
"#;

const TEST_CODEC: &str = r#"import codec


def test_encode():
    assert codec.encode(1) == "1"
    assert codec.json.dumps([1]) == "[1]"
"#;

fn offline_repo() -> TestRepo {
    TestRepo::with_files(&[
        ("calc.py", CALC),
        ("test_calc.py", TEST_CALC),
        ("codec.py", CODEC),
        ("test_codec.py", TEST_CODEC),
    ])
}

fn run_offline(repo: &TestRepo, args: &[&str], env: &[(&str, &str)]) -> Output {
    let cwd = repo.tmp().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let target = repo.root.to_string_lossy().into_owned();
    let mut all = vec!["--target_dir", target.as_str(), "--json"];
    all.extend_from_slice(args);
    swarm_in(&cwd, &repo.home, &all, env)
}

fn log_of(repo: &TestRepo) -> Vec<Value> {
    crate::support::fixture::read_log(&repo.tmp().join("cwd/logs/experiment_data.json"))
}

#[test]
fn offline_takes_ruffs_fixes_through_the_judge_with_no_model_and_no_key() {
    let repo = offline_repo();
    let start = repo.head();
    // No provider variable is set (the helper removes them all), and the
    // proxy variables point nowhere: any network use would fail.
    let out = run_offline(
        &repo,
        &["--offline"],
        &[
            ("HTTPS_PROXY", "http://127.0.0.1:9"),
            ("HTTP_PROXY", "http://127.0.0.1:9"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");

    // The user's branch moved, the fixed file is on disk, the file whose
    // fix broke a test is as it was.
    let head = repo.head();
    assert_ne!(head, start);
    let run_id = summary["run_id"].as_str().unwrap();
    assert_eq!(
        head,
        repo.git(&["rev-parse", &format!("swarm/{run_id}/best")])
    );
    assert_eq!(repo.read("calc.py"), CALC_FIXED);
    assert_eq!(
        repo.read("codec.py"),
        CODEC,
        "the Judge turned the breaking fix down"
    );
    assert!(repo.git(&["status", "--porcelain"]).is_empty());

    // Each attempt is a commit naming ruff as its model; codec's regressed.
    let mut verdicts = Vec::new();
    for branch in repo
        .git(&[
            "for-each-ref",
            "--format=%(refname:short)",
            &format!("refs/heads/swarm/{run_id}/"),
        ])
        .lines()
        .filter(|b| b.contains("/attempt-"))
    {
        let message = repo.git(&["log", "-1", "--format=%B", branch]);
        let model = message
            .lines()
            .find(|l| l.starts_with("Swarm-Model: "))
            .unwrap_or_default();
        assert!(model.starts_with("Swarm-Model: ruff 0."), "{message}");
        let changed = repo.git(&["diff", "--name-only", &format!("{branch}~1"), branch]);
        let verdict = message
            .lines()
            .find(|l| l.starts_with("Swarm-Verdict: "))
            .unwrap_or_default();
        verdicts.push((changed, verdict.to_string()));
    }
    verdicts.sort();
    assert_eq!(
        verdicts,
        vec![
            ("calc.py".to_string(), "Swarm-Verdict: green".to_string()),
            (
                "codec.py".to_string(),
                "Swarm-Verdict: regressed".to_string()
            ),
        ]
    );

    // The log: ruff is the model; no plan request; each FIX entry holds
    // ruff's command and its diff.
    let log = log_of(&repo);
    assert!(log
        .iter()
        .all(|e| e["model"].as_str().unwrap().starts_with("ruff 0.")));
    assert!(!log
        .iter()
        .any(|e| e["action"] == "CODE_ANALYSIS" && e["details"]["kind"] == "llm_call"));
    let fixes: Vec<&Value> = log.iter().filter(|e| e["agent"] == "Fixer").collect();
    assert!(fixes.len() >= 2, "{fixes:?}");
    for fix in &fixes {
        assert_eq!(fix["action"], "FIX");
        let prompt = fix["details"]["input_prompt"].as_str().unwrap();
        assert!(
            prompt.contains("check --fix --diff") && prompt.contains("--select="),
            "{prompt}"
        );
        assert!(
            !prompt.contains(&*repo.root.to_string_lossy()),
            "no machine path: {prompt}"
        );
        let reply = fix["details"]["output_response"].as_str().unwrap();
        assert!(reply.contains("```diff\n--- a/"), "{reply}");
    }

    // The tests still pass in the user's tree.
    let pytest = std::process::Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .current_dir(&repo.root)
        .output()
        .unwrap();
    assert!(
        pytest.status.success(),
        "{}",
        String::from_utf8_lossy(&pytest.stdout)
    );
}

#[test]
fn offline_is_also_a_variable_and_a_config_setting() {
    for how in ["env", "config"] {
        let repo = offline_repo();
        let out = if how == "env" {
            run_offline(&repo, &["--dry-run"], &[("SWARM_OFFLINE", "1")])
        } else {
            repo.write(".swarm.toml", "offline = true\n");
            repo.commit_all("config");
            run_offline(&repo, &["--dry-run"], &[])
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{how}: {stderr}");
        assert!(stderr.contains("with ruff 0."), "{how}: {stderr}");
    }
}

#[test]
fn without_a_provider_the_error_points_at_offline_and_without_ruff_offline_says_how_to_get_it() {
    let repo = offline_repo();
    let out = run_offline(&repo, &[], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--offline"), "{stderr}");

    // A PATH with git alone: neither `ruff` nor `python3 -m ruff`.
    let bin = repo.tmp().join("only-git");
    std::fs::create_dir_all(&bin).unwrap();
    let git = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    std::os::unix::fs::symlink(git.trim(), bin.join("git")).unwrap();
    let path = bin.to_string_lossy().into_owned();
    let out = run_offline(&repo, &["--offline"], &[("PATH", &path)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("pip install ruff"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}
