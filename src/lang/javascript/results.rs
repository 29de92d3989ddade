//! The runners' per-test reports read into the pipeline's [`TestCase`]s,
//! exactly as pytest's junit XML is: ids stable across runs and worktrees,
//! the worst outcome kept when an id repeats, messages relative to the
//! project root, tracebacks trimmed.
//!
//! A test's id is its file relative to the project root, `::`, then its
//! names from the outermost `describe` down joined by ` > `:
//! `tests/money.test.ts::parseMoney > reads whole amounts`. A test file
//! that fails as a whole (it does not compile, an import throws) is one
//! [`TestOutcome::Error`] case whose id is the file.
//!
//! vitest's and jest's JSON reporters share one shape (`testResults[]`
//! with `assertionResults[]`); node's built-in runner reports through
//! swarm's own reporter (`swarm_reporter.mjs`), one JSON line per test.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use crate::tools::junit::trim_details;
use crate::tools::{TestCase, TestOutcome};

/// The JSON report of vitest (`--reporter=json`) or jest (`--json`).
#[derive(Debug, Deserialize)]
struct JsonReport {
    #[serde(rename = "testResults", default)]
    test_results: Vec<FileResult>,
}

/// One test file of a JSON report.
#[derive(Debug, Deserialize)]
struct FileResult {
    name: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    message: String,
    #[serde(rename = "assertionResults", default)]
    assertions: Vec<Assertion>,
}

/// One test of a JSON report.
#[derive(Debug, Deserialize)]
struct Assertion {
    #[serde(rename = "ancestorTitles", default)]
    ancestors: Vec<String>,
    title: String,
    status: String,
    #[serde(rename = "failureMessages", default)]
    failures: Vec<String>,
}

/// One line of swarm's node reporter.
#[derive(Debug, Deserialize)]
struct NodeLine {
    file: Option<String>,
    path: Vec<String>,
    outcome: String,
    message: Option<String>,
    details: Option<String>,
}

/// Why a report could not be read.
#[derive(Debug, thiserror::Error)]
#[error("unreadable test report: {0}")]
pub struct ReportError(#[from] serde_json::Error);

/// The spellings of `root` that may appear in reports, longest first,
/// each with a trailing `/`.
fn root_prefixes(root: &Path) -> Vec<String> {
    let mut prefixes = vec![format!("{}/", root.display())];
    if let Ok(canonical) = root.canonicalize() {
        prefixes.push(format!("{}/", canonical.display()));
    }
    prefixes.sort_by_key(|p| std::cmp::Reverse(p.len()));
    prefixes.dedup();
    prefixes
}

/// `text` with every spelling of the root in `prefixes` removed.
fn relativize(text: &str, prefixes: &[String]) -> String {
    prefixes
        .iter()
        .filter(|p| p.len() > 1)
        .fold(text.to_string(), |t, p| t.replace(p.as_str(), ""))
}

/// The id of a test: `file::outer > inner > title` (see the module doc).
pub fn case_id(file: &str, names: &[String]) -> String {
    if names.is_empty() {
        return file.to_string();
    }
    format!("{file}::{}", names.join(" > "))
}

/// `file` relative to `root` (`/`-separated); as given when it is not below it.
fn relative_file(file: &str, root: &Path) -> String {
    let file = file.strip_prefix("file://").unwrap_or(file);
    let prefixes = root_prefixes(root);
    relativize(file, &prefixes).replace('\\', "/")
}

/// Cases in run order, ids unique, the worst outcome kept.
#[derive(Default)]
struct Cases {
    cases: Vec<TestCase>,
    index: HashMap<String, usize>,
}

impl Cases {
    fn add(&mut self, case: TestCase) {
        match self.index.get(&case.id) {
            Some(&at) if rank(case.outcome) > rank(self.cases[at].outcome) => self.cases[at] = case,
            Some(_) => {}
            None => {
                self.index.insert(case.id.clone(), self.cases.len());
                self.cases.push(case);
            }
        }
    }
}

/// Which outcome wins when a test reports twice (as for junit).
fn rank(outcome: TestOutcome) -> u8 {
    match outcome {
        TestOutcome::NotRun => 0,
        TestOutcome::Passed => 1,
        TestOutcome::Skipped => 2,
        TestOutcome::Failed => 3,
        TestOutcome::Error => 4,
    }
}

/// A runner's outcome word as a [`TestOutcome`].
fn outcome_of(status: &str) -> TestOutcome {
    match status {
        "passed" => TestOutcome::Passed,
        "failed" => TestOutcome::Failed,
        "pending" | "skipped" | "todo" | "disabled" => TestOutcome::Skipped,
        _ => TestOutcome::Error,
    }
}

/// The first line of a failure text (the assertion), and the whole text trimmed.
fn message_and_details(text: &str, prefixes: &[String]) -> (Option<String>, Option<String>) {
    let text = relativize(text, prefixes);
    let message = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string());
    let details = Some(trim_details(&text)).filter(|d| !d.is_empty());
    (message, details)
}

/// Reads a vitest or jest JSON report; `root` is the project root the
/// runner ran in.
pub fn parse_json_report(text: &str, root: &Path) -> Result<Vec<TestCase>, ReportError> {
    let report: JsonReport = serde_json::from_str(text)?;
    let prefixes = root_prefixes(root);
    let mut cases = Cases::default();
    for file in report.test_results {
        let rel = relative_file(&file.name, root);
        let any_failed = file.assertions.iter().any(|a| a.status == "failed");
        if file.status == "failed" && !any_failed {
            // The file failed as a whole: it did not load, or a hook threw.
            let (message, details) = message_and_details(&file.message, &prefixes);
            cases.add(TestCase {
                id: rel.clone(),
                outcome: TestOutcome::Error,
                message: message.or_else(|| Some("the test file failed to run".to_string())),
                details,
            });
        }
        for assertion in file.assertions {
            let mut names = assertion.ancestors;
            names.push(assertion.title);
            let outcome = outcome_of(&assertion.status);
            let (message, details) = if outcome == TestOutcome::Failed {
                message_and_details(&assertion.failures.join("\n"), &prefixes)
            } else {
                (None, None)
            };
            cases.add(TestCase {
                id: case_id(&rel, &names),
                outcome,
                message,
                details,
            });
        }
    }
    Ok(cases.cases)
}

/// Reads the lines swarm's node reporter wrote (a line cut short by a kill
/// is skipped). A failure of a whole file (`path` is the file itself) is
/// an error case whose id is the file.
pub fn parse_node_lines(text: &str, root: &Path) -> Vec<TestCase> {
    let prefixes = root_prefixes(root);
    let mut cases = Cases::default();
    for line in text.lines() {
        let Ok(entry) = serde_json::from_str::<NodeLine>(line) else {
            continue;
        };
        let file = entry.file.as_deref().map(|f| relative_file(f, root));
        let mut names: Vec<String> = entry.path;
        let whole_file = file.is_some()
            && names.len() == 1
            && names
                .first()
                .is_some_and(|n| relative_file(n, root) == file.clone().unwrap_or_default());
        let rel = file.unwrap_or_default();
        let mut outcome = outcome_of(&entry.outcome);
        if whole_file {
            names.clear();
            if outcome == TestOutcome::Failed {
                outcome = TestOutcome::Error;
            }
        }
        let text = [entry.message.as_deref(), entry.details.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n");
        let (message, details) = if matches!(outcome, TestOutcome::Failed | TestOutcome::Error) {
            let (_, details) = message_and_details(&text, &prefixes);
            let message = entry
                .message
                .map(|m| relativize(m.lines().next().unwrap_or_default(), &prefixes));
            (message, details)
        } else {
            (None, None)
        };
        cases.add(TestCase {
            id: case_id(&rel, &names),
            outcome,
            message,
            details,
        });
    }
    cases.cases
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "/work/run-1/tree";

    #[test]
    fn vitest_and_jest_reports_give_stable_ids() {
        let report = r#"{"testResults": [
          {"name": "/work/run-1/tree/tests/money.test.ts", "status": "failed", "message": "",
           "assertionResults": [
             {"ancestorTitles": ["parseMoney"], "title": "reads whole amounts", "status": "passed", "failureMessages": []},
             {"ancestorTitles": ["parseMoney"], "title": "reads tenths", "status": "failed",
              "failureMessages": ["AssertionError: expected 1205 to be 1250\n    at /work/run-1/tree/tests/money.test.ts:9:5"]},
             {"ancestorTitles": [], "title": "later", "status": "todo", "failureMessages": []}
           ]},
          {"name": "/work/run-1/tree/tests/broken.test.ts", "status": "failed",
           "message": "SyntaxError: Unexpected token (3:4)\n at /work/run-1/tree/tests/broken.test.ts", "assertionResults": []}
        ]}"#;
        let cases = parse_json_report(report, Path::new(ROOT)).expect("parses");
        let ids: Vec<(&str, TestOutcome)> =
            cases.iter().map(|c| (c.id.as_str(), c.outcome)).collect();
        assert_eq!(
            ids,
            [
                (
                    "tests/money.test.ts::parseMoney > reads whole amounts",
                    TestOutcome::Passed
                ),
                (
                    "tests/money.test.ts::parseMoney > reads tenths",
                    TestOutcome::Failed
                ),
                ("tests/money.test.ts::later", TestOutcome::Skipped),
                ("tests/broken.test.ts", TestOutcome::Error),
            ]
        );
        assert_eq!(
            cases[1].message.as_deref(),
            Some("AssertionError: expected 1205 to be 1250")
        );
        assert!(cases[1]
            .details
            .as_deref()
            .is_some_and(|d| d.contains("at tests/money.test.ts:9:5")));
        assert_eq!(
            cases[3].message.as_deref(),
            Some("SyntaxError: Unexpected token (3:4)")
        );
    }

    #[test]
    fn node_reporter_lines_give_the_same_ids() {
        let lines = concat!(
            r#"{"file":"/work/run-1/tree/test/cart.test.js","path":["subtotal","adds every line"],"outcome":"failed","message":"Expected values to be strictly equal:\n\n150 !== 250\n","details":"AssertionError at file:///work/run-1/tree/test/cart.test.js:22:12"}"#,
            "\n",
            r#"{"file":"/work/run-1/tree/test/cart.test.js","path":["subtotal","is zero"],"outcome":"passed","message":null,"details":null}"#,
            "\n",
            r#"{"file":"/work/run-1/tree/test/bad.test.js","path":["/work/run-1/tree/test/bad.test.js"],"outcome":"failed","message":"Cannot find module","details":null}"#,
            "\n",
            r#"{"file":"/work/run-1/tree/test/cart.test.js","path":["subtotal","adds every"#,
        );
        let cases = parse_node_lines(lines, Path::new(ROOT));
        let ids: Vec<(&str, TestOutcome)> =
            cases.iter().map(|c| (c.id.as_str(), c.outcome)).collect();
        assert_eq!(
            ids,
            [
                (
                    "test/cart.test.js::subtotal > adds every line",
                    TestOutcome::Failed
                ),
                ("test/cart.test.js::subtotal > is zero", TestOutcome::Passed),
                ("test/bad.test.js", TestOutcome::Error),
            ]
        );
        assert_eq!(
            cases[0].message.as_deref(),
            Some("Expected values to be strictly equal:")
        );
        assert!(cases[0]
            .details
            .as_deref()
            .is_some_and(|d| d.contains("test/cart.test.js:22:12") && !d.contains(ROOT)));
    }

    #[test]
    fn a_repeated_id_keeps_the_worst_outcome() {
        let lines = concat!(
            r#"{"file":"/r/a.test.js","path":["t"],"outcome":"passed"}"#,
            "\n",
            r#"{"file":"/r/a.test.js","path":["t"],"outcome":"failed","message":"boom"}"#,
            "\n",
        );
        let cases = parse_node_lines(lines, Path::new("/r"));
        assert_eq!(cases.len(), 1);
        assert_eq!(cases[0].outcome, TestOutcome::Failed);
    }
}
