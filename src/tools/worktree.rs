//! Which code a tool run imports: the run's worktree's, never the user's
//! checkout's nor an installed copy of the project.
//!
//! An editable install (`pip install -e .`, and every uv, hatch, pdm or
//! poetry `.venv`) puts the user's `src/` on `sys.path` or maps the
//! project's packages to it with an import finder; a regular install puts a
//! copy in `site-packages`. Either way `import pkg` in the worktree would
//! load code that is not the attempt's, and the Judge would measure the
//! user's unchanged checkout. So every Python process swarm runs on a
//! worktree (pytest, the import checks, the behaviour probe) gets swarm's
//! import guard (`worktree/guard.py`, written into its sandbox cell as
//! `sitecustomize.py` and put on `PYTHONPATH`): it moves `sys.path`
//! entries and finder tables that point into the checkout to the
//! worktree, puts the project's source folders ([`source_roots`]) first,
//! and answers for the project's modules from the worktree before any other
//! finder. At exit it writes down every module of the project that still
//! came from elsewhere; [`ImportGuard::check`] turns that into
//! [`ToolError::OutsideWorktree`], and the run stops instead of judging the
//! wrong code.
//!
//! Nothing here decides what is green; it only makes sure what is measured
//! is the worktree.

use std::path::{Path, PathBuf};

use super::process::ProcessBuilder;
use super::project::Project;
use super::sandbox::Cell;
use super::{Sandbox, ToolError};

/// The guard's source, written as `_swarm_worktree.py`.
const GUARD_SOURCE: &str = include_str!("worktree/guard.py");
/// The start-up hook that installs the guard, then runs the interpreter's
/// own `sitecustomize` (which this one shadows on `PYTHONPATH`).
const SITECUSTOMIZE: &str = "\"\"\"swarm's start-up hook: installs the import guard \
(_swarm_worktree), then runs the interpreter's own sitecustomize.\"\"\"\n\
import _swarm_worktree\n\
_swarm_worktree.install()\n\
_swarm_worktree.chain_sitecustomize(__file__)\n";

/// A module of the project that a tool run loaded from outside the worktree.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct ForeignImport {
    /// `calc.ops`.
    pub module: String,
    /// The file it was loaded from (symlinks resolved).
    pub path: PathBuf,
    /// The loader's class name (`SourceFileLoader`, an editable finder's…).
    #[serde(default)]
    pub loader: String,
    /// Why it counts as the project's own file: `checkout` (the user's
    /// checkout's file, which the worktree also has) or `installed` (a
    /// copy of a file the worktree has, at the same place in the package).
    #[serde(default)]
    pub cause: String,
}

impl std::fmt::Display for ForeignImport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} from {}", self.module, self.path.display())?;
        let through = if self.loader.is_empty() {
            String::new()
        } else {
            format!(", loaded by {}", self.loader)
        };
        match self.cause.as_str() {
            "checkout" => write!(f, " (your checkout's file{through})"),
            "installed" => write!(f, " (an installed copy of the project's file{through})"),
            _ => Ok(()),
        }
    }
}

/// The guard written into one tool process's cell.
#[derive(Debug)]
pub(crate) struct ImportGuard {
    /// The folder put on `PYTHONPATH` (swarm's other modules for the
    /// process, such as the pytest plugin, go here too).
    dir: PathBuf,
    /// Where the guard writes what came from outside the worktree.
    report: PathBuf,
}

#[derive(serde::Serialize)]
struct GuardConfig<'a> {
    worktree: &'a Path,
    checkout: Option<&'a Path>,
    roots: &'a [PathBuf],
    report: &'a Path,
}

impl ImportGuard {
    /// Writes the guard for a process that works on `root` (a folder in
    /// the worktree) into `cell`.
    pub(crate) fn write(cell: &Cell, sandbox: &Sandbox, root: &Path) -> Result<Self, ToolError> {
        let dir = cell.dir().join("python");
        let report = cell.dir().join("imports.jsonl");
        let worktree = sandbox.boundary_of(root);
        let roots = source_roots(root, &worktree);
        let config = GuardConfig {
            worktree: &worktree,
            checkout: sandbox.checkout(),
            roots: &roots,
            report: &report,
        };
        let json = serde_json::to_string(&config).expect("the guard's configuration serialises");
        write_file(&dir.join("_swarm_worktree.py"), GUARD_SOURCE)?;
        write_file(&dir.join("sitecustomize.py"), SITECUSTOMIZE)?;
        write_file(&dir.join("_swarm_worktree.json"), &json)?;
        Ok(Self { dir, report })
    }

    /// The folder on the process's `PYTHONPATH`.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// `builder` with the guard in force (`PYTHONPATH`).
    pub(crate) fn apply(&self, builder: ProcessBuilder) -> ProcessBuilder {
        builder.env("PYTHONPATH", &self.dir)
    }

    /// The modules of the project the process (and the Python processes
    /// it started) loaded from outside the worktree, each once.
    pub(crate) fn foreign(&self) -> Vec<ForeignImport> {
        #[derive(serde::Deserialize)]
        struct Line {
            outside: Vec<ForeignImport>,
        }
        let Ok(text) = std::fs::read_to_string(&self.report) else {
            return Vec::new();
        };
        let mut found: Vec<ForeignImport> = Vec::new();
        for line in text.lines() {
            let Ok(line) = serde_json::from_str::<Line>(line) else {
                continue;
            };
            for import in line.outside {
                if !found.iter().any(|f| f.module == import.module) {
                    found.push(import);
                }
            }
        }
        found.sort_by(|a, b| a.module.cmp(&b.module));
        found
    }

    /// `Err` naming what `command` loaded from outside the worktree, if anything.
    pub(crate) fn check(&self, command: &str) -> Result<(), ToolError> {
        let imports = self.foreign();
        if imports.is_empty() {
            return Ok(());
        }
        Err(ToolError::OutsideWorktree {
            command: command.to_string(),
            imports,
        })
    }
}

/// The folders of the worktree that hold the project's importable code
/// besides `root` itself: `src/` and the folders the project's packaging
/// declares (see [`Project`]), found from `root` up to `worktree`.
pub fn source_roots(root: &Path, worktree: &Path) -> Vec<PathBuf> {
    Project::find(root, worktree)
        .source_dirs
        .into_iter()
        .filter(|dir| dir.starts_with(worktree) && dir != root)
        .collect()
}

fn write_file(path: &Path, text: &str) -> Result<(), ToolError> {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).map_err(|source| ToolError::write(path, source))?;
    }
    std::fs::write(path, text).map_err(|source| ToolError::write(path, source))
}
