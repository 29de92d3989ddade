//! The held-out suites and what they say of an attempt: a module's kept
//! held-out tests ([`HeldOut`], from the failing tests or, for a module
//! that did not compile, from its syntax repair), their run on an attempt
//! ([`run`]: a test fails only when it fails twice) and the reading of that
//! run ([`judge`]: what passed on the original must keep passing; once the
//! visible tests are green, so must the tests of the bug), with the visible
//! tests a failing fix was overfitted to. Asking for and validating the
//! tests is the parent's; this file never calls the model.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;

use crate::cancel::Cancel;
use crate::pipeline::{TestCase, TestOutcome};
use crate::stage::judge::{Limits, Tools};
use crate::stage::prompt::one_line;
use crate::stage::tester::run::run_ids;
use crate::stage::tester::{module_of, Generated};
use crate::tools::ToolError;

/// Where a held-out suite comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Written from the failing tests: catches a fix that games them.
    FailingTests,
    /// Generated tests validated against a syntax repair of a module that
    /// did not compile: catches a change that alters what it did.
    Reference,
}

/// One kept held-out test and what it expects of an attempt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Expectation {
    pub test: String,
    /// It passed on the original code (or the reference): it must keep
    /// passing. Otherwise it checks the bug, and must pass once every
    /// visible test does.
    pub passes_on_original: bool,
}

/// The held-out tests of one module.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HeldOut {
    /// The module under test (target-relative).
    pub file: String,
    /// Where the tests are put while they run (target-relative).
    pub test_file: String,
    pub origin: Origin,
    pub tests: Vec<Expectation>,
    /// The failing tests they were written from.
    pub visible: Vec<String>,
    /// The kept tests' text.
    #[serde(skip)]
    pub source: String,
}

impl HeldOut {
    /// The kept tests of `generated` as a held-out suite, when any.
    pub fn from_generated(
        generated: &Generated,
        origin: Origin,
        visible: Vec<String>,
    ) -> Option<Self> {
        let kept: BTreeSet<&str> = generated
            .tests
            .iter()
            .filter(|t| t.kept)
            .map(|t| t.test.as_str())
            .collect();
        if kept.is_empty() {
            return None;
        }
        Some(Self {
            file: generated.file.clone(),
            test_file: generated.test_file.clone(),
            origin,
            tests: generated
                .tests
                .iter()
                .filter(|t| t.kept)
                .map(|t| Expectation {
                    test: t.test.clone(),
                    passes_on_original: !t.fails_on_original,
                })
                .collect(),
            visible,
            source: generated.text_with(&module_of(&generated.file), &kept),
        })
    }

    /// The node ids of its tests.
    pub fn ids(&self) -> Vec<String> {
        self.tests
            .iter()
            .map(|t| format!("{}::{}", self.test_file, t.test))
            .collect()
    }

    /// Whether it must run on an attempt that changes `changed` (target-
    /// relative) and leaves every visible test passing (`green`) or not.
    pub fn applies(&self, changed: &[impl AsRef<str>], green: bool) -> bool {
        let touched = changed.iter().any(|f| f.as_ref() == self.file);
        match self.origin {
            Origin::Reference => touched,
            Origin::FailingTests => touched || green,
        }
    }
}

/// Runs the tests of `held` (its file in place under `root`) once, and the
/// ones that did not pass once more: a test fails only when it fails twice.
pub fn run(
    tools: Tools<'_>,
    root: &Path,
    held: &HeldOut,
    limits: Limits,
    cancel: &Cancel,
) -> Result<Vec<TestCase>, ToolError> {
    let ids = held.ids();
    let Some(first) = run_ids(tools, root, &ids, limits, cancel)? else {
        return Ok(Vec::new());
    };
    let again: Vec<String> = ids
        .iter()
        .filter(|id| {
            !first
                .run
                .cases
                .iter()
                .any(|c| &c.id == *id && c.outcome == TestOutcome::Passed)
        })
        .cloned()
        .collect();
    let Some(second) = run_ids(tools, root, &again, limits, cancel)? else {
        return Ok(first.run.cases);
    };
    let mut cases = first.run.cases;
    for case in second.run.cases {
        if case.outcome == TestOutcome::Passed {
            cases.retain(|c| c.id != case.id);
            cases.push(case);
        }
    }
    Ok(cases)
}

/// One held-out test an attempt failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HeldOutFailure {
    pub test: String,
    /// It passed on the original code: the attempt broke it.
    pub passed_on_original: bool,
    pub message: String,
}

/// What a held-out suite says of one attempt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HeldOutCheck {
    pub file: String,
    pub origin: Origin,
    /// Tests required of this attempt.
    pub required: usize,
    pub failed: Vec<HeldOutFailure>,
    /// The visible tests the attempt turned green and the suite was
    /// written from: what it was fitted to, when it fails the suite.
    pub overfitted_to: Vec<String>,
    pub seconds: f64,
}

/// Reads the run `cases` of `held` on an attempt: `green` when every
/// visible test passes on it, `newly_passing` the visible tests it turned
/// green.
pub fn judge(
    held: &HeldOut,
    cases: &[TestCase],
    green: bool,
    newly_passing: &[String],
    seconds: f64,
) -> HeldOutCheck {
    let mut required = 0;
    let mut failed = Vec::new();
    for expectation in &held.tests {
        let must = match held.origin {
            Origin::Reference => true,
            Origin::FailingTests => expectation.passes_on_original || green,
        };
        if !must {
            continue;
        }
        required += 1;
        let id = format!("{}::{}", held.test_file, expectation.test);
        let case = cases.iter().find(|c| c.id == id);
        if case.is_some_and(|c| c.outcome == TestOutcome::Passed) {
            continue;
        }
        failed.push(HeldOutFailure {
            test: id,
            passed_on_original: expectation.passes_on_original,
            message: match case {
                Some(c) => one_line(c.message.as_deref()),
                None => "pytest did not run it".to_string(),
            },
        });
    }
    let overfitted_to = if failed.is_empty() || held.origin == Origin::Reference {
        Vec::new()
    } else {
        let fitted: Vec<String> = held
            .visible
            .iter()
            .filter(|v| newly_passing.contains(v))
            .cloned()
            .collect();
        if fitted.is_empty() {
            held.visible.clone()
        } else {
            fitted
        }
    };
    HeldOutCheck {
        file: held.file.clone(),
        origin: held.origin,
        required,
        failed,
        overfitted_to,
        seconds,
    }
}

impl HeldOutCheck {
    /// Whether the attempt failed a required test.
    pub fn is_failed(&self) -> bool {
        !self.failed.is_empty()
    }

    /// One line for the log (it names the held-out tests).
    pub fn describe(&self) -> String {
        if !self.is_failed() {
            return format!("{}: {} held-out test(s) pass", self.file, self.required);
        }
        let failed: Vec<String> = self
            .failed
            .iter()
            .map(|f| format!("{} ({})", f.test, f.message))
            .collect();
        match self.origin {
            Origin::FailingTests => format!(
                "{}: overfitted to {}: it passes them but fails held-out tests of the same behaviour: {}",
                self.file,
                self.overfitted_to.join(", "),
                failed.join("; ")
            ),
            Origin::Reference => format!(
                "{}: fails the tests generated against its syntax repair: {}",
                self.file,
                failed.join("; ")
            ),
        }
    }

    /// What the Fixer is told: why the attempt was not taken, without the
    /// held-out tests themselves.
    pub fn fixer_note(&self) -> String {
        match self.origin {
            Origin::FailingTests if self.failed.iter().all(|f| !f.passed_on_original) => format!(
                "held-out tests: the change makes {} pass but fails other tests of the same \
                 behaviour — it is overfitted to them (it special-cases their inputs or how \
                 they run); make the code right for every input",
                self.overfitted_to.join(", ")
            ),
            Origin::FailingTests => "held-out tests: the change breaks behaviour of the module \
                 that worked before (checked by tests you are not shown); keep it working"
                .to_string(),
            Origin::Reference => format!(
                "tests of what {} did before (written against its syntax repair): {} of them \
                 fail — the change alters results; fix only what is broken",
                self.file,
                self.failed.len()
            ),
        }
    }
}

/// A fix that passed the visible tests and failed held-out ones, for the
/// summary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Overfit {
    pub attempt: u32,
    pub file: String,
    /// The visible tests it was fitted to.
    pub overfitted_to: Vec<String>,
    /// The held-out tests it failed.
    pub failed: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held() -> HeldOut {
        HeldOut {
            file: "calc.py".into(),
            test_file: "tests/test_calc_heldout_swarm.py".into(),
            origin: Origin::FailingTests,
            tests: vec![
                Expectation {
                    test: "test_zero".into(),
                    passes_on_original: true,
                },
                Expectation {
                    test: "test_other".into(),
                    passes_on_original: false,
                },
            ],
            visible: vec!["test_calc.py::test_add".into()],
            source: String::new(),
        }
    }

    fn case(test: &str, outcome: TestOutcome) -> TestCase {
        TestCase {
            id: format!("tests/test_calc_heldout_swarm.py::{test}"),
            outcome,
            message: Some("assert 5 == 15".into()),
            details: None,
        }
    }

    #[test]
    fn a_green_attempt_that_fails_the_bugs_tests_is_overfitted_to_the_visible_ones() {
        let cases = [
            case("test_zero", TestOutcome::Passed),
            case("test_other", TestOutcome::Failed),
        ];
        let check = judge(
            &held(),
            &cases,
            true,
            &["test_calc.py::test_add".into()],
            0.1,
        );
        assert!(check.is_failed());
        assert_eq!(check.overfitted_to, vec!["test_calc.py::test_add"]);
        assert!(check
            .describe()
            .contains("overfitted to test_calc.py::test_add"));
        let note = check.fixer_note();
        assert!(
            note.contains("overfitted") && !note.contains("test_other"),
            "{note}"
        );
        // Not green yet: the bug's tests are not required.
        let partial = judge(&held(), &cases, false, &[], 0.1);
        assert!(!partial.is_failed());
        assert_eq!(partial.required, 1);
        // What passed on the original must keep passing.
        let broke = [case("test_zero", TestOutcome::Failed)];
        assert!(judge(&held(), &broke, false, &[], 0.1).is_failed());
    }
}
