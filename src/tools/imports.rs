//! Compiling and importing a project's modules, the check that stands in for
//! tests when a target has none.
//!
//! One Python process runs `compile()` on every file and prints JSON; then
//! every module that compiled and is not a test (`test_*.py`, `*_test.py`,
//! `conftest.py`, anything under a `tests`/`test` folder), `setup.py` or
//! `__main__.py` is imported in its own subprocess with a timeout, cwd `root`,
//! with its import root (the first ancestor folder without `__init__.py`) and
//! `root` on `sys.path`. A module stuck at import is reported, not waited on.
//! Every process runs under the sandbox, each in a fresh cell, with the
//! import guard of [`super::worktree`]: the project's modules come from the
//! worktree.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::env::last_line;
use super::process::{cap_text, Ending};
use super::worktree::ImportGuard;
use super::{ImportCheck, PythonEnv, Sandbox, ToolError};
use crate::cancel::Cancel;

/// How much of the combined report the check keeps for the log.
pub const IMPORT_OUTPUT_CAP: usize = 16 * 1024;

const COMPILE_SCRIPT: &str = r#"import json, sys
problems = []
for path in sys.argv[1:]:
    try:
        with open(path, "rb") as handle:
            source = handle.read()
        compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as err:
        where = " (line %s)" % err.lineno if err.lineno else ""
        problems.append([path, "%s: %s%s" % (type(err).__name__, err.msg, where)])
    except Exception as err:
        problems.append([path, "%s: %s" % (type(err).__name__, err)])
print(json.dumps(problems))
"#;

const IMPORT_SCRIPT: &str = r#"import importlib, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
importlib.import_module(sys.argv[3])
"#;

pub(super) fn check(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    files: &[String],
    timeout: Duration,
    cancel: &Cancel,
) -> Result<ImportCheck, ToolError> {
    // Paths handed to the child go on its sys.path, relative to its own cwd.
    let root = &std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let mut report = ImportCheck::default();
    if files.is_empty() {
        report.command = format!("{} -c <compile>", env.python.display());
        return Ok(report);
    }
    report.command = format!(
        "{} -c <compile() each file> ({} files); {} -c 'importlib.import_module(name)' per module",
        env.python.display(),
        files.len(),
        env.python.display()
    );
    let mut log = Vec::new();
    report.compile_errors = compile_all(env, sandbox, root, files, timeout, cancel)?;
    for (path, problem) in &report.compile_errors {
        log.push(format!("compile error: {path}: {problem}"));
    }

    let mut imported = 0;
    for file in files {
        if report.compile_errors.iter().any(|(p, _)| p == file) || !is_importable_module(file) {
            continue;
        }
        let Some((import_root, module)) = module_name(root, file) else {
            continue;
        };
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let import = Import {
            root,
            import_root: &import_root,
            module: &module,
        };
        let problem = import_one(env, sandbox, import, timeout, cancel)?;
        imported += 1;
        if let Some(problem) = problem {
            log.push(format!("import error: {file} ({module}): {problem}"));
            report.import_errors.push((file.clone(), problem));
        }
    }
    log.push(format!(
        "{} files compiled, {} with errors; {imported} modules imported, {} with errors",
        files.len(),
        report.compile_errors.len(),
        report.import_errors.len()
    ));
    report.output = cap_text(&log.join("\n"), IMPORT_OUTPUT_CAP);
    Ok(report)
}

/// Compiles every file in one process: (path, problem) for each that does
/// not compile.
fn compile_all(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    files: &[String],
    timeout: Duration,
    cancel: &Cancel,
) -> Result<Vec<(String, String)>, ToolError> {
    let cell = sandbox.cell("compile")?;
    let compile = cell
        .command(&env.python)
        .args(["-c", COMPILE_SCRIPT])
        .args(files)
        .shown_args(4, "files")
        .cwd(root)
        .timeout(timeout.max(Duration::from_secs(30)));
    let out = compile.run(cancel).map_err(|source| ToolError::Run {
        command: compile.command_line(),
        source,
    })?;
    match out.ending {
        Ending::Cancelled => return Err(ToolError::Cancelled),
        Ending::Exited(0) => {}
        _ => {
            return Err(ToolError::Failed {
                command: out.command.clone(),
                message: last_line(&out.combined()),
            })
        }
    }
    serde_json::from_str(out.stdout.trim()).map_err(|source| ToolError::Garbled {
        command: out.command.clone(),
        what: "unexpected output",
        last_line: Some(last_line(&out.combined())),
        source,
    })
}

/// One module to import: its dotted name, the folder its name starts
/// from, and the target's root (both go on `sys.path`).
#[derive(Clone, Copy)]
struct Import<'a> {
    root: &'a Path,
    import_root: &'a Path,
    module: &'a str,
}

/// Imports one module in its own process, within `timeout`: why it failed
/// to, or `None` when it imported.
fn import_one(
    env: &PythonEnv,
    sandbox: &Sandbox,
    import: Import<'_>,
    timeout: Duration,
    cancel: &Cancel,
) -> Result<Option<String>, ToolError> {
    let cell = sandbox.cell("import")?;
    let guard = ImportGuard::write(&cell, sandbox, import.root)?;
    let out = guard
        .apply(cell.command(&env.python))
        .args(["-c", IMPORT_SCRIPT])
        .arg(import.import_root)
        .arg(import.root)
        .arg(import.module)
        .cwd(import.root)
        .timeout(timeout)
        .output_cap(8 * 1024)
        .run(cancel)
        .map_err(|source| ToolError::Run {
            command: format!("import {}", import.module),
            source,
        })?;
    if out.ending != Ending::Cancelled {
        guard.check(&format!("import {}", import.module))?;
    }
    Ok(match out.ending {
        Ending::Exited(0) => None,
        Ending::Cancelled => return Err(ToolError::Cancelled),
        Ending::TimedOut => Some(format!(
            "did not finish importing within {}s",
            timeout.as_secs_f64()
        )),
        Ending::Exited(code) if out.stderr.trim().is_empty() => {
            Some(format!("exited with code {code} while importing"))
        }
        Ending::Exited(_) => Some(last_line(&out.stderr)),
        Ending::Signalled(signal) => Some(format!("killed by signal {signal} while importing")),
    })
}

const TAKEN_SCRIPT: &str = r#"import json, os, pkgutil, sys
root = os.path.realpath(sys.argv[1])
names = set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names)
for found in pkgutil.iter_modules():
    where = os.path.realpath(getattr(found.module_finder, "path", "") or root)
    if where == root or where.startswith(root + os.sep):
        continue
    names.add(found.name)
print(json.dumps(sorted(n for n in names if not n.startswith("_"))))
"#;

/// The top-level module names a new module of the project must not take:
/// the standard library's, the interpreter's built-in modules and every
/// installed package's (anything importable from outside `root`).
pub fn taken_names(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    cancel: &Cancel,
) -> Result<std::collections::BTreeSet<String>, ToolError> {
    let root = &std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let cell = sandbox.cell("module-names")?;
    let command = cell
        .command(&env.python)
        .args(["-c", TAKEN_SCRIPT])
        .arg(root)
        .cwd(cell.dir())
        .timeout(Duration::from_secs(30));
    let out = command.run(cancel).map_err(|source| ToolError::Run {
        command: command.command_line(),
        source,
    })?;
    match out.ending {
        Ending::Cancelled => return Err(ToolError::Cancelled),
        Ending::Exited(0) => {}
        _ => {
            return Err(ToolError::Failed {
                command: out.command.clone(),
                message: last_line(&out.combined()),
            })
        }
    }
    serde_json::from_str(out.stdout.trim()).map_err(|source| ToolError::Garbled {
        command: out.command.clone(),
        what: "unexpected output",
        last_line: Some(last_line(&out.combined())),
        source,
    })
}

/// Whether a file is a module whose import says something about the code:
/// not a test, conftest, `setup.py` or `__main__.py`.
pub fn is_importable_module(path: &str) -> bool {
    let path = Path::new(path);
    if path.extension().and_then(|e| e.to_str()) != Some("py") {
        return false;
    }
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let rel = path.to_string_lossy().replace('\\', "/");
    !super::is_test_path(&rel) && !matches!(name, "setup.py" | "__main__.py")
}

/// The folder to put on `sys.path` and the dotted module name of `file`
/// (relative to `root`). Packages are folders with `__init__.py`; the chain
/// stops at the first folder without one. `None` when the name is not a
/// valid Python identifier path.
pub fn module_name(root: &Path, file: &str) -> Option<(PathBuf, String)> {
    let full = root.join(file);
    let stem = full.file_stem()?.to_str()?.to_string();
    let mut parts = Vec::new();
    if stem != "__init__" {
        parts.push(stem);
    }
    let mut dir = full.parent()?.to_path_buf();
    let mut package_dir = stem_is_init(&full);
    loop {
        let is_package = package_dir || dir.join("__init__.py").exists();
        package_dir = false;
        if !is_package {
            break;
        }
        let name = dir.file_name()?.to_str()?.to_string();
        parts.push(name);
        dir = dir.parent()?.to_path_buf();
    }
    parts.reverse();
    let valid = !parts.is_empty() && parts.iter().all(|p| is_identifier(p));
    valid.then(|| (dir, parts.join(".")))
}

fn stem_is_init(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()) == Some("__init__.py")
}

fn is_identifier(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_files_are_not_imported() {
        assert!(is_importable_module("pkg/core.py"));
        assert!(!is_importable_module("tests/helpers.py"));
        assert!(!is_importable_module("pkg/test_core.py"));
        assert!(!is_importable_module("core_test.py"));
        assert!(!is_importable_module("conftest.py"));
        assert!(!is_importable_module("setup.py"));
        assert!(!is_importable_module("README.md"));
    }

    #[test]
    fn dotted_names_follow_init_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("pkg/sub")).expect("mkdir");
        std::fs::create_dir_all(root.join("scripts")).expect("mkdir");
        for f in ["pkg/__init__.py", "pkg/sub/__init__.py"] {
            std::fs::write(root.join(f), "").expect("write");
        }
        let (import_root, name) = module_name(root, "pkg/sub/mod.py").expect("importable");
        assert_eq!(name, "pkg.sub.mod");
        assert_eq!(import_root, root);
        let (_, name) = module_name(root, "pkg/__init__.py").expect("importable");
        assert_eq!(name, "pkg");
        let (import_root, name) = module_name(root, "scripts/run.py").expect("importable");
        assert_eq!(name, "run");
        assert_eq!(import_root, root.join("scripts"));
        assert_eq!(module_name(root, "scripts/my-tool.py"), None);
    }
}
