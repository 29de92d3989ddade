//! Reads one run's entries back from the experiment log.
//!
//! The log is streamed once, one element at a time: each element is first
//! read as raw JSON, glanced at for its run and whether it starts it
//! ([`Glance`]), and parsed in full (as a [`crate::log::Entry`]) only when
//! it belongs to the wanted run, so a long log of many runs costs one pass
//! and little memory. A log cut short (a crash, or another run appending at
//! this moment) yields its complete entries. This module only reads; it
//! never writes or repairs the log (`crate::log` does).

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use serde::de::{SeqAccess, Visitor};
use serde::Deserializer as _;
use serde_json::value::RawValue;

use crate::log::{Entry, Glance};

/// Errors reading the log for a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("there is no experiment log at {path}: run swarm first, or pass --log-file")]
    NoLog { path: PathBuf },
    #[error("cannot read the experiment log {path}: {source} (fix its permissions or pass another --log-file)")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the experiment log {path} is not a JSON array of entries ({message}); the next swarm run repairs it")]
    NotALog { path: PathBuf, message: String },
    #[error("no run matches '{run}' in {path}: `swarm log` lists the runs, `swarm report` alone shows the newest")]
    UnknownRun { run: String, path: PathBuf },
    #[error("'{run}' matches several runs in {path} ({matches}): give more of the run id")]
    AmbiguousRun {
        run: String,
        path: PathBuf,
        matches: String,
    },
    #[error("the experiment log {path} holds no run yet: run swarm first")]
    NoRuns { path: PathBuf },
    #[error("cannot write the report {path}: {source} (fix the folder's permissions or pass another --log-file)")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What one pass over the log found.
#[derive(Debug, Default)]
pub(crate) struct Scanned {
    /// Run ids in the order their runs started (each once).
    pub runs: Vec<String>,
    /// The wanted run's entries, in log order.
    pub entries: Vec<Entry>,
}

/// Collects as it goes, so that what was read survives a log cut short.
struct Collect<'a> {
    want: Option<&'a str>,
    out: &'a mut Scanned,
}

impl<'de> Visitor<'de> for Collect<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON array of log entries")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(raw) = seq.next_element::<Box<RawValue>>()? {
            // An element that is not an entry (a foreign tool's) is skipped.
            let Some(glance) = Glance::of(raw.get().as_bytes()) else {
                continue;
            };
            let Some(run_id) = glance.run_id else {
                continue;
            };
            if glance.starts_run && !self.out.runs.contains(&run_id) {
                self.out.runs.push(run_id.clone());
            }
            if self.want == Some(run_id.as_str()) {
                if let Ok(entry) = serde_json::from_str(raw.get()) {
                    self.out.entries.push(entry);
                }
            }
        }
        Ok(())
    }
}

/// The log at `path`, opened for reading.
fn open_log(path: &Path) -> Result<File, ReportError> {
    File::open(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => ReportError::NoLog {
            path: path.to_path_buf(),
        },
        _ => ReportError::Read {
            path: path.to_path_buf(),
            source,
        },
    })
}

/// Reads the log at `path`: every run id, and the entries of `want`.
pub(crate) fn scan(path: &Path, want: Option<&str>) -> Result<Scanned, ReportError> {
    let file = open_log(path)?;
    let mut out = Scanned::default();
    let mut de = serde_json::Deserializer::from_reader(BufReader::new(file));
    let read = de.deserialize_seq(Collect {
        want,
        out: &mut out,
    });
    match read {
        Ok(()) => Ok(out),
        // Cut short by a crash, or another run appending right now: the
        // complete entries are what there is.
        Err(e) if e.is_eof() => Ok(out),
        Err(e) if e.is_io() => Err(ReportError::Read {
            path: path.to_path_buf(),
            source: e.into(),
        }),
        Err(e) => Err(ReportError::NotALog {
            path: path.to_path_buf(),
            message: e.to_string(),
        }),
    }
}

/// How much of the log [`scan_back`] reads at a time, from its end.
const BACK_CHUNK: u64 = 64 * 1024;

/// The entries of `run`, read from the end of the log backwards until its
/// `run_start`: the run that just ended appended its entries last, so its
/// report reads them (and any another run appended meanwhile), not the
/// whole history. Each entry is one line of the file as swarm appends it.
/// `None` when no `run_start` of `run` is found that way (a start moved
/// aside by a repair, a log written by hand): then only [`scan`] can tell.
pub(crate) fn scan_back(path: &Path, run: &str) -> Result<Option<Vec<Entry>>, ReportError> {
    use std::os::unix::fs::FileExt;
    let read_error = |source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = open_log(path)?;
    let mut pos = file.metadata().map_err(read_error)?.len();
    let mut found: Vec<Entry> = Vec::new();
    // The bytes after the last newline seen: the end of a line whose start
    // is in a chunk not read yet.
    let mut tail: Vec<u8> = Vec::new();
    while pos > 0 {
        let n = BACK_CHUNK.min(pos);
        pos -= n;
        let mut chunk = vec![0u8; usize::try_from(n).unwrap_or(usize::MAX)];
        file.read_exact_at(&mut chunk, pos).map_err(read_error)?;
        chunk.extend_from_slice(&tail);
        let mut end = chunk.len();
        while let Some(newline) = chunk[..end].iter().rposition(|&b| b == b'\n') {
            if take_line(&chunk[newline + 1..end], run, &mut found) {
                found.reverse();
                return Ok(Some(found));
            }
            end = newline;
        }
        chunk.truncate(end);
        tail = chunk;
    }
    if take_line(&tail, run, &mut found) {
        found.reverse();
        return Ok(Some(found));
    }
    Ok(None)
}

/// Keeps `line` in `found` when it is an entry of `run`; `true` when it is
/// the run's `run_start`.
fn take_line(line: &[u8], run: &str, found: &mut Vec<Entry>) -> bool {
    let line = line.trim_ascii();
    let line = line.strip_prefix(b"[").unwrap_or(line).trim_ascii();
    let line = line.strip_suffix(b",").unwrap_or(line);
    if !line.starts_with(b"{") {
        return false;
    }
    let Some(glance) = Glance::of(line) else {
        return false;
    };
    if glance.run_id.as_deref() != Some(run) {
        return false;
    }
    if let Ok(entry) = serde_json::from_slice(line) {
        found.push(entry);
    }
    glance.starts_run
}

/// The run `wanted` names (a run id or a unique prefix of one), or the
/// newest run when it is `None`.
pub(crate) fn pick_run(
    path: &Path,
    runs: &[String],
    wanted: Option<&str>,
) -> Result<String, ReportError> {
    let Some(wanted) = wanted else {
        return runs.last().cloned().ok_or_else(|| ReportError::NoRuns {
            path: path.to_path_buf(),
        });
    };
    if runs.iter().any(|r| r == wanted) {
        return Ok(wanted.to_string());
    }
    let matches: Vec<&String> = runs.iter().filter(|r| r.starts_with(wanted)).collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(ReportError::UnknownRun {
            run: wanted.to_string(),
            path: path.to_path_buf(),
        }),
        many => Err(ReportError::AmbiguousRun {
            run: wanted.to_string(),
            path: path.to_path_buf(),
            matches: many
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entry `n` of `run`, numbered in its prompt.
    fn entry(run: &str, kind: &str, n: u32) -> String {
        format!(
            r#"{{"id":"x","agent":"System","details":{{"input_prompt":"{n}","output_response":"","run_id":"{run}","kind":"{kind}"}}}}"#
        )
    }

    fn ns(entries: &[Entry]) -> Vec<u64> {
        entries
            .iter()
            .map(|e| e.details.input_prompt.parse().unwrap())
            .collect()
    }

    fn write_log(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("experiment_data.json");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn keeps_only_the_wanted_runs_entries_and_lists_every_run() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[\n{},\n{},\n{},\n{},\n{{\"foreign\": true}},\n{}\n]\n",
            entry("r1", "run_start", 1),
            entry("r2", "run_start", 2),
            entry("r1", "review", 3),
            entry("r2", "review", 4),
            entry("r1", "run_end", 5)
        );
        let path = write_log(dir.path(), &text);
        let scanned = scan(&path, Some("r1")).unwrap();
        assert_eq!(scanned.runs, ["r1", "r2"]);
        assert_eq!(ns(&scanned.entries), [1, 3, 5]);
    }

    #[test]
    fn the_ended_run_is_read_from_the_end_back_to_its_start() {
        let dir = tempfile::tempdir().unwrap();
        // What comes before the run's start is not read: here it is not
        // even JSON, which a whole pass turns down.
        let text = format!(
            "[\n{{ this is not read ,\n{},\n{},\n{},\n{},\n{},\n{}\n]\n",
            entry("r1", "run_start", 1),
            entry("r2", "run_start", 2),
            entry("r2", "review", 3),
            entry("r1", "review", 4),
            entry("r2", "run_end", 5),
            entry("r2", "report", 6),
        );
        let path = write_log(dir.path(), &text);
        assert_eq!(ns(&scan_back(&path, "r2").unwrap().unwrap()), [2, 3, 5, 6]);
        assert!(scan(&path, Some("r2")).is_err(), "a whole pass fails");
        // A run whose start is not there: only a whole pass can tell.
        let path = write_log(
            dir.path(),
            &format!(
                "[\n{},\n{}\n]\n",
                entry("r1", "review", 1),
                entry("r1", "run_end", 2)
            ),
        );
        assert_eq!(scan_back(&path, "r1").unwrap(), None);
        assert_eq!(ns(&scan(&path, Some("r1")).unwrap().entries), [1, 2]);
        // Lines longer than what is read at a time, and a first line that
        // is the array's opening and the entry together.
        let long = "x".repeat(200_000);
        let big = format!(
            r#"{{"id":"y","agent":"Reviewer","details":{{"run_id":"r3","kind":"review","input_prompt":"8","output_response":"{long}"}}}}"#
        );
        let path = write_log(
            dir.path(),
            &format!("[{},\n{big},\n{big}\n]\n", entry("r3", "run_start", 7)),
        );
        assert_eq!(ns(&scan_back(&path, "r3").unwrap().unwrap()), [7, 8, 8]);
    }

    #[test]
    fn a_log_cut_short_gives_its_complete_entries() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[\n{},\n{},\n{{\"id\":\"ha",
            entry("r1", "run_start", 1),
            entry("r1", "review", 2)
        );
        let path = write_log(dir.path(), &text);
        assert_eq!(scan(&path, Some("r1")).unwrap().entries.len(), 2);
    }

    #[test]
    fn a_missing_or_foreign_file_is_a_one_line_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.json");
        let err = scan(&missing, None).unwrap_err();
        assert!(matches!(err, ReportError::NoLog { .. }), "{err}");
        assert!(err.to_string().contains("--log-file"));
        let path = write_log(dir.path(), "{\"not\": \"a list\"}");
        let err = scan(&path, None).unwrap_err();
        assert!(matches!(err, ReportError::NotALog { .. }), "{err}");
        assert!(!err.to_string().contains('\n'));
    }

    #[test]
    fn a_run_is_picked_by_id_by_unique_prefix_or_as_the_newest() {
        let path = Path::new("logs/experiment_data.json");
        let runs = vec![
            "20261122-101500-7f3a".to_string(),
            "20261122-111500-0b1c".to_string(),
            "20261123-090000-aaaa".to_string(),
        ];
        assert_eq!(pick_run(path, &runs, None).unwrap(), "20261123-090000-aaaa");
        assert_eq!(
            pick_run(path, &runs, Some("20261122-10")).unwrap(),
            "20261122-101500-7f3a"
        );
        let unknown = pick_run(path, &runs, Some("2025")).unwrap_err();
        assert!(unknown.to_string().contains("swarm log"), "{unknown}");
        let ambiguous = pick_run(path, &runs, Some("20261122")).unwrap_err();
        assert!(matches!(ambiguous, ReportError::AmbiguousRun { .. }));
        assert!(matches!(
            pick_run(path, &[], None),
            Err(ReportError::NoRuns { .. })
        ));
    }
}
