//! Held-out tests: what catches a fix that games the tests when no static
//! rule does. Before the Fixer proposes anything, the Tester writes, for a
//! module the failing tests point at, tests of the same behaviour on other
//! inputs — from the failing tests (their code and failures), the module's
//! docstrings and the plan ([`crate::stage::prompt::held_out`]). They go
//! through the generated tests' chain ([`super::prepare`]: parses, imports
//! the module, real assertions), then:
//!
//! - `new_inputs`: a test that calls the module only with inputs the
//!   failing tests use adds nothing against hard-coded answers: dropped;
//! - `runs`, and on the code as it is either `passes_on_original` (behaviour
//!   the bug leaves alone) or `fails_as_the_bug` (it fails as the failing
//!   tests do: an assertion, or the exception they raise — a test that
//!   fails another way, a `TypeError` from a wrong call, is broken and
//!   dropped);
//! - `not_flaky`: the same outcome three runs in a row.
//!
//! The kept tests ([`HeldOut`], in `check`) are never shown to the Fixer
//! and never committed: the orchestrator writes them into the worktree only
//! while they run on an attempt, and [`judge`] reads the run — a test that passed
//! on the original must still pass, and once the attempt makes every
//! visible test pass, so must the tests of the bug. A module's generated
//! tests validated against its syntax repair (a module that did not
//! compile, see `orchestrator::reference`) are held out the same way, all
//! of them required.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use super::run::{by_id, run_kept, RUNS};
use super::{module_of, Generated, Step, StepResult};
use crate::cancel::Cancel;
use crate::llm::{ChatModel, ChatRequest, ChatResponse, LlmError};
use crate::pipeline::{TestCase, TestOutcome};
use crate::stage::judge::{Limits, Tools};
use crate::stage::prompt::held_out::{held_out_request, FailingTest, HeldOutInput};
use crate::stage::prompt::one_line;
use crate::stage::{call_model, ModelCall};
use crate::tools::ToolError;

pub mod check;
pub use check::{judge, run, HeldOut, HeldOutCheck, Origin, Overfit};

/// At most this many modules get held-out tests per run.
pub const MAX_MODULES: usize = 3;
/// At most this many failing tests are shown per module.
pub const MAX_FAILING_SHOWN: usize = 6;

/// Where the held-out tests of `file` are put while they run:
/// `tests/test_<module>_heldout_swarm.py`.
pub fn held_out_path(file: &str) -> String {
    format!(
        "tests/test_{}_heldout_swarm.py",
        module_of(file).replace('.', "_")
    )
}

/// The code of the test function a case names (`tests/t.py::test_x[1]`
/// is `test_x` of `tests/t.py`), read through `read`.
pub fn test_code(case: &TestCase, read: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let file = case.id.split("::").next()?;
    let name = case.id.rsplit("::").next()?.split('[').next()?;
    let text = read(file)?;
    let outline = swarm_analysis::outline(&text);
    let found = outline
        .definitions
        .iter()
        .find(|d| d.short_name() == name)?;
    let lines: Vec<&str> = text.lines().collect();
    let code = lines.get(found.start.saturating_sub(1)..found.end.min(lines.len()))?;
    Some(code.join("\n"))
}

/// What the Tester is asked for one module.
pub struct Ask<'a> {
    pub file: &'a str,
    /// The module's text as it is (with its bug).
    pub text: &'a str,
    pub plan_item: Option<&'a str>,
    /// The failing tests that concern it, with their code.
    pub failing: &'a [(TestCase, Option<String>)],
    pub allowance: crate::stage::budget::Allowance,
}

/// Asks the model for held-out tests of one module.
pub async fn ask(
    model: &dyn ChatModel,
    ask: &Ask<'_>,
) -> (ModelCall, Result<ChatResponse, LlmError>) {
    call_model(model, request(ask)).await
}

/// The request for held-out tests of one module.
pub fn request(ask: &Ask<'_>) -> ChatRequest {
    let module = module_of(ask.file);
    let test_path = held_out_path(ask.file);
    let failing: Vec<FailingTest<'_>> = ask
        .failing
        .iter()
        .take(MAX_FAILING_SHOWN)
        .map(|(case, code)| FailingTest {
            id: &case.id,
            code: code.as_deref(),
            failure: case.message.as_deref(),
        })
        .collect();
    held_out_request(&HeldOutInput {
        path: ask.file,
        module: &module,
        text: ask.text,
        plan_item: ask.plan_item,
        failing: &failing,
        test_path: &test_path,
        allowance: ask.allowance,
    })
}

/// The static steps for the reply: the generated tests' chain, then
/// `new_inputs` against the calls of `visible` (the failing tests' code).
pub fn prepare(file: &str, reply: &str, visible: &[String]) -> Generated {
    let mut generated = super::prepare(file, reply);
    generated.test_file = held_out_path(file);
    if generated.note.is_some() {
        generated.note = generated
            .note
            .map(|n| n.replace("no tests generated", "no held-out tests"));
    }
    let bodies: Vec<(String, String)> = generated
        .tests
        .iter()
        .filter(|t| t.kept)
        .filter_map(|t| {
            Some((
                t.test.clone(),
                generated.function_text(&t.test)?.to_string(),
            ))
        })
        .collect();
    let names: BTreeSet<String> = bodies
        .iter()
        .flat_map(|(_, body)| swarm_analysis::calls(body, None))
        .map(|c| c.name)
        .collect();
    let visible_texts: Vec<&str> = visible.iter().map(String::as_str).collect();
    let seen: BTreeSet<String> = swarm_analysis::literal_calls(&visible_texts, &names)
        .into_iter()
        .map(|c| squash(&c.call))
        .collect();
    for (test, body) in bodies {
        let calls: Vec<String> = swarm_analysis::literal_calls(&[body.as_str()], &names)
            .into_iter()
            .map(|c| c.call)
            .collect();
        let repeated = !calls.is_empty() && calls.iter().all(|c| seen.contains(&squash(c)));
        let step = if repeated {
            StepResult::fail(
                Step::NewInputs,
                format!(
                    "calls the module only with the failing tests' inputs ({})",
                    calls.join(", ")
                ),
            )
        } else {
            StepResult::pass(Step::NewInputs, "inputs of its own")
        };
        if let Some(fate) = generated.tests.iter_mut().find(|t| t.test == test) {
            if !step.passed {
                fate.kept = false;
                fate.reason = Some(format!("{}: {}", step.step.as_str(), step.detail));
            }
            fate.steps.push(step);
        }
    }
    generated
}

/// The exception names of the failing tests' messages (`ZeroDivisionError`
/// of `ZeroDivisionError: division by zero`).
pub fn bug_exceptions(failing: &[(TestCase, Option<String>)]) -> Vec<String> {
    failing
        .iter()
        .filter_map(|(case, _)| exception_of(case.message.as_deref()?))
        .collect()
}

/// The exception a message names first, when it names one.
fn exception_of(message: &str) -> Option<String> {
    let head = message.trim().split([':', ' ', '(']).next()?;
    let name = head.rsplit('.').next()?;
    (name.ends_with("Error") || name.ends_with("Exception") || name.ends_with("Warning"))
        .then(|| name.to_string())
}

/// Whether a failure on the original is the bug's: an assertion, or an
/// exception the failing tests raise too.
fn fails_as_the_bug(message: &str, exceptions: &[String]) -> bool {
    let trimmed = message.trim();
    trimmed.starts_with("assert")
        || trimmed.starts_with("AssertionError")
        || exception_of(trimmed).is_some_and(|e| e == "AssertionError" || exceptions.contains(&e))
}

/// Runs the still-kept tests of `generated` (its file in place under
/// `root`, at the original code) [`RUNS`] times and records the running
/// steps on each; `exceptions` are the failing tests' ([`bug_exceptions`]).
pub fn validate(
    tools: Tools<'_>,
    root: &Path,
    generated: &mut Generated,
    exceptions: &[String],
    limits: Limits,
    cancel: &Cancel,
) -> Result<(), ToolError> {
    let started = Instant::now();
    let mut first: BTreeMap<String, bool> = BTreeMap::new();
    for round in 1..=RUNS {
        let Some(selected) = run_kept(tools, root, generated, limits, cancel)? else {
            break;
        };
        let cases = by_id(&selected.run);
        let test_file = generated.test_file.clone();
        for fate in generated.tests.iter_mut().filter(|t| t.kept) {
            let case = cases
                .get(format!("{test_file}::{}", fate.test).as_str())
                .copied();
            let step = if round == 1 {
                let (steps, passed) = first_run(case, exceptions);
                if let Some(passed) = passed {
                    first.insert(fate.test.clone(), passed);
                    fate.fails_on_original = !passed;
                }
                fate.steps.extend(steps);
                fate.steps.iter().find(|s| !s.passed).cloned()
            } else {
                let passed = case.is_some_and(|c| c.outcome == TestOutcome::Passed);
                let expected = first.get(&fate.test).copied().unwrap_or(true);
                (passed != expected).then(|| {
                    let failure = StepResult::fail(
                        Step::NotFlaky,
                        format!(
                            "{} on run 1, not on run {round}: {}",
                            if expected { "passed" } else { "failed" },
                            one_line(case.and_then(|c| c.message.as_deref()))
                        ),
                    );
                    fate.steps.push(failure.clone());
                    failure
                })
            };
            if let Some(failed) = step {
                fate.kept = false;
                fate.reason = Some(format!("{}: {}", failed.step.as_str(), failed.detail));
            }
        }
    }
    for fate in generated.tests.iter_mut().filter(|t| t.kept) {
        fate.steps.push(StepResult::pass(
            Step::NotFlaky,
            format!("the same outcome {RUNS} runs in a row"),
        ));
    }
    generated.seconds = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
    Ok(())
}

/// The steps the first run shows for one test, and whether it passed
/// (`None` when it did not run as a test should).
fn first_run(case: Option<&TestCase>, exceptions: &[String]) -> (Vec<StepResult>, Option<bool>) {
    let Some(case) = case else {
        return (
            vec![StepResult::fail(Step::Runs, "pytest did not run it")],
            None,
        );
    };
    let message = one_line(case.message.as_deref());
    match case.outcome {
        TestOutcome::Passed => (
            vec![
                StepResult::pass(Step::Runs, "ran"),
                StepResult::pass(Step::PassesOnOriginal, "passed on the original code"),
            ],
            Some(true),
        ),
        TestOutcome::Failed if fails_as_the_bug(&message, exceptions) => (
            vec![
                StepResult::pass(Step::Runs, "ran"),
                StepResult::pass(
                    Step::FailsAsTheBug,
                    format!("fails on the original code as the failing tests do: {message}"),
                ),
            ],
            Some(false),
        ),
        TestOutcome::Failed => (
            vec![
                StepResult::pass(Step::Runs, "ran"),
                StepResult::fail(
                    Step::FailsAsTheBug,
                    format!(
                        "fails on the original code otherwise than the failing tests: {message}"
                    ),
                ),
            ],
            None,
        ),
        TestOutcome::Error => (vec![StepResult::fail(Step::Runs, message)], None),
        TestOutcome::Skipped => (vec![StepResult::fail(Step::Runs, "skipped")], None),
        TestOutcome::NotRun => (
            vec![StepResult::fail(
                Step::Runs,
                "not run: the test run hit its time limit",
            )],
            None,
        ),
    }
}

/// `text` without whitespace.
fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VISIBLE: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";

    fn reply(tests: &str) -> String {
        format!("Held-out tests.\n\n```python\nfrom calc import add\n\n\n{tests}```\n")
    }

    #[test]
    fn tests_that_repeat_the_failing_inputs_are_dropped() {
        let generated = prepare(
            "calc.py",
            &reply("def test_same():\n    assert add(2, 3) == 5\n\n\ndef test_other():\n    assert add(10, 5) == 15\n"),
            &[VISIBLE.to_string()],
        );
        assert_eq!(generated.test_file, "tests/test_calc_heldout_swarm.py");
        let fate = |name: &str| generated.tests.iter().find(|t| t.test == name).unwrap();
        assert!(!fate("test_same").kept);
        assert!(fate("test_same").reason.as_deref().unwrap().starts_with(
            "new_inputs: calls the module only with the failing tests' inputs (add(2, 3))"
        ));
        assert!(fate("test_other").kept);
    }

    #[test]
    fn a_failure_on_the_original_must_look_like_the_bug() {
        assert!(fails_as_the_bug("assert 5 == 15", &[]));
        assert!(fails_as_the_bug("AssertionError: wrong", &[]));
        assert!(fails_as_the_bug(
            "ZeroDivisionError: division by zero",
            &["ZeroDivisionError".to_string()]
        ));
        assert!(!fails_as_the_bug(
            "TypeError: add() takes 2 positional arguments",
            &[]
        ));
    }
}
