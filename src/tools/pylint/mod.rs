//! Running pylint under the sandbox, in batches and from a cache, and
//! putting one [`LintReport`] together.
//!
//! pylint runs through a small driver ([`DRIVER`], `driver.py`) that calls
//! pylint's own `Run` (so the user's configuration applies) and reports each
//! file's statements and messages: the score recombines exactly from them
//! ([`score`]), however the files were split. The steps:
//!
//! 1. every file gets a cache key ([`cache`]); a file whose key is in the
//!    [`LintCache`] is not linted again, a file skipped earlier in the process
//!    and unchanged is not tried again ([`slow`]);
//! 2. the rest is cut into batches ([`batch`]; one batch when the set is
//!    small) and linted, several `--jobs=1` processes at once, each in its
//!    own sandbox cell under the timeout; a batch that does not finish is
//!    split to find the files that keep pylint busy ([`slow`]);
//! 3. results go into the cache; messages are put together file by file
//!    and the score computed over every file linted now or before.
//!
//! Cross-file checks (`duplicate-code`, `cyclic-import`) only see the files
//! of one batch, and a cached result keeps the cross-file messages pylint put
//! on that file. Messages no file carries (configuration problems) are
//! counted once, as in one run.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::process::cap_text;
use super::{LintMessage, LintReport, LintSettings, PythonEnv, Sandbox, SkippedLint, ToolError};
use crate::cancel::Cancel;

mod batch;
mod cache;
mod deps;
mod digest;
mod import_memo;
mod pass;
mod score;
mod slow;

use cache::{Entry, FileFacts, Keys};
pub use cache::{KnownContent, LintCache, MAX_DISK_BYTES, MAX_DISK_ENTRIES};
use pass::Linter;

/// The driver script (see its docstring).
pub(crate) const DRIVER: &str = include_str!("driver.py");

/// What one lint is over: the files (relative to `root`), and what is
/// known of their content without reading them.
#[derive(Clone, Copy, Debug)]
pub struct LintTarget<'a> {
    pub root: &'a Path,
    pub files: &'a [String],
    pub known: Option<&'a KnownContent>,
}

/// At most this many files per pylint process by default.
pub const BATCH_FILES: usize = 200;

/// At most this many bytes of source per pylint process by default: about
/// ten seconds of pylint on ordinary code, well within the default timeout.
pub const BATCH_BYTES: u64 = 256 * 1024;

/// How much of the report's text the log keeps.
pub const LINT_OUTPUT_CAP: usize = 16 * 1024;

/// How many skipped files (and batches that did not finish) get a note
/// each; the rest are counted in one.
const NOTED_SKIPS: usize = 10;

pub(super) fn run(
    env: &PythonEnv,
    sandbox: &Sandbox,
    target: LintTarget<'_>,
    settings: &LintSettings,
    cache: &LintCache,
    cancel: &Cancel,
) -> Result<LintReport, ToolError> {
    let started = Instant::now();
    let LintTarget { root, files, known } = target;
    let linter = Linter {
        env,
        sandbox,
        root,
        timeout: settings.timeout,
        cancel,
    };
    if files.is_empty() {
        // pylint without files is a usage error; nothing to lint is no message.
        return Ok(LintReport {
            command: linter.command_line(files),
            ..LintReport::default()
        });
    }
    let absolute_root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let keys = Keys::new(env, &absolute_root, &sandbox.boundary_of(root));
    let mut lint = Lint::look_up(
        &linter,
        cache,
        files,
        keys.files(root, files, known, &mut cache.imports()),
        keys.general(),
    );
    let pending: Vec<(String, u64)> = lint
        .todo
        .iter()
        .map(|&i| (files[i].clone(), lint.facts[i].size(root, &files[i])))
        .collect();
    let mut report = LintReport {
        command: linter.command_line(&pending.iter().map(|(f, _)| f.clone()).collect::<Vec<_>>()),
        from_cache: lint.results.iter().filter(|r| r.is_some()).count(),
        ..LintReport::default()
    };
    let budget = slow::Budget::new(slow::MAX_EXTRA_RUNS);
    let outcomes = batch::run(
        &linter,
        &batch::plan(&pending, settings),
        settings.processes,
        &budget,
    )?;
    let stderr = lint.absorb(outcomes, cache, &mut report);
    lint.put_together(&linter, &mut report)?;
    report.seconds = slow::round_ms(started.elapsed());
    report.output = output(&report, settings, &stderr);
    Ok(report)
}

/// One lint being put together: what each file gave, from the cache or a
/// pylint run.
struct Lint<'f> {
    files: &'f [String],
    facts: Vec<FileFacts>,
    /// Each file's result, once known.
    results: Vec<Option<Arc<Entry>>>,
    /// The messages no file carries, once known.
    general: Option<Entry>,
    general_key: String,
    skipped: Vec<SkippedLint>,
    /// The files pylint has to run over, by index.
    todo: Vec<usize>,
}

impl<'f> Lint<'f> {
    /// Takes what the cache holds and what is known slow; the rest is to do.
    fn look_up(
        linter: &Linter<'_>,
        cache: &LintCache,
        files: &'f [String],
        facts: Vec<FileFacts>,
        general_key: String,
    ) -> Self {
        let mut lint = Lint {
            files,
            results: vec![None; files.len()],
            general: cache.get(&general_key).map(|e| (*e).clone()),
            general_key,
            skipped: Vec::new(),
            todo: Vec::new(),
            facts,
        };
        for (i, file) in files.iter().enumerate() {
            if let Some(skip) = slow::known_skip(linter, file) {
                lint.skipped.push(skip);
            } else if let Some(hit) = lint.facts[i].key.as_deref().and_then(|k| cache.get(k)) {
                lint.results[i] = Some(hit);
            } else {
                lint.todo.push(i);
            }
        }
        if lint.todo.is_empty() && lint.general.is_none() {
            // The messages no file carries were not kept: one file runs again for them.
            if let Some(i) = lint.results.iter().position(Option::is_some) {
                lint.results[i] = None;
                lint.todo.push(i);
            }
        }
        lint
    }

    /// Takes in what the batches found, keeping it in the cache; the
    /// batches' stderr, for the log.
    fn absorb(
        &mut self,
        outcomes: Vec<slow::BatchOutcome>,
        cache: &LintCache,
        report: &mut LintReport,
    ) -> String {
        let index: HashMap<&str, usize> = self
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.as_str(), i))
            .collect();
        let mut stderr = String::new();
        let mut wrote = false;
        for outcome in outcomes {
            for found in outcome.found {
                wrote = true;
                for (file, entry) in found.files {
                    let Some(&i) = index.get(file.as_str()) else {
                        continue;
                    };
                    if let Some(key) = &self.facts[i].key {
                        cache.put(key, entry.clone());
                    }
                    self.results[i] = Some(Arc::new(entry));
                    report.linted += 1;
                }
                let general = self.general.get_or_insert_with(|| Entry {
                    evaluation: found.general.evaluation.clone(),
                    ..Entry::default()
                });
                merge_general(general, found.general);
                if !found.stderr.trim().is_empty() {
                    stderr.push_str(found.stderr.trim_end());
                    stderr.push('\n');
                }
            }
            self.skipped.extend(outcome.skipped);
            report.notes.extend(outcome.notes);
            report.batches.extend(outcome.runs);
        }
        if report.notes.len() > NOTED_SKIPS {
            let more = report.notes.len() - NOTED_SKIPS;
            report.notes.truncate(NOTED_SKIPS);
            report.notes.push(format!(
                "pylint did not finish {more} more batch(es) within the timeout either"
            ));
        }
        if wrote {
            if let Some(general) = &self.general {
                cache.put(&self.general_key, general.clone());
            }
            cache.prune(MAX_DISK_BYTES, MAX_DISK_ENTRIES);
        }
        stderr
    }

    /// The messages (those no file carries first, then file by file) and
    /// the score over every file with a result, and the skipped files.
    fn put_together(self, linter: &Linter<'_>, report: &mut LintReport) -> Result<(), ToolError> {
        let general = self.general.unwrap_or_default();
        let mut totals = score::Totals::default();
        let mut evaluation = general.evaluation.clone();
        for entry in std::iter::once(&general).chain(self.results.iter().flatten().map(|e| &**e)) {
            totals.add(entry.statements, &entry.messages);
            report.messages.extend(entry.notices.iter().cloned());
            report.messages.extend(entry.messages.iter().cloned());
            evaluation = evaluation.or_else(|| entry.evaluation.clone());
        }
        if self.results.iter().any(Option::is_some) {
            match score::score(linter, &totals, evaluation.as_deref())? {
                Ok(score) => report.score = Some(score),
                Err(why) => report.notes.push(why),
            }
        }
        note_skips(report, self.skipped, self.files.len());
        Ok(())
    }
}

/// Adds a batch's messages that no file carries to those of the others:
/// every batch gives the configuration's problems, one run gives them once.
fn merge_general(into: &mut Entry, from: Entry) {
    for message in from.messages {
        if !into.messages.contains(&message) {
            into.messages.push(message);
        }
    }
    for notice in from.notices {
        if !into.notices.contains(&notice) {
            into.notices.push(notice);
        }
    }
}

/// Adds the skipped files, with a note for each of the first few.
fn note_skips(report: &mut LintReport, skipped: Vec<SkippedLint>, total: usize) {
    for skip in skipped.iter().take(NOTED_SKIPS) {
        report.notes.push(format!(
            "skipped the lint of {}: {}",
            skip.path, skip.reason
        ));
    }
    if skipped.len() > NOTED_SKIPS {
        report.notes.push(format!(
            "skipped the lint of {} more file(s) for the same reasons",
            skipped.len() - NOTED_SKIPS
        ));
    }
    if !skipped.is_empty() && skipped.len() == total {
        report
            .notes
            .push("every file was skipped: no pylint score this time".to_string());
    }
    report.skipped = skipped;
}

/// The text for the log: a summary line, every message as pylint's text
/// format writes it, pylint's stderr and the notes, capped.
fn output(report: &LintReport, settings: &LintSettings, stderr: &str) -> String {
    let mut text = format!(
        "[swarm] {} file(s) linted in {} pylint run(s) (batches of up to {} files, {} at once), {} from the cache, {} skipped, {:.1}s\n",
        report.linted,
        report.batches.len(),
        settings.batch_files,
        settings.processes,
        report.from_cache,
        report.skipped.len(),
        report.seconds,
    );
    for m in &report.messages {
        text.push_str(&message_line(m));
        text.push('\n');
    }
    if let Some(score) = report.score {
        text.push_str(&format!("Your code has been rated at {score:.2}/10\n"));
    }
    text.push_str(stderr);
    let mut text = cap_text(&text, LINT_OUTPUT_CAP);
    for note in &report.notes {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[swarm] {note}"));
    }
    text
}

/// `pkg/a.py:3:0: W0611: Unused import os (unused-import)`.
fn message_line(m: &LintMessage) -> String {
    format!(
        "{}:{}:{}: {}: {} ({})",
        m.path, m.line, m.column, m.message_id, m.message, m.symbol
    )
}

/// The major version of a `4.1.4`-style version.
fn major_version(version: &str) -> Option<u32> {
    version.split('.').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_major_version() {
        assert_eq!(major_version("4.1.4"), Some(4));
        assert_eq!(major_version("2.17.7"), Some(2));
    }

    #[test]
    fn many_skips_are_counted_in_one_note() {
        let skipped: Vec<SkippedLint> = (0..25)
            .map(|i| SkippedLint {
                path: format!("m{i}.py"),
                reason: "slow".into(),
            })
            .collect();
        let mut report = LintReport::default();
        note_skips(&mut report, skipped, 30);
        assert_eq!(report.notes.len(), 11);
        assert_eq!(
            report.notes[10],
            "skipped the lint of 15 more file(s) for the same reasons"
        );
        assert_eq!(report.skipped.len(), 25);
    }
}
