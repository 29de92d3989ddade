//! The smallest repair that lets a module parse, when the parser points at
//! one missing token: the token tree-sitter marks `MISSING` at its place
//! (a `:` after `def f(x)`, a `)` left open), else one closing token (`:`,
//! `)`, `]`, `}`) at the end of a line an error starts or ends on, or the
//! line before, innermost errors first (an `ERROR` node may span the whole
//! module around the one that matters). Deterministic: the same source always gets the same repair, and
//! a repair is returned only when the whole module then parses. Pure, no I/O.

use std::collections::HashMap;

use tree_sitter::Node;

use super::tree::{parse, syntax_error_nodes, walk};

/// Tokens a repair may insert.
const INSERTABLE: &[&str] = &[":", ")", "]", "}", ","];

/// Tokens tried at the end of a line when tree-sitter names none.
const LINE_ENDINGS: &[&str] = &[":", ")", "]", "}"];

/// A module repaired by inserting one token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxRepair {
    /// The module with the token inserted; it parses.
    pub text: String,
    /// The token inserted.
    pub inserted: String,
    /// 1-based line where it was inserted.
    pub line: usize,
}

/// Lines (0-based) tried for a closing token, at most.
const MAX_ROWS: usize = 24;

/// The one-token repair of `source`, when there is one (see the module
/// doc); `None` when `source` parses already or no single token makes it.
pub fn repair_missing_token(source: &str) -> Option<SyntaxRepair> {
    let tree = parse(source);
    if syntax_error_nodes(tree.root_node(), source).is_empty() {
        return None;
    }
    // The innermost errors point closest to the missing token: an ERROR
    // node can span the whole module around the one that matters.
    let mut errors: Vec<(usize, Node<'_>)> = Vec::new();
    let mut depth_of: HashMap<usize, usize> = HashMap::new();
    walk(tree.root_node(), |node| {
        let depth = node
            .parent()
            .and_then(|p| depth_of.get(&p.id()).map(|d| d + 1))
            .unwrap_or(0);
        depth_of.insert(node.id(), depth);
        if node.is_error() || node.is_missing() {
            errors.push((depth, node));
        }
        true
    });
    errors.sort_by_key(|(depth, node)| (std::cmp::Reverse(*depth), node.start_byte()));
    let mut candidates: Vec<(usize, &str)> = errors
        .iter()
        .filter(|(_, n)| n.is_missing() && INSERTABLE.contains(&n.kind()))
        .map(|(_, n)| (n.start_byte(), n.kind()))
        .collect();
    let mut rows: Vec<usize> = Vec::new();
    for (_, node) in &errors {
        let (start, end) = (node.start_position().row, node.end_position().row);
        for row in [Some(start), Some(end), start.checked_sub(1)]
            .into_iter()
            .flatten()
        {
            if !rows.contains(&row) && rows.len() < MAX_ROWS {
                rows.push(row);
            }
        }
    }
    for row in rows {
        if let Some(end) = line_end(source, row) {
            candidates.extend(LINE_ENDINGS.iter().map(|token| (end, *token)));
        }
    }
    candidates.into_iter().find_map(|(at, token)| {
        let mut text = String::with_capacity(source.len() + token.len());
        text.push_str(&source[..at]);
        text.push_str(token);
        text.push_str(&source[at..]);
        let tree = parse(&text);
        syntax_error_nodes(tree.root_node(), &text)
            .is_empty()
            .then(|| SyntaxRepair {
                line: source[..at].matches('\n').count() + 1,
                inserted: token.to_string(),
                text,
            })
    })
}

/// The byte offset of the end of line `row` (0-based), before trailing
/// whitespace and a trailing `#` comment; `None` for a blank line.
fn line_end(source: &str, row: usize) -> Option<usize> {
    let start: usize = source.split_inclusive('\n').take(row).map(str::len).sum();
    let line = source[start..].split('\n').next()?;
    let code = match line
        .find(" #")
        .or_else(|| line.strip_prefix('#').map(|_| 0))
    {
        Some(comment) if !line[..comment].contains(['"', '\'']) => &line[..comment],
        _ => line,
    };
    let code = code.trim_end();
    (!code.trim().is_empty()).then_some(start + code.len())
}

#[cfg(test)]
mod tests {
    use super::repair_missing_token;

    #[test]
    fn a_missing_colon_is_inserted_where_it_belongs() {
        let source = "def mean(values)\n    \"\"\"The mean.\"\"\"\n    total = 0\n    for v in values:\n        total += v\n    return total / len(values)\n";
        let repair = repair_missing_token(source).expect("a repair");
        assert_eq!(repair.inserted, ":");
        assert_eq!(repair.line, 1);
        assert_eq!(repair.text, source.replacen("(values)\n", "(values):\n", 1));
    }

    #[test]
    fn a_colon_later_in_the_file_and_an_open_parenthesis() {
        let source = "import os\n\n\ndef ok():\n    return 1\n\n\ndef load(path)  # the loader\n    return os.path.exists(path)\n";
        let repair = repair_missing_token(source).expect("a repair");
        assert_eq!(repair.line, 8);
        assert!(
            repair.text.contains("def load(path):  # the loader\n"),
            "{}",
            repair.text
        );
        let open = "def f(x):\n    return max(x, 1\n\n\ndef g():\n    return 2\n";
        let repair = repair_missing_token(open).expect("a repair");
        assert!(
            repair.text.contains("return max(x, 1)\n"),
            "{}",
            repair.text
        );
    }

    #[test]
    fn an_error_spanning_the_module_still_finds_the_colon() {
        let source = "\"\"\"Small statistics.\"\"\"\n\n\ndef mean(values)\n    \"\"\"The mean.\"\"\"\n    total = 0\n    for value in values:\n        total += value\n    return total / len(values)\n";
        let repair = repair_missing_token(source).expect("a repair");
        assert_eq!((repair.inserted.as_str(), repair.line), (":", 4));
        assert_eq!(repair.text, source.replacen("(values)\n", "(values):\n", 1));
    }

    #[test]
    fn no_single_token_repairs_two_errors_or_a_parsing_module() {
        assert_eq!(repair_missing_token("def f(x):\n    return x\n"), None);
        assert_eq!(
            repair_missing_token("def f(x)\n    return x +\n\ndef g(\n"),
            None
        );
    }
}
