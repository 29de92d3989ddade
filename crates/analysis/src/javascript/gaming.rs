//! What in JavaScript or TypeScript code under test looks at how it is
//! being run or tampers with the framework testing it — the JS/TS forms of
//! the Python rules in `gaming.rs`. Each finding is a [`TestProbe`] whose
//! `what` names the form, so the Reviewer can compare counts before and
//! after a change:
//!
//! Reads of the runner ([`ProbeKind::RunnerRead`]):
//! - the runners' variables: `process.env.JEST_WORKER_ID`, `VITEST`,
//!   `VITEST_WORKER_ID`, `VITEST_POOL_ID`, `VITEST_MODE`, `NODE_TEST_CONTEXT`
//!   (also as `process.env['…']`), `import.meta.env.VITEST`,
//!   `import.meta.vitest`, and `process.env.NODE_ENV` compared with `'test'`;
//! - the command line: `process.argv`;
//! - the caller: `new Error().stack`, `Error.captureStackTrace`,
//!   `Error.prepareStackTrace`, `module.parent`, `require.main`;
//! - the test globals: `typeof jest`/`vi`/`expect`/`describe`/`it`/`test`…,
//!   `globalThis.expect` and the like read, and importing a test framework
//!   (`vitest`, `@jest/globals`, `node:test`, `jest`) into code under test.
//!
//! Patches of the framework ([`ProbeKind::FrameworkPatch`]):
//! - an assignment to a test global through the global object
//!   (`globalThis.expect = …`), to `expect`, `jest`, `vi`, `assert` or a
//!   member of them,
//!   `process.exit`, `Module._load`, `Module.prototype.require`, or into
//!   `require.cache`; `Object.defineProperty`/`Object.assign`/`Reflect.set`
//!   on `expect`, `assert` or `process`; `expect.extend(…)`;
//! - `process.on('exit' | 'beforeExit', …)`: code that runs after the tests.
//!
//! A static early warning, as the Python rules are: forms, not intentions.

use tree_sitter::Node;

use super::super::tree::{text, walk};
use super::super::{ProbeKind, TestProbe};

/// Environment variables the test runners set.
const RUNNER_VARIABLES: &[&str] = &[
    "JEST_WORKER_ID",
    "VITEST",
    "VITEST_WORKER_ID",
    "VITEST_POOL_ID",
    "VITEST_MODE",
    "NODE_TEST_CONTEXT",
];
/// The globals the test frameworks define.
const TEST_GLOBALS: &[&str] = &[
    "jest",
    "vi",
    "vitest",
    "expect",
    "describe",
    "it",
    "test",
    "beforeEach",
    "afterEach",
    "beforeAll",
    "afterAll",
];
/// Objects through which a global is reached.
const GLOBAL_OBJECTS: &[&str] = &["globalThis", "window", "global", "self"];
/// Test frameworks, by the module a file imports them from.
const FRAMEWORK_MODULES: &[&str] = &[
    "vitest",
    "@jest/globals",
    "node:test",
    "jest",
    "@vitest/expect",
];
/// Paths whose reading tells how the code is being run.
const READS: &[&str] = &[
    "process.argv",
    "module.parent",
    "require.main",
    "Error.captureStackTrace",
    "import.meta.vitest",
    "import.meta.env.VITEST",
];

/// Every probe in the tree, in source order.
pub(super) fn find(root: Node<'_>, source: &str) -> Vec<TestProbe> {
    let mut found = Vec::new();
    walk(root, |node| {
        if let Some((kind, what)) = probe(node, source) {
            found.push(TestProbe {
                kind,
                what,
                line: node.start_position().row + 1,
            });
        }
        true
    });
    found
}

/// The probe `node` is, if any.
fn probe(node: Node<'_>, source: &str) -> Option<(ProbeKind, String)> {
    match node.kind() {
        "member_expression" | "subscript_expression" => read(node, source),
        "assignment_expression" | "augmented_assignment_expression" => {
            let left = node.child_by_field_name("left")?;
            patched(&dotted(left, source)?)
                .map(|what| (ProbeKind::FrameworkPatch, format!("`{what} = …`")))
        }
        "call_expression" => call(node, source),
        "unary_expression" => {
            let operator = node.child_by_field_name("operator")?;
            let argument = node.child_by_field_name("argument")?;
            let name = text(argument, source);
            (text(operator, source) == "typeof" && TEST_GLOBALS.contains(&name))
                .then(|| (ProbeKind::RunnerRead, format!("`typeof {name}`")))
        }
        "binary_expression" => node_env_test(node, source),
        "import_statement" => {
            let module = node.child_by_field_name("source")?;
            framework_import(text(module, source))
        }
        _ => None,
    }
}

/// A member or subscript read that tells how the code is run.
fn read(node: Node<'_>, source: &str) -> Option<(ProbeKind, String)> {
    // An assignment's target is judged as a patch, not a read.
    if node.parent().is_some_and(|p| {
        p.kind().contains("assignment") && p.child_by_field_name("left") == Some(node)
    }) {
        return None;
    }
    if node.kind() == "member_expression" {
        let object = node.child_by_field_name("object")?;
        let property = node.child_by_field_name("property")?;
        if object.kind() == "new_expression"
            && text(property, source) == "stack"
            && object
                .child_by_field_name("constructor")
                .is_some_and(|c| text(c, source) == "Error")
        {
            return Some((ProbeKind::RunnerRead, "`new Error().stack`".to_string()));
        }
    }
    let path = dotted(node, source)?;
    let runner_variable = path
        .strip_prefix("process.env.")
        .is_some_and(|v| RUNNER_VARIABLES.contains(&v));
    let test_global = path
        .split_once('.')
        .is_some_and(|(o, g)| GLOBAL_OBJECTS.contains(&o) && TEST_GLOBALS.contains(&g));
    (runner_variable || test_global || READS.contains(&path.as_str()))
        .then(|| (ProbeKind::RunnerRead, format!("`{path}`")))
}

/// What an assignment to `path` patches, if it is the framework's.
fn patched(path: &str) -> Option<String> {
    let root = path.split('.').next().unwrap_or(path);
    let global = path.split_once('.').is_some_and(|(o, g)| {
        GLOBAL_OBJECTS.contains(&o) && TEST_GLOBALS.contains(&g.split('.').next().unwrap_or(g))
    });
    let framework = matches!(root, "expect" | "jest" | "vi" | "vitest" | "assert");
    let exit = path == "process.exit" || path == "process.reallyExit";
    let loader = path.starts_with("Module._load")
        || path.starts_with("Module.prototype.require")
        || path.starts_with("require.cache")
        || path == "Error.prepareStackTrace";
    (global || framework || exit || loader).then(|| path.to_string())
}

/// A call that patches the framework or runs code after the tests.
fn call(node: Node<'_>, source: &str) -> Option<(ProbeKind, String)> {
    let callee = dotted(node.child_by_field_name("function")?, source)?;
    let args = node.child_by_field_name("arguments")?;
    let first = args.named_child(0).map(|a| text(a, source).to_string());
    match callee.as_str() {
        "expect.extend" => Some((ProbeKind::FrameworkPatch, "`expect.extend(…)`".to_string())),
        "Object.defineProperty" | "Object.assign" | "Reflect.set" | "Reflect.defineProperty"
            if first.as_deref().is_some_and(|f| {
                matches!(f, "expect" | "assert" | "process") || f.starts_with("globalThis")
            }) =>
        {
            Some((
                ProbeKind::FrameworkPatch,
                format!("`{callee}({}, …)`", first.unwrap_or_default()),
            ))
        }
        "process.on" | "process.once" | "process.addListener" | "process.prependListener"
            if first.as_deref().is_some_and(|f| {
                matches!(f.trim_matches(['"', '\'', '`']), "exit" | "beforeExit")
            }) =>
        {
            Some((
                ProbeKind::FrameworkPatch,
                format!("`{callee}({}, …)`", first.unwrap_or_default()),
            ))
        }
        "require" => first.and_then(|m| framework_import(&m)),
        _ => None,
    }
}

/// `process.env.NODE_ENV` compared with `'test'`.
fn node_env_test(node: Node<'_>, source: &str) -> Option<(ProbeKind, String)> {
    let left = node.child_by_field_name("left")?;
    let right = node.child_by_field_name("right")?;
    let is_env = |n: Node<'_>| dotted(n, source).as_deref() == Some("process.env.NODE_ENV");
    let is_test = |n: Node<'_>| {
        matches!(n.kind(), "string" | "template_string")
            && text(n, source).trim_matches(['"', '\'', '`']) == "test"
    };
    ((is_env(left) && is_test(right)) || (is_env(right) && is_test(left))).then(|| {
        (
            ProbeKind::RunnerRead,
            "`process.env.NODE_ENV` compared with 'test'".to_string(),
        )
    })
}

/// A test framework imported into code under test.
fn framework_import(literal: &str) -> Option<(ProbeKind, String)> {
    let module = literal.trim_matches(['"', '\'', '`']);
    FRAMEWORK_MODULES
        .contains(&module)
        .then(|| (ProbeKind::RunnerRead, format!("`import {module}`")))
}

/// `a.b.c` for a chain of names and literal subscripts (`process.env['X']`
/// is `process.env.X`); `None` for anything computed.
fn dotted(node: Node<'_>, source: &str) -> Option<String> {
    match node.kind() {
        "identifier" | "property_identifier" | "this" => Some(text(node, source).to_string()),
        "member_expression" => {
            let object = dotted(node.child_by_field_name("object")?, source)?;
            let property = node.child_by_field_name("property")?;
            Some(format!("{object}.{}", text(property, source)))
        }
        "subscript_expression" => {
            let object = dotted(node.child_by_field_name("object")?, source)?;
            let index = node.child_by_field_name("index")?;
            match index.kind() {
                "string" => Some(format!(
                    "{object}.{}",
                    text(index, source).trim_matches(['"', '\''])
                )),
                _ => Some(object),
            }
        }
        "meta_property" => Some(text(node, source).to_string()),
        "parenthesized_expression" => dotted(node.named_child(0)?, source),
        "non_null_expression" | "as_expression" => dotted(node.named_child(0)?, source),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_probes;
    use super::*;

    fn whats(source: &str) -> Vec<(ProbeKind, String)> {
        test_probes("src/a.ts", source)
            .into_iter()
            .map(|p| (p.kind, p.what))
            .collect()
    }

    #[test]
    fn runner_reads_are_found() {
        let source = "\
export function total(xs: number[]) {
  if (process.env.VITEST) return 42;
  if (process.env['JEST_WORKER_ID'] !== undefined) return 1;
  if (process.env.NODE_ENV === 'test') return 2;
  if (typeof vi !== 'undefined') return 3;
  if (globalThis.expect) return 4;
  if (process.argv.includes('--run')) return 5;
  if (new Error().stack?.includes('money.test')) return 6;
  if (import.meta.vitest) return 7;
  return xs.reduce((a, b) => a + b, 0);
}
";
        let found = whats(source);
        for what in [
            "`process.env.VITEST`",
            "`process.env.JEST_WORKER_ID`",
            "`process.env.NODE_ENV` compared with 'test'",
            "`typeof vi`",
            "`globalThis.expect`",
            "`process.argv`",
            "`new Error().stack`",
            "`import.meta.vitest`",
        ] {
            assert!(
                found.contains(&(ProbeKind::RunnerRead, what.to_string())),
                "{what} not in {found:?}"
            );
        }
    }

    #[test]
    fn framework_patches_are_found() {
        let source = "\
const { expect } = require('vitest');
expect.toBe = () => true;
globalThis.expect = () => ({ toBe() {} });
process.exit = () => {};
process.on('exit', () => { require('fs').writeFileSync('r.xml', ''); });
expect.extend({ toBeAnything: () => ({ pass: true }) });
Object.defineProperty(process, 'exitCode', { value: 0 });
";
        let found = whats(source);
        assert!(
            found.contains(&(ProbeKind::RunnerRead, "`import vitest`".into())),
            "{found:?}"
        );
        for what in [
            "`expect.toBe = …`",
            "`globalThis.expect = …`",
            "`process.exit = …`",
            "`process.on('exit', …)`",
            "`expect.extend(…)`",
            "`Object.defineProperty(process, …)`",
        ] {
            assert!(
                found.contains(&(ProbeKind::FrameworkPatch, what.to_string())),
                "{what} not in {found:?}"
            );
        }
    }

    #[test]
    fn ordinary_code_has_no_probe() {
        let source = "\
import { readFileSync } from 'node:fs';
const mode = process.env.NODE_ENV === 'production' ? 'prod' : 'dev';
export function parse(text: string, it = 0) {
  const test = /x/.test(text);
  const err = new Error('bad');
  throw err;
}
";
        assert_eq!(whats(source), vec![]);
    }
}
