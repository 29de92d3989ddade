//! Static metrics of JavaScript and TypeScript source with tree-sitter's
//! JavaScript, TypeScript and TSX grammars: the same [`FileMetrics`] shape
//! as Python's (lines of code, functions, cyclomatic complexity, hotspots,
//! severity by the crate's thresholds), a syntax check, the statement count
//! a lint score divides by, and the dangerous calls the Reviewer refuses
//! (see [`danger`]). Pure functions over text; no I/O.
//!
//! The grammar follows the file name ([`Dialect::of`]): `.ts`, `.mts`,
//! `.cts` are TypeScript, `.tsx` is TSX, everything else JavaScript (whose
//! grammar reads JSX too). How lines, functions and complexity are counted
//! is documented in `metrics.rs`.

use tree_sitter::{Node, Parser, Tree};

use super::tree::walk;
use super::{severity, DangerousCall, FileMetrics, SyntaxIssue, HOTSPOT_COMPLEXITY, HOTSPOT_LOC};

mod danger;
mod exports;
mod gaming;
mod metrics;

pub use danger::{is_network_module, DANGEROUS_MODULES};
pub use exports::{defines, exports, ModuleExports};

/// Which grammar reads a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// `.js`, `.mjs`, `.cjs`, `.jsx` (JSX included).
    JavaScript,
    /// `.ts`, `.mts`, `.cts`.
    TypeScript,
    /// `.tsx`.
    Tsx,
}

impl Dialect {
    /// The dialect of a file, from its name; `None` when it is not a
    /// JavaScript or TypeScript source (`.d.ts` declarations are
    /// TypeScript).
    pub fn of(path: &str) -> Option<Dialect> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let ext = name.rsplit_once('.')?.1;
        match ext {
            "js" | "mjs" | "cjs" | "jsx" => Some(Dialect::JavaScript),
            "ts" | "mts" | "cts" => Some(Dialect::TypeScript),
            "tsx" => Some(Dialect::Tsx),
            _ => None,
        }
    }

    /// Whether files of this dialect are type-checked by `tsc`.
    pub fn is_typescript(self) -> bool {
        matches!(self, Dialect::TypeScript | Dialect::Tsx)
    }
}

/// Parses `source` in `dialect`. tree-sitter always returns a tree, with
/// `ERROR` and `MISSING` nodes where the source does not parse.
pub fn parse(source: &str, dialect: Dialect) -> Tree {
    let language = match dialect {
        Dialect::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
        Dialect::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Dialect::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
    };
    let mut parser = Parser::new();
    parser
        .set_language(&language)
        .expect("the bundled JavaScript and TypeScript grammars match the tree-sitter ABI");
    parser
        .parse(source, None)
        .expect("parsing without a timeout or cancellation flag always yields a tree")
}

/// The dialect of `path`, JavaScript when its name says nothing.
fn dialect_or_js(path: &str) -> Dialect {
    Dialect::of(path).unwrap_or(Dialect::JavaScript)
}

/// Measures one JavaScript or TypeScript file (the dialect from `path`),
/// with the crate's hotspot and severity rules.
pub fn analyze(path: &str, source: &str) -> FileMetrics {
    let tree = parse(source, dialect_or_js(path));
    let root = tree.root_node();
    let code = metrics::code_lines(root, source);
    let loc = code.iter().filter(|c| **c).count();
    let functions = metrics::functions(root, source, &code);
    let hotspots: Vec<String> = functions
        .iter()
        .filter(|f| f.complexity >= HOTSPOT_COMPLEXITY || f.loc >= HOTSPOT_LOC)
        .map(|f| f.name.clone())
        .collect();
    let syntax_errors = error_lines(root);
    let max_complexity = functions.iter().map(|f| f.complexity).max().unwrap_or(0);
    let severity = severity(
        !syntax_errors.is_empty(),
        max_complexity,
        loc,
        !hotspots.is_empty(),
    );
    FileMetrics {
        path: path.to_string(),
        loc,
        functions,
        hotspots,
        syntax_errors,
        severity,
        imported_names: metrics::imported_names(root, source),
        chars: source.trim_end_matches('\n').chars().count(),
    }
}

/// `Ok` when `source` parses in the dialect of `path`, else the first
/// error's position. tree-sitter is more lenient than `tsc` and node (it
/// does not check types, duplicate declarations or strict-mode rules), so
/// `Ok` means "parses", not "compiles".
pub fn check_syntax(path: &str, source: &str) -> Result<(), SyntaxIssue> {
    let tree = parse(source, dialect_or_js(path));
    let Some(node) = error_nodes(tree.root_node()).into_iter().next() else {
        return Ok(());
    };
    let at = node.start_position();
    let line_start = node.start_byte() - at.column;
    let column = source
        .get(line_start..node.start_byte())
        .map_or(at.column, |prefix| prefix.chars().count());
    Err(SyntaxIssue {
        line: at.row + 1,
        column: column + 1,
    })
}

/// How many statements `source` holds (declarations included): what a lint
/// score divides the weighted messages by, as pylint divides by its
/// statement count. At least 1 for a file with any code.
pub fn statement_count(path: &str, source: &str) -> usize {
    let tree = parse(source, dialect_or_js(path));
    metrics::statement_count(tree.root_node())
}

/// Every dangerous call, import or access in `source` (the dialect from
/// `path`); see [`danger`] for what counts.
pub fn dangerous_calls(path: &str, source: &str) -> Vec<DangerousCall> {
    let tree = parse(source, dialect_or_js(path));
    danger::find(tree.root_node(), source)
}

/// The modules `source` loads by a literal name (the dialect from `path`):
/// `import … from '…'`, `import '…'`, `export … from '…'`, `require('…')`
/// and `import('…')`, in source order.
pub fn imported_modules(path: &str, source: &str) -> Vec<String> {
    let tree = parse(source, dialect_or_js(path));
    let mut found = Vec::new();
    walk(tree.root_node(), |node| {
        let module = match node.kind() {
            "import_statement" | "export_statement" => {
                node.child_by_field_name("source").map(|s| {
                    super::tree::text(s, source)
                        .trim_matches(['"', '\''])
                        .to_string()
                })
            }
            "call_expression" => danger::required_module(node, source).flatten(),
            _ => None,
        };
        found.extend(module);
        true
    });
    found
}

/// What in `source` reads how it is being run or patches the test framework
/// (the dialect from `path`); see [`gaming`] for what counts.
pub fn test_probes(path: &str, source: &str) -> Vec<super::TestProbe> {
    let tree = parse(source, dialect_or_js(path));
    gaming::find(tree.root_node(), source)
}

/// The outermost `ERROR` and `MISSING` nodes, in source order.
fn error_nodes(root: Node<'_>) -> Vec<Node<'_>> {
    let mut found = Vec::new();
    walk(root, |node| {
        if node.is_error() || node.is_missing() {
            found.push(node);
            return false;
        }
        true
    });
    found
}

/// The 1-based lines where the source does not parse, sorted, each once.
fn error_lines(root: Node<'_>) -> Vec<usize> {
    let mut lines: Vec<usize> = error_nodes(root)
        .iter()
        .map(|n| n.start_position().row + 1)
        .collect();
    lines.sort_unstable();
    lines.dedup();
    lines
}

#[cfg(test)]
mod tests;
