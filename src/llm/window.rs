//! How much a model can read: the context windows of common models, a
//! deliberately generous token estimate of a request, and the guard that
//! refuses to send a request the model's window cannot hold.
//!
//! What goes into a prompt and how big each kind of prompt may be is the
//! stages' business (`stage::budget`); this module only knows models and
//! counts. The estimate errs high (code tokenises denser than prose), so a
//! request judged to fit does fit.

use std::sync::Arc;

use super::chat::{ChatModel, ChatRequest, ChatResponse, ProviderKind};
use super::error::LlmError;
use super::price::lookup;

/// Context windows in tokens (prompt and reply together), matched like
/// prices: the longest id that prefixes the model at a `-`, `@` or `:`
/// boundary wins, after dropping a `models/` or `vendor/` prefix.
const BUILT_IN: &[(&str, u64)] = &[
    // OpenAI
    ("gpt-4o", 128_000),
    ("gpt-4o-mini", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4.1-mini", 1_047_576),
    ("gpt-4.1-nano", 1_047_576),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-5", 400_000),
    ("gpt-5-mini", 400_000),
    ("gpt-5-nano", 400_000),
    ("o1", 200_000),
    ("o1-mini", 128_000),
    ("o3", 200_000),
    ("o3-mini", 200_000),
    ("o3-pro", 200_000),
    ("o4-mini", 200_000),
    // Google
    ("gemini-2.5-pro", 1_048_576),
    ("gemini-2.5-flash", 1_048_576),
    ("gemini-2.5-flash-lite", 1_048_576),
    ("gemini-2.0-flash", 1_048_576),
    ("gemini-2.0-flash-lite", 1_048_576),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-1.5-flash", 1_048_576),
    // Anthropic
    ("claude-opus-4", 200_000),
    ("claude-opus-4-5", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3-7-sonnet", 200_000),
    ("claude-3-5-sonnet", 200_000),
    ("claude-3-5-haiku", 200_000),
    ("claude-3-opus", 200_000),
    ("claude-3-haiku", 200_000),
];

/// Tokens a chat message costs beyond its text (role markers, separators).
const PER_MESSAGE: u64 = 8;

/// The built-in context window of `model` in tokens, when known. Local and
/// unknown models give `None` (declare theirs with `context-window`).
pub fn context_window_for(model: &str) -> Option<u64> {
    lookup(
        BUILT_IN.iter().map(|(name, window)| (*name, *window)),
        model,
    )
}

/// A generous token count of `text` for budgets: one token per three ASCII
/// characters, one per other character. Real tokenisers give fewer for
/// both prose and code, so what fits by this count fits.
pub fn budget_tokens(text: &str) -> u64 {
    let (ascii, other) = text.chars().fold((0u64, 0u64), |(a, o), c| {
        if c.is_ascii() {
            (a + 1, o)
        } else {
            (a, o + 1)
        }
    });
    ascii.div_ceil(3) + other
}

/// What sending `request` costs of a window by [`budget_tokens`]: its
/// system prompt and messages, without the reply.
pub fn prompt_tokens(request: &ChatRequest) -> u64 {
    budget_tokens(&request.system)
        + PER_MESSAGE
        + request
            .messages
            .iter()
            .map(|m| budget_tokens(&m.content) + PER_MESSAGE)
            .sum::<u64>()
}

/// A model whose requests must fit a context window: a request whose
/// estimated prompt plus its reply limit exceeds the window is refused with
/// [`LlmError::OverWindow`] before anything is sent.
pub struct Windowed {
    inner: Arc<dyn ChatModel>,
    window: u64,
}

impl Windowed {
    /// Guards `inner` with a window of `window` tokens.
    pub fn new(inner: Arc<dyn ChatModel>, window: u64) -> Self {
        Self { inner, window }
    }
}

#[async_trait::async_trait]
impl ChatModel for Windowed {
    fn kind(&self) -> ProviderKind {
        self.inner.kind()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn withheld(&self) -> Option<&crate::secrets::Withheld> {
        self.inner.withheld()
    }

    fn holds_reply_for(&self, request: &ChatRequest) -> bool {
        self.inner.holds_reply_for(request)
    }

    fn recorded_like(&self, request: &ChatRequest) -> bool {
        self.inner.recorded_like(request)
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let prompt = prompt_tokens(request);
        let needed = prompt + u64::from(request.max_output_tokens);
        if needed > self.window {
            return Err(LlmError::OverWindow {
                model: self.inner.model().to_string(),
                prompt,
                reply: request.max_output_tokens,
                window: self.window,
            });
        }
        self.inner.complete(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ChatMessage, Finish, Role, Usage};
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn windows_follow_the_longest_known_id() {
        assert_eq!(context_window_for("gpt-4o-2024-08-06"), Some(128_000));
        assert_eq!(context_window_for("gpt-4"), Some(8_192));
        assert_eq!(context_window_for("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(
            context_window_for("models/gemini-2.5-flash"),
            Some(1_048_576)
        );
        assert_eq!(
            context_window_for("anthropic/claude-sonnet-4-5-20250929"),
            Some(200_000)
        );
        assert_eq!(context_window_for("llama3.1:8b"), None);
        assert_eq!(context_window_for("gpt-4ox"), None);
    }

    #[test]
    fn the_estimate_errs_high() {
        assert_eq!(budget_tokens(""), 0);
        assert_eq!(budget_tokens("abcdef"), 2);
        assert_eq!(budget_tokens("abcdefg"), 3);
        assert_eq!(budget_tokens("日本"), 2);
        let code = "def mean(values):\n    return sum(values) / len(values)\n";
        // A BPE tokeniser gives about 14 tokens for this line pair.
        assert!(budget_tokens(code) >= 14);
    }

    struct Counting(AtomicUsize);

    #[async_trait::async_trait]
    impl ChatModel for Counting {
        fn kind(&self) -> ProviderKind {
            ProviderKind::OpenAi
        }
        fn model(&self) -> &str {
            "small"
        }
        async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(ChatResponse {
                text: "ok".into(),
                finish: Finish::Stop,
                usage: Usage::default(),
                attempts: 1,
            })
        }
    }

    fn request(chars: usize, reply: u32) -> ChatRequest {
        ChatRequest {
            system: String::new(),
            messages: vec![ChatMessage {
                role: Role::User,
                content: "x".repeat(chars),
            }],
            max_output_tokens: reply,
            temperature: 0.0,
            sampling: Default::default(),
        }
    }

    #[tokio::test]
    async fn a_request_past_the_window_is_never_sent() {
        let counting = Arc::new(Counting(AtomicUsize::new(0)));
        let model = Windowed::new(counting.clone(), 1_000);
        assert!(model.complete(&request(300, 500)).await.is_ok());
        let refused = model.complete(&request(1_500, 500)).await;
        match refused {
            Err(LlmError::OverWindow { prompt, window, .. }) => {
                assert_eq!(window, 1_000);
                assert!(prompt >= 500);
            }
            other => panic!("expected OverWindow, got {other:?}"),
        }
        assert_eq!(counting.0.load(Ordering::SeqCst), 1);
    }
}
