//! The process runner every tool goes through, in the spirit of cargo's
//! `ProcessBuilder`: it keeps the command line for messages (capped, so a
//! list of ten thousand files never floods an error), runs the child in its
//! own session and process group with a parent-death signal, drains stdout
//! and stderr on threads into capped buffers ([`super::capture`]), wakes the
//! moment the child exits (a pidfd), enforces a timeout, polls the
//! [`Cancel`] flag, and on either kills the whole process
//! group and reaps it. Unless a sandbox cell gives the exact environment,
//! the child's environment is scrubbed of secrets and of git's
//! repository-selecting variables; it is always made deterministic for Python.
//!
//! A sandboxed command carries a confinement (see [`super::sandbox`]) that the
//! child applies between fork and exec. `run` blocks its thread until the
//! child has ended, which is what makes the thread-scoped parent-death signal
//! right.
//!
//! It owns process lifetime only; it does not interpret any tool's output.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::capture::Streams;
pub use super::capture::{cap_text, CappedBuffer};
use super::exit_watch::ExitWatch;
use super::sandbox::child::{ChildPlan, Confinement};
use super::sandbox::failure::describe_spawn_error;
use crate::cancel::Cancel;

/// How many bytes of each stream are kept by default (head and tail halves).
pub const DEFAULT_OUTPUT_CAP: usize = 64 * 1024;

/// How many arguments a command line shows before it says how many it left out.
pub const SHOWN_ARGS: usize = 24;

/// The longest pause between two checks of the timeout and the cancel flag
/// (the child's exit ends a pause at once where the kernel has pidfds).
const MAX_POLL: Duration = Duration::from_millis(50);

/// Variables removed from a child's environment (besides every provider's
/// key and base-URL variables from [`crate::llm::PROVIDERS`], every name that
/// ends in one of [`SCRUBBED_SUFFIXES`], and git's repository-selecting
/// family [`crate::git::SCRUBBED_ENV`]: a hook that runs swarm must not make
/// a test's own `git` calls act on the user's repository) — the deny-list for swarm's own
/// processes (the environment probe, the bootstrap). Code under test runs in
/// a sandbox cell, whose environment is an allow-list instead.
pub const SCRUBBED_VARS: &[&str] = &[
    "OPENAI_API_BASE",
    "OPENAI_ORG_ID",
    "OPENAI_ORGANIZATION",
    "SWARM_API_KEY",
    // Extra pytest options from the user's shell would change what we parse.
    "PYTEST_ADDOPTS",
];

/// Name endings that mark a variable as a secret.
pub const SCRUBBED_SUFFIXES: &[&str] = &["_API_KEY", "_TOKEN", "_SECRET", "_SECRET_KEY"];

/// Variables set in every child, for reproducible and clean Python runs.
pub const PYTHON_VARS: &[(&str, &str)] = &[
    ("PYTHONDONTWRITEBYTECODE", "1"),
    ("PYTHONUNBUFFERED", "1"),
    ("PYTHONHASHSEED", "0"),
];

/// Whether a variable of this name is removed from a child's environment.
pub fn is_scrubbed(name: &str) -> bool {
    SCRUBBED_VARS.contains(&name)
        || crate::llm::provider_env_vars().any(|var| var == name)
        || crate::git::SCRUBBED_ENV.contains(&name)
        || SCRUBBED_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// Why a process could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The program could not be started (not found, not executable, bad
    /// cwd, or a sandbox step refused in the child — the message names it).
    #[error("could not start `{command}`: {}", describe_spawn_error(source))]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// Waiting for the child failed.
    #[error("could not wait for `{command}`: {source}")]
    Wait {
        command: String,
        #[source]
        source: std::io::Error,
    },
}

impl ProcessError {
    /// The error from starting the process, when that is what failed.
    pub fn spawn_source(&self) -> Option<&std::io::Error> {
        match self {
            ProcessError::Spawn { source, .. } => Some(source),
            ProcessError::Wait { .. } => None,
        }
    }
}

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// It exited by itself with this code.
    Exited(i32),
    /// It was killed by this signal, not by us.
    Signalled(i32),
    /// It ran past the timeout; its process group was killed.
    TimedOut,
    /// The run was cancelled; its process group was killed.
    Cancelled,
}

impl fmt::Display for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ending::Exited(code) => write!(f, "exit {code}"),
            Ending::Signalled(signal) => write!(f, "killed by signal {signal}"),
            Ending::TimedOut => f.write_str("timed out"),
            Ending::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// What a finished process left behind.
#[derive(Clone, Debug)]
pub struct ProcessOutput {
    /// The command line, for messages.
    pub command: String,
    pub ending: Ending,
    /// Captured stdout, capped (head and tail kept).
    pub stdout: String,
    /// Captured stderr, capped (head and tail kept).
    pub stderr: String,
    pub duration: Duration,
}

impl ProcessOutput {
    /// The exit code when the process exited by itself.
    pub fn exit_code(&self) -> Option<i32> {
        match self.ending {
            Ending::Exited(code) => Some(code),
            _ => None,
        }
    }

    /// stdout then stderr, separated by a newline when both have text.
    pub fn combined(&self) -> String {
        match (
            self.stdout.trim_end().is_empty(),
            self.stderr.trim_end().is_empty(),
        ) {
            (_, true) => self.stdout.clone(),
            (true, false) => self.stderr.clone(),
            (false, false) => format!("{}\n{}", self.stdout.trim_end(), self.stderr),
        }
    }
}

/// A command to run: program, arguments, working directory, extra
/// environment, timeout and output cap. `Debug` never shows the environment.
#[derive(Clone)]
pub struct ProcessBuilder {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env: Vec<(OsString, OsString)>,
    base_env: Option<Vec<(OsString, OsString)>>,
    timeout: Option<Duration>,
    output_cap: usize,
    shown_args: (usize, &'static str),
    confinement: Option<Arc<Confinement>>,
}

impl fmt::Debug for ProcessBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessBuilder")
            .field("command", &self.command_line())
            .field("cwd", &self.cwd)
            .field("env", &"not shown")
            .field("timeout", &self.timeout)
            .field("sandboxed", &self.confinement.is_some())
            .finish()
    }
}

impl ProcessBuilder {
    /// A command running `program` with no arguments, no timeout, default cap.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Self {
            program: program.as_ref().to_os_string(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            base_env: None,
            timeout: None,
            output_cap: DEFAULT_OUTPUT_CAP,
            shown_args: (SHOWN_ARGS, "arguments"),
            confinement: None,
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    /// Adds several arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// Sets the working directory.
    pub fn cwd(mut self, dir: impl AsRef<Path>) -> Self {
        self.cwd = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Sets one environment variable (after scrubbing, so it always applies).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// Starts from this environment instead of swarm's own (still scrubbed).
    pub fn base_env<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.base_env = Some(
            vars.into_iter()
                .map(|(k, v)| (k.as_ref().to_os_string(), v.as_ref().to_os_string()))
                .collect(),
        );
        self
    }

    /// Kills the process group after this long.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Keeps at most this many bytes of each stream.
    pub fn output_cap(mut self, bytes: usize) -> Self {
        self.output_cap = bytes;
        self
    }

    /// Shows at most `count` arguments in [`command_line`](Self::command_line),
    /// then "… and N more `noun`" (default: [`SHOWN_ARGS`] "arguments").
    pub fn shown_args(mut self, count: usize, noun: &'static str) -> Self {
        self.shown_args = (count, noun);
        self
    }

    /// Runs the child under a sandbox cell's confinement.
    pub(crate) fn confine(mut self, confinement: Arc<Confinement>) -> Self {
        self.confinement = Some(confinement);
        self
    }

    /// The command line, shell-like, for messages and the log; capped at
    /// the shown-argument count.
    pub fn command_line(&self) -> String {
        let (shown, noun) = self.shown_args;
        let mut words: Vec<String> = std::iter::once(&self.program)
            .chain(self.args.iter().take(shown))
            .map(|a| shell_word(&a.to_string_lossy()))
            .collect();
        let left = self.args.len().saturating_sub(shown);
        if left > 0 {
            words.push(format!("… and {} more {noun}", thousands(left)));
        }
        words.join(" ")
    }

    /// Runs the command to its end, a timeout, or a cancel.
    ///
    /// Only a failure to start or wait is an `Err`; a non-zero exit, a
    /// timeout or a cancel are described by [`ProcessOutput::ending`].
    pub fn run(&self, cancel: &Cancel) -> Result<ProcessOutput, ProcessError> {
        let command = self.command_line();
        let mut cmd = self.std_command();
        let started = Instant::now();
        let mut child = cmd.spawn().map_err(|source| {
            if let Some(confinement) = &self.confinement {
                confinement.failed_in_child(&source);
            }
            ProcessError::Spawn {
                command: command.clone(),
                source,
            }
        })?;
        let streams = Streams::read(&mut child, self.output_cap);
        let ending = match self.wait(&mut child, started, cancel) {
            Ok(ending) => ending,
            Err(source) => {
                kill_group(&child);
                let _ = child.wait();
                return Err(ProcessError::Wait { command, source });
            }
        };
        let duration = started.elapsed();
        // Shown with -v: each tool command and its time.
        tracing::info!(
            "ran {command} in {:.1} s ({})",
            duration.as_secs_f64(),
            ending
        );
        let [stdout, stderr] = streams.collect();
        Ok(ProcessOutput {
            command,
            ending,
            stdout,
            stderr,
            duration,
        })
    }

    /// The command std spawns: piped output, no input, the child's setup
    /// between fork and exec (see [`ChildPlan`]), the working directory and
    /// the environment.
    fn std_command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let plan = ChildPlan::new(self.confinement.clone(), self.timeout);
        // SAFETY: `enter` only makes syscalls on data prepared here, before
        // the fork (no allocation, no locks), as `pre_exec` requires.
        unsafe {
            cmd.pre_exec(move || plan.enter());
        }
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        self.set_env(&mut cmd);
        cmd
    }

    /// The child's environment: the base environment (or swarm's own)
    /// without the scrubbed variables, then [`PYTHON_VARS`], then the
    /// variables set on this builder.
    fn set_env(&self, cmd: &mut Command) {
        match &self.base_env {
            Some(vars) => {
                cmd.env_clear();
                for (name, value) in vars {
                    if !is_scrubbed(&name.to_string_lossy()) {
                        cmd.env(name, value);
                    }
                }
            }
            None => {
                for (name, _) in std::env::vars_os() {
                    if is_scrubbed(&name.to_string_lossy()) {
                        cmd.env_remove(&name);
                    }
                }
            }
        }
        for (key, value) in PYTHON_VARS {
            cmd.env(key, value);
        }
        for (key, value) in &self.env {
            cmd.env(key, value);
        }
    }

    /// Polls the child until it exits, times out or is cancelled; always
    /// leaves its process group killed and the child reaped.
    fn wait(
        &self,
        child: &mut Child,
        started: Instant,
        cancel: &Cancel,
    ) -> std::io::Result<Ending> {
        let watch = ExitWatch::new(child);
        let mut pause = if watch.is_immediate() {
            MAX_POLL
        } else {
            Duration::from_millis(2)
        };
        loop {
            if exited_without_reaping(child)? {
                // The leader is a zombie: its pid (= the group id) cannot be
                // reused yet, so killing the group is safe. This also removes
                // background grandchildren that would hold our pipes open.
                kill_group(child);
                let status = child.wait()?;
                return Ok(ending_of(status));
            }
            let forced = if cancel.is_cancelled() {
                Some(Ending::Cancelled)
            } else if self.timeout.is_some_and(|t| started.elapsed() >= t) {
                Some(Ending::TimedOut)
            } else {
                None
            };
            if let Some(ending) = forced {
                kill_group(child);
                child.wait()?;
                return Ok(ending);
            }
            let mut next = pause;
            if let Some(t) = self.timeout {
                next = next.min(t.saturating_sub(started.elapsed()));
            }
            watch.wait(next.max(Duration::from_millis(1)));
            pause = (pause * 2).min(MAX_POLL);
        }
    }
}

/// Whether the child has exited, leaving it unreaped (`waitid` with `WNOWAIT`).
fn exited_without_reaping(child: &Child) -> std::io::Result<bool> {
    let pid = libc::id_t::from(child.id());
    // SAFETY: `siginfo_t` is plain data; zeroed is a valid initial value and
    // `waitid` only writes into it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointer to a live `siginfo_t`; `pid` is our own child.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            // SAFETY: reading the pid field of a `siginfo_t` filled by waitid.
            return Ok(unsafe { info.si_pid() } != 0);
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Sends SIGKILL to the child's whole process group (its pid is the group id).
fn kill_group(child: &Child) {
    let Ok(pgid) = libc::pid_t::try_from(child.id()) else {
        return;
    };
    // SAFETY: plain syscall; ESRCH (group already gone) is fine to ignore.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

fn ending_of(status: ExitStatus) -> Ending {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Ending::Exited(code),
        (None, Some(signal)) => Ending::Signalled(signal),
        (None, None) => Ending::Signalled(0),
    }
}

/// `9990` as `9,990`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Quotes a word for display when it holds characters a shell would split on.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_rules() {
        assert!(is_scrubbed("OPENAI_API_KEY"));
        assert!(is_scrubbed("MY_SERVICE_TOKEN"));
        assert!(is_scrubbed("GIT_DIR"));
        assert!(is_scrubbed("OPENAI_BASE_URL"));
        assert!(!is_scrubbed("PATH"));
        assert!(!is_scrubbed("HOME"));
    }

    #[test]
    fn command_line_quotes_spaces() {
        let p = ProcessBuilder::new("python").args(["-c", "print(1)", "a b"]);
        assert_eq!(p.command_line(), "python -c 'print(1)' 'a b'");
        assert!(!format!("{p:?}").contains("PATH"));
    }

    #[test]
    fn long_command_lines_are_capped() {
        let files: Vec<String> = (0..10_000).map(|i| format!("f{i}.py")).collect();
        let p = ProcessBuilder::new("python")
            .args(["-m", "pylint"])
            .args(&files)
            .shown_args(12, "files");
        let line = p.command_line();
        assert!(line.starts_with("python -m pylint f0.py"), "{line}");
        assert!(line.ends_with("f9.py … and 9,990 more files"), "{line}");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }
}
