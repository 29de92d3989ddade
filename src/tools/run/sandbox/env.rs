//! The environment of a sandboxed tool: an allow-list, not a deny-list.
//!
//! Protects against: API keys, cloud credentials, database passwords, git's
//! repository-selecting variables, `PYTEST_ADDOPTS`/`PYTEST_PLUGINS` and
//! anything else in swarm's environment reaching the code under test, and
//! the code under test reading or writing the user's real home through
//! `HOME` (it points into the process's own scratch folder, as do the XDG
//! folders and `TMPDIR`).
//!
//! Does not protect: what the allowed variables say (`PATH` is the user's,
//! with the interpreter's folder first), and files a test opens by absolute
//! path — that is Landlock's job. The user's `PYTHONPATH` is not passed: the
//! Judge measures the repository as committed, configured by its own files
//! (pytest's runs get swarm's own plugin folder, in the cell's scratch, on
//! it instead).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// Variables passed through from swarm's environment unchanged.
const PASSED: &[&str] = &["LANG", "LANGUAGE", "TZ"];
/// Prefixes of variables passed through (the locale categories).
const PASSED_PREFIXES: &[&str] = &["LC_"];
/// `PATH` when swarm has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The folders of one process's scratch space.
#[derive(Clone, Debug)]
pub(super) struct CellDirs {
    pub home: PathBuf,
    pub tmp: PathBuf,
}

impl CellDirs {
    /// `home/` and `tmp/` beneath `cell`.
    pub(super) fn under(cell: &Path) -> Self {
        Self {
            home: cell.join("home"),
            tmp: cell.join("tmp"),
        }
    }
}

/// The passed-through part of `vars`: locale and time zone, and `PATH` with
/// the interpreter's folder first (so `python`/`python3` in a test's
/// subprocess is the same interpreter, also when `python3` on PATH is a
/// shim that needs the real HOME).
pub(super) fn inherited(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    program: &Path,
) -> Vec<(OsString, OsString)> {
    let mut kept = Vec::new();
    let mut path = None;
    for (name, value) in vars {
        let Some(text) = name.to_str() else {
            continue;
        };
        if text == "PATH" {
            path = Some(value);
        } else if PASSED.contains(&text) || PASSED_PREFIXES.iter().any(|p| text.starts_with(p)) {
            kept.push((name, value));
        }
    }
    let path = path.unwrap_or_else(|| OsString::from(DEFAULT_PATH));
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    if let Some(bin) = program.parent().filter(|d| d.is_absolute()) {
        if dirs.first().map(PathBuf::as_path) != Some(bin) {
            dirs.insert(0, bin.to_path_buf());
        }
    }
    let joined = std::env::join_paths(&dirs).unwrap_or(path);
    kept.push((OsString::from("PATH"), joined));
    kept.sort();
    kept
}

/// The whole environment of one sandboxed process: `inherited` plus HOME,
/// the XDG folders and the temp folders in `cell`, then the interpreter's
/// own variables (`runtime`: for Python, `VIRTUAL_ENV` when it is a
/// virtualenv and `PYTHONUSERBASE` when it has a user site, so `pip install
/// --user` packages still import with the scratch HOME; see [`super::Runtime`]).
pub(super) fn for_cell(
    inherited: &[(OsString, OsString)],
    runtime: &[(OsString, OsString)],
    cell: &CellDirs,
) -> Vec<(OsString, OsString)> {
    let mut vars = inherited.to_vec();
    let mut set = |name: &str, value: &OsStr| vars.push((OsString::from(name), value.to_owned()));
    set("HOME", cell.home.as_os_str());
    for (name, sub) in [
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
    ] {
        set(name, cell.home.join(sub).as_os_str());
    }
    for name in ["TMPDIR", "TMP", "TEMP"] {
        set(name, cell.tmp.as_os_str());
    }
    vars.extend(runtime.iter().cloned());
    vars
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::sandbox::Runtime;
    use crate::tools::{EnvSource, PythonEnv, PythonLayout};

    fn env(layout: PythonLayout) -> PythonEnv {
        PythonEnv {
            python: PathBuf::from("/opt/py/bin/python3"),
            source: EnvSource::SystemPython,
            pytest_version: "9.2.0".into(),
            pylint_version: "4.1.4".into(),
            layout,
        }
    }

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn get<'a>(vars: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsStr> {
        vars.iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_os_str())
    }

    #[test]
    fn only_the_allow_list_passes() {
        let parent = vars(&[
            ("PATH", "/usr/bin:/bin"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C.UTF-8"),
            ("TZ", "UTC"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("DB_PASSWORD", "hunter2"),
            ("GIT_DIR", "/elsewhere/.git"),
            ("PYTEST_ADDOPTS", "-p evil"),
            ("PYTEST_PLUGINS", "evil"),
            ("PYTHONPATH", "/elsewhere"),
            ("HOME", "/home/user"),
            ("SSH_AUTH_SOCK", "/run/agent"),
        ]);
        let kept = inherited(parent, &env(PythonLayout::default()).python);
        let names: Vec<&str> = kept.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        assert_eq!(names, ["LANG", "LC_ALL", "PATH", "TZ"]);
        assert_eq!(
            get(&kept, "PATH"),
            Some(OsStr::new("/opt/py/bin:/usr/bin:/bin"))
        );
    }

    #[test]
    fn home_and_temp_point_into_the_cell() {
        let layout = PythonLayout {
            virtual_env: Some("/srv/project/.venv".into()),
            user_base: Some("/home/user/.local".into()),
            ..PythonLayout::default()
        };
        let env = env(layout);
        let kept = inherited(vars(&[("HOME", "/home/user")]), &env.python);
        assert_eq!(
            get(&kept, "PATH"),
            Some(OsStr::new("/opt/py/bin:/usr/local/bin:/usr/bin:/bin"))
        );
        let cell = CellDirs::under(Path::new("/scratch/cell-1"));
        let all = for_cell(&kept, &Runtime::python(&env).env, &cell);
        assert_eq!(get(&all, "HOME"), Some(OsStr::new("/scratch/cell-1/home")));
        assert_eq!(
            get(&all, "XDG_CACHE_HOME"),
            Some(OsStr::new("/scratch/cell-1/home/.cache"))
        );
        assert_eq!(get(&all, "TMPDIR"), Some(OsStr::new("/scratch/cell-1/tmp")));
        assert_eq!(
            get(&all, "VIRTUAL_ENV"),
            Some(OsStr::new("/srv/project/.venv"))
        );
        assert_eq!(
            get(&all, "PYTHONUSERBASE"),
            Some(OsStr::new("/home/user/.local"))
        );
    }
}
