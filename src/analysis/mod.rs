//! Static metrics of Python source with tree-sitter-python: lines of code,
//! functions, cyclomatic complexity, hotspots, severity, syntax checks and
//! dangerous calls. Pure functions over text; no I/O.

/// How much a file needs work; bounds the size of a change to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Low,
    Medium,
    High,
}

/// One function or method.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FunctionMetrics {
    /// `name` or `Class.name`.
    pub name: String,
    pub line: usize,
    pub end_line: usize,
    pub complexity: u32,
    pub loc: usize,
}

/// Metrics of one file.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FileMetrics {
    pub path: String,
    /// Non-blank, non-comment lines.
    pub loc: usize,
    pub functions: Vec<FunctionMetrics>,
    /// Names of functions whose complexity or length makes them hotspots.
    pub hotspots: Vec<String>,
    /// 1-based lines with syntax errors; empty when the file parses.
    pub syntax_errors: Vec<usize>,
    pub severity: Severity,
}

/// Measures one file.
pub fn analyze(path: &str, source: &str) -> FileMetrics {
    let _ = (path, source);
    unimplemented!()
}

/// Where a source fails to parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxIssue {
    pub line: usize,
    pub column: usize,
}

/// `Ok` when `source` parses as Python, else the first error's position.
pub fn check_syntax(source: &str) -> Result<(), SyntaxIssue> {
    let _ = source;
    unimplemented!()
}

/// A call that can run arbitrary code or destroy data (`eval`, `exec`,
/// `os.system`, `subprocess.*`, `shutil.rmtree`, `pickle.loads`, `__import__`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DangerousCall {
    pub name: String,
    pub line: usize,
}

/// Every dangerous call in `source`.
pub fn dangerous_calls(source: &str) -> Vec<DangerousCall> {
    let _ = source;
    unimplemented!()
}
