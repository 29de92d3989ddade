//! What is said to a model and what comes back: the conversation
//! ([`ChatRequest`], [`ChatMessage`], [`Role`], [`Sampling`]), the answer
//! ([`ChatResponse`], [`Finish`], [`Usage`]) and the [`ChatModel`] trait
//! every provider implements.
//!
//! Plain values, at the bottom of `llm/`: they know no provider's wire
//! format, no HTTP and no settings. [`ProviderKind`] lives here because a
//! model says which kind it is; the facts about each kind are its row in
//! the provider table (`provider`).

use super::error::LlmError;

/// Which wire format to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    OpenAi,
    Gemini,
    Anthropic,
    Replay,
}

/// Who speaks a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
}

/// What is sent to a model.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChatRequest {
    pub system: String,
    pub messages: Vec<ChatMessage>,
    pub max_output_tokens: u32,
    pub temperature: f32,
    /// Sampling beyond the temperature, each setting sent only where the
    /// provider's API takes it.
    #[serde(default, skip_serializing_if = "Sampling::is_plain")]
    pub sampling: Sampling,
}

/// Sampling settings beyond the temperature; `None` leaves the provider's
/// default. Each wire format writes the ones its API accepts and leaves the
/// others out (Gemini 2.5 and Anthropic take no penalty; OpenAI's reasoning
/// models neither).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sampling {
    /// Lowers a token's odds by how often it is already in the reply
    /// (OpenAI-compatible `frequency_penalty`, -2 to 2).
    pub frequency_penalty: Option<f32>,
    /// Lowers a token's odds once it is in the reply at all
    /// (OpenAI-compatible `presence_penalty`, -2 to 2).
    pub presence_penalty: Option<f32>,
}

impl Sampling {
    /// What a request asks for after a reply that repeated itself: tokens
    /// already said weigh less, so the model does not fall into the same
    /// loop. The temperature is left as it was: a loop is a low-temperature
    /// failure, and a lower one would make it likelier.
    pub const AGAINST_REPETITION: Sampling = Sampling {
        frequency_penalty: Some(0.5),
        presence_penalty: Some(0.3),
    };

    /// Whether nothing is asked beyond the provider's defaults.
    pub fn is_plain(&self) -> bool {
        *self == Sampling::default()
    }
}

impl ChatRequest {
    /// A stable hash of the request (model-independent), used by replay.
    ///
    /// The sha256 (lowercase hex) of the compact JSON
    /// `{"system":…,"messages":[{"role":…,"content":…},…],"max_output_tokens":…}`
    /// with the fields in that order. The model, the key, the temperature
    /// and the other sampling settings are not part of it, so a recording made with one model replays for
    /// another.
    pub fn hash(&self) -> String {
        use sha2::{Digest, Sha256};

        #[derive(serde::Serialize)]
        struct Canonical<'a> {
            system: &'a str,
            messages: &'a [ChatMessage],
            max_output_tokens: u32,
        }
        let canonical = Canonical {
            system: &self.system,
            messages: &self.messages,
            max_output_tokens: self.max_output_tokens,
        };
        let bytes =
            serde_json::to_vec(&canonical).expect("strings and integers always serialize to JSON");
        hex::encode(Sha256::digest(&bytes))
    }

    /// The exact prompt as one text: the system prompt and every message,
    /// as logged in `input_prompt`.
    ///
    /// Format: one block per part, blocks separated by one blank line; each
    /// block is a header line (`[system]`, `[user]` or `[assistant]`)
    /// followed by the text verbatim:
    ///
    /// ```text
    /// [system]
    /// You fix Python code.
    ///
    /// [user]
    /// Fix this file.
    /// ```
    ///
    /// The `[system]` block is left out when the system prompt is empty.
    pub fn transcript(&self) -> String {
        let mut blocks = Vec::with_capacity(self.messages.len() + 1);
        if !self.system.is_empty() {
            blocks.push(format!("[system]\n{}", self.system));
        }
        for message in &self.messages {
            let header = match message.role {
                Role::User => "[user]",
                Role::Assistant => "[assistant]",
            };
            blocks.push(format!("{header}\n{}", message.content));
        }
        blocks.join("\n\n")
    }

    /// A request with one user message.
    pub fn single(
        system: impl Into<String>,
        user: impl Into<String>,
        max_output_tokens: u32,
    ) -> Self {
        Self {
            system: system.into(),
            messages: vec![ChatMessage {
                role: Role::User,
                content: user.into(),
            }],
            max_output_tokens,
            temperature: 0.0,
            sampling: Sampling::default(),
        }
    }
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    Stop,
    /// Cut off by the output token limit.
    Length,
    /// Blocked by a safety filter.
    Filtered,
    /// Cut by swarm: the reply repeated itself (the same span again and
    /// again, or no progress) and reading stopped after `tokens` output
    /// tokens (estimated unless the stream counted them).
    Repeated {
        tokens: u64,
    },
    Other(String),
}

/// Tokens used by one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// True when the API gave no usage and these are estimates.
    pub estimated: bool,
}

/// A model's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatResponse {
    /// The raw reply text.
    pub text: String,
    pub finish: Finish,
    pub usage: Usage,
    /// HTTP attempts it took (1 without retries).
    pub attempts: u32,
}

/// A chat model.
#[async_trait::async_trait]
pub trait ChatModel: Send + Sync {
    fn kind(&self) -> ProviderKind;
    /// The model id, as logged.
    fn model(&self) -> &str;
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;
    /// The secrets this model is never shown, when it withholds them (see
    /// [`super::withhold`]): a reply's placeholders map back through it.
    fn withheld(&self) -> Option<&crate::secrets::Withheld> {
        None
    }
    /// Whether the model can answer `request` as it was asked: always, but
    /// for a replayed model, whose recording must hold an unused reply to
    /// a request with the same hash (else it would hand out another call's).
    fn holds_reply_for(&self, _request: &ChatRequest) -> bool {
        true
    }
    /// Whether the model would be asked a request like `request` at all:
    /// always, but for a replayed model, whose recording must hold an
    /// unused call with the same hash or whose prompt holds the first line
    /// of `request`'s (a request of the same kind, from another version).
    fn recorded_like(&self, _request: &ChatRequest) -> bool {
        true
    }
}

/// Shows the provider and the model, never a key.
impl std::fmt::Debug for dyn ChatModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatModel")
            .field("kind", &self.kind())
            .field("model", &self.model())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ChatRequest {
        ChatRequest {
            system: "You fix Python.".into(),
            messages: vec![
                ChatMessage {
                    role: Role::User,
                    content: "Fix a.py".into(),
                },
                ChatMessage {
                    role: Role::Assistant,
                    content: "```diff\n```".into(),
                },
            ],
            max_output_tokens: 100,
            temperature: 0.2,
            sampling: Sampling::default(),
        }
    }

    #[test]
    fn transcript_shows_every_part() {
        assert_eq!(
            request().transcript(),
            "[system]\nYou fix Python.\n\n[user]\nFix a.py\n\n[assistant]\n```diff\n```"
        );
        let mut no_system = request();
        no_system.system.clear();
        assert!(no_system.transcript().starts_with("[user]\nFix a.py"));
    }

    #[test]
    fn hash_ignores_temperature_but_not_content() {
        let base = request();
        let hash = base.hash();
        assert_eq!(hash.len(), 64);
        let mut warmer = base.clone();
        warmer.temperature = 0.9;
        assert_eq!(warmer.hash(), hash);
        let mut nudged = base.clone();
        nudged.sampling = Sampling::AGAINST_REPETITION;
        assert_eq!(nudged.hash(), hash, "sampling is not part of the hash");
        let mut longer = base.clone();
        longer.max_output_tokens = 101;
        assert_ne!(longer.hash(), hash);
        let mut other = base;
        other.messages[0].content.push('!');
        assert_ne!(other.hash(), hash);
    }
}

#[cfg(test)]
mod serde_tests {
    use super::*;

    #[test]
    fn a_repeated_reply_and_plain_sampling_read_back_as_written() {
        let finish = Finish::Repeated { tokens: 412 };
        let json = serde_json::to_value(&finish).unwrap();
        assert_eq!(json, serde_json::json!({"repeated": {"tokens": 412}}));
        assert_eq!(serde_json::from_value::<Finish>(json).unwrap(), finish);
        let request = ChatRequest::single("s", "u", 10);
        let json = serde_json::to_value(&request).unwrap();
        assert!(json.get("sampling").is_none(), "{json}");
        let read: ChatRequest = serde_json::from_value(json).unwrap();
        assert_eq!(read, request);
    }
}
