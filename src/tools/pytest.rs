//! Running pytest under the sandbox, with a junit XML report written into
//! the process's sandbox cell (outside the tested tree).
//!
//! `python -m pytest -q -p no:cacheprovider --rootdir <root> --junitxml
//! <cell>/junit.xml -o junit_family=xunit1`, cwd `root`. Failing tests,
//! collection errors, no tests (exit code 5) and timeouts are all values in
//! the [`TestRun`]; only a pytest that cannot be started, or a cancel, is an
//! `Err`.

use std::path::Path;
use std::time::Duration;

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
    let builder = cell
        .command(&env.python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir"])
        .arg(root)
        .arg("--junitxml")
        .arg(&junit)
        .args(["-o", "junit_family=xunit1", "--color=no"])
        .cwd(root)
        .timeout(timeout);
    let out = builder.run(cancel).map_err(|e| ToolError::Failed {
        command: builder.command_line(),
        message: e.to_string(),
    })?;
    if out.ending == Ending::Cancelled {
        return Err(ToolError::Cancelled);
    }
    let mut output = cap_text(&out.combined(), TEST_OUTPUT_CAP);
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
