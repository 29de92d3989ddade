//! What pyenv's shim would start, read from pyenv's own files.
//!
//! `python3` on `PATH` is often pyenv's shim: a bash script that runs
//! `pyenv exec`, which runs several more scripts to pick a version (0.1 to
//! 0.2 s before Python even starts). The interpreter probe starts Python
//! once per run whose memo misses; tools then run the real executable. When
//! pyenv's files name exactly one installed version, the probe starts that
//! version's program directly, as `pyenv exec` would:
//!
//! - the version is `PYENV_VERSION`, else the nearest `.python-version`
//!   (from `PYENV_DIR`, then from the current folder), else
//!   `$PYENV_ROOT/version` (the shim's own `PYENV_ROOT` wins over the
//!   environment's, as in pyenv);
//! - it is one plain name (not `system`, not a list) whose
//!   `versions/<name>/bin/<program>` exists and is executable;
//! - no hook could change the answer: the only `exec`, `which` and
//!   `version-name` hooks in pyenv's hook folders are pyenv's pip rehash and
//!   pyenv-virtualenv's, which act only on `pip` or on a program the version
//!   lacks.
//!
//! Anything else (a prefix pyenv would resolve to its latest release, a
//! missing version, unknown hooks) runs the shim, which is always right.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Hooks known to leave `pyenv exec <program> -c …` of an installed
/// program alone, by hook kind and file name.
const HARMLESS_HOOKS: &[(&str, &str)] = &[
    ("exec", "pip-rehash.bash"),
    ("which", "conda.bash"),
    ("which", "python-config.bash"),
    ("which", "system-site-packages.bash"),
];

/// The hook kinds that take part in `pyenv exec`.
const EXEC_HOOK_KINDS: &[&str] = &["exec", "which", "version-name", "version-origin"];

/// Whether the script's first bytes are pyenv's shim.
pub(super) fn is_shim(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    // pyenv's shim always sets its root; a script that only mentions
    // pyenv (in a message, a comment) is another launcher.
    text.starts_with("#!")
        && text.contains("pyenv")
        && text.contains("exec")
        && text
            .lines()
            .any(|line| line.trim().starts_with("export PYENV_ROOT="))
}

/// What decides the version pyenv's shim picks, as read from its files.
pub(super) struct Selection {
    /// The shim's own `PYENV_ROOT`, else the environment's, else `~/.pyenv`.
    pub root: Option<PathBuf>,
    /// The nearest `.python-version`'s content.
    pub local: Option<Vec<u8>>,
    /// `$PYENV_ROOT/version`'s content.
    pub global: Option<Vec<u8>>,
    /// `PYENV_VERSION`, when set and not empty.
    pub pinned: Option<String>,
}

/// What picks the version for the shim whose first bytes are `head`, with
/// the process's `vars` and current folder `cwd`.
pub(super) fn selection(head: &[u8], vars: &[(OsString, OsString)], cwd: &Path) -> Selection {
    let var = |name: &str| {
        vars.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| PathBuf::from(v))
            .filter(|v| !v.as_os_str().is_empty())
    };
    let nearest = |start: &Path| {
        start
            .ancestors()
            .map(|dir| dir.join(".python-version"))
            .find(|file| file.is_file())
    };
    let local = match var("PYENV_DIR") {
        Some(dir) => nearest(&dir).or_else(|| (dir != cwd).then(|| nearest(cwd)).flatten()),
        None => nearest(cwd),
    }
    .and_then(|file| std::fs::read(file).ok());
    let root = shim_root(head)
        .or_else(|| var("PYENV_ROOT"))
        .or_else(|| var("HOME").map(|home| home.join(".pyenv")));
    let global = root
        .as_ref()
        .and_then(|root| std::fs::read(root.join("version")).ok());
    let pinned = var("PYENV_VERSION").map(|v| v.to_string_lossy().into_owned());
    Selection {
        root,
        local,
        global,
        pinned,
    }
}

/// The program pyenv's shim at `python` (first bytes `head`, its
/// [`selection`] `picked`) would start, when its files name it for sure
/// (see the module docs); `None`: run the shim.
pub(super) fn target(
    python: &Path,
    head: &[u8],
    picked: &Selection,
    vars: &[(OsString, OsString)],
) -> Option<PathBuf> {
    if !is_shim(head) {
        return None;
    }
    let program = python.file_name()?;
    let root = picked.root.as_ref()?;
    let chosen = match (&picked.pinned, &picked.local, &picked.global) {
        (Some(pinned), _, _) => pinned.split(':').map(str::to_string).collect(),
        (None, Some(file), _) | (None, None, Some(file)) => versions_in(file),
        (None, None, None) => return None,
    };
    let [version] = chosen.as_slice() else {
        return None;
    };
    let plain = !version.is_empty()
        && version != "system"
        && !version.starts_with('.')
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c));
    if !plain || has_other_hooks(root, head, vars) {
        return None;
    }
    let exe = root
        .join("versions")
        .join(version)
        .join("bin")
        .join(program);
    is_executable(&exe).then_some(exe)
}

/// The versions a version file names: words of its lines, comment lines
/// left out.
fn versions_in(file: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(file)
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('#'))
        .flat_map(str::split_whitespace)
        .map(str::to_string)
        .collect()
}

/// Whether a hook folder pyenv reads holds an `exec`-time hook other than
/// [`HARMLESS_HOOKS`]: `PYENV_HOOK_PATH`, pyenv's install and root
/// `pyenv.d`, the system ones, and every plugin's.
fn has_other_hooks(root: &Path, head: &[u8], vars: &[(OsString, OsString)]) -> bool {
    let mut folders: Vec<PathBuf> = vars
        .iter()
        .filter(|(name, _)| name == "PYENV_HOOK_PATH")
        .flat_map(|(_, value)| std::env::split_paths(value).collect::<Vec<_>>())
        .collect();
    folders.push(root.join("pyenv.d"));
    if let Some(install) = install_dir(head) {
        folders.push(install.join("pyenv.d"));
    }
    for system in [
        "/usr/etc/pyenv.d",
        "/usr/local/etc/pyenv.d",
        "/etc/pyenv.d",
        "/usr/lib/pyenv/hooks",
    ] {
        folders.push(PathBuf::from(system));
    }
    if let Ok(plugins) = std::fs::read_dir(root.join("plugins")) {
        folders.extend(plugins.flatten().map(|p| p.path().join("etc/pyenv.d")));
    }
    folders.iter().any(|folder| {
        EXEC_HOOK_KINDS.iter().any(|kind| {
            let Ok(entries) = std::fs::read_dir(folder.join(kind)) else {
                return false;
            };
            entries.flatten().any(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                name.ends_with(".bash") && !HARMLESS_HOOKS.contains(&(*kind, name.as_str()))
            })
        })
    })
}

/// `PYENV_ROOT` as pyenv's shim sets it (`export PYENV_ROOT="..."`).
fn shim_root(head: &[u8]) -> Option<PathBuf> {
    let text = String::from_utf8_lossy(head);
    text.lines().find_map(|line| {
        let value = line.trim().strip_prefix("export PYENV_ROOT=")?;
        Some(PathBuf::from(value.trim_matches('"').trim_matches('\'')))
    })
}

/// Where pyenv is installed: the folder above the `libexec/pyenv` the shim
/// runs (`exec "<install>/libexec/pyenv" exec …`).
fn install_dir(head: &[u8]) -> Option<PathBuf> {
    let text = String::from_utf8_lossy(head);
    text.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("exec ")?;
        let command = rest.split_whitespace().next()?.trim_matches('"');
        let libexec = Path::new(command).parent()?;
        (libexec.file_name()? == "libexec").then(|| libexec.parent().map(Path::to_path_buf))?
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_files::{vars, write_exe};

    #[test]
    fn the_shim_is_skipped_only_when_its_files_name_one_installed_version() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("pyenv");
        let shim = root.join("shims/python3");
        let head = format!(
            "#!/usr/bin/env bash\nset -e\nexport PYENV_ROOT=\"{}\"\nexec \"{}/libexec/pyenv\" exec \"$program\" \"$@\"\n",
            root.display(),
            root.display()
        );
        write_exe(&shim, &head);
        let head = head.as_bytes();
        for version in ["3.11.7", "3.12.1"] {
            write_exe(
                &root.join(format!("versions/{version}/bin/python3")),
                "\x7fELF",
            );
        }
        // pyenv's own pip hook and pyenv-virtualenv's change nothing here.
        write_exe(&root.join("pyenv.d/exec/pip-rehash.bash"), "");
        write_exe(
            &root.join("plugins/pyenv-virtualenv/etc/pyenv.d/which/conda.bash"),
            "",
        );
        let here = dir.path().join("project/src");
        std::fs::create_dir_all(&here).unwrap();
        let base = vars(&[("HOME", "/nowhere")]);
        let target_for = |python: &Path, head: &[u8], vars: &[(OsString, OsString)], cwd: &Path| {
            target(python, head, &selection(head, vars, cwd), vars)
        };
        let target = |vars: &[(OsString, OsString)], cwd: &Path| target_for(&shim, head, vars, cwd);
        let version = |v: &str| Some(root.join(format!("versions/{v}/bin/python3")));

        // No version file at all: pyenv would run the system's Python.
        assert_eq!(target(&base, &here), None);
        std::fs::write(root.join("version"), "# global\n3.11.7\n").unwrap();
        assert_eq!(target(&base, &here), version("3.11.7"));
        // The nearest .python-version wins, from PYENV_DIR first.
        std::fs::write(dir.path().join("project/.python-version"), "3.12.1\n").unwrap();
        assert_eq!(target(&base, &here), version("3.12.1"));
        let elsewhere = vars(&[("HOME", "/nowhere"), ("PYENV_DIR", "/")]);
        assert_eq!(target(&elsewhere, &here), version("3.12.1"), "then the cwd");
        // PYENV_VERSION wins over both.
        let pinned = vars(&[("HOME", "/nowhere"), ("PYENV_VERSION", "3.11.7")]);
        assert_eq!(target(&pinned, &here), version("3.11.7"));

        // What only pyenv itself can settle runs the shim.
        for unsure in ["3.11.7:3.12.1", "system", "3.11", "3.9.1", "../../bin"] {
            let pinned = vars(&[("HOME", "/nowhere"), ("PYENV_VERSION", unsure)]);
            assert_eq!(target(&pinned, &here), None, "{unsure}");
        }
        std::fs::write(
            dir.path().join("project/.python-version"),
            "3.12.1\n3.11.7\n",
        )
        .unwrap();
        assert_eq!(target(&base, &here), None, "two versions");
        std::fs::remove_file(dir.path().join("project/.python-version")).unwrap();
        assert_eq!(target(&base, &here), version("3.11.7"));
        // A program the version lacks, and a hook pyenv would run.
        let pip = root.join("shims/pip");
        assert_eq!(target_for(&pip, head, &base, &here), None);
        write_exe(&root.join("plugins/other/etc/pyenv.d/exec/wrap.bash"), "");
        assert_eq!(target(&base, &here), None);
        std::fs::remove_dir_all(root.join("plugins/other")).unwrap();
        let hooks = dir.path().join("hooks");
        write_exe(&hooks.join("version-name/pick.bash"), "");
        let hooked = vars(&[
            ("HOME", "/nowhere"),
            ("PYENV_HOOK_PATH", &hooks.to_string_lossy()),
        ]);
        assert_eq!(target(&hooked, &here), None);
        assert_eq!(target(&base, &here), version("3.11.7"));

        // Not pyenv's shim at all.
        let wrapper = b"#!/bin/sh\nexec /opt/python/bin/python3 \"$@\"\n";
        assert_eq!(target_for(&shim, wrapper, &base, &here), None);
    }
}
