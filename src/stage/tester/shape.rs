//! The static steps of the validation chain, read with tree-sitter: does a
//! generated test file parse, does it import the module under test, and
//! does each test function assert something about the module's results.
//! Pure functions over text; running the tests is [`super::run`]'s job.
//!
//! A test function has a real assertion when one of these holds:
//! - an `assert` whose condition calls into the module under test (a name
//!   imported from it, or an attribute of the module imported as a whole),
//!   or names a variable assigned from such a call in the same function;
//! - a `with pytest.raises(SomeError)` (not `Exception` or
//!   `BaseException`) whose body calls into the module.
//!
//! `assert True`, `assert 1 == 1`, asserts on values the test made itself
//! and a body that only calls the module (it "does not raise") do not count.

use std::collections::BTreeSet;

use tree_sitter::Node;

use swarm_analysis::tree::{parse, text};

use swarm_analysis::{import_bindings, module_imports};

/// One top-level test function of a generated file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestFunction {
    /// `test_mean_of_three`.
    pub name: String,
    /// The bytes of the definition, decorators included.
    pub start: usize,
    pub end: usize,
    /// `Err(reason)` when it asserts nothing about the module's results.
    pub asserts: Result<(), String>,
}

/// What the static steps found in a generated file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    pub functions: Vec<TestFunction>,
    /// Top-level `class Test…` blocks: not validated, so never kept.
    pub classes: Vec<(String, usize, usize)>,
}

/// Whether `source` imports `module` (dotted): `import module`,
/// `import module as m`, `from module import f`, or `from package import
/// leaf` where `package.leaf` is the module.
pub fn imports_module(source: &str, module: &str) -> bool {
    module_imports(source).iter().any(|import| {
        import.module == module
            || import
                .names
                .iter()
                .any(|name| format!("{}.{name}", import.module) == module)
    })
}

/// The names through which `source` reaches `module`: (names bound to the
/// module itself, names bound to something taken from it).
fn module_names(source: &str, module: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut whole = BTreeSet::new();
    let mut taken = BTreeSet::new();
    for binding in import_bindings(source) {
        match &binding.name {
            None if binding.module == module => {
                whole.insert(binding.local);
            }
            // `import pkg.money` binds `pkg`: calls go through it.
            None if module.starts_with(&format!("{}.", binding.module)) => {
                whole.insert(binding.local);
            }
            Some(name) if format!("{}.{name}", binding.module) == module => {
                whole.insert(binding.local);
            }
            Some(_) if binding.module == module => {
                taken.insert(binding.local);
            }
            _ => {}
        }
    }
    (whole, taken)
}

/// The test functions and test classes of `source`, each function with
/// whether it asserts on `module`'s results.
pub fn shape(source: &str, module: &str) -> Shape {
    let tree = parse(source);
    let names = module_names(source, module);
    let root = tree.root_node();
    let mut functions = Vec::new();
    let mut classes = Vec::new();
    let mut cursor = root.walk();
    for node in root.named_children(&mut cursor) {
        let definition = if node.kind() == "decorated_definition" {
            node.child_by_field_name("definition")
        } else {
            Some(node)
        };
        let Some(definition) = definition else {
            continue;
        };
        let name = definition
            .child_by_field_name("name")
            .map(|n| text(n, source).to_string())
            .unwrap_or_default();
        match definition.kind() {
            "function_definition" if name.starts_with("test") => {
                let asserts = definition
                    .child_by_field_name("body")
                    .map_or(Err(NO_ASSERT.to_string()), |body| {
                        real_assertion(body, source, &names)
                    });
                functions.push(TestFunction {
                    name,
                    start: node.start_byte(),
                    end: node.end_byte(),
                    asserts,
                });
            }
            "class_definition" if name.starts_with("Test") => {
                classes.push((name, node.start_byte(), node.end_byte()));
            }
            _ => {}
        }
    }
    Shape { functions, classes }
}

const NO_ASSERT: &str =
    "no assertion: it only checks that the code does not raise (no assert, no pytest.raises)";
const NOT_ON_MODULE: &str =
    "no real assertion: its asserts do not involve a result of the module under test";

/// `Ok` when `body` holds a real assertion (see the module docs).
fn real_assertion(
    body: Node<'_>,
    source: &str,
    names: &(BTreeSet<String>, BTreeSet<String>),
) -> Result<(), String> {
    let calls_module = |node: Node<'_>| calls_into(node, source, names);
    let derived = derived_names(body, source, &calls_module);
    let mut seen_assert = false;
    let mut found = false;
    walk(body, |node| {
        match node.kind() {
            "assert_statement" => {
                seen_assert = true;
                let condition = node.named_child(0);
                if condition.is_some_and(|c| calls_module(c) || mentions(c, source, &derived)) {
                    found = true;
                }
                false
            }
            "with_statement" => {
                if let Some(specific) = raises_specific(node, source) {
                    seen_assert = true;
                    let body = node.child_by_field_name("body");
                    if specific && body.is_some_and(calls_module) {
                        found = true;
                    }
                }
                true
            }
            // Nested functions are not the test's own statements.
            "function_definition" | "lambda" => false,
            _ => true,
        }
    });
    match (found, seen_assert) {
        (true, _) => Ok(()),
        (false, true) => Err(NOT_ON_MODULE.into()),
        (false, false) => Err(NO_ASSERT.into()),
    }
}

/// For a `with pytest.raises(...)` statement: `Some(true)` when the
/// expected exception is a specific one, `Some(false)` for `Exception` or
/// `BaseException`; `None` for any other `with`.
fn raises_specific(with: Node<'_>, source: &str) -> Option<bool> {
    let mut found = None;
    walk(with, |node| {
        if found.is_some() || node.kind() == "block" {
            return false;
        }
        if node.kind() == "call" {
            let function = node
                .child_by_field_name("function")
                .map(|f| text(f, source));
            if matches!(function, Some("pytest.raises" | "raises")) {
                let first = node
                    .child_by_field_name("arguments")
                    .and_then(|a| a.named_child(0))
                    .map(|a| text(a, source).trim().to_string())
                    .unwrap_or_default();
                let broad = first.is_empty() || first == "Exception" || first == "BaseException";
                found = Some(!broad);
                return false;
            }
        }
        true
    });
    found
}

/// Whether `node` holds a call whose callee is a name taken from the
/// module or an attribute of the module itself.
fn calls_into(node: Node<'_>, source: &str, names: &(BTreeSet<String>, BTreeSet<String>)) -> bool {
    let (whole, taken) = names;
    let mut found = false;
    walk(node, |n| {
        if found {
            return false;
        }
        if n.kind() == "call" {
            if let Some(function) = n.child_by_field_name("function") {
                let callee = text(function, source);
                let head = callee.split('.').next().unwrap_or_default();
                let via_module = whole.contains(head) && callee.contains('.');
                let via_name = taken.contains(head);
                if via_module || via_name {
                    found = true;
                    return false;
                }
            }
        }
        true
    });
    found
}

/// Names assigned in `body` from an expression that calls into the module
/// or uses a name already so assigned (two passes follow short chains).
fn derived_names(
    body: Node<'_>,
    source: &str,
    calls_module: &dyn Fn(Node<'_>) -> bool,
) -> BTreeSet<String> {
    let mut derived = BTreeSet::new();
    for _ in 0..2 {
        walk(body, |node| {
            let (target, value) = match node.kind() {
                "assignment" | "augmented_assignment" => (
                    node.child_by_field_name("left"),
                    node.child_by_field_name("right"),
                ),
                "for_statement" => (
                    node.child_by_field_name("left"),
                    node.child_by_field_name("right"),
                ),
                "function_definition" | "lambda" => return false,
                _ => return true,
            };
            if let (Some(target), Some(value)) = (target, value) {
                if calls_module(value) || mentions(value, source, &derived) {
                    walk(target, |t| {
                        if t.kind() == "identifier" {
                            derived.insert(text(t, source).to_string());
                        }
                        true
                    });
                }
            }
            true
        });
    }
    derived
}

/// Whether `node` uses one of `names` as an identifier.
fn mentions(node: Node<'_>, source: &str, names: &BTreeSet<String>) -> bool {
    let mut found = false;
    walk(node, |n| {
        if n.kind() == "identifier" && names.contains(text(n, source)) {
            found = true;
        }
        !found
    });
    found
}

/// Visits `root` and its descendants in source order; `visit` says whether
/// to descend.
fn walk<'t>(root: Node<'t>, mut visit: impl FnMut(Node<'t>) -> bool) {
    let mut cursor = root.walk();
    'next: loop {
        if visit(cursor.node()) && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.node() == root {
                return;
            }
            if cursor.goto_next_sibling() {
                continue 'next;
            }
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "import pytest\nfrom stats import mean, spread\nimport stats\n\n";

    fn verdict(body: &str) -> Result<(), String> {
        let source = format!("{HEAD}def test_it():\n{body}");
        let shape = shape(&source, "stats");
        assert_eq!(shape.functions.len(), 1, "{source}");
        shape.functions[0].asserts.clone()
    }

    #[test]
    fn asserts_on_results_of_the_module_count() {
        assert_eq!(verdict("    assert mean([1, 2, 3]) == 2\n"), Ok(()));
        assert_eq!(verdict("    assert stats.spread([1, 5]) == 4\n"), Ok(()));
        assert_eq!(
            verdict(
                "    result = mean([2, 4])\n    doubled = result * 2\n    assert doubled == 6\n"
            ),
            Ok(())
        );
        assert_eq!(
            verdict("    with pytest.raises(ZeroDivisionError):\n        mean([])\n"),
            Ok(())
        );
    }

    #[test]
    fn constant_unrelated_and_missing_asserts_do_not() {
        let unrelated = verdict("    mean([1])\n    assert True\n    assert 1 == 1\n");
        assert_eq!(unrelated, Err(NOT_ON_MODULE.to_string()));
        let made_up =
            verdict("    values = [1, 2]\n    mean(values)\n    assert values == [1, 2]\n");
        assert_eq!(made_up, Err(NOT_ON_MODULE.to_string()));
        assert_eq!(verdict("    mean([1, 2, 3])\n"), Err(NO_ASSERT.to_string()));
        let broad = verdict("    with pytest.raises(Exception):\n        mean([])\n");
        assert_eq!(broad, Err(NOT_ON_MODULE.to_string()));
    }

    #[test]
    fn functions_keep_their_decorators_and_classes_are_listed() {
        let source = format!(
            "{HEAD}@pytest.mark.parametrize('v', [1])\ndef test_one(v):\n    assert mean([v]) == v\n\n\
             def helper():\n    return 1\n\nclass TestMore:\n    def test_x(self):\n        assert mean([1]) == 1\n"
        );
        let shape = shape(&source, "stats");
        let names: Vec<&str> = shape.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["test_one"]);
        assert!(source[shape.functions[0].start..].starts_with("@pytest.mark"));
        assert_eq!(shape.classes.len(), 1);
        assert_eq!(shape.classes[0].0, "TestMore");
    }

    #[test]
    fn the_module_under_test_must_be_imported() {
        assert!(imports_module("from stats import mean\n", "stats"));
        assert!(imports_module("import stats as s\n", "stats"));
        assert!(imports_module("from pkg import money\n", "pkg.money"));
        assert!(!imports_module("import statistics\n", "stats"));
        let names = module_names("from pkg import money as m\n", "pkg.money");
        assert!(names.0.contains("m"));
        let source = "import pkg.money\n\ndef test_it():\n    assert pkg.money.cents(1) == 100\n";
        assert_eq!(shape(source, "pkg.money").functions[0].asserts, Ok(()));
    }
}
