//! One entry of the experiment log, in the envelope of the Refactoring Swarm
//! specification's `log_experiment()`: `id`, `timestamp`, `agent`, `model`,
//! `action`, `status`, and `details` with `input_prompt`, `output_response`,
//! the run's id and the fields of the entry's kind (`kinds`).
//!
//! This module owns the envelope's serde, written and read through the same
//! types. It reads entries other tools wrote as well: a missing `id`,
//! `timestamp`, `model`, `action` or `status` takes its default, and an
//! entry without `kind` reads as [`Kind::Unnamed`]. Files and locks are
//! `experiment`'s and `store`'s.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::kinds::{Kind, ModelCall, RunStart, RunSummary};

/// Who acted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Agent {
    Auditor,
    Fixer,
    Reviewer,
    Judge,
    Executor,
    System,
}

impl Agent {
    /// The name as the log writes it (`Fixer`).
    pub fn as_str(self) -> &'static str {
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Action {
    /// Also what an entry without `action` reads as.
    #[default]
    CodeAnalysis,
    CodeGen,
    Debug,
    Fix,
}

/// Whether the action itself completed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    /// Also what an entry without `status` reads as.
    #[default]
    Success,
    Failure,
    Info,
}

/// One entry. Built by the orchestrator without `id` and `timestamp`,
/// which [`ExperimentLog::record`](super::ExperimentLog::record) sets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    #[serde(default)]
    pub id: String,
    /// ISO 8601, with the writer's offset.
    #[serde(default)]
    pub timestamp: String,
    pub agent: Agent,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub action: Action,
    pub details: Details,
    #[serde(default)]
    pub status: Status,
}

/// `details`: the prompt and reply every entry carries, the run, the kind.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "DetailsOnDisk")]
pub struct Details {
    /// The exact prompt of a model call; a tool's command line.
    pub input_prompt: String,
    /// The raw reply of a model call; a tool's trimmed output.
    pub output_response: String,
    /// The run the entry belongs to.
    pub run_id: Option<String>,
    pub kind: Kind,
}

impl Entry {
    /// An entry with status SUCCESS, not yet in any run.
    pub fn new(
        agent: Agent,
        model: &str,
        action: Action,
        input_prompt: impl Into<String>,
        output_response: impl Into<String>,
        kind: Kind,
    ) -> Self {
        Self {
            id: String::new(),
            timestamp: String::new(),
            agent,
            model: model.to_string(),
            action,
            details: Details {
                input_prompt: input_prompt.into(),
                output_response: output_response.into(),
                run_id: None,
                kind,
            },
            status: Status::Success,
        }
    }

    /// Sets the status.
    pub fn status(mut self, status: Status) -> Self {
        self.status = status;
        self
    }

    /// Puts the entry in run `run_id`.
    pub fn in_run(mut self, run_id: &str) -> Self {
        self.details.run_id = Some(run_id.to_string());
        self
    }

    /// The run's summary, when this is a run's end whose reply holds one.
    pub fn run_summary(&self) -> Option<RunSummary> {
        match self.details.kind {
            Kind::RunEnd(_) => serde_json::from_str(&self.details.output_response).ok(),
            _ => None,
        }
    }
}

/// `details` as it is written: the kind's fields beside the common ones
/// (an entry without `kind` is written without it).
impl Serialize for Details {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct DetailsOut<'a> {
            input_prompt: &'a str,
            output_response: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            run_id: Option<&'a str>,
            #[serde(flatten)]
            kind: Option<&'a Kind>,
            #[serde(flatten)]
            unnamed: Option<&'a ModelCall>,
        }
        let (kind, unnamed) = match &self.kind {
            Kind::Unnamed(call) => (None, Some(call)),
            kind => (Some(kind), None),
        };
        DetailsOut {
            input_prompt: &self.input_prompt,
            output_response: &self.output_response,
            run_id: self.run_id.as_deref(),
            kind,
            unnamed,
        }
        .serialize(serializer)
    }
}

/// `details` as it is read: the common fields, and the rest for the kind.
#[derive(Deserialize)]
struct DetailsOnDisk {
    #[serde(default)]
    input_prompt: String,
    #[serde(default)]
    output_response: String,
    #[serde(default)]
    run_id: Option<String>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

impl TryFrom<DetailsOnDisk> for Details {
    type Error = serde_json::Error;

    fn try_from(disk: DetailsOnDisk) -> Result<Self, Self::Error> {
        let rest = Value::Object(disk.rest);
        let mut kind = if rest.get("kind").is_some() {
            Kind::deserialize(rest)?
        } else {
            // Another tool's entry: what it holds of a model call, if anything.
            Kind::Unnamed(ModelCall::deserialize(rest).unwrap_or_default())
        };
        kind.complete_from_text(&disk.input_prompt, &disk.output_response);
        Ok(Self {
            input_prompt: disk.input_prompt,
            output_response: disk.output_response,
            run_id: disk.run_id,
            kind,
        })
    }
}

/// What a reader looks at before it reads an entry in full: the run it
/// belongs to and whether it starts that run. Cheap, for going through a
/// long log of many runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Glance {
    pub run_id: Option<String>,
    pub starts_run: bool,
}

impl Glance {
    /// A glance at one element of the log's array; `None` when it is not
    /// an object (not an entry at all).
    pub fn of(json: &[u8]) -> Option<Self> {
        #[derive(Deserialize)]
        struct Probe {
            #[serde(default)]
            details: ProbeDetails,
        }
        #[derive(Deserialize, Default)]
        struct ProbeDetails {
            run_id: Option<String>,
            kind: Option<String>,
        }
        let probe: Probe = serde_json::from_slice(json).ok()?;
        Some(Self {
            run_id: probe.details.run_id,
            starts_run: probe.details.kind.as_deref() == Some(RunStart::KIND),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::kinds::{Decision, Review};
    use serde_json::json;

    #[test]
    fn a_run_start_is_glanced_at_by_the_kind_it_is_written_with() {
        let entry = Entry::new(
            Agent::System,
            "m",
            Action::CodeAnalysis,
            "swarm run on t",
            "",
            Kind::RunStart(RunStart::default()),
        )
        .in_run("r1");
        let text = serde_json::to_vec(&entry).unwrap();
        let glance = Glance::of(&text).unwrap();
        assert_eq!(glance.run_id.as_deref(), Some("r1"));
        assert!(glance.starts_run);
        assert_eq!(Glance::of(b"[1]"), None);
    }

    #[test]
    fn entries_of_other_tools_read_with_defaults() {
        let entry: Entry = serde_json::from_value(json!({
            "agent": "Fixer",
            "details": {"input_prompt": "p", "output_response": "diff", "request_hash": "h"}
        }))
        .unwrap();
        assert_eq!(
            (entry.action, entry.status),
            (Action::CodeAnalysis, Status::Success)
        );
        let Kind::Unnamed(call) = &entry.details.kind else {
            panic!("{entry:?}")
        };
        assert_eq!(call.request_hash.as_deref(), Some("h"));
        // Written back without a kind.
        let back = serde_json::to_value(&entry).unwrap();
        assert_eq!(back["details"].get("kind"), None);
        let unknown: Entry = serde_json::from_value(json!({
            "agent": "Judge", "details": {"kind": "tool_run", "input_prompt": "", "output_response": ""}
        }))
        .unwrap();
        assert_eq!(unknown.details.kind, Kind::Unknown);
    }

    #[test]
    fn a_rejection_of_an_earlier_version_has_its_reason_from_the_text() {
        let entry: Entry = serde_json::from_value(json!({
            "agent": "Reviewer",
            "details": {"kind": "review", "file": "a.py", "iteration": 2, "verdict": "rejected",
                        "rule": "test_file", "input_prompt": "review the proposal for a.py",
                        "output_response": "rejected: test_a.py is a test file\nsplit into 2 steps"}
        }))
        .unwrap();
        let Kind::Review(Review { decision, .. }) = &entry.details.kind else {
            panic!("{entry:?}")
        };
        assert_eq!(
            decision,
            &Decision::Rejected {
                rule: Some("test_file".into()),
                reason: "test_a.py is a test file".into()
            }
        );
    }
}
