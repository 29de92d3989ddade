//! Running pytest with a junit XML report written outside the tested tree.
//!
//! `python -m pytest -q -p no:cacheprovider --rootdir <root> --junitxml <tmp>
//! -o junit_family=xunit1`, cwd `root`. Failing tests, collection errors, no
//! tests (exit code 5) and timeouts are all values in the [`TestRun`]; only a
//! pytest that cannot be started, or a cancel, is an `Err`.

use std::path::Path;
use std::time::Duration;

use super::junit::parse_junit;
use super::process::{cap_text, Ending, ProcessBuilder};
use super::{PythonEnv, TestRun, ToolError};
use crate::cancel::Cancel;

/// pytest's exit code when it collected no tests.
pub const NO_TESTS_COLLECTED: i32 = 5;
/// How much of pytest's console output a run keeps.
pub const TEST_OUTPUT_CAP: usize = 32 * 1024;

pub(super) fn run(
    env: &PythonEnv,
    root: &Path,
    timeout: Duration,
    cancel: &Cancel,
) -> Result<TestRun, ToolError> {
    let root = &std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let report_dir = report_dir(root)?;
    let junit = report_dir.path().join("junit.xml");
    let builder = ProcessBuilder::new(&env.python)
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

/// A fresh temporary folder for the report that is not inside `root`.
fn report_dir(root: &Path) -> Result<tempfile::TempDir, ToolError> {
    let failed = |e: std::io::Error| ToolError::Failed {
        command: "create junit report folder".to_string(),
        message: e.to_string(),
    };
    let dir = tempfile::Builder::new()
        .prefix("swarm-pytest-")
        .tempdir()
        .map_err(failed)?;
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let canonical_dir = dir
        .path()
        .canonicalize()
        .unwrap_or_else(|_| dir.path().to_path_buf());
    if !canonical_dir.starts_with(&canonical_root) {
        return Ok(dir);
    }
    // The system temp dir lies inside the tested tree: use the tree's parent.
    let parent = canonical_root.parent().unwrap_or(Path::new("/"));
    tempfile::Builder::new()
        .prefix(".swarm-pytest-")
        .tempdir_in(parent)
        .map_err(failed)
}
