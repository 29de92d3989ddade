//! `--install-deps`: the environment the project declares, built in
//! swarm's cache and never in the user's.
//!
//! A virtualenv of the project's interpreter (found as for any run) under
//! `<cache>/envs/py<version>-<hash>/`, made with `--system-site-packages`
//! (so pytest and pylint the interpreter has still import; when that
//! interpreter is itself a virtualenv, its packages are chained in by a
//! `.pth` file, as `--system-site-packages` alone would skip them), into which go
//! the project itself with its test extras and dependency groups
//! (`pip install '.[test]' --group dev`), its `requirements*.txt`, or —
//! with a `uv.lock` — exactly what the lock says (`uv sync --frozen`).
//! uv does the work when it is on `PATH` (pip otherwise). When the project
//! itself does not build, its declared dependencies are installed without
//! it. pytest and pylint are added at swarm's pins when still missing.
//!
//! The folder's name hashes the interpreter, swarm's pins and the contents
//! of every declaration file, so a second run with the same declarations
//! reuses it (a `swarm-ready` file marks a finished one). The project's
//! code installed there is a copy as of the run that built it; the import
//! guard makes every tool import the worktree's anyway (see
//! [`crate::tools::worktree`]).

use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::super::process::{Ending, ProcessBuilder, ProcessOutput};
use super::super::project::{Project, PROJECT_FILES};
use super::super::{EnvSource, MissingTool, PythonEnv, ToolError};
use super::{
    find_interpreter, last_line, origin_info, probe, search_path, write_origin_pth, EnvSettings,
};
use super::{PYLINT_PIN, PYTEST_PIN};
use crate::cancel::Cancel;

/// How long making the environment or one install may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(1800);
/// The file that marks a finished environment.
const READY: &str = "swarm-ready";
/// Bumped when what goes into an environment changes.
const FORMAT: &str = "swarm-declared-env-1";

/// The project's declared environment for `target` (declarations looked
/// for from it up to `ceiling`, the repository's root): reused from the
/// cache when its declarations are unchanged, else built there.
pub fn declared_env(
    target: &Path,
    ceiling: &Path,
    settings: &EnvSettings,
    progress: &dyn Fn(&str),
) -> Result<PythonEnv, ToolError> {
    let (origin, _) = find_interpreter(target, settings)?;
    let info = origin_info(&origin)?;
    let project = Project::find(target, ceiling);
    let envs = settings
        .cache_dir
        .as_ref()
        .map(|dir| dir.join("envs"))
        .ok_or(MissingTool::NoCacheDir)?;
    let dir = envs.join(format!(
        "py{}-{}",
        info.version,
        key(&origin, &info.version, &project)
    ));
    let python = dir.join("bin").join("python");
    if dir.join(READY).is_file() {
        if let Some(env) = ready(&python)? {
            progress(&format!(
                "reusing the project's declared environment {}",
                dir.display()
            ));
            return Ok(env);
        }
    }
    if dir.exists() {
        // Left half-made by an interrupted run.
        std::fs::remove_dir_all(&dir).map_err(|source| ToolError::write(&dir, source))?;
    }
    std::fs::create_dir_all(&envs).map_err(|source| ToolError::write(&envs, source))?;
    let uv = search_path("uv", settings.path.as_ref());
    progress(&format!(
        "building the project's declared environment in {} (--install-deps)",
        dir.display()
    ));
    let made = match &uv {
        Some(uv) => ProcessBuilder::new(uv)
            .args(["venv", "--quiet", "--system-site-packages", "--python"])
            .arg(&origin)
            .arg(&dir),
        None => ProcessBuilder::new(&origin)
            .args(["-m", "venv", "--system-site-packages"])
            .arg(&dir),
    };
    succeed(made.timeout(INSTALL_TIMEOUT).run(&Cancel::new()), &dir)?;
    if let Some(site) = &info.venv_site {
        // The interpreter is itself a virtualenv: its packages are not the
        // base interpreter's system site, so point the environment at them.
        write_origin_pth(&python, site)?;
    }
    install_declared(&project, &python, uv.as_deref(), &dir, progress)?;
    add_missing_tools(&python, uv.as_deref(), &dir, progress)?;
    let env =
        ready(&python)?.ok_or_else(|| MissingTool::BootstrapIncomplete { dir: dir.clone() })?;
    std::fs::write(dir.join(READY), "")
        .map_err(|source| ToolError::write(dir.join(READY), source))?;
    progress("the project's declared environment is ready");
    Ok(env)
}

/// The folder's key: the interpreter, swarm's pins and every declaration
/// file's name and contents, hashed.
fn key(origin: &Path, version: &str, project: &Project) -> String {
    let mut hash = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    field(FORMAT.as_bytes());
    let real = origin
        .canonicalize()
        .unwrap_or_else(|_| origin.to_path_buf());
    field(real.as_os_str().as_encoded_bytes());
    field(version.as_bytes());
    field(PYTEST_PIN.as_bytes());
    field(PYLINT_PIN.as_bytes());
    let mut files: Vec<String> = PROJECT_FILES.iter().map(|f| f.to_string()).collect();
    files.extend(project.requirement_files.iter().cloned());
    files.extend(project.lock_file.iter().cloned());
    for file in files {
        field(file.as_bytes());
        field(&std::fs::read(project.dir.join(&file)).unwrap_or_default());
    }
    hex::encode(hash.finalize())[..16].to_string()
}

/// Installs what the project declares into the environment of `python`.
fn install_declared(
    project: &Project,
    python: &Path,
    uv: Option<&Path>,
    dir: &Path,
    progress: &dyn Fn(&str),
) -> Result<(), ToolError> {
    if let (Some(uv), Some("uv.lock")) = (uv, project.lock_file.as_deref()) {
        progress("installing what uv.lock pins (uv sync --frozen)");
        let sync = ProcessBuilder::new(uv)
            .args([
                "sync",
                "--frozen",
                "--inexact",
                "--all-extras",
                "--all-groups",
            ])
            .args(["--no-editable", "--quiet", "--project"])
            .arg(&project.dir)
            .env("UV_PROJECT_ENVIRONMENT", dir)
            .cwd(&project.dir)
            .timeout(INSTALL_TIMEOUT);
        return succeed(sync.run(&Cancel::new()), dir).map(drop);
    }
    let requirements: Vec<String> = project
        .requirement_files
        .iter()
        .flat_map(|f| ["-r".to_string(), f.clone()])
        .collect();
    if !project.installable {
        if requirements.is_empty() {
            progress("the project declares nothing to install");
            return Ok(());
        }
        progress(&format!("installing {}", requirements.join(" ")));
        return succeed(pip_install(python, uv, &project.dir, &requirements), dir).map(drop);
    }
    let mut whole = vec![if project.test_extras.is_empty() {
        ".".to_string()
    } else {
        format!(".[{}]", project.test_extras.join(","))
    }];
    if uv.is_some() {
        for group in &project.test_groups {
            whole.extend(["--group".to_string(), group.clone()]);
        }
    }
    whole.extend(requirements.iter().cloned());
    progress(&format!("installing {}", whole.join(" ")));
    let out = pip_install(python, uv, &project.dir, &whole);
    let failed = match &out {
        Ok(out) if out.ending == Ending::Exited(0) => return Ok(()),
        Ok(out) => last_line(&out.combined()),
        Err(e) => e.to_string(),
    };
    // The project itself would not build: its dependencies without it.
    let Some(uv) = uv.filter(|_| project.dir.join("pyproject.toml").is_file()) else {
        return succeed(out, dir).map(drop);
    };
    progress(&format!(
        "the project itself did not install ({failed}): installing its declared dependencies only"
    ));
    let mut deps = vec!["-r".to_string(), "pyproject.toml".to_string()];
    for extra in &project.test_extras {
        deps.extend(["--extra".to_string(), extra.clone()]);
    }
    deps.extend(requirements);
    succeed(pip_install(python, Some(uv), &project.dir, &deps), dir).map(drop)
}

/// `pip install args` into the environment of `python`, from `cwd`: with
/// uv when there is one.
fn pip_install(
    python: &Path,
    uv: Option<&Path>,
    cwd: &Path,
    args: &[String],
) -> Result<ProcessOutput, super::super::process::ProcessError> {
    let builder = match uv {
        Some(uv) => ProcessBuilder::new(uv)
            .args(["pip", "install", "--quiet", "--python"])
            .arg(python),
        None => ProcessBuilder::new(python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ]),
    };
    builder
        .args(args)
        .cwd(cwd)
        .timeout(INSTALL_TIMEOUT)
        .run(&Cancel::new())
}

/// Adds pytest and pylint at swarm's pins when the environment still lacks them.
fn add_missing_tools(
    python: &Path,
    uv: Option<&Path>,
    dir: &Path,
    progress: &dyn Fn(&str),
) -> Result<(), ToolError> {
    let found = probe::probe(python)?.tools;
    let mut wanted = Vec::new();
    if found.pytest.is_none() {
        wanted.push(format!("pytest=={PYTEST_PIN}"));
    }
    if found.pylint.is_none() {
        wanted.push(format!("pylint=={PYLINT_PIN}"));
    }
    if wanted.is_empty() {
        return Ok(());
    }
    progress(&format!("installing {}", wanted.join(" ")));
    succeed(pip_install(python, uv, dir, &wanted), dir).map(drop)
}

/// The environment at `python` when pytest and pylint both run in it.
fn ready(python: &Path) -> Result<Option<PythonEnv>, ToolError> {
    if !python.exists() {
        return Ok(None);
    }
    let probed = probe::probe(python)?;
    Ok(match (probed.tools.pytest, probed.tools.pylint) {
        (Some(pytest_version), Some(pylint_version)) => Some(PythonEnv {
            python: probed
                .found
                .executable
                .unwrap_or_else(|| python.to_path_buf()),
            source: EnvSource::Declared,
            pytest_version,
            pylint_version,
            layout: probed.found.layout,
        }),
        _ => None,
    })
}

/// `out` when it exited 0; otherwise what failed, building the
/// environment at `dir`.
fn succeed(
    out: Result<ProcessOutput, super::super::process::ProcessError>,
    dir: &Path,
) -> Result<ProcessOutput, ToolError> {
    let out = out.map_err(|source| ToolError::Run {
        command: format!("building {}", dir.display()),
        source,
    })?;
    match out.ending {
        Ending::Exited(0) => Ok(out),
        Ending::TimedOut => Err(MissingTool::DeclaredEnv {
            dir: dir.to_path_buf(),
            command: out.command.clone(),
            problem: format!("did not finish within {}s", out.duration.as_secs()),
        }
        .into()),
        _ => Err(MissingTool::DeclaredEnv {
            dir: dir.to_path_buf(),
            command: out.command.clone(),
            problem: last_line(&out.combined()),
        }
        .into()),
    }
}

/// The folder a declared environment of `project` would be in, for tests.
#[cfg(test)]
fn folder_key(origin: &Path, project: &Project) -> String {
    key(origin, "3.11", project)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_follows_the_declarations_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| std::fs::write(dir.path().join(rel), text).unwrap();
        write(
            "pyproject.toml",
            "[project]\nname = 'x'\ndependencies = ['a']\n",
        );
        write("requirements-dev.txt", "b\n");
        write("calc.py", "x = 1\n");
        let origin = std::path::PathBuf::from("/usr/bin/python3");
        let first = folder_key(&origin, &Project::read(dir.path()));
        // Code changes leave it alone.
        write("calc.py", "x = 2\n");
        assert_eq!(folder_key(&origin, &Project::read(dir.path())), first);
        // A declaration that changes makes another environment.
        write("requirements-dev.txt", "b\nc\n");
        let second = folder_key(&origin, &Project::read(dir.path()));
        assert_ne!(second, first);
        assert_ne!(
            folder_key(Path::new("/opt/python3.12"), &Project::read(dir.path())),
            second
        );
    }
}
