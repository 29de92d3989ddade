//! Replay: answers requests from a recording, without network.
//!
//! The recording is an experiment log (a JSON array of log entries) or a
//! cassette written by [`RecordingModel`](super::RecordingModel) (an object with
//! `interactions`); the content decides, not the file name.
//!
//! Model calls in an experiment log, read through `crate::log`'s entry
//! types, are the entries whose `details.kind` is `"llm_call"` (except
//! those whose `status` is `FAILURE`: the call got no reply), with
//! `details.input_prompt`, `details.output_response` and
//! `details.request_hash`; entries without `kind` by the Auditor or Fixer
//! with a non-empty `output_response` count too (logs written by other
//! tools). Each request gets the first unused call with the same hash, else
//! the next unused call in recorded order. Replayed answers report
//! `attempts: 1`, and usage as recorded (estimated when the recording has
//! none).
//!
//! A reply that was not valid UTF-8 is replayed as that error again
//! ([`LlmError::NotUtf8`]): from a cassette's `not_utf8` field, or from a
//! log's `FAILURE` entry whose `details.error` is that error's message.

use std::path::Path;
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::Value;

use super::cassette::Cassette;
use super::chat::{ChatModel, ChatRequest, ChatResponse, Finish, ProviderKind, Usage};
use super::error::{LlmError, RecordingProblem};
use super::reply::estimated_usage;
use crate::log::{Agent, Entry, Kind, ModelCall as LoggedCall, Status};

/// One recorded reply.
#[derive(Clone, Debug, PartialEq)]
struct RecordedCall {
    /// `ChatRequest::hash()` of the request, when recorded.
    hash: Option<String>,
    text: String,
    finish: Finish,
    /// Usage as recorded; estimated from the live request when absent.
    usage: Option<Usage>,
    /// The reply was not valid UTF-8: replay the error, with this detail.
    not_utf8: Option<String>,
    /// The request's prompt as recorded (system and user messages).
    prompt: String,
}

/// A model that answers from a recorded experiment log or cassette.
#[derive(Debug)]
pub struct ReplayModel {
    model: String,
    calls: Vec<RecordedCall>,
    used: Mutex<Vec<bool>>,
}

impl ReplayModel {
    /// Loads the recording at `path`, answering as `model`.
    pub fn open(path: Option<&Path>, model: String) -> Result<Self, LlmError> {
        let path = path.ok_or_else(|| LlmError::Config {
            provider: "replay".into(),
            message: "no recording to replay: give an experiment log or a cassette".into(),
        })?;
        let text = std::fs::read_to_string(path).map_err(|source| LlmError::RecordingIo {
            provider: "replay".into(),
            doing: "read",
            path: path.to_path_buf(),
            source,
        })?;
        let calls = parse_recording(&text).map_err(|problem| LlmError::Recording {
            provider: "replay".into(),
            path: path.to_path_buf(),
            problem,
        })?;
        if calls.is_empty() {
            return Err(LlmError::Config {
                provider: "replay".into(),
                message: format!("{} holds no recorded model calls", path.display()),
            });
        }
        Ok(Self::from_calls(model, calls))
    }

    fn from_calls(model: String, calls: Vec<RecordedCall>) -> Self {
        let used = Mutex::new(vec![false; calls.len()]);
        Self { model, calls, used }
    }

    /// How many calls the recording holds.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether the recording holds no call (never true once built).
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// How many recorded calls have not been answered yet.
    pub fn remaining(&self) -> usize {
        self.lock().iter().filter(|used| !**used).count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<bool>> {
        // The flags stay meaningful even if a caller panicked holding them.
        self.used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Picks the call for `hash`: an unused one with the same hash, else the
    /// first unused one.
    fn take(&self, hash: &str) -> Option<&RecordedCall> {
        let mut used = self.lock();
        let unused = |index: &usize| !used[*index];
        let index = (0..self.calls.len())
            .filter(unused)
            .find(|index| self.calls[*index].hash.as_deref() == Some(hash))
            .or_else(|| (0..self.calls.len()).find(unused))?;
        used[index] = true;
        Some(&self.calls[index])
    }
}

#[async_trait::async_trait]
impl ChatModel for ReplayModel {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Replay
    }

    fn model(&self) -> &str {
        &self.model
    }

    /// Whether an unused recorded call has the request's hash.
    fn holds_reply_for(&self, request: &ChatRequest) -> bool {
        let hash = request.hash();
        let used = self.lock();
        (0..self.calls.len()).any(|i| !used[i] && self.calls[i].hash.as_deref() == Some(&hash))
    }

    /// Whether an unused recorded call has the request's hash, or a prompt
    /// holding the first line of the request's user prompt.
    fn recorded_like(&self, request: &ChatRequest) -> bool {
        if self.holds_reply_for(request) {
            return true;
        }
        let Some(first) = request
            .messages
            .first()
            .and_then(|m| m.content.lines().find(|l| !l.trim().is_empty()))
        else {
            return false;
        };
        let used = self.lock();
        (0..self.calls.len()).any(|i| !used[i] && self.calls[i].prompt.contains(first))
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let call = self.take(&request.hash()).ok_or_else(|| {
            LlmError::Replay(format!(
                "all {} recorded model call(s) were already answered; the run asks for more \
                 than the recording holds",
                self.calls.len()
            ))
        })?;
        if let Some(detail) = &call.not_utf8 {
            return Err(LlmError::NotUtf8 {
                provider: "replay".into(),
                detail: detail.clone(),
            });
        }
        Ok(ChatResponse {
            text: call.text.clone(),
            finish: call.finish.clone(),
            usage: call
                .usage
                .unwrap_or_else(|| estimated_usage(request, &call.text)),
            attempts: 1,
        })
    }
}

/// The calls of an experiment log or a cassette, told apart by content.
fn parse_recording(text: &str) -> Result<Vec<RecordedCall>, RecordingProblem> {
    let value: Value = serde_json::from_str(text).map_err(RecordingProblem::NotJson)?;
    match value {
        // An element that does not read as an entry is not a model call.
        Value::Array(entries) => Ok(entries
            .iter()
            .filter_map(|entry| Entry::deserialize(entry).ok())
            .filter_map(|entry| log_call(&entry))
            .collect()),
        Value::Object(ref object) if object.contains_key("interactions") => {
            let cassette = Cassette::parse(text)?;
            Ok(cassette
                .interactions
                .into_iter()
                .map(|interaction| RecordedCall {
                    hash: Some(interaction.request_hash),
                    text: interaction.response.text,
                    finish: interaction.response.finish,
                    usage: Some(interaction.response.usage),
                    not_utf8: interaction.response.not_utf8,
                    prompt: std::iter::once(interaction.request.system.as_str())
                        .chain(
                            interaction
                                .request
                                .messages
                                .iter()
                                .map(|m| m.content.as_str()),
                        )
                        .collect::<Vec<&str>>()
                        .join("\n"),
                })
                .collect())
        }
        _ => Err(RecordingProblem::Neither),
    }
}

/// The model call recorded in one experiment-log entry, if it is one.
fn log_call(entry: &Entry) -> Option<RecordedCall> {
    let text = &entry.details.output_response;
    let mut not_utf8 = None;
    let call = match &entry.details.kind {
        Kind::LlmCall(call) => {
            if entry.status == Status::Failure {
                let error = call.error.as_deref()?;
                not_utf8 = Some(LlmError::not_utf8_detail(error)?);
            }
            call
        }
        Kind::Unnamed(call) => {
            if !matches!(entry.agent, Agent::Auditor | Agent::Fixer) || text.trim().is_empty() {
                return None;
            }
            call
        }
        _ => return None,
    };
    Some(RecordedCall {
        hash: call.request_hash.clone(),
        text: text.clone(),
        finish: call
            .finish
            .as_ref()
            .and_then(|finish| serde_json::from_value(finish.clone()).ok())
            .unwrap_or(Finish::Stop),
        usage: logged_usage(call),
        not_utf8,
        prompt: entry.details.input_prompt.clone(),
    })
}

/// Token counts of a logged call: `details.usage{input_tokens,output_tokens}`
/// (as other tools nest them) or `details.input_tokens` /
/// `details.output_tokens`.
fn logged_usage(call: &LoggedCall) -> Option<Usage> {
    match &call.usage {
        Some(nested) => Some(Usage {
            input_tokens: nested.input_tokens?,
            output_tokens: nested.output_tokens?,
            estimated: nested.estimated.unwrap_or(false),
        }),
        None => Some(Usage {
            input_tokens: call.input_tokens?,
            output_tokens: call.output_tokens?,
            estimated: false,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_entries_are_selected_by_kind_or_agent() {
        let log = r#"[
          {"agent":"Auditor","details":{"kind":"tool_run","input_prompt":"pylint","output_response":"ok"}},
          {"agent":"Auditor","details":{"kind":"llm_call","input_prompt":"p","output_response":"plan","request_hash":"h1","usage":{"input_tokens":3,"output_tokens":4}}},
          {"agent":"Fixer","status":"FAILURE","details":{"kind":"llm_call","input_prompt":"p","output_response":"HTTP 500"}},
          {"agent":"Fixer","details":{"input_prompt":"p","output_response":"diff"}},
          {"agent":"Judge","details":{"input_prompt":"pytest","output_response":"1 passed"}},
          {"agent":"Fixer","details":{"input_prompt":"p","output_response":"  "}}
        ]"#;
        let calls = parse_recording(log).expect("valid log");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].text, "plan");
        assert_eq!(calls[0].hash.as_deref(), Some("h1"));
        assert_eq!(
            calls[0].usage,
            Some(Usage {
                input_tokens: 3,
                output_tokens: 4,
                estimated: false
            })
        );
        assert_eq!(calls[1].text, "diff");
        assert_eq!(calls[1].hash, None);
    }

    #[test]
    fn replies_that_were_not_utf8_replay_as_that_error() {
        let error = LlmError::NotUtf8 {
            provider: "openai".into(),
            detail: "byte 0xff at offset 9 of the body".into(),
        };
        let log = serde_json::json!([
          {"agent":"Fixer","status":"FAILURE","details":{"kind":"llm_call","input_prompt":"p",
           "output_response":"","request_hash":"h1","error": error.to_string()}},
          {"agent":"Fixer","status":"SUCCESS","details":{"kind":"llm_call","input_prompt":"p2",
           "output_response":"diff","request_hash":"h2"}}
        ]);
        let calls = parse_recording(&log.to_string()).expect("valid log");
        assert_eq!(calls.len(), 2);
        assert_eq!(
            calls[0].not_utf8.as_deref(),
            Some("byte 0xff at offset 9 of the body")
        );
        let model = ReplayModel::from_calls("m".into(), calls);
        let request = ChatRequest::single("s", "u", 10);
        let first = tokio_test_block_on(model.complete(&request));
        assert!(matches!(first, Err(LlmError::NotUtf8 { .. })), "{first:?}");
        let second = tokio_test_block_on(model.complete(&request)).expect("the next call");
        assert_eq!(second.text, "diff");
    }

    /// Runs a future to completion on a fresh single-threaded runtime.
    fn tokio_test_block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
            .block_on(future)
    }

    #[test]
    fn other_json_is_rejected() {
        assert!(parse_recording(r#"{"hello":1}"#).is_err());
        assert!(parse_recording("not json").is_err());
    }
}
