//! Facts below, advice on top: an `LlmError` says what happened, and the
//! advice that names swarm's flags, variables and settings is added once,
//! where the error reaches the user as a `SwarmError` — one line, the
//! message, then `; ` and the hint.

use std::time::Duration;

use swarm::error::{ExitKind, SwarmError};
use swarm::llm::LlmError;

fn unreachable(provider: &str, url: &str) -> LlmError {
    LlmError::Unreachable {
        provider: provider.into(),
        url: url.into(),
        what: "connection refused (is the server running?)".into(),
        source: None,
    }
}

#[test]
fn an_endpoint_that_cannot_be_used_names_what_to_check() {
    let error = unreachable("openai", "http://127.0.0.1:9/v1/models");
    assert_eq!(
        error.to_string(),
        "openai: http://127.0.0.1:9/v1/models: connection refused (is the server running?)"
    );
    let shown = SwarmError::from(error);
    assert_eq!(shown.kind, ExitKind::Llm);
    assert_eq!(
        shown.to_string(),
        "openai: http://127.0.0.1:9/v1/models: connection refused (is the server running?); \
         check OPENAI_BASE_URL (a local server's usually ends in /v1) and OPENAI_API_KEY, or \
         pass --no-preflight to skip this check"
    );
    let gemini = SwarmError::from(unreachable("gemini", "http://127.0.0.1:9/v1beta/models"));
    assert_eq!(
        gemini.hints,
        [
            "check GEMINI_BASE_URL and GEMINI_API_KEY or GOOGLE_API_KEY, or pass --no-preflight \
          to skip this check"
        ]
    );
}

#[test]
fn a_request_past_the_window_says_how_to_make_room() {
    let error = LlmError::OverWindow {
        model: "gpt-4".into(),
        prompt: 9_000,
        reply: 1_000,
        window: 8_192,
    };
    assert_eq!(
        SwarmError::from(error).to_string(),
        "gpt-4: a request of about 9000 prompt tokens plus 1000 reply tokens does not fit the \
         context window of 8192 tokens, so it was not sent; declare a bigger `context-window` if \
         the model has one, or use a model with a larger window"
    );
}

#[test]
fn settings_that_cannot_work_are_invalid_input_and_failed_calls_model_errors() {
    let no_key = SwarmError::from(LlmError::MissingKey {
        provider: "anthropic".into(),
    });
    assert_eq!(no_key.kind, ExitKind::InvalidInput);
    let http = SwarmError::from(LlmError::Http {
        provider: "openai".into(),
        status: 500,
        attempts: 3,
        body: "internal error".into(),
    });
    assert_eq!(http.kind, ExitKind::Llm);
    assert!(http.hints.is_empty(), "{:?}", http.hints);
    let stalled = SwarmError::from(LlmError::Timeout {
        provider: "gemini".into(),
        timeout: Duration::from_secs(120),
        attempts: 2,
    });
    assert_eq!(stalled.kind, ExitKind::Llm);
    assert_eq!(
        stalled.message, "gemini: no data for 120s after 2 attempt(s)",
        "the fact, without the advice"
    );
    assert_eq!(
        stalled.hints,
        ["raise --llm-timeout if the model is this slow to start or between tokens"]
    );
}
