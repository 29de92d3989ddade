//! How big each kind of request may be: a prompt allowance and a reply
//! limit per request kind (plan, fix, test generation), from defaults or
//! config, capped by the model's context window.
//!
//! The prompt builders fill their allowance by evidence (the planner, the
//! Fixer's excerpts); this module only does the arithmetic and says, before
//! anything is spent, when the window cannot hold even a minimal request.
//! Counting tokens is `llm::budget_tokens` (generous), and the last guard
//! that no request past the window is ever sent is `llm::Windowed`.

use crate::llm::context_window_for;

/// Default prompt allowance of a plan request, in tokens.
pub const DEFAULT_PLAN_TOKENS: u64 = 16_000;
/// Default prompt allowance of a fix request, in tokens.
pub const DEFAULT_FIX_TOKENS: u64 = 12_000;
/// Default prompt allowance of a test-generation request, in tokens.
pub const DEFAULT_TEST_TOKENS: u64 = 8_000;

/// Prompt allowances for a model served locally (a CPU reads a long prompt
/// slowly before its first token).
pub const LOCAL_PLAN_TOKENS: u64 = 8_000;
pub const LOCAL_FIX_TOKENS: u64 = 8_000;
pub const LOCAL_TEST_TOKENS: u64 = 6_000;

/// Reply limits when the window leaves room for them.
pub const PLAN_REPLY: u32 = 4_096;
const FIX_REPLY: u32 = 8_192;
const TEST_REPLY: u32 = 4_096;
/// Reply limits for a local model (at 25 tokens a second, 1,536 tokens
/// take a minute): a short plan, a focused diff.
const LOCAL_PLAN_REPLY: u32 = 1_536;
const LOCAL_FIX_REPLY: u32 = 4_096;
const LOCAL_TEST_REPLY: u32 = 2_048;
/// The smallest reply limit worth asking for.
const MIN_REPLY: u32 = 1_024;
/// The smallest prompt allowance that holds a useful request of any kind:
/// instructions, the failing tests and one function with its context.
pub const MIN_PROMPT_TOKENS: u64 = 1_500;
/// What a follow-up adds besides the earlier reply (the re-ask message).
pub const FOLLOW_UP_TOKENS: u64 = 256;

/// The kinds of request swarm sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// The Auditor's plan.
    Plan,
    /// The Fixer's change to one file (maybe asked again once).
    Fix,
    /// The Tester's generated tests.
    Tests,
}

impl RequestKind {
    fn name(self) -> &'static str {
        match self {
            RequestKind::Plan => "plan",
            RequestKind::Fix => "fix",
            RequestKind::Tests => "test generation",
        }
    }

    fn reply(self, local: bool) -> u32 {
        match (self, local) {
            (RequestKind::Plan, false) => PLAN_REPLY,
            (RequestKind::Fix, false) => FIX_REPLY,
            (RequestKind::Tests, false) => TEST_REPLY,
            (RequestKind::Plan, true) => LOCAL_PLAN_REPLY,
            (RequestKind::Fix, true) => LOCAL_FIX_REPLY,
            (RequestKind::Tests, true) => LOCAL_TEST_REPLY,
        }
    }

    /// Whether a request of this kind may be asked again with its reply
    /// appended (then the window must hold the prompt, two replies and the
    /// re-ask).
    fn asks_again(self) -> bool {
        matches!(self, RequestKind::Fix | RequestKind::Tests)
    }
}

/// The prompt allowances as configured (`[budget]`, `context-window`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BudgetSettings {
    /// The model's context window in tokens when declared; else the
    /// built-in one of a known model.
    pub context_window: Option<u64>,
    pub plan_tokens: u64,
    pub fix_tokens: u64,
    pub test_tokens: u64,
    /// The model is served locally: shorter replies.
    pub local: bool,
}

impl Default for BudgetSettings {
    fn default() -> Self {
        Self {
            context_window: None,
            plan_tokens: DEFAULT_PLAN_TOKENS,
            fix_tokens: DEFAULT_FIX_TOKENS,
            test_tokens: DEFAULT_TEST_TOKENS,
            local: false,
        }
    }
}

impl BudgetSettings {
    /// The defaults for a model served locally.
    pub fn local() -> Self {
        Self {
            context_window: None,
            plan_tokens: LOCAL_PLAN_TOKENS,
            fix_tokens: LOCAL_FIX_TOKENS,
            test_tokens: LOCAL_TEST_TOKENS,
            local: true,
        }
    }
}

/// What one request may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Allowance {
    /// Tokens the prompt (system prompt and messages) may take.
    pub prompt_tokens: u64,
    /// The reply limit to ask for.
    pub reply_tokens: u32,
}

/// The allowances of a run.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Budget {
    /// The context window the allowances are capped by, when known.
    pub window: Option<u64>,
    pub plan: Allowance,
    pub fix: Allowance,
    pub tests: Allowance,
}

/// The window cannot hold a minimal request of some kind.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the context window of {window} tokens of model {model} cannot hold a {kind} request (at least \
     {needed} tokens with its reply); use a model with a larger window, or declare its real window \
     with `context-window` in .swarm.toml or --context-window"
)]
pub struct WindowTooSmall {
    pub model: String,
    pub window: u64,
    pub kind: &'static str,
    pub needed: u64,
}

impl Budget {
    /// The allowances for `model` under `settings`: each kind's configured
    /// prompt allowance and default reply limit, shrunk to fit the window
    /// (the declared one, else the model's known one).
    pub fn new(settings: &BudgetSettings, model: &str) -> Result<Self, WindowTooSmall> {
        let window = settings
            .context_window
            .or_else(|| context_window_for(model));
        let allowance = |kind: RequestKind, configured: u64| {
            fit(kind, configured, window, settings.local).ok_or_else(|| WindowTooSmall {
                model: model.to_string(),
                window: window.unwrap_or(0),
                kind: kind.name(),
                needed: minimum(kind),
            })
        };
        Ok(Self {
            window,
            plan: allowance(RequestKind::Plan, settings.plan_tokens)?,
            fix: allowance(RequestKind::Fix, settings.fix_tokens)?,
            tests: allowance(RequestKind::Tests, settings.test_tokens)?,
        })
    }
}

impl Default for Budget {
    fn default() -> Self {
        Self::new(&BudgetSettings::default(), "").expect("no window leaves the defaults")
    }
}

/// The smallest window a request of `kind` needs.
fn minimum(kind: RequestKind) -> u64 {
    let replies = if kind.asks_again() { 2 } else { 1 };
    let follow = if kind.asks_again() {
        FOLLOW_UP_TOKENS
    } else {
        0
    };
    MIN_PROMPT_TOKENS + replies * u64::from(MIN_REPLY) + follow
}

/// `kind`'s allowance within `window`: the reply limit is at most a quarter
/// of the window (never under [`MIN_REPLY`]); the prompt gets what is left
/// after the replies (two and a re-ask for a kind that asks again), at most
/// `configured`. `None` when less than [`MIN_PROMPT_TOKENS`] is left.
fn fit(kind: RequestKind, configured: u64, window: Option<u64>, local: bool) -> Option<Allowance> {
    let configured = configured.max(MIN_PROMPT_TOKENS);
    let Some(window) = window else {
        return Some(Allowance {
            prompt_tokens: configured,
            reply_tokens: kind.reply(local),
        });
    };
    let quarter = u32::try_from(window / 4).unwrap_or(u32::MAX);
    let reply_tokens = kind.reply(local).min(quarter).max(MIN_REPLY);
    let (replies, follow) = if kind.asks_again() {
        (2, FOLLOW_UP_TOKENS)
    } else {
        (1, 0)
    };
    let left = window.checked_sub(replies * u64::from(reply_tokens) + follow)?;
    (left >= MIN_PROMPT_TOKENS).then_some(Allowance {
        prompt_tokens: left.min(configured),
        reply_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(window: Option<u64>) -> BudgetSettings {
        BudgetSettings {
            context_window: window,
            ..BudgetSettings::default()
        }
    }

    #[test]
    fn unknown_models_get_the_configured_allowances() {
        let budget = Budget::new(&settings(None), "llama3.1:8b").expect("fits");
        assert_eq!(budget.window, None);
        assert_eq!(budget.plan.prompt_tokens, DEFAULT_PLAN_TOKENS);
        assert_eq!(budget.fix.reply_tokens, FIX_REPLY);
    }

    #[test]
    fn a_known_window_caps_and_a_declared_one_wins() {
        let gpt4 = Budget::new(&settings(None), "gpt-4").expect("fits");
        assert_eq!(gpt4.window, Some(8_192));
        for (kind, a) in [
            (RequestKind::Plan, gpt4.plan),
            (RequestKind::Fix, gpt4.fix),
            (RequestKind::Tests, gpt4.tests),
        ] {
            let replies = if kind.asks_again() { 2 } else { 1 };
            assert!(a.prompt_tokens + replies * u64::from(a.reply_tokens) <= 8_192);
            assert!(a.prompt_tokens >= MIN_PROMPT_TOKENS);
        }
        let declared = Budget::new(&settings(Some(1_000_000)), "gpt-4").expect("fits");
        assert_eq!(declared.plan.prompt_tokens, DEFAULT_PLAN_TOKENS);
    }

    #[test]
    fn a_window_too_small_for_a_minimal_request_is_an_error() {
        let error = Budget::new(&settings(Some(3_000)), "tiny").expect_err("too small");
        assert_eq!(error.kind, "fix");
        assert!(error.to_string().contains("3000 tokens"));
        assert!(error.to_string().contains("context-window"));
        assert!(Budget::new(&settings(Some(minimum(RequestKind::Fix))), "edge").is_ok());
    }
}
