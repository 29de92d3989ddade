//! The code around a file asked about, in other files: the definitions the
//! failing tests and the file's implicated functions call there, and the
//! functions there that call the file's implicated functions. Shown to the
//! Fixer read-only; what fits is the prompt's business.

use super::resolve::{called_definitions, Files, Resolved};
use crate::pipeline::TestCase;
use swarm_analysis::{self as analysis, Definition, DefinitionKind};

/// At most this many related definitions are collected for one file.
const MAX_RELATED: usize = 4;
/// A related definition longer than this shows its first lines only.
const MAX_LINES: usize = 20;

/// One definition in another file, shown read-only beside the file asked about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Related {
    /// Target-relative file holding it.
    pub file: String,
    /// `to_cents`, `Wallet.pay`.
    pub name: String,
    /// Why it is shown: `called by tests/t.py::test_x`, `called by
    /// apply_discount`, `calls to_cents`.
    pub why: String,
    /// Its first and last line in its file (1-based); `text` may stop early.
    pub start: usize,
    pub end: usize,
    /// Its text (at most [`MAX_LINES`] lines, then `…`).
    pub text: String,
}

/// The names a source file takes in its `from … import` statements, when
/// they are known without reading it (the audit's metrics of a file the run
/// has not changed); `None`: only its text tells.
pub type ImportedNames<'a> = &'a dyn Fn(&str) -> Option<&'a [String]>;

/// The related code of `file` for the failing tests that concern it, most
/// useful first: what the tests call elsewhere, what the file's called
/// functions call elsewhere, then who calls them; at most [`MAX_RELATED`].
/// Looking for callers reads only the files `imported` does not rule out.
pub fn related_code(
    file: &str,
    failing: &[&TestCase],
    sources: &[&String],
    read: &dyn Fn(&str) -> Option<String>,
    imported: ImportedNames<'_>,
) -> Vec<Related> {
    let files = Files { sources, read };
    let mut out: Vec<Related> = Vec::new();
    let add = |found: &Resolved, why: String, out: &mut Vec<Related>| {
        let known = out
            .iter()
            .any(|r| r.file == found.file && r.name == found.name);
        if found.file == file || known || out.len() >= MAX_RELATED {
            return;
        }
        if let Some(related) = shown(&files, found, why) {
            out.push(related);
        }
    };
    let mut own: Vec<String> = Vec::new();
    for case in failing {
        let short = case.name();
        for found in called_definitions(case, sources, read) {
            if found.file == file {
                if !own.contains(&found.name) {
                    own.push(found.name.clone());
                }
            } else {
                add(&found, format!("called by the test {short}"), &mut out);
            }
        }
    }
    let Some(text) = read(file) else {
        return out;
    };
    let bindings = analysis::import_bindings(&text);
    let outline = analysis::outline(&text);
    let is_function = |name: &String| {
        outline
            .definitions
            .iter()
            .any(|d| &d.name == name && d.kind == DefinitionKind::Function)
    };
    for name in own.iter().filter(|n| is_function(n)) {
        for call in analysis::calls(&text, Some(name)) {
            if call.receiver.is_some() {
                continue;
            }
            let Some(binding) = bindings.iter().find(|b| b.local == call.name) else {
                continue;
            };
            if let Some(found) = files.follow(file, binding, 0) {
                add(&found, format!("called by {name}"), &mut out);
            }
        }
    }
    for caller in callers(&files, file, &own, imported) {
        let why = format!("calls {}", caller.1);
        add(&caller.0, why, &mut out);
    }
    out
}

/// The top-level functions and methods of other source files that call one
/// of `names` (defined in `file`) through an import of it.
fn callers(
    files: &Files<'_>,
    file: &str,
    names: &[String],
    imported: ImportedNames<'_>,
) -> Vec<(Resolved, String)> {
    let mut out = Vec::new();
    if names.is_empty() {
        return out;
    }
    for other in files.sources.iter().filter(|s| s.as_str() != file) {
        // A caller takes one of `names` in a `from … import` (the test
        // below): a file known to take none is not read at all, which
        // spares reading every file of a large target for every job.
        if imported(other).is_some_and(|taken| !taken.iter().any(|n| names.contains(n))) {
            continue;
        }
        // A caller names what it calls (in its import at least): the
        // cheap test spares parsing every file of a large target.
        let Some(text) =
            (files.read)(other).filter(|t| names.iter().any(|n| t.contains(n.as_str())))
        else {
            continue;
        };
        // Local names under which `other` imports one of `names` from `file`.
        let locals: Vec<(String, String)> = analysis::import_bindings(&text)
            .into_iter()
            .filter_map(|b| {
                let taken = b.name.clone()?;
                let found = files.follow(other, &b, 0)?;
                (found.file == file && names.contains(&taken)).then_some((b.local, taken))
            })
            .collect();
        if locals.is_empty() {
            continue;
        }
        let outline = analysis::outline(&text);
        let functions = outline
            .definitions
            .iter()
            .filter(|d| d.kind == DefinitionKind::Function);
        for def in functions {
            let calls = analysis::calls(&text, Some(&def.name));
            let called = locals.iter().find(|(local, _)| {
                calls
                    .iter()
                    .any(|c| c.receiver.is_none() && &c.name == local)
            });
            if let Some((_, taken)) = called {
                let resolved = Resolved {
                    file: other.to_string(),
                    name: def.name.clone(),
                };
                out.push((resolved, taken.clone()));
            }
        }
    }
    out
}

/// The text of a resolved definition, cut at [`MAX_LINES`].
fn shown(files: &Files<'_>, found: &Resolved, why: String) -> Option<Related> {
    let text = (files.read)(&found.file)?;
    let outline = analysis::outline(&text);
    let def: &Definition = outline.definitions.iter().find(|d| d.name == found.name)?;
    let lines: Vec<&str> = text.lines().collect();
    let last = def.end.min(lines.len());
    let cut = (def.start + MAX_LINES - 1).min(last);
    let mut body = lines.get(def.start - 1..cut)?.join("\n");
    if cut < last {
        body.push_str("\n    …");
    }
    Some(Related {
        file: found.file.clone(),
        name: found.name.clone(),
        why,
        start: def.start,
        end: def.end,
        text: body,
    })
}
