//! Lines of code, functions and cyclomatic complexity.
//!
//! **Lines of code**: lines that are not blank and not only a comment; lines
//! inside a multi-line string (docstrings included) count.
//!
//! **Cyclomatic complexity** of a function: 1, plus 1 for each
//! - `if`, `elif`, `for`, `while` statement (an `else` adds nothing),
//! - `except` / `except*` clause,
//! - `and` / `or` operator (`a and b or c` adds 2),
//! - conditional expression (`x if c else y`),
//! - `if` in a comprehension (the comprehension's `for` adds nothing),
//! - `case` of a `match` statement.
//!
//! `with`, `try`, `finally`, `assert` and `lambda` add nothing. A nested
//! function or class is measured on its own and adds nothing to its parent;
//! a lambda's decisions count toward the function that holds it.

use tree_sitter::Node;

use super::tree::{text, walk};
use super::FunctionMetrics;

/// Node kinds that each add one path through a function.
const DECISIONS: &[&str] = &[
    "if_statement",
    "elif_clause",
    "for_statement",
    "while_statement",
    "except_clause",
    "except_group_clause",
    "boolean_operator",
    "conditional_expression",
    "if_clause",
    "case_clause",
];

/// Which lines are code: `code[row]` for 0-based rows.
pub(crate) fn code_lines(root: Node<'_>, source: &str) -> Vec<bool> {
    let lines: Vec<&str> = source.lines().collect();
    let mut in_string = vec![false; lines.len()];
    walk(root, |node| {
        if node.kind() == "string" {
            let (start, end) = (node.start_position().row, node.end_position().row);
            for inside in in_string.iter_mut().take(end + 1).skip(start + 1) {
                *inside = true;
            }
            return false;
        }
        true
    });
    lines
        .iter()
        .zip(in_string)
        .map(|(line, inside)| {
            let t = line.trim();
            !t.is_empty() && (inside || !t.starts_with('#'))
        })
        .collect()
}

/// Every function and method, named `f`, `Class.method`, `outer.inner`, in source order.
pub(crate) fn functions(root: Node<'_>, source: &str, code: &[bool]) -> Vec<FunctionMetrics> {
    let mut found = Vec::new();
    let mut scopes: Vec<(Node<'_>, String)> = vec![(root, String::new())];
    while let Some((scope, prefix)) = scopes.pop() {
        let mut nested = Vec::new();
        walk(scope, |node| {
            if node == scope {
                return true;
            }
            let kind = node.kind();
            if kind != "function_definition" && kind != "class_definition" {
                return true;
            }
            let name = node
                .child_by_field_name("name")
                .map(|n| text(n, source))
                .unwrap_or("<unnamed>");
            let qualified = if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}.{name}")
            };
            if kind == "function_definition" {
                let (start, end) = (node.start_position().row, node.end_position().row);
                found.push(FunctionMetrics {
                    name: qualified.clone(),
                    line: start + 1,
                    end_line: end + 1,
                    complexity: complexity(node),
                    loc: code
                        .get(start..=end.min(code.len().saturating_sub(1)))
                        .map_or(0, |rows| rows.iter().filter(|c| **c).count()),
                });
            }
            nested.push((node, qualified));
            false
        });
        // Reversed so that the stack pops scopes in source order.
        scopes.extend(nested.into_iter().rev());
    }
    found.sort_by_key(|f| f.line);
    found
}

/// The cyclomatic complexity of one function (see the module doc).
pub(crate) fn complexity(function: Node<'_>) -> u32 {
    let mut decisions = 0;
    walk(function, |node| {
        if node != function && matches!(node.kind(), "function_definition" | "class_definition") {
            return false;
        }
        if DECISIONS.contains(&node.kind()) {
            decisions += 1;
        }
        true
    });
    1 + decisions
}
