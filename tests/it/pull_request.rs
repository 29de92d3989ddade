//! The Action proposes a delivered run as one pull request, for real: the
//! Action's run step (`hooks/action.sh`) with the real binary on a real
//! repository with a bare `origin`, replayed model replies, and a loopback
//! server speaking the part of GitHub's REST API swarm uses.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::install::{action_command, add_origin};
use crate::support::fixture::{fixture_dir, FixtureRepo};
use crate::support::github::GitHubServer;

const REPO: &str = "acme/shop";
const TOKEN: &str = "ghs_job_token_for_the_test";

/// The Action's run step as GitHub runs it, asked for a pull request.
fn action_run(
    fixture: &FixtureRepo,
    github: &GitHubServer,
    args: &str,
    step: &Path,
    outputs: &Path,
) -> Output {
    action_command(fixture, args, step, outputs)
        .env("SWARM_ACTION_PULL_REQUEST", "true")
        .env("SWARM_PR_LABELS", "swarm,refactoring")
        .env("SWARM_PR_DRAFT", "true")
        .env("GITHUB_API_URL", github.api_url())
        .env("GITHUB_REPOSITORY", REPO)
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_SERVER_URL", "https://github.example")
        .env("GITHUB_RUN_ID", "4242")
        .output()
        .unwrap()
}

fn output_of(outputs: &Path, key: &str) -> String {
    fs::read_to_string(outputs)
        .unwrap()
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_delivered_run_opens_one_pull_request_and_the_next_run_updates_it() {
    let fixture = FixtureRepo::new("single_module");
    add_origin(&fixture);
    let github = GitHubServer::start(REPO, TOKEN);
    let cassette = fixture_dir("single_module").join("replay.json");
    let args = format!("--provider replay --cassette {}", cassette.display());
    let head = fixture.repo.head();
    let step = fixture.repo.tmp().join("step-summary.md");
    let outputs = fixture.repo.tmp().join("outputs.txt");

    let out = action_run(&fixture, &github, &args, &step, &outputs);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pulls = github.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    let pull = &pulls[0];
    assert_eq!(pull.title, "swarm: 8/8 tests pass (were 4/8)");
    assert_eq!(pull.base, "main");
    assert!(pull.draft);
    assert_eq!(pull.labels, ["swarm", "refactoring"]);
    assert!(
        pull.head.starts_with("swarm/pr/root-repair-"),
        "{}",
        pull.head
    );
    for part in [
        "| tests passing | 4/8 | 8/8 |",
        "### What verified each changed file",
        "### What was withheld from the model",
        "### Commits",
        "[the CI run](https://github.example/acme/shop/actions/runs/4242)",
        "### How to undo",
        "<!-- swarm-pull-request: ",
    ] {
        assert!(pull.body.contains(part), "{part} not in:\n{}", pull.body);
    }
    // The branch on origin holds the run's result; the checkout is untouched.
    assert_eq!(fixture.repo.head(), head);
    let pushed = fixture
        .repo
        .git(&["ls-remote", "origin", &format!("refs/heads/{}", pull.head)]);
    let best = fixture
        .repo
        .git(&["rev-parse", &output_of(&outputs, "branch")]);
    assert!(pushed.starts_with(best.trim()), "{pushed} vs {best}");
    assert_eq!(output_of(&outputs, "pull-request-number"), "1");
    let text = fs::read_to_string(&step).unwrap();
    assert!(
        text.contains("Pull request #1 opened: https://github.example/pulls/1"),
        "{text}"
    );
    // Only the job's token, as a bearer token, on every request.
    assert!(github
        .requests()
        .iter()
        .all(|r| r.header("authorization") == Some(&format!("Bearer {TOKEN}"))));

    // The same target and instruction again: the open pull request is updated.
    let first_requests = github.requests().len();
    let out = action_run(&fixture, &github, &args, &step, &outputs);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pulls = github.pulls();
    assert_eq!(
        pulls.len(),
        1,
        "a second pull request was opened: {pulls:?}"
    );
    let second: Vec<String> = github.requests()[first_requests..]
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r.method,
                r.path.split('?').next().unwrap_or_default()
            )
        })
        .collect();
    assert!(
        second.contains(&format!("PATCH /repos/{REPO}/pulls/1")),
        "{second:?}"
    );
    assert!(
        !second.contains(&format!("POST /repos/{REPO}/pulls")),
        "{second:?}"
    );
    let text = fs::read_to_string(&step).unwrap();
    assert!(text.contains("Pull request #1 updated"), "{text}");
    let run_ids: Vec<&str> = pulls[0].body.matches("(run `").collect();
    assert_eq!(run_ids.len(), 1);
}

#[test]
fn a_run_that_delivers_nothing_opens_nothing_and_says_why() {
    let fixture = FixtureRepo::new("single_module");
    add_origin(&fixture);
    let github = GitHubServer::start(REPO, TOKEN);
    let step = fixture.repo.tmp().join("step-summary.md");
    let outputs = fixture.repo.tmp().join("outputs.txt");
    // No provider key: the run stops before any model call.
    let out = action_run(&fixture, &github, "", &step, &outputs);
    assert_eq!(out.status.code(), Some(1));
    assert!(github.requests().is_empty(), "{:?}", github.requests());
    assert!(github.pulls().is_empty());
    let text = fs::read_to_string(&step).unwrap();
    assert!(text.contains("No pull request: the run failed:"), "{text}");
    let pushed = fixture
        .repo
        .git(&["ls-remote", "origin", "refs/heads/swarm/*"]);
    assert_eq!(pushed, "", "nothing pushed");
}

#[test]
fn a_refused_token_is_one_line_naming_the_permissions() {
    let fixture = FixtureRepo::new("single_module");
    add_origin(&fixture);
    let github = GitHubServer::start(REPO, "another-token");
    let cassette = fixture_dir("single_module").join("replay.json");
    let step = fixture.repo.tmp().join("step-summary.md");
    let outputs = fixture.repo.tmp().join("outputs.txt");
    let args = format!("--provider replay --cassette {}", cassette.display());
    let out = action_run(&fixture, &github, &args, &step, &outputs);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("HTTP 401: Bad credentials"), "{stderr}");
    assert!(!stderr.contains(TOKEN), "{stderr}");
    assert!(github.pulls().is_empty());
}
