//! JavaScript/TypeScript through swarm's own code with real node and the
//! real runners installed from the npm registry: each fixture's runner run
//! under the sandbox in a worktree-like copy whose dependencies are the
//! user's, laid as links; the per-test outcomes, eslint's messages and
//! tsc's type errors as a user would check them; the sandbox holding for
//! node; the user's `node_modules` unchanged.
//!
//! The fixtures' `node_modules` are installed by `.ci/node-fixtures` (run
//! here when missing) into `target/node-fixtures/<name>/`
//! (`support::node`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use swarm::cancel::Cancel;
use swarm::lang::javascript::{
    self as js, lint, project, rules, typecheck, Linter, Project, Runner,
};
use swarm::tools::node::NodeInstall;
use swarm::tools::{Sandbox, SandboxPolicy, TestLimits, TestOutcome, TestRun};

use crate::support::node::{copy, installed, snapshot, Deps};

/// A user's checkout of a fixture (with its installed dependencies) and a
/// run's worktree of it (the committed files only, outside the checkout).
struct Setup {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    checkout: PathBuf,
    worktree: PathBuf,
    /// The target relative to the repository root.
    target: String,
    node: NodeInstall,
    sandbox: Sandbox,
    /// The user's `node_modules` folders.
    user_modules: Vec<PathBuf>,
}

impl Setup {
    fn new(name: &str, target: &str) -> Self {
        let installed = installed(name);
        let user = tempfile::tempdir().expect("tempdir");
        let tree = tempfile::tempdir().expect("tempdir");
        let checkout = user.path().join("repo");
        let worktree = tree.path().join("run-1");
        copy(&installed, &checkout, Deps::Linked);
        copy(&installed, &worktree, Deps::Left);
        let node = NodeInstall::from_env().expect("node is installed");
        let project = Project::find(&checkout.join(target), &checkout)
            .expect("package.json reads")
            .expect("a JS project");
        project.check_installed().expect("installed");
        let user_modules = project.node_modules();
        let laid = js::lay(&checkout, &worktree, &user_modules).expect("links laid");
        let sandbox = js::sandbox_for(&node, SandboxPolicy::for_worktree(&worktree), laid.readable)
            .expect("sandbox for node");
        Self {
            _dirs: (user, tree),
            checkout,
            worktree,
            target: target.to_string(),
            node,
            sandbox,
            user_modules,
        }
    }

    /// The package's folder in the worktree.
    fn root(&self) -> PathBuf {
        self.worktree.join(&self.target)
    }

    /// The `node_modules` folders node looks in from the package, in the worktree.
    fn worktree_modules(&self) -> Vec<PathBuf> {
        Project::find(&self.root(), &self.worktree)
            .expect("reads")
            .expect("found")
            .node_modules()
    }

    fn runner(&self) -> Runner {
        let project = Project::find(&self.root(), &self.worktree)
            .expect("reads")
            .expect("found");
        Runner::detect(&project).expect("a runner")
    }

    fn run_tests(&self) -> TestRun {
        js::run_tests(
            &self.node,
            &self.sandbox,
            &self.root(),
            &self.runner(),
            &self.worktree_modules(),
            TestLimits::new(Duration::from_secs(120)),
            &Cancel::new(),
        )
        .expect("the runner runs")
    }

    /// Copies the fixture's `fixed/` files over the worktree.
    fn apply_fix(&self, name: &str) {
        let fixed = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/javascript")
            .join(name)
            .join("fixed");
        copy_plain(&fixed, &self.worktree);
    }
}

/// Copies files (not links) from `from` over `to`.
fn copy_plain(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let dest = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_plain(&entry.path(), &dest);
        } else {
            std::fs::remove_file(&dest).ok();
            std::fs::copy(entry.path(), &dest).expect("copy");
        }
    }
}

/// The ids of the cases with `outcome`.
fn ids(run: &TestRun, outcome: TestOutcome) -> Vec<&str> {
    run.cases
        .iter()
        .filter(|c| c.outcome == outcome)
        .map(|c| c.id.as_str())
        .collect()
}

#[test]
fn node_test_runner_names_the_failing_tests_and_passes_once_fixed() {
    let setup = Setup::new("node_test", ".");
    assert_eq!(setup.runner(), Runner::Node { paths: vec![] });
    let run = setup.run_tests();
    assert_eq!(run.cases.len(), 5, "{}", run.output);
    assert_eq!(
        ids(&run, TestOutcome::Failed),
        [
            "test/cart.test.js::lineTotal > multiplies the price by the quantity",
            "test/cart.test.js::subtotal > adds every line",
        ]
    );
    let failed = &run.cases[0];
    assert_eq!(
        failed.message.as_deref(),
        Some("Expected values to be strictly equal:")
    );
    assert!(!failed
        .details
        .as_deref()
        .unwrap_or_default()
        .contains(&setup.worktree.display().to_string()));
    setup.apply_fix("node_test");
    let fixed = setup.run_tests();
    assert_eq!(
        ids(&fixed, TestOutcome::Passed).len(),
        5,
        "{}",
        fixed.output
    );
    // The ids are the same in every run.
    let before: Vec<&str> = run.cases.iter().map(|c| c.id.as_str()).collect();
    let after: Vec<&str> = fixed.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(before, after);
}

#[test]
fn vitest_with_typescript_names_the_failing_tests_and_a_type_error() {
    let setup = Setup::new("vitest_ts", ".");
    assert_eq!(setup.runner(), Runner::Vitest);
    let user_before = snapshot(&setup.user_modules[0]);
    let run = setup.run_tests();
    assert_eq!(run.cases.len(), 7, "{}", run.output);
    assert_eq!(
        ids(&run, TestOutcome::Failed),
        [
            "tests/money.test.ts::parseMoney > reads one decimal as tenths",
            "tests/money.test.ts::formatMoney > round-trips a parsed amount",
        ]
    );
    let modules = setup.worktree_modules();
    let check = |root: &Path| {
        js::type_check(
            &setup.node,
            &setup.sandbox,
            root,
            &modules,
            Duration::from_secs(120),
            &Cancel::new(),
        )
        .expect("tsc runs")
        .expect("a TypeScript project")
    };
    let clean = check(&setup.root());
    assert!(clean.is_empty(), "{clean:?}");
    // A change that adds a type error is found, by file.
    let money = setup.root().join("src/money.ts");
    let mut text = std::fs::read_to_string(&money).expect("read");
    text.push_str("\nexport const rate: number = '0.2';\n");
    std::fs::write(&money, text).expect("write");
    let added = typecheck::added_errors(&clean, &check(&setup.root()));
    assert_eq!(added.len(), 1, "{added:?}");
    assert_eq!(added[0].path, "src/money.ts");
    assert_eq!(added[0].code, "TS2322");
    // vitest wrote its cache into the worktree's folder, never the user's.
    assert!(setup.worktree.join("node_modules/.vite").is_dir());
    assert_eq!(snapshot(&setup.user_modules[0]), user_before);
}

#[test]
fn jest_with_the_projects_eslint_names_failing_tests_and_messages() {
    let setup = Setup::new("jest_eslint", ".");
    assert_eq!(setup.runner(), Runner::Jest);
    let run = setup.run_tests();
    assert_eq!(run.cases.len(), 5, "{}", run.output);
    assert_eq!(
        ids(&run, TestOutcome::Failed),
        [
            "__tests__/inventory.test.js::Inventory > restock adds to what is there",
            "__tests__/inventory.test.js::Inventory > take can use what two restocks added",
        ]
    );
    let modules = setup.worktree_modules();
    let linter = js::project_eslint(&modules, &[setup.root()]).expect("the project's eslint");
    assert!(matches!(linter, Linter::Project { .. }));
    let files = vec![
        "src/inventory.js".to_string(),
        "__tests__/inventory.test.js".to_string(),
    ];
    let report = js::lint_files(
        &setup.node,
        &setup.sandbox,
        &setup.root(),
        (&files, js::statements_in(&setup.root(), &files)),
        &linter,
        Duration::from_secs(120),
        &Cancel::new(),
    )
    .expect("eslint runs");
    let found: Vec<(&str, u32, &str)> = report
        .messages
        .iter()
        .map(|m| (m.path.as_str(), m.line, m.symbol.as_str()))
        .collect();
    assert_eq!(found, [("src/inventory.js", 26, "no-unused-vars")]);
    let score = report.score.expect("a score");
    assert!(score > 0.0 && score < 10.0, "{score}");
    setup.apply_fix("jest_eslint");
    assert_eq!(ids(&setup.run_tests(), TestOutcome::Passed).len(), 5);
    let clean = js::lint_files(
        &setup.node,
        &setup.sandbox,
        &setup.root(),
        (&files, js::statements_in(&setup.root(), &files)),
        &linter,
        Duration::from_secs(120),
        &Cancel::new(),
    )
    .expect("eslint runs");
    assert_eq!(clean.score, Some(10.0));
    assert!(clean.score > report.score);
}

#[test]
fn a_workspace_member_runs_with_the_roots_dependencies_and_its_sibling_in_the_worktree() {
    let setup = Setup::new("workspaces", "packages/core");
    let project = Project::find(&setup.checkout.join("packages/core"), &setup.checkout)
        .expect("reads")
        .expect("found");
    assert_eq!(
        project.workspace_root.as_deref(),
        Some(setup.checkout.as_path())
    );
    assert_eq!(setup.user_modules, [setup.checkout.join("node_modules")]);
    // The sibling package resolves to the worktree's copy, not the user's.
    let units =
        std::fs::read_link(setup.worktree.join("node_modules/@shipping/units")).expect("a link");
    assert_eq!(units, setup.worktree.join("packages/units"));
    assert_eq!(setup.runner(), Runner::Vitest);
    let run = setup.run_tests();
    assert_eq!(run.cases.len(), 4, "{}", run.output);
    assert_eq!(
        ids(&run, TestOutcome::Failed),
        [
            "tests/rates.test.js::shippingCost > includes the upper edge of a band",
            "tests/rates.test.js::shippingCost > converts kilograms",
        ]
    );
    setup.apply_fix("workspaces");
    assert_eq!(ids(&setup.run_tests(), TestOutcome::Passed).len(), 4);
}

#[test]
fn the_sandbox_holds_for_node_and_the_users_dependencies_stay_unchanged() {
    let setup = Setup::new("vitest_ts", ".");
    let report = setup.sandbox.report();
    for (name, layer) in report.layers() {
        assert!(layer.is_active(), "{name}: {layer:?}");
    }
    let user_before = snapshot(&setup.user_modules[0]);
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let outside = setup.checkout.join("outside.txt");
    let hostile = format!(
        r#"import {{ describe, expect, it }} from 'vitest';
import * as fs from 'node:fs';

describe('hostile', () => {{
  it('cannot write into the installed dependencies', () => {{
    expect(() => fs.writeFileSync('node_modules/vitest/HACKED', 'x')).toThrow();
  }});
  it('cannot write outside the worktree', () => {{
    expect(() => fs.writeFileSync({outside:?}, 'x')).toThrow();
    expect(() => fs.writeFileSync({home:?} + '/swarm-hostile.txt', 'x')).toThrow();
  }});
  it('cannot reach the network', async () => {{
    await expect(fetch('https://registry.npmjs.org/')).rejects.toThrow();
  }});
  it('sees no secrets', () => {{
    expect(process.env.OPENAI_API_KEY).toBeUndefined();
    expect(process.env.HOME).not.toBe({home:?});
  }});
}});
"#
    );
    std::fs::write(setup.root().join("tests/hostile.test.ts"), hostile).expect("write");
    let run = setup.run_tests();
    let hostile: Vec<(&str, TestOutcome)> = run
        .cases
        .iter()
        .filter(|c| c.id.starts_with("tests/hostile.test.ts"))
        .map(|c| (c.id.as_str(), c.outcome))
        .collect();
    assert_eq!(hostile.len(), 4, "{}", run.output);
    assert!(
        hostile.iter().all(|(_, o)| *o == TestOutcome::Passed),
        "{hostile:?}\n{}",
        run.output
    );
    assert!(!outside.exists());
    assert!(!Path::new(&home).join("swarm-hostile.txt").exists());
    assert_eq!(snapshot(&setup.user_modules[0]), user_before);
}

#[test]
fn a_test_past_its_limit_fails_and_the_whole_run_is_bounded() {
    let setup = Setup::new("node_test", ".");
    std::fs::write(
        setup.root().join("test/slow.test.js"),
        "import { it } from 'node:test';\nit('hangs', () => new Promise(() => setTimeout(() => {}, 60_000)));\n",
    )
    .expect("write");
    let limits = TestLimits {
        run: Duration::from_secs(60),
        case: Some(Duration::from_secs(2)),
    };
    let run = js::run_tests(
        &setup.node,
        &setup.sandbox,
        &setup.root(),
        &setup.runner(),
        &[],
        limits,
        &Cancel::new(),
    )
    .expect("runs");
    assert!(!run.timed_out, "{}", run.output);
    // Node 20 stops the whole file at the limit and reports the file.
    let slow = run
        .cases
        .iter()
        .find(|c| c.id.starts_with("test/slow.test.js"))
        .expect("the slow test is reported");
    assert!(
        matches!(slow.outcome, TestOutcome::Failed | TestOutcome::Error),
        "{slow:?}"
    );
    assert!(
        slow.message
            .as_deref()
            .is_some_and(|m| m.contains("timed out after 2000ms")),
        "{slow:?}"
    );
    // The other tests kept their outcomes.
    assert_eq!(ids(&run, TestOutcome::Passed).len(), 3);
    assert!(run.duration < Duration::from_secs(30), "{:?}", run.duration);
}

#[test]
fn dependencies_not_installed_name_the_install_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let installed = installed("vitest_ts");
    copy(&installed, dir.path(), Deps::Left);
    let project = Project::find(dir.path(), dir.path())
        .expect("reads")
        .expect("found");
    let missing = project.check_installed().expect_err("not installed");
    assert_eq!(missing.command, "npm ci");
    let line = missing.to_string();
    assert!(line.contains("run `npm ci` in"), "{line}");
    assert_eq!(line.lines().count(), 1);
}

#[test]
fn the_reviewer_rules_protect_tests_configuration_and_lockfiles() {
    let installed = installed("jest_eslint");
    let manifest = js::Manifest::read(&installed.join("package.json")).expect("reads");
    let setup = rules::setup_files(&manifest, &[]);
    assert_eq!(
        rules::protection("__tests__/inventory.test.js", &setup),
        Some(rules::Protected::Test)
    );
    assert_eq!(
        rules::protection("eslint.config.js", &setup),
        None,
        "lint configuration is not the runner's"
    );
    assert_eq!(
        rules::protection("package-lock.json", &setup),
        Some(rules::Protected::Lockfile)
    );
    let before = std::fs::read_to_string(installed.join("package.json")).expect("read");
    let cheat = before.replace(
        r#""testEnvironment": "node""#,
        r#""testEnvironment": "node", "testPathIgnorePatterns": ["inventory"]"#,
    );
    assert!(rules::package_json_change(&before, &cheat).is_some_and(|p| p.contains("`jest`")));
    assert!(project::is_source_path("src/inventory.js"));
    let source = std::fs::read_to_string(installed.join("src/inventory.js")).expect("read");
    let sneaky = source.replace(
        "'use strict';",
        "'use strict';\nconst { execSync } = require('child_process');",
    );
    let added = rules::added_dangerous_call("src/inventory.js", &source, &sneaky).expect("found");
    assert_eq!(added.name, "import child_process");
}

#[test]
#[ignore = "installs the pinned eslint from the npm registry; run with --ignored"]
fn pinned_linter_installs_from_the_registry_and_lints_a_project_without_eslint() {
    let setup = Setup::new("node_test", ".");
    let cache = tempfile::tempdir().expect("tempdir");
    let pinned = swarm::tools::node::install_pinned_linter(
        &setup.node,
        cache.path(),
        &|_| {},
        &Cancel::new(),
    )
    .expect("installs");
    let sandbox = js::sandbox_for(
        &setup.node,
        SandboxPolicy::for_worktree(&setup.worktree),
        vec![pinned.dir.clone()],
    )
    .expect("sandbox");
    std::fs::write(
        setup.root().join("src/extra.js"),
        "export function f(a) {\n  const unused = 1;\n  return a;\n}\n",
    )
    .expect("write");
    let linted = ["src/cart.js".to_string(), "src/extra.js".to_string()];
    let report = js::lint_files(
        &setup.node,
        &sandbox,
        &setup.root(),
        (&linted, js::statements_in(&setup.root(), &linted)),
        &Linter::Pinned(pinned),
        Duration::from_secs(120),
        &Cancel::new(),
    )
    .expect("lints");
    let found: Vec<(&str, u32, &str)> = report
        .messages
        .iter()
        .map(|m| (m.path.as_str(), m.line, m.symbol.as_str()))
        .collect();
    assert_eq!(found, [("src/extra.js", 2, "no-unused-vars")]);
    assert!(lint::score(&report.messages, 10).is_some());
}

/// Wall time of each fixture's test run through swarm's code (sandbox cell,
/// confinement, reporter, parsing), median of five after one warm-up: the
/// figures `docs/javascript.md` quotes against the runner alone.
#[test]
#[ignore = "a measurement, not a check: run with --ignored --nocapture"]
fn measure_test_runs_through_swarm() {
    for (name, target) in [
        ("node_test", "."),
        ("vitest_ts", "."),
        ("jest_eslint", "."),
        ("workspaces", "packages/core"),
    ] {
        let setup = Setup::new(name, target);
        setup.run_tests();
        let mut walls: Vec<Duration> = (0..5)
            .map(|_| {
                let started = std::time::Instant::now();
                setup.run_tests();
                started.elapsed()
            })
            .collect();
        walls.sort();
        println!(
            "{name}: median {:.0} ms (min {:.0}, max {:.0})",
            walls[2].as_secs_f64() * 1000.0,
            walls[0].as_secs_f64() * 1000.0,
            walls[4].as_secs_f64() * 1000.0
        );
    }
}
