//! One pylint process over a set of files: the driver run under a sandbox
//! cell, and its report read back file by file.
//!
//! pylint's exit code is a bit mask of message kinds, not a failure; only a
//! usage error (32) or a missing report is one. File names that start with
//! `-` are passed as `./name`: pylint pre-scans its whole argument list for
//! options like `--init-hook=` and `--output=` and honours them even after
//! `--`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::cache::Entry;
use crate::cancel::Cancel;
use crate::tools::env::last_line;
use crate::tools::process::{Ending, ProcessBuilder, ProcessOutput};
use crate::tools::{LintKind, LintMessage, PythonEnv, Sandbox, ToolError};

/// The environment variable that carries the driver's source.
const DRIVER_VAR: &str = "SWARM_PYLINT_DRIVER";

/// The `-c` program: runs the driver from [`DRIVER_VAR`] (importing pylint
/// first, so a missing pylint says so at once).
const BOOTSTRAP: &str = "import os, pylint; exec(os.environ['SWARM_PYLINT_DRIVER'])";

/// The line the driver prints before its JSON report.
const MARKER: &str = "@@swarm-pylint-report@@";

/// How much the driver may print: the report must be parsed whole.
const REPORT_CAP: usize = 64 * 1024 * 1024;

/// pylint's exit-code bit for a usage error.
const USAGE_ERROR: i32 = 32;

/// How many file names a logged pylint command line shows.
const SHOWN_FILES: usize = 10;

/// pylint's options: one process each (`--jobs=1`, the parallelism is
/// swarm's), no saved statistics, the files exactly as given.
const OPTIONS: [&str; 4] = ["--jobs=1", "--persistent=n", "--recursive=n", "--score=n"];

/// Runs pylint passes over sets of files with one configuration.
pub(super) struct Linter<'a> {
    pub env: &'a PythonEnv,
    pub sandbox: &'a Sandbox,
    pub root: &'a Path,
    pub timeout: Duration,
    pub cancel: &'a Cancel,
}

/// What one finished pylint process found.
#[derive(Debug, Default)]
pub(super) struct Found {
    /// Every file of the pass, with its statements and messages.
    pub files: BTreeMap<String, Entry>,
    /// Messages that name none of the files (configuration problems), as
    /// an entry of their own.
    pub general: Entry,
    /// stderr, for the log.
    pub stderr: String,
}

/// How one pylint run over a set of files ended.
pub(super) enum Pass {
    /// pylint gave a report.
    Done(Found, Duration),
    /// pylint did not finish: the timeout, or the kernel's CPU limit.
    Unfinished { why: String, took: Duration },
}

impl Linter<'_> {
    /// One pylint process over `files`.
    pub(super) fn pass(&self, files: &[String]) -> Result<Pass, ToolError> {
        let cell = self.sandbox.cell("pylint")?;
        let out = self
            .builder(cell.command(&self.env.python), files)
            .env(DRIVER_VAR, super::DRIVER)
            .cwd(self.root)
            .timeout(self.timeout)
            .output_cap(REPORT_CAP)
            .run(self.cancel)
            .map_err(|source| ToolError::Run {
                command: "pylint".to_string(),
                source,
            })?;
        match out.ending {
            Ending::Cancelled => return Err(ToolError::Cancelled),
            Ending::TimedOut => {
                return Ok(Pass::Unfinished {
                    why: format!("timed out after {}", seconds(self.timeout)),
                    took: out.duration,
                })
            }
            Ending::Signalled(signal) if signal == libc::SIGXCPU || signal == libc::SIGKILL => {
                return Ok(Pass::Unfinished {
                    why: format!("stopped by the CPU time limit (signal {signal})"),
                    took: out.duration,
                })
            }
            Ending::Signalled(signal) => {
                return Err(ToolError::Failed {
                    command: out.command,
                    message: format!("killed by signal {signal}"),
                })
            }
            Ending::Exited(_) => {}
        }
        match parse_output(&out, self.root, files) {
            Ok(found) => Ok(Pass::Done(found, out.duration)),
            Err(message) => Err(ToolError::Failed {
                command: out.command,
                message,
            }),
        }
    }

    /// The (capped) command line of one pass over `files`.
    pub(super) fn command_line(&self, files: &[String]) -> String {
        self.builder(ProcessBuilder::new(&self.env.python), files)
            .command_line()
    }

    fn builder(&self, builder: ProcessBuilder, files: &[String]) -> ProcessBuilder {
        builder
            .args(["-c", BOOTSTRAP])
            .args(OPTIONS)
            .args(files.iter().map(|f| as_argument(f)))
            .shown_args(2 + OPTIONS.len() + SHOWN_FILES, "files")
    }
}

/// `30s`, or `0.05s` below a second: a pass's timeout, as notes give it.
pub(super) fn seconds(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{}s", duration.as_secs())
    } else {
        let text = format!("{:.3}", duration.as_secs_f64());
        format!("{}s", text.trim_end_matches('0').trim_end_matches('.'))
    }
}

/// A file name as a pylint argument: `./-x.py` for a name that would read
/// as an option.
pub(super) fn as_argument(file: &str) -> String {
    if file.starts_with('-') {
        format!("./{file}")
    } else {
        file.to_string()
    }
}

/// One message as the driver writes it (json2's fields).
#[derive(Debug, Deserialize)]
struct RawMessage {
    #[serde(rename = "type", default)]
    kind: LintKind,
    #[serde(default)]
    symbol: String,
    #[serde(default)]
    message: String,
    #[serde(rename = "messageId", default)]
    message_id: String,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default)]
    column: Option<u32>,
    #[serde(default)]
    path: String,
    #[serde(default = "counted")]
    counted: bool,
}

fn counted() -> bool {
    true
}

#[derive(Debug, Deserialize)]
struct DriverReport {
    messages: Vec<RawMessage>,
    #[serde(default)]
    statements: BTreeMap<String, u64>,
    #[serde(default)]
    evaluation: Option<String>,
}

/// Reads the driver's report of a pass over `files`.
fn parse_output(out: &ProcessOutput, root: &Path, files: &[String]) -> Result<Found, String> {
    let code = out.exit_code().unwrap_or(0);
    if code & USAGE_ERROR != 0 {
        return Err(format!("usage error: {}", last_line(&out.stderr)));
    }
    let report = out
        .stdout
        .rfind(MARKER)
        .and_then(|at| first_json::<DriverReport>(&out.stdout[at + MARKER.len()..]))
        .ok_or_else(|| {
            format!(
                "exit code {code}, no report: {}",
                last_line(&out.combined())
            )
        })?;
    let mut found = Found {
        files: files
            .iter()
            .map(|f| (f.clone(), Entry::default()))
            .collect(),
        stderr: out.stderr.clone(),
        ..Found::default()
    };
    for (path, statements) in &report.statements {
        if let Some(entry) = found.files.get_mut(&relative_path(path, root)) {
            entry.statements += statements;
        }
    }
    for m in report.messages {
        let counted = m.counted;
        let message = LintMessage {
            path: relative_path(&m.path, root),
            line: m.line.unwrap_or(0),
            column: m.column.unwrap_or(0),
            kind: m.kind,
            symbol: m.symbol,
            message_id: m.message_id,
            message: m.message,
        };
        let entry = match found.files.get_mut(&message.path) {
            Some(entry) => entry,
            None => &mut found.general,
        };
        if counted {
            entry.messages.push(message);
        } else {
            entry.notices.push(message);
        }
    }
    for entry in found.files.values_mut().chain([&mut found.general]) {
        entry.evaluation = report.evaluation.clone();
    }
    Ok(found)
}

/// The first JSON document in `text`, ignoring whatever follows it.
fn first_json<T: serde::de::DeserializeOwned>(text: &str) -> Option<T> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<T>()
        .next()?
        .ok()
}

/// pylint's path relative to `root`, with `/` separators.
pub(super) fn relative_path(path: &str, root: &Path) -> String {
    let p = Path::new(path);
    let rel = if p.is_absolute() {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        p.strip_prefix(&root)
            .or_else(|_| p.strip_prefix(root.as_path()))
            .unwrap_or(p)
    } else {
        p
    };
    let mut text = rel.to_string_lossy().into_owned();
    while let Some(rest) = text.strip_prefix("./") {
        text = rest.to_string();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_as_seconds() {
        assert_eq!(seconds(Duration::from_secs(30)), "30s");
        assert_eq!(seconds(Duration::from_millis(50)), "0.05s");
        assert_eq!(seconds(Duration::from_millis(2500)), "2.5s");
    }

    #[test]
    fn option_like_names_become_paths() {
        assert_eq!(as_argument("--output=x.py"), "./--output=x.py");
        assert_eq!(as_argument("-"), "./-");
        assert_eq!(as_argument("pkg/-x.py"), "pkg/-x.py");
        assert_eq!(
            relative_path("./--output=x.py", Path::new("/r")),
            "--output=x.py"
        );
        assert_eq!(relative_path("/r/pkg/a.py", Path::new("/r")), "pkg/a.py");
    }

    #[test]
    fn reads_the_report_after_the_marker_file_by_file() {
        let stdout = format!(
            "a plugin printed this\n{MARKER}\n{}\n",
            r#"{"messages": [
                {"type": "convention", "symbol": "missing-module-docstring", "message": "Missing module docstring", "messageId": "C0114", "line": 1, "column": 0, "path": "a.py"},
                {"type": "error", "symbol": "bad-plugin-value", "message": "Bad", "messageId": "E0013", "line": 1, "column": 0, "path": "Command line or configuration file", "counted": false}],
              "statements": {"a.py": 3, "b.py": 2},
              "evaluation": "10.0"}"#
        );
        let out = ProcessOutput {
            command: "python -c …".into(),
            ending: Ending::Exited(16),
            stdout,
            stderr: String::new(),
            duration: Duration::ZERO,
        };
        let files = vec!["a.py".to_string(), "b.py".to_string(), "c.py".to_string()];
        let found = parse_output(&out, Path::new("/r"), &files).expect("a report");
        assert_eq!(found.files["a.py"].statements, 3);
        assert_eq!(found.files["a.py"].messages[0].message_id, "C0114");
        assert_eq!(found.files["b.py"].statements, 2);
        assert_eq!(
            found.files["c.py"],
            Entry {
                evaluation: Some("10.0".into()),
                ..Entry::default()
            }
        );
        assert!(found.general.messages.is_empty());
        assert_eq!(found.general.notices[0].symbol, "bad-plugin-value");

        let usage = ProcessOutput {
            ending: Ending::Exited(32),
            stderr: "pylint: error: no such option: --bogus".into(),
            ..out.clone()
        };
        assert_eq!(
            parse_output(&usage, Path::new("/r"), &files).expect_err("usage error"),
            "usage error: pylint: error: no such option: --bogus"
        );
        let silent = ProcessOutput {
            ending: Ending::Exited(1),
            stdout: "Traceback …\nAttributeError: x".into(),
            ..out
        };
        assert_eq!(
            parse_output(&silent, Path::new("/r"), &files).expect_err("no report"),
            "exit code 1, no report: AttributeError: x"
        );
    }
}
