//! Which source files a failing test points at, most likely first: files
//! its traceback names, then files its test module imports, following a
//! package's re-exports to the modules that define the names
//! (`from billing import apply_discount` reaches `billing/discounts.py`
//! through `billing/__init__.py`). The Fixer is asked about these files,
//! the Planner ranks them first.

use std::collections::BTreeSet;

use regex::Regex;

use super::is_test_path;
use crate::pipeline::TestCase;
use swarm_analysis as analysis;

/// Packages re-exporting from packages are followed this deep.
const REEXPORT_DEPTH: usize = 3;

/// How a test module reaches a source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// The test module imports it.
    Imported,
    /// A package the test module imports takes names from it (`from
    /// .discounts import apply_discount` in the package's `__init__.py`).
    ReExported,
    /// A package `__init__.py` the test module imports that only passes
    /// names on (imports, a docstring, `__all__`): nothing in it can fail.
    PassesNamesOn,
}

fn sources_of(files: &[String]) -> Vec<&String> {
    files.iter().filter(|f| !is_test_path(f)).collect()
}

/// Files to work on this round, most urgent first: source files named in
/// failing tests' tracebacks, then the files defining what the failing tests
/// call ([`called_definitions`]), then other source files the failing test modules
/// reach ([`reached_sources`]; a package that only passes names on is left
/// out), then `others` (files with problems or plan items) in their order.
pub fn implicated_files(
    failing: &[TestCase],
    files: &[String],
    read: &dyn Fn(&str) -> Option<String>,
    others: &[String],
) -> Vec<String> {
    let sources = sources_of(files);
    let mut order: Vec<String> = Vec::new();
    let mut push = |f: &str| {
        if !order.iter().any(|o| o == f) {
            order.push(f.to_string());
        }
    };
    for case in failing {
        let mentioned = mentioned_paths(case);
        for src in &sources {
            if names_file(&mentioned, src) {
                push(src);
            }
        }
    }
    for case in failing {
        for found in called_definitions(case, &sources, read) {
            push(&found.file);
        }
    }
    let test_files: BTreeSet<&str> = failing.iter().filter_map(test_module).collect();
    for test_file in test_files {
        let Some(text) = read(test_file) else {
            continue;
        };
        for (src, link) in reached_sources(&text, &sources, read) {
            if link != Link::PassesNamesOn {
                push(&src);
            }
        }
    }
    for f in others {
        if sources.contains(&f) {
            push(f);
        }
    }
    order
}

/// The failing tests that concern `file`: its path is in their traceback, or
/// their test module reaches it ([`reached_sources`]). All of them when none does, so the model
/// always sees what fails.
pub fn failures_for<'a>(
    failing: &'a [TestCase],
    file: &str,
    files: &[String],
    read: &dyn Fn(&str) -> Option<String>,
) -> Vec<&'a TestCase> {
    let sources = sources_of(files);
    let relevant: Vec<&TestCase> = failing
        .iter()
        .filter(|case| concerns(case, file, &sources, read))
        .collect();
    if relevant.is_empty() {
        failing.iter().collect()
    } else {
        relevant
    }
}

/// Whether a failing case concerns `file`: its traceback names it, or its
/// test module reaches it ([`reached_sources`]).
pub fn concerns(
    case: &TestCase,
    file: &str,
    sources: &[&String],
    read: &dyn Fn(&str) -> Option<String>,
) -> bool {
    traceback_mentions(case, file)
        || test_module(case).and_then(read).is_some_and(|text| {
            reached_sources(&text, sources, read)
                .iter()
                .any(|(src, _)| src == file)
        })
}

/// The test module of a case (`tests/test_x.py` of `tests/test_x.py::test_y`).
pub(crate) fn test_module(case: &TestCase) -> Option<&str> {
    case.id.split("::").next().filter(|f| f.ends_with(".py"))
}

/// Whether a case's message or traceback names `file` (target-relative).
pub(crate) fn traceback_mentions(case: &TestCase, file: &str) -> bool {
    names_file(&mentioned_paths(case), file)
}

/// The `.py` paths a case's message and traceback name, `/`-separated: read
/// once per case when many files are asked about.
pub(crate) fn mentioned_paths(case: &TestCase) -> Vec<String> {
    static PATH: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = PATH.get_or_init(|| Regex::new(r"([A-Za-z0-9_./\\-]+\.py)").expect("static regex"));
    [case.message.as_deref(), case.details.as_deref()]
        .into_iter()
        .flatten()
        .flat_map(|text| re.captures_iter(text))
        .map(|m| m[1].replace('\\', "/"))
        .collect()
}

/// Whether one of `mentioned` (see [`mentioned_paths`]) is `file`
/// (target-relative), or ends in it after a `/`.
pub(crate) fn names_file(mentioned: &[String], file: &str) -> bool {
    mentioned.iter().any(|p| {
        p == file
            || p.strip_suffix(file)
                .is_some_and(|before| before.ends_with('/'))
    })
}

/// Whether `modules` (from [`imported_modules`]) include the module of `file`.
pub(crate) fn imports(modules: &[String], file: &str) -> bool {
    let stem = file.trim_end_matches(".py").trim_end_matches("/__init__");
    modules.iter().any(|module| {
        let as_path = module.replace('.', "/");
        stem == as_path || stem.ends_with(&format!("/{as_path}"))
    })
}

/// Modules named by `import x.y` and `from x.y import z` (and `from x import y`
/// as `x.y`, which may be a submodule).
pub(crate) fn imported_modules(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for import in analysis::module_imports(text) {
        let module = import.module.trim_start_matches('.');
        if module.is_empty() {
            continue;
        }
        out.push(module.to_string());
        out.extend(import.names.iter().map(|name| format!("{module}.{name}")));
    }
    out
}

/// The source files a test module's text reaches, each with how: the
/// modules it imports and, for each imported package, the modules its
/// `__init__.py` imports, before the package itself. Source order within
/// each step; every file once.
pub fn reached_sources(
    test_text: &str,
    sources: &[&String],
    read: &dyn Fn(&str) -> Option<String>,
) -> Vec<(String, Link)> {
    let modules = imported_modules(test_text);
    let mut reached: Vec<(String, Link)> = Vec::new();
    for src in sources.iter().filter(|src| imports(&modules, src)) {
        if !reached.iter().any(|(r, _)| r == *src) {
            reach_package(src, Link::Imported, sources, read, &mut reached, 0);
        }
    }
    reached
}

/// Adds `path` with `link`; for a package, first the modules it imports.
fn reach_package(
    path: &str,
    link: Link,
    sources: &[&String],
    read: &dyn Fn(&str) -> Option<String>,
    reached: &mut Vec<(String, Link)>,
    depth: usize,
) {
    let Some(package) = path.strip_suffix("__init__.py") else {
        reached.push((path.to_string(), link));
        return;
    };
    let text = read(path).unwrap_or_default();
    let dotted = package.trim_end_matches('/').replace('/', ".");
    let modules = package_imports(&text, &dotted);
    let slot = reached.len();
    reached.push((path.to_string(), link));
    let mut found = false;
    for src in sources {
        let taken = reached.iter().any(|(r, _)| r == *src);
        if taken || !src.starts_with(package) || !imports(&modules, src) {
            continue;
        }
        found = true;
        if depth < REEXPORT_DEPTH {
            reach_package(src, Link::ReExported, sources, read, reached, depth + 1);
        } else {
            reached.push((src.to_string(), Link::ReExported));
        }
    }
    // The package after what it takes names from.
    let entry = reached.remove(slot);
    let passes_on = found && analysis::only_passes_names(&text);
    reached.push((
        entry.0,
        if passes_on {
            Link::PassesNamesOn
        } else {
            entry.1
        },
    ));
}

/// The absolute modules an `__init__.py` of package `dotted` imports:
/// `from .x import y` gives `dotted.x` and `dotted.x.y`, `from . import x`
/// gives `dotted.x`, `from ..x import y` goes one package up; absolute
/// imports are kept as they are.
fn package_imports(text: &str, dotted: &str) -> Vec<String> {
    let mut out = Vec::new();
    for import in analysis::module_imports(text) {
        let dots = import.module.len() - import.module.trim_start_matches('.').len();
        let rest = &import.module[dots..];
        let module = if dots == 0 {
            rest.to_string()
        } else {
            let mut parts: Vec<&str> = dotted.split('.').filter(|p| !p.is_empty()).collect();
            parts.truncate(parts.len().saturating_sub(dots - 1));
            parts.extend(rest.split('.').filter(|p| !p.is_empty()));
            parts.join(".")
        };
        if module.is_empty() {
            continue;
        }
        out.extend(import.names.iter().map(|name| format!("{module}.{name}")));
        out.push(module);
    }
    out
}

mod context;
mod resolve;
mod rotation;

pub use context::{related_code, Related};
pub use resolve::{called_definitions, definitions_called_by, Resolved};
pub use rotation::rotate;

#[cfg(test)]
mod tests;
