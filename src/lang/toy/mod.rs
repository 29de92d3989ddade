//! A toy language, registered in test builds only: the proof that a
//! language is one folder and one line in [`crate::lang::LANGUAGES`], for
//! judging too. Its sources (`*.toy`) hold `name = 2 + 3` lines; its test
//! files (`*.test.toy`) hold `case: name == 4` lines, each a test that
//! passes when the sources give `name` that value. Its suite
//! ([`suite::ToySuite`]) runs them in-process, spawning nothing, and its
//! linter flags `TODO` comments. The tests at the end run swarm on a toy
//! repository end to end.

use std::path::Path;

use super::suite::FoundSuite;
use super::Language;
use crate::pipeline::TargetDir;

pub mod suite;

/// The toy language: `.toy` files.
pub struct Toy;

/// A source line: `name = 2 + 3` as the name and its value; `None` for a
/// line that is not one.
pub fn assignment(line: &str) -> Option<(&str, i64)> {
    let (name, expr) = line.split_once('=')?;
    let name = name.trim();
    let named = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    named.then_some(())?;
    Some((name, value(expr)?))
}

/// The value of `2 + 3 - 1`.
fn value(expr: &str) -> Option<i64> {
    let mut total = 0;
    let mut sign = 1;
    for (i, token) in expr.split_whitespace().enumerate() {
        match (i % 2, token) {
            (1, "+") => sign = 1,
            (1, "-") => sign = -1,
            (0, number) => total += sign * number.parse::<i64>().ok()?,
            _ => return None,
        }
    }
    Some(total)
}

/// A test line: `case: name == 4` as the case, the name and the value.
pub fn expectation(line: &str) -> Option<(&str, &str, i64)> {
    let (case, rest) = line.split_once(':')?;
    let (name, expected) = rest.split_once("==")?;
    Some((case.trim(), name.trim(), expected.trim().parse().ok()?))
}

/// Whether a line is blank or a comment.
fn is_blank(line: &str) -> bool {
    let line = line.trim();
    line.is_empty() || line.starts_with('#')
}

impl Language for Toy {
    fn name(&self) -> &'static str {
        "Toy"
    }
    fn extensions(&self) -> &'static str {
        ".toy"
    }
    fn test_runner(&self) -> &'static str {
        "toy-test"
    }
    fn linter(&self) -> &'static str {
        "toy-lint"
    }
    fn fence(&self) -> &'static str {
        "toy"
    }
    fn fences(&self) -> &'static [&'static str] {
        &["toy"]
    }
    fn is_source(&self, rel: &str) -> bool {
        rel.ends_with(".toy")
    }
    fn sources(&self, tracked: &[String], target: &TargetDir) -> Vec<String> {
        let mut files: Vec<String> = tracked
            .iter()
            .filter_map(|p| target.relative(p))
            .filter(|rel| self.is_source(rel))
            .map(str::to_string)
            .collect();
        files.sort();
        files
    }
    fn find_suites(
        &self,
        _target: &Path,
        _checkout: &Path,
        _files: &[String],
    ) -> Result<Vec<Box<dyn FoundSuite>>, String> {
        Ok(vec![Box::new(suite::Found)])
    }
    fn is_test(&self, rel: &str) -> bool {
        rel.ends_with(".test.toy")
    }
    fn is_test_harness(&self, rel: &str) -> bool {
        self.is_test(rel)
    }
    fn configures_runner(&self, _rel: &str) -> bool {
        false
    }
    fn is_lint_configuration(&self, _rel: &str) -> bool {
        false
    }
    fn module_name(&self, rel: &str) -> String {
        rel.trim_end_matches(".toy").replace('/', ".")
    }
    fn project_files(&self) -> &'static [&'static str] {
        &[]
    }
    fn runner_config_file(&self, _rel: &str) -> Option<String> {
        None
    }
    fn runner_config_change(&self, _rel: &str, _before: &str, _after: &str) -> Option<String> {
        None
    }
    fn runner_code(&self, _before: &str, _after: &str) -> Option<(&'static str, usize)> {
        None
    }
    fn doc_examples(&self, _text: &str) -> Vec<(usize, String)> {
        Vec::new()
    }
    fn test_probes(&self, _rel: &str, _text: &str) -> Vec<swarm_analysis::TestProbe> {
        Vec::new()
    }
    /// Every line is blank, a comment, an assignment (a test: an
    /// expectation).
    fn check_syntax(&self, rel: &str, text: &str) -> Result<(), swarm_analysis::SyntaxIssue> {
        let parses = |line: &str| match self.is_test(rel) {
            true => expectation(line).is_some(),
            false => assignment(line).is_some(),
        };
        match text
            .lines()
            .position(|line| !is_blank(line) && !parses(line))
        {
            Some(i) => Err(swarm_analysis::SyntaxIssue {
                line: i + 1,
                column: 1,
            }),
            None => Ok(()),
        }
    }
    fn dangerous_calls(&self, _rel: &str, _text: &str) -> Vec<swarm_analysis::DangerousCall> {
        Vec::new()
    }
    fn metrics(&self, rel: &str, text: &str) -> swarm_analysis::FileMetrics {
        let syntax_errors = self
            .check_syntax(rel, text)
            .err()
            .map(|issue| vec![issue.line])
            .unwrap_or_default();
        swarm_analysis::FileMetrics {
            path: rel.to_string(),
            loc: text.lines().filter(|l| !is_blank(l)).count(),
            functions: Vec::new(),
            hotspots: Vec::new(),
            syntax_errors,
            severity: swarm_analysis::Severity::Low,
            imported_names: Vec::new(),
            chars: text.trim_end_matches('\n').chars().count(),
        }
    }
}
