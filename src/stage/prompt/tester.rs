//! The Tester's request: pytest tests of one module's public behaviour as
//! the code stands, from its text (names, docstrings), the lines of the
//! repository that call it and the plan's item for it — within the tests
//! allowance (the module's text is cut last, the call sites first).

use std::fmt::Write as _;

use super::{clip_tokens, user};
use crate::llm::{self, ChatRequest};
use crate::stage::budget::Allowance;

const TEST_SYSTEM: &str = "You are the Tester of swarm, an automated refactoring tool for Python \
projects. You write pytest characterization tests: they pin what a module does today, so that a \
later refactoring that changes a result is caught. Each test calls the module's public functions \
and asserts on their exact results (or uses pytest.raises with the specific exception type). You \
never write tests that only check that something does not raise, and never assert constants.";

/// What the Tester's prompt is built from.
pub struct TestInput<'a> {
    /// Target-relative path of the module under test.
    pub path: &'a str,
    /// Its dotted import name.
    pub module: &'a str,
    pub text: &'a str,
    /// The plan's item for the file, if any.
    pub plan_item: Option<&'a str>,
    /// `report.py:7: print(mean([1, 2, 3]))`: lines elsewhere that call it.
    pub call_sites: &'a [String],
    /// Where the tests will live (target-relative).
    pub test_path: &'a str,
    pub allowance: Allowance,
}

/// The request for `input`, within `input.allowance.prompt_tokens`.
pub fn test_request(input: &TestInput<'_>) -> ChatRequest {
    let allowance = input.allowance.prompt_tokens;
    for sites in [input.call_sites.len(), input.call_sites.len() / 2, 0] {
        let request = test_chat(input, &input.call_sites[..sites], input.text);
        if llm::prompt_tokens(&request) <= allowance {
            return request;
        }
    }
    let fixed = llm::prompt_tokens(&test_chat(input, &[], ""));
    let text = clip_tokens(input.text, allowance.saturating_sub(fixed));
    test_chat(input, &[], text)
}

fn test_chat(input: &TestInput<'_>, sites: &[String], text: &str) -> ChatRequest {
    let mut p = String::new();
    let _ = writeln!(
        p,
        "Write pytest tests for `{}` (module `{}`).",
        input.path, input.module
    );
    if let Some(item) = input.plan_item.filter(|i| !i.trim().is_empty()) {
        let _ = writeln!(
            p,
            "\n## What the refactoring plan says about it\n{}",
            item.trim()
        );
    }
    if !sites.is_empty() {
        let _ = writeln!(p, "\n## Where the repository calls it");
        for site in sites {
            let _ = writeln!(p, "- `{site}`");
        }
    }
    let _ = writeln!(
        p,
        "\n## Current text of `{}`\n```python\n{}\n```",
        input.path,
        text.trim_end_matches('\n')
    );
    let _ = writeln!(
        p,
        "\nReply with the whole file `{test}` in one ```python block. Import the module as \
         `import {module}` or `from {module} import …`; write plain `def test_…()` functions (no \
         classes, no fixtures from other files), each asserting the exact result the code gives \
         TODAY for concrete inputs, even where that result looks wrong. Keep every test fast and \
         independent of time, randomness, files and the network.",
        test = input.test_path,
        module = input.module,
    );
    ChatRequest {
        system: TEST_SYSTEM.into(),
        messages: vec![user(p)],
        max_output_tokens: input.allowance.reply_tokens,
        temperature: 0.2,
        sampling: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input<'a>(text: &'a str, sites: &'a [String], prompt_tokens: u64) -> TestInput<'a> {
        TestInput {
            path: "stats.py",
            module: "stats",
            text,
            plan_item: Some("- mean() is messy"),
            call_sites: sites,
            test_path: "tests/test_stats_swarm.py",
            allowance: Allowance {
                prompt_tokens,
                reply_tokens: 2_000,
            },
        }
    }

    #[test]
    fn the_prompt_shows_the_file_its_callers_and_the_plan() {
        let sites = vec!["report.py:7: print(mean([1, 2, 3]))".to_string()];
        let request = test_request(&input("def mean(v):\n    return 1\n", &sites, 8_000));
        let prompt = &request.messages[0].content;
        assert!(prompt.starts_with("Write pytest tests for `stats.py`"));
        assert!(prompt.contains("report.py:7: print(mean([1, 2, 3]))"));
        assert!(prompt.contains("mean() is messy"));
        assert!(prompt.contains("def mean(v):"));
        assert!(prompt.contains("`tests/test_stats_swarm.py`"));
    }

    #[test]
    fn a_big_file_is_cut_to_the_allowance() {
        let text = "x = 1\n".repeat(5_000);
        let sites = vec!["a.py:1: f()".to_string(); 50];
        let request = test_request(&input(&text, &sites, 2_000));
        assert!(llm::prompt_tokens(&request) <= 2_000);
        assert!(request.messages[0]
            .content
            .contains("Reply with the whole file"));
    }
}
