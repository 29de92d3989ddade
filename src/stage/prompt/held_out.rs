//! The Tester's request for held-out tests: tests of the behaviour the
//! failing tests check, on other inputs, written from those tests (their
//! code and how they fail), the module's text (its docstrings) and the
//! plan's item — before any fix exists, and never shown to the Fixer. A
//! fix that passes the failing tests but not these special-cases them.

use std::fmt::Write as _;

use super::{clip_tokens, stable, user};
use crate::llm::{self, ChatRequest};
use crate::stage::budget::Allowance;

const HELD_OUT_SYSTEM: &str = "You are the Tester of swarm, an automated refactoring tool for \
Python projects. You write held-out pytest tests: tests of the behaviour that a project's failing \
tests check, on other inputs than theirs, used to tell a general fix from one that only \
special-cases the failing tests. Each test asserts the CORRECT result, as the failing tests, the \
docstrings and the plan define it, not what the code returns today: the code has the bug the \
failing tests show. You never repeat the failing tests' inputs, never write tests that only \
check that something does not raise, and never assert constants.";

/// One failing test as the Tester is shown it.
pub struct FailingTest<'a> {
    /// `tests/test_calc.py::test_add`.
    pub id: &'a str,
    /// The test function's code, when it could be read.
    pub code: Option<&'a str>,
    /// How it fails (pytest's message).
    pub failure: Option<&'a str>,
}

/// What the held-out request is built from.
pub struct HeldOutInput<'a> {
    /// Target-relative path of the module under test.
    pub path: &'a str,
    /// Its dotted import name.
    pub module: &'a str,
    pub text: &'a str,
    pub plan_item: Option<&'a str>,
    pub failing: &'a [FailingTest<'a>],
    /// Where the tests will be put while they run (target-relative).
    pub test_path: &'a str,
    pub allowance: Allowance,
}

/// The request for `input`, within `input.allowance.prompt_tokens` (the
/// module's text is cut first, then failing tests are left out).
pub fn held_out_request(input: &HeldOutInput<'_>) -> ChatRequest {
    let allowance = input.allowance.prompt_tokens;
    let request = held_out_chat(input, input.failing, input.text);
    if llm::prompt_tokens(&request) <= allowance {
        return request;
    }
    for shown in [input.failing.len().min(4), 1] {
        let failing = &input.failing[..shown];
        let fixed = llm::prompt_tokens(&held_out_chat(input, failing, ""));
        if fixed < allowance {
            let text = clip_tokens(input.text, allowance - fixed);
            return held_out_chat(input, failing, text);
        }
    }
    held_out_chat(input, &input.failing[..input.failing.len().min(1)], "")
}

fn held_out_chat(input: &HeldOutInput<'_>, failing: &[FailingTest<'_>], text: &str) -> ChatRequest {
    let mut p = String::new();
    let _ = writeln!(
        p,
        "Write held-out pytest tests for `{}` (module `{}`).",
        input.path, input.module
    );
    let _ = writeln!(
        p,
        "\n## The failing tests (they show the intended behaviour)"
    );
    for test in failing {
        let _ = writeln!(p, "\n### `{}`", test.id);
        if let Some(code) = test.code {
            let _ = writeln!(p, "```python\n{}\n```", code.trim_end_matches('\n'));
        }
        if let Some(failure) = test.failure.filter(|f| !f.trim().is_empty()) {
            let _ = writeln!(
                p,
                "It fails with: {}",
                // Object addresses differ from run to run: the same
                // failure must give the same request (a replay finds it).
                crate::stage::prompt::clip(&stable(failure.trim()), 400)
            );
        }
    }
    if let Some(item) = input.plan_item.filter(|i| !i.trim().is_empty()) {
        let _ = writeln!(
            p,
            "\n## What the refactoring plan says about it\n{}",
            item.trim()
        );
    }
    let _ = writeln!(
        p,
        "\n## Current text of `{}` (it has the bug the failing tests show)\n```python\n{}\n```",
        input.path,
        text.trim_end_matches('\n')
    );
    let _ = writeln!(
        p,
        "\nReply with the whole file `{test}` in one ```python block. Import the module as \
         `import {module}` or `from {module} import …`; write plain `def test_…()` functions (no \
         classes, no fixtures from other files), each checking the behaviour the failing tests \
         check on OTHER concrete inputs than theirs, and asserting the correct result as the \
         failing tests, the docstrings and the plan define it. Keep every test fast and \
         independent of time, randomness, files and the network.",
        test = input.test_path,
        module = input.module,
    );
    ChatRequest {
        system: HELD_OUT_SYSTEM.into(),
        messages: vec![user(p)],
        max_output_tokens: input.allowance.reply_tokens,
        temperature: 0.2,
        sampling: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_shows_the_failing_tests_the_module_and_the_plan() {
        let failing = [FailingTest {
            id: "test_calc.py::test_add",
            code: Some("def test_add():\n    assert add(2, 3) == 5\n"),
            failure: Some(
                "assert -1 == 5\n +  where -1 = <calc.Sum object at 0x7f4461c4de10>.value",
            ),
        }];
        let request = held_out_request(&HeldOutInput {
            path: "calc.py",
            module: "calc",
            text: "def add(a, b):\n    \"\"\"The sum.\"\"\"\n    return a - b\n",
            plan_item: Some("- add() subtracts: a bug"),
            failing: &failing,
            test_path: "tests/test_calc_heldout_swarm.py",
            allowance: Allowance {
                prompt_tokens: 8_000,
                reply_tokens: 2_000,
            },
        });
        let prompt = &request.messages[0].content;
        assert!(prompt.starts_with("Write held-out pytest tests for `calc.py`"));
        assert!(prompt.contains("assert add(2, 3) == 5"));
        assert!(prompt.contains("It fails with: assert -1 == 5"));
        assert!(
            prompt.contains("<calc.Sum object at 0x…>.value"),
            "{prompt}"
        );
        assert!(prompt.contains("add() subtracts"));
        assert!(prompt.contains("return a - b"));
        assert!(prompt.contains("OTHER concrete inputs"));
        assert!(request.system.contains("CORRECT result"));
    }
}
