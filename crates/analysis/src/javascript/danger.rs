//! Finding what in JavaScript or TypeScript can run arbitrary code, reach
//! the network or write outside the project — what a refactoring has no
//! business adding. Each finding is a [`DangerousCall`] whose `name` says
//! what it is, so the Reviewer can compare counts before and after:
//!
//! - `eval`: `eval(…)`, `globalThis.eval(…)`, `window['eval'](…)`;
//! - `Function`: `new Function(…)`, `Function(…)`;
//! - `setTimeout(string)` / `setInterval(string)`: code in a string;
//! - `import child_process`, `import vm`, … ([`DANGEROUS_MODULES`]): a
//!   `require`, `import`, `import()` or `export … from` of the module, with
//!   or without the `node:` prefix and for any sub-path (`fs/promises` is
//!   `fs`);
//! - `import http`, … : a network module ([`is_network_module`]);
//! - `fetch`, `new WebSocket`, `new XMLHttpRequest`, `new EventSource`: the
//!   network through globals;
//! - `process.binding`, `process._linkedBinding`, `process.dlopen`: node's
//!   internals and native code;
//! - `require(<computed>)` / `import(<computed>)`: a module whose name is
//!   computed (a template literal without substitutions is a literal);
//! - `write outside the project`: an `fs` write (`writeFile`, `appendFile`,
//!   `rm`, `mkdir`, `createWriteStream`, … sync, callback or promise form)
//!   whose path is an absolute, home (`~`) or parent (`..`) literal, or is
//!   built from `os.homedir()` or `process.env.HOME`.
//!
//! Like the Python rules, this is a static early warning, not a guard:
//! JavaScript reaches anything through enough indirection. The sandbox the
//! tests run in is what confines the code.

use tree_sitter::Node;

use super::super::tree::{text, walk};
use super::super::DangerousCall;

/// Modules whose import alone is dangerous: they run processes or code.
pub const DANGEROUS_MODULES: &[&str] = &["child_process", "vm", "cluster", "worker_threads"];
/// Modules that reach the network.
const NETWORK_MODULES: &[&str] = &[
    "http",
    "https",
    "http2",
    "net",
    "tls",
    "dgram",
    "dns",
    "undici",
    "node-fetch",
    "axios",
    "ws",
    "got",
    "request",
];
/// `fs` functions that write, delete or create.
const FS_WRITES: &[&str] = &[
    "writeFile",
    "appendFile",
    "createWriteStream",
    "mkdir",
    "mkdtemp",
    "rm",
    "rmdir",
    "unlink",
    "rename",
    "copyFile",
    "cp",
    "symlink",
    "link",
    "chmod",
    "chown",
    "truncate",
    "utimes",
];
/// Objects through which a global is reached.
const GLOBAL_OBJECTS: &[&str] = &["globalThis", "window", "global", "self"];

/// Whether a module (its name without `node:` and sub-path) reaches the network.
pub fn is_network_module(module: &str) -> bool {
    NETWORK_MODULES.contains(&module)
}

/// Every finding in the tree, in source order.
pub(super) fn find(root: Node<'_>, source: &str) -> Vec<DangerousCall> {
    let mut found = Vec::new();
    walk(root, |node| {
        let name = match node.kind() {
            "call_expression" => call(node, source),
            "new_expression" => construction(node, source),
            "import_statement" | "export_statement" => node
                .child_by_field_name("source")
                .and_then(|s| literal(s, source))
                .and_then(|m| module_finding(&m)),
            "member_expression" => member(node, source),
            _ => None,
        };
        if let Some(name) = name {
            found.push(DangerousCall {
                name,
                line: node.start_position().row + 1,
            });
        }
        true
    });
    found
}

/// The text of a string literal, or of a template literal without
/// substitutions; `None` for anything computed.
fn literal(node: Node<'_>, source: &str) -> Option<String> {
    match node.kind() {
        "string" => Some(text(node, source).trim_matches(['"', '\'']).to_string()),
        "template_string" => {
            let mut cursor = node.walk();
            let computed = node
                .named_children(&mut cursor)
                .any(|c| c.kind() == "template_substitution");
            (!computed).then(|| text(node, source).trim_matches('`').to_string())
        }
        _ => None,
    }
}

/// The module a `require(…)`/`import(…)` call loads: `Some(Some(name))`
/// for a literal, `Some(None)` for a computed name, `None` when `node` is
/// no such call.
pub(super) fn required_module(node: Node<'_>, source: &str) -> Option<Option<String>> {
    if node.kind() != "call_expression" {
        return None;
    }
    let function = node.child_by_field_name("function")?;
    let is_loader = function.kind() == "import"
        || (function.kind() == "identifier" && text(function, source) == "require");
    if !is_loader {
        return None;
    }
    let first = node
        .child_by_field_name("arguments")
        .and_then(|args| args.named_child(0));
    Some(first.and_then(|arg| literal(arg, source)))
}

/// The module's bare name: no `node:` prefix, no sub-path (`@scope/name`
/// keeps its scope).
fn bare_module(module: &str) -> &str {
    let module = module.strip_prefix("node:").unwrap_or(module);
    let mut parts = module.splitn(3, '/');
    let first = parts.next().unwrap_or_default();
    if first.starts_with('@') {
        let len = first.len() + parts.next().map_or(0, |p| p.len() + 1);
        &module[..len]
    } else {
        first
    }
}

/// The finding for loading `module`, if it is dangerous or a network module.
fn module_finding(module: &str) -> Option<String> {
    let bare = bare_module(module);
    (DANGEROUS_MODULES.contains(&bare) || is_network_module(bare)).then(|| format!("import {bare}"))
}

/// The name a callee reaches as a global: `eval` for `eval`,
/// `globalThis.eval` or `window['eval']`.
fn global_name(callee: Node<'_>, source: &str) -> Option<String> {
    match callee.kind() {
        "identifier" => Some(text(callee, source).to_string()),
        "member_expression" | "subscript_expression" => {
            let object = callee.child_by_field_name("object")?;
            if !GLOBAL_OBJECTS.contains(&text(object, source)) {
                return None;
            }
            let property = callee
                .child_by_field_name("property")
                .or_else(|| callee.child_by_field_name("index"))?;
            match property.kind() {
                "property_identifier" => Some(text(property, source).to_string()),
                _ => literal(property, source),
            }
        }
        "parenthesized_expression" => callee
            .named_child(0)
            .and_then(|inner| global_name(inner, source)),
        _ => None,
    }
}

/// A dangerous call expression.
fn call(node: Node<'_>, source: &str) -> Option<String> {
    if let Some(module) = required_module(node, source) {
        let function = node.child_by_field_name("function")?;
        let loader = if function.kind() == "import" {
            "import"
        } else {
            "require"
        };
        return match module {
            None => Some(format!("{loader}(<computed>)")),
            Some(module) => module_finding(&module),
        };
    }
    let callee = node.child_by_field_name("function")?;
    let first_arg = node
        .child_by_field_name("arguments")
        .and_then(|args| args.named_child(0));
    match global_name(callee, source).as_deref() {
        Some("eval") => return Some("eval".to_string()),
        Some("Function") => return Some("Function".to_string()),
        Some("fetch") => return Some("fetch".to_string()),
        Some(timer @ ("setTimeout" | "setInterval"))
            if first_arg.is_some_and(|a| matches!(a.kind(), "string" | "template_string")) =>
        {
            return Some(format!("{timer}(string)"));
        }
        _ => {}
    }
    let function = match callee.kind() {
        "member_expression" => callee.child_by_field_name("property")?,
        "identifier" => callee,
        _ => return None,
    };
    let name = text(function, source);
    let base = name
        .strip_suffix("Sync")
        .unwrap_or(name)
        .trim_end_matches("Async");
    if FS_WRITES.contains(&base) && first_arg.is_some_and(|a| leaves_the_project(a, source)) {
        return Some("write outside the project".to_string());
    }
    None
}

/// A dangerous `new` expression.
fn construction(node: Node<'_>, source: &str) -> Option<String> {
    let constructor = node.child_by_field_name("constructor")?;
    match global_name(constructor, source).as_deref() {
        Some("Function") => Some("Function".to_string()),
        Some(name @ ("WebSocket" | "XMLHttpRequest" | "EventSource")) => {
            Some(format!("new {name}"))
        }
        _ => None,
    }
}

/// `process.binding` and its kin, called or not.
fn member(node: Node<'_>, source: &str) -> Option<String> {
    let object = node.child_by_field_name("object")?;
    let property = node.child_by_field_name("property")?;
    let property = text(property, source);
    (text(object, source) == "process"
        && matches!(property, "binding" | "_linkedBinding" | "dlopen"))
    .then(|| format!("process.{property}"))
}

/// Whether a path argument points outside the project: an absolute, `~` or
/// `..` literal, a concatenation or `path.join`/`path.resolve` that starts
/// with one, or an expression built from `os.homedir()` / `process.env.HOME`.
fn leaves_the_project(arg: Node<'_>, source: &str) -> bool {
    if mentions_home(arg, source) {
        return true;
    }
    let starts_outside = |node: Option<Node<'_>>| {
        node.filter(|n| matches!(n.kind(), "string" | "template_string"))
            .is_some_and(|n| {
                let raw = text(n, source).trim_start_matches(['"', '\'', '`']);
                raw.starts_with('/') || raw.starts_with('~') || raw.starts_with("..")
            })
    };
    match arg.kind() {
        "string" | "template_string" => starts_outside(Some(arg)),
        "binary_expression" => starts_outside(arg.child_by_field_name("left")),
        "call_expression" if is_path_join(arg, source) => starts_outside(
            arg.child_by_field_name("arguments")
                .and_then(|args| args.named_child(0)),
        ),
        _ => false,
    }
}

/// Whether an expression is `path.join(…)` / `path.resolve(…)` (or `join`/`resolve`).
fn is_path_join(node: Node<'_>, source: &str) -> bool {
    node.kind() == "call_expression"
        && node.child_by_field_name("function").is_some_and(|f| {
            let t = text(f, source);
            t.ends_with("join") || t.ends_with("resolve")
        })
}

/// Whether an expression uses the home folder.
fn mentions_home(node: Node<'_>, source: &str) -> bool {
    let t = text(node, source);
    t.contains("homedir()")
        || t.contains("process.env.HOME")
        || t.contains("process.env.USERPROFILE")
}
