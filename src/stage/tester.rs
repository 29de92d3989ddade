//! The Tester: before the Fixer changes a module no test reaches, the model
//! is asked for pytest tests of its public behaviour, and every generated
//! test function passes a validation chain before it may judge anything
//! (in the spirit of Meta's TestGen-LLM). The steps, in order; the first
//! one a test fails is its reason:
//!
//! 1. `parses`: the file parses (tree-sitter), else nothing is kept;
//! 2. `imports_module`: the file imports the module under test;
//! 3. `real_assertions`: the function asserts on the module's results
//!    ([`shape`]: not `assert True`, not only "does not raise");
//! 4. `runs`: pytest collects and runs it;
//! 5. `passes_on_original`: it passes on the code as it is before the
//!    Fixer (a characterization test: it pins what the code does today);
//! 6. `not_flaky`: it passes three runs in a row.
//!
//! Steps 4–6 run pytest on the file three times with per-test timeouts
//! ([`run`]), so a test that hangs costs seconds. The passing functions of a
//! file are kept, the others dropped with their reasons; a test that fails
//! on the original is set aside as possible evidence of a bug and never
//! committed. What the Tester does not do: write into the worktree or
//! commit (the orchestrator puts the candidate file in place and commits
//! the kept tests), or decide what a test means for an attempt (the
//! Judge's existing-tests path does, once the tests are committed).
//!
//! [`held_out`] writes the other kind of test: tests of the behaviour the
//! failing tests check, on other inputs, never shown to the Fixer.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::pipeline::{TestCase, TestOutcome};
use swarm_analysis::check_syntax;

mod ask;
pub mod held_out;
pub mod run;
pub mod shape;
mod tidy;

pub use ask::{ask, call_sites, extract_python, module_of, subjects, test_path, Ask};

/// Why a module gets no generated tests when the project's test
/// configuration collects no new file.
pub const NO_PLACE_FOR_TESTS: &str =
    "the project's pytest configuration collects no new test file (its testpaths name files only)";

/// At most this many files get generated tests per run.
pub const MAX_FILES: usize = 5;
/// Call sites a prompt shows at most.
const MAX_CALL_SITES: usize = 20;

/// A step of the validation chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    Parses,
    ImportsModule,
    RealAssertions,
    Runs,
    PassesOnOriginal,
    NotFlaky,
    /// A test set aside for failing on the original passes once the
    /// Fixer's accepted change is in, and the plan says that is intended.
    FixedByChange,
    /// A held-out test calls the module with inputs of its own, not only
    /// the failing tests' (see [`held_out`]).
    NewInputs,
    /// A held-out test that fails on the original fails as the failing
    /// tests do (see [`held_out`]).
    FailsAsTheBug,
}

impl Step {
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Parses => "parses",
            Step::ImportsModule => "imports_module",
            Step::RealAssertions => "real_assertions",
            Step::Runs => "runs",
            Step::PassesOnOriginal => "passes_on_original",
            Step::NotFlaky => "not_flaky",
            Step::FixedByChange => "fixed_by_change",
            Step::NewInputs => "new_inputs",
            Step::FailsAsTheBug => "fails_as_the_bug",
        }
    }
}

/// One step's outcome for one test (or for the whole file).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepResult {
    pub step: Step,
    pub passed: bool,
    /// Why it failed, or what it saw.
    pub detail: String,
}

impl StepResult {
    fn pass(step: Step, detail: impl Into<String>) -> Self {
        Self {
            step,
            passed: true,
            detail: detail.into(),
        }
    }

    fn fail(step: Step, detail: impl Into<String>) -> Self {
        Self {
            step,
            passed: false,
            detail: detail.into(),
        }
    }
}

/// What became of one generated test function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TestFate {
    /// `test_mean_of_three`.
    pub test: String,
    pub kept: bool,
    /// The steps it went through, the failing one last.
    pub steps: Vec<StepResult>,
    /// Why it was dropped (`None` when kept).
    pub reason: Option<String>,
    /// It ran and failed on the original code: set aside as possible
    /// evidence of a bug, not committed.
    pub fails_on_original: bool,
}

/// The Tester's work on one module.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Generated {
    /// The module under test (target-relative).
    pub file: String,
    /// Where the kept tests go (target-relative).
    pub test_file: String,
    /// The file-level steps (parses, imports the module).
    pub file_steps: Vec<StepResult>,
    pub tests: Vec<TestFate>,
    /// Wall time of the validation (and of settling set-aside tests after
    /// the rounds), the model call left out.
    pub seconds: f64,
    /// Why nothing was generated or kept, when so (`no tests generated: …`).
    pub note: Option<String>,
    /// The generated file as the model wrote it.
    #[serde(skip)]
    pub source: String,
}

/// The doctest examples of `source`: each `>>> call` line with the line
/// after it, the result it shows (examples without one are left out).
fn doctest_examples(source: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = source.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter_map(|pair| {
            let call = pair[0].strip_prefix(">>> ")?.trim();
            let result = pair[1];
            let shown =
                !result.is_empty() && !result.starts_with(">>>") && !result.starts_with("...");
            (shown && !call.is_empty()).then(|| (call.to_string(), result.to_string()))
        })
        .collect()
}

/// `claim` occurs in `text` not followed by more of a name or number
/// (`x==1` is not in `x==1.5`).
fn contains_whole(text: &str, claim: &str) -> bool {
    text.match_indices(claim).any(|(at, _)| {
        !text[at + claim.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.')
    })
}

/// `text` without whitespace, to compare code written with other spacing.
fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// What the summary says of the Tester's work on one module.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TestsReport {
    pub test_file: String,
    pub kept: usize,
    pub discarded: usize,
    /// `test_x: reason` per dropped test.
    pub reasons: Vec<String>,
    /// Why nothing was generated or kept, when so.
    pub note: Option<String>,
}

impl Generated {
    /// The tests set aside for failing on the original code, as failing
    /// tests the Fixer of the module is shown (marked as possible evidence,
    /// not orders).
    pub fn evidence(&self) -> Vec<TestCase> {
        self.tests
            .iter()
            .filter(|t| t.fails_on_original && !t.kept)
            .map(|t| {
                let failure = t
                    .steps
                    .iter()
                    .find(|s| s.step == Step::PassesOnOriginal && !s.passed)
                    .map(|s| s.detail.clone())
                    .unwrap_or_default();
                TestCase {
                    id: format!("{}::{}", self.test_file, t.test),
                    outcome: TestOutcome::Failed,
                    message: Some(format!(
                        "a generated test that fails on the original code (not committed; \
                         possible evidence of a bug: fix the code for it only if the plan says \
                         so): {failure}"
                    )),
                    details: self.function_text(&t.test).map(str::to_string),
                }
            })
            .collect()
    }

    /// For the summary.
    pub fn report(&self) -> TestsReport {
        TestsReport {
            test_file: self.test_file.clone(),
            kept: self.kept(),
            discarded: self.discarded(),
            reasons: self.reasons(),
            note: self.note.clone(),
        }
    }

    /// Tests kept.
    pub fn kept(&self) -> usize {
        self.tests.iter().filter(|t| t.kept).count()
    }

    /// Tests dropped.
    pub fn discarded(&self) -> usize {
        self.tests.len() - self.kept()
    }

    /// `test_x: reason` for every dropped test.
    pub fn reasons(&self) -> Vec<String> {
        self.tests
            .iter()
            .filter_map(|t| t.reason.as_ref().map(|r| format!("{}: {r}", t.test)))
            .collect()
    }

    /// One line for the log and the user.
    pub fn describe(&self) -> String {
        if let Some(note) = &self.note {
            return format!("{}: {note}", self.file);
        }
        let mut line = format!(
            "{}: {} generated test(s) kept in {}, {} discarded",
            self.file,
            self.kept(),
            self.test_file,
            self.discarded()
        );
        let reasons = self.reasons();
        if !reasons.is_empty() {
            line.push_str(&format!(" ({})", reasons.join("; ")));
        }
        line
    }

    /// The file to commit: the generated text without the dropped test
    /// functions and test classes, tidied for pylint (see [`tidy`]);
    /// `None` when no test is kept.
    pub fn kept_text(&self, module: &str) -> Option<String> {
        if self.kept() == 0 {
            return None;
        }
        let kept: BTreeSet<&str> = self
            .tests
            .iter()
            .filter(|t| t.kept)
            .map(|t| t.test.as_str())
            .collect();
        Some(self.text_with(module, &kept))
    }

    /// The generated text with only the test functions `kept`, tidied.
    pub fn text_with(&self, module: &str, kept: &BTreeSet<&str>) -> String {
        let found = shape::shape(&self.source, module);
        let mut cuts: Vec<(usize, usize)> = found
            .functions
            .iter()
            .filter(|f| !kept.contains(f.name.as_str()))
            .map(|f| (f.start, f.end))
            .chain(found.classes.iter().map(|(_, s, e)| (*s, *e)))
            .collect();
        cuts.sort_unstable();
        let mut text = String::new();
        let mut at = 0;
        for (start, end) in cuts {
            text.push_str(&self.source[at..start]);
            at = end;
        }
        text.push_str(&self.source[at..]);
        let mut tidy = String::new();
        let mut blank = 0;
        for line in text.lines() {
            blank = if line.trim().is_empty() { blank + 1 } else { 0 };
            if blank <= 2 {
                tidy.push_str(line);
                tidy.push('\n');
            }
        }
        tidy::tidy(&format!("{}\n", tidy.trim_end()), &self.file)
    }

    /// The text of the generated test function `test`.
    pub fn function_text(&self, test: &str) -> Option<&str> {
        let found = shape::shape(&self.source, &module_of(&self.file));
        let function = found.functions.into_iter().find(|f| f.name == test)?;
        self.source.get(function.start..function.end)
    }

    /// The tests set aside for failing on the original code.
    pub fn set_aside(&self) -> Vec<String> {
        self.tests
            .iter()
            .filter(|t| t.fails_on_original && !t.kept)
            .map(|t| t.test.clone())
            .collect()
    }

    /// Why the set-aside `test` failing on the original is a bug that is
    /// meant to be fixed: the plan's item for the file calls something a
    /// bug and names a function the test calls, or a docstring of the
    /// original module shows the test's call with the result the test
    /// asserts (a doctest example, `>>> mean([1, 2, 3])` then `2.0`, and
    /// `assert mean([1, 2, 3]) == 2.0` in the test).
    /// `None` when neither says so.
    pub fn intended(
        &self,
        test: &str,
        plan_item: Option<&str>,
        original: Option<&str>,
    ) -> Option<String> {
        let module = module_of(&self.file);
        let found = shape::shape(&self.source, &module);
        let function = found.functions.iter().find(|f| f.name == test)?;
        let body = self.source.get(function.start..function.end)?;
        let by_plan = plan_item
            .filter(|item| item.to_ascii_lowercase().contains("bug"))
            .and_then(|item| {
                swarm_analysis::calls(body, None)
                    .into_iter()
                    .map(|c| c.name)
                    .find(|name| {
                        item.contains(&format!("`{name}")) || item.contains(&format!("{name}("))
                    })
            })
            .map(|name| format!("the plan calls `{name}` of {} a bug", self.file));
        by_plan.or_else(|| {
            let body = squash(body);
            doctest_examples(original?)
                .into_iter()
                .find(|(call, result)| {
                    let (call, result) = (squash(call), squash(result));
                    [
                        format!("{call}=={result}"),
                        format!("{result}=={call}"),
                        format!("{call}==pytest.approx({result})"),
                    ]
                    .iter()
                    .any(|claim| contains_whole(&body, claim))
                })
                .map(|(call, result)| {
                    format!(
                        "a docstring of {} shows `{call}` giving `{result}`",
                        self.file
                    )
                })
        })
    }

    /// Settles the set-aside `test` once the delivered code is known:
    /// `failed` is why it still fails there (`None`: it passes), `intended`
    /// why the change it needs is wanted (see [`Generated::intended`]).
    pub fn settle(&mut self, test: &str, failed: Option<String>, intended: Option<String>) {
        let Some(fate) = self.tests.iter_mut().find(|t| t.test == test) else {
            return;
        };
        let reason = match (failed, intended) {
            (None, Some(why)) => {
                fate.steps.push(StepResult::pass(
                    Step::FixedByChange,
                    format!("passes on the delivered code; {why}"),
                ));
                fate.kept = true;
                fate.reason = None;
                return;
            }
            (None, None) => "fails on the original code and passes on the delivered code, but \
                             the plan does not call what it tests a bug, so the change it pins \
                             is not known to be intended"
                .to_string(),
            (Some(still), _) => format!(
                "fails on the original code and still fails on the delivered code ({still})"
            ),
        };
        fate.steps
            .push(StepResult::fail(Step::FixedByChange, reason.clone()));
        fate.reason = Some(format!("{reason}: discarded"));
    }
}

/// The static steps for the model's `reply` about `file`: the file-level
/// steps, and each test function with its assertion verdict. A test that
/// passes them still has to run (see [`run::check`]).
pub fn prepare(file: &str, reply: &str) -> Generated {
    let module = module_of(file);
    let mut generated = Generated {
        file: file.to_string(),
        test_file: test_path(file),
        file_steps: Vec::new(),
        tests: Vec::new(),
        seconds: 0.0,
        note: None,
        source: String::new(),
    };
    let Some(source) = extract_python(reply) else {
        generated.note = Some("no tests generated: the reply holds no Python test file".into());
        return generated;
    };
    generated.source = source;
    let source = &generated.source;
    if let Err(issue) = check_syntax(source) {
        let detail = format!(
            "does not parse (line {}, column {})",
            issue.line, issue.column
        );
        generated.note = Some(format!("no tests generated: the file {detail}"));
        generated
            .file_steps
            .push(StepResult::fail(Step::Parses, detail));
        return generated;
    }
    generated
        .file_steps
        .push(StepResult::pass(Step::Parses, "parses"));
    let imports = shape::imports_module(source, &module);
    let found = shape::shape(source, &module);
    generated.file_steps.push(if imports {
        StepResult::pass(Step::ImportsModule, format!("imports {module}"))
    } else {
        StepResult::fail(
            Step::ImportsModule,
            format!("does not import the module under test `{module}`"),
        )
    });
    for function in &found.functions {
        let mut steps = vec![StepResult::pass(Step::Parses, "parses")];
        steps.push(if imports {
            StepResult::pass(Step::ImportsModule, format!("imports {module}"))
        } else {
            StepResult::fail(
                Step::ImportsModule,
                format!("does not import the module under test `{module}`"),
            )
        });
        if imports {
            steps.push(match &function.asserts {
                Ok(()) => StepResult::pass(Step::RealAssertions, "asserts on the module's results"),
                Err(reason) => StepResult::fail(Step::RealAssertions, reason.clone()),
            });
        }
        generated.tests.push(fate(&function.name, steps));
    }
    for (name, _, _) in &found.classes {
        let steps = vec![StepResult::fail(
            Step::Runs,
            "a test class: only plain test functions are validated",
        )];
        generated.tests.push(fate(name, steps));
    }
    if generated.tests.is_empty() {
        generated.note = Some("no tests generated: the file defines no test function".into());
    }
    generated
}

/// A fate from its steps: kept while none failed (so far).
fn fate(test: &str, steps: Vec<StepResult>) -> TestFate {
    let reason = steps
        .iter()
        .find(|s| !s.passed)
        .map(|s| format!("{}: {}", s.step.as_str(), s.detail));
    TestFate {
        test: test.to_string(),
        kept: reason.is_none(),
        steps,
        reason,
        fails_on_original: false,
    }
}

#[cfg(test)]
mod tests;
