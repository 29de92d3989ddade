//! Where users get and hook swarm, for real: the PyPI wheel built by maturin
//! and installed with pip into a fresh virtualenv, the pre-commit
//! framework's `try-repo` on `.pre-commit-hooks.yaml`, and the GitHub
//! Action's run step (`hooks/action.sh`).
//!
//! Builds use the dev profile without debug info, in a target folder of
//! their own (`target/wheel-test`, shared by these tests): a build into the
//! test build's folder would replace `target/debug/swarm` while other tests
//! run it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::fixture::{fixture_dir, read_log, FixtureRepo};
use crate::support::repo::git_in;

pub(crate) fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where the wheels are built: beside the test build, never in it.
fn wheel_target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| project_root().join("target"))
        .join("wheel-test")
}

/// Held while a wheel is built: both builds leave their binary at the same
/// place in [`wheel_target_dir`], and one must not replace it while maturin
/// packs the other's.
static WHEEL_BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn wheel_build_lock() -> std::sync::MutexGuard<'static, ()> {
    WHEEL_BUILD.lock().unwrap_or_else(|e| e.into_inner())
}

/// A wheel build's environment: its own target folder, no debug info.
fn wheel_build(command: &mut Command) -> &mut Command {
    command
        .env("CARGO_TARGET_DIR", wheel_target_dir())
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
}

/// A command with no `SWARM_*` or provider variables from the developer's
/// shell, a private HOME, and cargo still found where it is installed.
pub(crate) fn hermetic(program: impl AsRef<std::ffi::OsStr>, home: &Path) -> Command {
    let real_home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home.join(".cargo"));
    let rustup_home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home.join(".rustup"));
    let mut command = Command::new(program);
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if name.starts_with("SWARM_")
            || name.ends_with("_API_KEY")
            || name.ends_with("_BASE_URL")
            || name == "VIRTUAL_ENV"
            || name.starts_with("PRE_COMMIT")
        {
            command.env_remove(name);
        }
    }
    command
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("CARGO_HOME", cargo_home)
        .env("RUSTUP_HOME", rustup_home)
        .env("SWARM_CACHE_DIR", home.join(".cache/swarm"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("NO_COLOR", "1");
    command
}

fn run(command: &mut Command, what: &str) -> Output {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `python3 -m <module>` is importable, or the test says what to install.
fn require_module(module: &str, install: &str) {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "{module} is needed: python3 -m pip install {install}");
}

/// The last line of stdout as the run's JSON summary.
fn last_json(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[test]
fn the_wheel_installs_with_pip_and_runs_with_uvx_and_both_run_the_demo() {
    require_module("maturin", "maturin");
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    fs::create_dir_all(&home).unwrap();
    let wheels = tmp.path().join("wheels");
    let building = wheel_build_lock();
    run(
        wheel_build(
            hermetic("python3", &home)
                .args(["-m", "maturin", "build", "--profile", "dev", "--out"])
                .arg(&wheels)
                .current_dir(project_root()),
        ),
        "maturin build",
    );
    drop(building);
    let wheel: Vec<PathBuf> = fs::read_dir(&wheels)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(wheel.len(), 1, "one wheel: {wheel:?}");
    let name = wheel[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("swarm_refactor-") && name.ends_with(".whl"),
        "{name}"
    );

    let venv = tmp.path().join("venv");
    run(
        hermetic("python3", &home).args(["-m", "venv"]).arg(&venv),
        "python3 -m venv",
    );
    run(
        hermetic(venv.join("bin/python"), &home)
            .args(["-m", "pip", "install", "--no-index", "--quiet"])
            .args(["--disable-pip-version-check"])
            .arg(&wheel[0]),
        "pip install the wheel",
    );
    let swarm = venv.join("bin/swarm");
    assert!(swarm.is_file(), "the wheel installs the swarm command");
    let version = run(hermetic(&swarm, &home).arg("--version"), "swarm --version");
    assert!(
        String::from_utf8_lossy(&version.stdout).contains(env!("CARGO_PKG_VERSION")),
        "{version:?}"
    );

    // Run as an activated virtualenv (or uvx) would: its bin first on PATH.
    // pytest and pylint are not in it; the project's python3 further down
    // PATH has them, so no tool environment is bootstrapped.
    let work = tmp.path().join("work");
    fs::create_dir_all(&work).unwrap();
    let path = std::env::join_paths(std::iter::once(venv.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let out = hermetic(&swarm, &home)
        .args(["demo", "--json"])
        .current_dir(&work)
        .env("VIRTUAL_ENV", &venv)
        .env("PATH", path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = last_json(&out);
    assert_eq!(summary["status"], "success", "{summary}");
    assert_eq!(summary["fixture"], "single_module");
    assert!(
        !stderr.contains("preparing a tool environment"),
        "swarm's own virtualenv is not the project's: {stderr}"
    );
    let log = read_log(&work.join("logs/experiment_data.json"));
    assert!(log.iter().any(|e| e["agent"] == "Judge"));

    // `uvx --from swarm-refactor swarm ...`, from the same wheel (offline:
    // nothing else is needed).
    require_module("uv", "uv");
    let uv_work = tmp.path().join("uv-work");
    fs::create_dir_all(&uv_work).unwrap();
    let out = hermetic("python3", &home)
        .args(["-m", "uv", "tool", "run", "--offline", "--from"])
        .arg(&wheel[0])
        .args(["swarm", "demo", "--json"])
        .current_dir(&uv_work)
        .env("UV_CACHE_DIR", tmp.path().join("uv-cache"))
        .env("UV_TOOL_DIR", tmp.path().join("uv-tools"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(last_json(&out)["status"], "success");
    assert!(
        !stderr.contains("preparing a tool environment"),
        "uvx's environment is not the project's: {stderr}"
    );
}

#[test]
fn pre_commit_try_repo_runs_swarm_as_a_manual_hook_without_touching_the_tree() {
    require_module("pre_commit", "pre-commit");
    let fixture = FixtureRepo::new("single_module");
    let repo = &fixture.repo;
    let home = repo.tmp().join("pc-home");
    fs::create_dir_all(&home).unwrap();
    let head = repo.head();
    let before = repo.snapshot();
    let cassette = fixture_dir("single_module").join("replay.json");

    let building = wheel_build_lock();
    let out = wheel_build(&mut hermetic("python3", &home))
        .args(["-m", "pre_commit", "try-repo"])
        .arg(project_root())
        .args(["swarm", "--hook-stage", "manual", "--all-files"])
        .current_dir(&repo.root)
        .env("PRE_COMMIT_HOME", home.join("pre-commit"))
        // pre-commit builds the wheel with pip and maturin: a dev build
        // sharing the wheel test's dependencies, not a release build.
        .env("MATURIN_PEP517_ARGS", "--profile dev")
        .env("SWARM_PROVIDER", "replay")
        .env("SWARM_CASSETTE", &cassette)
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "Test Author")
        .env("GIT_COMMITTER_EMAIL", "author@example.com")
        .output()
        .unwrap();
    drop(building);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("swarm success"), "{text}");
    assert!(text.contains("git merge --ff-only swarm/"), "{text}");
    assert!(
        !text.contains("preparing a tool environment"),
        "pre-commit's hook environment is not the project's: {text}"
    );

    // A dry run: the branch, the files and the index are as they were, and
    // the log went under the git directory (no untracked file).
    assert_eq!(repo.head(), head);
    assert_eq!(repo.snapshot(), before);
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    let log = read_log(&repo.root.join(".git/swarm/experiment_data.json"));
    assert!(log.iter().any(|e| e["agent"] == "Judge"));
    // The result is on the run branch.
    let best = repo.git(&[
        "for-each-ref",
        "--format=%(refname:short)",
        "refs/heads/swarm/",
    ]);
    let best = best
        .lines()
        .find(|b| b.ends_with("/best"))
        .unwrap_or_else(|| panic!("a run branch: {best}"));
    for (path, fixed) in fixture.fixed_files() {
        assert_eq!(
            repo.git(&["show", &format!("{best}:{path}")]),
            fixed.trim_end()
        );
    }
}

/// A bare `origin` beside the fixture's repository, cloned from it.
pub(crate) fn add_origin(fixture: &FixtureRepo) {
    let repo = &fixture.repo;
    git_in(
        repo.tmp(),
        &repo.home,
        &[
            "clone",
            "--quiet",
            "--bare",
            repo.root.to_str().unwrap(),
            "origin.git",
        ],
    );
    let origin = repo.tmp().join("origin.git");
    repo.git(&["remote", "add", "origin", origin.to_str().unwrap()]);
}

/// The composite action's `action.yml` runs `hooks/action.sh`: that step
/// as GitHub runs it on the fixture (the built swarm first on `PATH`), with
/// `args` for swarm and the job summary and outputs written to files.
pub(crate) fn action_command(
    fixture: &FixtureRepo,
    args: &str,
    summary: &Path,
    outputs: &Path,
) -> Command {
    let repo = &fixture.repo;
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_swarm")).parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut command = hermetic("bash", &repo.home);
    command
        .arg(project_root().join("hooks/action.sh"))
        .current_dir(&repo.root)
        .env("PATH", path)
        .env("SWARM_ACTION_TARGET", ".")
        .env("SWARM_ACTION_ARGS", args)
        .env("GITHUB_STEP_SUMMARY", summary)
        .env("GITHUB_OUTPUT", outputs);
    command
}

/// The step with a bare `origin` to push the run branch to.
fn action_step(fixture: &FixtureRepo, args: &str, summary: &Path, outputs: &Path) -> Output {
    add_origin(fixture);
    action_command(fixture, args, summary, outputs)
        .env("SWARM_ACTION_PUSH", "true")
        .output()
        .unwrap()
}

#[test]
fn the_action_step_writes_the_job_summary_and_outputs_and_pushes_the_run_branch() {
    let action = fs::read_to_string(project_root().join("action.yml")).unwrap();
    assert!(action.contains("using: composite"), "{action}");
    assert!(action.contains("hooks/action.sh"), "{action}");

    let fixture = FixtureRepo::new("single_module");
    let cassette = fixture_dir("single_module").join("replay.json");
    let summary = fixture.repo.tmp().join("step-summary.md");
    let outputs = fixture.repo.tmp().join("outputs.txt");
    let head = fixture.repo.head();
    let out = action_step(
        &fixture,
        &format!("--provider replay --cassette {}", cassette.display()),
        &summary,
        &outputs,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");

    let text = fs::read_to_string(&summary).unwrap();
    assert!(text.contains("## swarm: success (exit 0)"), "{text}");
    assert!(text.contains("| tests passing | 4/8 | 8/8 |"), "{text}");
    let outputs = fs::read_to_string(&outputs).unwrap();
    assert!(outputs.contains("status=success\n"), "{outputs}");
    assert!(outputs.contains("exit-code=0\n"), "{outputs}");
    let branch = outputs
        .lines()
        .find_map(|l| l.strip_prefix("branch="))
        .unwrap_or_default()
        .to_string();
    assert!(
        branch.starts_with("swarm/") && branch.ends_with("/best"),
        "{outputs}"
    );
    // The checked-out branch is left alone; the result went to origin.
    assert_eq!(fixture.repo.head(), head);
    let remote = fixture.repo.git(&["ls-remote", "origin", &branch]);
    let local = fixture.repo.git(&["rev-parse", &branch]);
    assert!(remote.starts_with(&local), "{remote} vs {local}");
    let json: Value = serde_json::from_str(
        &fs::read_to_string(fixture.repo.root.join("swarm-summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["branch"], branch.as_str());
}

#[test]
fn the_action_step_reports_a_missing_key_in_the_job_summary() {
    let fixture = FixtureRepo::new("single_module");
    let summary = fixture.repo.tmp().join("step-summary.md");
    let outputs = fixture.repo.tmp().join("outputs.txt");
    let out = action_step(&fixture, "", &summary, &outputs);
    assert_eq!(out.status.code(), Some(1));
    let text = fs::read_to_string(&summary).unwrap();
    assert!(text.contains("## swarm: error (exit 1)"), "{text}");
    assert!(
        text.contains("**Error:**") && text.contains("API_KEY"),
        "{text}"
    );
    let outputs = fs::read_to_string(&outputs).unwrap();
    assert!(outputs.contains("branch=\n"), "{outputs}");
    let pushed = fixture
        .repo
        .git(&["ls-remote", "origin", "refs/heads/swarm/*"]);
    assert_eq!(pushed, "", "nothing to push");
}
