//! A chat model that is never shown the run's secrets: every request is
//! redacted by the run's [`Withheld`] table before it goes to the model
//! it wraps (see `crate::secrets`), and when a request holds a
//! placeholder, the system prompt says what placeholders are and that they
//! must be kept. Replies come back as the model wrote them; mapping their
//! placeholders back to the values is for whoever turns a reply into
//! files (the Fixer, the Tester), through [`ChatModel::withheld`].

use std::sync::Arc;

use super::chat::{ChatMessage, ChatModel, ChatRequest, ChatResponse, ProviderKind};
use super::error::LlmError;
use crate::secrets::{placeholders_in, Withheld};

/// What the system prompt adds when a request shows a placeholder.
pub const PLACEHOLDER_NOTE: &str = "Secrets in this code (keys, tokens, passwords) are withheld \
from you: each is shown as a placeholder like `[SECRET_1_AWS_ACCESS_KEY]`. Keep every \
placeholder exactly as it is, where it is: never change, move, split or remove one, and never \
write a value in its place.";

/// `inner`, never shown the secrets of `secrets`.
pub struct Withholding {
    inner: Arc<dyn ChatModel>,
    secrets: Arc<Withheld>,
}

impl Withholding {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn ChatModel>, secrets: Arc<Withheld>) -> Self {
        Self { inner, secrets }
    }
}

/// `request` as it may leave the machine: every secret replaced by its
/// placeholder, and the note on placeholders in the system prompt when
/// any is shown. Doing it twice gives the same request.
pub fn outgoing(secrets: &Withheld, request: &ChatRequest) -> ChatRequest {
    let messages: Vec<ChatMessage> = request
        .messages
        .iter()
        .map(|m| ChatMessage {
            role: m.role,
            content: secrets.redact(&m.content),
        })
        .collect();
    let mut system = secrets.redact(&request.system);
    let shows_placeholder = messages
        .iter()
        .any(|m| !placeholders_in(&m.content).is_empty());
    if shows_placeholder && !system.contains(PLACEHOLDER_NOTE) {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(PLACEHOLDER_NOTE);
    }
    ChatRequest {
        system,
        messages,
        max_output_tokens: request.max_output_tokens,
        temperature: request.temperature,
        sampling: request.sampling,
    }
}

#[async_trait::async_trait]
impl ChatModel for Withholding {
    fn kind(&self) -> ProviderKind {
        self.inner.kind()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn withheld(&self) -> Option<&Withheld> {
        Some(&self.secrets)
    }

    fn holds_reply_for(&self, request: &ChatRequest) -> bool {
        self.inner
            .holds_reply_for(&outgoing(&self.secrets, request))
    }

    fn recorded_like(&self, request: &ChatRequest) -> bool {
        self.inner.recorded_like(&outgoing(&self.secrets, request))
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.inner.complete(&outgoing(&self.secrets, request)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Finish, Role, Usage};
    use std::sync::Mutex;

    /// Keeps every request it gets.
    #[derive(Default)]
    struct Seen(Mutex<Vec<ChatRequest>>);

    #[async_trait::async_trait]
    impl ChatModel for Seen {
        fn kind(&self) -> ProviderKind {
            ProviderKind::OpenAi
        }
        fn model(&self) -> &str {
            "seen"
        }
        async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
            self.0.lock().unwrap().push(request.clone());
            Ok(ChatResponse {
                text: "ok".into(),
                finish: Finish::Stop,
                usage: Usage::default(),
                attempts: 1,
            })
        }
    }

    #[tokio::test]
    async fn the_model_sees_placeholders_and_the_note() {
        let secrets = Arc::new(Withheld::new());
        let file = "TOKEN = 'ghp_1234567890abcdefghijABCDEFGHIJ123456'\n";
        secrets.scan("app.py", file);
        let seen = Arc::new(Seen::default());
        let model = Withholding::new(seen.clone(), Arc::clone(&secrets));
        let request = ChatRequest {
            system: "You fix Python.".into(),
            messages: vec![ChatMessage {
                role: Role::User,
                content: format!("Fix `app.py`:\n{file}"),
            }],
            max_output_tokens: 10,
            temperature: 0.0,
            sampling: Default::default(),
        };
        model.complete(&request).await.unwrap();
        let sent = seen.0.lock().unwrap()[0].clone();
        assert!(
            !sent.transcript().contains("ghp_1234"),
            "{}",
            sent.transcript()
        );
        assert!(sent.messages[0].content.contains("[SECRET_1_GITHUB_TOKEN]"));
        assert!(sent.system.starts_with("You fix Python.\n\n"));
        assert!(sent.system.ends_with(PLACEHOLDER_NOTE));
        assert_eq!(
            outgoing(&secrets, &sent),
            sent,
            "redacting twice changes nothing"
        );
        // A request without a secret goes as it is.
        let plain = ChatRequest::single("sys", "hello", 5);
        assert_eq!(outgoing(&secrets, &plain), plain);
        assert!(model.withheld().is_some());
    }
}
