//! The only place that starts node and npm: finding node, running a node
//! script (a test runner, eslint, tsc) under the [`Sandbox`] with files
//! handed over through the process's cell, and installing swarm's pinned
//! linter into its cache with npm.
//!
//! It knows no runner, no report format and no project layout: what to run
//! and how to read what it wrote is `lang::javascript`'s. Tool processes run
//! in a sandbox built around node ([`NodeInstall::runtime`]); finding node
//! and the npm install of the pinned linter run outside it (they are
//! swarm's own steps, like the Python bootstrap, and the install needs the
//! registry).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::process::{cap_text, Ending, ProcessBuilder};
use super::{Runtime, Sandbox, ToolError};
use crate::cancel::Cancel;

mod linter;

pub use linter::{install_pinned_linter, PinnedLinter, PINNED_ESLINT};

/// How much of a node process's console output a run keeps.
pub const NODE_OUTPUT_CAP: usize = 32 * 1024;
/// How long `node --version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(30);
/// The oldest node major version the supported runners work on.
pub const MIN_NODE_MAJOR: u32 = 18;

/// Why node cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum NodeMissing {
    /// No `node` on `PATH` (and `SWARM_NODE` unset).
    #[error(
        "node is not installed (no `node` on PATH): install Node.js {MIN_NODE_MAJOR} or later \
         (your package manager's `nodejs`, or https://nodejs.org), or set SWARM_NODE to it"
    )]
    NotFound,
    /// `node --version` failed or said something else than a version.
    #[error("{} does not run: {problem}", node.display())]
    DoesNotRun { node: PathBuf, problem: String },
    /// Too old for the runners.
    #[error(
        "{} is node {version}; the test runners need node {MIN_NODE_MAJOR} or later",
        node.display()
    )]
    TooOld { node: PathBuf, version: String },
}

/// The node that runs the tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInstall {
    /// The real program (symlinks resolved, so its installation is known).
    pub node: PathBuf,
    /// `20.20.2`, from `node --version`.
    pub version: String,
    /// The installation's folder (the parent of its `bin/`): readable in
    /// the sandbox.
    pub prefix: PathBuf,
}

impl NodeInstall {
    /// Finds node: `explicit` (`SWARM_NODE`) when given, else `node` on
    /// `path` (the `PATH` value); checks that it runs and is recent enough.
    pub fn find(
        explicit: Option<&Path>,
        path: Option<&std::ffi::OsStr>,
    ) -> Result<Self, NodeMissing> {
        let found = match explicit {
            Some(node) => Some(node.to_path_buf()),
            None => path.and_then(|p| {
                std::env::split_paths(p)
                    .map(|dir| dir.join("node"))
                    .find(|candidate| is_executable(candidate))
            }),
        };
        let node = found.ok_or(NodeMissing::NotFound)?;
        let node = node.canonicalize().map_err(|e| NodeMissing::DoesNotRun {
            node: node.clone(),
            problem: e.to_string(),
        })?;
        let version = version_of(&node)?;
        let major: u32 = version
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        if major < MIN_NODE_MAJOR {
            return Err(NodeMissing::TooOld { node, version });
        }
        let prefix = node
            .parent()
            .and_then(Path::parent)
            .unwrap_or(Path::new("/"))
            .to_path_buf();
        Ok(Self {
            node,
            version,
            prefix,
        })
    }

    /// [`NodeInstall::find`] from this process's `SWARM_NODE` and `PATH`.
    pub fn from_env() -> Result<Self, NodeMissing> {
        let explicit = std::env::var_os("SWARM_NODE").map(PathBuf::from);
        Self::find(explicit.as_deref(), std::env::var_os("PATH").as_deref())
    }

    /// The sandbox's view of this node: its installation readable, plus
    /// `read` (the project's dependencies, the linter's folder), probed by
    /// `node -e ""`. Telemetry and update checks of the tools are off.
    pub fn runtime(&self, read: Vec<PathBuf>) -> Runtime {
        let mut readable = vec![self.node.clone(), self.prefix.clone()];
        readable.extend(read);
        Runtime {
            program: self.node.clone(),
            probe: vec![OsString::from("-e"), OsString::from("")],
            read: readable,
            env: vec![
                (OsString::from("CI"), OsString::from("true")),
                (OsString::from("NO_COLOR"), OsString::from("1")),
                (OsString::from("FORCE_COLOR"), OsString::from("0")),
                (OsString::from("NODE_ENV"), OsString::from("test")),
            ],
        }
    }
}

/// Whether `path` is an executable file.
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `20.20.2` from `node --version` (`v20.20.2`).
fn version_of(node: &Path) -> Result<String, NodeMissing> {
    let problem = |problem: String| NodeMissing::DoesNotRun {
        node: node.to_path_buf(),
        problem,
    };
    let out = ProcessBuilder::new(node)
        .arg("--version")
        .timeout(VERSION_TIMEOUT)
        .run(&Cancel::new())
        .map_err(|e| problem(e.to_string()))?;
    let text = out.stdout.trim();
    match (out.ending, text.strip_prefix('v')) {
        (Ending::Exited(0), Some(version)) if !version.is_empty() => Ok(version.to_string()),
        _ => Err(problem(format!(
            "`node --version` said {:?}",
            cap_text(&out.combined(), 200)
        ))),
    }
}

/// One argument of a [`NodeScript`]: text, or a path in the process's cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    /// Passed as it is.
    Plain(OsString),
    /// `prefix` followed by the path of `name` in the cell
    /// (`--outputFile=` + `<cell>/report.json`).
    InCell { prefix: String, name: String },
}

impl Arg {
    /// A plain argument.
    pub fn plain(text: impl Into<OsString>) -> Arg {
        Arg::Plain(text.into())
    }

    /// The cell file `name`, after `prefix`.
    pub fn in_cell(prefix: &str, name: &str) -> Arg {
        Arg::InCell {
            prefix: prefix.to_string(),
            name: name.to_string(),
        }
    }
}

/// A node process to run in a sandbox cell: `node <args>` in `cwd`.
#[derive(Clone, Debug, Default)]
pub struct NodeScript {
    /// What the sandbox cell is named after (`vitest`, `eslint`).
    pub tool: String,
    /// The arguments after `node`.
    pub args: Vec<Arg>,
    /// The working directory (the project's folder in the worktree).
    pub cwd: PathBuf,
    /// Extra variables.
    pub env: Vec<(OsString, OsString)>,
    /// Files written into the cell before the start (name, text): a
    /// reporter, a configuration.
    pub inputs: Vec<(String, String)>,
    /// Files of the cell read back after the end (a report).
    pub outputs: Vec<String>,
    /// The whole run's limit; the process group is killed then.
    pub timeout: Duration,
}

/// How a [`NodeScript`] ended and what it left.
#[derive(Clone, Debug)]
pub struct NodeRun {
    /// The command line, for the log.
    pub command: String,
    /// How the process ended.
    pub ending: Ending,
    /// stdout then stderr, capped at [`NODE_OUTPUT_CAP`].
    pub output: String,
    /// Wall time.
    pub duration: Duration,
    /// Each of the script's `outputs` that exists, with its text.
    pub files: Vec<(String, String)>,
}

impl NodeRun {
    /// The text the process left in the cell file `name`, if any.
    pub fn file(&self, name: &str) -> Option<&str> {
        self.files
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, text)| text.as_str())
    }

    /// The exit code when the process exited by itself.
    pub fn exit_code(&self) -> Option<i32> {
        match self.ending {
            Ending::Exited(code) => Some(code),
            _ => None,
        }
    }
}

/// Runs `script` with `install`'s node under `sandbox` (a sandbox built
/// around [`NodeInstall::runtime`]), in a fresh cell. Only a node that
/// cannot be started, a cell that cannot be made, or a cancel is an `Err`;
/// any ending of the script itself is a value.
pub fn run(
    install: &NodeInstall,
    sandbox: &Sandbox,
    script: &NodeScript,
    cancel: &Cancel,
) -> Result<NodeRun, ToolError> {
    let cell = sandbox.cell(&script.tool)?;
    for (name, text) in &script.inputs {
        let path = cell.dir().join(name);
        std::fs::write(&path, text).map_err(|source| ToolError::write(&path, source))?;
    }
    let mut builder = cell
        .command(&install.node)
        .cwd(&script.cwd)
        .timeout(script.timeout);
    for arg in &script.args {
        builder = match arg {
            Arg::Plain(text) => builder.arg(text),
            Arg::InCell { prefix, name } => {
                let mut text = OsString::from(prefix);
                text.push(cell.dir().join(name));
                builder.arg(text)
            }
        };
    }
    for (key, value) in &script.env {
        builder = builder.env(key, value);
    }
    let out = builder.run(cancel).map_err(|source| ToolError::Run {
        command: builder.command_line(),
        source,
    })?;
    if out.ending == Ending::Cancelled {
        return Err(ToolError::Cancelled);
    }
    let files = script
        .outputs
        .iter()
        .filter_map(|name| {
            let text = std::fs::read_to_string(cell.dir().join(name)).ok()?;
            Some((name.clone(), text))
        })
        .collect();
    Ok(NodeRun {
        command: out.command.clone(),
        ending: out.ending,
        output: cap_text(&out.combined(), NODE_OUTPUT_CAP),
        duration: out.duration,
        files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_is_found_on_the_path_or_said_missing() {
        let empty = tempfile::tempdir().expect("tempdir");
        let missing = NodeInstall::find(None, Some(empty.path().as_os_str()));
        assert!(matches!(missing, Err(NodeMissing::NotFound)));
        let line = NodeMissing::NotFound.to_string();
        assert!(line.contains("install Node.js 18 or later"), "{line}");
        assert!(!line.contains('\n'));
    }

    #[test]
    fn a_node_that_is_not_node_does_not_run() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fake = dir.path().join("node");
        std::fs::write(&fake, "#!/bin/sh\necho hello\n").expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let found = NodeInstall::find(None, Some(dir.path().as_os_str()));
        assert!(
            matches!(found, Err(NodeMissing::DoesNotRun { .. })),
            "{found:?}"
        );
        std::fs::write(&fake, "#!/bin/sh\necho v16.20.0\n").expect("write");
        let old = NodeInstall::find(Some(&fake), None);
        assert!(
            matches!(old, Err(NodeMissing::TooOld { ref version, .. }) if version == "16.20.0")
        );
    }
}
