//! The same end-to-end run through every provider's wire format, plus
//! record → replay and the secret-key audit.

use std::path::Path;

use serde_json::Value;

use super::{assert_fixed_and_delivered, summary_of, FAKE_KEY};
use crate::support::fixture::{good_model, FixtureRepo};
use crate::support::llm_server::LlmServer;

#[test]
fn gemini_end_to_end() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let server = LlmServer::start(good_model("single_module", &fx.target_rel));
    let target = fx.target.to_string_lossy().into_owned();
    let base = server.base_url();
    let out = fx.swarm(
        &[
            "--target_dir",
            &target,
            "--json",
            "--model",
            "gemini-2.5-flash",
        ],
        &[("GEMINI_API_KEY", FAKE_KEY), ("GEMINI_BASE_URL", &base)],
    );
    assert_fixed_and_delivered(&fx, &out, &start);
    let requests = server.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(
            r.path,
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(r.header("x-goog-api-key"), Some(FAKE_KEY));
        assert!(!r.path.contains(FAKE_KEY));
    }
    let preflights = server.preflights();
    assert_eq!(preflights.len(), 1, "one preflight before the audit");
    assert_eq!(preflights[0].path, "/v1beta/models");
    assert_eq!(preflights[0].header("x-goog-api-key"), Some(FAKE_KEY));
    let msg = fx.repo.git(&["log", "-1", "--format=%B", "HEAD"]);
    assert!(msg.contains("Swarm-Model: gemini-2.5-flash"), "{msg}");
}

#[test]
fn anthropic_end_to_end() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let server = LlmServer::start(good_model("single_module", &fx.target_rel));
    let target = fx.target.to_string_lossy().into_owned();
    let base = server.base_url();
    let out = fx.swarm(
        &["--target_dir", &target, "--json", "--provider", "anthropic"],
        &[
            ("ANTHROPIC_API_KEY", FAKE_KEY),
            ("ANTHROPIC_BASE_URL", &base),
        ],
    );
    assert_fixed_and_delivered(&fx, &out, &start);
    for r in server.requests() {
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some(FAKE_KEY));
    }
    let preflights = server.preflights();
    assert_eq!(preflights.len(), 1, "one preflight before the audit");
    assert_eq!(preflights[0].path, "/v1/models");
    assert_eq!(preflights[0].header("x-api-key"), Some(FAKE_KEY));
    assert!(preflights[0].header("anthropic-version").is_some());
}

/// Every file under `dir` (including .git objects, decompressed) as text.
fn files_containing(dir: &Path, needle: &str, hits: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_containing(&path, needle, hits);
        } else if let Ok(bytes) = std::fs::read(&path) {
            if String::from_utf8_lossy(&bytes).contains(needle) {
                hits.push(path.display().to_string());
            }
        }
    }
}

#[test]
fn recorded_run_replays_offline_to_the_same_trees_and_the_key_leaks_nowhere() {
    // Record a run against the loopback model.
    let fx = FixtureRepo::new("package");
    let start = fx.repo.head();
    let server = LlmServer::start(good_model("package", &fx.target_rel));
    let target = fx.target.to_string_lossy().into_owned();
    let cassette = fx.repo.tmp().join("cassette.json");
    let base = format!("{}/v1", server.base_url());
    let out = fx.swarm(
        &[
            "--target_dir",
            &target,
            "--json",
            "-v",
            // The loopback server stands for a hosted model, as the replay
            // below does (a local model's shorter budget changes prompts).
            "--local-model",
            "false",
            "--record",
            cassette.to_str().unwrap(),
        ],
        &[("OPENAI_API_KEY", FAKE_KEY), ("OPENAI_BASE_URL", &base)],
    );
    assert_fixed_and_delivered(&fx, &out, &start);
    let recorded = summary_of(&out.stdout);

    // The key appears in no output, no file of the repository (git objects
    // included: `git grep` over every commit), the log or the cassette.
    for stream in [&out.stdout, &out.stderr] {
        assert!(!String::from_utf8_lossy(stream).contains(FAKE_KEY));
    }
    let mut hits = Vec::new();
    files_containing(fx.repo.tmp(), FAKE_KEY, &mut hits);
    assert!(hits.is_empty(), "the key leaked into {hits:?}");
    let all_revs = fx.repo.git(&["rev-list", "--all"]);
    for rev in all_revs.lines() {
        assert!(
            !fx.repo.git_ok(&["grep", "-q", FAKE_KEY, rev]),
            "the key is in commit {rev}"
        );
        assert!(!fx
            .repo
            .git(&["log", "-1", "--format=%B", rev])
            .contains(FAKE_KEY));
    }

    // Replay the cassette offline on a fresh copy: same trees, commit by commit,
    // and every request matched its recording by hash (prompts are deterministic).
    let (again, replayed) = replay_on_fresh_copy("package", &cassette);
    assert_eq!(hashes(&fx.log()), hashes(&again.log()));
    assert_eq!(recorded["attempts"], replayed["attempts"]);
    assert_eq!(trees(&fx, &recorded), trees(&again, &replayed));

    // The experiment log replays too.
    let log = fx.repo.tmp().join("cwd/logs/experiment_data.json");
    let (third, from_log) = replay_on_fresh_copy("package", &log);
    assert_eq!(trees(&fx, &recorded), trees(&third, &from_log));
}

/// Runs `--provider replay --cassette FILE` on a fresh copy of a fixture and
/// checks it is fixed and delivered; returns the copy and the summary.
fn replay_on_fresh_copy(name: &str, cassette: &Path) -> (FixtureRepo, Value) {
    let fx = FixtureRepo::new(name);
    let target = fx.target.to_string_lossy().into_owned();
    let start = fx.repo.head();
    let args = [
        "--target_dir",
        &target,
        "--json",
        "--provider",
        "replay",
        "--cassette",
        cassette.to_str().unwrap(),
    ];
    let out = fx.swarm(&args, &[]);
    assert_fixed_and_delivered(&fx, &out, &start);
    let summary = summary_of(&out.stdout);
    (fx, summary)
}

/// The request hashes of a log's model calls, in order.
fn hashes(log: &[Value]) -> Vec<String> {
    log.iter()
        .filter(|e| e["details"]["kind"] == "llm_call")
        .map(|e| e["details"]["request_hash"].as_str().unwrap().to_string())
        .collect()
}

/// The tree of every commit a run made.
fn trees(fx: &FixtureRepo, summary: &Value) -> Vec<String> {
    summary["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            fx.repo
                .git(&["rev-parse", &format!("{}^{{tree}}", c.as_str().unwrap())])
        })
        .collect()
}
