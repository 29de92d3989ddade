//! Which files the evidence points at, most urgent first: the ranking that
//! decides what a plan shows in full and what it only names.
//!
//! Evidence, strongest first: a failing test's traceback runs through the
//! file; a failing test imports it (directly, or through a package
//! `__init__.py` that re-exports it); it does not parse or pylint reports an
//! error in it; its metrics make it high severity; then medium, then the
//! rest by how much pylint has to say. Pure: the caller reads the files.

use std::collections::BTreeMap;

use crate::pipeline::{LintMessage, TestCase};
use crate::stage::reach;
use swarm_analysis::{FileMetrics, Severity};

/// Why a file is where it is in the ranking.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    /// A failing test's traceback has a frame in the file.
    Traceback { test: String },
    /// A failing test imports the file (or a package that re-exports it).
    ImportedByFailingTest { test: String },
    /// The file does not parse.
    SyntaxError { line: usize },
    /// pylint reports an error or a fatal message.
    PylintError { symbol: String, line: u32 },
    /// Its metrics make it high or medium severity.
    Severity { severity: Severity },
}

impl Reason {
    /// Lower is more urgent.
    fn tier(&self) -> u8 {
        match self {
            Reason::Traceback { .. } => 0,
            Reason::ImportedByFailingTest { .. } => 1,
            Reason::SyntaxError { .. } | Reason::PylintError { .. } => 2,
            Reason::Severity {
                severity: Severity::High,
            } => 3,
            Reason::Severity { .. } => 4,
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Traceback { test } => write!(f, "in the traceback of {test}"),
            Reason::ImportedByFailingTest { test } => write!(f, "imported by {test}"),
            Reason::SyntaxError { line } => write!(f, "syntax error at line {line}"),
            Reason::PylintError { symbol, line } => write!(f, "pylint {symbol} at line {line}"),
            Reason::Severity { severity } => write!(f, "{} severity", severity.name()),
        }
    }
}

/// One source file and what points at it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Ranked {
    pub path: String,
    /// Every reason, most urgent first (at most a few of each kind).
    pub reasons: Vec<Reason>,
    #[serde(skip)]
    lint_weight: usize,
}

impl Ranked {
    /// The most urgent reason's tier; 5 when nothing points at the file.
    fn tier(&self) -> u8 {
        self.reasons.first().map_or(5, Reason::tier)
    }

    /// Whether the evidence says the file needs work (a failing test, a
    /// syntax or pylint error, or high severity): such a file is planned
    /// in a later batch when an earlier plan could not show it.
    pub fn needs_work(&self) -> bool {
        self.tier() <= 3
    }
}

/// What the ranking is computed from.
pub struct Facts<'a> {
    /// Target-relative source files (no test files).
    pub sources: &'a [String],
    pub metrics: &'a BTreeMap<String, FileMetrics>,
    pub lint: &'a [LintMessage],
    pub failing: &'a [TestCase],
    /// Reads a target-relative file (test modules, `__init__.py`).
    pub read: &'a dyn Fn(&str) -> Option<String>,
}

/// How many reasons of one kind a file keeps.
const REASONS_PER_KIND: usize = 3;

/// Every source file, most urgent first; ties keep path order.
pub fn rank(facts: &Facts<'_>) -> Vec<Ranked> {
    let mut by_file: BTreeMap<&str, Ranked> = facts
        .sources
        .iter()
        .map(|path| {
            let ranked = Ranked {
                path: path.clone(),
                reasons: Vec::new(),
                lint_weight: 0,
            };
            (path.as_str(), ranked)
        })
        .collect();
    for (path, reason) in evidence(facts) {
        let Some(ranked) = by_file.get_mut(path.as_str()) else {
            continue;
        };
        let same_kind = ranked
            .reasons
            .iter()
            .filter(|r| std::mem::discriminant(*r) == std::mem::discriminant(&reason))
            .count();
        if same_kind < REASONS_PER_KIND && !ranked.reasons.contains(&reason) {
            ranked.reasons.push(reason);
        }
    }
    for message in facts.lint {
        if let Some(ranked) = by_file.get_mut(message.path.trim_start_matches("./")) {
            ranked.lint_weight += message.kind.weight();
        }
    }
    let mut ranked: Vec<Ranked> = by_file.into_values().collect();
    for r in &mut ranked {
        r.reasons.sort_by_key(Reason::tier);
    }
    ranked.sort_by(|a, b| {
        a.tier()
            .cmp(&b.tier())
            .then(b.lint_weight.cmp(&a.lint_weight))
            .then(a.path.cmp(&b.path))
    });
    ranked
}

/// Every piece of evidence, as (file, reason): failing tests' tracebacks
/// and imports, syntax errors, pylint errors, then severity.
fn evidence(facts: &Facts<'_>) -> Vec<(String, Reason)> {
    let mut found = Vec::new();
    for case in facts.failing {
        let test = || case.id.clone();
        let mentioned = reach::mentioned_paths(case);
        for path in facts.sources {
            if reach::names_file(&mentioned, path) {
                found.push((path.clone(), Reason::Traceback { test: test() }));
            }
        }
        for path in imported_by(case, facts) {
            found.push((path, Reason::ImportedByFailingTest { test: test() }));
        }
    }
    for (path, metrics) in facts.metrics {
        if let Some(line) = metrics.syntax_errors.first() {
            found.push((path.clone(), Reason::SyntaxError { line: *line }));
        }
    }
    for message in facts.lint.iter().filter(|m| m.kind.is_error()) {
        let reason = Reason::PylintError {
            symbol: message.symbol.clone(),
            line: message.line,
        };
        found.push((message.path.trim_start_matches("./").to_string(), reason));
    }
    for (path, metrics) in facts.metrics {
        if metrics.severity > Severity::Low {
            let severity = metrics.severity;
            found.push((path.clone(), Reason::Severity { severity }));
        }
    }
    found
}

/// The source files a failing test's module reaches (imports, or takes
/// from through a package that re-exports them).
fn imported_by(case: &TestCase, facts: &Facts<'_>) -> Vec<String> {
    let Some(text) = reach::test_module(case).and_then(|m| (facts.read)(m)) else {
        return Vec::new();
    };
    let sources: Vec<&String> = facts.sources.iter().collect();
    reach::reached_sources(&text, &sources, facts.read)
        .into_iter()
        .map(|(path, _)| path)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::TestOutcome;

    fn failing(id: &str, details: &str) -> TestCase {
        TestCase {
            id: id.into(),
            outcome: TestOutcome::Failed,
            message: Some("assert 1 == 2".into()),
            details: Some(details.into()),
        }
    }

    fn lint(path: &str, kind: &str, symbol: &str) -> LintMessage {
        LintMessage {
            path: path.into(),
            line: 3,
            column: 0,
            kind: kind.into(),
            symbol: symbol.into(),
            message_id: "E0602".into(),
            message: "x".into(),
        }
    }

    #[test]
    fn tracebacks_then_imports_then_errors_then_severity() {
        let sources: Vec<String> = [
            "a.py",
            "ledger/__init__.py",
            "ledger/money.py",
            "broken.py",
            "tangled.py",
            "quiet.py",
            "noisy.py",
            "util/tb.py",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut metrics = BTreeMap::new();
        for path in &sources {
            let mut m = swarm_analysis::analyze(path, "x = 1\n");
            if path == "tangled.py" {
                m.severity = Severity::High;
            }
            metrics.insert(path.clone(), m);
        }
        let lint = vec![
            lint("broken.py", "error", "undefined-variable"),
            lint("noisy.py", "convention", "invalid-name"),
        ];
        let failing = vec![failing(
            "tests/test_ledger.py::test_discount",
            "util/tb.py:12: in helper\n    raise X",
        )];
        let read = |path: &str| match path {
            "tests/test_ledger.py" => Some("from ledger import apply_discount\n".to_string()),
            "ledger/__init__.py" => {
                Some("from .money import apply_discount, to_cents\n".to_string())
            }
            _ => None,
        };
        let facts = Facts {
            sources: &sources,
            metrics: &metrics,
            lint: &lint,
            failing: &failing,
            read: &read,
        };
        let order: Vec<String> = rank(&facts).into_iter().map(|r| r.path).collect();
        assert_eq!(
            order,
            vec![
                "util/tb.py",
                "ledger/__init__.py",
                "ledger/money.py",
                "broken.py",
                "tangled.py",
                "noisy.py",
                "a.py",
                "quiet.py",
            ]
        );
        let ranked = rank(&facts);
        assert!(ranked[2].needs_work());
        assert!(!ranked[5].needs_work(), "only conventions: {:?}", ranked[5]);
        assert_eq!(
            ranked[2].reasons[0].to_string(),
            "imported by tests/test_ledger.py::test_discount"
        );
    }
}
