//! The experiment log's entries of what checks a change beyond the tests:
//! the behaviour check, the Tester's generated and held-out tests and what
//! the held-out tests said of an attempt, and the reference made for a
//! module that did not compile.

use super::{as_json, Recorder};
use crate::error::SwarmError;
use crate::log::{Action, Agent, Kind, ToolRun};

impl Recorder<'_> {
    /// The behaviour check of attempt `attempt` (see
    /// [`crate::stage::judge::behaviour`]).
    pub fn behaviour(
        &mut self,
        check: &crate::stage::judge::behaviour::BehaviourCheck,
        attempt: u32,
    ) -> Result<(), SwarmError> {
        let files: Vec<&str> = check.files.iter().map(|f| f.file.as_str()).collect();
        let what = format!(
            "behaviour check of {}: the best state's functions and the changed ones on the same inputs",
            files.join(", ")
        );
        self.behaviour_entry(what, check.describe(), attempt, as_json(check))
    }

    /// A `behaviour_check` entry of attempt `attempt`: what was compared,
    /// the outcome in words, and the check as JSON.
    pub(super) fn behaviour_entry(
        &mut self,
        what: String,
        outcome: String,
        attempt: u32,
        behaviour: serde_json::Value,
    ) -> Result<(), SwarmError> {
        let e = self.entry(
            Agent::Judge,
            Action::CodeAnalysis,
            what,
            outcome,
            Kind::Tool(ToolRun::BehaviourCheck(crate::log::BehaviourCheckRun {
                attempt,
                behaviour,
            })),
        );
        self.write(e)
    }

    /// The Tester's validation of the tests generated for one module:
    /// every test with the steps it passed and the one it failed, in
    /// `details.generated_tests` (see [`crate::stage::tester`]).
    pub fn tester(
        &mut self,
        generated: &crate::stage::tester::Generated,
    ) -> Result<(), SwarmError> {
        let tests = generated_json(generated);
        let e = self.entry(
            Agent::Judge,
            Action::CodeAnalysis,
            format!(
                "validate the tests generated for {}: parses, imports the module, real assertions, runs, passes on the original code, not flaky ({} runs)",
                generated.file,
                crate::stage::tester::run::RUNS
            ),
            generated.describe(),
            Kind::Tool(ToolRun::Tester(crate::log::TesterRun {
                file: generated.file.clone(),
                generated_tests: tests,
            })),
        );
        self.write(e)
    }

    /// The validation of the held-out tests of one module (see
    /// [`crate::stage::tester::held_out`]): every test with its steps, in
    /// `details.held_out`.
    pub fn held_out(
        &mut self,
        generated: &crate::stage::tester::Generated,
    ) -> Result<(), SwarmError> {
        let tests = generated_json(generated);
        let output = match &generated.note {
            Some(note) => format!("{}: {note}", generated.file),
            None => format!(
                "{}: {} held-out test(s) kept, {} discarded{}",
                generated.file,
                generated.kept(),
                generated.discarded(),
                match generated.reasons() {
                    r if r.is_empty() => String::new(),
                    r => format!(" ({})", r.join("; ")),
                }
            ),
        };
        let e = self.entry(
            Agent::Judge,
            Action::CodeAnalysis,
            format!(
                "validate the held-out tests of {}: parses, imports the module, real assertions, new inputs, runs, passes or fails as the bug does on the original code, not flaky ({} runs); never shown to the Fixer",
                generated.file,
                crate::stage::tester::run::RUNS
            ),
            output,
            Kind::Tool(ToolRun::HeldOut(crate::log::HeldOutRun {
                file: generated.file.clone(),
                attempt: None,
                failed: false,
                overfitted_to: Vec::new(),
                held_out: tests,
            })),
        );
        self.write(e)
    }

    /// What the held-out tests of one module said of attempt `attempt`.
    pub fn held_out_check(
        &mut self,
        check: &crate::stage::tester::held_out::HeldOutCheck,
        attempt: u32,
    ) -> Result<(), SwarmError> {
        let e = self.entry(
            Agent::Judge,
            Action::CodeAnalysis,
            format!(
                "held-out tests of {} on attempt {attempt} ({} required)",
                check.file, check.required
            ),
            check.describe(),
            Kind::Tool(ToolRun::HeldOut(crate::log::HeldOutRun {
                file: check.file.clone(),
                attempt: Some(attempt),
                failed: check.is_failed(),
                overfitted_to: check.overfitted_to.clone(),
                held_out: as_json(check),
            })),
        );
        self.write(e)
    }

    /// The literal answers an attempt added for the failing tests' inputs.
    pub fn literal_answers(
        &mut self,
        found: &crate::stage::judge::answers::HardCoded,
    ) -> Result<(), SwarmError> {
        let e = self.entry(
            Agent::Judge,
            Action::CodeAnalysis,
            format!(
                "literal answers for the failing tests' inputs in {} on attempt {}",
                found.file, found.attempt
            ),
            found.describe(),
            Kind::Tool(ToolRun::LiteralAnswers(crate::log::LiteralAnswersRun {
                file: found.file.clone(),
                attempt: found.attempt,
                answers: as_json(&found.answers),
            })),
        );
        self.write(e)
    }

    /// The reference made for a module that did not compile, or why none.
    pub fn syntax_repair(
        &mut self,
        file: &str,
        made: &Result<crate::stage::repair::Reference, String>,
        original: &str,
    ) -> Result<(), SwarmError> {
        let (repaired, how, diff) = match made {
            Ok(reference) => (
                true,
                reference.how.clone(),
                swarm_patch::unified_diff(file, original, &reference.text),
            ),
            Err(why) => (false, why.clone(), String::new()),
        };
        let output = if repaired {
            format!("{file}: reference made: {how}")
        } else {
            format!("{file}: no reference: {how}")
        };
        let e = self.entry(
            Agent::Judge,
            Action::CodeAnalysis,
            format!(
                "the smallest repair that lets {file} parse, kept as the reference its changes are compared with"
            ),
            output,
            Kind::Tool(ToolRun::SyntaxRepair(crate::log::SyntaxRepairRun {
                file: file.to_string(),
                repaired,
                how,
                diff,
            })),
        );
        self.write(e)
    }
}

/// The validation of generated (or held-out) tests, as the log holds it.
fn generated_json(generated: &crate::stage::tester::Generated) -> serde_json::Value {
    serde_json::json!({
        "file": generated.file,
        "test_file": generated.test_file,
        "kept": generated.kept(),
        "discarded": generated.discarded(),
        "note": generated.note,
        "file_steps": generated.file_steps,
        "tests": generated.tests,
        "seconds": generated.seconds,
    })
}
