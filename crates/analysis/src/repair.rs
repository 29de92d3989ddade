//! The smallest repair that lets a module parse, when the parser points at
//! one missing token: the token tree-sitter marks `MISSING` at its place
//! (a `:` after `def f(x)`, a `)` left open), else one closing token (`:`,
//! `)`, `]`, `}`) at the end of the line the first error is on or the line
//! before. Deterministic: the same source always gets the same repair, and
//! a repair is returned only when the whole module then parses. Pure, no I/O.

use super::tree::{parse, syntax_error_nodes};

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

/// The one-token repair of `source`, when there is one (see the module
/// doc); `None` when `source` parses already or no single token makes it.
pub fn repair_missing_token(source: &str) -> Option<SyntaxRepair> {
    let tree = parse(source);
    let errors = syntax_error_nodes(tree.root_node(), source);
    let first = *errors.first()?;
    let mut candidates: Vec<(usize, &str)> = Vec::new();
    if first.is_missing() && INSERTABLE.contains(&first.kind()) {
        candidates.push((first.start_byte(), first.kind()));
    }
    let row = first.start_position().row;
    for line in [Some(row), row.checked_sub(1)].into_iter().flatten() {
        if let Some(end) = line_end(source, line) {
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
    fn no_single_token_repairs_two_errors_or_a_parsing_module() {
        assert_eq!(repair_missing_token("def f(x):\n    return x\n"), None);
        assert_eq!(
            repair_missing_token("def f(x)\n    return x +\n\ndef g(\n"),
            None
        );
    }
}
