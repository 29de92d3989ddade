//! Targets beyond one installed package: a checkout whose dependencies
//! are not installed, and a Python + TypeScript target.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{committed, fixes_of, js_repo, model};
use crate::e2e::{run_openai, summary_of};
use crate::support::fixture::prompt_of;
use crate::support::llm_server::LlmServer;
use crate::support::node::{self, Deps};
use crate::support::repo::TestRepo;

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

#[test]
fn node_missing_stops_the_run_before_any_request_saying_how_to_install_it() {
    let fx = js_repo("node_test", Deps::Linked);
    let before = fx.repo.snapshot();
    // A PATH with git and nothing else: no node to be found.
    let bin = tempfile::tempdir().expect("temp dir");
    let git = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .expect("sh runs");
    let git = String::from_utf8_lossy(&git.stdout).trim().to_string();
    std::os::unix::fs::symlink(&git, bin.path().join("git")).expect("link git");
    let server = LlmServer::start(model(fixes_of(&fx), vec![]));
    let base = format!("{}/v1", server.base_url());
    let target = fx.target.to_string_lossy().into_owned();
    let out = fx.swarm(
        &["--target_dir", &target],
        &[
            ("OPENAI_API_KEY", "sk-test"),
            ("OPENAI_BASE_URL", &base),
            ("PATH", &bin.path().to_string_lossy()),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("node is not installed") && stderr.contains("install Node.js"),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "{:?}", server.requests());
    assert!(server.preflights().is_empty(), "the preflight was sent");
    assert_eq!(fx.repo.snapshot(), before, "the repository changed");
}

#[test]
fn a_package_no_runner_tests_is_refused_and_beside_python_left_to_the_reviewer() {
    // JavaScript alone, with no runner named anywhere: nothing could judge
    // a fix, so the run stops before any request.
    let repo = TestRepo::empty();
    repo.write("package.json", "{\"name\": \"tools\", \"private\": true}\n");
    repo.write(
        "src/slug.js",
        "export const slug = (s) => s.toLowerCase();\n",
    );
    let fx = committed(repo, "no-runner", "");
    let server = LlmServer::start(model(BTreeMap::new(), vec![]));
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("no test runner found"), "{stderr}");
    assert!(server.requests().is_empty(), "{:?}", server.requests());

    // Beside a Python package the script is a source under the Reviewer's
    // rules, judged by no tool: pylint never lints it, and the Python fix
    // is delivered.
    let repo = TestRepo::empty();
    repo.write("package.json", "{\"name\": \"tools\", \"private\": true}\n");
    repo.write(
        "scripts/slug.js",
        "export const slug = (s) => s.toLowerCase();\n",
    );
    repo.write(
        "pyproject.toml",
        "[tool.pytest.ini_options]\npythonpath = [\".\"]\ntestpaths = [\"tests\"]\n",
    );
    repo.write("calc/__init__.py", "\"\"\"Arithmetic.\"\"\"\n");
    repo.write("calc/ops.py", CALC);
    repo.write("tests/test_ops.py", CALC_TESTS);
    repo.write(".gitignore", "__pycache__/\n");
    let fx = committed(repo, "python-with-scripts", "");
    let fixed = CALC.replace("a - b", "a + b");
    let server = LlmServer::start(model(
        BTreeMap::from([("calc/ops.py".to_string(), fixed.clone())]),
        vec![],
    ));
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(fx.repo.read("calc/ops.py"), fixed);
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["linter"], "pylint and eslint", "{summary}");
    let linted: Vec<String> = fx
        .log()
        .iter()
        .filter(|e| e["details"]["kind"] == "tool" && e["details"]["tool"] == "pylint")
        .filter_map(|e| e["details"]["input_prompt"].as_str().map(str::to_string))
        .collect();
    assert!(!linted.is_empty());
    assert!(
        linted.iter().all(|command| !command.contains("slug.js")),
        "{linted:?}"
    );
}

/// A TypeScript module no test imports, with an unused variable.
const BANNER: &str =
    "/** A banner around a title. */\nexport function banner(title: string): string {\n  \
                      const width = 4;\n  return `** ${title} **`;\n}\n";

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
    judged_by_both("");
}

#[test]
fn a_front_end_package_inside_a_python_target_is_judged_by_its_runner() {
    judged_by_both("web/");
}

/// A Python package with pytest tests and a TypeScript package with vitest
/// tests in one target, the TypeScript package's folder `front` (`""`: the
/// target itself, `web/`: a folder inside it), one bug in each: both fixed
/// and delivered, both runners measuring every state.
fn judged_by_both(front: &str) {
    let repo = TestRepo::empty();
    let vitest = node::installed("vitest_ts");
    std::fs::create_dir_all(repo.root.join(front)).expect("create the front end's folder");
    for file in ["package.json", "package-lock.json", "tsconfig.json"] {
        std::fs::copy(vitest.join(file), repo.root.join(front).join(file)).expect("copy");
    }
    node::copy(
        &vitest.join("node_modules"),
        &repo.root.join(front).join("node_modules"),
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
    let (greet, greet_tests) = (
        format!("{front}src/greet.ts"),
        format!("{front}tests/greet.test.ts"),
    );
    repo.write(&greet, GREET);
    repo.write(&greet_tests, GREET_TESTS);
    // A module no test imports, with a variable eslint flags.
    let banner = format!("{front}src/banner.ts");
    repo.write(&banner, BANNER);
    let fx = committed(repo, "mixed", "");
    let start = fx.repo.head();
    let fixed_py = CALC.replace("a - b", "a + b");
    let fixed_ts = GREET.replace("`Hello ${name}!`", "`Hello, ${name}!`");
    let fixed_banner = BANNER.replace("  const width = 4;\n", "");
    let fixes = BTreeMap::from([
        ("calc/ops.py".to_string(), fixed_py.clone()),
        (greet.clone(), fixed_ts.clone()),
        (banner.clone(), fixed_banner.clone()),
    ]);
    let server = LlmServer::start(model(fixes, vec![]));
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    assert_eq!(summary["linter"], "pylint and eslint", "{summary}");
    // The safety summary names node's sandbox beside pytest's.
    let runtimes = summary["safety"]["runtimes"].as_array().expect("runtimes");
    assert_eq!(runtimes.len(), 1, "{runtimes:?}");
    assert_eq!(runtimes[0]["tools"], "vitest, eslint", "{runtimes:?}");
    assert_ne!(fx.repo.head(), start);
    assert_eq!(fx.repo.read("calc/ops.py"), fixed_py);
    assert_eq!(fx.repo.read(&greet), fixed_ts);
    assert_eq!(fx.repo.read(&banner), fixed_banner);
    // What verified each TypeScript change, honestly: the tests reach
    // greet.ts; nothing but tsc and eslint checked banner.ts.
    let verification = &summary["verification"];
    assert_eq!(
        verification[&greet]["tools"], "vitest's tests, tsc's type check, eslint",
        "{verification}"
    );
    assert_eq!(
        verification[&banner]["tools"],
        "tsc's type check and eslint only: no vitest test reaches it",
        "{verification}"
    );
    assert_eq!(summary["tests_before"]["passed"], 2, "{summary}");
    assert_eq!(summary["tests_after"]["passed"], 4, "{summary}");
    assert_eq!(summary["tests_after"]["total"], 4, "{summary}");
    // Each file was asked about in its own language.
    for (file, fence) in [("calc/ops.py", "python"), (greet.as_str(), "ts")] {
        let shown = format!("## Current text of `{file}`\n```{fence}\n");
        assert!(
            server
                .requests()
                .iter()
                .map(prompt_of)
                .any(|p| p.starts_with(&format!("Fix and improve `{file}`")) && p.contains(&shown)),
            "no fix request showed {file} as {fence}"
        );
    }

    // Both runners measured the baseline (each failing test named by its
    // runner's id, relative to the target) and the final state, green.
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
    let comma = format!("{greet_tests}::greet > puts a comma after Hello");
    assert!(failing.contains(&comma.as_str()), "{failing:?}");
    // The final check's measurement names every passing test, of both
    // runners.
    let last = tests.last().expect("a final measurement");
    assert_eq!(last["agent"], "Judge", "{last}");
    assert!(last["details"]["attempt"].is_null(), "{last}");
    assert_eq!(last["details"]["total"], 4, "{last}");
    let passing: BTreeSet<&str> = last["details"]["passing"]
        .as_array()
        .unwrap_or_else(|| panic!("no passing ids: {last}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let shout = format!("{greet_tests}::shout > shouts the name");
    assert_eq!(
        passing,
        BTreeSet::from([
            "tests/test_ops.py::test_add",
            "tests/test_ops.py::test_double",
            comma.as_str(),
            shout.as_str(),
        ])
    );
    assert!(
        last["details"]["input_prompt"]
            .as_str()
            .is_some_and(|c| c.contains("pytest") && c.contains("vitest")),
        "{last}"
    );
}
