//! The README's first command: `swarm demo` on every bundled fixture, with
//! its recorded replay, no key and no network.

use serde_json::Value;

use crate::e2e::FAKE_KEY;
use crate::support::fixture::{
    fixture_dir, good_model, read_log, swarm_command, swarm_in, FixtureRepo,
};
use crate::support::llm_server::LlmServer;

const FIXTURES: &[&str] = &["single_module", "package", "monorepo_target", "no_tests"];

fn demo(name: &str) {
    let home = tempfile::tempdir().unwrap();
    let out = swarm_in(
        home.path(),
        home.path(),
        &["demo", "--fixture", name, "--json"],
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{name}: {stderr}\n{stdout}");
    assert!(stderr.contains("swarm success"), "{stderr}");
    assert!(
        stdout.contains("$ git log --all --graph --oneline"),
        "{stdout}"
    );
    assert!(
        stdout.contains("swarm/"),
        "the graph shows the run's branches: {stdout}"
    );
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["exit_code"], 0);
    // The whole summary, as `swarm --json` prints it, with the fixture.
    assert_eq!(last["fixture"], name);
    assert_eq!(last["status"], "success");
    assert!(
        last["run_id"].as_str().is_some_and(|id| !id.is_empty()),
        "{last}"
    );
    assert!(
        last["commits"].as_array().is_some_and(|c| !c.is_empty()),
        "{last}"
    );
    // The demo logs like a real run, in the working directory.
    let log = read_log(&home.path().join("logs/experiment_data.json"));
    assert!(log.iter().any(|e| e["agent"] == "Judge"));
}

#[test]
fn demo_single_module() {
    demo("single_module");
}

#[test]
fn demo_package() {
    demo("package");
}

#[test]
fn demo_monorepo_target() {
    demo("monorepo_target");
}

#[test]
fn demo_no_tests() {
    demo("no_tests");
}

#[test]
fn demo_lists_fixtures_and_refuses_unknown_ones() {
    let home = tempfile::tempdir().unwrap();
    let out = swarm_in(home.path(), home.path(), &["demo", "--list"], &[]);
    let listed = String::from_utf8_lossy(&out.stdout);
    for name in FIXTURES {
        // Each with its description.
        let line = listed
            .lines()
            .find(|l| l.split_whitespace().next() == Some(*name))
            .unwrap_or_else(|| panic!("{name} not in {listed}"));
        assert!(line.len() > name.len() + 20, "{line}");
    }
    let out = swarm_in(
        home.path(),
        home.path(),
        &["demo", "--fixture", "nope"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no fixture named `nope`"));
}

#[test]
fn a_reader_that_stops_early_ends_no_listing_with_a_panic() {
    // `swarm demo --list | head -0`: the reading end is gone before swarm
    // writes its first line.
    let home = tempfile::tempdir().unwrap();
    let mut child = swarm_command(home.path(), home.path(), &["demo", "--list"], &[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("swarm starts");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("swarm ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Re-records `fixtures/<name>/replay.json` from a run against the good
/// loopback model (run after changing prompts):
/// `cargo test --test it record_fixture_replays -- --ignored`.
#[test]
#[ignore = "writes into fixtures/; run by hand after changing prompts"]
fn record_fixture_replays() {
    let only = std::env::var("SWARM_FIXTURE").ok();
    for name in FIXTURES
        .iter()
        .filter(|n| only.as_deref().is_none_or(|o| o == **n))
    {
        let fx = FixtureRepo::new(name);
        let server = LlmServer::start(good_model(name, &fx.target_rel));
        let base = format!("{}/v1", server.base_url());
        let target = fx.target.to_string_lossy().into_owned();
        let out = fx.swarm(
            &["--target_dir", &target, "--model", "gpt-4o-mini"],
            &[("OPENAI_API_KEY", FAKE_KEY), ("OPENAI_BASE_URL", &base)],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Only the model calls: replay needs nothing else, and tool entries
        // name temporary paths.
        let calls: Vec<Value> = fx
            .log()
            .into_iter()
            .filter(|e| e["details"]["kind"] == "llm_call")
            .collect();
        let text = serde_json::to_string_pretty(&calls).unwrap();
        std::fs::write(fixture_dir(name).join("replay.json"), text.clone() + "\n").unwrap();
        assert!(
            !text.contains(fx.repo.tmp().to_str().unwrap()),
            "a prompt names a temporary path"
        );
    }
}
