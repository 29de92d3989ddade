//! Running pylint under the sandbox and parsing its JSON reports into
//! [`LintReport`]s.
//!
//! pylint ≥ 3 gives `--output-format=json2` (messages and the score in one
//! object); older versions fall back to `--output-format=json` plus the
//! "rated at X/10" line when present. pylint's exit code is a bit mask of
//! message kinds, not a failure; only a usage error (32) or unparsable output
//! is one. File names that start with `-` are passed as `./name`: pylint
//! pre-scans its whole argument list for options like `--init-hook=` and
//! `--output=` and honours them even after `--`. A pylint run that does not
//! finish in time is handled in [`slow`].

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::env::last_line;
use super::process::{cap_text, Ending, ProcessOutput};
use super::{LintMessage, LintReport, PythonEnv, Sandbox, ToolError};
use crate::cancel::Cancel;

mod slow;

/// How much of pylint's output the report keeps for the log.
pub const LINT_OUTPUT_CAP: usize = 16 * 1024;

/// How much JSON pylint may print: the report must be parsed whole.
const REPORT_CAP: usize = 64 * 1024 * 1024;

/// pylint's exit-code bit for a usage error.
const USAGE_ERROR: i32 = 32;

/// How many file names a logged pylint command line shows.
const SHOWN_FILES: usize = 10;

/// The report formats pylint can give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Json2,
    Json,
}

pub(super) fn run(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    files: &[String],
    timeout: Duration,
    cancel: &Cancel,
) -> Result<LintReport, ToolError> {
    let format = if major_version(&env.pylint_version).is_some_and(|m| m < 3) {
        Format::Json
    } else {
        Format::Json2
    };
    let mut linter = Linter {
        env,
        sandbox,
        root,
        timeout,
        cancel,
        format,
    };
    if files.is_empty() {
        // pylint without files is a usage error; nothing to lint is no message.
        return Ok(LintReport {
            command: linter.command_line(files),
            ..LintReport::default()
        });
    }
    slow::lint(&mut linter, files)
}

/// Runs pylint passes over sets of files with one configuration.
struct Linter<'a> {
    env: &'a PythonEnv,
    sandbox: &'a Sandbox,
    root: &'a Path,
    timeout: Duration,
    cancel: &'a Cancel,
    /// The report format; switches to `Json` for good once pylint rejects `json2`.
    format: Format,
}

/// How one pylint run over a set of files ended.
enum Pass {
    /// pylint gave a report.
    Done(LintReport),
    /// pylint did not finish: the timeout, or the kernel's CPU limit.
    Unfinished { command: String, why: String },
}

impl Linter<'_> {
    /// One pylint run over `files` (with the json fallback for old pylint).
    fn pass(&mut self, files: &[String]) -> Result<Pass, ToolError> {
        loop {
            let cell = self.sandbox.cell("pylint")?;
            let format_flag = match self.format {
                Format::Json2 => "--output-format=json2",
                Format::Json => "--output-format=json",
            };
            let options = [
                "-m",
                "pylint",
                format_flag,
                "--score=y",
                "--persistent=n",
                "--recursive=n",
            ];
            let out = cell
                .command(&self.env.python)
                .args(options)
                .args(files.iter().map(|f| as_argument(f)))
                .shown_args(options.len() + SHOWN_FILES, "files")
                .cwd(self.root)
                .timeout(self.timeout)
                .output_cap(REPORT_CAP)
                .run(self.cancel)
                .map_err(|e| ToolError::Failed {
                    command: "pylint".to_string(),
                    message: e.to_string(),
                })?;
            match out.ending {
                Ending::Cancelled => return Err(ToolError::Cancelled),
                Ending::TimedOut => {
                    return Ok(Pass::Unfinished {
                        command: out.command,
                        why: format!("timed out after {}", slow::seconds(self.timeout)),
                    })
                }
                Ending::Signalled(signal) if signal == libc::SIGXCPU || signal == libc::SIGKILL => {
                    return Ok(Pass::Unfinished {
                        command: out.command,
                        why: format!("stopped by the CPU time limit (signal {signal})"),
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
            match parse_output(&out, self.root, self.format) {
                Ok(report) => return Ok(Pass::Done(report)),
                Err(message) => {
                    if self.format == Format::Json2 && out.stderr.contains("InvalidReporterError") {
                        self.format = Format::Json;
                        continue;
                    }
                    return Err(ToolError::Failed {
                        command: out.command,
                        message,
                    });
                }
            }
        }
    }

    /// The (capped) command line a pass over `files` runs, for reports
    /// that had no pass of their own.
    fn command_line(&self, files: &[String]) -> String {
        super::process::ProcessBuilder::new(&self.env.python)
            .args([
                "-m",
                "pylint",
                "--score=y",
                "--persistent=n",
                "--recursive=n",
            ])
            .args(files.iter().map(|f| as_argument(f)))
            .shown_args(SHOWN_FILES + 4, "files")
            .command_line()
    }
}

/// A file name as a pylint argument: `./-x.py` for a name that would read
/// as an option.
fn as_argument(file: &str) -> String {
    if file.starts_with('-') {
        format!("./{file}")
    } else {
        file.to_string()
    }
}

fn major_version(version: &str) -> Option<u32> {
    version.split('.').next()?.parse().ok()
}

/// One message as json2 (`messageId`) or json (`message-id`) writes it.
#[derive(Debug, Deserialize)]
struct RawMessage {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    symbol: String,
    #[serde(default)]
    message: String,
    #[serde(rename = "messageId", alias = "message-id", default)]
    message_id: String,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default)]
    column: Option<u32>,
    #[serde(default)]
    path: String,
}

#[derive(Debug, Deserialize)]
struct Json2Report {
    messages: Vec<RawMessage>,
    #[serde(default)]
    statistics: Option<Json2Statistics>,
}

#[derive(Debug, Deserialize)]
struct Json2Statistics {
    #[serde(default)]
    score: Option<f64>,
}

fn parse_output(out: &ProcessOutput, root: &Path, format: Format) -> Result<LintReport, String> {
    let code = out.exit_code().unwrap_or(0);
    let text = out.stdout.trim();
    let json_start = text.find(['{', '[']);
    let parsed = match (format, json_start) {
        (_, None) => None,
        (Format::Json2, Some(i)) => first_json::<Json2Report>(&text[i..])
            .map(|r| (r.messages, r.statistics.and_then(|s| s.score))),
        (Format::Json, Some(i)) => {
            first_json::<Vec<RawMessage>>(&text[i..]).map(|m| (m, rated_at(&out.combined())))
        }
    };
    let (raw, score) = match parsed {
        Some(found) => found,
        // No messages at all can print an empty list or nothing.
        None if text.is_empty() && code & USAGE_ERROR == 0 && code & 1 == 0 => {
            (Vec::new(), rated_at(&out.combined()))
        }
        None => {
            return Err(format!(
                "exit code {code}, no report: {}",
                last_line(&out.combined())
            ))
        }
    };
    if code & USAGE_ERROR != 0 {
        return Err(format!("usage error: {}", last_line(&out.stderr)));
    }
    let messages = raw
        .into_iter()
        .map(|m| LintMessage {
            path: relative_path(&m.path, root),
            line: m.line.unwrap_or(0),
            column: m.column.unwrap_or(0),
            kind: m.kind,
            symbol: m.symbol,
            message_id: m.message_id,
            message: m.message,
        })
        .collect();
    Ok(LintReport {
        score,
        messages,
        command: out.command.clone(),
        output: cap_text(&out.combined(), LINT_OUTPUT_CAP),
        ..LintReport::default()
    })
}

/// The first JSON document in `text`, ignoring whatever follows it.
fn first_json<T: serde::de::DeserializeOwned>(text: &str) -> Option<T> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<T>()
        .next()?
        .ok()
}

/// The score in a "Your code has been rated at 7.50/10" line.
pub(crate) fn rated_at(text: &str) -> Option<f64> {
    let at = text.rfind("rated at ")?;
    let rest = &text[at + "rated at ".len()..];
    let end = rest.find('/')?;
    rest[..end].trim().parse().ok()
}

/// pylint's path relative to `root`, with `/` separators.
fn relative_path(path: &str, root: &Path) -> String {
    let p = Path::new(path);
    let rel = if p.is_absolute() {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        p.strip_prefix(&root)
            .or_else(|_| p.strip_prefix(root.as_path()))
            .unwrap_or(p)
    } else {
        p
    };
    rel.to_string_lossy().trim_start_matches("./").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_as_seconds() {
        assert_eq!(slow::seconds(Duration::from_secs(30)), "30s");
        assert_eq!(slow::seconds(Duration::from_millis(50)), "0.05s");
        assert_eq!(slow::seconds(Duration::from_millis(2500)), "2.5s");
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
    }

    #[test]
    fn reads_rated_at_line() {
        let text = "------\nYour code has been rated at 7.50/10 (previous run: 5.00/10, +2.50)\n";
        assert_eq!(rated_at(text), Some(7.5));
        assert_eq!(rated_at("rated at -3.33/10"), Some(-3.33));
        assert_eq!(rated_at("nothing"), None);
    }

    #[test]
    fn parses_json2_and_old_json() {
        let out = ProcessOutput {
            command: "pylint".into(),
            ending: Ending::Exited(16),
            stdout: r#"{"messages":[{"type":"convention","symbol":"missing-module-docstring","message":"Missing module docstring","messageId":"C0114","line":1,"column":0,"path":"/r/a.py"}],"statistics":{"score":8.5}}"#.into(),
            stderr: String::new(),
            duration: Duration::ZERO,
        };
        let report = parse_output(&out, Path::new("/r"), Format::Json2).expect("valid json2");
        assert_eq!(report.score, Some(8.5));
        assert_eq!(report.messages[0].path, "a.py");
        assert_eq!(report.messages[0].message_id, "C0114");

        let old = ProcessOutput {
            stdout: r#"[{"type":"warning","symbol":"unused-import","message":"Unused import os","message-id":"W0611","line":2,"column":0,"path":"b.py"}]
Your code has been rated at 6.00/10"#
                .into(),
            ending: Ending::Exited(4),
            ..out
        };
        let report = parse_output(&old, Path::new("/r"), Format::Json).expect("valid json");
        assert_eq!(report.score, Some(6.0));
        assert_eq!(report.messages[0].symbol, "unused-import");
        assert_eq!(report.messages[0].message_id, "W0611");
    }
}
