//! JavaScript and TypeScript behind the language boundary: which targets and files are JS/TS
//! ([`project`]), the project's test runner and its command line
//! ([`runner`]) and reports ([`results`]), eslint ([`lint`]), `tsc`
//! ([`typecheck`]), the Reviewer's rules ([`rules`]), the user's installed
//! dependencies in a worktree ([`deps`]); the metrics are
//! `swarm_analysis::javascript`'s.
//!
//! The functions here compose those with `tools::node`, which runs node
//! under the sandbox: [`run_tests`], [`lint_files`], [`type_check`];
//! [`suite`] is what a run's Judge asks through [`crate::lang::Suite`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cancel::Cancel;
use crate::tools::node::{self, Arg, NodeInstall, NodeScript, PinnedLinter};
use crate::tools::{
    Ending, LintMessage, LintReport, Sandbox, SandboxPolicy, TestLimits, TestRun, ToolError,
};

pub mod deps;
pub mod language;
pub mod lint;
pub mod manifest;
mod names;
pub mod project;
pub mod reach;
pub mod results;
pub mod rules;
pub mod runner;
pub mod suite;
pub mod typecheck;

pub use deps::{lay, LaidDependencies};
pub use language::JavaScript;
pub use manifest::Manifest;
pub use project::{DependenciesMissing, PackageManager, Project};
pub use runner::Runner;
pub use typecheck::TypeError;

/// How much of a tool's output a report keeps.
const OUTPUT_CAP: usize = 32 * 1024;

/// The sandbox node's tools run under: `policy` (the run's, writable the
/// worktree and each process's cell), `readable` (the user's dependencies,
/// the pinned linter) and node's installation readable, with every layer as
/// for pytest but one limit: the
/// address space is not capped, because V8 reserves about 10 GiB of it for
/// each WebAssembly memory (the module lexers vitest and jest load are
/// WebAssembly) and fails under the 4 GiB cap Python runs with; node's
/// heap is capped instead ([`NODE_HEAP_MB`], through `NODE_OPTIONS`, which
/// the runners' worker processes inherit).
pub fn sandbox_for(
    install: &NodeInstall,
    mut policy: SandboxPolicy,
    readable: Vec<PathBuf>,
) -> Result<Sandbox, ToolError> {
    policy.limits.address_space = None;
    let mut runtime = install.runtime(readable);
    runtime.env.push((
        OsString::from("NODE_OPTIONS"),
        OsString::from(format!("--max-old-space-size={NODE_HEAP_MB}")),
    ));
    Sandbox::for_runtime(policy, runtime)
}

/// The largest JavaScript heap of one node process in the sandbox, MiB.
pub const NODE_HEAP_MB: u32 = 4096;

/// Runs `runner` in `root` (the package's folder in the worktree) under
/// `sandbox`, finding the runner in `node_modules` (nearest first), with
/// `limits`: the per-test limit passed to the runner, the whole run's as
/// the process's timeout. Failing tests, files that do not load and a run
/// killed at its limit are values in the [`TestRun`]; a runner that is not
/// installed, a node that cannot start, or a cancel is an `Err`.
pub fn run_tests(
    install: &NodeInstall,
    sandbox: &Sandbox,
    root: &Path,
    runner: &Runner,
    node_modules: &[PathBuf],
    limits: TestLimits,
    cancel: &Cancel,
) -> Result<TestRun, ToolError> {
    let entry = runner.entry(node_modules);
    if entry.is_none() && !matches!(runner, Runner::Node { .. }) {
        return Err(ToolError::Failed {
            command: runner.name().to_string(),
            message: format!(
                "{} is not installed in {}",
                runner.name(),
                node_modules
                    .first()
                    .map_or_else(|| root.join("node_modules"), Clone::clone)
                    .display()
            ),
        });
    }
    let case = limits.case.unwrap_or(limits.run);
    let mut script = NodeScript {
        tool: runner.name().replace(' ', ""),
        args: runner.args(entry.as_deref(), case),
        cwd: root.to_path_buf(),
        timeout: limits.run,
        ..NodeScript::default()
    };
    match runner {
        Runner::Node { .. } => {
            script.inputs.push((
                runner::NODE_REPORTER_FILE.to_string(),
                runner::NODE_REPORTER.to_string(),
            ));
            script.outputs.push(runner::NODE_RESULTS_FILE.to_string());
        }
        _ => script.outputs.push(runner::REPORT_FILE.to_string()),
    }
    let run = node::run(install, sandbox, &script, cancel)?;
    let mut output = run.output.clone();
    let cases = match runner {
        Runner::Node { .. } => run
            .file(runner::NODE_RESULTS_FILE)
            .map(|text| results::parse_node_lines(text, root))
            .unwrap_or_default(),
        _ => match run.file(runner::REPORT_FILE) {
            Some(text) => results::parse_json_report(text, root).unwrap_or_else(|e| {
                output.push_str(&format!("\n[swarm] {e}"));
                Vec::new()
            }),
            None => Vec::new(),
        },
    };
    let timed_out = run.ending == Ending::TimedOut;
    if timed_out {
        output.push_str(&format!(
            "\n[swarm] {} did not finish within {}s and was killed",
            runner.name(),
            limits.run.as_secs()
        ));
    }
    Ok(TestRun {
        no_tests: cases.is_empty() && !timed_out,
        cases,
        exit_code: run.exit_code(),
        timed_out,
        command: run.command,
        output,
        duration: run.duration,
    })
}

/// Which eslint lints a project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Linter {
    /// The project's own eslint, with its own configuration.
    Project { eslint: PathBuf },
    /// swarm's pinned eslint with its built-in configuration.
    Pinned(PinnedLinter),
}

/// File names of an eslint configuration (flat or legacy).
const ESLINT_CONFIGS: &[&str] = &[
    "eslint.config.js",
    "eslint.config.mjs",
    "eslint.config.cjs",
    "eslint.config.ts",
    "eslint.config.mts",
    "eslint.config.cts",
    ".eslintrc",
    ".eslintrc.js",
    ".eslintrc.cjs",
    ".eslintrc.json",
    ".eslintrc.yml",
    ".eslintrc.yaml",
];

/// The project's own eslint, when it has both eslint installed (in
/// `node_modules`, nearest first) and a configuration in one of `folders`
/// (the package's folder and those above it up to the install root).
pub fn project_eslint(node_modules: &[PathBuf], folders: &[PathBuf]) -> Option<Linter> {
    let configured = folders
        .iter()
        .any(|dir| ESLINT_CONFIGS.iter().any(|name| dir.join(name).is_file()));
    let eslint = node_modules
        .iter()
        .map(|dir| dir.join("eslint/bin/eslint.js"))
        .find(|path| path.is_file())?;
    configured.then_some(Linter::Project { eslint })
}

/// Lints `files` (relative to `root`, the package's folder in the
/// worktree) with `linter` under `sandbox`: the messages, and the score
/// over the files' `statements` ([`statements_in`], [`lint::score`]).
pub fn lint_files(
    install: &NodeInstall,
    sandbox: &Sandbox,
    root: &Path,
    (files, statements): (&[String], usize),
    linter: &Linter,
    timeout: Duration,
    cancel: &Cancel,
) -> Result<LintReport, ToolError> {
    let script = eslint_script(root, files, linter, timeout);
    let run = node::run(install, sandbox, &script, cancel)?;
    let Some(report) = run.file("eslint.json") else {
        return Err(ToolError::Failed {
            command: run.command.clone(),
            message: format!(
                "eslint gave no report ({}): {}",
                describe(run.ending),
                crate::tools::process::cap_text(run.output.trim(), 2000)
            ),
        });
    };
    let messages: Vec<LintMessage> =
        lint::parse_eslint_json(report, root).map_err(|source| ToolError::Garbled {
            command: run.command.clone(),
            what: "eslint's JSON report",
            last_line: None,
            source,
        })?;
    let score = lint::score(&messages, statements);
    Ok(LintReport {
        output: lint_output(&messages, files.len(), score),
        score,
        messages,
        command: run.command,
        linted: files.len(),
        seconds: run.duration.as_secs_f64(),
        ..LintReport::default()
    })
}

/// The statements of `files` (relative to `root`) that can be read: what
/// a lint score divides by.
pub fn statements_in(root: &Path, files: &[String]) -> usize {
    files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(root.join(f)).ok()?;
            Some(swarm_analysis::javascript::statement_count(f, &text))
        })
        .sum()
}

/// eslint's process: the linter's entry (and swarm's configuration for
/// the pinned one), its JSON report into the cell, then `files`.
fn eslint_script(root: &Path, files: &[String], linter: &Linter, timeout: Duration) -> NodeScript {
    let mut args = Vec::new();
    match linter {
        Linter::Project { eslint } => args.push(Arg::Plain(eslint.clone().into_os_string())),
        Linter::Pinned(pinned) => {
            args.push(Arg::Plain(pinned.eslint.clone().into_os_string()));
            args.push(Arg::plain("--config"));
            args.push(Arg::Plain(pinned.config.clone().into_os_string()));
        }
    }
    args.extend(
        ["--format", "json", "--no-error-on-unmatched-pattern"]
            .into_iter()
            .map(Arg::plain),
    );
    args.push(Arg::in_cell("--output-file=", "eslint.json"));
    args.extend(files.iter().map(|f| Arg::Plain(OsString::from(f))));
    NodeScript {
        tool: "eslint".to_string(),
        args,
        cwd: root.to_path_buf(),
        outputs: vec!["eslint.json".to_string()],
        timeout,
        ..NodeScript::default()
    }
}

/// A summary line and every message as text, capped, for the log.
fn lint_output(messages: &[LintMessage], files: usize, score: Option<f64>) -> String {
    let mut output = format!(
        "{} message(s) over {files} file(s); score {}",
        messages.len(),
        score.map_or("n/a".to_string(), |s| format!("{s:.2}"))
    );
    for m in messages {
        output.push_str(&format!(
            "\n{}:{}:{}: {} {} {}",
            m.path, m.line, m.column, m.kind, m.symbol, m.message
        ));
    }
    crate::tools::process::cap_text(&output, OUTPUT_CAP)
}

/// Type-checks the project at `root` (the package's folder in the
/// worktree) with its own typescript (`tsc --noEmit -p tsconfig.json`):
/// `Ok(None)` when it has no `tsconfig.json` or no typescript installed,
/// else every diagnostic.
pub fn type_check(
    install: &NodeInstall,
    sandbox: &Sandbox,
    root: &Path,
    node_modules: &[PathBuf],
    timeout: Duration,
    cancel: &Cancel,
) -> Result<Option<Vec<TypeError>>, ToolError> {
    if !root.join("tsconfig.json").is_file() {
        return Ok(None);
    }
    let Some(tsc) = node_modules
        .iter()
        .map(|dir| dir.join("typescript/bin/tsc"))
        .find(|path| path.is_file())
    else {
        return Ok(None);
    };
    let script = NodeScript {
        tool: "tsc".to_string(),
        args: vec![
            Arg::Plain(tsc.into_os_string()),
            Arg::plain("--noEmit"),
            Arg::plain("--pretty"),
            Arg::plain("false"),
            Arg::plain("-p"),
            Arg::plain("tsconfig.json"),
        ],
        cwd: root.to_path_buf(),
        timeout,
        ..NodeScript::default()
    };
    let run = node::run(install, sandbox, &script, cancel)?;
    match run.ending {
        Ending::Exited(0) | Ending::Exited(1) | Ending::Exited(2) => {
            Ok(Some(typecheck::parse_tsc_output(&run.output)))
        }
        ending => Err(ToolError::Failed {
            command: run.command.clone(),
            message: format!("tsc {}", describe(ending)),
        }),
    }
}

/// How a process ended, in words.
fn describe(ending: Ending) -> String {
    match ending {
        Ending::Exited(code) => format!("exit code {code}"),
        Ending::Signalled(signal) => format!("killed by signal {signal}"),
        Ending::TimedOut => "timed out".to_string(),
        Ending::Cancelled => "cancelled".to_string(),
    }
}
