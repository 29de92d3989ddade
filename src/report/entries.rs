//! Reads one run's entries back from the experiment log.
//!
//! The log is streamed once, one element at a time: each element is first
//! read as raw JSON, probed for `details.run_id` and `details.kind`, and
//! parsed in full only when it belongs to the wanted run, so a long log of
//! many runs costs one pass and little memory. A log cut short (a crash, or
//! another run appending at this moment) yields its complete entries. This
//! module only reads; it never writes or repairs the log (`crate::log` does).

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use serde::de::{SeqAccess, Visitor};
use serde::Deserializer as _;
use serde_json::value::RawValue;
use serde_json::Value;

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
    pub entries: Vec<Value>,
}

/// The fields an entry is probed for before it is parsed in full.
#[derive(serde::Deserialize)]
struct Probe {
    #[serde(default)]
    details: ProbeDetails,
}

#[derive(serde::Deserialize, Default)]
struct ProbeDetails {
    run_id: Option<String>,
    kind: Option<String>,
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
            let Ok(probe) = serde_json::from_str::<Probe>(raw.get()) else {
                continue;
            };
            let Some(run_id) = probe.details.run_id else {
                continue;
            };
            if probe.details.kind.as_deref() == Some("run_start")
                && !self.out.runs.contains(&run_id)
            {
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

/// Reads the log at `path`: every run id, and the entries of `want`.
pub(crate) fn scan(path: &Path, want: Option<&str>) -> Result<Scanned, ReportError> {
    let file = File::open(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => ReportError::NoLog {
            path: path.to_path_buf(),
        },
        _ => ReportError::Read {
            path: path.to_path_buf(),
            source,
        },
    })?;
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

    fn entry(run: &str, kind: &str, n: u32) -> String {
        format!(
            r#"{{"id":"x","agent":"System","details":{{"input_prompt":"","output_response":"","run_id":"{run}","kind":"{kind}","n":{n}}}}}"#
        )
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
        let ns: Vec<u64> = scanned
            .entries
            .iter()
            .map(|e| e["details"]["n"].as_u64().unwrap())
            .collect();
        assert_eq!(ns, [1, 3, 5]);
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
