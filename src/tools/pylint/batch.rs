//! Cutting the files to lint into batches and running the batches, several
//! pylint processes at once.
//!
//! Batches keep the order of the files (a package's modules stay together,
//! which is what pylint's cross-file checks see) and are evenly sized within
//! the bounds; a set within the bounds is one batch. At most
//! [`LintSettings::processes`] processes run at once, never more than there
//! are batches; each takes the next batch when it is done. An error (a
//! crash, a cancel) stops the others from starting new batches and is the
//! result.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::pass::Linter;
use super::slow::{self, BatchOutcome, Budget};
use crate::tools::{LintSettings, ToolError};

/// Cuts `files` (name, bytes) into batches of at most `settings.batch_files`
/// files and `settings.batch_bytes` bytes (a larger file alone), in order.
pub(super) fn plan(files: &[(String, u64)], settings: &LintSettings) -> Vec<Vec<String>> {
    if files.is_empty() {
        return Vec::new();
    }
    let max_files = settings.batch_files.max(1);
    let max_bytes = settings.batch_bytes.max(1);
    let total_bytes: u64 = files.iter().map(|(_, b)| b).sum();
    let count = files
        .len()
        .div_ceil(max_files)
        .max(total_bytes.div_ceil(max_bytes) as usize)
        .max(1);
    let per_batch = files.len().div_ceil(count);
    let mut batches = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut bytes = 0;
    for (name, size) in files {
        if !current.is_empty() && (current.len() >= per_batch || bytes + size > max_bytes) {
            batches.push(std::mem::take(&mut current));
            bytes = 0;
        }
        current.push(name.clone());
        bytes += size;
    }
    batches.push(current);
    batches
}

/// Lints every batch, `processes` at a time; the outcomes in batch order.
pub(super) fn run(
    linter: &Linter<'_>,
    batches: &[Vec<String>],
    processes: usize,
    budget: &Budget,
) -> Result<Vec<BatchOutcome>, ToolError> {
    let workers = processes.clamp(1, batches.len().max(1));
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let results: Mutex<Vec<Option<Result<BatchOutcome, ToolError>>>> =
        Mutex::new(batches.iter().map(|_| None).collect());
    let work = || loop {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let i = next.fetch_add(1, Ordering::SeqCst);
        let Some(batch) = batches.get(i) else {
            break;
        };
        let result = slow::lint_batch(linter, batch, budget);
        if result.is_err() {
            stop.store(true, Ordering::SeqCst);
        }
        if let Ok(mut results) = results.lock() {
            results[i] = Some(result);
        }
    };
    if workers == 1 {
        work();
    } else {
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(work);
            }
        });
    }
    let results = results.into_inner().map_err(|_| ToolError::Failed {
        command: "pylint".into(),
        message: "a thread running pylint panicked".into(),
    })?;
    // A cancel wins over other errors: it is why the others stopped.
    let mut outcomes = Vec::with_capacity(results.len());
    let mut error = None;
    for result in results.into_iter().flatten() {
        match result {
            Ok(outcome) => outcomes.push(outcome),
            Err(ToolError::Cancelled) => return Err(ToolError::Cancelled),
            Err(e) => {
                error.get_or_insert(e);
            }
        }
    }
    match error {
        Some(e) => Err(e),
        None => Ok(outcomes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn settings(files: usize, bytes: u64) -> LintSettings {
        LintSettings {
            timeout: Duration::from_secs(30),
            batch_files: files,
            batch_bytes: bytes,
            processes: 2,
        }
    }

    fn sized(sizes: &[u64]) -> Vec<(String, u64)> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &b)| (format!("m{i}.py"), b))
            .collect()
    }

    fn shape(batches: &[Vec<String>]) -> Vec<usize> {
        batches.iter().map(Vec::len).collect()
    }

    #[test]
    fn a_set_within_the_bounds_is_one_batch() {
        assert_eq!(shape(&plan(&sized(&[10; 5]), &settings(200, 1000))), [5]);
        assert!(plan(&[], &settings(200, 1000)).is_empty());
    }

    #[test]
    fn batches_are_even_and_keep_the_order() {
        let batches = plan(&sized(&[1; 250]), &settings(200, 1_000_000));
        assert_eq!(shape(&batches), [125, 125]);
        let flat: Vec<String> = batches.concat();
        let expected: Vec<String> = (0..250).map(|i| format!("m{i}.py")).collect();
        assert_eq!(flat, expected);
    }

    #[test]
    fn bytes_bound_a_batch_and_a_large_file_stands_alone() {
        assert_eq!(
            shape(&plan(&sized(&[40, 40, 40, 40]), &settings(200, 100))),
            [2, 2]
        );
        assert_eq!(
            shape(&plan(&sized(&[10, 500, 10]), &settings(200, 100))),
            [1, 1, 1]
        );
    }
}
