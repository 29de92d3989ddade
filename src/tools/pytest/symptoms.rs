//! What a pytest run's output says was missing for the suite to run: the
//! facts, read from pytest's own words, with no judgement of whose fault
//! they are (the Judge decides that, see `stage::judge::suite`).
//!
//! Read from the console output (usage errors, plugins that would not
//! import, required plugins, a `conftest.py` that would not import) and
//! from the cases that did not pass (collection errors and failures whose
//! traceback ends in `ModuleNotFoundError` or `PackageNotFoundError`).

use regex::Regex;

use crate::pipeline::measure::{TestOutcome, TestRun};

/// One thing pytest's output says was missing, or went wrong before any
/// test could run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Symptom {
    /// pytest does not know these command-line options (usage error): a
    /// plugin that would add them is not installed.
    UnknownOptions {
        /// `--cov=calc`, `-n`, as pytest named them.
        options: Vec<String>,
    },
    /// A plugin named with `-p`, in `addopts` or `pytest_plugins`, would
    /// not import.
    PluginNotImported {
        /// The plugin as named (`xdist`).
        plugin: String,
        /// The module that was not found (`xdist`).
        module: String,
    },
    /// `required_plugins` names plugins that are not installed.
    RequiredPlugins {
        /// As pytest lists them: `pytest-cov>=4`.
        plugins: Vec<String>,
    },
    /// An import found no module (`ModuleNotFoundError`).
    MissingModule {
        /// The dotted name as the error gives it.
        module: String,
        /// The file whose code made the import (relative to the rootdir
        /// when pytest shows it so), when the traceback shows it.
        imported_by: Option<String>,
        /// Where: the case id, or `conftest.py` loading.
        at: String,
    },
    /// Installed metadata of a distribution was asked for and is not
    /// there (`importlib.metadata.PackageNotFoundError`,
    /// `pkg_resources.DistributionNotFound`): it is not installed.
    MissingDistribution {
        /// The distribution's name as asked for.
        name: String,
        /// The case id, or `conftest.py` loading.
        at: String,
    },
    /// Another usage error: pytest stopped on its command line or
    /// configuration before running anything.
    Usage {
        /// pytest's error line.
        line: String,
    },
}

/// pytest's exit code for a usage error.
const USAGE_ERROR: i32 = 4;

/// Every symptom in `run`, each once, in the order found.
pub fn symptoms(run: &TestRun) -> Vec<Symptom> {
    let mut found = Vec::new();
    let mut add = |symptom: Symptom| {
        if !found.contains(&symptom) {
            found.push(symptom);
        }
    };
    for symptom in console_symptoms(&run.output, run.exit_code == Some(USAGE_ERROR)) {
        add(symptom);
    }
    for case in &run.cases {
        if !matches!(case.outcome, TestOutcome::Failed | TestOutcome::Error) {
            continue;
        }
        let text = format!(
            "{}\n{}",
            case.message.as_deref().unwrap_or_default(),
            case.details.as_deref().unwrap_or_default()
        );
        for symptom in traceback_symptoms(&text, &case.id) {
            add(symptom);
        }
    }
    found
}

/// What the console output says: usage errors and start-up failures.
fn console_symptoms(output: &str, usage_error: bool) -> Vec<Symptom> {
    let mut found = Vec::new();
    let unrecognized = Regex::new(r"error: unrecognized arguments: (.+)").expect("a valid pattern");
    let plugin = Regex::new(r#"Error importing plugin "([^"]+)": No module named '([^']+)'"#)
        .expect("a valid pattern");
    let required = Regex::new(r"Missing required plugins: (.+)").expect("a valid pattern");
    for line in output.lines() {
        if let Some(c) = unrecognized.captures(line) {
            found.push(Symptom::UnknownOptions {
                options: c[1].split_whitespace().map(str::to_string).collect(),
            });
        } else if let Some(c) = plugin.captures(line) {
            found.push(Symptom::PluginNotImported {
                plugin: c[1].to_string(),
                module: c[2].to_string(),
            });
        } else if let Some(c) = required.captures(line) {
            found.push(Symptom::RequiredPlugins {
                plugins: c[1].split(',').map(|p| p.trim().to_string()).collect(),
            });
        }
    }
    if let Some(start) = output.find("ImportError while loading conftest") {
        let rest = &output[start..];
        let end = rest.find("\n\n").unwrap_or(rest.len());
        found.extend(traceback_symptoms(&rest[..end], "conftest.py"));
    }
    if usage_error && found.is_empty() {
        let usage = output
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("ERROR:") && !l.starts_with("ERROR: usage:"))
            .or_else(|| {
                output
                    .lines()
                    .map(str::trim)
                    .find(|l| l.contains(": error: "))
            });
        if let Some(line) = usage {
            found.push(Symptom::Usage {
                line: line.to_string(),
            });
        }
    }
    found
}

/// What a traceback (a case's, or a conftest's) ends in.
fn traceback_symptoms(text: &str, at: &str) -> Vec<Symptom> {
    let mut found = Vec::new();
    let module =
        Regex::new(r"ModuleNotFoundError: No module named '([^']+)'").expect("a valid pattern");
    let frame = Regex::new(r"^\s*(\S+\.py):\d+: in ").expect("a valid pattern");
    let dist = Regex::new(
        r"PackageNotFoundError: (?:No package metadata was found for )?([A-Za-z0-9][A-Za-z0-9_.\-]*)",
    )
    .expect("a valid pattern");
    let dist_pkg =
        Regex::new(r"The '([A-Za-z0-9][A-Za-z0-9_.\-]*)[^']*' distribution was not found")
            .expect("a valid pattern");
    let mut last_frame: Option<String> = None;
    for line in text.lines() {
        if let Some(c) = frame.captures(line) {
            last_frame = Some(c[1].to_string());
        }
        if let Some(c) = module.captures(line) {
            found.push(Symptom::MissingModule {
                module: c[1].to_string(),
                imported_by: last_frame.clone(),
                at: at.to_string(),
            });
        } else if let Some(c) = dist.captures(line).or_else(|| dist_pkg.captures(line)) {
            found.push(Symptom::MissingDistribution {
                name: c[1].to_string(),
                at: at.to_string(),
            });
        }
    }
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::measure::TestCase;

    fn run(exit: i32, output: &str, cases: Vec<TestCase>) -> TestRun {
        TestRun {
            cases,
            exit_code: Some(exit),
            output: output.to_string(),
            ..TestRun::default()
        }
    }

    fn error(id: &str, details: &str) -> TestCase {
        TestCase {
            id: id.to_string(),
            outcome: TestOutcome::Error,
            message: Some("collection failure".to_string()),
            details: Some(details.to_string()),
        }
    }

    #[test]
    fn usage_errors_name_what_pytest_did_not_know() {
        let out = "ERROR: usage: python -m pytest [options] [file_or_dir] [file_or_dir] [...]\n\
                   python -m pytest: error: unrecognized arguments: --cov=calc --cov-report=term\n  \
                   inifile: /w/pyproject.toml\n  rootdir: /w\n";
        assert_eq!(
            symptoms(&run(4, out, vec![])),
            vec![Symptom::UnknownOptions {
                options: vec!["--cov=calc".into(), "--cov-report=term".into()]
            }]
        );
        let out = "ERROR: Error importing plugin \"xdist\": No module named 'xdist'\n";
        assert_eq!(
            symptoms(&run(4, out, vec![])),
            vec![Symptom::PluginNotImported {
                plugin: "xdist".into(),
                module: "xdist".into()
            }]
        );
        let out = "ERROR: Missing required plugins: pytest-cov>=4, pytest-mock\n";
        assert_eq!(
            symptoms(&run(4, out, vec![])),
            vec![Symptom::RequiredPlugins {
                plugins: vec!["pytest-cov>=4".into(), "pytest-mock".into()]
            }]
        );
        let out = "ERROR: usage: python -m pytest [options]\npython -m pytest: error: argument --timeout: invalid float value: 'x'\n";
        assert_eq!(
            symptoms(&run(4, out, vec![])),
            vec![Symptom::Usage {
                line: "python -m pytest: error: argument --timeout: invalid float value: 'x'"
                    .into()
            }]
        );
    }

    #[test]
    fn a_conftest_that_does_not_import_names_the_module_or_nothing() {
        let out = "ImportError while loading conftest '/w/conftest.py'.\nconftest.py:1: in <module>\n    \
                   import yaml\nE   ModuleNotFoundError: No module named 'yaml'\n";
        assert_eq!(
            symptoms(&run(4, out, vec![])),
            vec![Symptom::MissingModule {
                module: "yaml".into(),
                imported_by: Some("conftest.py".into()),
                at: "conftest.py".into()
            }]
        );
        // A syntax error in the project's code is no missing piece.
        let out = "ImportError while loading conftest '/w/conftest.py'.\nconftest.py:1: in <module>\n    \
                   import calc\nE     File \"/w/calc.py\", line 1\nE   SyntaxError: expected ':'\n";
        assert_eq!(symptoms(&run(4, out, vec![])), vec![]);
    }

    #[test]
    fn collection_errors_and_failures_name_missing_modules_and_distributions() {
        let details = "Traceback:\n/usr/lib/python3.11/importlib/__init__.py:126: in import_module\n    \
                       return _bootstrap._gcd_import(name[level:], package, level)\n\
                       tests/test_a.py:1: in <module>\n    from calc import add\ncalc.py:1: in <module>\n    \
                       import yaml\nE   ModuleNotFoundError: No module named 'yaml'";
        let version = TestCase {
            id: "tests/test_v.py::test_v".into(),
            outcome: TestOutcome::Failed,
            message: Some(
                "importlib.metadata.PackageNotFoundError: No package metadata was found for calc"
                    .into(),
            ),
            details: None,
        };
        let found = symptoms(&run(
            2,
            "",
            vec![error("tests/test_a.py", details), version],
        ));
        assert_eq!(
            found,
            vec![
                Symptom::MissingModule {
                    module: "yaml".into(),
                    imported_by: Some("calc.py".into()),
                    at: "tests/test_a.py".into()
                },
                Symptom::MissingDistribution {
                    name: "calc".into(),
                    at: "tests/test_v.py::test_v".into()
                }
            ]
        );
        // A plain failure says nothing is missing.
        let plain = TestCase {
            id: "t.py::test_x".into(),
            outcome: TestOutcome::Failed,
            message: Some("assert 1 == 2".into()),
            details: None,
        };
        assert!(symptoms(&run(1, "", vec![plain])).is_empty());
    }
}
