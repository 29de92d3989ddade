//! Finding calls that can run arbitrary code or destroy data, and dynamic
//! access that reaches such calls without naming them.
//!
//! A call is named by its dotted callee (`os.system`, `sp.run`), with the
//! first part resolved through the file's imports (`import subprocess as sp`,
//! `from os import system as run_shell`, `from os import *`), then matched
//! against [`is_dangerous`]. Calls on other objects (`re.compile`,
//! `self.eval`) are not dangerous.
//!
//! Dynamic access is reported under a descriptive name (the `name` of a
//! [`DangerousCall`]):
//! - `importlib.import_module(…)` and `importlib.__import__(…)` under any
//!   alias (they are in [`is_dangerous`]);
//! - `getattr(<module>, <computed name>)`, where the object is a name bound
//!   by an import, `builtins` or `__builtins__`: `getattr(os, …)`;
//! - `getattr(<anything>, "<dangerous name>")` with a literal such as
//!   `"system"`, `"popen"`, `"exec"`, `"__import__"`, `"__globals__"`:
//!   `getattr(x, "system")`;
//! - any use of `__builtins__`;
//! - `globals()[…]`, `vars()[…]`, `locals()[…]` and their `.get(…)`-style
//!   methods: `globals()[...]`;
//! - `sys.modules[…]` and `sys.modules.<method>(…)`: `sys.modules[...]`;
//! - `<module>.__dict__` of an imported module or `builtins`:
//!   `builtins.__dict__`.
//!
//! This is a static early warning for the Reviewer, not a guard: Python can
//! reach anything through enough indirection. The sandbox the Judge runs
//! the code in is what confines it.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use super::tree::{text, walk};
use super::DangerousCall;

/// Modules whose star import may bring dangerous names into scope.
const RISKY_MODULES: &[&str] = &[
    "os",
    "subprocess",
    "shutil",
    "pickle",
    "marshal",
    "builtins",
];

/// Whether a fully qualified callee is dangerous.
pub fn is_dangerous(name: &str) -> bool {
    let name = name.strip_prefix("builtins.").unwrap_or(name);
    if matches!(name, "eval" | "exec" | "compile" | "__import__") {
        return true;
    }
    if matches!(
        name,
        "importlib.import_module" | "importlib.__import__" | "runpy.run_path" | "runpy.run_module"
    ) {
        return true;
    }
    if matches!(
        name,
        "os.system"
            | "os.popen"
            | "os.posix_spawn"
            | "os.posix_spawnp"
            | "shutil.rmtree"
            | "pickle.load"
            | "pickle.loads"
            | "marshal.load"
            | "marshal.loads"
            | "subprocess.run"
            | "subprocess.call"
            | "subprocess.Popen"
            | "subprocess.check_output"
            | "subprocess.check_call"
            | "subprocess.getoutput"
            | "subprocess.getstatusoutput"
    ) {
        return true;
    }
    ["os.exec", "os.spawn"].iter().any(|prefix| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_lowercase()))
    })
}

/// Attribute names that reach code execution or interpreter internals;
/// `getattr(x, "<one of these>")` is dynamic access to them.
fn is_dangerous_attribute(name: &str) -> bool {
    let exec_family = ["exec", "spawn"].iter().any(|prefix| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_lowercase()))
    });
    exec_family
        || matches!(
            name,
            "system"
                | "popen"
                | "eval"
                | "compile"
                | "__import__"
                | "import_module"
                | "rmtree"
                | "Popen"
                | "check_output"
                | "check_call"
                | "getoutput"
                | "getstatusoutput"
                | "posix_spawn"
                | "posix_spawnp"
                | "run_path"
                | "run_module"
                | "__builtins__"
                | "__globals__"
                | "__dict__"
                | "__subclasses__"
                | "__code__"
        )
}

/// Built-ins whose result maps names to live objects.
const NAMESPACE_FUNCTIONS: &[&str] = &["globals", "vars", "locals"];

/// What local names stand for, from the file's imports.
#[derive(Debug, Default)]
pub(crate) struct Imports {
    /// local name -> qualified name (`sp` -> `subprocess`, `system` -> `os.system`).
    pub(crate) aliases: HashMap<String, String>,
    /// Risky modules imported with `*`.
    star: Vec<String>,
    /// Every local name an import binds (`os` of `import os.path`, `sp`,
    /// `system`): objects whose attributes are modules' globals.
    pub(crate) bound: HashSet<String>,
}

impl Imports {
    pub(crate) fn collect(root: Node<'_>, source: &str) -> Self {
        let mut imports = Self::default();
        walk(root, |node| {
            match node.kind() {
                "import_statement" => imports.add_import(node, source),
                "import_from_statement" => imports.add_from_import(node, source),
                _ => return true,
            }
            false
        });
        imports
    }

    /// `import a.b`, `import a.b as c`.
    fn add_import(&mut self, node: Node<'_>, source: &str) {
        let mut cursor = node.walk();
        for name in node.children_by_field_name("name", &mut cursor) {
            if name.kind() == "aliased_import" {
                if let (Some(module), Some(alias)) = (
                    name.child_by_field_name("name"),
                    name.child_by_field_name("alias"),
                ) {
                    let alias = text(alias, source).to_string();
                    self.bound.insert(alias.clone());
                    self.aliases.insert(alias, text(module, source).to_string());
                }
            } else {
                let dotted = text(name, source);
                let first = dotted.split('.').next().unwrap_or(dotted);
                self.bound.insert(first.to_string());
            }
        }
    }

    /// `from m import a`, `from m import a as b`, `from m import *`.
    fn add_from_import(&mut self, node: Node<'_>, source: &str) {
        let Some(module) = node.child_by_field_name("module_name") else {
            return;
        };
        let module = text(module, source).to_string();
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if child.kind() == "wildcard_import" && RISKY_MODULES.contains(&module.as_str()) {
                self.star.push(module.clone());
            }
        }
        let mut cursor = node.walk();
        for name in node.children_by_field_name("name", &mut cursor) {
            let (imported, local) = match name.kind() {
                "aliased_import" => match (
                    name.child_by_field_name("name"),
                    name.child_by_field_name("alias"),
                ) {
                    (Some(imported), Some(alias)) => (text(imported, source), text(alias, source)),
                    _ => continue,
                },
                _ => (text(name, source), text(name, source)),
            };
            self.bound.insert(local.to_string());
            self.aliases
                .insert(local.to_string(), format!("{module}.{imported}"));
        }
    }

    /// Whether `node` is a module-like object: a name an import binds (or
    /// an attribute of one), `builtins` or `__builtins__`.
    fn is_module_like(&self, node: Node<'_>, source: &str) -> bool {
        let Some(dotted) = dotted_callee(node, source) else {
            return false;
        };
        let first = dotted.split('.').next().unwrap_or_default();
        self.bound.contains(first) || matches!(first, "builtins" | "__builtins__")
    }

    /// The qualified name of a dotted expression, if it is one (`sys.modules`).
    pub(crate) fn qualified(&self, node: Node<'_>, source: &str) -> Vec<String> {
        dotted_callee(node, source)
            .map(|d| self.resolve(&d))
            .unwrap_or_default()
    }

    /// The qualified names a dotted callee may stand for.
    pub(crate) fn resolve(&self, dotted: &str) -> Vec<String> {
        let (first, rest) = match dotted.split_once('.') {
            Some((first, rest)) => (first, Some(rest)),
            None => (dotted, None),
        };
        let mut names = Vec::new();
        match self.aliases.get(first) {
            Some(qualified) => names.push(match rest {
                Some(rest) => format!("{qualified}.{rest}"),
                None => qualified.clone(),
            }),
            None => {
                names.push(dotted.to_string());
                if rest.is_none() {
                    names.extend(self.star.iter().map(|m| format!("{m}.{dotted}")));
                }
            }
        }
        names
    }
}

/// The dotted text of a callee made only of names and attributes.
pub(crate) fn dotted_callee(node: Node<'_>, source: &str) -> Option<String> {
    match node.kind() {
        "identifier" => Some(text(node, source).to_string()),
        "attribute" => {
            let object = dotted_callee(node.child_by_field_name("object")?, source)?;
            let attribute = node.child_by_field_name("attribute")?;
            Some(format!("{object}.{}", text(attribute, source)))
        }
        _ => None,
    }
}

/// Every dangerous call and dynamic access under `root`, in source order.
pub(crate) fn find(root: Node<'_>, source: &str) -> Vec<DangerousCall> {
    let imports = Imports::collect(root, source);
    let mut calls = Vec::new();
    walk(root, |node| {
        let found = match node.kind() {
            "call" => dangerous_call(node, source, &imports)
                .or_else(|| dynamic_getattr(node, source, &imports))
                .or_else(|| namespace_method(node, source, &imports)),
            "subscript" => node
                .child_by_field_name("value")
                .and_then(|value| namespace_access(value, source, &imports)),
            "attribute" => module_dict(node, source, &imports),
            "identifier" if text(node, source) == "__builtins__" => {
                Some("__builtins__".to_string())
            }
            _ => None,
        };
        if let Some(name) = found {
            calls.push(DangerousCall {
                name,
                line: node.start_position().row + 1,
            });
        }
        true
    });
    calls
}

/// A call whose callee resolves to a dangerous function (`os.system`).
fn dangerous_call(node: Node<'_>, source: &str, imports: &Imports) -> Option<String> {
    let callee = dotted_callee(node.child_by_field_name("function")?, source)?;
    let name = imports
        .resolve(&callee)
        .into_iter()
        .find(|n| is_dangerous(n))?;
    Some(name.strip_prefix("builtins.").unwrap_or(&name).to_string())
}

/// Whether the callee of `call` resolves to the built-in `name`.
fn calls_builtin(call: Node<'_>, source: &str, imports: &Imports, name: &str) -> bool {
    call.child_by_field_name("function")
        .map(|f| imports.qualified(f, source))
        .unwrap_or_default()
        .iter()
        .any(|q| q.strip_prefix("builtins.").unwrap_or(q) == name)
}

/// `getattr(<module>, <computed>)` or `getattr(x, "<dangerous name>")`.
fn dynamic_getattr(node: Node<'_>, source: &str, imports: &Imports) -> Option<String> {
    if !calls_builtin(node, source, imports, "getattr") {
        return None;
    }
    let arguments = node.child_by_field_name("arguments")?;
    let mut cursor = arguments.walk();
    let mut positional = arguments
        .named_children(&mut cursor)
        .filter(|a| a.kind() != "comment" && a.kind() != "keyword_argument");
    let (object, attribute) = (positional.next()?, positional.next()?);
    let object_text = clip(text(object, source));
    match string_literal(attribute, source) {
        Some(name) if is_dangerous_attribute(&name) => {
            Some(format!("getattr({object_text}, \"{name}\")"))
        }
        Some(name) => {
            let qualified = imports.qualified(object, source);
            qualified
                .iter()
                .any(|q| is_dangerous(&format!("{q}.{name}")))
                .then(|| format!("getattr({object_text}, \"{name}\")"))
        }
        None => imports
            .is_module_like(object, source)
            .then(|| format!("getattr({object_text}, …)")),
    }
}

/// The value of a plain string literal (no interpolation, no concatenation).
pub(crate) fn string_literal(node: Node<'_>, source: &str) -> Option<String> {
    if node.kind() != "string" {
        return None;
    }
    let mut cursor = node.walk();
    let mut content = String::new();
    for child in node.named_children(&mut cursor) {
        match child.kind() {
            "string_content" => content.push_str(text(child, source)),
            "string_start" | "string_end" => {}
            _ => return None,
        }
    }
    Some(content)
}

/// `globals()`, `vars(x)`, `locals()` or `sys.modules` (any alias) as the
/// value of a subscript or the object of a method call.
fn namespace_access(value: Node<'_>, source: &str, imports: &Imports) -> Option<String> {
    if value.kind() == "call" {
        return NAMESPACE_FUNCTIONS
            .iter()
            .find(|f| calls_builtin(value, source, imports, f))
            .map(|f| format!("{f}()[...]"));
    }
    imports
        .qualified(value, source)
        .iter()
        .any(|q| q == "sys.modules")
        .then(|| "sys.modules[...]".to_string())
}

/// `globals().get(…)`, `sys.modules.pop(…)` and other methods of those mappings.
fn namespace_method(node: Node<'_>, source: &str, imports: &Imports) -> Option<String> {
    let function = node.child_by_field_name("function")?;
    if function.kind() != "attribute" {
        return None;
    }
    namespace_access(function.child_by_field_name("object")?, source, imports)
}

/// `<module>.__dict__` of an imported module or `builtins`.
fn module_dict(node: Node<'_>, source: &str, imports: &Imports) -> Option<String> {
    let attribute = node.child_by_field_name("attribute")?;
    if text(attribute, source) != "__dict__" {
        return None;
    }
    let object = node.child_by_field_name("object")?;
    if !imports.is_module_like(object, source) {
        return None;
    }
    let name = imports
        .qualified(object, source)
        .into_iter()
        .next()
        .unwrap_or_else(|| text(object, source).to_string());
    Some(format!("{name}.__dict__"))
}

/// At most 40 characters of an expression, for a name.
pub(crate) fn clip(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= 40 {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(39).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::is_dangerous;
    use crate::dangerous_calls;

    fn names(source: &str) -> Vec<String> {
        dangerous_calls(source)
            .into_iter()
            .map(|c| c.name)
            .collect()
    }

    #[test]
    fn dynamic_imports_under_any_alias() {
        assert_eq!(
            names("import importlib\nimportlib.import_module('os').system('id')\n"),
            vec!["importlib.import_module"]
        );
        assert_eq!(
            names("import importlib as il\nm = il.import_module(name)\n"),
            vec!["importlib.import_module"]
        );
        assert_eq!(
            names("from importlib import import_module as load\nload('os')\n"),
            vec!["importlib.import_module"]
        );
        assert_eq!(
            names("import importlib\nimportlib.__import__('os')\n"),
            vec!["importlib.__import__"]
        );
    }

    #[test]
    fn getattr_on_modules_with_computed_or_dangerous_names() {
        assert_eq!(
            names("import os\nf = getattr(os, 'sys' + 'tem')\n"),
            vec!["getattr(os, …)"]
        );
        assert_eq!(
            names("import builtins\nf = getattr(builtins, name)\n"),
            vec!["getattr(builtins, …)"]
        );
        assert_eq!(
            names("f = getattr(thing, \"system\")\n"),
            vec!["getattr(thing, \"system\")"]
        );
        assert_eq!(
            names("import subprocess as sp\nf = getattr(sp, 'run')\n"),
            vec!["getattr(sp, \"run\")"]
        );
        assert_eq!(
            names("f = getattr(fn, '__globals__')\n"),
            vec!["getattr(fn, \"__globals__\")"]
        );
        // Ordinary getattr on objects is fine.
        assert!(names("v = getattr(self, name, None)\nw = getattr(obj, 'run')\n").is_empty());
        assert!(names("import os\np = getattr(os, 'sep')\n").is_empty());
    }

    #[test]
    fn builtins_namespaces_and_module_tables() {
        assert_eq!(names("b = __builtins__\n"), vec!["__builtins__"]);
        assert_eq!(
            names("f = globals()['ev' + 'al']\n"),
            vec!["globals()[...]"]
        );
        assert_eq!(names("f = vars(obj)['x']\n"), vec!["vars()[...]"]);
        assert_eq!(names("f = locals().get('x')\n"), vec!["locals()[...]"]);
        assert_eq!(
            names("import sys\nos = sys.modules['os']\n"),
            vec!["sys.modules[...]"]
        );
        assert_eq!(
            names("from sys import modules\nos = modules.get('os')\n"),
            vec!["sys.modules[...]"]
        );
        assert_eq!(
            names("import builtins\nf = builtins.__dict__['eval']\n"),
            vec!["builtins.__dict__"]
        );
        // Reading them without indexing is not dynamic access.
        assert!(names("import sys\nloaded = 'os' in sys.modules\nx = '{a}'.format(**locals())\nd = obj.__dict__\n").is_empty());
    }

    #[test]
    fn dangerous_names() {
        for name in [
            "eval",
            "os.system",
            "os.execvp",
            "os.spawnl",
            "subprocess.Popen",
            "pickle.loads",
            "builtins.exec",
        ] {
            assert!(is_dangerous(name), "{name}");
        }
        for name in [
            "re.compile",
            "os.path.join",
            "os.exec",
            "os.execute_all",
            "json.loads",
            "evaluate",
        ] {
            assert!(!is_dangerous(name), "{name}");
        }
    }
}
