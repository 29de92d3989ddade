//! Fail fast: before the audit, one `GET …/models` shows whether the model
//! endpoint is there. A server that is down, a wrong base URL (a web page,
//! a 404) or a rejected key ends the run with exit 2 and one line naming the
//! URL and what to check — before pytest or pylint run. `--no-preflight`
//! skips the check.

use std::net::TcpListener;
use std::process::Output;

use super::{run_openai, FAKE_KEY};
use crate::support::fixture::{good_model, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};

/// A loopback URL where nothing listens.
fn closed_port_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().expect("a bound address").port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

/// Asserts the run stopped at the preflight: exit 2, one line on stderr
/// naming `url` and `words`, no audit (no pytest or pylint in the log).
fn assert_stopped_before_the_audit(fx: &FixtureRepo, out: &Output, url: &str, words: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr:\n{stderr}");
    let error = stderr
        .lines()
        .find(|l| l.contains(url))
        .unwrap_or_else(|| panic!("no line names {url}:\n{stderr}"));
    for word in words {
        assert!(error.contains(word), "{word:?} not in {error:?}");
    }
    assert!(!stderr.contains("audit:"), "the audit ran:\n{stderr}");
    let log = fx.repo.tmp().join("cwd/logs/experiment_data.json");
    if log.exists() {
        let tools: Vec<_> = fx
            .log()
            .into_iter()
            .filter(|e| e["details"]["kind"] == "tool" || e["details"]["kind"] == "llm_call")
            .collect();
        assert!(tools.is_empty(), "tools or models ran: {tools:?}");
    }
    let summary = super::summary_of(&out.stdout);
    assert_eq!(summary["exit_code"], 2, "{summary}");
}

fn run_against(fx: &FixtureRepo, base: &str, extra: &[&str]) -> Output {
    let target = fx.target.to_string_lossy().into_owned();
    let mut args = vec!["--target_dir", &target, "--json"];
    args.extend_from_slice(extra);
    fx.swarm(
        &args,
        &[("OPENAI_API_KEY", FAKE_KEY), ("OPENAI_BASE_URL", base)],
    )
}

#[test]
fn a_server_that_is_down_fails_before_the_audit_naming_the_url() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let base = closed_port_url();
    let out = run_against(&fx, &base, &[]);
    assert_stopped_before_the_audit(
        &fx,
        &out,
        &format!("{base}/models"),
        &["connection refused", "OPENAI_BASE_URL", "--no-preflight"],
    );
    assert_eq!(fx.repo.head(), start);
}

#[test]
fn a_base_url_that_serves_a_web_page_or_nothing_is_not_the_api() {
    for (models, words) in [
        (
            Reply::html(200, "Router login"),
            &["web page", "OPENAI_BASE_URL"][..],
        ),
        (
            Reply::status(404, "Not Found"),
            &["no API at this address", "HTTP 404"][..],
        ),
        (
            Reply::json(401, &serde_json::json!({"error": {"message": "bad key"}})),
            &["key was rejected", "OPENAI_API_KEY"][..],
        ),
    ] {
        let fx = FixtureRepo::new("single_module");
        let server =
            LlmServer::start_with_models(models, good_model("single_module", &fx.target_rel));
        let out = run_openai(&fx, &server, &[]);
        let url = format!("{}/v1/models", server.base_url());
        assert_stopped_before_the_audit(&fx, &out, &url, words);
        assert!(server.requests().is_empty(), "a model call was made");
        assert_eq!(server.preflights().len(), 1);
        assert_eq!(
            server.preflights()[0].header("authorization"),
            Some(format!("Bearer {FAKE_KEY}").as_str())
        );
    }
}

#[test]
fn a_busy_server_passes_the_preflight_with_a_note() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let server = LlmServer::start_with_models(
        Reply::status(503, "overloaded"),
        good_model("single_module", &fx.target_rel),
    );
    let out = run_openai(&fx, &server, &[]);
    super::assert_fixed_and_delivered(&fx, &out, &start);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("HTTP 503 to the preflight"), "{stderr}");
}

#[test]
fn no_preflight_skips_the_check() {
    let fx = FixtureRepo::new("single_module");
    let base = closed_port_url();
    let out = run_against(&fx, &base, &["--no-preflight", "--retries", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr:\n{stderr}");
    assert!(
        stderr.contains("audit:"),
        "the audit did not run:\n{stderr}"
    );
    assert!(!stderr.contains("/v1/models"), "{stderr}");
}
