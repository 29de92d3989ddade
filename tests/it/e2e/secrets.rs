//! Secrets in the code never leave the machine, end to end: a repository
//! holding an AWS key pair, a Stripe key, a GitHub token and a private key
//! block, with the bug in the same function as the token. Every prompt
//! shows placeholders instead (a failing test's message that prints the
//! token included), the model's diff written against them is mapped back
//! so the delivered file keeps every secret byte for byte, the log and the
//! report hold none, and the summary says how many were withheld and
//! where. A reply that changes a secret is refused; `--allow-secrets`
//! sends them as they are, with a notice.

use super::{run_openai, summary_of};
use crate::support::fixture::{prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};
use crate::support::repo::TestRepo;

const AWS_ID: &str = "AKIAZ3MXQ7PLV4N2HB6C";
const AWS_SECRET: &str = "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";
const STRIPE: &str = "sk_live_51HqLyjWDarjtT1zdp7dc4eC39";
const GITHUB: &str = "ghp_Wq8zR2tY6uI0oP4aS9dF3gH7jK1lZ5xC2vB8";
const KEY_LINES: [&str; 2] = [
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    "QyNTUxOQAAACBWk5Xg7hT0aQ2mZx9LcPq3RvN8sY1kF4dJ6hB0tG7uEwAAAJgK9fX3CvX1",
];

fn client() -> String {
    format!(
        "\"\"\"Client of the billing service.\"\"\"\n\n\
         AWS_ACCESS_KEY_ID = \"{AWS_ID}\"\nAWS_SECRET_ACCESS_KEY = \"{AWS_SECRET}\"\n\
         STRIPE_KEY = \"{STRIPE}\"\n\n\n\
         def endpoint(host):\n    \"\"\"The service's URL on host, with the API token.\"\"\"\n    \
         token = \"{GITHUB}\"\n    return \"http://\" + host + \"/api?token=\" + token\n"
    )
}

fn deploy_key() -> String {
    format!(
        "\"\"\"The deploy key.\"\"\"\n\nDEPLOY_KEY = \"\"\"-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n{}\n\
         -----END OPENSSH PRIVATE KEY-----\n\"\"\"\n",
        KEY_LINES[0], KEY_LINES[1]
    )
}

const TESTS: &str = "from client import AWS_ACCESS_KEY_ID, endpoint\n\n\n\
def test_the_endpoint_is_https():\n    assert endpoint(\"billing.example\").startswith(\"https://billing.example/api?token=\")\n\n\n\
def test_the_key_id_is_set():\n    assert AWS_ACCESS_KEY_ID.startswith(\"AKIA\")\n";

const PLAN: &str =
    "# Refactoring plan\n\n## Summary\n\nThe endpoint is not secure.\n\n## client.py\n\n\
- **Type**: bug\n  **Severity**: high\n  **Location**: `endpoint()`, line 11\n  \
**Description**: the URL uses http.\n  **Suggested fix**: Use https.\n";

const HELD_OUT: &str = "from client import endpoint\n\n\n\
def test_another_host_is_https():\n    assert endpoint(\"shop.example\").startswith(\"https://shop.example/\")\n";

/// Every secret value of the repository.
fn secrets() -> Vec<&'static str> {
    let mut all = vec![AWS_ID, AWS_SECRET, STRIPE, GITHUB];
    all.extend(KEY_LINES);
    all
}

fn secrets_repo() -> FixtureRepo {
    let repo = TestRepo::with_files(&[
        ("client.py", &client()),
        ("deploy_key.py", &deploy_key()),
        ("test_client.py", TESTS),
    ]);
    let target = repo.root.clone();
    FixtureRepo {
        name: "secrets".into(),
        repo,
        target,
        target_rel: String::new(),
    }
}

/// The text of `client.py` a fix prompt shows.
fn shown_client(prompt: &str) -> Option<String> {
    let marker = "## Current text of `client.py`\n```python\n";
    let start = prompt.rfind(marker)? + marker.len();
    let end = prompt[start..].find("\n```\n")? + start;
    Some(format!("{}\n", &prompt[start..end]))
}

/// Plans, writes the held-out test, and answers a fix request for
/// `client.py` with `fix` applied to the text it was shown, as a diff.
fn model(fix: fn(&str) -> String) -> LlmServer {
    LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        let text = if prompt.starts_with("Write a refactoring plan") {
            PLAN.to_string()
        } else if prompt.starts_with("Write held-out pytest tests for `client.py`") {
            format!("```python\n{HELD_OUT}```\n")
        } else if let Some(current) = prompt
            .starts_with("Fix and improve `client.py`")
            .then(|| shown_client(&prompt))
            .flatten()
        {
            let diff = similar::TextDiff::from_lines(&current, &fix(&current))
                .unified_diff()
                .context_radius(3)
                .header("a/client.py", "b/client.py")
                .to_string();
            format!("Use https.\n\n```diff\n{diff}```\n")
        } else {
            "This file looks fine as it is; no change is needed.".to_string()
        };
        Reply::text_for(req, &text)
    })
}

fn use_https(text: &str) -> String {
    text.replace("\"http://\"", "\"https://\"")
}

#[test]
fn secrets_never_reach_the_model_the_log_or_the_report_and_stay_byte_for_byte() {
    let fx = secrets_repo();
    let server = model(use_https);
    let out = run_openai(&fx, &server, &["--test-timeout", "30"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    // Delivered: the fix is in, every secret exactly as it was.
    assert_eq!(fx.repo.read("client.py"), use_https(&client()));
    assert_eq!(fx.repo.read("deploy_key.py"), deploy_key());

    // No request carried a secret; the fix prompts showed placeholders,
    // the token in the function to fix and in the failing test's message.
    let requests = server.requests();
    for request in &requests {
        let body = request.body_text();
        for secret in secrets() {
            assert!(!body.contains(secret), "a request carried {secret}");
        }
    }
    let fix_prompt = requests
        .iter()
        .map(prompt_of)
        .find(|p| p.starts_with("Fix and improve `client.py`"))
        .expect("a fix prompt");
    assert!(fix_prompt.contains("token = \"[SECRET_"), "{fix_prompt}");
    assert!(fix_prompt.contains("AWS_ACCESS_KEY_ID = \"[SECRET_1_AWS_ACCESS_KEY]\""));
    assert!(
        requests.iter().any(|r| r
            .body_text()
            .contains("Keep every placeholder exactly as it is")),
        "the model is told what placeholders are"
    );

    // Neither the log nor the reports hold one.
    let logs = fx.repo.tmp().join("cwd/logs");
    let log = std::fs::read_to_string(logs.join("experiment_data.json")).unwrap();
    assert!(log.contains("[SECRET_"), "the log shows the placeholders");
    let mut pages = 0;
    for entry in std::fs::read_dir(&logs).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        pages += usize::from(path.extension().is_some_and(|e| e == "html"));
        for secret in secrets() {
            assert!(!text.contains(secret), "{} holds {secret}", path.display());
        }
    }
    assert!(pages >= 2, "report.html and the run's report were written");

    // The summary says how many, and where.
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["secrets"]["withheld"], 5, "{summary}");
    assert_eq!(
        summary["secrets"]["places"],
        serde_json::json!([
            "client.py:3 (AWS access key id)",
            "client.py:4 (AWS secret access key)",
            "client.py:5 (Stripe key)",
            "client.py:10 (GitHub token)",
            "deploy_key.py:4 (private key)",
        ]),
        "{summary}"
    );
    assert!(
        stderr.contains("secrets:  5 withheld from the model and the log"),
        "{stderr}"
    );
}

#[test]
fn a_reply_that_changes_a_secret_is_refused() {
    let fx = secrets_repo();
    let start = fx.repo.head();
    let server = model(|text| {
        use_https(text).replace(
            "token = \"[SECRET_4_GITHUB_TOKEN]\"",
            "token = \"ghp_000000000000000000000000000000000000\"",
        )
    });
    let out = run_openai(&fx, &server, &["--max-iterations", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "stderr:\n{stderr}");
    assert_eq!(fx.repo.head(), start);
    assert_eq!(fx.repo.read("client.py"), client());
    let rules: Vec<String> = fx
        .log()
        .iter()
        .filter(|e| e["agent"] == "Reviewer")
        .filter_map(|e| e["details"]["rule"].as_str().map(str::to_string))
        .collect();
    assert_eq!(rules, ["secret_changed"]);
    assert!(
        stderr.contains("alters or removes the GitHub token on line 10"),
        "{stderr}"
    );
}

#[test]
fn allow_secrets_sends_them_as_they_are_and_says_so() {
    let fx = secrets_repo();
    let server = model(use_https);
    let out = run_openai(&fx, &server, &["--allow-secrets", "--test-timeout", "30"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    assert!(stderr.contains("--allow-secrets"), "{stderr}");
    assert!(server
        .requests()
        .iter()
        .any(|r| r.body_text().contains(GITHUB)));
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["secrets"]["allowed"], true, "{summary}");
    assert_eq!(fx.repo.read("client.py"), use_https(&client()));
}
