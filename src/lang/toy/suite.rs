//! The toy language's suite: its tests and its linter run in-process over
//! the files in the worktree (no process is spawned, no sandbox needed).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{assignment, expectation, Toy};
use crate::cancel::Cancel;
use crate::lang::suite::{FoundSuite, Suite, SuiteSetup};
use crate::lang::Language;
use crate::pipeline::{LintKind, LintMessage, LintReport, TestCase, TestOutcome, TestRun};
use crate::tools::{KnownContent, SandboxReport, TestLimits, ToolError};

/// The toy suite, before the run's worktree exists.
#[derive(Debug)]
pub struct Found;

impl FoundSuite for Found {
    fn language(&self) -> &'static dyn Language {
        &Toy
    }

    fn prepare(self: Box<Self>, _setup: &SuiteSetup<'_>) -> Result<Box<dyn Suite>, ToolError> {
        Ok(Box::new(ToySuite))
    }
}

/// `toy-test` and `toy-lint`.
pub struct ToySuite;

/// The `.toy` files under `root` (target-relative, sorted), outside hidden
/// folders.
fn toy_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if path.is_dir() && !hidden {
            toy_files(root, &path, out);
        } else if let Ok(rel) = path.strip_prefix(root) {
            let rel = rel.to_string_lossy().replace('\\', "/");
            if Toy.is_source(&rel) {
                out.push(rel);
            }
        }
    }
    out.sort();
}

impl Suite for ToySuite {
    fn language(&self) -> &'static dyn Language {
        &Toy
    }

    fn runner(&self) -> &str {
        Toy.test_runner()
    }

    fn linter(&self) -> &str {
        Toy.linter()
    }

    /// Every expectation of every test file, against the values the
    /// sources assign.
    fn test(&self, root: &Path, _: TestLimits, _: &Cancel) -> Result<TestRun, ToolError> {
        let started = Instant::now();
        let mut files = Vec::new();
        toy_files(root, root, &mut files);
        let read = |f: &String| std::fs::read_to_string(root.join(f)).unwrap_or_default();
        let mut values = BTreeMap::new();
        for file in files.iter().filter(|f| !Toy.is_test(f)) {
            for (i, line) in read(file).lines().enumerate() {
                if let Some((name, value)) = assignment(line) {
                    values.insert(name.to_string(), (value, format!("{file}:{}", i + 1)));
                }
            }
        }
        let mut cases = Vec::new();
        for file in files.iter().filter(|f| Toy.is_test(f)) {
            for line in read(file).lines() {
                let Some((case, name, expected)) = expectation(line) else {
                    continue;
                };
                let (outcome, message) = match values.get(name) {
                    Some((value, _)) if *value == expected => (TestOutcome::Passed, None),
                    Some((value, at)) => (
                        TestOutcome::Failed,
                        Some(format!("{name} is {value} ({at}), expected {expected}")),
                    ),
                    None => (TestOutcome::Error, Some(format!("{name} is not defined"))),
                };
                cases.push(TestCase {
                    id: format!("{file}::{case}"),
                    outcome,
                    message,
                    details: None,
                });
            }
        }
        let failed = cases.iter().filter(|c| c.outcome != TestOutcome::Passed);
        let output: Vec<String> = failed.clone().filter_map(|c| c.message.clone()).collect();
        let exit_code = match (cases.is_empty(), failed.count()) {
            (true, _) => 5,
            (false, 0) => 0,
            _ => 1,
        };
        Ok(TestRun {
            no_tests: cases.is_empty(),
            cases,
            exit_code: Some(exit_code),
            timed_out: false,
            command: "toy-test".into(),
            output: output.join("\n"),
            duration: started.elapsed(),
        })
    }

    /// A warning for every `TODO` left in a source; two points off ten
    /// for each.
    fn lint(
        &self,
        root: &Path,
        files: &[String],
        _: Duration,
        _: Option<&KnownContent>,
        _: &Cancel,
    ) -> Result<LintReport, ToolError> {
        let mut messages = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(root.join(file)).unwrap_or_default();
            for (i, line) in text.lines().enumerate() {
                if line.contains("TODO") {
                    messages.push(LintMessage {
                        path: file.clone(),
                        line: i as u32 + 1,
                        column: 0,
                        kind: LintKind::Warning,
                        symbol: "todo-left".into(),
                        message_id: "T0001".into(),
                        message: "a TODO is left in the code".into(),
                    });
                }
            }
        }
        let score = (!files.is_empty()).then(|| (10.0 - 2.0 * messages.len() as f64).max(0.0));
        Ok(LintReport {
            score,
            output: format!("toy-lint: {} message(s)", messages.len()),
            messages,
            command: "toy-lint".into(),
            linted: files.len(),
            ..LintReport::default()
        })
    }

    fn sandbox_report(&self) -> Option<SandboxReport> {
        None
    }
}
