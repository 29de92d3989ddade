//! Whether a project's test suite can run in the environment at hand: a
//! baseline whose pytest run stopped on a usage error, a plugin that is not
//! installed, a module or distribution that is not installed is not "0/0
//! tests" and not a bug for the model to fix — it is something missing
//! from the environment, to be named before any model call.
//!
//! The symptoms come from pytest's output ([`super::pytest_symptoms`]); this
//! module weighs each against the project: a module of the project's own
//! (a file or folder of that name among its Python files), or a near-miss
//! of one of its names or of the standard library's where the project's
//! own code imports it (`import utilz`, `import jsonn`), is a bug in the
//! code and stays the Fixer's; anything else is missing. Facts only: how to
//! get what is missing is said where the error reaches the user.

use std::path::PathBuf;

use super::project::{normalise, Project};
use super::pytest::symptoms::Symptom;
use crate::pipeline::measure::{ImportCheck, TestRun};

/// One thing the environment lacks for the suite to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MissingPiece {
    /// Command-line options no installed plugin provides; `plugin` is the
    /// distribution known to provide them.
    Options {
        options: Vec<String>,
        plugin: Option<String>,
    },
    /// A plugin (`-p`, `addopts`, `pytest_plugins`) that does not import.
    Plugin { plugin: String },
    /// Plugins `required_plugins` names.
    RequiredPlugins { plugins: Vec<String> },
    /// A module that is not installed; `distribution` is the one the
    /// project declares for it (or the module's own name).
    Module {
        module: String,
        distribution: String,
        imported_by: Option<String>,
    },
    /// The project itself is not installed (its metadata is asked for).
    Project { name: String },
    /// Another distribution whose metadata is asked for.
    Distribution { name: String },
    /// pytest stopped with this usage error.
    Usage { line: String },
    /// A module of the project's own that the user's checkout has (`file`,
    /// repo-relative) and the run's worktree lacks: `why` swarm did not lay
    /// it there, `remedy` what the user can do.
    NotInWorktree {
        module: String,
        file: String,
        why: String,
        remedy: String,
    },
}

impl MissingPiece {
    /// What `pip install` takes to get this piece, when that is known.
    pub fn requirement(&self) -> Option<String> {
        match self {
            MissingPiece::Options { plugin, .. } => plugin.clone(),
            MissingPiece::Plugin { plugin } => Some(plugin_distribution(plugin)),
            MissingPiece::RequiredPlugins { plugins } => Some(plugins.join(" ")),
            MissingPiece::Module { distribution, .. } => Some(distribution.clone()),
            MissingPiece::Distribution { name } => Some(name.clone()),
            MissingPiece::Project { .. }
            | MissingPiece::Usage { .. }
            | MissingPiece::NotInWorktree { .. } => None,
        }
    }
}

impl std::fmt::Display for MissingPiece {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MissingPiece::Options {
                options,
                plugin: Some(plugin),
            } => write!(
                f,
                "pytest does not know {} (the plugin {plugin} is not installed)",
                options.join(" ")
            ),
            MissingPiece::Options {
                options,
                plugin: None,
            } => write!(
                f,
                "pytest does not know {} (a plugin the project uses is not installed)",
                options.join(" ")
            ),
            MissingPiece::Plugin { plugin } => {
                write!(f, "the pytest plugin {plugin} is not installed")
            }
            MissingPiece::RequiredPlugins { plugins } => {
                write!(f, "required pytest plugins are not installed: {}", plugins.join(", "))
            }
            MissingPiece::Module {
                module,
                imported_by: Some(by),
                ..
            } => write!(f, "the module {module} (imported by {by}) is not installed"),
            MissingPiece::Module { module, .. } => {
                write!(f, "the module {module} is not installed")
            }
            MissingPiece::Project { name } => write!(
                f,
                "the project itself ({name}) is not installed: its tests ask for its installed metadata"
            ),
            MissingPiece::Distribution { name } => write!(f, "{name} is not installed"),
            MissingPiece::Usage { line } => write!(f, "pytest stopped: {line}"),
            MissingPiece::NotInWorktree {
                module,
                file,
                why,
                remedy,
            } => write!(
                f,
                "the module {module} is importable in your checkout ({file}) but not in swarm's worktree: {why}; {remedy}"
            ),
        }
    }
}

/// The test suite could not run in this environment.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the test suite cannot run with {}: {}", python.display(), list(missing))]
pub struct CannotRun {
    /// What is missing, each once.
    pub missing: Vec<MissingPiece>,
    /// The interpreter the tests ran with.
    pub python: PathBuf,
    /// The command that installs the project with its test dependencies,
    /// as its files declare it (see [`Project::install_command`]).
    pub install: Option<String>,
}

fn list(missing: &[MissingPiece]) -> String {
    missing
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// What the weighing needs to know of the project.
pub struct SuiteContext<'a> {
    pub project: &'a Project,
    /// The project's Python files, relative to the tested folder.
    pub files: &'a [String],
    /// Which of them are tests.
    pub tests: &'a super::TestFiles,
    /// The interpreter the tests ran with.
    pub python: PathBuf,
    /// The standard library's module names, asked for only when needed.
    pub stdlib: &'a dyn Fn() -> Vec<String>,
}

/// What `run` (a baseline) says the environment lacks; `None` when the
/// suite ran, or when what went wrong is the project's code's to fix.
pub fn cannot_run(run: &TestRun, cx: &SuiteContext<'_>) -> Option<CannotRun> {
    weigh(super::pytest_symptoms(run), cx)
}

/// What the import checks (the stand-in for a suite when there are no
/// tests) say the environment lacks: modules the project's files import
/// that are not installed, weighed as [`cannot_run`] weighs them.
pub fn cannot_import(check: &ImportCheck, cx: &SuiteContext<'_>) -> Option<CannotRun> {
    let module = regex::Regex::new(r"ModuleNotFoundError: No module named '([^']+)'")
        .expect("a valid pattern");
    let symptoms = check
        .import_errors
        .iter()
        .filter_map(|(file, problem)| {
            let found = module.captures(problem)?;
            Some(Symptom::MissingModule {
                module: found[1].to_string(),
                imported_by: Some(file.clone()),
                at: file.clone(),
            })
        })
        .collect();
    weigh(symptoms, cx)
}

fn weigh(symptoms: Vec<Symptom>, cx: &SuiteContext<'_>) -> Option<CannotRun> {
    let mut missing: Vec<MissingPiece> = Vec::new();
    let mut stdlib: Option<Vec<String>> = None;
    for symptom in symptoms {
        let piece = match symptom {
            Symptom::UnknownOptions { options } => {
                let plugin = options.iter().find_map(|o| plugin_for_option(o));
                Some(MissingPiece::Options {
                    options,
                    plugin: plugin.map(str::to_string),
                })
            }
            Symptom::PluginNotImported { plugin, module } => {
                (!is_first_party(&module, cx.files)).then_some(MissingPiece::Plugin { plugin })
            }
            Symptom::RequiredPlugins { plugins } => Some(MissingPiece::RequiredPlugins { plugins }),
            Symptom::MissingModule {
                module,
                imported_by,
                ..
            } => {
                let stdlib = stdlib.get_or_insert_with(|| (cx.stdlib)());
                missing_module(&module, imported_by, cx, stdlib)
            }
            Symptom::MissingDistribution { name, .. } => {
                let own = cx
                    .project
                    .name
                    .as_deref()
                    .is_some_and(|n| normalise(n) == normalise(&name));
                Some(if own {
                    MissingPiece::Project { name }
                } else {
                    MissingPiece::Distribution { name }
                })
            }
            Symptom::Usage { line } => Some(MissingPiece::Usage { line }),
        };
        if let Some(piece) = piece {
            if !missing.contains(&piece) {
                missing.push(piece);
            }
        }
    }
    (!missing.is_empty()).then(|| CannotRun {
        missing,
        python: cx.python.clone(),
        install: cx.project.install_command(),
    })
}

/// A missing module, unless the project's code is to blame: a module of
/// the project's own, or a near-miss of one of its names or the standard
/// library's imported by its own (non-test) code, is a bug to fix.
fn missing_module(
    module: &str,
    imported_by: Option<String>,
    cx: &SuiteContext<'_>,
    stdlib: &[String],
) -> Option<MissingPiece> {
    let top = module.split('.').next().unwrap_or(module);
    if is_first_party(top, cx.files) {
        return None;
    }
    let declared = cx.project.declares_module(top);
    let by_source = imported_by.as_deref().is_some_and(|by| {
        let by = by.trim_start_matches("./");
        cx.files
            .iter()
            .any(|f| f == by || by.ends_with(&format!("/{f}")))
            && !cx.tests.contains(by)
    });
    if !declared && by_source && near_miss(top, cx.files, stdlib) {
        return None;
    }
    let distribution = cx
        .project
        .distribution_of(top)
        .map_or_else(|| known_distribution(top).to_string(), str::to_string);
    Some(MissingPiece::Module {
        module: top.to_string(),
        distribution,
        imported_by,
    })
}

/// Whether `name` is a module or package of the project: a Python file of
/// that name, or a folder of that name holding Python files.
fn is_first_party(name: &str, files: &[String]) -> bool {
    let name = name.split('.').next().unwrap_or(name);
    files.iter().any(|f| {
        let mut parts: Vec<&str> = f.split('/').collect();
        let file = parts.pop().unwrap_or_default();
        file.strip_suffix(".py") == Some(name) || parts.contains(&name)
    })
}

/// Whether `name` is one or two edits away from a module name of the
/// project or of the standard library (a typo rather than a dependency).
fn near_miss(name: &str, files: &[String], stdlib: &[String]) -> bool {
    let limit = if name.len() <= 5 { 1 } else { 2 };
    let ours = files.iter().flat_map(|f| {
        f.split('/')
            .map(|p| p.strip_suffix(".py").unwrap_or(p).to_string())
            .collect::<Vec<_>>()
    });
    ours.chain(stdlib.iter().cloned())
        .filter(|candidate| !candidate.starts_with('_'))
        .any(|candidate| candidate != name && edit_distance(name, &candidate) <= limit)
}

/// Levenshtein distance.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = (previous + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            previous = current;
        }
    }
    row[b.len()]
}

/// The distribution known to provide a pytest command-line option.
fn plugin_for_option(option: &str) -> Option<&'static str> {
    const OPTIONS: &[(&str, &str)] = &[
        ("--cov", "pytest-cov"),
        ("--no-cov", "pytest-cov"),
        ("--benchmark", "pytest-benchmark"),
        ("--codspeed", "pytest-codspeed"),
        ("--timeout", "pytest-timeout"),
        ("--numprocesses", "pytest-xdist"),
        ("--dist", "pytest-xdist"),
        ("--maxprocesses", "pytest-xdist"),
        ("-n", "pytest-xdist"),
        ("--reruns", "pytest-rerunfailures"),
        ("--only-rerun", "pytest-rerunfailures"),
        ("--randomly", "pytest-randomly"),
        ("--mypy", "pytest-mypy"),
        ("--flake8", "pytest-flake8"),
        ("--black", "pytest-black"),
        ("--doctest-plus", "pytest-doctestplus"),
        ("--doctest-rst", "pytest-doctestplus"),
        ("--html", "pytest-html"),
        ("--json-report", "pytest-json-report"),
        ("--asyncio-mode", "pytest-asyncio"),
        ("--ds", "pytest-django"),
        ("--dc", "pytest-django"),
        ("--hypothesis", "hypothesis"),
        ("--snapshot-update", "syrupy"),
        ("--mpl", "pytest-mpl"),
        ("--nbval", "nbval"),
        ("--instafail", "pytest-instafail"),
        ("--forked", "pytest-forked"),
        ("--memray", "pytest-memray"),
        ("--disable-socket", "pytest-socket"),
        ("--allow-hosts", "pytest-socket"),
        ("--env", "pytest-env"),
        ("--pylint", "pytest-pylint"),
        ("--isort", "pytest-isort"),
        ("--markdown-docs", "pytest-markdown-docs"),
    ];
    let name = option.split('=').next().unwrap_or(option);
    OPTIONS
        .iter()
        .find(|(known, _)| {
            name == *known || (known.len() > 2 && name.starts_with(&format!("{known}-")))
        })
        .map(|(_, plugin)| *plugin)
}

/// The distribution of a plugin named as a module (`xdist` → `pytest-xdist`).
fn plugin_distribution(plugin: &str) -> String {
    let module = plugin.split('.').next().unwrap_or(plugin);
    match module {
        "xdist" => "pytest-xdist".to_string(),
        "pytest_cov" => "pytest-cov".to_string(),
        other if other.starts_with("pytest_") => other.replace('_', "-"),
        other => known_distribution(other).to_string(),
    }
}

/// The distribution that provides a module whose names differ.
fn known_distribution(module: &str) -> &str {
    const KNOWN: &[(&str, &str)] = &[
        ("yaml", "PyYAML"),
        ("PIL", "Pillow"),
        ("bs4", "beautifulsoup4"),
        ("sklearn", "scikit-learn"),
        ("skimage", "scikit-image"),
        ("cv2", "opencv-python"),
        ("attr", "attrs"),
        ("jwt", "PyJWT"),
        ("dateutil", "python-dateutil"),
        ("dotenv", "python-dotenv"),
        ("git", "GitPython"),
        ("Crypto", "pycryptodome"),
        ("OpenSSL", "pyOpenSSL"),
        ("serial", "pyserial"),
        ("zmq", "pyzmq"),
        ("magic", "python-magic"),
    ];
    KNOWN
        .iter()
        .find(|(m, _)| *m == module)
        .map_or(module, |(_, dist)| dist)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::measure::{TestCase, TestOutcome};

    fn collection_error(id: &str, importer: &str, module: &str) -> TestCase {
        TestCase {
            id: id.into(),
            outcome: TestOutcome::Error,
            message: Some("collection failure".into()),
            details: Some(format!(
                "{importer}:1: in <module>\n    import {module}\nE   ModuleNotFoundError: No module named '{module}'"
            )),
        }
    }

    fn weigh(run: &TestRun, project: &Project, files: &[&str]) -> Option<CannotRun> {
        let files: Vec<String> = files.iter().map(|f| f.to_string()).collect();
        let stdlib = || vec!["json".to_string(), "os".to_string(), "typing".to_string()];
        cannot_run(
            run,
            &SuiteContext {
                project,
                files: &files,
                tests: &super::super::TestFiles::default(),
                python: PathBuf::from("/venv/bin/python"),
                stdlib: &stdlib,
            },
        )
    }

    fn run_with(cases: Vec<TestCase>) -> TestRun {
        TestRun {
            cases,
            exit_code: Some(2),
            ..TestRun::default()
        }
    }

    #[test]
    fn a_plugin_named_by_addopts_is_missing_with_its_distribution() {
        let run = TestRun {
            exit_code: Some(4),
            output:
                "python -m pytest: error: unrecognized arguments: --cov=calc --cov-report=term\n"
                    .into(),
            ..TestRun::default()
        };
        let found = weigh(&run, &Project::default(), &["calc.py"]).expect("cannot run");
        assert_eq!(
            found.missing,
            vec![MissingPiece::Options {
                options: vec!["--cov=calc".into(), "--cov-report=term".into()],
                plugin: Some("pytest-cov".into())
            }]
        );
        assert_eq!(
            found.to_string(),
            "the test suite cannot run with /venv/bin/python: pytest does not know --cov=calc \
             --cov-report=term (the plugin pytest-cov is not installed)"
        );
    }

    #[test]
    fn a_missing_dependency_is_missing_but_a_bad_import_in_the_code_is_a_bug() {
        let project = Project {
            dependencies: ["pyyaml".to_string()].into(),
            ..Project::default()
        };
        let files = ["calc.py", "utils.py", "test.py"];
        // Declared, imported by the code: missing.
        let run = run_with(vec![collection_error("test.py", "calc.py", "yaml")]);
        let found = weigh(&run, &project, &files).expect("cannot run");
        assert_eq!(found.missing[0].requirement().as_deref(), Some("pyyaml"));
        // Undeclared, imported by a test: missing (a test is not ours to change).
        let run = run_with(vec![collection_error("test.py", "test.py", "numpy")]);
        assert!(weigh(&run, &project, &files).is_some());
        // A typo of the project's module or the standard library's in the
        // project's code: a bug for the Fixer.
        for typo in ["utilz", "jsonn"] {
            let run = run_with(vec![collection_error("test.py", "calc.py", typo)]);
            assert_eq!(weigh(&run, &project, &files), None, "{typo}");
        }
        // A submodule of the project's own package that is not there: a bug.
        let run = run_with(vec![collection_error("test.py", "calc.py", "calc.missing")]);
        assert_eq!(weigh(&run, &project, &files), None);
    }

    #[test]
    fn the_project_s_own_metadata_asks_for_its_install() {
        let project = Project {
            name: Some("Calc_Tools".into()),
            installable: true,
            ..Project::default()
        };
        let run = run_with(vec![TestCase {
            id: "tests/test_v.py::test_version".into(),
            outcome: TestOutcome::Failed,
            message: Some("importlib.metadata.PackageNotFoundError: No package metadata was found for calc-tools".into()),
            details: None,
        }]);
        let found = weigh(&run, &project, &["src/calc_tools/__init__.py"]).expect("cannot run");
        assert_eq!(
            found.missing,
            vec![MissingPiece::Project {
                name: "calc-tools".into()
            }]
        );
        assert_eq!(found.install.as_deref(), Some("pip install -e ."));
    }

    #[test]
    fn options_map_to_the_plugins_that_provide_them() {
        assert_eq!(plugin_for_option("--cov-report=term"), Some("pytest-cov"));
        assert_eq!(plugin_for_option("-n"), Some("pytest-xdist"));
        assert_eq!(
            plugin_for_option("--benchmark-skip"),
            Some("pytest-benchmark")
        );
        assert_eq!(plugin_for_option("--nope"), None);
        assert_eq!(plugin_distribution("xdist"), "pytest-xdist");
        assert_eq!(plugin_distribution("pytest_mock"), "pytest-mock");
        assert_eq!(edit_distance("jsonn", "json"), 1);
    }
}
