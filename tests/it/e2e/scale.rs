//! A repository of a real size: 1,000 small clean modules in a few
//! packages, one buggy module whose bug fails two tests. The run ends green
//! and no request is larger than the plan allowance, whatever the size of
//! the repository.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use super::{summary_of, FAKE_KEY};
use crate::support::fixture::{prompt_of, read_log, swarm_in};
use crate::support::llm_server::{LlmServer, RecordedRequest, Reply};
use crate::support::repo::TestRepo;
use crate::support::scale::{write_project, RequestKind, ScaleProject};
use crate::support::system_env;

/// The most characters of system and user text one request may hold: the
/// default plan allowance of 16,000 tokens is about 48,000 characters; the
/// rest is room for the token estimate's slack.
const MAX_REQUEST_CHARS: usize = 64_000;

/// A generated project of `files` Python files, committed on `main`.
fn committed_project(files: usize) -> (TestRepo, ScaleProject, String) {
    let repo = TestRepo::empty();
    let project = write_project(&repo.root, files);
    repo.git(&["init", "--quiet", "--initial-branch=main"]);
    repo.git(&["config", "user.name", "Repo User"]);
    repo.git(&["config", "user.email", "repo@example.com"]);
    let start = repo.commit_all("import the project");
    (repo, project, start)
}

/// Runs the machine's python3 (with pytest and pylint) in `dir`.
fn python(dir: &Path, args: &[&str]) -> Output {
    Command::new(system_env().python)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("python3 can be started")
}

/// The system prompt of an OpenAI chat request.
fn system_of(request: &RecordedRequest) -> String {
    request.body_json()["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str())
        .collect()
}

/// Characters of every message of an OpenAI chat request.
fn chars_of(request: &RecordedRequest) -> usize {
    request.body_json()["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
        .map(|text| text.chars().count())
        .sum()
}

/// The head of a long text, for an assertion message.
fn head(text: &[u8]) -> String {
    String::from_utf8_lossy(text).chars().take(3_000).collect()
}

/// What the benchmark and the test below rely on: the bug fails exactly
/// the two named tests, the model's diff applies and fixes them, and every
/// other module is clean for pylint (no duplicate code across modules).
#[test]
fn a_generated_project_has_one_bug_failing_two_tests_and_lints_clean() {
    let (repo, project, _) = committed_project(200);
    let python_files = repo.git(&["ls-files", "*.py"]).lines().count();
    assert_eq!(python_files, 200);

    let pytest = ["-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider"];
    let before = python(&repo.root, &pytest);
    let report = String::from_utf8_lossy(&before.stdout);
    assert!(report.contains("2 failed, 2 passed"), "{report}");
    for test in &project.failing_tests {
        assert!(report.contains(&format!("FAILED {test}")), "{report}");
    }

    let reply = project.fix_reply();
    let diff = reply
        .split_once("```diff\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(diff, _)| diff)
        .expect("the fix reply holds a fenced diff");
    std::fs::write(repo.tmp().join("fix.patch"), diff).expect("write the patch");
    let patch = repo.tmp().join("fix.patch").to_string_lossy().into_owned();
    repo.git(&["apply", &patch]);
    assert_eq!(repo.read(&project.buggy_path), project.fixed_text());
    let after = python(&repo.root, &pytest);
    let report = String::from_utf8_lossy(&after.stdout);
    assert!(report.contains("4 passed"), "{report}");

    let files = repo.git(&["ls-files", "*.py"]);
    let mut pylint = vec!["-m", "pylint", "--score=y", "--persistent=n"];
    pylint.extend(files.lines());
    let lint = python(&repo.root, &pylint);
    let report = String::from_utf8_lossy(&lint.stdout);
    assert!(lint.status.success(), "pylint found messages:\n{report}");
    assert!(report.contains("rated at 10.00/10"), "{report}");
}

/// Runs swarm on `repo` against `server` with `--json`, from a folder of
/// its own; the log is in `cwd/logs`.
fn run_against(repo: &TestRepo, server: &LlmServer) -> (Output, std::path::PathBuf) {
    let cwd = repo.tmp().join("cwd");
    std::fs::create_dir_all(&cwd).expect("create cwd");
    let root = repo.root.to_string_lossy().into_owned();
    let base = format!("{}/v1", server.base_url());
    let out = swarm_in(
        &cwd,
        &repo.home,
        &["--target_dir", &root, "--json"],
        &[("OPENAI_API_KEY", FAKE_KEY), ("OPENAI_BASE_URL", &base)],
    );
    (out, cwd)
}

/// A loopback model that answers `project`'s requests as a good model would.
fn good_model_server(project: &ScaleProject) -> LlmServer {
    let model = project.clone();
    LlmServer::start(move |request| {
        Reply::text_for(
            request,
            &model.reply(&system_of(request), &prompt_of(request)),
        )
    })
}

/// The first line of each request the model received.
fn first_lines(server: &LlmServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| prompt_of(r).lines().next().unwrap_or_default().to_string())
        .collect()
}

/// The failing tests import the `billing` package, whose `__init__.py` only
/// re-exports `apply_discount` from `billing/discounts.py`: the Fixer is
/// asked about the module that defines it, once, and about nothing else.
#[test]
fn the_fixer_follows_a_package_re_export_to_the_module_that_defines_the_name() {
    let (repo, project, start) = committed_project(40);
    let server = good_model_server(&project);
    let (out, _) = run_against(&repo, &server);

    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", head(&out.stderr));
    assert_ne!(repo.head(), start, "HEAD did not move");
    assert_eq!(repo.read(&project.buggy_path), project.fixed_text());
    let kinds: Vec<RequestKind> = server
        .requests()
        .iter()
        .map(|r| project.classify(&system_of(r), &prompt_of(r)))
        .collect();
    assert_eq!(
        kinds,
        vec![
            RequestKind::Plan,
            RequestKind::HeldOut,
            RequestKind::FixBuggy
        ],
        "requests: {:?}",
        first_lines(&server)
    );
}

/// The plan also names a clean module; the model answers that it needs no
/// change. That is an answer: it is not asked again, in this round or the
/// next, and the run still ends green with the bug fixed.
#[test]
fn a_reply_that_finds_nothing_to_change_is_not_asked_again() {
    let (repo, project, start) = committed_project(40);
    let clean = repo
        .git(&["ls-files", "*.py"])
        .lines()
        .find(|f| f.matches('/').count() == 2 && !f.ends_with("__init__.py"))
        .expect("a clean module in a subpackage")
        .to_string();
    let model = project.clone();
    let planned = clean.clone();
    let server = LlmServer::start(move |request| {
        let (system, user) = (system_of(request), prompt_of(request));
        let text = match model.classify(&system, &user) {
            RequestKind::Plan => format!(
                "{}\n## {planned}\n\n- **Type**: style\n  **Severity**: low\n  **Location**: \
                 module\n  **Description**: check the names.\n  **Suggested fix**: rename if \
                 unclear.\n",
                model.plan()
            ),
            RequestKind::FixBuggy => model.fix_reply(),
            RequestKind::FixOther => {
                "NO CHANGE: the names in this module are already clear.".to_string()
            }
            RequestKind::HeldOut => "No held-out tests.".to_string(),
        };
        Reply::text_for(request, &text)
    });
    let (out, cwd) = run_against(&repo, &server);

    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", head(&out.stderr));
    assert_ne!(repo.head(), start, "HEAD did not move");
    assert_eq!(repo.read(&project.buggy_path), project.fixed_text());
    let changed = repo.git(&["diff", "--name-only", &start, "HEAD"]);
    assert_eq!(changed, project.buggy_path, "only the bug was changed");
    // Fix requests only: the Tester asks once for tests of the untested file.
    let about_clean: Vec<String> = first_lines(&server)
        .into_iter()
        .filter(|line| line.contains(&format!("`{clean}`")) && !line.starts_with("Write pytest"))
        .collect();
    assert_eq!(about_clean.len(), 1, "asked about {clean}: {about_clean:?}");
    assert!(stderr.contains("nothing to change"), "{stderr}");

    let log = read_log(&cwd.join("logs/experiment_data.json"));
    let declined: Vec<&Value> = log
        .iter()
        .filter(|e| {
            e["details"]["kind"] == "llm_call"
                && e["action"] != "CODE_GEN"
                && e["details"]["file"] == clean.as_str()
        })
        .collect();
    assert_eq!(declined.len(), 1, "{declined:?}");
    assert!(declined[0]["details"]["output_response"]
        .as_str()
        .is_some_and(|r| r.starts_with("NO CHANGE")));
}

#[test]
fn a_thousand_file_repository_is_fixed_with_every_request_within_the_plan_allowance() {
    let (repo, project, start) = committed_project(1_000);
    let server = good_model_server(&project);
    let (out, cwd) = run_against(&repo, &server);

    // Green, and the fix is on the user's branch.
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", head(&out.stderr));
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    assert_eq!(summary["tests_after"]["passed"], 4, "{summary}");
    assert_eq!(summary["tests_after"]["total"], 4, "{summary}");
    assert_ne!(repo.head(), start, "HEAD did not move");
    assert_eq!(repo.read(&project.buggy_path), project.fixed_text());

    // What the model received: a plan and the fix, each within the allowance.
    let requests = server.requests();
    let kinds: Vec<RequestKind> = requests
        .iter()
        .map(|r| project.classify(&system_of(r), &prompt_of(r)))
        .collect();
    assert!(kinds.contains(&RequestKind::Plan), "{kinds:?}");
    assert!(kinds.contains(&RequestKind::FixBuggy), "{kinds:?}");
    for (request, kind) in requests.iter().zip(&kinds) {
        let chars = chars_of(request);
        assert!(
            chars <= MAX_REQUEST_CHARS,
            "a {kind:?} request of {chars} characters was sent (at most {MAX_REQUEST_CHARS})"
        );
    }

    // The log agrees: every model call, sent or not, within the allowance.
    let log = read_log(&cwd.join("logs/experiment_data.json"));
    let start_entry = log
        .iter()
        .find(|e| e["details"]["kind"] == "run_start")
        .expect("a run_start entry");
    let listed = start_entry["details"]["output_response"]
        .as_str()
        .unwrap_or_default();
    assert!(
        listed.starts_with("1000 Python files: ") && listed.ends_with(" and 900 more"),
        "the run's start names a hundred files: {}",
        &listed[..listed.len().min(300)]
    );
    let calls: Vec<&Value> = log
        .iter()
        .filter(|e| e["details"]["kind"] == "llm_call")
        .collect();
    assert_eq!(
        calls.len(),
        requests.len(),
        "model calls logged vs received"
    );
    for call in calls {
        let prompt = call["details"]["input_prompt"].as_str().expect("a prompt");
        let chars = prompt.chars().count();
        assert!(
            chars <= MAX_REQUEST_CHARS,
            "the log shows a {} call of {chars} characters (at most {MAX_REQUEST_CHARS})",
            call["agent"]
        );
    }
}

/// The experiment log says where a run's time went: the run-end entry has
/// the run's wall time and each stage's share of it, every pytest entry its
/// own time (and, for an attempt that passed the first pass over the failing
/// tests, that pass's time), and the Executor's commit the steps of the
/// attempt. `benches/scale.rs` reads its figures from these.
#[test]
fn the_log_says_where_the_time_went() {
    let (repo, project, _) = committed_project(40);
    let server = good_model_server(&project);
    let started = std::time::Instant::now();
    let (out, cwd) = run_against(&repo, &server);
    let process = started.elapsed().as_secs_f64();
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", head(&out.stderr));

    let log = read_log(&cwd.join("logs/experiment_data.json"));
    let of_kind = |kind: &str| -> Vec<&Value> {
        log.iter()
            .filter(|e| e["details"]["kind"] == kind)
            .collect()
    };
    let number = |v: &Value| v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));

    let end = of_kind("run_end")[0]["details"].clone();
    let run = number(&end["seconds"]);
    assert!(
        run > 0.0 && run <= process,
        "run {run} s, process {process} s"
    );
    let stage = |name: &str| number(&end["stage_seconds"][name]);
    let names = [
        "setup",
        "audit",
        "plan",
        "rounds",
        "final_check",
        "delivery",
    ];
    let sum: f64 = names.iter().map(|n| stage(n)).sum();
    assert!(
        (sum - run).abs() < 0.01,
        "stages {sum} s, run {run} s: {end}"
    );
    for name in ["setup", "audit", "plan", "rounds", "final_check"] {
        assert!(stage(name) > 0.0, "{name}: {end}");
    }

    // The tools' own times: the baseline, the attempt, the final check.
    let tool = |tool: &str| -> Vec<&Value> {
        log.iter()
            .filter(|e| e["details"]["kind"] == "tool" && e["details"]["tool"] == tool)
            .collect()
    };
    let pytest = tool("pytest");
    assert_eq!(pytest.len(), 3, "{pytest:?}");
    let (baseline, attempt, check) = (
        &pytest[0]["details"],
        &pytest[1]["details"],
        &pytest[2]["details"],
    );
    assert_eq!(pytest[0]["agent"], "Auditor");
    assert_eq!(attempt["attempt"], 1);
    assert!(check["attempt"].is_null());
    for details in [baseline, attempt, check] {
        assert!(number(&details["seconds"]) > 0.0, "{details}");
    }
    assert!(stage("audit") >= number(&baseline["seconds"]), "{end}");
    assert!(stage("final_check") >= number(&check["seconds"]), "{end}");
    // The fix passes the failing tests: the full suite ran after them.
    assert!(number(&attempt["first_pass_seconds"]) > 0.0, "{attempt}");
    assert!(baseline["first_pass_seconds"].is_null(), "{baseline}");

    // The attempt's steps.
    let commits = of_kind("commit");
    assert_eq!(commits.len(), 1);
    let steps = &commits[0]["details"]["seconds"];
    for step in ["review", "apply", "judge", "commit", "worktree"] {
        assert!(number(&steps[step]) >= 0.0, "{step}: {steps}");
    }
    let judge = number(&steps["judge"]);
    let tests = number(&attempt["seconds"]) + number(&attempt["first_pass_seconds"]);
    assert!(judge >= tests, "judge {judge} s, its pytest runs {tests} s");
    assert!(number(&steps["worktree"]) > 0.0, "{steps}");
    assert!(stage("rounds") >= judge, "{end}");
}
