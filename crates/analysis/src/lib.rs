//! Static metrics of Python source with tree-sitter-python (and of
//! JavaScript and TypeScript in [`javascript`]): lines of code,
//! functions, cyclomatic complexity, hotspots, severity, syntax checks and
//! dangerous calls, and what the behaviour check compares (a module's
//! functions in two versions, the calls with literal arguments that use
//! them), what in a module reads its test runner or patches its test
//! framework (`gaming.rs`), the literal answers a change adds for its
//! tests' inputs (`answers.rs`), and the one-token repair of a module that does
//! not parse (`repair.rs`). Pure functions over text; no I/O.
//!
//! Severity of a file (thresholds are the consts below):
//! - **High**: it has syntax errors, or a function of complexity ≥
//!   [`HIGH_COMPLEXITY`], or more than [`HIGH_LOC`] lines of code;
//! - **Medium**: a function of complexity ≥ [`MEDIUM_COMPLEXITY`], more than
//!   [`MEDIUM_LOC`] lines of code, or any hotspot;
//! - **Low** otherwise.
//!
//! A hotspot is a function of complexity ≥ [`HOTSPOT_COMPLEXITY`] or at least
//! [`HOTSPOT_LOC`] lines of code. How lines and complexity are counted is
//! documented in `metrics.rs`.

mod answers;
mod calls;
mod danger;
mod gaming;
pub mod javascript;
mod metrics;
mod outline;
mod repair;
mod resolve;
pub mod tree;

pub use answers::{literal_answers, LiteralAnswer};
pub use calls::{function_pairs, literal_calls, CallSite, FunctionPair, MAX_FUNCTIONS};
pub use danger::is_dangerous;
pub use gaming::{ProbeKind, TestProbe};
pub use outline::{outline, Definition, DefinitionKind, Outline};
pub use repair::{repair_missing_token, SyntaxRepair};
pub use resolve::{
    assigned_references, calls, import_bindings, instances, module_imports, Binding, Call,
    ModuleImport,
};

/// A function this complex is a hotspot.
pub const HOTSPOT_COMPLEXITY: u32 = 10;
/// A function this long (lines of code) is a hotspot.
pub const HOTSPOT_LOC: usize = 50;
/// A function this complex makes its file High severity.
pub const HIGH_COMPLEXITY: u32 = 15;
/// A file longer than this (lines of code) is High severity.
pub const HIGH_LOC: usize = 400;
/// A function this complex makes its file at least Medium severity.
pub const MEDIUM_COMPLEXITY: u32 = 8;
/// A file longer than this (lines of code) is at least Medium severity.
pub const MEDIUM_LOC: usize = 150;

/// How much a file needs work; bounds the size of a change to it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Low,
    Medium,
    High,
}

impl Severity {
    /// `low`, `medium` or `high`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }
}

/// One function or method.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FunctionMetrics {
    /// `name` or `Class.name`.
    pub name: String,
    /// 1-based line of `def` (decorators excluded).
    pub line: usize,
    /// 1-based last line of the body.
    pub end_line: usize,
    /// Cyclomatic complexity (rule in `metrics.rs`).
    pub complexity: u32,
    /// Non-blank, non-comment lines from `def` to the end of the body.
    pub loc: usize,
}

/// Metrics of one file.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FileMetrics {
    /// The path given to [`analyze`].
    pub path: String,
    /// Non-blank, non-comment lines.
    pub loc: usize,
    /// Every function and method, in source order.
    pub functions: Vec<FunctionMetrics>,
    /// Names of functions whose complexity or length makes them hotspots.
    pub hotspots: Vec<String>,
    /// 1-based lines with syntax errors; empty when the file parses.
    pub syntax_errors: Vec<usize>,
    /// See the module doc.
    pub severity: Severity,
    /// The names its `from … import` statements take, sorted, each once
    /// (`to_cents` of `from .money import to_cents as tc`): a file that
    /// calls a function of another module through an import names it here.
    pub imported_names: Vec<String>,
    /// Its length in characters, not counting the newlines at its end.
    pub chars: usize,
}

/// Measures one file.
pub fn analyze(path: &str, source: &str) -> FileMetrics {
    let tree = tree::parse(source);
    let root = tree.root_node();
    let code = metrics::code_lines(root, source);
    let loc = code.iter().filter(|c| **c).count();
    let functions = metrics::functions(root, source, &code);
    let hotspots = functions
        .iter()
        .filter(|f| f.complexity >= HOTSPOT_COMPLEXITY || f.loc >= HOTSPOT_LOC)
        .map(|f| f.name.clone())
        .collect::<Vec<_>>();
    let mut syntax_errors: Vec<usize> = tree::syntax_error_nodes(root, source)
        .iter()
        .map(|n| n.start_position().row + 1)
        .collect();
    syntax_errors.sort_unstable();
    syntax_errors.dedup();
    let max_complexity = functions.iter().map(|f| f.complexity).max().unwrap_or(0);
    let severity = severity(
        !syntax_errors.is_empty(),
        max_complexity,
        loc,
        !hotspots.is_empty(),
    );
    let mut imported_names: Vec<String> = resolve::bindings_in(root, source)
        .into_iter()
        .filter_map(|b| b.name)
        .collect();
    imported_names.sort_unstable();
    imported_names.dedup();
    FileMetrics {
        path: path.to_string(),
        loc,
        functions,
        hotspots,
        syntax_errors,
        severity,
        imported_names,
        chars: source.trim_end_matches('\n').chars().count(),
    }
}

/// The severity rule of the module doc.
pub fn severity(syntax_errors: bool, max_complexity: u32, loc: usize, hotspots: bool) -> Severity {
    if syntax_errors || max_complexity >= HIGH_COMPLEXITY || loc > HIGH_LOC {
        Severity::High
    } else if max_complexity >= MEDIUM_COMPLEXITY || loc > MEDIUM_LOC || hotspots {
        Severity::Medium
    } else {
        Severity::Low
    }
}

/// Where a source fails to parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxIssue {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

/// `Ok` when `source` parses as Python, else the first error's position.
///
/// Python 2 `print x` / `exec code` statements count as errors. tree-sitter
/// is more lenient than CPython in places (it does not check, e.g., `return`
/// outside a function), so `Ok` means "parses", not "compiles".
pub fn check_syntax(source: &str) -> Result<(), SyntaxIssue> {
    let tree = tree::parse(source);
    let first = tree::syntax_error_nodes(tree.root_node(), source)
        .into_iter()
        .next();
    match first {
        None => Ok(()),
        Some(node) => {
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
    }
}

/// A call that can run arbitrary code or destroy data (`eval`, `exec`,
/// `os.system`, `subprocess.*`, `shutil.rmtree`, `pickle.loads`, `__import__`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DangerousCall {
    /// The qualified callee, imports resolved: `os.system`, `eval`, `subprocess.run`.
    pub name: String,
    /// 1-based line of the call.
    pub line: usize,
}

/// Every dangerous call in `source`.
pub fn dangerous_calls(source: &str) -> Vec<DangerousCall> {
    let tree = tree::parse(source);
    danger::find(tree.root_node(), source)
}

/// Every read of the test runner and patch of the test framework in
/// `source` (see `gaming.rs`): what a change that games its tests adds.
pub fn test_probes(source: &str) -> Vec<TestProbe> {
    let tree = tree::parse(source);
    gaming::find(tree.root_node(), source)
}

/// Whether a module only passes names on: every top-level statement is an
/// import, a docstring or a dunder assignment (`__all__ = [...]`), so no
/// logic of its own can be where a test fails. A module that does not
/// parse is not.
pub fn only_passes_names(source: &str) -> bool {
    let tree = tree::parse(source);
    let root = tree.root_node();
    if !tree::syntax_error_nodes(root, source).is_empty() {
        return false;
    }
    let mut cursor = root.walk();
    let passes =
        root.named_children(&mut cursor)
            .all(|statement| match statement.kind() {
                "import_statement" | "import_from_statement" | "future_import_statement" => true,
                "comment" => true,
                "expression_statement" => statement.named_child(0).is_some_and(|inner| match inner
                    .kind()
                {
                    "string" | "concatenated_string" => true,
                    "assignment" => inner.child_by_field_name("left").is_some_and(|left| {
                        let name = tree::text(left, source);
                        left.kind() == "identifier"
                            && name.starts_with("__")
                            && name.ends_with("__")
                    }),
                    _ => false,
                }),
                _ => false,
            });
    passes
}

#[cfg(test)]
mod passes_names_tests {
    use super::only_passes_names;

    #[test]
    fn imports_docstrings_and_dunders_only_pass_names_on() {
        let init = "\"\"\"Billing.\"\"\"\n# re-exports\nfrom .discounts import (\n    apply,\n    bulk,\n)\n\
                    import os.path\n__all__ = [\"apply\", \"bulk\"]\n__version__ = \"1.0\"\n";
        assert!(only_passes_names(init));
        assert!(only_passes_names(""));
    }

    #[test]
    fn a_definition_or_a_computed_name_is_logic() {
        for text in [
            "from .x import y\n\ndef helper():\n    return 1\n",
            "from .x import y\nRATE = 0.2\n",
            "from .x import y\nclass A:\n    pass\n",
            "from .x import y\nif True:\n    import z\n",
            "from .x import y\nprint(y)\n",
            "from .x import (\n",
        ] {
            assert!(!only_passes_names(text), "{text:?}");
        }
    }
}
