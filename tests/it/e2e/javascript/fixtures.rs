//! A bug fixed and delivered on each JS fixture, after a proposal that
//! edits a test, one that edits the runner's configuration and one that
//! adds a type error were refused; the user's `node_modules` unchanged.

use serde_json::Value;

use super::{
    assert_delivered, assert_untouched, diff, fixes_of, fixture_file, js_repo, model,
    modules_snapshot, refusals,
};
use crate::e2e::run_openai;
use crate::support::llm_server::LlmServer;
use crate::support::node::Deps;

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
    // On its attempt's branch only, never on main.
    let delivered = fx.repo.git(&["log", "-p", &format!("{start}..HEAD")]);
    assert!(
        !delivered.contains("digits: number"),
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
