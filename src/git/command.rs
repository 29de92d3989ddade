//! Spawning the `git` executable with a scrubbed environment.
//!
//! swarm may run from a git hook, where git exports `GIT_DIR`,
//! `GIT_INDEX_FILE` and friends; inherited by a child `git`, they would make
//! it act on the wrong repository, index or working tree. Every spawned git
//! here drops them, runs with hooks disabled (swarm never runs the user's
//! hook scripts) and without git's automatic maintenance, and keeps its
//! command line and captured output for errors.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::GitError;

/// Environment variables that redirect git away from the repository found
/// from the working directory; removed from every spawned git.
pub const SCRUBBED_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
];

/// A `git` invocation: arguments and the folder it runs in.
#[derive(Clone, Debug)]
pub(crate) struct GitCommand {
    cwd: PathBuf,
    args: Vec<OsString>,
}

/// Whether a finished git succeeded, and what it wrote.
#[derive(Clone, Debug)]
pub(crate) struct GitOutput {
    pub success: bool,
    /// The exit code; `None` when a signal ended git.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl GitCommand {
    /// `git` run in `cwd`.
    pub fn new(cwd: &Path) -> Self {
        GitCommand {
            cwd: cwd.to_path_buf(),
            args: Vec::new(),
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    /// The command line as a user would type it (without the internal `-c`
    /// options), for error messages.
    pub fn display(&self) -> String {
        let mut line = String::from("git");
        for arg in &self.args {
            line.push(' ');
            line.push_str(&arg.to_string_lossy());
        }
        line
    }

    /// Runs git and returns its output whatever its exit status; `Err` only
    /// when it could not be started.
    pub fn output(&self) -> Result<GitOutput, GitError> {
        let started = std::time::Instant::now();
        let output = self
            .command()
            .stdin(Stdio::null())
            .output()
            .map_err(|source| self.not_started(source))?;
        // Shown with -v, as every tool command is.
        tracing::info!(
            "ran {} in {:.1} s",
            self.display(),
            started.elapsed().as_secs_f64()
        );
        Ok(GitOutput {
            success: output.status.success(),
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }

    /// Like [`GitCommand::output`], but git cannot be stopped half way by
    /// anything aimed at swarm: it runs in its own process group (Ctrl-C on
    /// the terminal and signals to swarm's group do not reach it), with
    /// SIGINT, SIGHUP, SIGQUIT and SIGPIPE ignored (the setting survives
    /// `exec`, so git's own children such as filters inherit it), and its
    /// output goes to an unlinked temporary file instead of a pipe (so
    /// swarm dying, even by SIGKILL, does not break its writes). If swarm
    /// dies, git finishes on its own.
    pub fn output_shielded(&self) -> Result<GitOutput, GitError> {
        let io = |source| self.not_started(source);
        let mut stdout = tempfile::tempfile().map_err(io)?;
        let mut stderr = tempfile::tempfile().map_err(io)?;
        let mut command = self.command();
        command
            .stdin(Stdio::null())
            .stdout(Stdio::from(stdout.try_clone().map_err(io)?))
            .stderr(Stdio::from(stderr.try_clone().map_err(io)?));
        shield(&mut command);
        let status = command
            .spawn()
            .and_then(|mut child| child.wait())
            .map_err(io)?;
        Ok(GitOutput {
            success: status.success(),
            code: status.code(),
            stdout: read_back(&mut stdout),
            stderr: read_back(&mut stderr),
        })
    }

    fn command(&self) -> Command {
        let mut command = Command::new("git");
        command
            .current_dir(&self.cwd)
            .arg("-c")
            .arg(format!("core.hooksPath={}", null_device()))
            // No background maintenance (`git maintenance run --auto`,
            // `gc --auto`) after a merge or checkout: it is not swarm's to
            // start in the user's repository, and deciding whether to costs
            // a merge more than its own work.
            .args(["-c", "maintenance.auto=false", "-c", "gc.auto=0"])
            .args(&self.args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C");
        for name in SCRUBBED_ENV {
            command.env_remove(name);
        }
        command
    }

    fn not_started(&self, source: std::io::Error) -> GitError {
        GitError::NotStarted {
            command: self.display(),
            source,
        }
    }

    /// Runs git; a non-zero exit is an error carrying the command line and
    /// what git wrote.
    pub fn run(&self) -> Result<GitOutput, GitError> {
        let output = self.output()?;
        if output.success {
            Ok(output)
        } else {
            Err(GitError::Command {
                command: self.display(),
                code: output.code,
                stdout: output.stdout,
                stderr: output.stderr,
            })
        }
    }
}

/// Own process group, terminal signals ignored (see
/// [`GitCommand::output_shielded`]).
#[cfg(unix)]
fn shield(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
    // SAFETY: the closure runs in the child between fork and exec and only
    // calls `signal`, which is async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGHUP, libc::SIGQUIT, libc::SIGPIPE] {
                if libc::signal(signal, libc::SIG_IGN) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

#[cfg(not(unix))]
fn shield(_command: &mut Command) {}

/// The whole content of an output file, from its start.
fn read_back(file: &mut std::fs::File) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(0)).is_ok() {
        let _ = file.take(1 << 20).read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A path where no hook script can exist.
fn null_device() -> &'static str {
    if cfg!(windows) {
        "NUL"
    } else {
        "/dev/null"
    }
}

/// git's message, trimmed to a few lines for an error (up to six, joined
/// by `; `).
pub(crate) fn first_lines(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|line| !line.is_empty())
        .take(6)
        .collect();
    if lines.is_empty() {
        "(no output)".to_string()
    } else {
        lines.join("; ")
    }
}
