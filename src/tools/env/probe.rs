//! Asking an interpreter what it is: its layout (`sys.executable`, its
//! prefixes, `sys.path`, the user site) and which pytest and pylint it
//! holds, in ONE start-up.
//!
//! Each Python start costs a tenth of a second or more (several tenths
//! through a launcher such as pyenv's shim), and importing pytest or pylint
//! to ask `--version` costs as much again. So the probe reads the tools'
//! versions from their installed metadata (`importlib.metadata`) without
//! importing them, and checks that every unconditional requirement of each
//! is installed too. Only when that cannot settle it — no metadata for a
//! module that is there (a vendored copy), a requirement missing, or a
//! Python without `importlib.metadata` — is `python -m <tool> --version`
//! asked, as before, so an odd installation is never taken for a working
//! one.

use std::path::{Path, PathBuf};

use super::{expect_success, run_python};
use crate::tools::process::Ending;
use crate::tools::{PythonLayout, ToolError};

/// One start-up: the layout, then per tool its version, `null` when the
/// module is not there, or `"?"` when only running it can tell.
pub(super) const SCRIPT: &str = r#"import json, os, re, site, sys
user_base = None
if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
    user_base = site.getuserbase()
def tool(name):
    try:
        import importlib.util
        spec = importlib.util.find_spec(name)
        if spec is None:
            return None
        import importlib.metadata as md
        dist = md.distribution(name)
        home = os.path.realpath(str(dist.locate_file("")))
        if os.path.dirname(os.path.dirname(os.path.realpath(spec.origin or ""))) != home:
            return "?"
        for req in dist.requires or []:
            if ";" in req:
                continue
            md.distribution(re.split(r"[\s<>=!~\[(;@]", req.strip(), maxsplit=1)[0])
        return dist.version or "?"
    except Exception:
        return "?"
print(json.dumps({
    "executable": sys.executable,
    "prefixes": sorted({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}),
    "path": [p for p in sys.path if p],
    "user_base": user_base,
    "user_site": site.getusersitepackages() if site.ENABLE_USER_SITE else None,
    "venv": sys.prefix if sys.prefix != sys.base_prefix else None,
    "tools": {"pytest": tool("pytest"), "pylint": tool("pylint")},
}))"#;

/// What the interpreter at a path is and holds.
#[derive(Debug)]
pub(super) struct Probe {
    pub found: Found,
    pub tools: ToolProbe,
}

/// Where the interpreter at a path keeps its files.
#[derive(Debug, Default)]
pub(super) struct Found {
    /// `sys.executable` when it names a file: the real interpreter behind
    /// a launcher.
    pub executable: Option<PathBuf>,
    pub layout: PythonLayout,
    /// The user site-packages folder Python would read if it existed.
    pub user_site: Option<PathBuf>,
}

/// Which tools an interpreter can run, and their versions.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ToolProbe {
    pub pytest: Option<String>,
    pub pylint: Option<String>,
}

impl ToolProbe {
    pub fn missing(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.pytest.is_none() {
            names.push("pytest");
        }
        if self.pylint.is_none() {
            names.push("pylint");
        }
        names
    }
}

/// What the probe said of one tool.
#[derive(Debug, PartialEq, Eq)]
enum Said {
    Version(String),
    Missing,
    /// Only `python -m <tool> --version` can tell.
    Unsure,
}

/// Probes `python` in one start-up; a tool the metadata cannot vouch for
/// is asked `--version` of the real executable (see the module docs).
///
/// An interpreter that starts but cannot tell its layout is asked the
/// versions as found: without the tools it is an interpreter that lacks
/// them (so the caller says how to install them); with them, the layout's
/// error is the answer. `Err` when the interpreter does not start at all.
pub(super) fn probe(python: &Path) -> Result<Probe, ToolError> {
    let out = run_python(python, &["-c", SCRIPT])?;
    let parsed = expect_success(Ok(out)).and_then(|out| {
        parse(&out.stdout).map_err(|source| ToolError::Garbled {
            command: out.command.clone(),
            what: "unexpected output",
            last_line: None,
            source,
        })
    });
    let (found, said) = match parsed {
        Ok(parsed) => parsed,
        Err(layout_error) => {
            let tools = ToolProbe {
                pytest: module_version(python, "pytest")?,
                pylint: module_version(python, "pylint")?,
            };
            if tools.missing().is_empty() {
                return Err(layout_error);
            }
            return Ok(Probe {
                found: Found::default(),
                tools,
            });
        }
    };
    let real = found
        .executable
        .clone()
        .unwrap_or_else(|| python.to_path_buf());
    let settle = |name: &str, said: Said| -> Result<Option<String>, ToolError> {
        match said {
            Said::Version(version) => Ok(Some(version)),
            Said::Missing => Ok(None),
            Said::Unsure => module_version(&real, name),
        }
    };
    let [pytest, pylint] = said;
    Ok(Probe {
        found,
        tools: ToolProbe {
            pytest: settle("pytest", pytest)?,
            pylint: settle("pylint", pylint)?,
        },
    })
}

/// The probe's JSON line: the executable, the layout and what it said of
/// pytest and pylint.
fn parse(stdout: &str) -> Result<(Found, [Said; 2]), serde_json::Error> {
    let value: serde_json::Value = serde_json::from_str(stdout.trim())?;
    let path = |v: &serde_json::Value| v.as_str().filter(|s| !s.is_empty()).map(PathBuf::from);
    let paths = |v: &serde_json::Value| -> Vec<PathBuf> {
        v.as_array()
            .map(|a| a.iter().filter_map(path).collect())
            .unwrap_or_default()
    };
    let said = |name: &str| match value.get("tools").and_then(|t| t.get(name)) {
        Some(serde_json::Value::Null) => Said::Missing,
        Some(serde_json::Value::String(v)) if is_version(v) => Said::Version(v.clone()),
        _ => Said::Unsure,
    };
    let executable = path(&value["executable"]).filter(|p| p.is_absolute() && p.is_file());
    let layout = PythonLayout {
        prefixes: paths(&value["prefixes"]),
        sys_path: paths(&value["path"]),
        user_base: path(&value["user_base"]),
        virtual_env: path(&value["venv"]),
    };
    let found = Found {
        executable,
        layout,
        user_site: path(&value["user_site"]),
    };
    Ok((found, [said("pytest"), said("pylint")]))
}

/// A version as `--version` would print it: starts with a digit.
fn is_version(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_digit())
}

/// `Some(version)` when `python -m <module> --version` succeeds; `Err` when
/// the interpreter itself cannot be started.
fn module_version(python: &Path, module: &str) -> Result<Option<String>, ToolError> {
    let out = run_python(python, &["-m", module, "--version"])?;
    if out.ending != Ending::Exited(0) {
        return Ok(None);
    }
    Ok(parse_version(&out.combined(), module))
}

/// Finds `<module> X.Y.Z` in a `--version` output.
fn parse_version(text: &str, module: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        let first = words.next()?;
        if !first.eq_ignore_ascii_case(module) {
            return None;
        }
        let version = words.next()?.trim_end_matches(',');
        is_version(version).then(|| version.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tool_versions() {
        assert_eq!(
            parse_version("pytest 9.2.0\n", "pytest").as_deref(),
            Some("9.2.0")
        );
        let pylint = "pylint 4.1.4\nastroid 4.3.4\nPython 3.11.7 (main)\n";
        assert_eq!(parse_version(pylint, "pylint").as_deref(), Some("4.1.4"));
        assert_eq!(
            parse_version("pylint 2.17.7,\n", "pylint").as_deref(),
            Some("2.17.7")
        );
        assert_eq!(parse_version("No module named pytest", "pytest"), None);
    }

    #[test]
    fn the_probe_says_version_missing_or_unsure_per_tool() {
        let line = r#"{"executable": "/x", "prefixes": ["/p"], "path": ["/p/lib"], "user_base": null,
            "venv": null, "tools": {"pytest": "9.2.0", "pylint": null}}"#;
        let (Found { layout, .. }, said) = parse(line).unwrap();
        assert_eq!(layout.sys_path, vec![PathBuf::from("/p/lib")]);
        assert_eq!(said, [Said::Version("9.2.0".into()), Said::Missing]);
        let odd = r#"{"tools": {"pytest": "?", "pylint": "dev"}}"#;
        assert_eq!(parse(odd).unwrap().1, [Said::Unsure, Said::Unsure]);
        // An older swarm's layout-only answer leaves both to `--version`.
        assert_eq!(parse("{}").unwrap().1, [Said::Unsure, Said::Unsure]);
        assert!(parse("Traceback").is_err());
    }

    /// The real interpreter: one start-up reads the same versions as
    /// `python -m <tool> --version` prints, and the same layout.
    #[test]
    fn one_start_up_reads_what_the_version_flags_print() {
        let Some(python) = super::super::search_path("python3", std::env::var_os("PATH").as_ref())
        else {
            return;
        };
        let probed = probe(&python).unwrap();
        let real = probed.found.executable.clone().unwrap();
        assert_eq!(
            probed.tools.pytest,
            module_version(&real, "pytest").unwrap()
        );
        assert_eq!(
            probed.tools.pylint,
            module_version(&real, "pylint").unwrap()
        );
        assert!(probed.tools.pytest.is_some(), "the test machine has pytest");
        assert!(probed
            .found
            .layout
            .sys_path
            .iter()
            .any(|p| p.ends_with("site-packages")));
    }

    /// A module the metadata does not describe (a copy of the package
    /// shadowing the installed one, with no metadata of its own) is not
    /// taken on trust: `--version` decides, and a copy that cannot run it
    /// is missing.
    #[test]
    fn a_tool_the_metadata_cannot_vouch_for_is_asked_to_run() {
        let Some(python) = super::super::search_path("python3", std::env::var_os("PATH").as_ref())
        else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let venv = dir.path().join("venv");
        let made = std::process::Command::new(&python)
            .args(["-m", "venv", "--without-pip", "--system-site-packages"])
            .arg(&venv)
            .status()
            .unwrap();
        assert!(made.success());
        let site = std::fs::read_dir(venv.join("lib"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
            .join("site-packages");
        // When python3 is itself a virtualenv (the checks' own), its
        // packages are what "the system's" means here.
        let outer = std::process::Command::new(&python)
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ])
            .output()
            .unwrap();
        std::fs::write(site.join("_outer.pth"), &outer.stdout).unwrap();
        let shadow = site.join("pylint");
        std::fs::create_dir_all(&shadow).unwrap();
        std::fs::write(shadow.join("__init__.py"), "").unwrap();
        std::fs::write(shadow.join("__main__.py"), "raise SystemExit(3)\n").unwrap();
        let probed = probe(&venv.join("bin/python")).unwrap();
        // The system's pylint metadata is visible, but it is not the
        // module this interpreter imports.
        assert_eq!(probed.tools.pylint, None);
        assert!(probed.tools.pytest.is_some(), "the system's pytest is seen");
        assert_eq!(probed.tools.missing(), vec!["pylint"]);
    }
}
