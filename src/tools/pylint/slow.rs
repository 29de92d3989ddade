//! What to do when pylint does not finish within its timeout: find the
//! files that keep it busy, skip their lint with a note, lint the rest.
//!
//! The files are bisected: each half of a set that did not finish is run
//! again (each run bounded by the same timeout, every run honouring the
//! cancel flag) until single files are found; at most [`MAX_EXTRA_RUNS`]
//! runs are spent, after which the files not yet cleared are skipped as
//! undetermined. The remaining files are then linted in one run for the
//! score. If even that does not finish (a set slow only as a whole), the
//! report has no score and says so — never an error that ends the run.
//!
//! A file found slow is remembered for the rest of the process, keyed by
//! the interpreter, its path, its content and the timeout, so a Judge that
//! lints the same file on every attempt does not bisect again.

use std::collections::BTreeSet;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use super::{Linter, Pass};
use crate::tools::{LintReport, SkippedLint, ToolError};

/// How many pylint runs the search for slow files may add.
pub(super) const MAX_EXTRA_RUNS: usize = 12;

/// Files found slow so far in this process (see the module docs).
static KNOWN_SLOW: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Lints `files`, skipping those pylint cannot finish within the timeout.
pub(super) fn lint(linter: &mut Linter<'_>, files: &[String]) -> Result<LintReport, ToolError> {
    let timeout = seconds(linter.timeout);
    let (mut candidates, known): (Vec<String>, Vec<String>) = files
        .iter()
        .cloned()
        .partition(|f| !is_known_slow(linter, f));
    let mut skipped: Vec<SkippedLint> = known
        .into_iter()
        .map(|path| SkippedLint {
            path,
            reason: format!(
                "pylint did not finish it within {timeout} on an earlier run, and it has not changed"
            ),
        })
        .collect();
    let mut notes = Vec::new();
    let mut command = linter.command_line(files);
    if !candidates.is_empty() {
        match linter.pass(&candidates)? {
            Pass::Done(report) => return Ok(finish(report, skipped, notes)),
            Pass::Unfinished { command: ran, why } => {
                command = ran;
                notes.push(format!(
                    "pylint {why} on {} file(s): looking for the files that keep it busy",
                    candidates.len()
                ));
                let mut budget = MAX_EXTRA_RUNS;
                for slow in bisect(linter, &candidates, &mut budget)? {
                    if slow.singled_out {
                        remember_slow(linter, &slow.lint.path);
                    }
                    skipped.push(slow.lint);
                }
                candidates.retain(|f| !skipped.iter().any(|s| &s.path == f));
            }
        }
        if !candidates.is_empty() {
            match linter.pass(&candidates)? {
                Pass::Done(report) => return Ok(finish(report, skipped, notes)),
                Pass::Unfinished { command: ran, why } => {
                    command = ran;
                    notes.push(format!(
                        "pylint {why} on the remaining {} file(s) as well: no score this time",
                        candidates.len()
                    ));
                }
            }
        }
    }
    let mut report = finish(
        LintReport {
            command,
            ..LintReport::default()
        },
        skipped,
        notes,
    );
    if report.skipped.len() == files.len() {
        add_note(
            &mut report,
            "every file was skipped: no pylint score this time".to_string(),
        );
    }
    Ok(report)
}

/// A skipped file, and whether it was singled out (slow by itself) rather
/// than left undetermined when the run budget ran out.
struct Slow {
    lint: SkippedLint,
    singled_out: bool,
}

/// The files of `files` (which did not finish as a whole) that keep pylint
/// busy, spending at most `budget` runs.
fn bisect(
    linter: &mut Linter<'_>,
    files: &[String],
    budget: &mut usize,
) -> Result<Vec<Slow>, ToolError> {
    let timeout = seconds(linter.timeout);
    if let [file] = files {
        return Ok(vec![Slow {
            lint: SkippedLint {
                path: file.clone(),
                reason: format!("pylint did not finish it within {timeout}"),
            },
            singled_out: true,
        }]);
    }
    let (left, right) = files.split_at(files.len() / 2);
    let mut found = Vec::new();
    for half in [left, right] {
        if *budget == 0 {
            found.extend(half.iter().map(|f| Slow {
                lint: SkippedLint {
                    path: f.clone(),
                    reason: format!(
                        "not linted: pylint did not finish within {timeout} on a set holding it, and the search for the slow file ran out of runs"
                    ),
                },
                singled_out: false,
            }));
            continue;
        }
        *budget -= 1;
        if let Pass::Unfinished { .. } = linter.pass(half)? {
            found.extend(bisect(linter, half, budget)?);
        }
    }
    Ok(found)
}

/// Adds the skipped files and notes to a report.
fn finish(mut report: LintReport, skipped: Vec<SkippedLint>, notes: Vec<String>) -> LintReport {
    for note in notes {
        add_note(&mut report, note);
    }
    for skip in &skipped {
        add_note(
            &mut report,
            format!("skipped the lint of {}: {}", skip.path, skip.reason),
        );
    }
    report.skipped = skipped;
    report
}

/// Adds a note to the report and to its output for the log.
fn add_note(report: &mut LintReport, note: String) {
    if !report.output.is_empty() {
        report.output.push('\n');
    }
    report.output.push_str(&format!("[swarm] {note}"));
    report.notes.push(note);
}

/// `30s`, or `0.05s` below a second.
pub(super) fn seconds(duration: std::time::Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{}s", duration.as_secs())
    } else {
        let text = format!("{:.3}", duration.as_secs_f64());
        format!("{}s", text.trim_end_matches('0').trim_end_matches('.'))
    }
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

fn is_known_slow(linter: &Linter<'_>, file: &str) -> bool {
    // Nearly always nothing is known slow: then no file is read and hashed.
    if KNOWN_SLOW.lock().map_or(true, |known| known.is_empty()) {
        return false;
    }
    let Some(key) = memo_key(linter, file) else {
        return false;
    };
    KNOWN_SLOW
        .lock()
        .map(|known| known.contains(&key))
        .unwrap_or(false)
}

fn remember_slow(linter: &Linter<'_>, file: &str) {
    if let (Some(key), Ok(mut known)) = (memo_key(linter, file), KNOWN_SLOW.lock()) {
        known.insert(key);
    }
}
