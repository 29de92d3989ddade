//! Running pytest under the sandbox, with a junit XML report written into
//! the process's sandbox cell (outside the tested tree).
//!
//! `python -m pytest -q -p no:cacheprovider -p _swarm_pytest_plugin
//! --swarm-… --rootdir <root> -c <config> --confcutdir <config's folder>
//! --junitxml <cell>/junit.xml -o junit_family=xunit1`, cwd `root`, plus
//! `--ignore` for every symlink that leads out of the worktree ([`links`]).
//! The configuration file is the one pytest would find, but never above the
//! worktree ([`config`]); without one it is an empty `pytest.ini` in the
//! cell and `--confcutdir` is `root`, which is what pytest does by itself
//! then.
//!
//! swarm's own plugin (`swarm_plugin.py`, embedded in the binary, written
//! into the cell beside the import guard of [`super::worktree`] and put on
//! `PYTHONPATH` with it, so nothing needs installing) stops
//! a test past the per-test limit, and writes each result as it finishes;
//! when the whole run is killed before junit XML exists, [`results`] reads
//! those. Failing tests, collection errors, no tests (exit code 5) and
//! timeouts are all values in the [`TestRun`]; only a pytest that cannot be
//! started, or a cancel, is an `Err`.
//!
//! The code under test runs in pytest's process, so the junit XML and the
//! results stream are checked against each other and against the digest
//! the plugin writes last before the process ends ([`trust`]): results
//! changed after pytest wrote them count as errors, never as passes.
//!
//! [`run_only`] runs chosen tests: their node ids go to the plugin in a
//! file in the cell (`--swarm-only`, no command-line limits or quoting), the
//! plugin deselects the others after writing every collected id.

use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) mod config;
mod links;
mod results;
pub mod symptoms;
mod trust;

use super::junit::parse_junit;
use super::process::{cap_text, Ending, ProcessBuilder, ProcessOutput};
use super::sandbox::Cell;
use super::worktree::ImportGuard;
use super::{PythonEnv, Sandbox, TestCase, TestLimits, TestOutcome, TestRun, ToolError};
use crate::cancel::Cancel;

/// pytest's exit code when it collected no tests.
pub const NO_TESTS_COLLECTED: i32 = 5;
/// How much of pytest's console output a run keeps.
pub const TEST_OUTPUT_CAP: usize = 32 * 1024;
/// The module name swarm's plugin is written and loaded as.
const PLUGIN_MODULE: &str = "_swarm_pytest_plugin";
/// The plugin's source.
const PLUGIN_SOURCE: &str = include_str!("swarm_plugin.py");

pub(super) fn run(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    limits: TestLimits,
    cancel: &Cancel,
) -> Result<TestRun, ToolError> {
    run_only(env, sandbox, root, limits, None, cancel).map(|(run, _)| run)
}

/// [`run`], restricted to the tests `only` names (node ids) when given:
/// then also every id a full run would have collected, when pytest got
/// that far (`None` otherwise).
pub(super) fn run_only(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    limits: TestLimits,
    only: Option<&[String]>,
    cancel: &Cancel,
) -> Result<(TestRun, Option<Vec<String>>), ToolError> {
    let root = &std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let cell = sandbox.cell("pytest")?;
    let boundary = sandbox.boundary_of(root);
    let guard = ImportGuard::write(&cell, sandbox, root)?;
    let files = RunFiles::prepare(&cell, &guard, &boundary, root, only)?;
    let escaping = links::leading_out(root, &boundary);
    let builder = guard.apply(command(&cell, env, root, limits, &files, &escaping));
    let out = builder.run(cancel).map_err(|source| ToolError::Run {
        command: builder.command_line(),
        source,
    })?;
    if out.ending == Ending::Cancelled {
        return Err(ToolError::Cancelled);
    }
    guard.check(&out.command)?;
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
    let cases = read_cases(&files, root, &out, limits.run, &mut output);
    let exit_code = out.exit_code();
    let collected = only.and_then(|_| {
        let text = std::fs::read_to_string(&files.results).ok()?;
        results::selection(&text)
    });
    let run = TestRun {
        cases,
        exit_code,
        timed_out: out.ending == Ending::TimedOut,
        no_tests: exit_code == Some(NO_TESTS_COLLECTED),
        command: out.command,
        output,
        duration: out.duration,
    };
    Ok((run, collected))
}

/// The files of one pytest run in its sandbox cell.
struct RunFiles {
    /// Where pytest writes its junit XML.
    junit: PathBuf,
    /// Where the plugin writes each result as it finishes.
    results: PathBuf,
    /// Where faulthandler dumps the stacks before the run's deadline.
    stacks: PathBuf,
    /// The configuration file pytest reads (`-c`).
    config: PathBuf,
    /// The folder pytest looks for `conftest.py` no higher than.
    confcutdir: PathBuf,
    /// The file listing the tests to run, when only some are.
    only: Option<PathBuf>,
}

impl RunFiles {
    /// Writes the plugin beside the import guard (on `PYTHONPATH`), finds
    /// pytest's configuration under `boundary` (or writes an empty one into
    /// the cell) and, with `only`, the list of tests to run.
    fn prepare(
        cell: &Cell,
        guard: &ImportGuard,
        boundary: &Path,
        root: &Path,
        only: Option<&[String]>,
    ) -> Result<Self, ToolError> {
        let dir = cell.dir();
        write_file(
            &guard.dir().join(format!("{PLUGIN_MODULE}.py")),
            PLUGIN_SOURCE,
        )?;
        let (config, confcutdir) = match config::locate(root, boundary) {
            Some(file) => {
                let folder = file.parent().unwrap_or(root).to_path_buf();
                (file, folder)
            }
            None => {
                let empty = dir.join("pytest.ini");
                write_file(&empty, "")?;
                (empty, root.to_path_buf())
            }
        };
        let only = match only {
            Some(ids) => {
                let listing = dir.join("only.txt");
                let mut text = ids.join("\n");
                text.push('\n');
                write_file(&listing, &text)?;
                Some(listing)
            }
            None => None,
        };
        Ok(Self {
            junit: dir.join("junit.xml"),
            results: dir.join("results.jsonl"),
            stacks: dir.join("stacks.txt"),
            config,
            confcutdir,
            only,
        })
    }
}

/// The pytest command line of a run (see the module docs): swarm's plugin
/// with the limits, the configuration, the junit XML, an `--ignore` for
/// every link in `escaping` and, when only some tests run, their list.
fn command(
    cell: &Cell,
    env: &PythonEnv,
    root: &Path,
    limits: TestLimits,
    files: &RunFiles,
    escaping: &[PathBuf],
) -> ProcessBuilder {
    let mut builder = cell
        .command(&env.python)
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            PLUGIN_MODULE,
        ])
        .arg(format!(
            "--swarm-case-timeout={}",
            limits.case.map_or(0.0, |c| c.as_secs_f64())
        ))
        .arg(format!(
            "--swarm-run-deadline={:.3}",
            deadline_after(limits.run)
        ))
        .arg("--swarm-results")
        .arg(&files.results)
        .arg("--swarm-stack-file")
        .arg(&files.stacks)
        .arg("--rootdir")
        .arg(root)
        .arg("-c")
        .arg(&files.config)
        .arg("--confcutdir")
        .arg(&files.confcutdir)
        .arg("--junitxml")
        .arg(&files.junit)
        .args(["-o", "junit_family=xunit1", "--color=no"])
        .cwd(root)
        .timeout(limits.run);
    for link in escaping {
        builder = builder.arg(format!("--ignore={}", link.display()));
    }
    if let Some(listing) = &files.only {
        builder = builder.arg("--swarm-only").arg(listing);
    }
    builder
}

/// The cases of the run that ended as `out`: the junit XML's, else (pytest
/// killed or crashed before writing it) those the plugin wrote as tests
/// finished. What a reader of `output` should know is added to it in turn:
/// junit XML that could not be read, the run stopped at `timeout`, results
/// read from the plugin's file.
fn read_cases(
    files: &RunFiles,
    root: &Path,
    out: &ProcessOutput,
    timeout: Duration,
    output: &mut String,
) -> Vec<TestCase> {
    let mut cases = match std::fs::read_to_string(&files.junit) {
        Ok(xml) => match parse_junit(&xml, root) {
            Ok(mut cases) => {
                let stream = std::fs::read_to_string(&files.results).ok();
                if let Some(why) = trust::distrust(xml.as_bytes(), &cases, stream.as_deref()) {
                    output.push_str(&format!("\n[swarm] {why}: the results are not trusted"));
                    trust::refuse(&mut cases, &why);
                }
                Some(cases)
            }
            Err(e) => {
                output.push_str(&format!("\n[swarm] {e}"));
                None
            }
        },
        Err(_) => None,
    };
    let timed_out = out.ending == Ending::TimedOut;
    if timed_out {
        output.push_str(&format!(
            "\n[swarm] pytest did not finish within {}s and was killed",
            timeout.as_secs()
        ));
    }
    if cases.is_none() {
        // Killed (or crashed) before the junit XML: what finished still counts.
        if let Ok(text) = std::fs::read_to_string(&files.results) {
            let (cut, stacks) = if timed_out {
                let stacks = std::fs::read_to_string(&files.stacks).ok();
                (results::Cut::Limit(timeout), stacks)
            } else {
                (results::Cut::Ended(out.exit_code()), None)
            };
            let found = results::cases_from_results(&text, stacks.as_deref(), root, cut);
            let not_run = found
                .iter()
                .filter(|c| c.outcome == TestOutcome::NotRun)
                .count();
            output.push_str(&format!(
                "\n[swarm] {} test(s) read from the results written as they finished; {not_run} not run",
                found.len()
            ));
            cases = Some(found);
        }
    }
    cases.unwrap_or_default()
}

/// Writes `text` to `path`, creating its folder.
fn write_file(path: &Path, text: &str) -> Result<(), ToolError> {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).map_err(|source| ToolError::write(path, source))?;
    }
    std::fs::write(path, text).map_err(|source| ToolError::write(path, source))
}

/// The wall-clock time `timeout` from now, in seconds since the epoch: when
/// the whole run will be killed, for the plugin's last stack dump.
fn deadline_after(timeout: Duration) -> f64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (now + timeout).as_secs_f64()
}
