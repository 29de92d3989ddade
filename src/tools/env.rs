//! Finding the Python interpreter that runs pytest and pylint, and
//! bootstrapping a cached tool virtualenv when they are missing.
//!
//! Order: `SWARM_PYTHON` (an interpreter path), an active virtualenv
//! (`$VIRTUAL_ENV/bin/python`), a `.venv` in the target or one of its parents
//! up to the repository root, then `python3` on `PATH`. The tool venv lives in
//! `<cache>/tools/py<major.minor>-pytest<ver>-pylint<ver>/` and is made with
//! `--system-site-packages`, so the target's installed dependencies still
//! import.
//!
//! Once found, the interpreter's layout is probed (`sys.executable`, its
//! prefixes, `sys.path`, the user site): tools then run the real executable
//! rather than a shim, and the sandbox knows which folders they must read.
//! Everything here runs outside the sandbox, with swarm's (scrubbed)
//! environment.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::process::{Ending, ProcessBuilder};
use super::{EnvSource, FileAction, MissingTool, PythonEnv, ToolError};
use crate::cancel::Cancel;

mod declared;
mod known;
mod probe;
mod pyenv;
#[cfg(test)]
mod test_files;

use crate::tools::memo::ProbeMemo;
pub use declared::declared_env;
use probe::{Probe, ToolProbe};

/// The pytest version a bootstrapped tool environment pins.
pub const PYTEST_PIN: &str = "9.2.0";
/// The pylint version a bootstrapped tool environment pins.
pub const PYLINT_PIN: &str = "4.1.4";

/// How long a version probe may take (pylint's first import can be slow).
const PROBE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long creating the venv or installing into it may take.
const BOOTSTRAP_TIMEOUT: Duration = Duration::from_secs(900);

/// The environment variables that steer [`resolve_env`], read once so tests
/// can pass their own.
#[derive(Clone, Debug, Default)]
pub struct EnvSettings {
    /// `SWARM_PYTHON`: an interpreter path that wins over everything.
    pub swarm_python: Option<PathBuf>,
    /// `VIRTUAL_ENV`: the active virtualenv.
    pub virtual_env: Option<PathBuf>,
    /// swarm's cache folder ([`crate::config::cache_dir`]: `SWARM_CACHE_DIR`,
    /// else `<user cache>/swarm`); tool environments live in its `tools/`.
    pub cache_dir: Option<PathBuf>,
    /// `PATH`, to find `python3`.
    pub path: Option<OsString>,
}

impl EnvSettings {
    /// Reads the settings from this process's environment.
    pub fn from_env() -> Self {
        let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        Self {
            swarm_python: non_empty("SWARM_PYTHON").map(PathBuf::from),
            virtual_env: non_empty("VIRTUAL_ENV").map(PathBuf::from),
            cache_dir: crate::config::cache_dir(&crate::config::ProcessEnv),
            path: std::env::var_os("PATH"),
        }
        .without_own_env(own_env().as_deref())
    }

    /// Leaves out the virtualenv swarm itself is installed in (by pip, uvx
    /// or pre-commit, which activates it for its hooks): it holds swarm, not
    /// the project's dependencies, so neither as the active virtualenv nor
    /// as the `python3` first on `PATH` is it the project's interpreter.
    pub fn without_own_env(mut self, own_env: Option<&Path>) -> Self {
        let Some(own) = own_env else {
            return self;
        };
        if self
            .virtual_env
            .as_deref()
            .is_some_and(|dir| same_dir(dir, own))
        {
            self.virtual_env = None;
        }
        if let Some(path) = &self.path {
            let own_bin = own.join("bin");
            let kept: Vec<PathBuf> = std::env::split_paths(path)
                .filter(|dir| !same_dir(dir, &own_bin))
                .collect();
            self.path = std::env::join_paths(kept).ok().or(self.path);
        }
        self
    }

    /// The folder holding tool environments, `<cache>/tools`.
    pub fn tools_dir(&self) -> Option<PathBuf> {
        self.cache_dir.as_ref().map(|dir| dir.join("tools"))
    }
}

/// `a` and `b` name the same folder.
fn same_dir(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
}

/// The virtualenv this swarm binary was installed into: `<env>/bin/swarm`
/// with `<env>/pyvenv.cfg` beside it.
fn own_env() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?.canonicalize().ok()?;
    let env = exe.parent()?.parent()?;
    env.join("pyvenv.cfg").is_file().then(|| env.to_path_buf())
}

/// [`resolve_env`] with explicit settings instead of the process environment.
pub fn resolve_env_with(
    target: &Path,
    bootstrap: bool,
    progress: &dyn Fn(&str),
    settings: &EnvSettings,
) -> Result<PythonEnv, ToolError> {
    let (python, source) = find_interpreter(target, settings)?;
    // The answer of an earlier run, when nothing it came from has changed
    // (see `known`).
    let launch = known::Launch::read(&python);
    let memo = settings.cache_dir.as_deref().and_then(|dir| {
        let key = launch.key(source, settings, probe::SCRIPT)?;
        Some((ProbeMemo::new(dir), key))
    });
    if let Some(env) = memo
        .as_ref()
        .and_then(|(memo, key)| memo.recall::<PythonEnv>(&key.key))
    {
        return Ok(env);
    }
    // One start-up tells the layout and the tools' versions (see `probe`);
    // tools then run the real executable behind a launcher such as pyenv's
    // shim, which costs a few hundred milliseconds a start.
    let Probe {
        found,
        tools: probe,
    } = probe::probe(&launch.to_start())?;
    if let (Some(pytest_version), Some(pylint_version)) = (&probe.pytest, &probe.pylint) {
        let env = PythonEnv {
            python: found.executable.clone().unwrap_or_else(|| python.clone()),
            source,
            pytest_version: pytest_version.clone(),
            pylint_version: pylint_version.clone(),
            layout: found.layout.clone(),
        };
        if let Some((memo, key)) = memo.filter(|(_, key)| key.may_remember(&python, &env)) {
            memo.remember(&key.key, &env, known::witnesses(&python, &env, &found));
        }
        return Ok(env);
    }
    let missing = probe.missing();
    if !bootstrap {
        return Err(MissingTool::TestTools {
            python,
            tools: missing,
        }
        .into());
    }
    progress(&format!(
        "{} not found for {}: preparing a tool environment",
        missing.join(" and "),
        python.display()
    ));
    bootstrap_env(&python, settings, progress)
}

/// Picks the interpreter by the documented order.
fn find_interpreter(
    target: &Path,
    settings: &EnvSettings,
) -> Result<(PathBuf, EnvSource), ToolError> {
    if let Some(python) = &settings.swarm_python {
        if !python.exists() && python.components().count() > 1 {
            return Err(MissingTool::NamedPythonAbsent {
                python: python.clone(),
            }
            .into());
        }
        let python = if python.components().count() > 1 {
            python.clone()
        } else {
            search_path(&python.to_string_lossy(), settings.path.as_ref()).ok_or_else(|| {
                MissingTool::NamedPythonNotOnPath {
                    name: python.clone(),
                }
            })?
        };
        return Ok((python, EnvSource::Explicit));
    }
    if let Some(venv) = &settings.virtual_env {
        let python = venv.join("bin").join("python");
        if python.exists() {
            return Ok((python, EnvSource::ActiveVenv));
        }
    }
    if let Some(python) = find_dot_venv(target) {
        return Ok((python, EnvSource::DotVenv));
    }
    if let Some(python) = search_path("python3", settings.path.as_ref()) {
        return Ok((python, EnvSource::SystemPython));
    }
    Err(MissingTool::NoPython.into())
}

/// `.venv/bin/python` in `target` or a parent, stopping at the repository root.
fn find_dot_venv(target: &Path) -> Option<PathBuf> {
    let start = target
        .canonicalize()
        .unwrap_or_else(|_| target.to_path_buf());
    for dir in start.ancestors() {
        let python = dir.join(".venv").join("bin").join("python");
        if python.exists() {
            return Some(python);
        }
        if dir.join(".git").exists() {
            break;
        }
    }
    None
}

/// The first executable `name` on `path`.
fn search_path(name: &str, path: Option<&OsString>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path?).find_map(|dir| {
        let candidate = dir.join(name);
        let meta = std::fs::metadata(&candidate).ok()?;
        (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(candidate)
    })
}

/// Creates (or reuses) the tool environment for `origin`'s Python version.
fn bootstrap_env(
    origin: &Path,
    settings: &EnvSettings,
    progress: &dyn Fn(&str),
) -> Result<PythonEnv, ToolError> {
    let info = origin_info(origin)?;
    let tools_dir = settings.tools_dir().ok_or(MissingTool::NoCacheDir)?;
    let dir = tools_dir.join(tool_env_name(&info));
    let python = dir.join("bin").join("python");

    if python.exists() {
        if let Some(env) = ready_env(&python)? {
            progress(&format!("reusing tool environment {}", dir.display()));
            return Ok(env);
        }
        progress(&format!(
            "tool environment {} is incomplete, repairing",
            dir.display()
        ));
    } else {
        std::fs::create_dir_all(&tools_dir).map_err(|source| ToolError::File {
            action: FileAction::Mkdir,
            path: tools_dir.clone(),
            source,
        })?;
        progress(&format!("creating tool environment {}", dir.display()));
        let made = ProcessBuilder::new(origin)
            .args(["-m", "venv", "--system-site-packages"])
            .arg(&dir)
            .timeout(BOOTSTRAP_TIMEOUT)
            .run(&Cancel::new());
        expect_success(made)?;
    }
    if let Some(site) = &info.venv_site {
        // The origin is itself a virtualenv: its packages are not the base
        // interpreter's system site, so point the tool env at them.
        write_origin_pth(&python, site)?;
    }
    progress(&format!(
        "installing pytest=={PYTEST_PIN} pylint=={PYLINT_PIN}"
    ));
    let installed = ProcessBuilder::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--quiet",
        ])
        .arg(format!("pytest=={PYTEST_PIN}"))
        .arg(format!("pylint=={PYLINT_PIN}"))
        .timeout(BOOTSTRAP_TIMEOUT)
        .run(&Cancel::new());
    expect_success(installed)?;
    match ready_env(&python)? {
        Some(env) => {
            progress("tool environment ready");
            Ok(env)
        }
        None => Err(MissingTool::BootstrapIncomplete { dir }.into()),
    }
}

/// The tool env at `python` when both tools run in it.
fn ready_env(python: &Path) -> Result<Option<PythonEnv>, ToolError> {
    let probed = probe::probe(python)?;
    Ok(match probed.tools {
        ToolProbe {
            pytest: Some(pytest_version),
            pylint: Some(pylint_version),
        } => Some(PythonEnv {
            python: probed
                .found
                .executable
                .unwrap_or_else(|| python.to_path_buf()),
            source: EnvSource::Bootstrapped,
            pytest_version,
            pylint_version,
            layout: probed.found.layout,
        }),
        _ => None,
    })
}

/// What the bootstrap needs to know about the origin interpreter.
#[derive(Debug)]
struct OriginInfo {
    /// `3.11`.
    version: String,
    /// The origin's site-packages folders when it is itself a virtualenv.
    venv_site: Option<Vec<String>>,
    /// `sys.prefix`, to tell apart tool envs of different origin venvs.
    prefix: String,
}

const ORIGIN_SCRIPT: &str = r#"import json, sys, sysconfig
paths = sysconfig.get_paths()
print(json.dumps({
    "version": "%d.%d" % sys.version_info[:2],
    "venv": sys.prefix != sys.base_prefix,
    "prefix": sys.prefix,
    "site": sorted({paths["purelib"], paths["platlib"]}),
}))"#;

fn origin_info(origin: &Path) -> Result<OriginInfo, ToolError> {
    let out = run_python(origin, &["-c", ORIGIN_SCRIPT])?;
    let failed = |message: String| ToolError::Failed {
        command: out.command.clone(),
        message,
    };
    if out.ending != Ending::Exited(0) {
        return Err(failed(last_line(&out.combined())));
    }
    let value: serde_json::Value =
        serde_json::from_str(out.stdout.trim()).map_err(|source| ToolError::Garbled {
            command: out.command.clone(),
            what: "unexpected output",
            last_line: None,
            source,
        })?;
    let version = value["version"]
        .as_str()
        .ok_or_else(|| failed("no version in output".to_string()))?
        .to_string();
    let venv_site = value["venv"].as_bool().unwrap_or(false).then(|| {
        value["site"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    });
    let prefix = value["prefix"].as_str().unwrap_or_default().to_string();
    Ok(OriginInfo {
        version,
        venv_site,
        prefix,
    })
}

/// `py3.11-pytest9.2.0-pylint4.1.4`, plus a short hash of the origin's prefix
/// when the origin is a virtualenv (each such env sees its origin's packages).
fn tool_env_name(info: &OriginInfo) -> String {
    let base = format!("py{}-pytest{PYTEST_PIN}-pylint{PYLINT_PIN}", info.version);
    match &info.venv_site {
        None => base,
        Some(_) => {
            let digest = Sha256::digest(info.prefix.as_bytes());
            format!("{base}-{}", &hex::encode(digest)[..8])
        }
    }
}

/// Writes a `.pth` file into the tool env's site-packages naming `site`.
pub(super) fn write_origin_pth(tool_python: &Path, site: &[String]) -> Result<(), ToolError> {
    let out = ProcessBuilder::new(tool_python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .timeout(PROBE_TIMEOUT)
        .run(&Cancel::new());
    let out = expect_success(out)?;
    let purelib = PathBuf::from(out.stdout.trim());
    let pth = purelib.join("_swarm_origin.pth");
    let mut text = site.join("\n");
    text.push('\n');
    std::fs::write(&pth, text).map_err(|source| ToolError::write(&pth, source))
}

/// `sys.stdlib_module_names` of `python`, sorted; empty when it has none.
pub(super) fn stdlib_modules(python: &Path) -> Vec<String> {
    let script = "import sys\nprint('\\n'.join(sorted(getattr(sys, 'stdlib_module_names', ()))))";
    match run_python(python, &["-c", script]) {
        Ok(out) if out.ending == Ending::Exited(0) => {
            out.stdout.lines().map(str::to_string).collect()
        }
        _ => Vec::new(),
    }
}

/// Runs `python args` for a probe (within [`PROBE_TIMEOUT`]);
/// [`MissingTool::PythonDoesNotStart`] when it cannot be started.
fn run_python(python: &Path, args: &[&str]) -> Result<super::process::ProcessOutput, ToolError> {
    ProcessBuilder::new(python)
        .args(args)
        .timeout(PROBE_TIMEOUT)
        .run(&Cancel::new())
        .map_err(|source| {
            MissingTool::PythonDoesNotStart {
                python: python.to_path_buf(),
                source,
            }
            .into()
        })
}

fn expect_success(
    out: Result<super::process::ProcessOutput, super::process::ProcessError>,
) -> Result<super::process::ProcessOutput, ToolError> {
    let out = out.map_err(|source| ToolError::Run {
        command: "python".to_string(),
        source,
    })?;
    match out.ending {
        Ending::Exited(0) => Ok(out),
        Ending::TimedOut => Err(ToolError::Failed {
            command: out.command.clone(),
            message: format!("did not finish within {}s", out.duration.as_secs()),
        }),
        _ => Err(ToolError::Failed {
            command: out.command.clone(),
            message: last_line(&out.combined()),
        }),
    }
}

/// The last non-blank line of a text, or a placeholder.
pub(crate) fn last_line(text: &str) -> String {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(no output)")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_env_name_pins_versions() {
        let system = OriginInfo {
            version: "3.11".into(),
            venv_site: None,
            prefix: "/usr".into(),
        };
        assert_eq!(tool_env_name(&system), "py3.11-pytest9.2.0-pylint4.1.4");
        let venv = OriginInfo {
            venv_site: Some(vec![]),
            ..system
        };
        assert!(tool_env_name(&venv).starts_with("py3.11-pytest9.2.0-pylint4.1.4-"));
    }

    #[test]
    fn swarm_s_own_virtualenv_is_not_the_project_s() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("hook-env");
        std::fs::create_dir_all(own.join("bin")).unwrap();
        let user = dir.path().join("user/bin");
        let path = std::env::join_paths([own.join("bin"), user.clone()]).unwrap();
        let settings = EnvSettings {
            virtual_env: Some(own.clone()),
            path: Some(path.clone()),
            ..EnvSettings::default()
        };
        let kept = settings.clone().without_own_env(Some(&own));
        assert_eq!(kept.virtual_env, None);
        assert_eq!(
            std::env::split_paths(kept.path.as_ref().unwrap()).collect::<Vec<_>>(),
            vec![user]
        );
        // Another virtualenv, or swarm not in one, stays as it is.
        let other = settings
            .clone()
            .without_own_env(Some(&dir.path().join("x")));
        assert_eq!(other.virtual_env, Some(own));
        assert_eq!(other.path, Some(path.clone()));
        assert_eq!(settings.without_own_env(None).path, Some(path));
    }
}
