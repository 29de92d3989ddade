//! One batch, and what to do when pylint does not finish it within its
//! timeout: find the files that keep it busy, skip their lint with a note,
//! keep the lint of the rest.
//!
//! A set that did not finish is split in halves, each run again (each run
//! bounded by the same timeout, every run honouring the cancel flag), until
//! single files are found; every half that finishes keeps its results, since
//! the score is recombined file by file. The searches of all batches share
//! [`MAX_EXTRA_RUNS`] runs; once they are spent, the files of a set that did
//! not finish are skipped as undetermined: a batch that times out costs that
//! batch's lint, never the run.
//!
//! A skipped file is remembered for the rest of the process, keyed by the
//! interpreter, its path, its content and the timeout, so a Judge that lints
//! the same file on every attempt neither waits for it again nor scores it
//! differently from the baseline.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::pass::{seconds, Found, Linter, Pass};
use crate::tools::{LintBatch, SkippedLint, ToolError};

/// How many pylint runs the searches for slow files may add, in all.
pub(super) const MAX_EXTRA_RUNS: usize = 16;

/// Files skipped so far in this process, by memo key: whether each was
/// singled out (slow by itself) rather than undetermined.
static KNOWN_SLOW: Mutex<BTreeMap<String, bool>> = Mutex::new(BTreeMap::new());

/// The runs the searches may still spend.
pub(super) struct Budget(AtomicUsize);

impl Budget {
    pub(super) fn new(runs: usize) -> Self {
        Self(AtomicUsize::new(runs))
    }

    /// Takes one run; `false` when none is left.
    fn take(&self) -> bool {
        self.0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// What linting one batch gave.
#[derive(Debug, Default)]
pub(super) struct BatchOutcome {
    /// One report per pylint run that finished.
    pub found: Vec<Found>,
    pub skipped: Vec<SkippedLint>,
    pub notes: Vec<String>,
    /// Every pylint run, in order.
    pub runs: Vec<LintBatch>,
}

/// Lints one batch, splitting it when pylint does not finish it.
pub(super) fn lint_batch(
    linter: &Linter<'_>,
    files: &[String],
    budget: &Budget,
) -> Result<BatchOutcome, ToolError> {
    let mut outcome = BatchOutcome::default();
    if run_set(linter, files, &mut outcome)? {
        return Ok(outcome);
    }
    let why = &outcome.runs[0].outcome;
    outcome.notes.push(format!(
        "pylint {why} on {} file(s): looking for the files that keep it busy",
        files.len()
    ));
    split(linter, files, budget, &mut outcome)?;
    Ok(outcome)
}

/// One run over `files`, recorded in `outcome`; `true` when it finished.
fn run_set(
    linter: &Linter<'_>,
    files: &[String],
    outcome: &mut BatchOutcome,
) -> Result<bool, ToolError> {
    let (outcome_text, took, found) = match linter.pass(files)? {
        Pass::Done(found, took) => ("linted".to_string(), took, Some(found)),
        Pass::Unfinished { why, took } => (why, took, None),
    };
    outcome.runs.push(LintBatch {
        files: files.len(),
        seconds: round_ms(took),
        outcome: outcome_text,
    });
    Ok(match found {
        Some(found) => {
            outcome.found.push(found);
            true
        }
        None => false,
    })
}

/// Finds the files of `files` (which did not finish as a whole) that keep
/// pylint busy, keeping the results of the parts that finish.
fn split(
    linter: &Linter<'_>,
    files: &[String],
    budget: &Budget,
    outcome: &mut BatchOutcome,
) -> Result<(), ToolError> {
    let timeout = seconds(linter.timeout);
    if let [file] = files {
        remember(linter, file, true);
        outcome.skipped.push(SkippedLint {
            path: file.clone(),
            reason: format!("pylint did not finish it within {timeout}"),
        });
        return Ok(());
    }
    let (left, right) = files.split_at(files.len() / 2);
    for half in [left, right] {
        if !budget.take() {
            for file in half {
                remember(linter, file, false);
                outcome.skipped.push(SkippedLint {
                    path: file.clone(),
                    reason: format!(
                        "not linted: pylint did not finish within {timeout} on a set holding it, and the search for the slow file ran out of runs"
                    ),
                });
            }
            continue;
        }
        if !run_set(linter, half, outcome)? {
            split(linter, half, budget, outcome)?;
        }
    }
    Ok(())
}

/// Seconds, to the millisecond.
pub(super) fn round_ms(duration: Duration) -> f64 {
    duration.as_millis() as f64 / 1000.0
}

/// Why `file` is skipped without a run, when an earlier run of this process
/// skipped it and it has not changed.
pub(super) fn known_skip(linter: &Linter<'_>, file: &str) -> Option<SkippedLint> {
    // Nearly always nothing is known slow: then no file is read and hashed.
    if KNOWN_SLOW.lock().map_or(true, |known| known.is_empty()) {
        return None;
    }
    let key = memo_key(linter, file)?;
    let singled_out = *KNOWN_SLOW.lock().ok()?.get(&key)?;
    let timeout = seconds(linter.timeout);
    let reason = if singled_out {
        format!(
            "pylint did not finish it within {timeout} on an earlier run, and it has not changed"
        )
    } else {
        format!("not linted on an earlier run (pylint did not finish within {timeout} on a set holding it), and it has not changed")
    };
    Some(SkippedLint {
        path: file.to_string(),
        reason,
    })
}

/// The memo key of `file` for this linter, when the file can be read.
fn memo_key(linter: &Linter<'_>, file: &str) -> Option<String> {
    let content = std::fs::read(linter.root.join(file)).ok()?;
    let mut hash = Sha256::new();
    hash.update(linter.env.python.as_os_str().as_encoded_bytes());
    hash.update([0]);
    hash.update(file.as_bytes());
    hash.update([0]);
    hash.update(linter.timeout.as_millis().to_le_bytes());
    hash.update(&content);
    Some(hex::encode(hash.finalize()))
}

fn remember(linter: &Linter<'_>, file: &str, singled_out: bool) {
    if let (Some(key), Ok(mut known)) = (memo_key(linter, file), KNOWN_SLOW.lock()) {
        known.insert(key, singled_out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_runs_out() {
        let budget = Budget::new(2);
        assert!(budget.take());
        assert!(budget.take());
        assert!(!budget.take());
    }
}
