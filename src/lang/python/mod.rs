//! Python behind the language boundary: its files ([`files`]), its suite
//! ([`suite`]: pytest and pylint as the Judge asks them), the names of its
//! tools and its prompt wording. The tools themselves run in `tools`
//! (`tools::pytest`, `tools::pylint`, the interpreter's environment);
//! nothing here spawns a process.

use std::path::Path;

use crate::pipeline::{Measurement, TargetDir};
use crate::tools::project::Project;
use crate::tools::suite::{cannot_import, cannot_run, CannotRun, SuiteContext};
use crate::tools::{PythonEnv, TestFiles};

use super::suite::FoundSuite;
use super::Language;

pub mod difference;
pub mod files;
pub mod harness;
pub mod laid;
pub mod suite;

/// Python: `.py` sources, pytest and pylint.
pub struct Python;

impl Language for Python {
    fn name(&self) -> &'static str {
        "Python"
    }

    fn extensions(&self) -> &'static str {
        ".py"
    }

    fn test_runner(&self) -> &'static str {
        "pytest"
    }

    fn linter(&self) -> &'static str {
        "pylint"
    }

    fn fence(&self) -> &'static str {
        "python"
    }

    fn fences(&self) -> &'static [&'static str] {
        &["", "python", "py", "python3", "py3"]
    }

    fn is_source(&self, rel: &str) -> bool {
        rel.ends_with(".py")
    }

    fn sources(&self, tracked: &[String], target: &TargetDir) -> Vec<String> {
        files::sources(tracked, target)
    }

    /// The behaviour check and the Tester: importable modules.
    fn beyond_suite(&self) -> Option<&'static dyn super::beyond::Beyond> {
        Some(&Modules)
    }

    fn names(&self) -> Option<&'static dyn super::names::Names> {
        Some(&Definitions)
    }

    /// pytest and pylint, for every target (see [`suite::Found`]).
    fn find_suites(
        &self,
        _target: &Path,
        _checkout: &Path,
        _files: &[String],
    ) -> Result<Vec<Box<dyn FoundSuite>>, String> {
        Ok(vec![Box::new(suite::Found)])
    }

    fn is_test(&self, rel: &str) -> bool {
        crate::tools::is_test_path(rel)
    }

    fn is_test_harness(&self, rel: &str) -> bool {
        files::is_test_harness_path(rel)
    }

    /// `conftest.py` configures pytest; any other `.py` harness file holds
    /// tests.
    fn configures_runner(&self, rel: &str) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        name == "conftest.py" || !name.ends_with(".py")
    }

    /// pylint's own configuration files.
    fn is_lint_configuration(&self, rel: &str) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        matches!(name, "pylintrc" | ".pylintrc")
    }

    fn module_name(&self, rel: &str) -> String {
        rel.trim_end_matches(".py").replace('/', ".")
    }

    fn test_probes(&self, _: &str, text: &str) -> Vec<swarm_analysis::TestProbe> {
        swarm_analysis::test_probes(text)
    }

    fn check_syntax(&self, _: &str, text: &str) -> Result<(), swarm_analysis::SyntaxIssue> {
        swarm_analysis::check_syntax(text)
    }

    fn dangerous_calls(&self, _: &str, text: &str) -> Vec<swarm_analysis::DangerousCall> {
        swarm_analysis::dangerous_calls(text)
    }

    fn metrics(&self, rel: &str, text: &str) -> swarm_analysis::FileMetrics {
        swarm_analysis::analyze(rel, text)
    }

    /// `conftest.py`, `pytest.ini` and the other whole-file pytest configs.
    fn runner_config_file(&self, rel: &str) -> Option<String> {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        files::PYTEST_CONFIG_FILES
            .contains(&name)
            .then(|| name.to_string())
    }

    /// The pytest sections of `setup.cfg`, `tox.ini` and `pyproject.toml`,
    /// and `pytest11` entry points in any file.
    fn runner_config_change(&self, rel: &str, before: &str, after: &str) -> Option<String> {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        let part = if files::SHARED_CONFIG_FILES.contains(&name) {
            harness::changed_pytest_sections(name, before, after)
        } else {
            None
        };
        part.or_else(|| {
            harness::touches_pytest11(before, after).then(|| "a pytest11 entry point".to_string())
        })
    }

    /// Plugin and hook code, or pytest imports.
    fn runner_code(&self, before: &str, after: &str) -> Option<(&'static str, usize)> {
        harness::new_plugin_form(before, after)
    }

    /// Docstring examples, which pytest runs with `--doctest-modules`.
    fn doc_examples(&self, text: &str) -> Vec<(usize, String)> {
        harness::doctest_examples(text)
    }

    fn package_files(&self) -> &'static [&'static str] {
        &["pyproject.toml", "setup.py", "setup.cfg"]
    }

    /// pytest judges every Python package.
    fn package_runner(
        &self,
        _package: &std::path::Path,
        _root: &std::path::Path,
    ) -> Option<String> {
        Some("pytest".into())
    }

    fn project_files(&self) -> &'static [&'static str] {
        &[
            "pyproject.toml",
            "setup.cfg",
            "setup.py",
            "tox.ini",
            "pytest.ini",
        ]
    }
}

/// The interpreter, pytest and pylint, with their versions.
pub fn tool_versions(env: &PythonEnv) -> Vec<(String, String)> {
    vec![
        ("python".to_string(), env.python.display().to_string()),
        ("pytest".to_string(), env.pytest_version.clone()),
        ("pylint".to_string(), env.pylint_version.clone()),
    ]
}

/// What the behaviour check and the Tester load of Python's files (see
/// [`super::beyond`]).
struct Modules;

impl super::beyond::Beyond for Modules {
    /// An importable module: not a test, conftest, `setup.py` or
    /// `__main__.py` (see [`crate::tools::imports::is_importable_module`]).
    fn is_module(&self, rel: &str) -> bool {
        crate::tools::imports::is_importable_module(rel)
    }
}

/// What Python's modules define; their public names are probed (see
/// `stage::judge::api`), not read from an export list.
struct Definitions;

impl super::names::Names for Definitions {
    /// Its top-level functions and classes without a leading underscore.
    fn top_names(&self, _rel: &str, text: &str) -> std::collections::BTreeSet<String> {
        swarm_analysis::outline(text)
            .top_level()
            .filter(|d| !d.name.starts_with('_'))
            .map(|d| d.name.clone())
            .collect()
    }

    /// `a.b` is `a/b.py` or the package `a/b/__init__.py`; a path with
    /// `/` names no Python module.
    fn files_of(&self, module: &str) -> Vec<String> {
        if module.contains('/') {
            return Vec::new();
        }
        let path = module.replace('.', "/");
        vec![format!("{path}.py"), format!("{path}/__init__.py")]
    }

    /// A top-level `def` or `class` (tree-sitter's outline), or a line
    /// `name = …` / `name: T = …` at column 0.
    fn defines(&self, _rel: &str, text: &str, name: &str, assignment_counts: bool) -> bool {
        let outline = swarm_analysis::outline(text);
        if outline.top_level().any(|d| d.name == name) {
            return true;
        }
        assignment_counts
            && text.lines().any(|line| {
                line.strip_prefix(name).is_some_and(|rest| {
                    let rest = rest.trim_start();
                    (rest.starts_with('=') && !rest.starts_with("=="))
                        || (rest.starts_with(':') && rest.contains('='))
                })
            })
    }
}

/// What the environment lacks when the baseline's pytest run (or, without
/// tests, its import checks) could not run the suite: a plugin, a module,
/// the project itself not installed. `None` when it ran, or when what went
/// wrong is the project's code's to fix. `worktree` bounds the search for
/// the project's declarations, from `root` up.
pub fn suite_cannot_run(
    env: &PythonEnv,
    root: &Path,
    worktree: &Path,
    baseline: &Measurement,
    files: &[String],
    tests: &TestFiles,
) -> Option<CannotRun> {
    let project = Project::find(root, worktree);
    let stdlib = || crate::tools::stdlib_modules(env);
    let weighing = SuiteContext {
        project: &project,
        files,
        tests,
        python: env.python.clone(),
        stdlib: &stdlib,
    };
    match (&baseline.import_check, &baseline.test_run) {
        (Some(check), _) => cannot_import(check, &weighing),
        (None, Some(run)) => cannot_run(run, &weighing),
        (None, None) => None,
    }
}
