//! `logs/experiment_data.json`: one JSON array of entries in the format of
//! the Refactoring Swarm specification's `log_experiment()`.
//!
//! Every entry carries `details.input_prompt` and `details.output_response`.
//! The file is rewritten atomically after every entry (temporary file, then
//! rename); an existing log is appended to, and a corrupt one is moved aside,
//! never thrown away. Known secrets are masked before anything is written.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Who acted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    Auditor,
    Fixer,
    Reviewer,
    Judge,
    Executor,
    System,
}

impl Agent {
    fn as_str(self) -> &'static str {
        match self {
            Agent::Auditor => "Auditor",
            Agent::Fixer => "Fixer",
            Agent::Reviewer => "Reviewer",
            Agent::Judge => "Judge",
            Agent::Executor => "Executor",
            Agent::System => "System",
        }
    }
}

/// What kind of action an entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    CodeAnalysis,
    CodeGen,
    Debug,
    Fix,
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Action::CodeAnalysis => "CODE_ANALYSIS",
            Action::CodeGen => "CODE_GEN",
            Action::Debug => "DEBUG",
            Action::Fix => "FIX",
        }
    }
}

/// Whether the action itself completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Success,
    Failure,
    Info,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Success => "SUCCESS",
            Status::Failure => "FAILURE",
            Status::Info => "INFO",
        }
    }
}

/// One entry before it is written.
#[derive(Clone, Debug)]
pub struct Entry {
    pub agent: Agent,
    pub model: String,
    pub action: Action,
    pub status: Status,
    pub input_prompt: String,
    pub output_response: String,
    /// Extra fields inside `details`.
    pub details: Map<String, Value>,
}

impl Entry {
    /// An entry with no extra details.
    pub fn new(
        agent: Agent,
        model: &str,
        action: Action,
        input_prompt: impl Into<String>,
        output_response: impl Into<String>,
    ) -> Self {
        Self {
            agent,
            model: model.to_string(),
            action,
            status: Status::Success,
            input_prompt: input_prompt.into(),
            output_response: output_response.into(),
            details: Map::new(),
        }
    }

    /// Sets the status.
    pub fn status(mut self, status: Status) -> Self {
        self.status = status;
        self
    }

    /// Adds a field inside `details`.
    pub fn detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_string(), value.into());
        self
    }
}

/// Errors reading or writing the log.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("cannot write the experiment log {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read the experiment log {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The experiment log on disk.
#[derive(Debug)]
pub struct ExperimentLog {
    path: PathBuf,
    entries: Vec<Value>,
    secrets: Vec<String>,
    /// Where a corrupt earlier log was moved, to tell the user.
    pub moved_aside: Option<PathBuf>,
}

impl ExperimentLog {
    /// Opens (or starts) the log at `path`, keeping its entries. A file that
    /// is not a JSON array is renamed to `<name>.corrupt-<timestamp>`.
    pub fn open(path: &Path) -> Result<Self, LogError> {
        let mut log = Self {
            path: path.to_path_buf(),
            entries: Vec::new(),
            secrets: Vec::new(),
            moved_aside: None,
        };
        match fs::read(path) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => {}
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Array(entries)) => log.entries = entries,
                _ => {
                    let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S");
                    let name = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_else(|| "experiment_data.json".into());
                    let aside = path.with_file_name(format!("{name}.corrupt-{stamp}"));
                    fs::rename(path, &aside).map_err(|source| LogError::Write {
                        path: aside.clone(),
                        source,
                    })?;
                    log.moved_aside = Some(aside);
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(LogError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
        }
        Ok(log)
    }

    /// Values that must never reach the file (API keys); they are masked.
    pub fn mask(&mut self, secret: &str) {
        if secret.len() >= 4 {
            self.secrets.push(secret.to_string());
        }
    }

    /// Where the log lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many entries the file holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the log holds no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Appends an entry and rewrites the file atomically. Returns the entry's id.
    pub fn record(&mut self, entry: Entry) -> Result<String, LogError> {
        let id = uuid::Uuid::new_v4().to_string();
        let mut details = Map::new();
        details.insert("input_prompt".into(), entry.input_prompt.into());
        details.insert("output_response".into(), entry.output_response.into());
        details.extend(entry.details);
        let mut value = serde_json::json!({
            "id": id,
            "timestamp": chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, false),
            "agent": entry.agent.as_str(),
            "model": entry.model,
            "action": entry.action.as_str(),
            "details": Value::Object(details),
            "status": entry.status.as_str(),
        });
        if !self.secrets.is_empty() {
            mask_value(&mut value, &self.secrets);
        }
        self.entries.push(value);
        self.flush()?;
        Ok(id)
    }

    fn flush(&self) -> Result<(), LogError> {
        let err = |source| LogError::Write {
            path: self.path.clone(),
            source,
        };
        let dir = match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&dir).map_err(err)?;
        let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(err)?;
        let text = serde_json::to_string_pretty(&self.entries)
            .map_err(|e| err(std::io::Error::other(e)))?;
        tmp.write_all(text.as_bytes()).map_err(err)?;
        tmp.write_all(b"\n").map_err(err)?;
        tmp.as_file().sync_all().map_err(err)?;
        tmp.persist(&self.path).map_err(|e| err(e.error))?;
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

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
        ))
        .unwrap();
        let mut log = ExperimentLog::open(&path).unwrap();
        log.mask("sk-SECRET-1234");
        log.record(
            Entry::new(Agent::Fixer, "m", Action::Fix, "key sk-SECRET-1234", "ok")
                .detail("file", "a.py"),
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
    }

    #[test]
    fn moves_a_corrupt_log_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("experiment_data.json");
        fs::write(&path, "{not json").unwrap();
        let mut log = ExperimentLog::open(&path).unwrap();
        let aside = log.moved_aside.clone().unwrap();
        assert_eq!(fs::read_to_string(&aside).unwrap(), "{not json");
        log.record(Entry::new(
            Agent::System,
            "m",
            Action::CodeAnalysis,
            "a",
            "b",
        ))
        .unwrap();
        let v: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 1);
    }
}
