//! Parsing Python with tree-sitter and walking the syntax tree: the shared
//! plumbing of the metrics, syntax and dangerous-call checks, and what the
//! Tester reads of the tests it generates (`parse`, `text`).

use tree_sitter::{Node, Parser, Tree};

/// Parses Python source. tree-sitter always returns a tree, with `ERROR`
/// and `MISSING` nodes where the source does not parse.
pub fn parse(source: &str) -> Tree {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("the bundled Python grammar matches the tree-sitter ABI");
    parser
        .parse(source, None)
        .expect("parsing without a timeout or cancellation flag always yields a tree")
}

/// Visits `root` and its descendants in source order; `visit` returns whether
/// to descend into the node's children. Iterative, so deep nesting cannot
/// overflow the stack.
pub(crate) fn walk<'t>(root: Node<'t>, mut visit: impl FnMut(Node<'t>) -> bool) {
    let mut cursor = root.walk();
    'next: loop {
        if visit(cursor.node()) && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'next;
            }
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

/// Whether a node is a Python 2 `print x` or `exec code` statement, which
/// tree-sitter-python accepts and Python 3 rejects. `print >> f, x` stays
/// valid Python 3 (a tuple expression), so a chevron print is not one.
fn is_python2_statement(node: Node<'_>) -> bool {
    match node.kind() {
        "exec_statement" => true,
        "print_statement" => {
            let mut cursor = node.walk();
            let chevron = node
                .named_children(&mut cursor)
                .any(|c| c.kind() == "chevron");
            !chevron
        }
        _ => false,
    }
}

/// The outermost nodes where the source fails to parse as Python 3, in
/// source order: `ERROR` and `MISSING` nodes, Python 2 `print`/`exec`
/// statements, and two indentation errors tree-sitter lets through: a block
/// with no statement (reported at the statement that should have been
/// indented) and a statement whose indentation matches no enclosing level.
pub(crate) fn syntax_error_nodes<'t>(root: Node<'t>, source: &str) -> Vec<Node<'t>> {
    let mut found = Vec::new();
    walk(root, |node| {
        if node.is_error() || node.is_missing() || is_python2_statement(node) {
            found.push(node);
            return false;
        }
        if matches!(node.kind(), "module" | "block") {
            let statements = statements(node);
            if node.kind() == "block" && statements.is_empty() {
                let mut next = node.parent().and_then(|header| header.next_named_sibling());
                while let Some(comment) = next.filter(|n| n.kind() == "comment") {
                    next = comment.next_named_sibling();
                }
                found.push(next.unwrap_or(node));
            }
            // Module statements sit at column 0; a block's at its first one's.
            let mut level = (node.kind() == "module").then_some(0);
            for statement in statements {
                if !starts_line(statement, source) {
                    continue;
                }
                let column = statement.start_position().column;
                match level {
                    None => level = Some(column),
                    Some(expected) if expected != column => found.push(statement),
                    Some(_) => {}
                }
            }
        }
        true
    });
    found.sort_by_key(|n| n.start_byte());
    found.dedup_by_key(|n| n.start_byte());
    found
}

/// The statements of a module or block (comments left out).
fn statements(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .filter(|c| c.kind() != "comment")
        .collect()
}

/// Whether only whitespace precedes `node` on its line.
fn starts_line(node: Node<'_>, source: &str) -> bool {
    let column = node.start_position().column;
    source
        .get(node.start_byte() - column..node.start_byte())
        .is_some_and(|prefix| prefix.chars().all(char::is_whitespace))
}

/// The text of a node (empty when the source is not valid UTF-8 there).
pub fn text<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    node.utf8_text(source.as_bytes()).unwrap_or_default()
}
