//! `logs/experiment_data.json`: one JSON array of entries in the format of
//! the Refactoring Swarm specification's `log_experiment()`.
//!
//! Every entry carries `details.input_prompt` and `details.output_response`
//! and is written as one line. Entries are appended in place under a file
//! lock, at a cost that does not grow with the file (`store`); a log cut
//! short by a crash is mended and nothing is ever thrown away (`repair`).
//! Known secrets are masked before anything is written: the API keys swarm
//! holds become `***`, and the secrets of the code under work their
//! placeholders (see [`crate::secrets`]), as in the prompts. This module gives
//! an entry its id and time and turns it into its line; what an entry holds
//! is `entry`'s and `kinds`', the bytes on disk are `store`'s.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::entry::Entry;
use super::error::LogError;
use super::repair::Repair;
use super::store::OpenLog;

/// The experiment log on disk. It holds no entries in memory: each
/// [`record`](Self::record) appends one in place under the file's lock.
/// What was appended reaches the disk (`fdatasync`) once, when the log is
/// synced or dropped: a sync per entry cost about 4 ms each.
#[derive(Debug)]
pub struct ExperimentLog {
    path: PathBuf,
    secrets: Vec<String>,
    /// The secrets of the code under work, replaced by their placeholders.
    withheld: Option<std::sync::Arc<crate::secrets::Withheld>>,
    repairs: Vec<Repair>,
    /// Entries were appended since the last sync.
    unsynced: bool,
}

impl ExperimentLog {
    /// Opens the log at `path` (which need not exist yet). An existing log is
    /// checked from its head and tail and, if damaged, mended under its lock:
    /// complete entries stay, the rest is moved to a sibling file (see
    /// [`repairs`](Self::repairs)). The log is created by the first entry.
    pub fn open(path: &Path) -> Result<Self, LogError> {
        let mut log = Self {
            path: path.to_path_buf(),
            secrets: Vec::new(),
            withheld: None,
            repairs: Vec::new(),
            unsynced: false,
        };
        if let Some(open) = OpenLog::lock(path, false)? {
            log.repairs.extend(open.repair);
        }
        Ok(log)
    }

    /// Values that must never reach the file (API keys); they are masked.
    pub fn mask(&mut self, secret: &str) {
        if secret.len() >= 4 {
            self.secrets.push(secret.to_string());
        }
    }

    /// The secrets of the code under work: every string of every entry
    /// written from now on has them replaced by their placeholders.
    pub fn withhold(&mut self, secrets: std::sync::Arc<crate::secrets::Withheld>) {
        self.withheld = Some(secrets);
    }

    /// Where the log lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every repair made so far, when opening or before an append (another
    /// run may have been killed while writing), oldest first.
    pub fn repairs(&self) -> &[Repair] {
        &self.repairs
    }

    /// Appends an entry in place, under the file's lock; other processes
    /// appending to the same file never lose theirs, and the entry stays
    /// if this process dies. Returns the entry's id.
    pub fn record(&mut self, entry: Entry) -> Result<String, LogError> {
        let id = uuid::Uuid::new_v4().to_string();
        let line = self.render(&id, entry);
        if let Some(dir) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|source| LogError::Write {
                path: self.path.clone(),
                source,
            })?;
        }
        let mut open =
            OpenLog::lock(&self.path, true)?.expect("the log is created when it is missing");
        if let Some(repair) = open.repair.take() {
            tracing::warn!("{repair}");
            self.repairs.push(repair);
        }
        open.append(&line)?;
        self.unsynced = true;
        Ok(id)
    }

    /// Puts every entry appended so far on the disk.
    pub fn sync(&mut self) -> Result<(), LogError> {
        if !self.unsynced {
            return Ok(());
        }
        if let Some(open) = OpenLog::lock(&self.path, false)? {
            open.sync()?;
        }
        self.unsynced = false;
        Ok(())
    }

    /// The entry as one line of JSON with its id and the time now, secrets
    /// masked. Keys come out in order (`serde_json`'s map is sorted), as
    /// earlier versions wrote them.
    fn render(&self, id: &str, mut entry: Entry) -> Vec<u8> {
        entry.id = id.to_string();
        entry.timestamp =
            chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, false);
        let mut value =
            serde_json::to_value(&entry).expect("an entry's fields all have string keys");
        if !self.secrets.is_empty() {
            mask_value(&mut value, &self.secrets);
        }
        if let Some(withheld) = &self.withheld {
            redact_value(&mut value, withheld);
        }
        serde_json::to_vec(&value).expect("a JSON value with string keys always serializes")
    }
}

impl Drop for ExperimentLog {
    /// Best effort: a log that cannot be synced was already written.
    fn drop(&mut self) {
        if let Err(e) = self.sync() {
            tracing::warn!("{e}");
        }
    }
}

fn mask_value(value: &mut Value, secrets: &[String]) {
    match value {
        Value::String(s) => {
            for secret in secrets {
                if s.contains(secret.as_str()) {
                    *s = s.replace(secret.as_str(), "***");
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| mask_value(v, secrets)),
        Value::Object(map) => map.values_mut().for_each(|v| mask_value(v, secrets)),
        _ => {}
    }
}

fn redact_value(value: &mut Value, withheld: &crate::secrets::Withheld) {
    match value {
        Value::String(s) => *s = withheld.redact(s),
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(v, withheld)),
        Value::Object(map) => map.values_mut().for_each(|v| redact_value(v, withheld)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{Action, Agent, Kind, ModelCall};

    /// A model call about `file` in round `iteration`.
    fn call(file: &str, iteration: u32) -> Kind {
        Kind::LlmCall(ModelCall {
            file: Some(file.to_string()),
            iteration: Some(iteration),
            ..ModelCall::default()
        })
    }

    #[test]
    fn appends_to_an_existing_log_and_masks_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/experiment_data.json");
        let mut log = ExperimentLog::open(&path).unwrap();
        log.record(Entry::new(
            Agent::System,
            "m",
            Action::CodeAnalysis,
            "a",
            "b",
            call("b.py", 1),
        ))
        .unwrap();
        let mut log = ExperimentLog::open(&path).unwrap();
        log.mask("sk-SECRET-1234");
        log.record(
            Entry::new(
                Agent::Fixer,
                "m",
                Action::Fix,
                "key sk-SECRET-1234",
                "ok",
                call("a.py", 1),
            )
            .in_run("r1"),
        )
        .unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(!text.contains("sk-SECRET-1234"));
        let v: Value = serde_json::from_str(&text).unwrap();
        let entries = v.as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1]["agent"], "Fixer");
        assert_eq!(entries[1]["action"], "FIX");
        assert_eq!(entries[1]["status"], "SUCCESS");
        assert_eq!(entries[1]["details"]["input_prompt"], "key ***");
        assert_eq!(entries[1]["details"]["file"], "a.py");
        assert_eq!(entries[1]["details"]["kind"], "llm_call");
        assert_eq!(entries[1]["details"]["run_id"], "r1");
        assert_eq!(entries[0]["details"].get("run_id"), None);
        assert!(uuid::Uuid::parse_str(entries[1]["id"].as_str().unwrap()).is_ok());
        let time = entries[1]["timestamp"].as_str().unwrap();
        assert!(chrono::DateTime::parse_from_rfc3339(time).is_ok(), "{time}");
    }

    /// Entry number `n`, with `n` as its round.
    fn entry(n: u32) -> Entry {
        Entry::new(
            Agent::System,
            "m",
            Action::CodeAnalysis,
            "a",
            "b",
            call("a.py", n),
        )
    }

    fn numbers(path: &Path) -> Vec<u64> {
        let v: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["details"]["iteration"].as_u64().unwrap())
            .collect()
    }

    #[test]
    fn moves_a_corrupt_log_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("experiment_data.json");
        fs::write(&path, "{not json").unwrap();
        let mut log = ExperimentLog::open(&path).unwrap();
        let [Repair::NotAnArray { aside, .. }] = log.repairs() else {
            panic!("{:?}", log.repairs())
        };
        assert_eq!(fs::read_to_string(aside).unwrap(), "{not json");
        log.record(entry(1)).unwrap();
        assert_eq!(numbers(&path), [1]);
    }

    #[test]
    fn opening_a_missing_log_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/experiment_data.json");
        let log = ExperimentLog::open(&path).unwrap();
        assert!(log.repairs().is_empty());
        assert!(!path.exists());
        assert!(!dir.path().join("logs").exists());
    }

    #[test]
    fn two_handles_on_one_file_keep_each_others_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("experiment_data.json");
        let mut first = ExperimentLog::open(&path).unwrap();
        let mut second = ExperimentLog::open(&path).unwrap();
        for n in 0..3 {
            first.record(entry(2 * n)).unwrap();
            second.record(entry(2 * n + 1)).unwrap();
        }
        assert_eq!(numbers(&path), [0, 1, 2, 3, 4, 5]);
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 8, "one entry per line:\n{text}");
    }

    #[test]
    fn the_entries_it_writes_pass_the_quick_look_at_the_tail() {
        use crate::log::tail::{inspect, Layout};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("experiment_data.json");
        let mut log = ExperimentLog::open(&path).unwrap();
        for n in 0..3 {
            let mut tricky = entry(n);
            tricky.details.output_response = "}\n]\n,{\"details\": [".to_string();
            log.record(tricky).unwrap();
            let size = fs::metadata(&path).unwrap().len();
            let file = fs::File::open(&path).unwrap();
            assert_eq!(
                inspect(&file, size).unwrap(),
                Some(Layout::Array {
                    at: size - 3,
                    after_entry: true
                }),
                "no full scan is needed to append after entry {n}"
            );
        }
    }

    #[test]
    fn a_log_damaged_during_the_run_is_mended_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("experiment_data.json");
        let mut log = ExperimentLog::open(&path).unwrap();
        log.record(entry(1)).unwrap();
        // Another run killed in the middle of its append.
        let mut text = fs::read_to_string(&path).unwrap();
        text.truncate(text.len() - 3);
        text.push_str(",\n{\"id\":\"half");
        fs::write(&path, &text).unwrap();
        log.record(entry(2)).unwrap();
        assert_eq!(numbers(&path), [1, 2]);
        let [Repair::CutShort { aside, kept: 1, .. }] = log.repairs() else {
            panic!("{:?}", log.repairs())
        };
        assert_eq!(fs::read_to_string(aside).unwrap(), ",\n{\"id\":\"half");
    }
}
