//! Runs that cannot succeed end cleanly, with the right exit code and the
//! target untouched.

use super::{assert_log_valid, run_openai, summary_of, FAKE_KEY};
use crate::support::fixture::{plan_then, prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};

#[test]
fn a_model_that_keeps_failing_exits_2_and_touches_nothing() {
    let fx = FixtureRepo::planned("single_module");
    let before = fx.repo.snapshot();
    let server = LlmServer::start(|_| Reply::status(500, "upstream exploded"));
    let out = run_openai(&fx, &server, &["--retries", "2"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("500"), "{stderr}");
    assert_eq!(summary_of(&out.stdout)["stop_reason"], "model_failure");
    assert_eq!(
        server.requests().len(),
        2,
        "two attempts, as --retries says"
    );
    assert_eq!(fx.repo.snapshot(), before);
    assert_eq!(fx.repo.worktrees().len(), 1);
    let log = fx.log();
    let failed: Vec<_> = log.iter().filter(|e| e["status"] == "FAILURE").collect();
    assert_eq!(failed.len(), 1);
    assert!(failed[0]["details"]["error"]
        .as_str()
        .unwrap()
        .contains("500"));
}

#[test]
fn useless_replies_give_up_with_exit_4_and_feed_back_reasons() {
    let fx = FixtureRepo::planned("single_module");
    let before = fx.repo.snapshot();
    // The model writes a plan, then diffs whose context does not exist.
    let server = plan_then("```diff\n--- a/stats.py\n+++ b/stats.py\n@@ -1,2 +1,2 @@\n-def nothing_like_this():\n-    pass\n+def fixed():\n+    pass\n```\n");
    let out = run_openai(&fx, &server, &["--max-iterations", "2"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "gave_up");
    assert_eq!(summary["attempts"], 0);
    assert_eq!(fx.repo.snapshot(), before);
    // Round 2's prompt carries round 1's rejection reason back to the model.
    let prompts: Vec<String> = server.requests().iter().map(prompt_of).collect();
    let later = prompts
        .iter()
        .rev()
        .find(|p| p.contains("Previous attempt") || p.contains("Earlier attempts"));
    let later = later.expect("a later prompt remembers the failed attempt");
    assert!(later.contains("rejected by the Reviewer"), "{later}");
    assert!(later.contains("nothing_like_this"), "{later}");
    assert_log_valid(&fx.log(), &["Auditor", "Fixer", "Reviewer", "System"]);
    let reviews: Vec<_> = fx
        .log()
        .into_iter()
        .filter(|e| e["agent"] == "Reviewer")
        .collect();
    assert!(!reviews.is_empty());
    assert!(reviews
        .iter()
        .all(|e| e["status"] == "SUCCESS" && e["details"]["verdict"] == "rejected"));
}

#[test]
fn a_run_that_accepts_nothing_leaves_no_empty_run_branch() {
    let fx = FixtureRepo::planned("single_module");
    let server = plan_then("```diff\n--- a/stats.py\n+++ b/stats.py\n@@ -1,2 +1,2 @@\n-def nothing_like_this():\n-    pass\n+def fixed():\n+    pass\n```\n");
    for _ in 0..2 {
        let out = run_openai(&fx, &server, &["--max-iterations", "1"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{stderr}");
        let summary = summary_of(&out.stdout);
        assert_eq!(summary["accepted"], 0);
        assert_eq!(summary["branch"], "", "{summary}");
        let run_id = summary["run_id"].as_str().unwrap();
        assert!(
            summary["inspect"]
                .as_str()
                .is_some_and(|i| i.contains(&format!("swarm/{run_id}/*"))),
            "{summary}"
        );
        assert!(stderr.contains("no run branch is kept"), "{stderr}");
        assert!(
            !stderr.contains("partial work is on the branch"),
            "{stderr}"
        );
    }
    // Two runs that accepted nothing: not one run branch left behind.
    let branches = fx
        .repo
        .git(&["for-each-ref", "--format=%(refname)", "refs/heads/swarm/"]);
    assert!(
        !branches.lines().any(|b| b.ends_with("/best")),
        "{branches}"
    );
}

#[test]
fn test_edits_are_rejected_unless_allowed() {
    let fx = FixtureRepo::planned("single_module");
    let server = plan_then("Delete the failing tests.\n```diff\n--- a/test_stats.py\n+++ b/test_stats.py\n@@ -1 +1 @@\n-\"\"\"Tests for stats.\"\"\"\n+\"\"\"Tests.\"\"\"\n```\n");
    let out = run_openai(&fx, &server, &["--max-iterations", "1"]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is a test file"), "{stderr}");
}

#[test]
fn ctrl_c_cleans_up_and_exits_130() {
    interrupted_by(libc::SIGINT);
}

#[test]
fn sigterm_is_handled_like_ctrl_c() {
    interrupted_by(libc::SIGTERM);
}

#[test]
fn sighup_is_handled_like_ctrl_c() {
    interrupted_by(libc::SIGHUP);
}

/// Sends `signal` to a run waiting on the model: exit 130, the worktree
/// removed, the user's repository untouched.
fn interrupted_by(signal: libc::c_int) {
    let fx = FixtureRepo::planned("single_module");
    let before = fx.repo.snapshot();
    // A model that takes its time, so the run is mid-call when interrupted.
    let server = LlmServer::start(|req| {
        Reply::text_for(req, "# plan").with_delay(std::time::Duration::from_secs(20))
    });
    let target = fx.target.to_string_lossy().into_owned();
    let base = format!("{}/v1", server.base_url());
    let cwd = fx.repo.tmp().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_swarm"))
        .current_dir(&cwd)
        .args(["--target_dir", &target])
        .env("HOME", &fx.repo.home)
        .env("OPENAI_API_KEY", FAKE_KEY)
        .env("OPENAI_BASE_URL", &base)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the model has been asked (the worktree exists by then).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while server.requests().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        !server.requests().is_empty(),
        "the run never reached the model"
    );
    assert_eq!(
        fx.repo.worktrees().len(),
        2,
        "the run's worktree exists mid-run"
    );
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(pid, signal) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert_eq!(fx.repo.worktrees().len(), 1);
    assert_eq!(fx.repo.snapshot(), before);
}

#[test]
fn a_token_budget_stops_the_run_cleanly_with_exit_4() {
    let fx = FixtureRepo::planned("single_module");
    let before = fx.repo.snapshot();
    let server = LlmServer::start(crate::support::fixture::good_model("single_module", ""));
    // The loopback server reports 12 + 34 tokens per call: the plan alone spends the budget.
    let out = run_openai(&fx, &server, &["--max-tokens-total", "40"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["stop_reason"], "budget");
    assert_eq!(summary["tokens"]["total"], 46);
    assert_eq!(server.requests().len(), 1);
    assert_eq!(fx.repo.snapshot(), before);
    assert!(stderr.contains("budget"), "{stderr}");
}

#[test]
fn jobs_bound_concurrent_model_calls() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let max_in_flight = |jobs: &str| {
        let fx = FixtureRepo::new("package");
        let good = crate::support::fixture::good_model("package", "");
        let (now, max) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (n, m) = (Arc::clone(&now), Arc::clone(&max));
        let server = LlmServer::start(move |req| {
            let current = n.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(current, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(400));
            n.fetch_sub(1, Ordering::SeqCst);
            good(req)
        });
        let out = run_openai(&fx, &server, &["--jobs", jobs]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        max.load(Ordering::SeqCst)
    };
    assert_eq!(max_in_flight("1"), 1);
    let parallel = max_in_flight("3");
    assert!(
        parallel >= 2,
        "with --jobs 3 at most {parallel} call(s) ran at once"
    );
    assert!(parallel <= 3);
}

#[test]
fn provider_faults_mid_run_are_retried_and_a_truncated_diff_is_never_applied() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let fx = FixtureRepo::planned("single_module");
    let start = fx.repo.head();
    let good = crate::support::fixture::good_model("single_module", "");
    let count = AtomicUsize::new(0);
    // Requests: the plan (429, then answered), the held-out tests, then the
    // fix (503, then cut off, then asked again).
    let server = LlmServer::start(move |req| match count.fetch_add(1, Ordering::SeqCst) {
        0 => Reply::status(429, "slow down").with_header("Retry-After", "1"),
        3 => Reply::html(503, "Service Unavailable"),
        4 => {
            // The good diff, cut off halfway, flagged as truncated.
            let full =
                crate::support::fixture::good_model_reply("single_module", "", &prompt_of(req));
            Reply::openai_truncated(&full[..full.len() / 2])
        }
        _ => good(req),
    });
    let out = run_openai(&fx, &server, &["--retries", "3"]);
    super::assert_fixed_and_delivered(&fx, &out, &start);
    let log = fx.log();
    let calls: Vec<_> = log
        .iter()
        .filter(|e| e["details"]["kind"] == "llm_call")
        .collect();
    assert_eq!(calls[2]["details"]["finish"], "length", "{}", calls[2]);
    assert!(calls[3]["details"]["input_prompt"]
        .as_str()
        .unwrap()
        .contains("cut off"));
    // Only whole diffs were committed: every attempt's stats.py parses as Python.
    let summary = summary_of(&out.stdout);
    for commit in summary["commits"].as_array().unwrap() {
        let text = fx
            .repo
            .git(&["show", &format!("{}:stats.py", commit.as_str().unwrap())]);
        assert!(swarm::analysis::check_syntax(&text).is_ok());
    }
    assert_eq!(
        server.requests().len() as u64,
        summary["tokens"]["calls"].as_u64().unwrap() + 2
    );
}

#[test]
fn a_cost_budget_uses_config_prices_and_stops_cleanly() {
    let fx = FixtureRepo::planned("single_module");
    // 12 input + 34 output tokens at 100,000 USD per million each: 4.60 USD per call.
    fx.repo.write(
        ".swarm.toml",
        "[prices.\"gpt-4o-mini\"]\ninput = 100000.0\noutput = 100000.0\n",
    );
    let start = fx.repo.head();
    let server = LlmServer::start(crate::support::fixture::good_model("single_module", ""));
    let out = run_openai(&fx, &server, &["--max-cost", "1"]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["stop_reason"], "budget");
    let cost = summary["tokens"]["cost_usd"].as_f64().unwrap();
    assert!((cost - 4.6).abs() < 1e-9, "{cost}");
    assert_eq!(fx.repo.head(), start);
}

/// The worktree is checked out while the interpreter is probed: when the
/// tools turn out missing (and `--no-bootstrap` forbids making them), the
/// run ends with the install hint, and the worktree, its run branch and its
/// folders are gone again: the repository is as it was.
#[test]
fn missing_tools_end_the_run_with_the_hint_and_leave_no_worktree_or_branch() {
    let fx = FixtureRepo::planned("single_module");
    let before = fx.repo.snapshot();
    let branches_before = fx.repo.git(&["branch", "--list", "--all"]);
    // A real interpreter without pytest and pylint: a bare virtualenv.
    let python = crate::support::python::make_venv(&fx.repo.tmp().join("bare-venv"), false);
    let server = LlmServer::start(|_| Reply::status(500, "never asked"));
    let base = format!("{}/v1", server.base_url());
    let target = fx.target.to_string_lossy().into_owned();
    let out = fx.swarm(
        &["--target_dir", &target, "--json", "--no-bootstrap"],
        &[
            ("OPENAI_API_KEY", FAKE_KEY),
            ("OPENAI_BASE_URL", &base),
            ("SWARM_PYTHON", &python.to_string_lossy()),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("pytest and pylint not found"), "{stderr}");
    assert!(stderr.contains("pip install pytest pylint"), "{stderr}");
    assert!(
        server.requests().is_empty(),
        "no model call before the tools"
    );
    assert_eq!(fx.repo.snapshot(), before);
    assert_eq!(fx.repo.worktrees(), vec![fx.repo.root.clone()]);
    assert_eq!(super::repos::leftover_runs(&fx), Vec::<String>::new());
    assert_eq!(fx.repo.git(&["branch", "--list", "--all"]), branches_before);
    // The checkout is kept as the spare the next run starts from.
    let spare = super::repos::spare_folder(&fx).expect("the worktree is kept as the spare");
    assert!(spare.join(&fx.target_rel).is_dir(), "{}", spare.display());
}
