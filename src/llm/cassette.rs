//! Recording model calls: the cassette file format and [`RecordingModel`], a
//! [`ChatModel`] wrapper that appends every call to a cassette.
//!
//! A cassette is `{"version":1,"interactions":[…]}`; each interaction holds
//! the full request, its hash, the model and the response. The file is
//! rewritten atomically (temporary file in the same directory, then rename)
//! after every call, so a crash never leaves it half-written. Replay answers
//! from cassettes (see `replay`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::chat::{ChatModel, ChatRequest, ChatResponse, Finish, ProviderKind, Usage};
use super::error::{LlmError, RecordingProblem};

/// The cassette format version written and accepted.
pub const CASSETTE_VERSION: u32 = 1;

/// A recording of model calls.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cassette {
    /// Always [`CASSETTE_VERSION`].
    pub version: u32,
    /// The calls, in the order they were made.
    pub interactions: Vec<Interaction>,
}

/// One recorded call.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Interaction {
    /// `ChatRequest::hash()` of `request`.
    pub request_hash: String,
    /// The model that answered.
    pub model: String,
    /// Everything that was sent.
    pub request: ChatRequest,
    /// What came back.
    pub response: RecordedResponse,
}

/// The stored part of a [`ChatResponse`].
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RecordedResponse {
    /// The raw reply text.
    pub text: String,
    /// Why the model stopped.
    pub finish: Finish,
    /// Tokens used.
    pub usage: Usage,
    /// Set when the reply was not valid UTF-8 ([`LlmError::NotUtf8`]'s
    /// detail; `text` is then empty): replay answers with that error again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_utf8: Option<String>,
}

impl Cassette {
    /// An empty cassette.
    pub fn new() -> Self {
        Self {
            version: CASSETTE_VERSION,
            interactions: Vec::new(),
        }
    }

    /// Reads a cassette file.
    pub fn load(path: &Path) -> Result<Self, LlmError> {
        let text = std::fs::read_to_string(path).map_err(|source| LlmError::RecordingIo {
            provider: "cassette".into(),
            doing: "read",
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text).map_err(|problem| LlmError::Recording {
            provider: "cassette".into(),
            path: path.to_path_buf(),
            problem,
        })
    }

    /// Parses cassette JSON, checking the version.
    pub fn parse(text: &str) -> Result<Self, RecordingProblem> {
        let cassette: Cassette =
            serde_json::from_str(text).map_err(RecordingProblem::NotACassette)?;
        if cassette.version != CASSETTE_VERSION {
            return Err(RecordingProblem::Version {
                found: cassette.version,
                expected: CASSETTE_VERSION,
            });
        }
        Ok(cassette)
    }

    /// Writes the cassette to `path` atomically: a temporary file in the same
    /// directory, flushed, then renamed over `path`.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir)?;
        let mut file = tempfile::NamedTempFile::new_in(&dir)?;
        serde_json::to_writer_pretty(&mut file, self)?;
        file.write_all(b"\n")?;
        file.as_file().sync_all()?;
        file.persist(path).map_err(|err| err.error)?;
        Ok(())
    }
}

/// A [`ChatModel`] that passes every call to an inner model and appends it
/// to a cassette file.
///
/// Failed calls are not recorded, except replies that were not valid UTF-8
/// (the Fixer asks again after one, so replay must see it too). When the
/// cassette cannot be written, the call fails with `LlmError::RecordingIo`
/// (provider `recorder`): a recording that silently misses calls would
/// replay wrongly.
pub struct RecordingModel {
    inner: Arc<dyn ChatModel>,
    path: PathBuf,
    cassette: Mutex<Cassette>,
}

impl std::fmt::Debug for RecordingModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingModel")
            .field("kind", &self.inner.kind())
            .field("model", &self.inner.model())
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl RecordingModel {
    /// Records the calls of `inner` to `path`. An existing cassette there is
    /// kept and appended to; anything else at `path` is an error.
    pub fn new(inner: Arc<dyn ChatModel>, path: impl Into<PathBuf>) -> Result<Self, LlmError> {
        let path = path.into();
        let cassette = if path.exists() {
            Cassette::load(&path)?
        } else {
            Cassette::new()
        };
        Ok(Self {
            inner,
            path,
            cassette: Mutex::new(cassette),
        })
    }

    /// The cassette file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many calls the cassette holds.
    pub fn len(&self) -> usize {
        self.lock().interactions.len()
    }

    /// Whether the cassette holds no call yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cassette> {
        // A poisoned lock only means another call panicked mid-append; the
        // cassette itself is still a valid value.
        self.cassette
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait::async_trait]
impl ChatModel for RecordingModel {
    fn kind(&self) -> ProviderKind {
        self.inner.kind()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn holds_reply_for(&self, request: &ChatRequest) -> bool {
        self.inner.holds_reply_for(request)
    }

    fn recorded_like(&self, request: &ChatRequest) -> bool {
        self.inner.recorded_like(request)
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let result = self.inner.complete(request).await;
        let recorded = match &result {
            Ok(response) => RecordedResponse {
                text: response.text.clone(),
                finish: response.finish.clone(),
                usage: response.usage,
                not_utf8: None,
            },
            Err(LlmError::NotUtf8 { detail, .. }) => RecordedResponse {
                text: String::new(),
                finish: Finish::Stop,
                usage: Usage::default(),
                not_utf8: Some(detail.clone()),
            },
            Err(_) => return result,
        };
        let mut cassette = self.lock();
        cassette.interactions.push(Interaction {
            request_hash: request.hash(),
            model: self.inner.model().to_string(),
            request: request.clone(),
            response: recorded,
        });
        cassette
            .save(&self.path)
            .map_err(|source| LlmError::RecordingIo {
                provider: "recorder".into(),
                doing: "write cassette",
                path: self.path.clone(),
                source,
            })?;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ReplayModel;

    /// Answers the first call with bytes that were not UTF-8, then with text.
    struct Garbled(Mutex<u32>);

    #[async_trait::async_trait]
    impl ChatModel for Garbled {
        fn kind(&self) -> ProviderKind {
            ProviderKind::OpenAi
        }
        fn model(&self) -> &str {
            "garbled"
        }
        async fn complete(&self, _request: &ChatRequest) -> Result<ChatResponse, LlmError> {
            let mut calls = self.0.lock().expect("not poisoned");
            *calls += 1;
            if *calls == 1 {
                return Err(LlmError::NotUtf8 {
                    provider: "openai".into(),
                    detail: "byte 0xff at offset 3 of the body".into(),
                });
            }
            Ok(ChatResponse {
                text: "fine".into(),
                finish: Finish::Stop,
                usage: Usage::default(),
                attempts: 1,
            })
        }
    }

    #[tokio::test]
    async fn a_reply_that_was_not_utf8_is_recorded_and_replayed_as_that_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("c.json");
        let recorder =
            RecordingModel::new(Arc::new(Garbled(Mutex::new(0))), &path).expect("recorder");
        let first = ChatRequest::single("s", "first", 10);
        let again = ChatRequest::single("s", "again", 10);
        assert!(matches!(
            recorder.complete(&first).await,
            Err(LlmError::NotUtf8 { .. })
        ));
        assert_eq!(recorder.complete(&again).await.expect("text").text, "fine");
        assert_eq!(recorder.len(), 2);

        let replay = ReplayModel::open(Some(&path), "m".into()).expect("cassette loads");
        match replay.complete(&first).await {
            Err(LlmError::NotUtf8 { detail, .. }) => {
                assert_eq!(detail, "byte 0xff at offset 3 of the body")
            }
            other => panic!("expected the recorded error, got {other:?}"),
        }
        assert_eq!(replay.complete(&again).await.expect("text").text, "fine");
    }
}
