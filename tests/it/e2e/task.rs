//! Refactoring on request, end to end: `swarm --task "..."` with the real
//! binary, git, pytest and pylint, and a loopback model scripted per
//! request (the plan request, then each task's requests, told apart by
//! what they show). What a user checks: the files after the run, that the
//! old imports still work, the `Swarm-Task` trailers, the summary's tasks
//! and the exit code.

mod cases;
mod honesty;
mod interfaces;
mod modules;
mod moves;
mod package;
mod projects;
mod renames;
mod shapes;
mod typescript;

use serde_json::Value;

use super::{run_openai, summary_of};
pub use crate::support::fixture::FixtureRepo as Repo;
use crate::support::fixture::{prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};
use crate::support::repo::TestRepo;

/// A repository holding `files`, committed on `main`.
pub fn repo(files: &[(&str, &str)]) -> FixtureRepo {
    let repo = TestRepo::with_files(files);
    let target = repo.root.clone();
    FixtureRepo {
        name: "task".into(),
        repo,
        target,
        target_rel: String::new(),
    }
}

/// A fenced unified diff of `path` from `before` to `after` (`None`: the
/// file does not exist on that side).
pub fn diff(path: &str, before: Option<&str>, after: Option<&str>) -> String {
    let old = if before.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".into()
    };
    let new = if after.is_some() {
        format!("b/{path}")
    } else {
        "/dev/null".into()
    };
    let body = similar::TextDiff::from_lines(before.unwrap_or(""), after.unwrap_or(""))
        .unified_diff()
        .context_radius(3)
        .header(&old, &new)
        .to_string();
    format!("```diff\n{body}```\n")
}

/// Which request a prompt is: `None` for the plan, `Some(n)` for task n.
pub fn task_number(prompt: &str) -> Option<usize> {
    let rest = prompt.strip_prefix("Carry out task ")?;
    rest.split_whitespace().next()?.parse().ok()
}

/// A model that answers the plan request with `plan` and each task
/// request with `answer(task, prompt)`.
pub fn model(
    plan: String,
    answer: impl Fn(usize, &str) -> String + Send + Sync + 'static,
) -> LlmServer {
    LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        let text = if prompt.starts_with("Plan the user's refactoring instruction") {
            plan.clone()
        } else if let Some(n) = task_number(&prompt) {
            answer(n, &prompt)
        } else {
            format!("unexpected request: {prompt}")
        };
        Reply::text_for(req, &text)
    })
}

/// The task requests the model received, as (task, prompt).
pub fn task_prompts(server: &LlmServer) -> Vec<(usize, String)> {
    server
        .requests()
        .iter()
        .map(prompt_of)
        .filter_map(|p| task_number(&p).map(|n| (n, p)))
        .collect()
}

/// Runs `swarm --task instruction` with `--json`.
pub fn run_task(
    fx: &FixtureRepo,
    server: &LlmServer,
    instruction: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec!["--task", instruction];
    if !extra.contains(&"--max-iterations") {
        args.extend(["--max-iterations", "8"]);
    }
    args.extend_from_slice(extra);
    run_openai(fx, server, &args)
}

/// The summary's tasks, each as (title, status).
pub fn statuses(summary: &Value) -> Vec<(String, String)> {
    summary["tasks"]["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("no tasks in the summary: {summary}"))
        .iter()
        .map(|t| {
            (
                t["title"].as_str().unwrap_or_default().to_string(),
                t["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Asserts a run succeeded and delivered; the summary.
pub fn assert_delivered(fx: &FixtureRepo, out: &std::process::Output, start: &str) -> Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    assert_ne!(fx.repo.head(), start, "the user's branch did not move");
    assert!(
        fx.repo.git(&["status", "--porcelain"]).is_empty(),
        "the working tree is not clean"
    );
    summary
}

/// Runs `code` with the repository's Python on the user's checkout; its
/// stdout, trimmed.
pub fn python(fx: &FixtureRepo, code: &str) -> String {
    let out = std::process::Command::new("python3")
        .args(["-B", "-c", code])
        .current_dir(&fx.repo.root)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python3 -c {code:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The `Swarm-Task` trailers of the commits between `start` and HEAD.
pub fn task_trailers(fx: &FixtureRepo, start: &str) -> Vec<String> {
    fx.repo
        .git(&[
            "log",
            "--format=%(trailers:key=Swarm-Task,valueonly)",
            &format!("{start}..HEAD"),
        ])
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}
