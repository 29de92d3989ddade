//! The tool entries of the experiment log (`details.kind` = `tool`): one
//! type per `details.tool`, with the facts each run adds beside its command
//! line (`input_prompt`) and trimmed output (`output_response`).
//!
//! Records another layer owns and nobody reads back from the log (the
//! Judge's early stop, pylint's batches, the behaviour check, the Tester's
//! tests) are kept as that layer serialized them, as JSON values; the log
//! must not depend on the stages or the tools. Fields are defaulted when
//! missing, so entries of earlier versions read alike; the test counts,
//! which a report cannot do without, are required.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool run, by `details.tool`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "tool", rename_all = "snake_case")]
pub enum ToolRun {
    /// The tree-sitter metrics of the target (the table is the entry's
    /// `output_response`).
    Metrics,
    /// The test runner over one state; `pytest` in the log.
    #[serde(rename = "pytest")]
    Tests(TestsRun),
    /// The compile and import checks of a state without tests.
    ImportCheck(ImportCheckRun),
    /// The linter over one state; `pylint` in the log.
    #[serde(rename = "pylint")]
    Lint(LintRun),
    /// The behaviour check of an attempt.
    BehaviourCheck(BehaviourCheckRun),
    /// The Tester's validation of the tests generated for one module.
    Tester(TesterRun),
    /// The held-out tests of one module: their validation before the
    /// rounds (`attempt` null), or what they said of one attempt.
    HeldOut(HeldOutRun),
    /// The reference of a module that did not compile: the repair that
    /// lets it parse, or why none could be made.
    SyntaxRepair(SyntaxRepairRun),
    /// The literal answers an attempt added for the failing tests' inputs.
    LiteralAnswers(LiteralAnswersRun),
    /// A tool this version does not know (written by a later one).
    #[serde(other)]
    Unknown,
}

impl ToolRun {
    /// The tool's name as the log writes it (`details.tool`): the report
    /// labels its figures with it.
    pub fn name(&self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.get("tool")?.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// The linter's name as the log writes it.
    pub fn linter() -> String {
        ToolRun::Lint(LintRun::default()).name()
    }
}

/// pytest over the baseline (`attempt` null), an attempt or the final check.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TestsRun {
    /// The attempt measured; `None` for the baseline and the final check.
    #[serde(default)]
    pub attempt: Option<u32>,
    /// Served from the baseline cache: pytest did not run in this run.
    #[serde(default)]
    pub cached: bool,
    #[serde(default)]
    pub stopped_early: bool,
    /// Why the Judge stopped before the full suite, as the Judge records
    /// it (null when it did not).
    #[serde(default)]
    pub early_stop: Value,
    /// The same, in words.
    #[serde(default)]
    pub early_stop_reason: Option<String>,
    /// pytest's exit code; `None` when it was killed.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// pytest's wall time, to the millisecond.
    #[serde(default)]
    pub seconds: f64,
    /// The wall time of the first pass over the previously failing tests,
    /// when the full suite ran after it.
    #[serde(default)]
    pub first_pass_seconds: Option<f64>,
    #[serde(default)]
    pub timed_out: bool,
    /// pytest collected no tests.
    #[serde(default)]
    pub no_tests: bool,
    pub passed: usize,
    pub total: usize,
    /// Ids of the failing tests.
    #[serde(default)]
    pub failing: Vec<String>,
    /// Ids of the passing tests, of every runner of the target: written
    /// for the baseline and the final check only (`attempt` null), so an
    /// attempt's entry stays small.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passing: Vec<String>,
    /// Ids of tests of the baseline that this run no longer has.
    #[serde(default)]
    pub vanished: Vec<String>,
}

/// The compile and import checks of a state without tests.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ImportCheckRun {
    pub attempt: Option<u32>,
    pub cached: bool,
    /// Files that do not compile.
    pub compile_errors: usize,
    /// Modules that do not import (or do not finish importing).
    pub import_errors: usize,
}

/// pylint over one state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LintRun {
    pub attempt: Option<u32>,
    pub cached: bool,
    /// The global score out of 10; `None` when no file could be linted.
    pub score: Option<f64>,
    /// How many messages pylint gave.
    pub messages: usize,
    /// Files pylint ran over this time.
    pub linted: usize,
    /// Files whose result came from the lint cache.
    pub from_cache: usize,
    /// Every pylint process (files, seconds, outcome), as the tools record it.
    pub batches: Value,
    /// The lint's wall time.
    pub seconds: f64,
    /// Files left out (path and why), as the tools record them.
    pub skipped: Value,
    /// What went differently from one plain pylint run, one line each.
    pub notes: Vec<String>,
}

/// The behaviour check of one attempt.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BehaviourCheckRun {
    pub attempt: u32,
    /// The check, function by function, as the Judge records it.
    pub behaviour: Value,
}

/// The Tester's validation of the tests generated for one module.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TesterRun {
    /// The module (target-relative).
    pub file: String,
    /// Every test with the steps it passed and the one it failed, as the
    /// Tester records them.
    pub generated_tests: Value,
}

/// The held-out tests of one module.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HeldOutRun {
    /// The module (target-relative).
    pub file: String,
    /// The attempt they judged; `None` for their validation.
    pub attempt: Option<u32>,
    /// Whether the attempt failed a required held-out test.
    pub failed: bool,
    /// The visible tests an attempt that failed them was fitted to.
    pub overfitted_to: Vec<String>,
    /// The tests with their steps (validation) or the check (an attempt),
    /// as the Tester records them.
    pub held_out: Value,
}

/// The literal answers one attempt added to one module for the failing
/// tests' inputs (`gcd(35, 21)` answered with `7`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LiteralAnswersRun {
    /// The module (target-relative).
    pub file: String,
    pub attempt: u32,
    /// Each answer: the test's call, the literal, the line.
    pub answers: Value,
}

/// The reference of a module that did not compile.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SyntaxRepairRun {
    /// The module (target-relative).
    pub file: String,
    /// Whether a reference was made.
    pub repaired: bool,
    /// How (`inserted ":" on line 6`, the model's syntax-only repair), or
    /// why none could be made.
    pub how: String,
    /// The repair as a unified diff (empty without one).
    pub diff: String,
}
