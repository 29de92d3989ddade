//! Makes the kept tests a file worth delivering: the imports only the
//! dropped tests used are removed, and a module docstring and one docstring
//! per test function (from its name) are added where missing — so pylint,
//! which scores the delivered state with the tests in it, has nothing new
//! to say about them. Text in, text out; what a test does is never changed.

use tree_sitter::Node;

use swarm_analysis::import_bindings;
use swarm_analysis::tree::{parse, text};

/// `source` tidied for delivery as the tests of `file`.
pub fn tidy(source: &str, file: &str) -> String {
    let without = drop_unused_imports(source);
    let documented = add_docstrings(&without);
    if starts_with_docstring(&documented) {
        return documented;
    }
    format!(
        "\"\"\"Characterization tests of `{file}`: what it does today, pinned before swarm \
         changed it (written by swarm's Tester, each one validated).\"\"\"\n{documented}"
    )
}

/// Whether the module's first statement is a string.
fn starts_with_docstring(source: &str) -> bool {
    let tree = parse(source);
    let root = tree.root_node();
    let mut cursor = root.walk();
    let first = root
        .named_children(&mut cursor)
        .find(|n| n.kind() != "comment");
    first.is_some_and(is_string_statement)
}

fn is_string_statement(node: Node<'_>) -> bool {
    node.kind() == "expression_statement"
        && node.named_child(0).is_some_and(|c| c.kind() == "string")
}

/// Removes top-level import statements none of whose names the rest of
/// the file uses.
fn drop_unused_imports(source: &str) -> String {
    let tree = parse(source);
    let root = tree.root_node();
    let mut cursor = root.walk();
    let mut cuts = Vec::new();
    for node in root.named_children(&mut cursor) {
        if !matches!(node.kind(), "import_statement" | "import_from_statement") {
            continue;
        }
        let statement = text(node, source);
        let bindings = import_bindings(statement);
        if bindings.is_empty() {
            continue;
        }
        let rest = format!(
            "{}{}",
            &source[..node.start_byte()],
            &source[node.end_byte()..]
        );
        let used = bindings.iter().any(|b| {
            let head = b.local.split('.').next().unwrap_or(&b.local);
            uses_name(&rest, head)
        });
        if !used {
            // The statement and its line break.
            let end = source[node.end_byte()..]
                .find('\n')
                .map_or(source.len(), |i| node.end_byte() + i + 1);
            cuts.push((node.start_byte(), end));
        }
    }
    let mut out = String::new();
    let mut at = 0;
    for (start, end) in cuts {
        out.push_str(&source[at..start]);
        at = end;
    }
    out.push_str(&source[at..]);
    out
}

/// Whether `source` uses `name` as an identifier.
fn uses_name(source: &str, name: &str) -> bool {
    let tree = parse(source);
    let mut found = false;
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        if node.kind() == "identifier" && text(node, source) == name {
            found = true;
            break;
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    found
}

/// Gives every top-level test function without a docstring one made from
/// its name (`test_mean_of_three` → `"""Mean of three."""`).
fn add_docstrings(source: &str) -> String {
    let tree = parse(source);
    let root = tree.root_node();
    let mut cursor = root.walk();
    let mut inserts = Vec::new();
    for node in root.named_children(&mut cursor) {
        let definition = if node.kind() == "decorated_definition" {
            node.child_by_field_name("definition")
        } else {
            Some(node)
        };
        let Some(definition) = definition.filter(|d| d.kind() == "function_definition") else {
            continue;
        };
        let Some(body) = definition.child_by_field_name("body") else {
            continue;
        };
        let name = definition
            .child_by_field_name("name")
            .map(|n| text(n, source))
            .unwrap_or_default();
        let first = body.named_child(0);
        let documented = first.is_some_and(is_string_statement);
        // A body on the `def` line itself is left as it is.
        if documented || body.start_position().row == definition.start_position().row {
            continue;
        }
        let indent = " ".repeat(body.start_position().column);
        inserts.push((
            body.start_byte(),
            format!("\"\"\"{}\"\"\"\n{indent}", sentence(name)),
        ));
    }
    let mut out = source.to_string();
    for (at, text) in inserts.into_iter().rev() {
        out.insert_str(at, &text);
    }
    out
}

/// `test_mean_of_three` → `Mean of three.`
fn sentence(name: &str) -> String {
    let words = name
        .trim_start_matches("test")
        .trim_start_matches('_')
        .replace('_', " ");
    let words = words.trim();
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => format!("{}{}.", first.to_uppercase(), chars.as_str()),
        None => "The module's behaviour.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unused_imports_go_and_docstrings_come() {
        let source = "import pathlib\n\nimport pytest\n\nfrom stats import mean\n\n\n\
                      def test_mean_of_three():\n    assert mean([1, 2, 3]) == 2.0\n\n\n\
                      def test_documented():\n    \"\"\"Already.\"\"\"\n    assert mean([1]) == 1\n";
        let tidied = tidy(source, "stats.py");
        assert!(tidied.starts_with("\"\"\"Characterization tests of `stats.py`"));
        assert!(!tidied.contains("pathlib"), "{tidied}");
        assert!(!tidied.contains("import pytest"), "{tidied}");
        assert!(tidied.contains("from stats import mean\n"));
        assert!(
            tidied.contains(
                "def test_mean_of_three():\n    \"\"\"Mean of three.\"\"\"\n    assert mean"
            ),
            "{tidied}"
        );
        assert_eq!(tidied.matches("Already.").count(), 1);
        assert_eq!(swarm_analysis::check_syntax(&tidied), Ok(()));
    }

    #[test]
    fn a_file_with_a_docstring_keeps_it() {
        let source = "\"\"\"Mine.\"\"\"\nimport pytest\n\n\ndef test_x():\n    with pytest.raises(KeyError):\n        {}['a']\n";
        let tidied = tidy(source, "stats.py");
        assert!(
            tidied.starts_with("\"\"\"Mine.\"\"\"\nimport pytest\n"),
            "{tidied}"
        );
    }
}
