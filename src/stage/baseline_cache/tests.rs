use std::collections::BTreeSet;

use super::*;
use crate::pipeline::LintKind;
use crate::tools::{EnvSource, LayerState, PythonLayout};

fn env() -> PythonEnv {
    PythonEnv {
        python: PathBuf::from("/usr/bin/python3"),
        source: EnvSource::SystemPython,
        pytest_version: "9.2.0".into(),
        pylint_version: "4.1.4".into(),
        layout: PythonLayout::default(),
    }
}

fn report() -> SandboxReport {
    let on = || LayerState::Active {
        detail: "on".into(),
    };
    SandboxReport {
        environment: on(),
        parent_death: on(),
        namespaces: on(),
        landlock: on(),
        limits: on(),
    }
}

fn limits() -> Limits {
    Limits {
        tests: Duration::from_secs(60),
        test_case: Some(Duration::from_secs(10)),
        lint: Duration::from_secs(30),
    }
}

/// Every input of a key, owned, so tests can change one at a time.
struct Inputs {
    tree: String,
    target_rel: String,
    files: Vec<String>,
    empty: Vec<String>,
    env: PythonEnv,
    limits: Limits,
    sandbox: SandboxReport,
    resource_limits: String,
    isolate: bool,
}

impl Inputs {
    fn new() -> Self {
        Self {
            tree: "a".repeat(40),
            target_rel: "svc".into(),
            files: vec!["calc.py".into(), "tests/test_calc.py".into()],
            empty: Vec::new(),
            env: env(),
            limits: limits(),
            sandbox: report(),
            resource_limits: "ResourceLimits { memory: 1 }".into(),
            isolate: true,
        }
    }

    fn key(&self) -> BaselineKey {
        KeyInputs {
            tree: &self.tree,
            target_rel: &self.target_rel,
            files: &self.files,
            empty_submodules: &self.empty,
            env: &self.env,
            limits: self.limits,
            sandbox: &self.sandbox,
            resource_limits: &self.resource_limits,
            isolate: self.isolate,
        }
        .key_for_build("0.1.0 build-a")
    }
}

/// One change to a key's inputs.
type Change = Box<dyn Fn(&mut Inputs)>;

#[test]
fn the_key_changes_with_every_input_and_only_with_them() {
    let base = Inputs::new().key();
    assert_eq!(base, Inputs::new().key(), "stable");
    assert_eq!(base.0.len(), 64);
    let changes: Vec<(&str, Change)> = vec![
        ("tree", Box::new(|i| i.tree = "b".repeat(40))),
        ("target", Box::new(|i| i.target_rel = "other".into())),
        ("files", Box::new(|i| i.files.push("extra.py".into()))),
        (
            "submodules",
            Box::new(|i| i.empty.push("vendor/lib".into())),
        ),
        (
            "python",
            Box::new(|i| i.env.python = "/opt/py/bin/python3".into()),
        ),
        (
            "pytest",
            Box::new(|i| i.env.pytest_version = "9.3.0".into()),
        ),
        (
            "pylint",
            Box::new(|i| i.env.pylint_version = "4.2.0".into()),
        ),
        (
            "layout",
            Box::new(|i| i.env.layout.sys_path.push("/usr/lib/python3.13".into())),
        ),
        (
            "test timeout",
            Box::new(|i| i.limits.tests = Duration::from_secs(61)),
        ),
        ("case timeout", Box::new(|i| i.limits.test_case = None)),
        (
            "lint timeout",
            Box::new(|i| i.limits.lint = Duration::from_secs(5)),
        ),
        (
            "sandbox",
            Box::new(|i| i.sandbox.landlock = LayerState::Disabled),
        ),
        (
            "resources",
            Box::new(|i| i.resource_limits = "other".into()),
        ),
        ("isolate", Box::new(|i| i.isolate = false)),
    ];
    let mut seen = BTreeSet::from([base.0.clone()]);
    for (what, change) in changes {
        let mut inputs = Inputs::new();
        change(&mut inputs);
        assert!(seen.insert(inputs.key().0), "{what} must change the key");
    }
    let inputs = Inputs::new();
    let other_build = KeyInputs {
        tree: &inputs.tree,
        target_rel: &inputs.target_rel,
        files: &inputs.files,
        empty_submodules: &inputs.empty,
        env: &inputs.env,
        limits: inputs.limits,
        sandbox: &inputs.sandbox,
        resource_limits: &inputs.resource_limits,
        isolate: inputs.isolate,
    }
    .key_for_build("0.1.0 build-b");
    assert_ne!(other_build, base, "another swarm build");
}

fn case(id: &str, outcome: TestOutcome, message: Option<&str>) -> TestCase {
    TestCase {
        id: id.into(),
        outcome,
        message: message.map(String::from),
        details: message.map(|m| format!("{m}\n  at /wt/run-1/svc/calc.py:3")),
    }
}

fn measurement(root: &Path, cases: Vec<TestCase>) -> Measurement {
    let run = TestRun {
        cases,
        exit_code: Some(1),
        command: "python -m pytest --rootdir /wt/run-1/svc".into(),
        output: "1 failed, 1 passed".into(),
        duration: Duration::from_millis(1234),
        ..TestRun::default()
    };
    let lint = LintReport {
        score: Some(7.5),
        messages: vec![LintMessage {
            path: "calc.py".into(),
            line: 3,
            column: 0,
            kind: LintKind::Warning,
            symbol: "unused-import".into(),
            message_id: "W0611".into(),
            message: "Unused import os".into(),
        }],
        command: "python -m pylint calc.py".into(),
        output: "calc.py:3: W0611".into(),
        linted: 2,
        ..LintReport::default()
    };
    let files = ["calc.py".to_string(), "tests/test_calc.py".to_string()];
    judge::assemble(root, &files, run, lint, None, None)
}

#[test]
fn a_stored_baseline_comes_back_the_same_with_paths_moved_to_the_new_worktree() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = BaselineCache::new(dir.path());
    let key = Inputs::new().key();
    let files = vec!["calc.py".to_string(), "tests/test_calc.py".to_string()];
    let first = measurement(
        Path::new("/wt/run-1/svc"),
        vec![
            case("tests/test_calc.py::test_ok", TestOutcome::Passed, None),
            case(
                "tests/test_calc.py::test_div",
                TestOutcome::Failed,
                Some("ZeroDivisionError"),
            ),
        ],
    );
    assert!(cache
        .load(
            &key,
            Path::new("/wt/run-2"),
            Path::new("/wt/run-2/svc"),
            &files
        )
        .is_none());
    assert!(cache.store(&key, &first, "run-1", Path::new("/wt/run-1")));

    let reused = cache
        .load(
            &key,
            Path::new("/wt/run-2"),
            Path::new("/wt/run-2/svc"),
            &files,
        )
        .expect("a hit");
    assert_eq!(reused.run_id, "run-1");
    assert!(chrono::DateTime::parse_from_rfc3339(&reused.measured_at).is_ok());
    let m = reused.measurement;
    assert!(m.cached);
    let tests = m.snapshot.tests.as_ref().expect("tests");
    assert_eq!(
        tests.passed,
        BTreeSet::from(["tests/test_calc.py::test_ok".to_string()])
    );
    assert_eq!(tests.failing.len(), 1);
    assert_eq!(
        tests.failing[0].details.as_deref(),
        Some("ZeroDivisionError\n  at /wt/run-2/svc/calc.py:3")
    );
    assert_eq!(m.snapshot.lint_score, Some(7.5));
    assert_eq!(m.snapshot.lint.messages, first.snapshot.lint.messages);
    assert_eq!((m.snapshot.lint.linted, m.snapshot.lint.from_cache), (0, 2));
    let run = m.test_run.as_ref().expect("run");
    assert_eq!(run.command, "python -m pytest --rootdir /wt/run-2/svc");
    assert_eq!(run.duration, Duration::from_millis(1234));
    assert!(!worth_keeping(&m), "a reused baseline is not stored again");

    // Another key misses.
    let mut other = Inputs::new();
    other.tree = "c".repeat(40);
    assert!(cache
        .load(
            &other.key(),
            Path::new("/wt/run-2"),
            Path::new("/wt/run-2/svc"),
            &files
        )
        .is_none());
}

#[test]
fn corrupt_or_foreign_entries_are_misses_and_no_temporary_file_is_left() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = BaselineCache::new(dir.path());
    let key = Inputs::new().key();
    let files = vec!["calc.py".to_string()];
    let m = measurement(
        Path::new("/wt/r/svc"),
        vec![case("t.py::a", TestOutcome::Passed, None)],
    );
    assert!(cache.store(&key, &m, "r", Path::new("/wt/r")));
    let path = cache.entry_path(&key);
    let load = || cache.load(&key, Path::new("/wt/s"), Path::new("/wt/s/svc"), &files);
    assert!(load().is_some());
    let names: Vec<String> = std::fs::read_dir(dir.path().join("baseline"))
        .expect("folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [format!("{}.json", key.0)]);

    let good = std::fs::read_to_string(&path).expect("entry");
    std::fs::write(&path, &good[..good.len() / 2]).expect("cut");
    assert!(load().is_none(), "cut short");
    std::fs::write(&path, good.replace("\"format\":1", "\"format\":999")).expect("write");
    assert!(load().is_none(), "another format");
    std::fs::write(&path, good.replace("\"passed\"", "\"exploded\"")).expect("write");
    assert!(load().is_none(), "an unknown outcome");
    std::fs::write(&path, good.replace(&key.0, &"f".repeat(64))).expect("write");
    assert!(load().is_none(), "a file renamed by hand");
}

#[test]
fn results_that_hit_a_time_limit_are_not_kept() {
    let root = Path::new("/wt/r");
    let ok = measurement(root, vec![case("t.py::a", TestOutcome::Passed, None)]);
    assert!(worth_keeping(&ok));
    let slow_case = measurement(
        root,
        vec![case(
            "t.py::a",
            TestOutcome::Failed,
            Some("timed out after 10 s"),
        )],
    );
    assert!(!worth_keeping(&slow_case));
    let unrun = measurement(root, vec![case("t.py::a", TestOutcome::NotRun, None)]);
    assert!(!worth_keeping(&unrun));
    let mut killed = measurement(root, vec![case("t.py::a", TestOutcome::Passed, None)]);
    if let Some(run) = killed.test_run.as_mut() {
        run.timed_out = true;
    }
    assert!(!worth_keeping(&killed));
    let mut lint_skipped = measurement(root, vec![case("t.py::a", TestOutcome::Passed, None)]);
    lint_skipped
        .snapshot
        .lint
        .skipped
        .push(crate::pipeline::SkippedLint {
            path: "calc.py".into(),
            reason: "timed out".into(),
        });
    assert!(!worth_keeping(&lint_skipped));
}

#[test]
fn pruning_keeps_the_newest_entries() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = BaselineCache::new(dir.path());
    let m = measurement(
        Path::new("/wt/r"),
        vec![case("t.py::a", TestOutcome::Passed, None)],
    );
    let mut keys = Vec::new();
    for i in 0..4 {
        let mut inputs = Inputs::new();
        inputs.tree = format!("{i:040}");
        let key = inputs.key();
        assert!(cache.store(&key, &m, "r", Path::new("/wt/r")));
        let when = std::time::UNIX_EPOCH + Duration::from_secs(1_000 + i);
        std::fs::File::options()
            .write(true)
            .open(cache.entry_path(&key))
            .and_then(|f| f.set_modified(when))
            .expect("set mtime");
        keys.push(key);
    }
    cache.prune(2);
    let kept: Vec<bool> = keys.iter().map(|k| cache.entry_path(k).exists()).collect();
    assert_eq!(kept, [false, false, true, true]);
}
