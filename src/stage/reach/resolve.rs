//! Following a failing test to the definitions it runs: each name its test
//! function calls is looked up through the test module's imports (aliases,
//! relative imports, a package's re-exports, several packages deep, and a
//! wrapper assigned at module level such as `cmd = deprecated(cli.cmd)`),
//! and a method called on an instance of an imported class is looked up in
//! the class (`w = Wallet(); w.pay()` runs `Wallet.pay`).

use super::test_module;
use crate::pipeline::TestCase;
use swarm_analysis::{self as analysis, Binding, DefinitionKind};

/// Re-exports are followed this many modules deep.
const DEPTH: usize = 4;

/// A definition a failing test runs: the file and the definition's name
/// (`to_cents`, `Wallet.pay`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub file: String,
    pub name: String,
}

/// The function or method of the test module a case runs (`TestW.test_pay`
/// of `tests/t.py::TestW::test_pay[2]`).
fn test_scope(case: &TestCase) -> Option<String> {
    let mut parts = case.id.split("::").skip(1).peekable();
    parts.peek()?;
    let scope: Vec<&str> = parts.map(|p| p.split('[').next().unwrap_or(p)).collect();
    Some(scope.join("."))
}

/// What reading files needs: the target's source files and a reader.
pub(super) struct Files<'a> {
    pub(super) sources: &'a [&'a String],
    pub(super) read: &'a dyn Fn(&str) -> Option<String>,
}

impl Files<'_> {
    /// The source file of a module given as a slash path (`ledger/money`):
    /// the module file or the package's `__init__.py`, at the target's root
    /// or below a folder of it.
    fn module_file(&self, path: &str) -> Option<String> {
        let candidates = [format!("{path}.py"), format!("{path}/__init__.py")];
        let exact = self
            .sources
            .iter()
            .find(|s| candidates.iter().any(|c| s.as_str() == c));
        let nested = || {
            self.sources
                .iter()
                .find(|s| candidates.iter().any(|c| s.ends_with(&format!("/{c}"))))
        };
        exact.or_else(nested).map(|s| s.to_string())
    }

    /// `module` as written in `from_file` (leading dots for a relative
    /// import) as a slash path.
    fn module_path(from_file: &str, module: &str) -> String {
        let dots = module.chars().take_while(|c| *c == '.').count();
        let rest = module[dots..].replace('.', "/");
        if dots == 0 {
            return rest;
        }
        let mut parts: Vec<&str> = from_file.split('/').collect();
        parts.pop();
        for _ in 1..dots {
            parts.pop();
        }
        if !rest.is_empty() {
            parts.push(&rest);
        }
        parts.join("/")
    }

    /// Where `name` is defined, looking in the module at slash path
    /// `module` and following its imports.
    fn define(&self, module: &str, name: &str, depth: usize) -> Option<Resolved> {
        let file = self.module_file(module)?;
        self.define_in(&file, name, depth)
    }

    fn define_in(&self, file: &str, name: &str, depth: usize) -> Option<Resolved> {
        let text = (self.read)(file)?;
        let outline = analysis::outline(&text);
        if outline.top_level().any(|d| d.name == name) {
            return Some(Resolved {
                file: file.to_string(),
                name: name.to_string(),
            });
        }
        if depth >= DEPTH {
            return None;
        }
        let bindings = analysis::import_bindings(&text);
        // The last binding counts, as at run time.
        if let Some(binding) = bindings.iter().rev().find(|b| b.local == name) {
            return self.follow(file, binding, depth + 1);
        }
        self.through_wrapper(file, &text, &bindings, name, depth + 1)
    }

    /// Where a module-level wrapper (`name = wrap(other.name)`, `name =
    /// other.name`) of `file` leads: the first name in it that resolves to
    /// a definition, a call's arguments before the wrapper itself.
    fn through_wrapper(
        &self,
        file: &str,
        text: &str,
        bindings: &[Binding],
        name: &str,
        depth: usize,
    ) -> Option<Resolved> {
        let outline = analysis::outline(text);
        analysis::assigned_references(text, name)
            .iter()
            .filter(|reference| reference.as_str() != name)
            .find_map(|reference| match reference.rsplit_once('.') {
                Some((receiver, attribute)) => self
                    .receiver_module(file, bindings, receiver)
                    .and_then(|module| self.define(&module, attribute, depth)),
                None if outline.top_level().any(|d| d.name == *reference) => Some(Resolved {
                    file: file.to_string(),
                    name: reference.clone(),
                }),
                None => bindings
                    .iter()
                    .rev()
                    .find(|b| b.local == *reference)
                    .and_then(|b| self.follow(file, b, depth)),
            })
    }

    /// Where a binding of `file` leads: the definition it names.
    pub(super) fn follow(&self, file: &str, binding: &Binding, depth: usize) -> Option<Resolved> {
        let module = Self::module_path(file, &binding.module);
        let taken = binding.name.as_deref()?;
        self.define(&module, taken, depth)
    }

    /// The module a receiver (`lg.money` of `lg.money.total()`) names in
    /// `file`, through its bindings, as a slash path.
    fn receiver_module(&self, file: &str, bindings: &[Binding], receiver: &str) -> Option<String> {
        let mut parts = receiver.split('.');
        let head = parts.next()?;
        let binding = bindings.iter().find(|b| b.local == head)?;
        let mut path = Self::module_path(file, &binding.module);
        if let Some(name) = &binding.name {
            path = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}/{name}")
            };
        }
        for part in parts {
            path = format!("{path}/{part}");
        }
        self.module_file(&path).map(|_| path)
    }
}

/// The definitions in `sources` that a failing case's test function calls,
/// in call order, each once.
pub fn called_definitions(
    case: &TestCase,
    sources: &[&String],
    read: &dyn Fn(&str) -> Option<String>,
) -> Vec<Resolved> {
    let Some(test_file) = test_module(case) else {
        return Vec::new();
    };
    let Some(text) = read(test_file) else {
        return Vec::new();
    };
    calls_resolved(test_file, &text, test_scope(case).as_deref(), sources, read)
}

/// The definitions in `sources` that any code of the test module
/// `test_file` (its text `text`) calls: the files a test reaches through
/// re-exports and wrappers, besides those it imports.
pub fn definitions_called_by(
    test_file: &str,
    text: &str,
    sources: &[&String],
    read: &dyn Fn(&str) -> Option<String>,
) -> Vec<Resolved> {
    calls_resolved(test_file, text, None, sources, read)
}

/// The calls of `scope` in the test module (all of them when it makes
/// none), resolved to their definitions.
fn calls_resolved(
    test_file: &str,
    text: &str,
    scope: Option<&str>,
    sources: &[&String],
    read: &dyn Fn(&str) -> Option<String>,
) -> Vec<Resolved> {
    let files = Files { sources, read };
    let mut calls = analysis::calls(text, scope);
    let mut instances = analysis::instances(text, scope);
    if calls.is_empty() {
        calls = analysis::calls(text, None);
        instances = analysis::instances(text, None);
    }
    let bindings = analysis::import_bindings(text);
    let mut out: Vec<Resolved> = Vec::new();
    for call in calls {
        let found = match call.receiver.as_deref() {
            None => bindings
                .iter()
                .find(|b| b.local == call.name)
                .and_then(|b| files.follow(test_file, b, 0)),
            Some(receiver) => {
                let class = instances
                    .iter()
                    .find(|(var, _)| var == receiver)
                    .map(|(_, class)| class.as_str());
                match class {
                    Some(class) => method_of(&files, test_file, &bindings, class, &call.name),
                    None => files
                        .receiver_module(test_file, &bindings, receiver)
                        .and_then(|module| files.define(&module, &call.name, 0)),
                }
            }
        };
        if let Some(found) = found.filter(|f| !out.contains(f)) {
            out.push(found);
        }
    }
    out
}

/// `Class.method` where the test module's `class` is defined, when the
/// class defines it (else the class itself).
fn method_of(
    files: &Files<'_>,
    test_file: &str,
    bindings: &[Binding],
    class: &str,
    method: &str,
) -> Option<Resolved> {
    let binding = bindings.iter().find(|b| b.local == class)?;
    let resolved = files.follow(test_file, binding, 0)?;
    let text = (files.read)(&resolved.file)?;
    let qualified = format!("{}.{method}", resolved.name);
    let defines = analysis::outline(&text)
        .definitions
        .iter()
        .any(|d| d.name == qualified && d.kind == DefinitionKind::Function);
    Some(Resolved {
        file: resolved.file,
        name: if defines { qualified } else { resolved.name },
    })
}
