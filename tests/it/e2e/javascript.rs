//! JavaScript and TypeScript end to end: the real binary on the JS fixtures
//! committed in temp repositories beside their dependencies installed from
//! the npm registry, real node, the projects' own runners, eslint and tsc,
//! and a loopback model. A bug fixed and delivered on each fixture; edits
//! to tests and to the runner's configuration refused; a type error
//! refused; a checkout without its dependencies stopped before any request;
//! a Python + TypeScript target judged by both runners. After every run the
//! user's `node_modules` is what it was, and no commit holds any of it.
//!
//! Each fixture runs once: the refusals are the first replies of the runs
//! that then deliver the fix (`fixtures`); the targets beyond one installed
//! package are in `targets`.

mod fixtures;
mod targets;

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Mutex;

use serde_json::Value;

use super::summary_of;
use crate::support::fixture::{fixture_dir, fixture_target, prompt_of, FixtureRepo};
use crate::support::llm_server::{RecordedRequest, Reply};
use crate::support::node::{self, Deps};
use crate::support::repo::TestRepo;

/// A user's repository holding JS fixture `name` as installed by
/// `.ci/node-fixtures`: the project committed on `main` with a
/// `.gitignore` for `node_modules`, its dependencies beside it as `deps`
/// says (never committed).
fn js_repo(name: &str, deps: Deps) -> FixtureRepo {
    let repo = TestRepo::empty();
    node::copy(&node::installed(name), &repo.root, deps);
    repo.write(".gitignore", "node_modules/\n");
    let fixture = format!("javascript/{name}");
    let rel = fixture_target(&fixture);
    let target_rel = if rel == "." { String::new() } else { rel };
    committed(repo, &fixture, &target_rel)
}

/// `repo`'s files committed as `main`'s first commit; swarm's pinned
/// eslint ready in its cache.
pub(crate) fn committed(repo: TestRepo, name: &str, target_rel: &str) -> FixtureRepo {
    node::with_pinned_linter(&repo.home.join(".cache/swarm"));
    repo.git(&["init", "--quiet", "--initial-branch=main"]);
    repo.git(&["config", "user.name", "Repo User"]);
    repo.git(&["config", "user.email", "repo@example.com"]);
    repo.commit_all("import the project");
    let target = repo.root.join(target_rel);
    FixtureRepo {
        name: name.to_string(),
        repo,
        target,
        target_rel: target_rel.to_string(),
    }
}

/// Fixture `name`'s file `rel` (relative to the repository) in `version`
/// (`project` or `fixed`).
fn fixture_file(name: &str, version: &str, rel: &str) -> String {
    let path = fixture_dir(&format!("javascript/{name}"))
        .join(version)
        .join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A fenced unified diff of `path` from `before` to `after`.
fn diff(path: &str, before: &str, after: &str) -> String {
    let body = similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    format!("```diff\n{body}```\n")
}

/// The file a fix request is about, and its current text as the prompt
/// shows it (whatever the fence's language).
fn fix_request(prompt: &str) -> Option<(String, Option<String>)> {
    let file = prompt
        .strip_prefix("Fix and improve `")?
        .split('`')
        .next()?
        .to_string();
    let marker = format!("## Current text of `{file}`");
    let current = prompt.rfind(&marker).and_then(|at| {
        let fence = at + prompt[at..].find("\n```")? + 1;
        let start = fence + prompt[fence..].find('\n')? + 1;
        let end = start + prompt[start..].find("\n```\n")?;
        Some(format!("{}\n", &prompt[start..end]))
    });
    Some((file, current))
}

/// A model for a target whose files `fixes` (target-relative path → fixed
/// text) need fixing: a plan naming them; for a fix request, first the
/// replies `scripted` holds for the file, in turn, then a diff from the
/// file's current text to its fixed text ("NO CHANGE" once fixed or for
/// any other file); nothing useful to any other request.
fn model(
    fixes: BTreeMap<String, String>,
    scripted: Vec<(&str, String)>,
) -> impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static {
    let mut queues: BTreeMap<String, VecDeque<String>> = BTreeMap::new();
    for (file, reply) in scripted {
        queues.entry(file.to_string()).or_default().push_back(reply);
    }
    let queues = Mutex::new(queues);
    move |request| {
        let prompt = prompt_of(request);
        if prompt.starts_with("Write a refactoring plan") {
            return Reply::text_for(request, &plan(fixes.keys()));
        }
        let Some((file, current)) = fix_request(&prompt) else {
            return Reply::text_for(request, "Nothing to add.");
        };
        let next = queues
            .lock()
            .expect("queue lock")
            .get_mut(&file)
            .and_then(VecDeque::pop_front);
        if let Some(reply) = next {
            return Reply::text_for(request, &reply);
        }
        let reply = match (fixes.get(&file), current) {
            (Some(fixed), Some(current)) if *fixed != current => {
                format!("Fix the bug in {file}.\n\n{}", diff(&file, &current, fixed))
            }
            _ => format!("NO CHANGE: `{file}` needs no change."),
        };
        Reply::text_for(request, &reply)
    }
}

/// A plan with one bug item for each of `files`.
fn plan<'a>(files: impl Iterator<Item = &'a String>) -> String {
    let mut plan = String::from(
        "# Refactoring plan\n\n## Summary\n\nThe failing tests show one bug per file.\n",
    );
    for file in files {
        plan.push_str(&format!(
            "\n## {file}\n\n- **Type**: bug\n  **Severity**: high\n  **Location**: `{file}`\n  \
             **Description**: The failing tests show a wrong result.\n  \
             **Suggested fix**: Compute what the tests expect.\n"
        ));
    }
    plan
}

/// Every `fixed/` file of the fixture `fx` holds, relative to its target.
fn fixes_of(fx: &FixtureRepo) -> BTreeMap<String, String> {
    let prefix = if fx.target_rel.is_empty() {
        String::new()
    } else {
        format!("{}/", fx.target_rel)
    };
    fx.fixed_files()
        .into_iter()
        .map(|(path, text)| {
            let rel = path.strip_prefix(&prefix).expect("fixed under the target");
            (rel.to_string(), text)
        })
        .collect()
}

/// Every `node_modules` folder of the user's checkout (not inside another).
fn user_modules(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("read_dir").flatten() {
            let kind = entry.file_type().expect("type");
            if !kind.is_dir() || entry.file_name() == ".git" {
                continue;
            }
            if entry.file_name() == "node_modules" {
                found.push(entry.path());
            } else {
                stack.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

/// Snapshots of every `node_modules` folder of the checkout.
fn modules_snapshot(fx: &FixtureRepo) -> Vec<BTreeMap<PathBuf, String>> {
    let folders = user_modules(&fx.repo.root);
    assert!(!folders.is_empty(), "the checkout has no node_modules");
    folders.iter().map(|f| node::snapshot(f)).collect()
}

/// What a user checks after a delivered run: exit 0, `main` moved by
/// swarm's commits to the run's best branch, every fixed file as the
/// fixture's `fixed/` version, nothing under `node_modules` in any commit,
/// a clean working tree. Returns the summary.
fn assert_delivered(fx: &FixtureRepo, out: &Output, start: &str) -> Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    // Linted by eslint (the project's or swarm's pinned one, installed
    // before the test, never during the run).
    assert!(!stderr.contains("installing eslint"), "{stderr}");
    assert!(
        summary["linter"]
            .as_str()
            .is_some_and(|l| l.contains("eslint")),
        "{summary}"
    );
    assert!(summary["pylint_after"].is_f64(), "{summary}");
    let run_id = summary["run_id"].as_str().expect("run id");
    let head = fx.repo.head();
    assert_ne!(head, start, "main did not move");
    assert_eq!(
        head,
        fx.repo.git(&["rev-parse", &format!("swarm/{run_id}/best")])
    );
    let commits = fx.repo.git(&["rev-list", &format!("{start}..HEAD")]);
    for commit in commits.lines() {
        let message = fx.repo.git(&["log", "-1", "--format=%B", commit]);
        assert!(message.starts_with("swarm: "), "{message}");
        assert!(
            message.contains(&format!("Swarm-Run: {run_id}")),
            "{message}"
        );
    }
    for (path, fixed) in fx.fixed_files() {
        assert_eq!(
            fx.repo.read(&path),
            fixed,
            "{path} is not the fixed version"
        );
    }
    let everything = fx.repo.git(&["log", "--all", "--name-only", "--format="]);
    let tree = fx.repo.git(&["ls-tree", "-r", "--name-only", "HEAD"]);
    for path in everything.lines().chain(tree.lines()) {
        assert!(!path.contains("node_modules"), "{path} was committed");
    }
    assert_eq!(fx.repo.git(&["status", "--porcelain"]), "");
    summary
}

/// The log's Reviewer entries that refused a proposal by `rule`.
fn refusals(fx: &FixtureRepo, rule: &str) -> Vec<Value> {
    fx.log()
        .into_iter()
        .filter(|e| e["agent"] == "Reviewer" && e["details"]["verdict"] == "rejected")
        .filter(|e| e["details"]["rule"] == rule)
        .collect()
}

/// `path` is as the fixture has it, and no commit of any branch but the
/// first changed it.
fn assert_untouched(fx: &FixtureRepo, fixture: &str, path: &str) {
    assert_eq!(
        fx.repo.read(path),
        fixture_file(fixture, "project", path),
        "{path} changed"
    );
    let commits = fx.repo.git(&["log", "--all", "--format=%H", "--", path]);
    assert_eq!(
        commits.lines().count(),
        1,
        "{path} was committed: {commits}"
    );
}
