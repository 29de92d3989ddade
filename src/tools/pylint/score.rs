//! The global score, recombined from per-file statistics exactly as one
//! pylint run over all the files computes it.
//!
//! pylint's score is `evaluation` (a Python expression of the configuration)
//! over the run's totals: statements and messages per kind. Both are sums
//! over files, so the score of many batches and cached files is the score of
//! one run. The default expression is computed here, in the same floating
//! point steps as Python, as pylint's json2 report does (`statement or 1`;
//! rounded to 2 places before pylint 4); any other expression is evaluated
//! by the interpreter under the sandbox.

use crate::tools::process::Ending;
use crate::tools::{LintKind, LintMessage, ToolError};

use super::pass::Linter;

/// pylint's default `evaluation` (the same in 2.17, 3.x and 4.x).
pub(super) const DEFAULT_EVALUATION: &str = "max(0, 0 if fatal else 10.0 - ((float(5 * error + warning + refactor + convention) / statement) * 10))";

/// Evaluates a configured expression over the totals given as JSON.
const EVALUATE_SCRIPT: &str =
    "import json, sys; print(repr(float(eval(sys.argv[1], {}, json.loads(sys.argv[2])))))";

/// The statistics the score is computed from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub(super) struct Totals {
    pub statement: u64,
    pub fatal: u64,
    pub error: u64,
    pub warning: u64,
    pub refactor: u64,
    pub convention: u64,
    pub info: u64,
}

impl Totals {
    /// Adds a file's statements and messages.
    pub(super) fn add(&mut self, statements: u64, messages: &[LintMessage]) {
        self.statement += statements;
        for m in messages {
            match m.kind {
                LintKind::Fatal => self.fatal += 1,
                LintKind::Error => self.error += 1,
                LintKind::Warning => self.warning += 1,
                LintKind::Refactor => self.refactor += 1,
                LintKind::Convention => self.convention += 1,
                LintKind::Info => self.info += 1,
                LintKind::Other => {}
            }
        }
    }

    /// The default expression, as Python computes it (`statement or 1`).
    fn default_score(&self) -> f64 {
        if self.fatal > 0 {
            return 0.0;
        }
        let weighted = (5 * self.error + self.warning + self.refactor + self.convention) as f64;
        let statement = self.statement.max(1) as f64;
        let note = 10.0 - ((weighted / statement) * 10.0);
        if note < 0.0 {
            0.0
        } else {
            note
        }
    }

    /// The totals as the variables of an evaluation expression.
    fn variables(&self) -> String {
        let mut with_one = *self;
        with_one.statement = self.statement.max(1);
        serde_json::to_string(&with_one).unwrap_or_default()
    }
}

/// The score of `totals` under `evaluation` (the default when `None`), the
/// way pylint `version` reports it. `Err` says why a configured expression
/// gave none.
pub(super) fn score(
    linter: &Linter<'_>,
    totals: &Totals,
    evaluation: Option<&str>,
) -> Result<Result<f64, String>, ToolError> {
    let note = match evaluation {
        Some(expr) if normalised(expr) != normalised(DEFAULT_EVALUATION) => {
            match evaluate(linter, expr, totals)? {
                Ok(note) => note,
                Err(why) => return Ok(Err(why)),
            }
        }
        _ => totals.default_score(),
    };
    let rounds = super::major_version(&linter.env.pylint_version).is_some_and(|m| m < 4);
    Ok(Ok(if rounds { round2(note) } else { note }))
}

/// Python's `round(x, 2)`: the nearest two-place decimal, ties to even,
/// read back as the nearest float.
fn round2(x: f64) -> f64 {
    format!("{x:.2}").parse().unwrap_or(x)
}

fn normalised(expr: &str) -> String {
    expr.split_whitespace().collect()
}

/// Evaluates a configured expression with the interpreter, under the sandbox.
fn evaluate(
    linter: &Linter<'_>,
    expr: &str,
    totals: &Totals,
) -> Result<Result<f64, String>, ToolError> {
    let cell = linter.sandbox.cell("pylint-score")?;
    let out = cell
        .command(&linter.env.python)
        .args(["-c", EVALUATE_SCRIPT, expr])
        .arg(totals.variables())
        .cwd(linter.root)
        .timeout(linter.timeout)
        .run(linter.cancel)
        .map_err(|source| ToolError::Run {
            command: "pylint score".to_string(),
            source,
        })?;
    if out.ending == Ending::Cancelled {
        return Err(ToolError::Cancelled);
    }
    Ok(match out.stdout.trim().parse::<f64>() {
        Ok(note) if out.ending == Ending::Exited(0) => Ok(note),
        _ => Err(format!(
            "the configured evaluation `{expr}` gave no score: {}",
            crate::tools::env::last_line(&out.combined())
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(statement: u64, error: u64, warning: u64, convention: u64) -> Totals {
        Totals {
            statement,
            error,
            warning,
            convention,
            ..Totals::default()
        }
    }

    #[test]
    fn the_default_expression_matches_python() {
        // Values Python gives for the same expression.
        assert_eq!(totals(16, 0, 0, 4).default_score(), 7.5);
        assert_eq!(totals(7, 0, 2, 3).default_score(), 2.8571428571428568);
        assert_eq!(totals(3, 1, 0, 0).default_score(), 0.0);
        assert_eq!(totals(0, 0, 0, 0).default_score(), 10.0);
        let fatal = Totals {
            fatal: 1,
            ..totals(100, 0, 0, 0)
        };
        assert_eq!(fatal.default_score(), 0.0);
    }

    #[test]
    fn rounding_is_pythons() {
        assert_eq!(round2(2.857142857142857), 2.86);
        assert_eq!(round2(7.125), 7.12);
        assert_eq!(round2(7.135), 7.13);
        assert_eq!(round2(10.0), 10.0);
    }

    #[test]
    fn messages_count_by_kind() {
        let message = |kind: &str| LintMessage {
            path: "a.py".into(),
            line: 1,
            column: 0,
            kind: kind.into(),
            symbol: String::new(),
            message_id: String::new(),
            message: String::new(),
        };
        let mut t = Totals::default();
        t.add(
            4,
            &[message("error"), message("info"), message("convention")],
        );
        t.add(2, &[message("fatal")]);
        assert_eq!(
            t,
            Totals {
                statement: 6,
                fatal: 1,
                error: 1,
                info: 1,
                convention: 1,
                ..Totals::default()
            }
        );
        assert_eq!(
            t.variables(),
            r#"{"statement":6,"fatal":1,"error":1,"warning":0,"refactor":0,"convention":1,"info":1}"#
        );
    }
}
