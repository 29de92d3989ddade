//! Lines of code, functions, cyclomatic complexity, statements and imported
//! names of JavaScript and TypeScript.
//!
//! **Lines of code**: lines holding some token that is not a comment; every
//! line of a multi-line string or template literal counts, a line inside a
//! block comment does not.
//!
//! **Functions** are the named ones: declarations (`function f`), methods
//! and accessors (`Class.m`, object methods), and function or arrow
//! expressions bound to a name (`const f = () => …`, `obj.f = function
//! …`, a class field `handler = () => …`, an object property `f: () =>
//! …`). Nested named functions are `outer.inner`. An anonymous function
//! passed along (`items.map(x => x * 2)`, a `describe` callback) is not a
//! function of its own: its decisions count toward the function that holds
//! it, as Python's lambdas do.
//!
//! **Cyclomatic complexity** of a function: 1, plus 1 for each `if`, `for`,
//! `for … in`/`for … of`, `while`, `do … while`, `catch`, `case` (not
//! `default`), conditional expression (`c ? a : b`) and `&&`, `||`, `??`
//! operator. An `else`, `try`, `finally` or `?.` adds nothing.

use tree_sitter::Node;

use super::super::tree::{text, walk};
use super::super::FunctionMetrics;

/// Node kinds that each add one path through a function.
const DECISIONS: &[&str] = &[
    "if_statement",
    "for_statement",
    "for_in_statement",
    "while_statement",
    "do_statement",
    "catch_clause",
    "switch_case",
    "ternary_expression",
];
/// Boolean operators that each add one path.
const SHORT_CIRCUITS: &[&str] = &["&&", "||", "??"];
/// Node kinds that are functions.
const FUNCTION_KINDS: &[&str] = &[
    "function_declaration",
    "generator_function_declaration",
    "function_expression",
    "function",
    "generator_function",
    "arrow_function",
    "method_definition",
];
/// Node kinds that are classes (a scope for method names).
const CLASS_KINDS: &[&str] = &["class_declaration", "class", "abstract_class_declaration"];
/// Node kinds that count as one statement each.
const STATEMENTS: &[&str] = &[
    "expression_statement",
    "lexical_declaration",
    "variable_declaration",
    "return_statement",
    "if_statement",
    "for_statement",
    "for_in_statement",
    "while_statement",
    "do_statement",
    "try_statement",
    "throw_statement",
    "switch_statement",
    "break_statement",
    "continue_statement",
    "labeled_statement",
    "debugger_statement",
    "import_statement",
    "function_declaration",
    "generator_function_declaration",
    "class_declaration",
    "abstract_class_declaration",
    "method_definition",
    "field_definition",
    "public_field_definition",
    "interface_declaration",
    "type_alias_declaration",
    "enum_declaration",
];

/// Which lines are code: `code[row]` for 0-based rows.
pub(super) fn code_lines(root: Node<'_>, source: &str) -> Vec<bool> {
    let rows = source.lines().count();
    let mut code = vec![false; rows];
    walk(root, |node| {
        let kind = node.kind();
        if kind == "comment" || kind == "html_comment" {
            return false;
        }
        let whole = matches!(kind, "string" | "template_string" | "regex");
        if whole || node.child_count() == 0 {
            let (start, end) = (node.start_position().row, node.end_position().row);
            // A token that ends at column 0 of a row (a newline) does not reach it.
            let end = if end > start && node.end_position().column == 0 {
                end - 1
            } else {
                end
            };
            for row in code.iter_mut().take(end + 1).skip(start) {
                *row = true;
            }
            return !whole;
        }
        true
    });
    code
}

/// The name a function node is known by, `None` for an anonymous one.
fn function_name(node: Node<'_>, source: &str) -> Option<String> {
    if let Some(name) = node.child_by_field_name("name") {
        return Some(text(name, source).to_string());
    }
    let parent = node.parent()?;
    let named = match parent.kind() {
        "variable_declarator" => parent.child_by_field_name("name"),
        "assignment_expression" => parent.child_by_field_name("left"),
        "pair" => parent.child_by_field_name("key"),
        "field_definition" => parent.child_by_field_name("property"),
        "public_field_definition" => parent.child_by_field_name("name"),
        _ => None,
    }?;
    let value_is_this = parent
        .child_by_field_name("value")
        .or_else(|| parent.child_by_field_name("right"))
        .is_some_and(|v| v == node);
    (value_is_this && named.kind() != "object_pattern" && named.kind() != "array_pattern")
        .then(|| text(named, source).to_string())
}

/// Every named function and method, named `f`, `Class.m`, `outer.inner`,
/// in source order (see the module doc).
pub(super) fn functions(root: Node<'_>, source: &str, code: &[bool]) -> Vec<FunctionMetrics> {
    let mut found = Vec::new();
    let mut scopes: Vec<(Node<'_>, String)> = vec![(root, String::new())];
    while let Some((scope, prefix)) = scopes.pop() {
        let mut nested = Vec::new();
        walk(scope, |node| {
            if node == scope {
                return true;
            }
            let kind = node.kind();
            let is_class = CLASS_KINDS.contains(&kind);
            if !is_class && !FUNCTION_KINDS.contains(&kind) {
                return true;
            }
            let Some(name) = function_name(node, source) else {
                // Anonymous: part of the enclosing scope.
                return true;
            };
            let qualified = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}.{name}")
            };
            if !is_class {
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
        scopes.extend(nested.into_iter().rev());
    }
    found.sort_by_key(|f| f.line);
    found
}

/// The cyclomatic complexity of one function (see the module doc).
fn complexity(function: Node<'_>) -> u32 {
    let mut decisions = 0;
    walk(function, |node| {
        if node != function && node_is_named_scope(node) {
            return false;
        }
        let kind = node.kind();
        if DECISIONS.contains(&kind) {
            decisions += 1;
        } else if kind == "binary_expression" {
            let op = node
                .child_by_field_name("operator")
                .map(|o| o.kind())
                .unwrap_or_default();
            if SHORT_CIRCUITS.contains(&op) {
                decisions += 1;
            }
        }
        true
    });
    1 + decisions
}

/// Whether `node` starts a named function or a class (measured on its own).
/// Without the source text, a function is named when the grammar gives it
/// a name or it is the value of a declarator, assignment, pair or field.
fn node_is_named_scope(node: Node<'_>) -> bool {
    let kind = node.kind();
    if CLASS_KINDS.contains(&kind) {
        return true;
    }
    if !FUNCTION_KINDS.contains(&kind) {
        return false;
    }
    if node.child_by_field_name("name").is_some() {
        return true;
    }
    node.parent().is_some_and(|p| {
        matches!(
            p.kind(),
            "variable_declarator"
                | "assignment_expression"
                | "pair"
                | "field_definition"
                | "public_field_definition"
        )
    })
}

/// How many statements the tree holds (see [`STATEMENTS`]); an `export`
/// counts once, through the declaration it wraps or by itself.
pub(super) fn statement_count(root: Node<'_>) -> usize {
    let mut count = 0;
    walk(root, |node| {
        if STATEMENTS.contains(&node.kind())
            || (node.kind() == "export_statement"
                && node.child_by_field_name("declaration").is_none())
        {
            count += 1;
        }
        true
    });
    count
}

/// The names its imports take, sorted, each once: `a` of `import { a as b }`
/// and of `const { a } = require(…)`, `default` of a default import.
pub(super) fn imported_names(root: Node<'_>, source: &str) -> Vec<String> {
    let mut names = Vec::new();
    walk(root, |node| {
        match node.kind() {
            "import_specifier" => {
                if let Some(name) = node.child_by_field_name("name") {
                    names.push(text(name, source).trim_matches(['"', '\'']).to_string());
                }
            }
            "import_clause" => {
                let mut cursor = node.walk();
                if node
                    .named_children(&mut cursor)
                    .any(|c| c.kind() == "identifier")
                {
                    names.push("default".to_string());
                }
            }
            "variable_declarator" => {
                let required = node
                    .child_by_field_name("value")
                    .is_some_and(|v| super::danger::required_module(v, source).is_some());
                if let Some(pattern) = node
                    .child_by_field_name("name")
                    .filter(|n| required && n.kind() == "object_pattern")
                {
                    let mut cursor = pattern.walk();
                    for part in pattern.named_children(&mut cursor) {
                        let key = match part.kind() {
                            "shorthand_property_identifier_pattern" => Some(part),
                            "pair_pattern" => part.child_by_field_name("key"),
                            _ => None,
                        };
                        if let Some(key) = key {
                            names.push(text(key, source).to_string());
                        }
                    }
                }
            }
            _ => {}
        }
        true
    });
    names.sort_unstable();
    names.dedup();
    names
}
