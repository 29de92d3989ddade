//! Temporary Python projects, the machine's Python environment, and
//! process liveness checks.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use swarm::tools::{resolve_env_with, EnvSettings, PythonEnv};

/// A temporary folder holding the given files (parents created).
pub fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("swarm-it-")
        .tempdir()
        .expect("create temp dir");
    for (path, text) in files {
        write(dir.path(), path, text);
    }
    dir
}

/// Writes `text` to `root/path`, creating parent folders.
pub fn write(root: &Path, path: &str, text: &str) {
    let full = root.join(path);
    if let Some(parent) = full.parent() {
        std::fs::create_dir_all(parent).expect("create parent dirs");
    }
    std::fs::write(full, text).expect("write file");
}

/// Every file under `root`, relative, sorted.
pub fn list_files(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path.clone());
            }
            let rel = path.strip_prefix(root).expect("under root");
            found.push(rel.to_string_lossy().into_owned());
        }
    }
    found.sort();
    found
}

/// Settings that see only `PATH`: no SWARM_PYTHON, no active venv.
pub fn path_only_settings() -> EnvSettings {
    EnvSettings {
        path: std::env::var_os("PATH"),
        ..EnvSettings::default()
    }
}

/// The machine's python3 with pytest and pylint, resolved once.
pub fn system_env() -> PythonEnv {
    static ENV: OnceLock<PythonEnv> = OnceLock::new();
    ENV.get_or_init(|| {
        let nowhere = tempfile::tempdir().expect("temp dir");
        resolve_env_with(nowhere.path(), false, &|_| {}, &path_only_settings())
            .expect("python3 with pytest and pylint is installed")
    })
    .clone()
}

/// A virtualenv of [`real_python`] at `dir`, without pip (fast, offline);
/// with `system_site`, the machine's packages (pytest, pylint) import in it.
/// Its interpreter.
pub fn make_venv(dir: &Path, system_site: bool) -> PathBuf {
    let mut command = std::process::Command::new(real_python());
    command.args(["-m", "venv", "--without-pip"]);
    if system_site {
        command.arg("--system-site-packages");
    }
    let made = command.arg(dir).status().expect("python -m venv runs");
    assert!(made.success(), "python -m venv {}", dir.display());
    let python = dir.join("bin/python");
    if system_site {
        // When python3 is itself a virtualenv (the checks' own, see
        // .ci/setup), its packages are the machine's: `--system-site-packages`
        // alone would see only the base interpreter's.
        let outer = std::process::Command::new("python3")
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ])
            .output()
            .expect("run python3");
        let site = std::process::Command::new(&python)
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ])
            .output()
            .expect("run the venv's python");
        let site = PathBuf::from(String::from_utf8_lossy(&site.stdout).trim());
        std::fs::write(site.join("_machine.pth"), &outer.stdout).expect("write .pth");
    }
    python
}

/// The real interpreter binary behind `python3` (not a shim).
pub fn real_python() -> PathBuf {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("run python3");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// Whether a process exists and is not a zombie.
pub fn is_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state follows the parenthesised command name.
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next());
            state != Some("Z") && state != Some("X")
        }
        Err(_) => false,
    }
}

/// Waits up to two seconds for a process to be gone.
pub fn wait_gone(pid: i32) -> bool {
    for _ in 0..40 {
        if !is_alive(pid) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

/// Writes an executable shell script.
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// A fully isolating sandbox (default limits) for tools running in `root`.
pub fn sandbox_for(root: &Path) -> swarm::tools::Sandbox {
    swarm::tools::Sandbox::new(
        swarm::tools::SandboxPolicy::for_worktree(root),
        &system_env(),
    )
    .expect("the sandbox can be set up")
}
