//! The sandbox's own tests: probing, layers that fail, shortfalls.

use super::*;
use crate::tools::{EnvSource, PythonLayout};

/// `/bin/true` stands in for the interpreter: `true -c pass` exits 0.
fn true_env() -> PythonEnv {
    PythonEnv {
        python: PathBuf::from("/bin/true"),
        source: EnvSource::Explicit,
        pytest_version: String::new(),
        pylint_version: String::new(),
        layout: PythonLayout::default(),
    }
}

#[test]
fn the_four_probes_run_side_by_side() {
    use std::os::unix::fs::PermissionsExt;
    // An interpreter that takes a second to start and fails in a PID
    // namespace, so the probe under every layer fails and each layer is
    // probed: the together probe and four one after another take five
    // seconds, side by side about two.
    let dir = tempfile::tempdir().expect("temp dir");
    let slow = dir.path().join("slow-python");
    std::fs::write(
        &slow,
        "#!/bin/sh\nsleep 1\nif [ $$ = 1 ]; then exit 7; fi\n",
    )
    .expect("write");
    std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let env = PythonEnv {
        python: slow,
        ..true_env()
    };
    let started = std::time::Instant::now();
    let sandbox = Sandbox::new(SandboxPolicy::for_worktree(dir.path()), &env).expect("starts");
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(3500),
        "probing took {took:?}: the probes ran one after another"
    );
    // Every layer was probed (what holds depends on the kernel).
    let report = sandbox.report();
    for layer in [&report.namespaces, &report.landlock, &report.limits] {
        assert!(
            matches!(
                layer,
                LayerState::Active { .. } | LayerState::Unavailable { .. }
            ),
            "{layer:?}"
        );
    }
}

/// An interpreter script that counts its start-ups in `dir/starts`
/// and fails when it is PID 1 (in a PID namespace) and `fail_as_pid_1`.
fn counting_env(dir: &Path, fail_as_pid_1: bool) -> PythonEnv {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("counting-python");
    let fail = if fail_as_pid_1 {
        "if [ $$ = 1 ]; then exit 7; fi\n"
    } else {
        ""
    };
    let starts = dir.join("starts");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho x >> '{}'\n{fail}exit 0\n",
            starts.display()
        ),
    )
    .expect("write");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    PythonEnv {
        python: script,
        ..true_env()
    }
}

fn starts(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("starts")).map_or(0, |s| s.lines().count())
}

/// Where the kernel has every layer, one start-up under all of them
/// settles the probe; a layer that fails is then found by probing each.
#[test]
fn one_start_up_probes_every_layer_and_a_failing_one_is_found_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = SandboxPolicy::for_worktree(dir.path());
    let sandbox = Sandbox::new(policy.clone(), &counting_env(dir.path(), false)).expect("starts");
    let report = sandbox.report();
    let all = [&report.namespaces, &report.landlock, &report.limits];
    if all.iter().all(|l| matches!(l, LayerState::Active { .. })) {
        assert_eq!(starts(dir.path()), 1, "one start-up under every layer");
    } else {
        // A kernel without some layer: the together probe failed and
        // each was probed.
        assert_eq!(starts(dir.path()), 5, "{report:?}");
        return;
    }

    let dir = tempfile::tempdir().expect("temp dir");
    let policy = SandboxPolicy::for_worktree(dir.path());
    let sandbox = Sandbox::new(policy, &counting_env(dir.path(), true)).expect("starts");
    let report = sandbox.report();
    assert!(
        matches!(&report.namespaces, LayerState::Unavailable { reason } if reason.contains("code 7")),
        "{report:?}"
    );
    assert!(
        matches!(report.landlock, LayerState::Active { .. }),
        "{report:?}"
    );
    assert!(
        matches!(report.limits, LayerState::Active { .. }),
        "{report:?}"
    );
    assert_eq!(starts(dir.path()), 5, "together, then the four one by one");
}

#[test]
fn a_layer_that_fails_in_the_child_is_unavailable_with_its_step() {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = SandboxPolicy {
        isolate: false,
        ..SandboxPolicy::for_worktree(dir.path())
    };
    let sandbox = Sandbox::new(policy, &true_env()).expect("true runs");
    assert!(sandbox.scratch().is_dir());
    assert_eq!(sandbox.probe(Confinement::default()), None);

    let not_a_ruleset = OwnedFd::from(std::fs::File::open("/dev/null").expect("open"));
    let reason = sandbox
        .probe(Confinement {
            landlock: Some(not_a_ruleset),
            ..Confinement::default()
        })
        .expect("the spawn fails");
    assert!(
        reason.starts_with("landlock_restrict_self failed:"),
        "{reason}"
    );

    let starved = ResourceLimits {
        address_space: Some(4096),
        ..ResourceLimits::default()
    };
    assert!(sandbox
        .probe(Confinement {
            limits: Some(starved),
            ..Confinement::default()
        })
        .is_some());
}

#[test]
fn shortfalls_name_every_layer_that_does_not_hold() {
    let active = || LayerState::Active {
        detail: "on".into(),
    };
    let report = SandboxReport {
        environment: active(),
        parent_death: active(),
        namespaces: LayerState::Unavailable {
            reason: "unshare(...) failed: Operation not permitted".into(),
        },
        landlock: LayerState::Disabled,
        limits: active(),
    };
    assert_eq!(
        report.shortfalls(),
        [
            "sandbox layer namespaces unavailable: unshare(...) failed: Operation not permitted",
            "sandbox layer landlock disabled (--no-sandbox)",
        ]
    );
    let json = serde_json::to_value(&report).expect("serializes");
    assert_eq!(json["namespaces"]["state"], "unavailable");
    assert_eq!(json["landlock"]["state"], "disabled");
    assert_eq!(json["limits"]["detail"], "on");
}

/// The layers' outcome is taken from the memo by a later run with the same
/// policy (in another worktree, of another repository), and dropped when a
/// spawn fails in a layer.
#[test]
fn the_probes_are_remembered_until_a_spawn_fails_in_a_layer() {
    let dir = tempfile::tempdir().expect("temp dir");
    let memo = ProbeMemo::new(&dir.path().join("cache"));
    let env = counting_env(dir.path(), false);
    // Past the memo's window for files changed a moment ago.
    std::thread::sleep(Duration::from_millis(200));
    // Each run writes in its own worktree (and the counting script in
    // `dir`).
    let policy = |run: &str| {
        let mut policy = SandboxPolicy::for_worktree(dir.path().join(run).join("worktree"));
        policy.writable.push(dir.path().to_path_buf());
        policy
    };
    let first = Sandbox::remembering(policy("run-1"), &env, Some(&memo)).expect("starts");
    let probed = starts(dir.path());
    assert!(probed >= 1);
    let entry = first.remembered.clone().expect("remembered");
    assert!(entry.is_file());

    let second = Sandbox::remembering(policy("run-2"), &env, Some(&memo)).expect("starts");
    assert_eq!(starts(dir.path()), probed, "no start-up");
    assert_eq!(second.report(), first.report());
    let cell = second.cell("pytest").expect("cell");
    assert_eq!(
        cell.confinement.as_ref().and_then(|c| c.remembered.clone()),
        Some(entry.clone())
    );

    // A spawn that fails in a layer (here Landlock, given a file that is
    // not a ruleset) drops the entry...
    let broken = Confinement {
        landlock: Some(OwnedFd::from(
            std::fs::File::open("/dev/null").expect("open"),
        )),
        remembered: Some(entry.clone()),
        ..Confinement::default()
    };
    let spawned = ProcessBuilder::new("true")
        .confine(Arc::new(broken))
        .run(&Cancel::new());
    assert!(spawned.is_err());
    assert!(!entry.exists());
    // ...so the next run probes again.
    Sandbox::remembering(policy("run-3"), &env, Some(&memo)).expect("starts");
    assert_eq!(starts(dir.path()), 2 * probed);
    assert!(entry.is_file());
}
