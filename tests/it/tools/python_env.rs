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
    let venv_bin = repo.path().join(".venv/bin");
    std::fs::create_dir_all(&venv_bin).expect("mkdir");
    std::os::unix::fs::symlink(real_python(), venv_bin.join("python")).expect("symlink");
    let target = repo.path().join("pkg");

    let found = resolve_env_with(&target, false, &|_| {}, &path_only_settings())
        .expect("the .venv python has the tools");
    assert_eq!(found.source, EnvSource::DotVenv);
    assert!(found.python.ends_with(".venv/bin/python"));

    let active = project(&[]);
    std::fs::create_dir_all(active.path().join("bin")).expect("mkdir");
    std::os::unix::fs::symlink(real_python(), active.path().join("bin/python")).expect("symlink");
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
    let ToolError::Missing(hint) = err else {
        panic!("expected Missing, got {err:?}");
    };
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
    let made = std::process::Command::new(real_python())
        .args(["-m", "venv", "--without-pip"])
        .arg(&bare)
        .status()
        .expect("python -m venv");
    assert!(made.success());
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
