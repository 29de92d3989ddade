//! When the environment probe's answer can be taken from the memo (see
//! [`crate::tools::memo`]) instead of starting Python.
//!
//! The key holds what decides which interpreter starts and what it sees:
//! the path swarm found, how it found it, `PATH` and the variables that
//! steer Python and its launchers (`PYTHON*`, `PYENV*`, `VIRTUAL_ENV`,
//! `CONDA*`, `LD_*`, `HOME`, the locale), and for pyenv's shim the
//! version it would pick (the nearest `.python-version`, pyenv's global
//! `version` file). Any other launcher — a script, or a binary that is not
//! the interpreter it starts — is probed every time: only running it can
//! tell what it picks.
//!
//! The witnesses are the files the answer came from: the interpreter and
//! what its links point at, `pyvenv.cfg` where Python looks for one, every
//! `sys.path` folder (a package installed or removed changes its folder)
//! and the `.pth` files in them, the user site.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::probe::Found;
use super::{pyenv, EnvSettings};
use crate::tools::memo::{KeyBuilder, MemoKey};
use crate::tools::{EnvSource, PythonEnv};

/// Environment variables whose names start so are part of the key.
const KEYED_PREFIXES: &[&str] = &["PYTHON", "PYENV", "VIRTUAL_ENV", "CONDA", "LD_", "DYLD_"];
/// Environment variables part of the key by their whole name.
const KEYED_NAMES: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE"];

/// What starts when the found interpreter path is run.
#[derive(Debug, PartialEq, Eq)]
enum Launcher {
    /// A binary: the interpreter itself when its `sys.executable` says so.
    Binary,
    /// pyenv's shim: the version it picks is read from files.
    Pyenv,
    /// Any other script: only running it tells.
    Other,
}

/// The memo key of probing one found interpreter, and what starts when it
/// is run.
pub(super) struct EnvKey {
    pub key: MemoKey,
    launcher: Launcher,
}

impl EnvKey {
    /// Whether the answer for `python` may be remembered: it is the
    /// interpreter itself (`sys.executable` is the same file), or pyenv's
    /// shim.
    pub fn may_remember(&self, python: &Path, env: &PythonEnv) -> bool {
        self.launcher == Launcher::Pyenv
            || matches!(
                (python.canonicalize(), env.python.canonicalize()),
                (Ok(a), Ok(b)) if a == b
            )
    }
}

/// The found interpreter path as read before anything runs, once for both
/// the memo key and what the probe starts: its first bytes, the process's
/// variables and folder, and for pyenv's shim the version it would pick.
pub(super) struct Launch<'a> {
    python: &'a Path,
    /// `None` when the file cannot be read.
    head: Option<Vec<u8>>,
    vars: Vec<(OsString, OsString)>,
    cwd: PathBuf,
    pyenv: Option<pyenv::Selection>,
}

impl<'a> Launch<'a> {
    /// Reads `python` with this process's variables and folder.
    pub fn read(python: &'a Path) -> Self {
        let cwd = std::env::current_dir().unwrap_or_default();
        Self::with(python, std::env::vars_os().collect(), cwd)
    }

    /// Reads `python` with the variables `vars` and the folder `cwd`.
    fn with(python: &'a Path, vars: Vec<(OsString, OsString)>, cwd: PathBuf) -> Self {
        let head = read_head(python);
        let pyenv = head
            .as_deref()
            .filter(|head| pyenv::is_shim(head))
            .map(|head| pyenv::selection(head, &vars, &cwd));
        Self {
            python,
            head,
            vars,
            cwd,
            pyenv,
        }
    }

    /// What to start to probe the interpreter: the version's own program
    /// when it is pyenv's shim and pyenv's files name the version for sure
    /// (see [`pyenv`]), else the found path itself.
    pub fn to_start(&self) -> PathBuf {
        self.head
            .as_deref()
            .zip(self.pyenv.as_ref())
            .and_then(|(head, picked)| pyenv::target(self.python, head, picked, &self.vars))
            .unwrap_or_else(|| self.python.to_path_buf())
    }

    /// The memo key for probing the interpreter (found as `source`), or
    /// `None` when only running it can tell what starts.
    pub fn key(&self, source: EnvSource, settings: &EnvSettings, script: &str) -> Option<EnvKey> {
        let (python, vars, cwd) = (self.python, &self.vars, self.cwd.as_path());
        let launcher = launcher_of(self.head.as_deref()?);
        if launcher == Launcher::Other {
            return None;
        }
        let mut key = KeyBuilder::new("python");
        key.part("script", script)
            .path("python", python)
            .part("source", format!("{source:?}"));
        if let Some(path) = &settings.path {
            key.path("search path", Path::new(path));
        }
        let mut keyed: Vec<&(OsString, OsString)> = vars
            .iter()
            .filter(|(name, _)| {
                let name = name.to_string_lossy();
                KEYED_NAMES.contains(&name.as_ref())
                    || KEYED_PREFIXES.iter().any(|p| name.starts_with(p))
            })
            .collect();
        keyed.sort();
        for (name, value) in keyed {
            key.path(&name.to_string_lossy(), Path::new(value));
        }
        let var = |name: &str| {
            vars.iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| PathBuf::from(v))
        };
        // A relative entry of PYTHONPATH (an empty one is the current folder)
        // reads from where swarm runs.
        if var("PYTHONPATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|entry| !entry.is_absolute()))
        {
            key.path("cwd", cwd);
        }
        if let Some(picked) = &self.pyenv {
            key.part("pyenv local", picked.local.as_deref().unwrap_or_default());
            key.part("pyenv global", picked.global.as_deref().unwrap_or_default());
        }
        Some(EnvKey {
            key: key.finish(),
            launcher,
        })
    }
}

/// The first bytes of the file `python` names (through links).
fn read_head(python: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(python)
        .ok()?
        .take(4096)
        .read_to_end(&mut head)
        .ok()?;
    Some(head)
}

fn launcher_of(head: &[u8]) -> Launcher {
    if !head.starts_with(b"#!") {
        Launcher::Binary
    } else if pyenv::is_shim(head) {
        Launcher::Pyenv
    } else {
        Launcher::Other
    }
}

/// The files and folders the answer came from (see the module docs).
pub(super) fn witnesses(python: &Path, env: &PythonEnv, found: &Found) -> Vec<PathBuf> {
    let mut paths = vec![python.to_path_buf(), env.python.clone()];
    for exe in [python, env.python.as_path()] {
        for dir in exe.ancestors().skip(1).take(2) {
            paths.push(dir.join("pyvenv.cfg"));
        }
    }
    let layout = &env.layout;
    paths.extend(layout.prefixes.iter().map(|p| p.join("pyvenv.cfg")));
    for entry in &layout.sys_path {
        paths.push(entry.clone());
        if let Ok(dir) = std::fs::read_dir(entry) {
            paths.extend(
                dir.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "pth")),
            );
        }
    }
    paths.extend(layout.user_base.iter().cloned());
    paths.extend(found.user_site.iter().cloned());
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_files::{vars, write_exe};

    #[test]
    fn the_key_follows_what_picks_the_interpreter() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("usr/bin/python3");
        write_exe(&binary, "\x7fELF...");
        let settings = EnvSettings::default();
        let key = |python: &Path, vars: &[(OsString, OsString)], cwd: &Path| {
            Launch::with(python, vars.to_vec(), cwd.to_path_buf())
                .key(EnvSource::SystemPython, &settings, "s")
                .map(|k| k.key)
        };
        let here = dir.path().join("a");
        let there = dir.path().join("b");
        let base = vars(&[("HOME", "/home/u"), ("TERM", "xterm")]);
        let k = key(&binary, &base, &here).unwrap();
        // Where swarm runs and unrelated variables do not matter...
        assert_eq!(
            key(&binary, &vars(&[("HOME", "/home/u")]), &there),
            Some(k.clone())
        );
        // ...Python's variables and a relative PYTHONPATH's folder do.
        let with_path = vars(&[("HOME", "/home/u"), ("PYTHONPATH", "src")]);
        assert_ne!(key(&binary, &with_path, &here), Some(k.clone()));
        assert_ne!(
            key(&binary, &with_path, &here),
            key(&binary, &with_path, &there)
        );
        assert_ne!(key(&binary, &vars(&[("HOME", "/home/v")]), &here), Some(k));

        // pyenv's shim: the version it would pick is part of the key.
        let root = dir.path().join("pyenv");
        let shim = root.join("shims/python3");
        write_exe(
            &shim,
            &format!(
                "#!/usr/bin/env bash\nset -e\nexport PYENV_ROOT=\"{}\"\nexec \"{}/libexec/pyenv\" exec \"$program\" \"$@\"\n",
                root.display(),
                root.display()
            ),
        );
        std::fs::write(root.join("version"), "3.11.7\n").unwrap();
        std::fs::create_dir_all(&here).unwrap();
        let global = key(&shim, &base, &here).unwrap();
        assert_eq!(key(&shim, &base, &there), Some(global.clone()));
        std::fs::write(here.join(".python-version"), "3.12.1\n").unwrap();
        let local = key(&shim, &base, &here).unwrap();
        assert_ne!(local, global);
        assert_eq!(key(&shim, &base, &there), Some(global.clone()));
        std::fs::write(root.join("version"), "3.13.0\n").unwrap();
        assert_ne!(key(&shim, &base, &there), Some(global));
        let pinned = vars(&[("HOME", "/home/u"), ("PYENV_VERSION", "3.10.2")]);
        assert_ne!(key(&shim, &pinned, &here), Some(local));

        // Any other launcher script is run every time.
        let wrapper = dir.path().join("bin/python3");
        write_exe(&wrapper, "#!/bin/sh\nexec /opt/python/bin/python3 \"$@\"\n");
        assert_eq!(key(&wrapper, &base, &here), None);
        assert_eq!(key(&dir.path().join("missing"), &base, &here), None);
    }
}
