//! The sandbox against hostile code under test, with real pytest: attacks
//! from a `conftest.py` and tests ([`hostile`]), processes that try to
//! outlive their run ([`lifetime`]), and ordinary projects that must behave
//! the same inside it ([`compat`]). Runs that need secrets in swarm's own
//! environment, or a SIGKILL of "swarm", happen in a child process of this
//! test binary.

use std::ffi::OsStr;
use std::process::Command;

use swarm::tools::{TestOutcome, TestRun};

mod compat;
mod hostile;
mod lifetime;

/// Runs one `#[ignore]`d test of this binary in a child process with `env`.
fn run_child(test: &str, env: &[(&str, &OsStr)]) {
    let output = child_command(test, env)
        .output()
        .expect("run the child test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "child {test} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The command that runs one `#[ignore]`d test of this binary with `env`.
fn child_command(test: &str, env: &[(&str, &OsStr)]) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("test binary"));
    command.args([
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

/// The variables pytest itself adds during a test.
fn set_by_pytest(name: &str) -> bool {
    matches!(name, "PYTEST_CURRENT_TEST" | "PYTEST_VERSION")
}

/// Whether a sandboxed test may see a variable of this name.
fn allowed_name(name: &str) -> bool {
    matches!(
        name,
        "PATH"
            | "LANG"
            | "LANGUAGE"
            | "TZ"
            | "HOME"
            | "TMPDIR"
            | "TMP"
            | "TEMP"
            | "VIRTUAL_ENV"
            | "PYTHONUSERBASE"
            | "PYTHONDONTWRITEBYTECODE"
            | "PYTHONUNBUFFERED"
            | "PYTHONHASHSEED"
            // swarm's own pytest plugin folder, in the cell's scratch (the
            // user's PYTHONPATH never is; `hostile` checks the value).
            | "PYTHONPATH"
    ) || name.starts_with("LC_")
        || name.starts_with("XDG_")
        || set_by_pytest(name)
}

/// The case ids and outcomes of a run, for comparing runs.
fn outcomes(run: &TestRun) -> Vec<(String, TestOutcome)> {
    run.cases
        .iter()
        .map(|c| (c.id.clone(), c.outcome))
        .collect()
}
