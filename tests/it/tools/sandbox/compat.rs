//! Ordinary projects behave the same inside the sandbox, `--no-sandbox`
//! says what is off, and configuration above the worktree never applies.

use std::net::TcpListener;
use std::time::Duration;

use serde_json::Value;
use swarm::cancel::Cancel;
use swarm::tools::*;

use super::{allowed_name, outcomes};
use crate::support::fixture::{copy_tree, fixture_dir, fixture_target};
use crate::support::*;

const PLAIN_TEST: &str = r#"
import json, os, socket

HERE = os.path.dirname(os.path.abspath(__file__))


def test_record():
    config = json.load(open(os.path.join(HERE, "attack.json")))
    try:
        socket.create_connection(("127.0.0.1", config["port"]), timeout=5).close()
        reached = True
    except OSError:
        reached = False
    with open(os.path.join(HERE, "seen.json"), "w") as handle:
        json.dump({"home": os.environ["HOME"], "names": sorted(os.environ), "reached": reached}, handle)
"#;

#[test]
fn no_sandbox_keeps_the_allow_list_and_says_what_is_off() {
    let dir = project(&[("work/test_plain.py", PLAIN_TEST)]);
    let work = dir.path().join("work");
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("address").port();
    write(&work, "attack.json", &format!("{{\"port\": {port}}}"));
    let policy = SandboxPolicy {
        isolate: false,
        ..SandboxPolicy::for_worktree(&work)
    };
    let sandbox = Sandbox::new(policy, &system_env()).expect("sandbox");
    let report = sandbox.report();
    assert_eq!(report.namespaces, LayerState::Disabled);
    assert_eq!(report.landlock, LayerState::Disabled);
    assert_eq!(report.limits, LayerState::Disabled);
    assert!(report.environment.is_active() && report.parent_death.is_active());
    assert_eq!(
        report.shortfalls(),
        [
            "sandbox layer namespaces disabled (--no-sandbox)",
            "sandbox layer landlock disabled (--no-sandbox)",
            "sandbox layer limits disabled (--no-sandbox)",
        ]
    );
    let run = run_pytest(
        &system_env(),
        &sandbox,
        &work,
        Duration::from_secs(60),
        &Cancel::new(),
    )
    .expect("pytest runs");
    assert_eq!(run.exit_code, Some(0), "{}", run.output);
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("seen.json")).expect("seen"))
            .expect("json");
    // Off means off: the network is reachable...
    assert_eq!(seen["reached"], true);
    // ...but the environment is still the allow-list.
    assert!(seen["home"]
        .as_str()
        .expect("home")
        .starts_with(&sandbox.scratch().to_string_lossy().into_owned()));
    for name in seen["names"].as_array().expect("names") {
        let name = name.as_str().expect("name");
        assert!(allowed_name(name), "{name} is not allow-listed");
    }
}

#[test]
fn fixture_suites_give_the_same_results_inside_the_sandbox() {
    for name in ["single_module", "package", "monorepo_target"] {
        let dir = project(&[]);
        copy_tree(&fixture_dir(name).join("project"), dir.path());
        let target = fixture_target(name);
        let root = if target == "." {
            dir.path().to_path_buf()
        } else {
            dir.path().join(&target)
        };
        let run = |isolate: bool| {
            let policy = SandboxPolicy {
                isolate,
                ..SandboxPolicy::for_worktree(dir.path())
            };
            let sandbox = Sandbox::new(policy, &system_env()).expect("sandbox");
            run_pytest(
                &system_env(),
                &sandbox,
                &root,
                Duration::from_secs(120),
                &Cancel::new(),
            )
            .expect("pytest runs")
        };
        let confined = run(true);
        let open = run(false);
        assert!(!confined.cases.is_empty(), "{name}: {}", confined.output);
        assert_eq!(outcomes(&confined), outcomes(&open), "{name}");
        assert!(
            confined
                .cases
                .iter()
                .any(|c| c.outcome == TestOutcome::Failed),
            "{name}: the fixture's bugs still show"
        );
        // The fixed version passes under the sandbox.
        copy_tree(&fixture_dir(name).join("fixed"), dir.path());
        let fixed = run(true);
        assert_eq!(fixed.exit_code, Some(0), "{name}: {}", fixed.output);
    }
}

#[test]
fn the_no_tests_fixture_checks_imports_the_same_inside_the_sandbox() {
    let dir = project(&[]);
    copy_tree(&fixture_dir("no_tests").join("project"), dir.path());
    let files: Vec<String> = ["helpers.py", "config_loader.py", "watcher.py"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let check = |isolate: bool| {
        let policy = SandboxPolicy {
            isolate,
            ..SandboxPolicy::for_worktree(dir.path())
        };
        let sandbox = Sandbox::new(policy, &system_env()).expect("sandbox");
        check_imports(
            &system_env(),
            &sandbox,
            dir.path(),
            &files,
            Duration::from_secs(5),
            &Cancel::new(),
        )
        .expect("check runs")
    };
    let confined = check(true);
    let open = check(false);
    assert_eq!(confined.compile_errors, open.compile_errors);
    let paths = |c: &ImportCheck| {
        c.import_errors
            .iter()
            .map(|(p, _)| p.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(paths(&confined), paths(&open));
    assert!(!confined.compile_errors.is_empty() || !confined.import_errors.is_empty());
}

#[test]
fn configuration_above_the_worktree_is_neither_read_nor_fatal() {
    let dir = project(&[
        (
            "pyproject.toml",
            "[tool.pytest.ini_options]\naddopts = \"-x --deselect tests/test_ok.py::test_ok\"\n[tool.pylint.main]\ndisable = \"all\"\n",
        ),
        ("setup.cfg", "[tool:pytest]\naddopts = -p no_such_plugin\n"),
        (
            "conftest.py",
            "raise SystemExit('the conftest above the worktree was loaded')\n",
        ),
        ("work/tests/test_ok.py", "def test_ok():\n    assert True\n"),
        ("work/messy.py", "import os\n"),
    ]);
    let work = dir.path().join("work");
    // pytest stops at the worktree by itself, sandbox or not.
    for isolate in [true, false] {
        let policy = SandboxPolicy {
            isolate,
            ..SandboxPolicy::for_worktree(&work)
        };
        let sandbox = Sandbox::new(policy, &system_env()).expect("sandbox");
        let run = run_pytest(
            &system_env(),
            &sandbox,
            &work,
            Duration::from_secs(60),
            &Cancel::new(),
        )
        .expect("pytest runs");
        assert_eq!(run.exit_code, Some(0), "isolate={isolate}: {}", run.output);
        assert_eq!(
            outcomes(&run),
            [("tests/test_ok.py::test_ok".to_string(), TestOutcome::Passed)]
        );
    }
    // pylint looks further up; in the sandbox it cannot read what it finds.
    let report = run_pylint(
        &system_env(),
        &sandbox_for(&work),
        &work,
        &["messy.py".to_string()],
        &LintSettings::new(Duration::from_secs(120)),
        &LintCache::in_memory(),
        &Cancel::new(),
    )
    .expect("pylint runs");
    assert!(
        report.messages.iter().any(|m| m.symbol == "unused-import"),
        "{:?}",
        report.messages
    );
}
