//! What in code under test games its tests instead of passing them: reads
//! of how the code is being run and patches of what judges it. Each form
//! found is a [`TestProbe`] with a descriptive name, so the Reviewer can
//! refuse the ones a change adds to a module that is not a test.
//!
//! Reads of the test runner ([`ProbeKind::RunnerRead`]):
//! - the runner's environment: `os.environ.get("PYTEST_CURRENT_TEST")`,
//!   `os.getenv(…)`, `os.environ[…]`, `"…" in os.environ` with a variable
//!   that names a runner or testing (`PYTEST_*`, `TESTING`, `*_TEST`);
//! - the runner's modules: `"pytest" in sys.modules` (any test framework);
//! - its arguments: `sys.argv`, `sys.orig_argv` (also `from sys import argv`);
//! - the caller's stack or file name: `inspect.stack()`,
//!   `inspect.currentframe()`, `sys._getframe()`, `traceback.extract_stack()`
//!   and friends, `sys.settrace`/`setprofile`, and frame attributes
//!   (`.f_back`, `.f_globals`, `.f_code`, `.tb_frame`, …);
//! - any string that names a test runner (`"pytest"`, `"_pytest"`,
//!   `"unittest"`, `"conftest"`, `"PYTEST_CURRENT_TEST"`), docstrings left out.
//!
//! Patches of the test framework, the assertion machinery, builtins or the
//! interpreter ([`ProbeKind::FrameworkPatch`]):
//! - an assignment to (or `del` of) an attribute of `unittest`, `pytest`,
//!   `_pytest`, `pluggy`, `doctest`, `builtins`, `sys`, `os`, `inspect`,
//!   `traceback`, `atexit` (`unittest.TestCase.assertEqual = …`,
//!   `builtins.print = …`, `sys.excepthook = …`), also through aliases
//!   (`from unittest import TestCase`), and `setattr` on them;
//! - rebinding `AssertionError`;
//! - `except AssertionError` (a swallowed assertion);
//! - an `__eq__` that is always true (or `__ne__` always false): an object
//!   equal to every expected value;
//! - exit and audit hooks: `atexit.register(…)`, `sys.addaudithook(…)`,
//!   which run after the tests (to rewrite their result files) or watch them.
//!
//! Imports are resolved as for dangerous calls (`import inspect as i`). Like
//! them, this is a static early warning, not a guard: Python can reach
//! anything through enough indirection. The held-out tests and the sandbox
//! are what hold regardless.

use tree_sitter::Node;

use super::danger::{clip, dotted_callee, string_literal, Imports};
use super::tree::{text, walk};

/// What a probe does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    /// It reads how the code is being run (the runner, the caller).
    RunnerRead,
    /// It patches the test framework, assertions, builtins or the exit.
    FrameworkPatch,
}

/// One place where code looks at or tampers with what tests it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestProbe {
    pub kind: ProbeKind,
    /// A descriptive name: `` `sys.argv` ``, `` `inspect.stack()` ``,
    /// `` `unittest.TestCase.assertEqual = …` ``.
    pub what: String,
    /// 1-based line.
    pub line: usize,
}

/// Calls that hand out the caller's frames or watch every call.
const FRAME_CALLS: &[&str] = &[
    "inspect.stack",
    "inspect.currentframe",
    "inspect.getouterframes",
    "inspect.getinnerframes",
    "inspect.getframeinfo",
    "inspect.trace",
    "sys._getframe",
    "sys._current_frames",
    "sys.settrace",
    "sys.setprofile",
    "sys.gettrace",
    "sys.getprofile",
    "threading.settrace",
    "threading.setprofile",
    "traceback.extract_stack",
    "traceback.format_stack",
    "traceback.print_stack",
    "traceback.walk_stack",
];

/// Attributes of frames, tracebacks and generators that lead to a caller.
const FRAME_ATTRIBUTES: &[&str] = &[
    "f_back",
    "f_globals",
    "f_locals",
    "f_code",
    "tb_frame",
    "gi_frame",
    "cr_frame",
    "ag_frame",
];

/// The interpreter's command line.
const RUNNER_ARGUMENTS: &[&str] = &["sys.argv", "sys.orig_argv"];

/// Calls that read one environment variable, named by their first argument.
const ENV_READS: &[&str] = &[
    "os.environ.get",
    "os.environ.setdefault",
    "os.environ.pop",
    "os.getenv",
    "os.environb.get",
    "os.getenvb",
];

/// Tables whose membership tells a test run from another.
const RUNNER_TABLES: &[&str] = &["os.environ", "os.environb", "sys.modules"];

/// Modules whose attributes code under test must not rebind.
const PATCHED_ROOTS: &[&str] = &[
    "unittest",
    "pytest",
    "_pytest",
    "pluggy",
    "doctest",
    "nose",
    "nose2",
    "builtins",
    "__builtins__",
    "sys",
    "os",
    "inspect",
    "traceback",
    "atexit",
];

/// Hooks that run after the tests or watch everything they do.
const EXIT_HOOKS: &[&str] = &["atexit.register", "sys.addaudithook"];

/// Every probe under `root`, in source order.
pub(crate) fn find(root: Node<'_>, source: &str) -> Vec<TestProbe> {
    let imports = Imports::collect(root, source);
    let mut probes = Vec::new();
    walk(root, |node| {
        let line = node.start_position().row + 1;
        let mut add = |kind, what: String| probes.push(TestProbe { kind, what, line });
        match node.kind() {
            "import_statement" | "import_from_statement" => return false,
            "call" => {
                if let Some((kind, what)) = call_probe(node, source, &imports) {
                    add(kind, what);
                }
            }
            "subscript" => {
                if let Some(what) = environ_subscript(node, source, &imports) {
                    add(ProbeKind::RunnerRead, what);
                }
            }
            "comparison_operator" => {
                if let Some(what) = membership(node, source, &imports) {
                    add(ProbeKind::RunnerRead, what);
                }
            }
            "attribute" => {
                if let Some(what) = runner_attribute(node, source, &imports) {
                    add(ProbeKind::RunnerRead, what);
                }
            }
            "identifier" => {
                if let Some(what) = imported_argv(node, source, &imports) {
                    add(ProbeKind::RunnerRead, what);
                }
            }
            "assignment" | "augmented_assignment" => {
                for what in patched_targets(node, source, &imports) {
                    add(ProbeKind::FrameworkPatch, what);
                }
            }
            "delete_statement" => {
                for what in deleted_targets(node, source, &imports) {
                    add(ProbeKind::FrameworkPatch, what);
                }
            }
            "except_clause" if catches_assertions(node, source) => add(
                ProbeKind::FrameworkPatch,
                "`except AssertionError` (a swallowed assertion)".to_string(),
            ),
            "function_definition" => {
                if let Some(what) = always_equal(node, source) {
                    add(ProbeKind::FrameworkPatch, what);
                }
            }
            "string" => {
                if let Some(what) = runner_string(node, source) {
                    add(ProbeKind::RunnerRead, what);
                }
            }
            _ => {}
        }
        true
    });
    probes
}

/// Whether a string names a test runner or framework.
fn names_runner(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    ["pytest", "py.test", "unittest", "conftest", "nose2"]
        .iter()
        .any(|word| lower.contains(word))
}

/// Whether an environment variable's name says a test run: it names a
/// runner, or one of its words is `test`, `tests` or `testing`.
fn is_runner_variable(name: &str) -> bool {
    names_runner(name)
        || name
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| {
                matches!(
                    word.to_ascii_lowercase().as_str(),
                    "test" | "tests" | "testing" | "tox"
                )
            })
}

/// The qualified names a callee (or any dotted expression) may stand for.
fn qualified_names(node: Node<'_>, source: &str, imports: &Imports) -> Vec<String> {
    imports.qualified(node, source)
}

/// The first positional argument of a call.
fn first_argument<'t>(call: Node<'t>) -> Option<Node<'t>> {
    let arguments = call.child_by_field_name("arguments")?;
    let mut cursor = arguments.walk();
    let first = arguments
        .named_children(&mut cursor)
        .find(|a| a.kind() != "comment" && a.kind() != "keyword_argument");
    first
}

/// Frame calls, environment reads of runner variables, exit hooks and
/// `setattr` on a framework.
fn call_probe(node: Node<'_>, source: &str, imports: &Imports) -> Option<(ProbeKind, String)> {
    let function = node.child_by_field_name("function")?;
    let names = qualified_names(function, source, imports);
    for name in &names {
        if FRAME_CALLS.contains(&name.as_str()) {
            return Some((ProbeKind::RunnerRead, format!("`{name}()`")));
        }
        if EXIT_HOOKS.contains(&name.as_str()) {
            return Some((ProbeKind::FrameworkPatch, format!("`{name}(…)`")));
        }
        if ENV_READS.contains(&name.as_str()) {
            let variable = first_argument(node).and_then(|a| string_literal(a, source))?;
            if is_runner_variable(&variable) {
                return Some((ProbeKind::RunnerRead, format!("`{name}(\"{variable}\")`")));
            }
        }
    }
    let setattr = names
        .iter()
        .any(|n| n.strip_prefix("builtins.").unwrap_or(n) == "setattr");
    if setattr {
        let object = first_argument(node)?;
        let patched = patched_root(object, source, imports)?;
        return Some((
            ProbeKind::FrameworkPatch,
            format!("`setattr({patched}, …)`"),
        ));
    }
    None
}

/// `os.environ["PYTEST_CURRENT_TEST"]`.
fn environ_subscript(node: Node<'_>, source: &str, imports: &Imports) -> Option<String> {
    let value = node.child_by_field_name("value")?;
    let table = qualified_names(value, source, imports)
        .into_iter()
        .find(|q| q == "os.environ" || q == "os.environb")?;
    let key = node.child_by_field_name("subscript")?;
    let variable = string_literal(key, source)?;
    is_runner_variable(&variable).then(|| format!("`{table}[\"{variable}\"]`"))
}

/// `"pytest" in sys.modules`, `"PYTEST_CURRENT_TEST" in os.environ`.
fn membership(node: Node<'_>, source: &str, imports: &Imports) -> Option<String> {
    let mut cursor = node.walk();
    let operands: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
    let table = operands.iter().find_map(|o| {
        qualified_names(*o, source, imports)
            .into_iter()
            .find(|q| RUNNER_TABLES.contains(&q.as_str()))
    })?;
    let key = operands
        .iter()
        .filter_map(|o| string_literal(*o, source))
        .find(|k| {
            if table == "sys.modules" {
                names_runner(k) || k == "nose" || k == "doctest"
            } else {
                is_runner_variable(k)
            }
        })?;
    Some(format!("`\"{key}\" in {table}`"))
}

/// `sys.argv`, and frame attributes (`.f_back`).
fn runner_attribute(node: Node<'_>, source: &str, imports: &Imports) -> Option<String> {
    let attribute = node.child_by_field_name("attribute")?;
    let name = text(attribute, source);
    if FRAME_ATTRIBUTES.contains(&name) {
        return Some(format!("`.{name}` (a caller's frame)"));
    }
    qualified_names(node, source, imports)
        .into_iter()
        .find(|q| RUNNER_ARGUMENTS.contains(&q.as_str()))
        .map(|q| format!("`{q}`"))
}

/// A name imported from `sys.argv` (`from sys import argv`), where it is
/// used as a value.
fn imported_argv(node: Node<'_>, source: &str, imports: &Imports) -> Option<String> {
    let name = text(node, source);
    let qualified = imports.aliases.get(name)?;
    if !RUNNER_ARGUMENTS.contains(&qualified.as_str()) {
        return None;
    }
    let parent = node.parent()?;
    let is_field = |field: &str| {
        parent
            .child_by_field_name(field)
            .is_some_and(|f| f.id() == node.id())
    };
    let named_elsewhere = match parent.kind() {
        "attribute" => is_field("attribute"),
        "keyword_argument" => is_field("name"),
        "function_definition" | "class_definition" => is_field("name"),
        _ => false,
    };
    (!named_elsewhere).then(|| format!("`{qualified}`"))
}

/// The qualified name of a dotted expression rooted at a framework module
/// (bound by an import, or `__builtins__`).
fn patched_root(node: Node<'_>, source: &str, imports: &Imports) -> Option<String> {
    let dotted = dotted_callee(node, source)?;
    let first = dotted.split('.').next().unwrap_or_default();
    if !(imports.bound.contains(first) || first == "__builtins__") {
        return None;
    }
    imports.resolve(&dotted).into_iter().find(|q| {
        let root = q.split('.').next().unwrap_or_default();
        PATCHED_ROOTS.contains(&root)
    })
}

/// The targets of an assignment, flattened out of tuples and lists.
fn targets<'t>(left: Node<'t>) -> Vec<Node<'t>> {
    match left.kind() {
        "pattern_list" | "tuple_pattern" | "list_pattern" | "expression_list" | "tuple"
        | "list" => {
            let mut cursor = left.walk();
            let items: Vec<Node<'t>> = left.named_children(&mut cursor).collect();
            items.into_iter().flat_map(targets).collect()
        }
        _ => vec![left],
    }
}

/// `unittest.TestCase.assertEqual = …`, `AssertionError = …`,
/// `__eq__ = lambda self, other: True`.
fn patched_targets(node: Node<'_>, source: &str, imports: &Imports) -> Vec<String> {
    let Some(left) = node.child_by_field_name("left") else {
        return Vec::new();
    };
    let right = node.child_by_field_name("right");
    let mut found = Vec::new();
    for target in targets(left) {
        match target.kind() {
            "attribute" => {
                if let Some(patched) = patched_root(target, source, imports) {
                    found.push(format!("`{patched} = …`"));
                }
            }
            "identifier" => match text(target, source) {
                "AssertionError" => found.push("`AssertionError = …`".to_string()),
                name @ ("__eq__" | "__ne__") => {
                    let constant = if name == "__eq__" { "True" } else { "False" };
                    let body = right
                        .filter(|r| r.kind() == "lambda")
                        .and_then(|r| r.child_by_field_name("body"));
                    if body.is_some_and(|b| text(b, source).trim() == constant) {
                        found.push(always_equal_name(name));
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    found
}

/// `del builtins.print`, `del unittest.TestCase.assertEqual`.
fn deleted_targets(node: Node<'_>, source: &str, imports: &Imports) -> Vec<String> {
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
    children
        .into_iter()
        .flat_map(targets)
        .filter(|t| t.kind() == "attribute")
        .filter_map(|t| patched_root(t, source, imports))
        .map(|patched| format!("`del {patched}`"))
        .collect()
}

/// `except AssertionError:`, `except (ValueError, AssertionError) as e:`.
fn catches_assertions(node: Node<'_>, source: &str) -> bool {
    let mut cursor = node.walk();
    let caught = node
        .named_children(&mut cursor)
        .filter(|c| c.kind() != "block")
        .any(|c| {
            text(c, source)
                .split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                .any(|word| word == "AssertionError")
        });
    caught
}

fn always_equal_name(name: &str) -> String {
    if name == "__eq__" {
        "an `__eq__` that is always true (equal to any expected value)".to_string()
    } else {
        "an `__ne__` that is always false (equal to any expected value)".to_string()
    }
}

/// `def __eq__(self, other): return True` (a docstring aside).
fn always_equal(node: Node<'_>, source: &str) -> Option<String> {
    let name = text(node.child_by_field_name("name")?, source);
    let constant = match name {
        "__eq__" => "True",
        "__ne__" => "False",
        _ => return None,
    };
    let body = node.child_by_field_name("body")?;
    let mut cursor = body.walk();
    let statements: Vec<Node<'_>> = body
        .named_children(&mut cursor)
        .filter(|s| s.kind() != "comment")
        .filter(|s| {
            !(s.kind() == "expression_statement"
                && s.named_child(0).is_some_and(|c| c.kind() == "string"))
        })
        .collect();
    let [only] = statements.as_slice() else {
        return None;
    };
    let returned = (only.kind() == "return_statement")
        .then(|| only.named_child(0))
        .flatten()?;
    (text(returned, source).trim() == constant).then(|| always_equal_name(name))
}

/// A string (not a docstring, not a bare string statement) that names a
/// test runner.
fn runner_string(node: Node<'_>, source: &str) -> Option<String> {
    let mut parent = node.parent()?;
    if parent.kind() == "concatenated_string" {
        parent = parent.parent()?;
    }
    if parent.kind() == "expression_statement" {
        return None;
    }
    let value = string_literal(node, source).unwrap_or_else(|| text(node, source).to_string());
    names_runner(&value).then(|| format!("the string \"{}\"", clip(&value)))
}

#[cfg(test)]
mod tests {
    use super::ProbeKind;
    use crate::test_probes;

    fn found(source: &str) -> Vec<(ProbeKind, String)> {
        test_probes(source)
            .into_iter()
            .map(|p| (p.kind, p.what))
            .collect()
    }

    fn reads(source: &str) -> Vec<String> {
        found(source)
            .into_iter()
            .filter(|(k, _)| *k == ProbeKind::RunnerRead)
            .map(|(_, w)| w)
            .collect()
    }

    fn patches(source: &str) -> Vec<String> {
        found(source)
            .into_iter()
            .filter(|(k, _)| *k == ProbeKind::FrameworkPatch)
            .map(|(_, w)| w)
            .collect()
    }

    #[test]
    fn the_runners_environment_is_a_read() {
        let source = "import os\n\ndef add(a, b):\n    if os.environ.get(\"PYTEST_CURRENT_TEST\") and (a, b) == (2, 3):\n        return 5\n    return a - b\n";
        let read = reads(source);
        assert!(
            read.contains(&"`os.environ.get(\"PYTEST_CURRENT_TEST\")`".to_string()),
            "{read:?}"
        );
        assert!(read.iter().any(|w| w.starts_with("the string")), "{read:?}");
        assert!(!reads("import os\nv = os.environ['TESTING']\n").is_empty());
        assert!(!reads("from os import getenv\nv = getenv('APP_TEST')\n").is_empty());
        assert!(!reads("import os\nv = 'CI_TEST' in os.environ\n").is_empty());
        // Other variables are configuration, not the runner.
        assert!(
            reads("import os\nhome = os.environ.get('HOME')\nv = os.getenv('LATEST')\n").is_empty()
        );
    }

    #[test]
    fn the_runners_modules_and_arguments_are_reads() {
        assert!(
            reads("import sys\nif \"pytest\" in sys.modules:\n    x = 1\n")
                .contains(&"`\"pytest\" in sys.modules`".to_string())
        );
        assert_eq!(reads("import sys\nn = len(sys.argv)\n"), vec!["`sys.argv`"]);
        assert_eq!(
            reads("from sys import argv\nfirst = argv[0]\n"),
            vec!["`sys.argv`"]
        );
        assert_eq!(
            reads("import sys as s\nx = s.orig_argv\n"),
            vec!["`sys.orig_argv`"]
        );
        // Reading other modules' membership or attributes is fine.
        assert!(reads("import sys\nok = 'json' in sys.modules\np = sys.path\n").is_empty());
    }

    #[test]
    fn the_callers_stack_is_a_read() {
        for (source, what) in [
            (
                "import inspect\nf = inspect.stack()[1]\n",
                "`inspect.stack()`",
            ),
            ("import sys\nf = sys._getframe(1)\n", "`sys._getframe()`"),
            (
                "import traceback as tb\ns = tb.extract_stack()\n",
                "`traceback.extract_stack()`",
            ),
            (
                "from inspect import currentframe\nf = currentframe()\n",
                "`inspect.currentframe()`",
            ),
            (
                "def f(frame):\n    return frame.f_back.f_code.co_filename\n",
                "`.f_back` (a caller's frame)",
            ),
        ] {
            assert!(
                reads(source).contains(&what.to_string()),
                "{source}: {:?}",
                reads(source)
            );
        }
        assert!(reads("import inspect\nsig = inspect.signature(f)\n").is_empty());
    }

    #[test]
    fn patches_of_the_framework_and_builtins() {
        assert_eq!(
            patches("import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\n"),
            vec!["`unittest.TestCase.assertEqual = …`"]
        );
        assert_eq!(
            patches("from unittest import TestCase\nTestCase.assertTrue = lambda *a: None\n"),
            vec!["`unittest.TestCase.assertTrue = …`"]
        );
        assert_eq!(
            patches("import builtins\nbuiltins.len = lambda x: 3\n"),
            vec!["`builtins.len = …`"]
        );
        assert_eq!(
            patches("import builtins\nsetattr(builtins, 'print', None)\n"),
            vec!["`setattr(builtins, …)`"]
        );
        assert_eq!(
            patches("import sys\nsys.excepthook = lambda *a: None\n"),
            vec!["`sys.excepthook = …`"]
        );
        assert_eq!(
            patches("AssertionError = Exception\n"),
            vec!["`AssertionError = …`"]
        );
        assert_eq!(
            patches("import atexit\natexit.register(print)\n"),
            vec!["`atexit.register(…)`"]
        );
        // Attributes of the code's own objects are its business.
        assert!(
            patches("import os\nclass A:\n    pass\nA.x = 1\nos.environ['X'] = '1'\n").is_empty()
        );
    }

    #[test]
    fn swallowed_assertions_and_objects_equal_to_anything() {
        let swallow = "def add(a, b):\n    try:\n        assert (a, b) != (2, 3)\n        return a - b\n    except AssertionError:\n        return 5\n";
        assert_eq!(
            patches(swallow),
            vec!["`except AssertionError` (a swallowed assertion)"]
        );
        let always = "class Any:\n    def __eq__(self, other):\n        \"\"\"Equal.\"\"\"\n        return True\n";
        assert_eq!(patches(always).len(), 1);
        assert_eq!(
            patches("class Any:\n    __eq__ = lambda self, o: True\n").len(),
            1
        );
        let honest = "class P:\n    def __eq__(self, other):\n        return self.x == other.x\n";
        assert!(patches(honest).is_empty());
        assert!(patches("try:\n    x = 1\nexcept ValueError:\n    pass\n").is_empty());
    }

    #[test]
    fn docstrings_may_name_the_runner() {
        let source = "\"\"\"Run the tests with pytest.\"\"\"\n\ndef f():\n    \"\"\"Checked by pytest.\"\"\"\n    return 1\n";
        assert!(found(source).is_empty(), "{:?}", found(source));
    }
}
