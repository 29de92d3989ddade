//! Running pytest under the sandbox, with a junit XML report written into
//! the process's sandbox cell (outside the tested tree).
//!
//! `python -m pytest -q -p no:cacheprovider --rootdir <root> -c <config>
//! --confcutdir <config's folder> --junitxml <cell>/junit.xml -o
//! junit_family=xunit1`, cwd `root`, plus `--ignore` for every symlink that
//! leads out of the worktree ([`links`]). The configuration file is the one
//! pytest would find, but never above the worktree ([`config`]); without one
//! it is an empty `pytest.ini` in the cell and `--confcutdir` is `root`,
//! which is what pytest does by itself then. Failing tests,
//! collection errors, no tests (exit code 5) and timeouts are all values in
//! the [`TestRun`]; only a pytest that cannot be started, or a cancel, is an
//! `Err`.

use std::path::Path;
use std::time::Duration;

mod config;
mod links;

use super::junit::parse_junit;
use super::process::{cap_text, Ending};
use super::{PythonEnv, Sandbox, TestRun, ToolError};
use crate::cancel::Cancel;

/// pytest's exit code when it collected no tests.
pub const NO_TESTS_COLLECTED: i32 = 5;
/// How much of pytest's console output a run keeps.
pub const TEST_OUTPUT_CAP: usize = 32 * 1024;

pub(super) fn run(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    timeout: Duration,
    cancel: &Cancel,
) -> Result<TestRun, ToolError> {
    let root = &std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let cell = sandbox.cell("pytest")?;
    let junit = cell.dir().join("junit.xml");
    let (config, confcutdir) = match config::locate(root, &sandbox.boundary_of(root)) {
        Some(file) => {
            let folder = file.parent().unwrap_or(root).to_path_buf();
            (file, folder)
        }
        None => {
            let empty = cell.dir().join("pytest.ini");
            std::fs::write(&empty, "").map_err(|e| ToolError::Failed {
                command: format!("write {}", empty.display()),
                message: e.to_string(),
            })?;
            (empty, root.clone())
        }
    };
    let escaping = links::leading_out(root, &sandbox.boundary_of(root));
    let mut builder = cell
        .command(&env.python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir"])
        .arg(root)
        .arg("-c")
        .arg(&config)
        .arg("--confcutdir")
        .arg(&confcutdir)
        .arg("--junitxml")
        .arg(&junit)
        .args(["-o", "junit_family=xunit1", "--color=no"])
        .cwd(root)
        .timeout(timeout);
    for link in &escaping {
        builder = builder.arg(format!("--ignore={}", link.display()));
    }
    let out = builder.run(cancel).map_err(|e| ToolError::Failed {
        command: builder.command_line(),
        message: e.to_string(),
    })?;
    if out.ending == Ending::Cancelled {
        return Err(ToolError::Cancelled);
    }
    let mut output = cap_text(&out.combined(), TEST_OUTPUT_CAP);
    if !escaping.is_empty() {
        let names: Vec<String> = escaping
            .iter()
            .map(|l| l.strip_prefix(root).unwrap_or(l).display().to_string())
            .collect();
        output.push_str(&format!(
            "\n[swarm] not collected: symlinks leading out of the project: {}",
            names.join(", ")
        ));
    }
    let cases = match std::fs::read_to_string(&junit) {
        Ok(xml) => match parse_junit(&xml, root) {
            Ok(cases) => cases,
            Err(e) => {
                output.push_str(&format!("\n[swarm] {e}"));
                Vec::new()
            }
        },
        Err(_) => Vec::new(),
    };
    let timed_out = out.ending == Ending::TimedOut;
    if timed_out {
        output.push_str(&format!(
            "\n[swarm] pytest did not finish within {}s and was killed",
            timeout.as_secs()
        ));
    }
    let exit_code = out.exit_code();
    Ok(TestRun {
        cases,
        exit_code,
        timed_out,
        no_tests: exit_code == Some(NO_TESTS_COLLECTED),
        command: out.command,
        output,
        duration: out.duration,
    })
}
