//! The whole tool, end to end: the real binary on fixture repositories in
//! temp folders, real git, pytest and pylint, and a loopback model server
//! speaking each provider's wire format.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::support::fixture::{good_model, FixtureRepo};
use crate::support::llm_server::LlmServer;

/// A key nobody would type: it must appear nowhere after a run.
pub const FAKE_KEY: &str = "sk-swarm-e2e-FAKEKEY-7c1d9e";

/// The `--json` summary: the last line of stdout.
pub fn summary_of(stdout: &[u8]) -> Value {
    let text = String::from_utf8_lossy(stdout);
    let last = text.lines().last().unwrap_or_default();
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("last stdout line is not JSON ({e}): {text}"))
}

/// Runs swarm on the fixture with `--json`, as an OpenAI-compatible client of `server`.
pub fn run_openai(fx: &FixtureRepo, server: &LlmServer, extra: &[&str]) -> std::process::Output {
    let base = format!("{}/v1", server.base_url());
    let target = fx.target.to_string_lossy().into_owned();
    let mut args = vec!["--target_dir", &target, "--json"];
    args.extend_from_slice(extra);
    fx.swarm(
        &args,
        &[("OPENAI_API_KEY", FAKE_KEY), ("OPENAI_BASE_URL", &base)],
    )
}

/// Everything a user checks after a successful run.
pub fn assert_fixed_and_delivered(fx: &FixtureRepo, out: &std::process::Output, start_head: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    assert_eq!(summary["exit_code"], 0);
    let run_id = summary["run_id"].as_str().expect("run id").to_string();
    let branch = format!("swarm/{run_id}/best");
    assert_eq!(summary["branch"], branch);

    // The user's branch was fast-forwarded to the run branch, working tree updated.
    let head = fx.repo.head();
    assert_ne!(head, start_head, "HEAD did not move");
    assert_eq!(head, fx.repo.git(&["rev-parse", &branch]));
    assert_eq!(fx.repo.git(&["rev-parse", "--abbrev-ref", "HEAD"]), "main");
    assert!(
        fx.repo.git(&["status", "--porcelain"]).is_empty(),
        "working tree not clean"
    );
    for (path, fixed) in fx.fixed_files() {
        assert_eq!(
            fx.repo.read(&path),
            fixed,
            "{path} is not the fixed version"
        );
    }
    // The undo handle exists.
    assert_eq!(
        fx.repo
            .git(&["rev-parse", &format!("refs/swarm/{run_id}/pre-ff")]),
        start_head
    );

    // One commit per attempt on its own branch, with the trailers.
    let attempts = fx.repo.git(&[
        "for-each-ref",
        "--format=%(refname:short)",
        &format!("refs/heads/swarm/{run_id}/"),
    ]);
    let attempt_branches: Vec<&str> = attempts
        .lines()
        .filter(|l| l.contains("/attempt-"))
        .collect();
    assert_eq!(
        attempt_branches.len() as u64,
        summary["attempts"].as_u64().unwrap(),
        "{attempts}"
    );
    assert!(!attempt_branches.is_empty());
    for b in &attempt_branches {
        let msg = fx.repo.git(&["log", "-1", "--format=%B", b]);
        assert!(msg.starts_with("swarm: "), "{msg}");
        for trailer in [
            "Swarm-Run: ",
            "Swarm-Iteration: ",
            "Swarm-Model: ",
            "Swarm-Verdict: ",
            "Swarm-Tests: ",
            "Swarm-Pylint: ",
            "Swarm-Changed-Lines: ",
        ] {
            assert!(msg.contains(trailer), "{b} lacks {trailer}:\n{msg}");
        }
        // git itself reads them as trailers.
        let trailer_run = fx.repo.git(&[
            "log",
            "-1",
            "--format=%(trailers:key=Swarm-Run,valueonly)",
            b,
        ]);
        assert_eq!(trailer_run.trim(), run_id);
        let parents = fx.repo.git(&["log", "-1", "--format=%P", b]);
        assert_eq!(parents.split_whitespace().count(), 1);
    }

    // No worktree or run lock left behind: the run's files are kept only
    // as the spare for the next run, which git does not know of.
    assert_eq!(fx.repo.worktrees().len(), 1, "{:?}", fx.repo.worktrees());
    assert_eq!(repos::leftover_runs(fx), Vec::<String>::new());
    let spare = repos::spare_folder(fx).expect("the worktree is kept as the spare");
    assert!(!spare.join(".git").exists(), "the spare is not a worktree");
    assert!(spare.with_file_name("spare.index").is_file());

    assert_log_valid(
        &fx.log(),
        &[
            "Auditor", "Fixer", "Reviewer", "Judge", "Executor", "System",
        ],
    );
}

/// The experiment log format of docs/architecture.md.
pub fn assert_log_valid(log: &[Value], agents_expected: &[&str]) {
    assert!(!log.is_empty());
    let mut agents = BTreeSet::new();
    let mut llm_calls = 0;
    for entry in log {
        for key in [
            "id",
            "timestamp",
            "agent",
            "model",
            "action",
            "details",
            "status",
        ] {
            assert!(entry.get(key).is_some(), "entry lacks {key}: {entry}");
        }
        assert!(uuid::Uuid::parse_str(entry["id"].as_str().unwrap()).is_ok());
        assert!(chrono::DateTime::parse_from_rfc3339(entry["timestamp"].as_str().unwrap()).is_ok());
        let agent = entry["agent"].as_str().unwrap();
        assert!(["Auditor", "Fixer", "Reviewer", "Judge", "Executor", "System"].contains(&agent));
        assert!(["CODE_ANALYSIS", "CODE_GEN", "DEBUG", "FIX"]
            .contains(&entry["action"].as_str().unwrap()));
        assert!(["SUCCESS", "FAILURE", "INFO"].contains(&entry["status"].as_str().unwrap()));
        assert!(entry["details"]["input_prompt"].is_string(), "{entry}");
        assert!(entry["details"]["output_response"].is_string(), "{entry}");
        if entry["details"]["kind"] == "llm_call" {
            llm_calls += 1;
            assert_eq!(entry["status"], "SUCCESS", "{entry}");
            assert!(!entry["details"]["output_response"]
                .as_str()
                .unwrap()
                .is_empty());
        }
        agents.insert(agent.to_string());
    }
    assert!(llm_calls >= 2, "{llm_calls} model calls logged");
    assert!(agents.len() >= 3, "{agents:?}");
    for agent in agents_expected {
        assert!(agents.contains(*agent), "{agent} missing from {agents:?}");
    }
}

fn fixture_run(name: &str) -> (FixtureRepo, LlmServer, String) {
    let fx = FixtureRepo::new(name);
    let start = fx.repo.head();
    let server = LlmServer::start(good_model(name, &fx.target_rel));
    let out = run_openai(&fx, &server, &[]);
    assert_fixed_and_delivered(&fx, &out, &start);
    let summary = summary_of(&out.stdout);
    let before = summary["pylint_before"].as_f64().unwrap();
    let after = summary["pylint_after"].as_f64().unwrap();
    assert!(after > before, "pylint {before} -> {after}");
    for request in server.requests() {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {FAKE_KEY}").as_str())
        );
    }
    (fx, server, start)
}

#[test]
fn fixes_a_single_module() {
    fixture_run("single_module");
}

#[test]
fn fixes_a_package_of_several_files() {
    fixture_run("package");
}

#[test]
fn fixes_a_target_folder_inside_a_larger_repository() {
    let (fx, server, start) = fixture_run("monorepo_target");
    // Files outside the target are never read into a prompt or changed.
    let changed = fx.repo.git(&["diff", "--name-only", &start, "HEAD"]);
    assert!(
        changed.lines().all(|p| p.starts_with("services/billing/")),
        "{changed}"
    );
    for request in server.requests() {
        assert!(
            !request.body_text().contains("release_notes"),
            "a prompt showed a file outside the target"
        );
    }
}

#[test]
fn fixes_a_project_without_tests() {
    let fx = FixtureRepo::new("no_tests");
    let start = fx.repo.head();
    let server = LlmServer::start(good_model("no_tests", &fx.target_rel));
    let out = run_openai(&fx, &server, &["--test-timeout", "5"]);
    assert_fixed_and_delivered(&fx, &out, &start);
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["verified_by_tests"], false);
    assert!(String::from_utf8_lossy(&out.stderr).contains("NOT verified by tests"));
}

mod as_the_user_sees;
mod as_they_are;
mod budget;
mod cache;
mod delivery;
mod failures;
mod gaming;
mod half_right;
mod hanging;
mod hooks;
mod javascript;
mod kill;
mod large_files;
mod lint;
mod literal_answers;
mod localise;
mod looping;
mod offline;
mod one_module;
mod oversized;
mod preflight;
mod progress;
mod providers;
mod real_replies;
mod reference;
mod repos;
mod review_rules;
mod runs;
mod sandbox;
mod scale;
mod secrets;
mod shapes;
mod streaming;
mod task;
mod tester;
mod trust;
mod untested;
