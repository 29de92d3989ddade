//! ruff, for `--offline`: found as `ruff` on `PATH` or `python3 -m ruff`,
//! asked for the diff of its own safe fixes to one file
//! (`ruff check --fix --diff`) with a fixed rule selection. It never
//! writes a file (`--diff` only shows what `--fix` would do), and no
//! unsafe fix is ever taken.
//!
//! It runs ruff and reads its diff; what becomes of the diff (a proposal
//! the Reviewer and the Judge weigh) is the offline Fixer's business.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::process::{Ending, ProcessBuilder};
use super::{MissingTool, ToolError};
use crate::cancel::Cancel;

/// The rules whose safe fixes are taken: unused imports (F401), f-strings
/// without placeholders (F541), `is` with a literal (F632), redefinitions
/// of unused names (F811), `not x in y` / `not x is y` (E713, E714),
/// `== None` / `== True` (E711, E712: their fixes are unsafe in ruff, so
/// they are only fixed where ruff marks the fix safe), pyupgrade (UP),
/// import sorting (I), simplifications (SIM) and return statements (RET5).
pub const RULES: &str = "F401,F541,F632,F811,E711,E712,E713,E714,UP,I,SIM,RET5";

/// How long ruff may take on one file.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A ruff that answered `--version`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ruff {
    /// The program and the arguments before ruff's own (`python3 -m ruff`).
    program: Vec<OsString>,
    /// `ruff 0.17.6`.
    pub version: String,
}

/// ruff's diff of its safe fixes to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuffFix {
    /// The command line, as a user would type it.
    pub command: String,
    /// The unified diff (`--- a/f.py` / `+++ b/f.py`), empty when ruff has
    /// nothing to fix.
    pub diff: String,
}

impl Ruff {
    /// `ruff` on `PATH`, else `python3 -m ruff`; [`MissingTool::Ruff`]
    /// when neither answers `--version`.
    pub fn find(cancel: &Cancel) -> Result<Self, ToolError> {
        // Named, not by its path: the log keeps the command line, and no
        // log should name a folder of this machine.
        let on_path = which("ruff").map(|_| vec![OsString::from("ruff")]);
        let candidates = on_path.into_iter().chain(std::iter::once(vec![
            "python3".into(),
            "-m".into(),
            "ruff".into(),
        ]));
        for program in candidates {
            if let Some(version) = version_of(&program, cancel) {
                return Ok(Self { program, version });
            }
        }
        Err(MissingTool::Ruff.into())
    }

    /// The diff of ruff's safe fixes to `file` (relative to `root`, where
    /// ruff runs and finds the project's own ruff settings).
    pub fn fix_diff(&self, root: &Path, file: &str, cancel: &Cancel) -> Result<RuffFix, ToolError> {
        let command = self
            .command()
            .args(["check", "--fix", "--diff", "--no-cache", "--quiet"])
            .arg(format!("--select={RULES}"))
            .arg("--")
            .arg(file)
            .cwd(root)
            .timeout(TIMEOUT);
        let line = command.command_line();
        let out = command.run(cancel).map_err(|source| ToolError::Run {
            command: line.clone(),
            source,
        })?;
        match out.ending {
            // 0: nothing to fix; 1: fixes shown.
            Ending::Exited(0 | 1) => Ok(RuffFix {
                diff: diff_of(&out.stdout, file),
                command: line,
            }),
            Ending::Cancelled => Err(ToolError::Cancelled),
            // A file ruff cannot parse is reported on stderr with exit 2:
            // nothing to take from it.
            Ending::Exited(2) if out.stdout.trim().is_empty() => Ok(RuffFix {
                diff: String::new(),
                command: line,
            }),
            ending => Err(ToolError::Failed {
                command: line,
                message: format!("{ending}: {}", out.combined().trim()),
            }),
        }
    }

    fn command(&self) -> ProcessBuilder {
        let (first, rest) = self
            .program
            .split_first()
            .expect("a ruff command has a program");
        ProcessBuilder::new(first).args(rest)
    }
}

/// `ruff x.y.z` from `program --version`, if it answers.
fn version_of(program: &[OsString], cancel: &Cancel) -> Option<String> {
    let (first, rest) = program.split_first()?;
    let out = ProcessBuilder::new(first)
        .args(rest)
        .arg("--version")
        .timeout(TIMEOUT)
        .run(cancel)
        .ok()?;
    let version = out.stdout.trim();
    (out.exit_code() == Some(0) && version.starts_with("ruff ")).then(|| version.to_string())
}

/// The first executable `name` on `PATH`.
fn which(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The diff in ruff's `--diff` output, with git-style `a/` and `b/` paths
/// and without the closing count ("Would fix 3 errors.").
fn diff_of(stdout: &str, file: &str) -> String {
    let mut diff = String::new();
    for line in stdout.lines() {
        if line.starts_with("Would fix") || line.starts_with("Fixed ") {
            break;
        }
        if line.starts_with("--- ") {
            diff.push_str(&format!("--- a/{file}\n"));
        } else if line.starts_with("+++ ") {
            diff.push_str(&format!("+++ b/{file}\n"));
        } else {
            diff.push_str(line);
            diff.push('\n');
        }
    }
    let trimmed = diff.trim_end_matches('\n');
    if trimmed.is_empty() {
        String::new()
    } else {
        format!("{trimmed}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_gets_git_paths_and_loses_the_count() {
        let out =
            "--- m.py\n+++ m.py\n@@ -1,3 +1,2 @@\n-import os\n \n x = 1\n\nWould fix 1 error.\n";
        assert_eq!(
            diff_of(out, "pkg/m.py"),
            "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,3 +1,2 @@\n-import os\n \n x = 1\n"
        );
        assert_eq!(diff_of("", "m.py"), "");
    }
}
