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
//! that then deliver the fix.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::process::Output;
use std::sync::Mutex;

use serde_json::Value;

use super::{run_openai, summary_of};
use crate::support::fixture::{fixture_dir, fixture_target, prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, RecordedRequest, Reply};
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

/// `repo`'s files committed as `main`'s first commit.
fn committed(repo: TestRepo, name: &str, target_rel: &str) -> FixtureRepo {
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

/// Every `fixed/` file of JS fixture `name`, relative to its target.
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
fn user_modules(root: &Path) -> Vec<std::path::PathBuf> {
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
fn modules_snapshot(fx: &FixtureRepo) -> Vec<BTreeMap<std::path::PathBuf, String>> {
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

#[test]
fn node_test_a_test_edit_is_refused_then_the_fix_is_delivered() {
    let fx = js_repo("node_test", Deps::Linked);
    let start = fx.repo.head();
    let test = "test/cart.test.js";
    let before = fixture_file("node_test", "project", test);
    let cheat = before.replace("750);", "250);").replace(
        "assert.equal(subtotal(items), 250);",
        "assert.ok(subtotal(items));",
    );
    let server = LlmServer::start(model(
        fixes_of(&fx),
        vec![(
            "src/cart.js",
            format!("Make the tests agree.\n\n{}", diff(test, &before, &cheat)),
        )],
    ));
    let out = run_openai(&fx, &server, &[]);
    let summary = assert_delivered(&fx, &out, &start);
    assert_eq!(summary["tests_after"]["passed"], 5, "{summary}");
    let refused = refusals(&fx, "test_file");
    assert_eq!(refused.len(), 1, "{:?}", fx.log());
    let text = refused[0].to_string();
    assert!(text.contains(test), "{text}");
    assert_untouched(&fx, "node_test", test);
}

#[test]
fn vitest_ts_a_config_edit_and_a_type_error_are_refused_then_the_fix_is_delivered() {
    // A real copy of the dependencies: vitest writes caches, and nothing may
    // land in the user's folder.
    let fx = js_repo("vitest_ts", Deps::Copied);
    let start = fx.repo.head();
    let modules_before = modules_snapshot(&fx);
    let config = "vitest.config.ts";
    let config_before = fixture_file("vitest_ts", "project", config);
    let skip = config_before.replace(
        "include: ['tests/**/*.test.ts'],",
        "include: ['tests/**/*.test.ts'],\n    exclude: ['tests/money.test.ts'],",
    );
    let source = "src/money.ts";
    let project = fixture_file("vitest_ts", "project", source);
    let fixed = fixture_file("vitest_ts", "fixed", source);
    // Right at run time (vitest does not type-check), wrong for tsc: a
    // string declared a number (TS2322).
    let typed_wrong = project.replace(
        "  const fraction = Number(match[2] ?? '0');\n",
        "  const digits: number = (match[2] ?? '0').padEnd(2, '0');\n  const fraction = Number(digits);\n",
    );
    assert_ne!(typed_wrong, project);
    let server = LlmServer::start(model(
        fixes_of(&fx),
        vec![
            (
                source,
                format!(
                    "Run the other tests.\n\n{}",
                    diff(config, &config_before, &skip)
                ),
            ),
            (
                source,
                format!("Read tenths.\n\n{}", diff(source, &project, &typed_wrong)),
            ),
        ],
    ));
    let out = run_openai(&fx, &server, &[]);
    let summary = assert_delivered(&fx, &out, &start);
    assert_eq!(summary["tests_after"]["passed"], 7, "{summary}");
    assert_eq!(fx.repo.read(source), fixed);

    // The configuration edit was refused by the Reviewer and never landed.
    let refused = refusals(&fx, "test_config");
    assert_eq!(refused.len(), 1, "{:?}", fx.log());
    assert!(refused[0].to_string().contains(config), "{}", refused[0]);
    assert_untouched(&fx, "vitest_ts", config);

    // The type error was found by tsc and the attempt not accepted.
    let log = fx.log();
    let first: Vec<&Value> = log
        .iter()
        .filter(|e| e["details"]["attempt"] == 1)
        .collect();
    assert!(
        first.iter().any(|e| e.to_string().contains("TS2322")),
        "no entry of attempt 1 names TS2322: {first:?}"
    );
    let commit = first
        .iter()
        .find(|e| e["details"]["kind"] == "commit")
        .expect("attempt 1 was committed on its branch");
    assert!(
        !["green", "improved", "kept"].contains(&commit["details"]["verdict"].as_str().unwrap()),
        "{commit}"
    );
    let history = fx
        .repo
        .git(&["log", "--all", "-p", &format!("{start}..HEAD")]);
    assert!(
        !history.contains("digits: number"),
        "the type error was delivered"
    );

    assert_eq!(
        modules_snapshot(&fx),
        modules_before,
        "node_modules changed"
    );
}

#[test]
fn jest_eslint_a_jest_key_edit_is_refused_then_the_fix_is_delivered() {
    let fx = js_repo("jest_eslint", Deps::Linked);
    let start = fx.repo.head();
    let manifest = "package.json";
    let before = fixture_file("jest_eslint", "project", manifest);
    let cheat = before.replace(
        r#""testEnvironment": "node""#,
        r#""testEnvironment": "node",
    "testPathIgnorePatterns": ["inventory"]"#,
    );
    assert_ne!(cheat, before);
    let server = LlmServer::start(model(
        fixes_of(&fx),
        vec![(
            "src/inventory.js",
            format!(
                "Skip the slow tests.\n\n{}",
                diff(manifest, &before, &cheat)
            ),
        )],
    ));
    let out = run_openai(&fx, &server, &[]);
    let summary = assert_delivered(&fx, &out, &start);
    assert_eq!(summary["tests_after"]["passed"], 5, "{summary}");
    let refused = refusals(&fx, "test_config");
    assert_eq!(refused.len(), 1, "{:?}", fx.log());
    assert!(refused[0].to_string().contains("jest"), "{}", refused[0]);
    assert_untouched(&fx, "jest_eslint", manifest);
}

#[test]
fn workspaces_a_member_package_is_fixed_and_delivered() {
    let fx = js_repo("workspaces", Deps::Linked);
    assert_eq!(fx.target_rel, "packages/core");
    let start = fx.repo.head();
    let modules_before = modules_snapshot(&fx);
    let server = LlmServer::start(model(fixes_of(&fx), vec![]));
    let out = run_openai(&fx, &server, &[]);
    let summary = assert_delivered(&fx, &out, &start);
    assert_eq!(summary["tests_after"]["passed"], 4, "{summary}");
    // Only the target changed.
    let changed = fx.repo.git(&["diff", "--name-only", &start, "HEAD"]);
    assert_eq!(changed, "packages/core/src/rates.js");
    assert_eq!(
        modules_snapshot(&fx),
        modules_before,
        "node_modules changed"
    );
}

#[test]
fn dependencies_not_installed_stop_the_run_before_any_request() {
    let fx = js_repo("vitest_ts", Deps::Left);
    let before = fx.repo.snapshot();
    let server = LlmServer::start(model(fixes_of(&fx), vec![]));
    // No --no-preflight: not even the preflight may go out.
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("npm ci"), "{stderr}");
    assert!(server.requests().is_empty(), "{:?}", server.requests());
    assert!(server.preflights().is_empty(), "the preflight was sent");
    assert_eq!(fx.repo.snapshot(), before, "the repository changed");
    assert_eq!(
        fx.repo.git(&["for-each-ref", "--format=%(refname)"]),
        "refs/heads/main"
    );
}

/// A Python package with one failing pytest test.
const CALC: &str = "\"\"\"Small arithmetic helpers.\"\"\"\n\n\ndef add(a, b):\n    \
                    \"\"\"Return the sum of a and b.\"\"\"\n    return a - b\n\n\ndef double(a):\n    \
                    \"\"\"Return twice a.\"\"\"\n    return 2 * a\n";
const CALC_TESTS: &str = "\"\"\"Tests for calc.ops.\"\"\"\n\nfrom calc.ops import add, double\n\n\n\
                          def test_add():\n    \"\"\"add sums its arguments.\"\"\"\n    assert add(2, 3) == 5\n\n\n\
                          def test_double():\n    \"\"\"double doubles.\"\"\"\n    assert double(4) == 8\n";
/// A TypeScript module with one failing vitest test.
const GREET: &str = "/** Greets someone by name. */\nexport function greet(name: string): string {\n  \
                     return `Hello ${name}!`;\n}\n\n/** Shouts a greeting. */\nexport function shout(name: string): string {\n  \
                     return greet(name).toUpperCase();\n}\n";
const GREET_TESTS: &str = "import { describe, expect, it } from 'vitest';\n\n\
                           import { greet, shout } from '../src/greet';\n\n\
                           describe('greet', () => {\n  it('puts a comma after Hello', () => {\n    \
                           expect(greet('Ada')).toBe('Hello, Ada!');\n  });\n});\n\n\
                           describe('shout', () => {\n  it('shouts the name', () => {\n    \
                           expect(shout('Ada')).toContain('ADA');\n  });\n});\n";

#[test]
fn a_python_and_typescript_target_is_judged_by_both_runners() {
    let repo = TestRepo::empty();
    let vitest = node::installed("vitest_ts");
    for file in ["package.json", "package-lock.json", "tsconfig.json"] {
        std::fs::copy(vitest.join(file), repo.root.join(file)).expect("copy");
    }
    node::copy(
        &vitest.join("node_modules"),
        &repo.root.join("node_modules"),
        Deps::Linked,
    );
    repo.write(".gitignore", "node_modules/\n__pycache__/\n");
    repo.write(
        "pyproject.toml",
        "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\n\
         pythonpath = [\".\"]\ntestpaths = [\"tests\"]\n",
    );
    repo.write("calc/__init__.py", "\"\"\"Arithmetic.\"\"\"\n");
    repo.write("calc/ops.py", CALC);
    repo.write("tests/test_ops.py", CALC_TESTS);
    repo.write("src/greet.ts", GREET);
    repo.write("tests/greet.test.ts", GREET_TESTS);
    let fx = committed(repo, "mixed", "");
    let start = fx.repo.head();
    let fixed_py = CALC.replace("a - b", "a + b");
    let fixed_ts = GREET.replace("`Hello ${name}!`", "`Hello, ${name}!`");
    let fixes = BTreeMap::from([
        ("calc/ops.py".to_string(), fixed_py.clone()),
        ("src/greet.ts".to_string(), fixed_ts.clone()),
    ]);
    let server = LlmServer::start(model(fixes, vec![]));
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    assert_ne!(fx.repo.head(), start);
    assert_eq!(fx.repo.read("calc/ops.py"), fixed_py);
    assert_eq!(fx.repo.read("src/greet.ts"), fixed_ts);
    assert_eq!(summary["tests_before"]["passed"], 2, "{summary}");
    assert_eq!(summary["tests_after"]["passed"], 4, "{summary}");
    assert_eq!(summary["tests_after"]["total"], 4, "{summary}");

    // Both runners measured the baseline (each failing test named by its
    // runner's id) and the final state, green.
    let log = fx.log();
    let tests: Vec<&Value> = log
        .iter()
        .filter(|e| e["details"]["kind"] == "tool" && e["details"]["tool"] == "pytest")
        .collect();
    let baseline = tests.first().expect("a baseline measurement");
    let failing: Vec<&str> = baseline["details"]["failing"]
        .as_array()
        .expect("failing ids")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        failing.contains(&"tests/test_ops.py::test_add"),
        "{failing:?}"
    );
    assert!(
        failing.contains(&"tests/greet.test.ts::greet > puts a comma after Hello"),
        "{failing:?}"
    );
    let last = tests.last().expect("a final measurement");
    assert_eq!(last["details"]["passed"], 4, "{last}");
    assert_eq!(last["details"]["total"], 4, "{last}");
    let text = last.to_string();
    for id in [
        "tests/test_ops.py::test_add",
        "tests/test_ops.py::test_double",
        "tests/greet.test.ts::greet > puts a comma after Hello",
        "tests/greet.test.ts::shout > shouts the name",
    ] {
        assert!(
            text.contains(id),
            "{id} not in the final measurement: {text}"
        );
    }
}
