//! Finding the interpreter: PATH, `.venv`, active venv, `SWARM_PYTHON`, and
//! what happens when pytest or pylint are missing.

use swarm::tools::*;

use crate::support::*;

#[test]
fn system_python_is_found_with_tool_versions() {
    let env = system_env();
    assert_eq!(env.source, EnvSource::SystemPython);
    assert_eq!(env.pytest_version, "9.2.0");
    assert_eq!(env.pylint_version, "4.1.4");
}

#[test]
fn dot_venv_then_active_venv_then_swarm_python_win() {
    let repo = project(&[("pkg/mod.py", "X = 1\n")]);
    std::fs::create_dir(repo.path().join(".git")).expect("mkdir .git");
    // Virtualenvs as users make them, seeing the machine's pytest and pylint.
    make_venv(&repo.path().join(".venv"), true);
    let target = repo.path().join("pkg");

    let found = resolve_env_with(&target, false, &|_| {}, &path_only_settings())
        .expect("the .venv python has the tools");
    assert_eq!(found.source, EnvSource::DotVenv);
    assert!(found.python.ends_with(".venv/bin/python"));

    let active = project(&[]);
    make_venv(active.path(), true);
    let settings = EnvSettings {
        virtual_env: Some(active.path().to_path_buf()),
        ..path_only_settings()
    };
    let found = resolve_env_with(&target, false, &|_| {}, &settings).expect("active venv");
    assert_eq!(found.source, EnvSource::ActiveVenv);

    let settings = EnvSettings {
        swarm_python: Some(real_python()),
        ..settings
    };
    let found = resolve_env_with(&target, false, &|_| {}, &settings).expect("explicit python");
    assert_eq!(found.source, EnvSource::Explicit);
    assert_eq!(found.python, real_python());
}

#[test]
fn missing_tools_without_bootstrap_is_a_hint() {
    let dir = project(&[]);
    let fake = script(
        dir.path(),
        "python",
        "#!/bin/sh\necho 'No module named pytest' >&2\nexit 1\n",
    );
    let settings = EnvSettings {
        swarm_python: Some(fake),
        cache_dir: Some(dir.path().join("cache")),
        ..path_only_settings()
    };
    let steps = std::cell::RefCell::new(Vec::new());
    let err = resolve_env_with(
        dir.path(),
        false,
        &|s| steps.borrow_mut().push(s.to_string()),
        &settings,
    )
    .expect_err("no tools");
    let ToolError::Missing(MissingTool::TestTools { tools, .. }) = &err else {
        panic!("expected the test tools missing, got {err:?}");
    };
    assert_eq!(tools, &["pytest", "pylint"]);
    // What the user reads: the fact, then how to get the tools.
    let hint = swarm::error::SwarmError::from(err).to_string();
    assert!(hint.contains("pytest and pylint not found"), "{hint}");
    assert!(hint.contains("pip install pytest pylint"), "{hint}");
    assert!(hint.contains("--no-bootstrap"), "{hint}");
    assert!(steps.borrow().is_empty());
    assert!(!dir.path().join("cache").exists(), "nothing bootstrapped");
}

/// Creates a real tool venv from PyPI: slow and needs network, so opt-in
/// (`cargo test --test it bootstrap -- --ignored`).
#[test]
#[ignore = "downloads pytest and pylint from PyPI"]
fn bootstrap_creates_and_reuses_a_tool_venv() {
    let dir = project(&[]);
    let bare = dir.path().join("bare");
    make_venv(&bare, false);
    let settings = EnvSettings {
        swarm_python: Some(bare.join("bin/python")),
        cache_dir: Some(dir.path().join("cache")),
        ..path_only_settings()
    };
    let steps = std::cell::RefCell::new(Vec::new());
    let env = resolve_env_with(
        dir.path(),
        true,
        &|s| steps.borrow_mut().push(s.to_string()),
        &settings,
    )
    .expect("bootstrap succeeds");
    assert_eq!(env.source, EnvSource::Bootstrapped);
    assert_eq!(
        (env.pytest_version.as_str(), env.pylint_version.as_str()),
        ("9.2.0", "4.1.4")
    );
    let tools = dir.path().join("cache/tools");
    let names = list_files(&tools);
    assert!(names[0].starts_with("py3."), "{names:?}");
    assert!(names[0].contains("-pytest9.2.0-pylint4.1.4"), "{names:?}");
    assert!(steps
        .borrow()
        .iter()
        .any(|s| s.contains("installing pytest==9.2.0")));

    let again = std::cell::RefCell::new(Vec::new());
    let reused = resolve_env_with(
        dir.path(),
        true,
        &|s| again.borrow_mut().push(s.to_string()),
        &settings,
    )
    .expect("reuse");
    assert_eq!(reused.python, env.python);
    assert!(again.borrow().iter().any(|s| s.contains("reusing")));
}

#[test]
fn the_real_interpreter_and_its_folders_are_probed() {
    let env = system_env();
    assert_eq!(env.python, real_python(), "tools run the real interpreter");
    let out = std::process::Command::new(real_python())
        .args(["-c", "import sys; print(sys.prefix)"])
        .output()
        .expect("run python");
    let prefix = std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert!(env.layout.prefixes.contains(&prefix), "{:?}", env.layout);
    assert!(
        env.layout
            .sys_path
            .iter()
            .any(|p| p.ends_with("site-packages")),
        "{:?}",
        env.layout.sys_path
    );
    // A virtualenv only when python3 is one (as the checks' own, .ci/setup).
    let out = std::process::Command::new(real_python())
        .args([
            "-c",
            "import sys; print(sys.prefix if sys.prefix != sys.base_prefix else '')",
        ])
        .output()
        .expect("run python");
    let venv = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(
        env.layout.virtual_env,
        (!venv.is_empty()).then(|| std::path::PathBuf::from(venv))
    );
}

#[test]
fn a_shim_that_needs_the_real_home_still_runs_the_tools_in_the_sandbox() {
    let dir = project(&[("proj/tests/test_ok.py", "def test_ok():\n    assert True\n")]);
    let home = std::env::var("HOME").expect("HOME");
    // Like a pyenv shim: it only works with the user's own HOME.
    let shim = script(
        dir.path(),
        "python3",
        &format!(
            "#!/bin/sh\n[ \"$HOME\" = {home:?} ] || {{ echo 'shim: no pyenv root' >&2; exit 1; }}\nexec {:?} \"$@\"\n",
            real_python()
        ),
    );
    let settings = EnvSettings {
        swarm_python: Some(shim),
        ..path_only_settings()
    };
    let env = resolve_env_with(dir.path(), false, &|_| {}, &settings).expect("resolves");
    assert_eq!(env.source, EnvSource::Explicit);
    assert_eq!(env.python, real_python(), "{env:#?}");
    let root = dir.path().join("proj");
    let sandbox = Sandbox::new(SandboxPolicy::for_worktree(&root), &env).expect("sandbox");
    let run = run_pytest(
        &env,
        &sandbox,
        &root,
        std::time::Duration::from_secs(60),
        &swarm::cancel::Cancel::new(),
    )
    .expect("pytest runs");
    assert_eq!(run.exit_code, Some(0), "{}", run.output);
}

const RECORD_ENV: &str = r#"
import json, os, sys


def test_record():
    import userpkg
    with open(os.path.join(os.path.dirname(__file__), "seen.json"), "w") as handle:
        json.dump({"venv": os.environ.get("VIRTUAL_ENV"), "prefix": sys.prefix,
                   "userbase": os.environ.get("PYTHONUSERBASE"), "value": userpkg.VALUE}, handle)
"#;

/// `lib/pythonX.Y/site-packages` for the machine's interpreter.
fn user_site_suffix() -> String {
    let out = std::process::Command::new(real_python())
        .args([
            "-c",
            "import sys; print('lib/python%d.%d/site-packages' % sys.version_info[:2])",
        ])
        .output()
        .expect("run python");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_virtualenv_and_a_user_site_keep_working_in_the_sandbox() {
    let dir = project(&[("proj/tests/test_env.py", RECORD_ENV)]);
    // A user base outside every allowed folder, holding a `pip install --user` package.
    let base = dir.path().join("userbase");
    write(&base.join(user_site_suffix()), "userpkg.py", "VALUE = 42\n");
    let venv = dir.path().join("venv");
    make_venv(&venv, true);
    let settings = EnvSettings {
        swarm_python: Some(venv.join("bin/python")),
        ..path_only_settings()
    };
    let mut env = resolve_env_with(dir.path(), false, &|_| {}, &settings).expect("the venv");
    assert_eq!(env.python, venv.join("bin/python"));
    assert_eq!(env.layout.virtual_env.as_deref(), Some(venv.as_path()));
    // A venv has no user site; give it one as a user's own interpreter would have.
    env.layout.user_base = Some(base.clone());
    let root = dir.path().join("proj");
    let sandbox = Sandbox::new(SandboxPolicy::for_worktree(&root), &env).expect("sandbox");
    assert!(sandbox.report().landlock.is_active());
    let run = run_pytest(
        &env,
        &sandbox,
        &root,
        std::time::Duration::from_secs(60),
        &swarm::cancel::Cancel::new(),
    )
    .expect("pytest runs");
    assert_eq!(run.exit_code, Some(0), "{}", run.output);
    let seen: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("tests/seen.json")).expect("seen"))
            .expect("json");
    assert_eq!(seen["venv"], venv.to_string_lossy().as_ref());
    assert_eq!(seen["prefix"], venv.to_string_lossy().as_ref());
    assert_eq!(seen["userbase"], base.to_string_lossy().as_ref());
    assert_eq!(seen["value"], 42);
}

/// A launcher (like pyenv's shim) is started once, and that one start-up
/// tells both the layout and the tools' versions: the real executable
/// behind it is never started for `--version` (each would cost as much as
/// importing the tool). Only a tool the metadata cannot vouch for is asked
/// (see `a_tool_the_metadata_cannot_vouch_for_is_asked_to_run` in the
/// probe's unit tests).
#[test]
fn one_start_up_tells_the_layout_and_the_versions() {
    let dir = project(&[]);
    let calls = dir.path().join("calls");
    let real = dir.path().join("real-python");
    // Records how it was asked, then answers as the machine's python,
    // with this script named as the executable.
    script(
        dir.path(),
        "real-python",
        &format!(
            r#"#!/bin/sh
echo "real $1" >> {calls:?}
{python:?} "$@" | sed "s|\"executable\": \"[^\"]*\"|\"executable\": \"$0\"|"
"#,
            python = real_python(),
        ),
    );
    let shim = script(
        dir.path(),
        "python3",
        &format!("#!/bin/sh\necho \"shim $1\" >> {calls:?}\nexec {real:?} \"$@\"\n"),
    );
    let settings = EnvSettings {
        swarm_python: Some(shim),
        ..path_only_settings()
    };
    let env = resolve_env_with(dir.path(), false, &|_| {}, &settings).expect("resolves");
    assert_eq!(env.python, real);
    assert_eq!(
        (env.pytest_version.as_str(), env.pylint_version.as_str()),
        ("9.2.0", "4.1.4")
    );
    let versions = |module: &str| {
        std::process::Command::new(real_python())
            .args(["-m", module, "--version"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .expect("the machine's python runs")
    };
    assert!(versions("pytest").contains(&env.pytest_version));
    assert!(versions("pylint").contains(&env.pylint_version));
    let calls = std::fs::read_to_string(&calls).expect("the shim ran");
    assert_eq!(calls.lines().next(), Some("shim -c"), "{calls}");
    assert_eq!(calls.lines().nth(1), Some("real -c"), "{calls}");
    assert_eq!(calls.lines().count(), 2, "one start-up in all: {calls}");
}

/// A stand-in for pyenv's shim at `<root>/shims/python3`: it says it is
/// pyenv's (its `PYENV_ROOT`), counts its starts in `calls` (one line each)
/// and runs `python`. Returns the shim and a counter of its starts.
fn counting_shim(
    root: &std::path::Path,
    calls: &std::path::Path,
    python: &std::path::Path,
) -> (std::path::PathBuf, impl Fn() -> usize) {
    std::fs::create_dir_all(root.join("shims")).expect("mkdir");
    let shim = script(
        &root.join("shims"),
        "python3",
        &format!(
            "#!/bin/sh\nexport PYENV_ROOT={root:?}\necho \"$1\" >> {calls:?}\nexec {python:?} \"$@\" # as pyenv exec does\n",
        ),
    );
    let calls = calls.to_path_buf();
    let starts = move || {
        std::fs::read_to_string(&calls)
            .map(|c| c.lines().count())
            .unwrap_or(0)
    };
    (shim, starts)
}

#[test]
fn the_probe_is_remembered_until_the_interpreter_or_its_packages_change() {
    let dir = project(&[]);
    let calls = dir.path().join("calls");
    // A virtualenv of the machine's python (its packages through the
    // system site), started through a shim that pyenv's shim stands for.
    let venv = dir.path().join("venv");
    make_venv(&venv, true);
    let root = dir.path().join("pyenv");
    let (shim, starts) = counting_shim(&root, &calls, &venv.join("bin/python"));
    std::fs::write(root.join("version"), "3.11\n").expect("write version");
    let settings = EnvSettings {
        swarm_python: Some(shim),
        cache_dir: Some(dir.path().join("cache")),
        ..path_only_settings()
    };
    let resolve = || resolve_env_with(dir.path(), false, &|_| {}, &settings).expect("resolves");
    // A change is only seen once the file system's clock has moved on
    // (see swarm's memo): let it, after each change.
    let settle = || std::thread::sleep(std::time::Duration::from_millis(200));
    settle();
    let first = resolve();
    assert_eq!(starts(), 1);
    assert_eq!(first.python, venv.join("bin/python"));
    assert_eq!(first.layout.virtual_env.as_deref(), Some(venv.as_path()));
    assert_eq!(resolve(), first);
    assert_eq!(resolve(), first);
    assert_eq!(starts(), 1, "later runs start no Python");

    // A package installed into the virtualenv: probed again, once.
    let site = first
        .layout
        .sys_path
        .iter()
        .find(|p| p.starts_with(&venv) && p.ends_with("site-packages"))
        .expect("the virtualenv's site-packages is on sys.path")
        .clone();
    std::fs::create_dir(site.join("newpkg-1.0.dist-info")).expect("mkdir");
    settle();
    assert_eq!(resolve(), first);
    assert_eq!(resolve(), first);
    assert_eq!(starts(), 2);

    // pyenv would pick another version: probed again.
    std::fs::write(root.join("version"), "3.12\n").expect("write version");
    settle();
    resolve();
    resolve();
    assert_eq!(starts(), 3);
    // The interpreter replaced: probed again.
    std::fs::remove_file(venv.join("bin/python")).expect("rm");
    std::os::unix::fs::symlink(real_python(), venv.join("bin/python")).expect("symlink");
    settle();
    resolve();
    resolve();
    assert_eq!(starts(), 4);
}

#[test]
fn pyenvs_shim_is_not_started_when_its_files_name_the_version() {
    let dir = project(&[]);
    let calls = dir.path().join("calls");
    // A virtualenv as a pyenv version (as pyenv-virtualenv makes one),
    // behind a counting stand-in for pyenv's shim.
    let venv = dir.path().join("venv");
    make_venv(&venv, true);
    let root = dir.path().join("pyenv");
    std::fs::create_dir_all(root.join("versions")).expect("mkdir");
    std::os::unix::fs::symlink(&venv, root.join("versions/tools-3")).expect("symlink");
    std::fs::write(root.join("version"), "tools-3\n").expect("write version");
    let (shim, starts) = counting_shim(&root, &calls, &root.join("versions/tools-3/bin/python3"));
    let settings = EnvSettings {
        swarm_python: Some(shim),
        ..path_only_settings()
    };
    let resolve = || resolve_env_with(dir.path(), false, &|_| {}, &settings).expect("resolves");
    // A version picked by this process's own environment (PYENV_VERSION, a
    // .python-version above the tests' folder) is not in this pyenv: then
    // only the shim can tell, and is started.
    let picked_here = std::env::var_os("PYENV_VERSION").is_some_and(|v| !v.is_empty())
        || std::env::var_os("PYENV_DIR").is_some()
        || std::env::current_dir()
            .expect("cwd")
            .ancestors()
            .any(|d| d.join(".python-version").is_file());
    let direct = resolve();
    assert_eq!(starts(), usize::from(picked_here));
    assert_eq!(
        direct
            .layout
            .virtual_env
            .as_deref()
            .map(|v| v.canonicalize().expect("venv")),
        Some(venv.canonicalize().expect("venv"))
    );
    // Two versions named: only pyenv can pick, the shim runs.
    std::fs::write(root.join("version"), "tools-3\nother\n").expect("write version");
    let through_shim = resolve();
    assert_eq!(starts(), 1 + usize::from(picked_here));
    assert_eq!(through_shim.pytest_version, direct.pytest_version);
    assert_eq!(through_shim.pylint_version, direct.pylint_version);
    assert_eq!(through_shim.layout.sys_path, direct.layout.sys_path);
}
