//! Literal answers for the failing tests' inputs: a change that makes the
//! tests pass by answering their inputs with literals (`if a == 35 and
//! b == 21: return 7`, a table keyed by them) has not fixed what they test.
//! The held-out tests catch it when the model wrote some that held; this
//! static check does when it wrote none. What counts as an answer is
//! `swarm_analysis::literal_answers`'s; what it means for the verdict is
//! `pipeline::bar`'s.

use serde::Serialize;
use swarm_analysis::LiteralAnswer;

/// The literal answers one attempt added to one module.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HardCoded {
    /// The module (target-relative).
    pub file: String,
    pub attempt: u32,
    pub answers: Vec<LiteralAnswer>,
}

impl HardCoded {
    /// The answers as `gcd(35, 21) → 7, gcd(300, 42) → 6`.
    pub fn answers_text(&self) -> String {
        self.answers
            .iter()
            .map(|a| format!("{} → {}", a.call, a.answer))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// One line for the summary and the log.
    pub fn describe(&self) -> String {
        format!(
            "{} hard-codes the tests' inputs ({}): not verified, not kept",
            self.file,
            self.answers_text()
        )
    }

    /// What the Fixer is told.
    pub fn fixer_note(&self) -> String {
        format!(
            "{} answers the failing tests' inputs with literals ({}): that is not a fix; \
             fix the code so it is right for every input",
            self.file,
            self.answers_text()
        )
    }
}

/// The literal answers `after` (the attempt's text of `file`) adds to
/// `before` (its text at the best state) for the inputs of `tests` (the
/// failing tests' code); `None` when it adds none.
pub fn hard_coded(
    file: &str,
    attempt: u32,
    (before, after): (&str, &str),
    tests: &[String],
) -> Option<HardCoded> {
    let tests: Vec<&str> = tests.iter().map(String::as_str).collect();
    let answers = swarm_analysis::literal_answers(before, after, &tests);
    (!answers.is_empty()).then(|| HardCoded {
        file: file.to_string(),
        attempt,
        answers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_line_names_the_file_and_each_answer() {
        let before = "def gcd(a, b):\n    return gcd(a % b, b) if b else a\n";
        let after = "def gcd(a, b):\n    if a == 35 and b == 21:\n        return 7\n    return gcd(a % b, b) if b else a\n";
        let tests = vec!["def test_gcd():\n    assert gcd(35, 21) == 7\n".to_string()];
        let found = hard_coded("gcd.py", 2, (before, after), &tests).expect("found");
        assert_eq!(
            found.describe(),
            "gcd.py hard-codes the tests' inputs (gcd(35, 21) → 7): not verified, not kept"
        );
        assert!(hard_coded("gcd.py", 2, (before, before), &tests).is_none());
    }
}
