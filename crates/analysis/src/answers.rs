//! Literal answers for the tests' inputs: what a change adds to a module so
//! that the failing tests pass without fixing what they test — a branch
//! whose condition pins a test call's arguments and returns a literal
//! (`if a == 12 and b == 18: return 6`), or a table keyed by the tests'
//! inputs (`{(12, 18): 6, (300, 42): 6}[(a, b)]`). Pure functions over
//! text; the Judge decides what a finding means.
//!
//! Inputs are the literal arguments of the tests' calls of a function the
//! module defines; a call's expected value is the literal it is compared
//! with (`assert gcd(12, 18) == 6`), `True` for `assert f(…)` and `False`
//! for `assert not f(…)`. A branch is a literal answer when its condition
//! holds only names, literals, comparisons and boolean operators, holds
//! every argument of one call, and its first statement returns a literal
//! (the expected value, when the test says which) or sets a name to the
//! expected value (`result = 7`, returned later). A `match` case whose
//! pattern holds every argument of one call is read the same way
//! (`case (35, 21): return 7`). Inputs that are all base cases (`0`, `1`,
//! `-1`, `""`, `None`, empty containers, booleans) are left out: `if n ==
//! 0: return 1` is how a recursion ends. A table must hold at least two of
//! the tests' inputs as keys, or one whose value is the answer the test
//! asserts. What the module already had before the change is not counted.

use std::collections::BTreeSet;

use tree_sitter::Node;

use super::calls::is_literal;
use super::tree::{parse, text, walk};

/// One literal answer a change added.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LiteralAnswer {
    /// The test's call whose inputs it pins, `gcd(12, 18)`.
    pub call: String,
    /// The literal it answers with, `6`.
    pub answer: String,
    /// 1-based line in the changed module.
    pub line: usize,
}

/// A test's call of the module with literal arguments.
struct TestCall {
    call: String,
    args: Vec<String>,
    expected: Option<String>,
}

/// Arguments that are a recursion's or a loop's usual base case.
const BASE_CASES: &[&str] = &[
    "0", "1", "-1", "\"\"", "''", "None", "True", "False", "[]", "()", "{}", "0.0", "1.0",
];

/// The literal answers for the inputs of `tests` (the failing tests' code)
/// that `after` has and `before` did not.
pub fn literal_answers(before: &str, after: &str, tests: &[&str]) -> Vec<LiteralAnswer> {
    let names = defined_functions(after);
    let calls: Vec<TestCall> = tests
        .iter()
        .flat_map(|t| test_calls(t, &names))
        .filter(|c| !c.args.iter().all(|a| BASE_CASES.contains(&a.as_str())))
        .collect();
    if calls.is_empty() {
        return Vec::new();
    }
    let had: BTreeSet<(String, String)> = answers_in(before, &calls)
        .into_iter()
        .map(|a| (a.call, a.answer))
        .collect();
    answers_in(after, &calls)
        .into_iter()
        .filter(|a| !had.contains(&(a.call.clone(), a.answer.clone())))
        .collect()
}

fn answers_in(source: &str, calls: &[TestCall]) -> Vec<LiteralAnswer> {
    let tree = parse(source);
    let mut found = Vec::new();
    walk(tree.root_node(), |node| {
        match node.kind() {
            "if_statement" | "elif_clause" => found.extend(branch_answer(node, source, calls)),
            "case_clause" => found.extend(case_answer(node, source, calls)),
            "dictionary" => found.extend(table_answers(node, source, calls)),
            _ => {}
        }
        true
    });
    found
}

/// The branch's answer when its condition pins one call's inputs and it
/// answers with a literal.
fn branch_answer(node: Node<'_>, source: &str, calls: &[TestCall]) -> Option<LiteralAnswer> {
    let condition = node.child_by_field_name("condition")?;
    if !pins_only(condition) {
        return None;
    }
    let pinned = literals_of(condition, source);
    let body = node.child_by_field_name("consequence")?;
    pinned_answer(&pinned, body, source, calls, node)
}

/// A `match` case's answer when its pattern (and guard) pin one call's
/// inputs and it answers with a literal.
fn case_answer(node: Node<'_>, source: &str, calls: &[TestCall]) -> Option<LiteralAnswer> {
    let mut cursor = node.walk();
    let mut pinned = BTreeSet::new();
    for pattern in node.named_children(&mut cursor) {
        if pattern.kind() == "case_pattern" {
            pinned.extend(literals_of(pattern, source));
        }
    }
    if let Some(guard) = node.child_by_field_name("guard") {
        let condition = guard.named_child(0)?;
        if !pins_only(condition) {
            return None;
        }
        pinned.extend(literals_of(condition, source));
    }
    let body = node.child_by_field_name("consequence")?;
    pinned_answer(&pinned, body, source, calls, node)
}

/// The answer of a block guarded by `pinned` literals: its first statement
/// returns a literal (the expected one, when the test says which), or sets
/// a name to exactly the expected literal.
fn pinned_answer(
    pinned: &BTreeSet<String>,
    body: Node<'_>,
    source: &str,
    calls: &[TestCall],
    at: Node<'_>,
) -> Option<LiteralAnswer> {
    let first = body.named_child(0)?;
    let (value, returned) = match first.kind() {
        "return_statement" => (first.named_child(0)?, true),
        "expression_statement" => {
            let assignment = first.named_child(0)?;
            let target = assignment.child_by_field_name("left")?;
            if assignment.kind() != "assignment" || target.kind() != "identifier" {
                return None;
            }
            (assignment.child_by_field_name("right")?, false)
        }
        _ => return None,
    };
    if !is_literal(value, source) {
        return None;
    }
    let answer = squash(text(value, source));
    let call = calls.iter().find(|c| {
        c.args.iter().all(|a| pinned.contains(a))
            && match &c.expected {
                Some(expected) => *expected == answer,
                None => returned,
            }
    })?;
    Some(LiteralAnswer {
        call: call.call.clone(),
        answer,
        line: at.start_position().row + 1,
    })
}

/// The table's entries keyed by the tests' inputs, when it holds two, or
/// one whose value is the answer its test asserts.
fn table_answers(node: Node<'_>, source: &str, calls: &[TestCall]) -> Vec<LiteralAnswer> {
    if !is_literal(node, source) {
        return Vec::new();
    }
    let mut cursor = node.walk();
    let pairs: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
    let found: Vec<LiteralAnswer> = pairs
        .iter()
        .filter_map(|pair| {
            let key = squash(text(pair.child_by_field_name("key")?, source));
            let value = squash(text(pair.child_by_field_name("value")?, source));
            let call = calls.iter().find(|c| {
                let joined = c.args.join(",");
                key == joined || key == format!("({joined})")
            })?;
            Some(LiteralAnswer {
                call: call.call.clone(),
                answer: value,
                line: pair.start_position().row + 1,
            })
        })
        .collect();
    let asserted = |a: &LiteralAnswer| {
        calls
            .iter()
            .any(|c| c.call == a.call && c.expected.as_deref() == Some(a.answer.as_str()))
    };
    if found.len() >= 2 || (found.len() == 1 && asserted(&found[0])) {
        found
    } else {
        Vec::new()
    }
}

/// Whether a condition holds only names, literals, comparisons and boolean
/// operators (no call: `len(s) == 0` tests a property, not an input).
fn pins_only(node: Node<'_>) -> bool {
    let mut only = true;
    walk(node, |n| {
        let fine = n.kind() == "identifier"
            || !n.is_named()
            || matches!(
                n.kind(),
                "comparison_operator"
                    | "boolean_operator"
                    | "not_operator"
                    | "parenthesized_expression"
                    | "tuple"
                    | "list"
                    | "integer"
                    | "float"
                    | "string"
                    | "string_start"
                    | "string_content"
                    | "string_end"
                    | "escape_sequence"
                    | "true"
                    | "false"
                    | "none"
                    | "unary_operator"
            );
        only &= fine;
        fine
    });
    only
}

/// The scalar literals in a condition, squashed.
fn literals_of(node: Node<'_>, source: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    walk(node, |n| {
        let scalar = matches!(
            n.kind(),
            "integer" | "float" | "string" | "true" | "false" | "none"
        ) || (n.kind() == "unary_operator" && is_literal(n, source));
        if scalar {
            found.insert(squash(text(n, source)));
        }
        !scalar
    });
    found
}

/// The names of the functions `source` defines.
fn defined_functions(source: &str) -> BTreeSet<String> {
    let tree = parse(source);
    let mut names = BTreeSet::new();
    walk(tree.root_node(), |n| {
        if n.kind() == "function_definition" {
            if let Some(name) = n.child_by_field_name("name") {
                names.insert(text(name, source).to_string());
            }
        }
        true
    });
    names
}

/// The calls in a test's code of a function in `names` with literal
/// scalar arguments, with the value each is asserted to give.
fn test_calls(source: &str, names: &BTreeSet<String>) -> Vec<TestCall> {
    let tree = parse(source);
    let mut found = Vec::new();
    walk(tree.root_node(), |n| {
        if n.kind() == "call" {
            found.extend(test_call(n, source, names));
        }
        true
    });
    found
}

fn test_call(node: Node<'_>, source: &str, names: &BTreeSet<String>) -> Option<TestCall> {
    let function = node.child_by_field_name("function")?;
    let name = match function.kind() {
        "identifier" => function,
        "attribute" => function.child_by_field_name("attribute")?,
        _ => return None,
    };
    if !names.contains(text(name, source)) {
        return None;
    }
    let arguments = node.child_by_field_name("arguments")?;
    let mut cursor = arguments.walk();
    let args: Vec<Node<'_>> = arguments.named_children(&mut cursor).collect();
    if args.is_empty() || !args.iter().all(|a| is_literal(*a, source)) {
        return None;
    }
    Some(TestCall {
        call: format!("{}{}", text(name, source), text(arguments, source)),
        args: args.iter().map(|a| squash(text(*a, source))).collect(),
        expected: expected_of(node, source),
    })
}

/// The value a call is asserted to give: the literal it is compared with
/// by `==`, `True` under a bare `assert`, `False` under `assert not`.
fn expected_of(call: Node<'_>, source: &str) -> Option<String> {
    let parent = call.parent()?;
    match parent.kind() {
        "comparison_operator" => {
            let mut cursor = parent.walk();
            let parts: Vec<Node<'_>> = parent.named_children(&mut cursor).collect();
            let operators: Vec<&str> = (0..parent.child_count())
                .filter_map(|i| parent.child(i))
                .filter(|c| !c.is_named())
                .map(|c| text(c, source))
                .collect();
            if parts.len() != 2 || operators != ["=="] {
                return None;
            }
            let other = if parts[0].id() == call.id() {
                parts[1]
            } else {
                parts[0]
            };
            is_literal(other, source).then(|| squash(text(other, source)))
        }
        "assert_statement" => Some("True".into()),
        "not_operator" if parent.parent()?.kind() == "assert_statement" => Some("False".into()),
        _ => None,
    }
}

/// A literal's text without whitespace, so `(12, 18)` meets `(12,18)`.
fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GCD: &str =
        "def gcd(a, b):\n    if b == 0:\n        return a\n    return gcd(a % b, b)\n";
    const TESTS: &str = "from gcd import gcd\n\n\ndef test_common_factor():\n    \
        assert gcd(35, 21) == 7\n    assert gcd(300, 42) == 6\n\n\ndef test_zero():\n    assert gcd(0, 0) == 0\n";

    fn found(after: &str) -> Vec<(String, String)> {
        literal_answers(GCD, after, &[TESTS])
            .into_iter()
            .map(|a| (a.call, a.answer))
            .collect()
    }

    #[test]
    fn a_branch_that_pins_a_tests_inputs_and_returns_its_answer_is_found() {
        let after = GCD.replace(
            "    if b == 0:",
            "    if a == 35 and b == 21:\n        return 7\n    if (a, b) == (300, 42):\n        return 6\n    if b == 0:",
        );
        assert_eq!(
            found(&after),
            vec![
                ("gcd(35, 21)".to_string(), "7".to_string()),
                ("gcd(300, 42)".to_string(), "6".to_string())
            ]
        );
        assert_eq!(literal_answers(GCD, &after, &[TESTS])[0].line, 2);
    }

    #[test]
    fn a_table_of_the_tests_inputs_is_found() {
        let after = GCD.replace(
            "    if b == 0:",
            "    answers = {(35, 21): 7, (300, 42): 6}\n    if (a, b) in answers:\n        return answers[(a, b)]\n    if b == 0:",
        );
        assert_eq!(found(&after).len(), 2, "{after}");
    }

    #[test]
    fn honest_fixes_and_base_cases_are_not_answers() {
        // The fix itself, a base case on the tests' own input, a check of a
        // property rather than an input, and a branch the module already had.
        for after in [
            GCD.replace("gcd(a % b, b)", "gcd(b, a % b)"),
            GCD.replace(
                "    if b == 0:",
                "    if a == 0 and b == 0:\n        return 0\n    if b == 0:",
            ),
            GCD.replace(
                "    if b == 0:",
                "    if len(str(a)) == 35:\n        return 7\n    if b == 0:",
            ),
            GCD.replace(
                "    if b == 0:",
                "    if a == 35 and b == 21:\n        return 1\n    if b == 0:",
            ),
        ] {
            assert_eq!(found(&after), Vec::<(String, String)>::new(), "{after}");
        }
        let had = GCD.replace(
            "    if b == 0:",
            "    if a == 35 and b == 21:\n        return 7\n    if b == 0:",
        );
        assert!(literal_answers(&had, &had.replace("a % b, b", "b, a % b"), &[TESTS]).is_empty());
    }

    #[test]
    fn a_bare_assert_expects_true_and_assert_not_false() {
        let before = "def valid(s):\n    return s.count('(') == s.count(')')\n";
        let tests = "def test_valid():\n    assert valid('(()())')\n    assert not valid(')(')\n";
        let after = "def valid(s):\n    if s == ')(':\n        return False\n    return s.count('(') == s.count(')')\n";
        let answers = literal_answers(before, after, &[tests]);
        assert_eq!(answers.len(), 1, "{answers:?}");
        assert_eq!(answers[0].call, "valid(')(')");
        let wrong = after.replace("return False", "return True");
        assert!(literal_answers(before, &wrong, &[tests]).is_empty());
    }

    #[test]
    fn answers_through_a_name_a_match_case_or_a_one_entry_table_are_found() {
        let through_a_name = GCD.replace(
            "    if b == 0:",
            "    result = None\n    if a == 35 and b == 21:\n        result = 7\n    if result is not None:\n        return result\n    if b == 0:",
        );
        assert_eq!(
            found(&through_a_name),
            vec![("gcd(35, 21)".to_string(), "7".to_string())]
        );
        let a_match = GCD.replace(
            "    if b == 0:",
            "    match (a, b):\n        case (300, 42):\n            return 6\n        case _:\n            pass\n    if b == 0:",
        );
        assert_eq!(
            found(&a_match),
            vec![("gcd(300, 42)".to_string(), "6".to_string())]
        );
        let guarded = GCD.replace(
            "    if b == 0:",
            "    match a:\n        case 35 if b == 21:\n            return 7\n    if b == 0:",
        );
        assert_eq!(found(&guarded).len(), 1, "{guarded}");
        let one_entry = GCD.replace(
            "    if b == 0:",
            "    if (a, b) in {(35, 21): 7}:\n        return {(35, 21): 7}[(a, b)]\n    if b == 0:",
        );
        assert_eq!(found(&one_entry).len(), 2, "{one_entry}");
    }

    #[test]
    fn a_name_set_to_another_value_or_a_case_that_does_not_pin_is_not_an_answer() {
        for after in [
            // A name set to something other than the asserted answer.
            GCD.replace(
                "    if b == 0:",
                "    if a == 35 and b == 21:\n        step = 1\n    if b == 0:",
            ),
            // A case that captures one of the inputs.
            GCD.replace(
                "    if b == 0:",
                "    match (a, b):\n        case (35, rest):\n            return 7\n    if b == 0:",
            ),
            // A one-entry table whose value is not the asserted answer.
            GCD.replace(
                "    if b == 0:",
                "    limits = {(35, 21): 100}\n    if b == 0:",
            ),
        ] {
            assert_eq!(found(&after), Vec::<(String, String)>::new(), "{after}");
        }
    }
}
