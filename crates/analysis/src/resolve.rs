//! What names a piece of Python binds by import and what it calls, read
//! with tree-sitter: the raw facts behind following a failing test to the
//! definitions it runs (`stage::reach` does the following across files).
//! Pure functions over one module's text; no I/O.

use tree_sitter::Node;

use super::tree::{parse, text, walk};

/// A name an import binds in a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The name bound locally (`lg` of `import ledger as lg`).
    pub local: String,
    /// The module as written, leading dots kept (`.money`, `ledger`).
    pub module: String,
    /// The name taken from the module (`to_cents` of `from .money import
    /// to_cents`); `None` when the binding is the module itself.
    pub name: Option<String>,
}

/// One call: `name(...)`, or `receiver.name(...)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub name: String,
    /// The dotted expression before the last `.` (`ledger` of
    /// `ledger.to_cents(...)`, `wallet` of `wallet.pay(...)`).
    pub receiver: Option<String>,
}

/// The names every top-level import statement of `source` binds, in order
/// (imports inside functions and `if` blocks count too; `*` imports are
/// left out).
pub fn import_bindings(source: &str) -> Vec<Binding> {
    bindings_in(parse(source).root_node(), source)
}

/// [`import_bindings`] of a parsed module.
pub(super) fn bindings_in(root: Node<'_>, source: &str) -> Vec<Binding> {
    let mut out = Vec::new();
    walk(root, |node| match node.kind() {
        "import_statement" => {
            for name in named_children(node) {
                out.extend(plain_import(name, source));
            }
            false
        }
        "import_from_statement" => {
            let module = node
                .child_by_field_name("module_name")
                .map(|m| text(m, source).to_string())
                .unwrap_or_default();
            let mut cursor = node.walk();
            for name in node.children_by_field_name("name", &mut cursor) {
                let (taken, local) = aliased(name, source);
                out.push(Binding {
                    local,
                    module: module.clone(),
                    name: Some(taken),
                });
            }
            false
        }
        _ => true,
    });
    out
}

/// One import statement's modules: `import a.b, c` gives `a.b` and `c`
/// (no names); `from .x import y, z` gives `.x` with `y` and `z`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleImport {
    /// The module as written, leading dots kept (`a.b`, `.x`, `.`).
    pub module: String,
    /// The names a `from` import takes (`*` left out).
    pub names: Vec<String>,
}

/// Every module `source` imports, in source order (imports inside
/// functions and `if` blocks count too).
pub fn module_imports(source: &str) -> Vec<ModuleImport> {
    let tree = parse(source);
    let mut out = Vec::new();
    walk(tree.root_node(), |node| match node.kind() {
        "import_statement" => {
            for name in named_children(node) {
                let (module, _) = aliased(name, source);
                if !module.is_empty() {
                    out.push(ModuleImport {
                        module,
                        names: Vec::new(),
                    });
                }
            }
            false
        }
        "import_from_statement" => {
            let module = node
                .child_by_field_name("module_name")
                .map(|m| text(m, source).to_string())
                .unwrap_or_default();
            let mut cursor = node.walk();
            let names = node
                .children_by_field_name("name", &mut cursor)
                .map(|name| aliased(name, source).0)
                .collect();
            out.push(ModuleImport { module, names });
            false
        }
        _ => true,
    });
    out
}

/// `import a.b` binds `a` (to module `a`); `import a.b as c` binds `c` to `a.b`.
fn plain_import(node: Node<'_>, source: &str) -> Option<Binding> {
    let (module, local) = aliased(node, source);
    if module.is_empty() {
        return None;
    }
    let aliased = node.kind() == "aliased_import";
    let (module, local) = if aliased {
        (module, local)
    } else {
        let top = module.split('.').next().unwrap_or(&module).to_string();
        (top.clone(), top)
    };
    Some(Binding {
        local,
        module,
        name: None,
    })
}

/// `(name, local)` of a `dotted_name` or an `aliased_import`.
fn aliased(node: Node<'_>, source: &str) -> (String, String) {
    if node.kind() == "aliased_import" {
        let name = node
            .child_by_field_name("name")
            .map(|n| text(n, source).to_string())
            .unwrap_or_default();
        let alias = node
            .child_by_field_name("alias")
            .map(|n| text(n, source).to_string())
            .unwrap_or_else(|| name.clone());
        (name, alias)
    } else {
        let name = text(node, source).to_string();
        (name.clone(), name)
    }
}

fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// The calls made in `source`, or — when `scope` names a function, a
/// method (`Class.method`) or a class — in that definition only; in source
/// order, each once.
pub fn calls(source: &str, scope: Option<&str>) -> Vec<Call> {
    let tree = parse(source);
    let root = tree.root_node();
    let start = match scope {
        None => Some(root),
        Some(scope) => find_definition(root, source, scope),
    };
    let Some(start) = start else {
        return Vec::new();
    };
    let mut out: Vec<Call> = Vec::new();
    walk(start, |node| {
        if node.kind() == "call" {
            if let Some(call) = node
                .child_by_field_name("function")
                .and_then(|f| call_of(f, source))
            {
                if !out.contains(&call) {
                    out.push(call);
                }
            }
        }
        true
    });
    out
}

fn call_of(function: Node<'_>, source: &str) -> Option<Call> {
    match function.kind() {
        "identifier" => Some(Call {
            name: text(function, source).to_string(),
            receiver: None,
        }),
        "attribute" => {
            let name = function.child_by_field_name("attribute")?;
            let object = function.child_by_field_name("object")?;
            let receiver = match object.kind() {
                "identifier" | "attribute" => Some(text(object, source).to_string()),
                _ => None,
            };
            Some(Call {
                name: text(name, source).to_string(),
                receiver,
            })
        }
        _ => None,
    }
}

/// The function or class definition named by a dotted `path` (`Class.method`).
fn find_definition<'t>(root: Node<'t>, source: &str, path: &str) -> Option<Node<'t>> {
    let mut scope = root;
    for part in path.split('.') {
        scope = definitions_in(scope)
            .into_iter()
            .find(|d| d.child_by_field_name("name").map(|n| text(n, source)) == Some(part))?;
    }
    Some(scope)
}

/// The function and class definitions directly in `node` (a module, or the
/// body of a class), decorated ones included.
fn definitions_in(node: Node<'_>) -> Vec<Node<'_>> {
    let body = match node.kind() {
        "module" => Some(node),
        _ => node.child_by_field_name("body"),
    };
    let Some(body) = body else {
        return Vec::new();
    };
    named_children(body)
        .into_iter()
        .filter_map(|child| match child.kind() {
            "function_definition" | "class_definition" => Some(child),
            "decorated_definition" => child.child_by_field_name("definition"),
            _ => None,
        })
        .collect()
}

/// What a module-level assignment of `name` refers to, for following a
/// name that is a wrapper of code defined elsewhere (`cmd_compare =
/// deprecated(cli.cmd_compare)`, `run = functools.partial(_run, x=1)`,
/// `total = other.total`): the dotted names in the assigned expression,
/// a call's arguments before the function called, in source order, each
/// once. The last assignment of `name` at the module's top level counts;
/// empty when there is none.
pub fn assigned_references(source: &str, name: &str) -> Vec<String> {
    let tree = parse(source);
    let root = tree.root_node();
    let mut value = None;
    for statement in named_children(root) {
        if statement.kind() != "expression_statement" {
            continue;
        }
        for assignment in named_children(statement) {
            if assignment.kind() != "assignment" {
                continue;
            }
            let left = assignment.child_by_field_name("left");
            if left.is_some_and(|l| l.kind() == "identifier" && text(l, source) == name) {
                value = assignment.child_by_field_name("right");
            }
        }
    }
    let mut out = Vec::new();
    if let Some(value) = value {
        references_in(value, source, &mut out);
    }
    out
}

/// The dotted names in an expression: a call's arguments first, then the
/// function it calls.
fn references_in(node: Node<'_>, source: &str, out: &mut Vec<String>) {
    let mut push = |name: String| {
        if !out.contains(&name) {
            out.push(name);
        }
    };
    match node.kind() {
        "identifier" => push(text(node, source).to_string()),
        "attribute" if is_dotted(node) => push(text(node, source).to_string()),
        "call" => {
            if let Some(arguments) = node.child_by_field_name("arguments") {
                references_in(arguments, source, out);
            }
            if let Some(function) = node.child_by_field_name("function") {
                references_in(function, source, out);
            }
        }
        "keyword_argument" => {
            if let Some(value) = node.child_by_field_name("value") {
                references_in(value, source, out);
            }
        }
        _ => {
            for child in named_children(node) {
                references_in(child, source, out);
            }
        }
    }
}

/// `a.b.c`: identifiers joined by attribute access only.
fn is_dotted(node: Node<'_>) -> bool {
    match node.kind() {
        "identifier" => true,
        "attribute" => node.child_by_field_name("object").is_some_and(is_dotted),
        _ => false,
    }
}

/// Local variables assigned a call of a name in `scope` (`w = Wallet()`
/// gives `("w", "Wallet")`): how a method call on an instance is traced
/// to its class.
pub fn instances(source: &str, scope: Option<&str>) -> Vec<(String, String)> {
    let tree = parse(source);
    let root = tree.root_node();
    let start = match scope {
        None => Some(root),
        Some(scope) => find_definition(root, source, scope),
    };
    let Some(start) = start else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk(start, |node| {
        if node.kind() == "assignment" {
            let left = node.child_by_field_name("left");
            let right = node.child_by_field_name("right");
            if let (Some(left), Some(right)) = (left, right) {
                let class = right
                    .child_by_field_name("function")
                    .filter(|_| right.kind() == "call")
                    .and_then(|f| call_of(f, source));
                if let (true, Some(class)) = (left.kind() == "identifier", class) {
                    out.push((text(left, source).to_string(), class.name));
                }
            }
        }
        true
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(local: &str, module: &str, name: Option<&str>) -> Binding {
        Binding {
            local: local.into(),
            module: module.into(),
            name: name.map(str::to_string),
        }
    }

    #[test]
    fn module_imports_keep_dots_dotted_names_and_from_names() {
        let found = module_imports(
            "import a.b, c as d\nfrom .x import (y,\n    z as w)\nfrom . import q\nfrom m import *\n\
             def f():\n    import inner\n",
        );
        let shown: Vec<(String, Vec<String>)> =
            found.into_iter().map(|i| (i.module, i.names)).collect();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            shown,
            vec![
                ("a.b".into(), vec![]),
                ("c".into(), vec![]),
                (".x".into(), s(&["y", "z"])),
                (".".into(), s(&["q"])),
                ("m".into(), vec![]),
                ("inner".into(), vec![]),
            ]
        );
    }

    #[test]
    fn imports_bind_names_modules_and_aliases() {
        let source = "import os.path\nimport ledger as lg\nfrom .money import to_cents, \
                      apply_discount as discount\nfrom ledger import (\n    Wallet,\n)\n\
                      from . import report\nfrom x import *\n";
        assert_eq!(
            import_bindings(source),
            vec![
                binding("os", "os", None),
                binding("lg", "ledger", None),
                binding("to_cents", ".money", Some("to_cents")),
                binding("discount", ".money", Some("apply_discount")),
                binding("Wallet", "ledger", Some("Wallet")),
                binding("report", ".", Some("report")),
            ]
        );
    }

    #[test]
    fn assignments_name_what_they_wrap() {
        let source = "from . import cli\nimport functools\n\n\
                      cmd_compare = deprecated(cli.cmd_compare, version=\"3.0\")\n\
                      run = functools.partial(_run, level=LEVEL)\ntotal = other.total\n\
                      total = money.total\nconst = 3\n";
        let names = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            assigned_references(source, "cmd_compare"),
            names(&["cli.cmd_compare", "deprecated"])
        );
        assert_eq!(
            assigned_references(source, "run"),
            names(&["_run", "LEVEL", "functools.partial"])
        );
        assert_eq!(
            assigned_references(source, "total"),
            names(&["money.total"])
        );
        assert!(assigned_references(source, "const").is_empty());
        assert!(assigned_references(source, "missing").is_empty());
    }

    #[test]
    fn calls_are_read_per_function_or_method() {
        let source = "def test_a():\n    assert to_cents(1.25) == 125\n    lg.money.total([1])\n\n\
                      class TestW:\n    def test_pay(self):\n        w = Wallet()\n        w.pay(3)\n";
        let call = |name: &str, receiver: Option<&str>| Call {
            name: name.into(),
            receiver: receiver.map(str::to_string),
        };
        assert_eq!(
            calls(source, Some("test_a")),
            vec![call("to_cents", None), call("total", Some("lg.money"))]
        );
        assert_eq!(
            calls(source, Some("TestW.test_pay")),
            vec![call("Wallet", None), call("pay", Some("w"))]
        );
        assert!(calls(source, Some("missing")).is_empty());
        assert_eq!(calls(source, None).len(), 4);
        assert_eq!(
            instances(source, Some("TestW.test_pay")),
            vec![("w".to_string(), "Wallet".to_string())]
        );
    }
}
