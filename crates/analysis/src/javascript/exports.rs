//! What a JavaScript or TypeScript module gives its importers, read from
//! its text: the names it exports itself (declarations under `export`,
//! `export { a, b as c }`, `export { a } from '…'`, `export * as ns from
//! '…'`, `default`, CommonJS `exports.x =` and `module.exports = { … }`)
//! and the modules whose names it passes on whole (`export * from '…'`,
//! which never passes on a `default`). Following those is the caller's:
//! it knows where the files are. And what a module defines at its top
//! level, for the done check of a move or a rename.

use std::collections::BTreeSet;

use tree_sitter::Node;

use super::{dialect_or_js, parse};
use crate::tree::{text, walk};

/// What one module exports, as its text says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModuleExports {
    /// The names importers can take from it directly (`default` for a
    /// default export, `module.exports` for a CommonJS value that is not an
    /// object literal).
    pub names: BTreeSet<String>,
    /// The specifiers of `export * from '…'`, in source order.
    pub stars: Vec<String>,
    /// The specifiers of every `export … from '…'`, in source order.
    pub from: Vec<String>,
}

/// What `source` (the dialect from `path`) exports.
pub fn exports(path: &str, source: &str) -> ModuleExports {
    let tree = parse(source, dialect_or_js(path));
    let root = tree.root_node();
    let mut found = ModuleExports::default();
    let mut cursor = root.walk();
    for node in root.named_children(&mut cursor) {
        match node.kind() {
            "export_statement" => export_statement(node, source, &mut found),
            "expression_statement" => common_js(node, source, &mut found.names),
            _ => {}
        }
    }
    found
}

/// Whether `source` defines `name` at its top level, exported or not: a
/// function, class, interface, type, enum or namespace by that name, or a
/// variable whose value is a function or class. With `assignment_counts`,
/// any variable by that name (`export const old = renamed;`) counts too.
/// A name only imported or re-exported (`export { x } from '…'`) is not
/// defined there.
pub fn defines(path: &str, source: &str, name: &str, assignment_counts: bool) -> bool {
    let tree = parse(source, dialect_or_js(path));
    let root = tree.root_node();
    let mut cursor = root.walk();
    let top: Vec<Node<'_>> = root.named_children(&mut cursor).collect();
    top.into_iter().any(|node| {
        let node = match node.kind() {
            "export_statement" => match node.child_by_field_name("declaration") {
                Some(d) => d,
                None => return false,
            },
            _ => node,
        };
        declares(node, source, name, assignment_counts)
    })
}

/// Whether declaration `node` declares `name`.
fn declares(node: Node<'_>, source: &str, name: &str, assignment_counts: bool) -> bool {
    match node.kind() {
        "lexical_declaration" | "variable_declaration" => {
            let mut cursor = node.walk();
            let declarators: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
            declarators.into_iter().any(|d| {
                let named = d
                    .child_by_field_name("name")
                    .is_some_and(|n| text(n, source) == name);
                let value = d.child_by_field_name("value").map(|v| v.kind());
                named
                    && (assignment_counts
                        || matches!(
                            value,
                            Some(
                                "arrow_function"
                                    | "function_expression"
                                    | "function"
                                    | "class"
                                    | "generator_function"
                            )
                        ))
            })
        }
        "ambient_declaration" => {
            let mut cursor = node.walk();
            let inner: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
            inner
                .into_iter()
                .any(|d| declares(d, source, name, assignment_counts))
        }
        _ => declared_name(node, source).is_some_and(|n| n == name),
    }
}

/// The name a function, class, interface, type, enum or namespace
/// declaration declares.
fn declared_name<'s>(node: Node<'_>, source: &'s str) -> Option<&'s str> {
    match node.kind() {
        "function_declaration"
        | "generator_function_declaration"
        | "function_signature"
        | "class_declaration"
        | "abstract_class_declaration"
        | "interface_declaration"
        | "type_alias_declaration"
        | "enum_declaration"
        | "internal_module"
        | "module" => node.child_by_field_name("name").map(|n| text(n, source)),
        _ => None,
    }
}

/// The names one `export …` statement gives.
fn export_statement(node: Node<'_>, source: &str, found: &mut ModuleExports) {
    let from = node
        .child_by_field_name("source")
        .map(|s| text(s, source).trim_matches(['"', '\'', '`']).to_string());
    found.from.extend(from.clone());
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    if children.iter().any(|c| c.kind() == "default") {
        found.names.insert("default".into());
        return;
    }
    if children.iter().any(|c| c.kind() == "=") {
        // TypeScript's `export = value`.
        found.names.insert("module.exports".into());
        return;
    }
    if let Some(declaration) = node.child_by_field_name("declaration") {
        declaration_names(declaration, source, &mut found.names);
        return;
    }
    let mut listed = false;
    for child in &children {
        match child.kind() {
            "export_clause" => {
                listed = true;
                clause_names(*child, source, &mut found.names);
            }
            "namespace_export" => {
                listed = true;
                let mut inner = child.walk();
                let alias = child
                    .named_children(&mut inner)
                    .last()
                    .map(|n| unquote(text(n, source)));
                found.names.extend(alias);
            }
            _ => {}
        }
    }
    if !listed {
        if let Some(from) = from {
            found.stars.push(from);
        }
    }
}

/// The names `export <declaration>` gives.
fn declaration_names(node: Node<'_>, source: &str, names: &mut BTreeSet<String>) {
    match node.kind() {
        "lexical_declaration" | "variable_declaration" => {
            let mut cursor = node.walk();
            for d in node.named_children(&mut cursor) {
                if let Some(target) = d.child_by_field_name("name") {
                    pattern_names(target, source, names);
                }
            }
        }
        "ambient_declaration" => {
            let mut cursor = node.walk();
            for inner in node.named_children(&mut cursor) {
                declaration_names(inner, source, names);
            }
        }
        _ => names.extend(declared_name(node, source).map(str::to_string)),
    }
}

/// The identifiers a binding pattern binds (`{ a, b: c }` binds a and c).
fn pattern_names(node: Node<'_>, source: &str, names: &mut BTreeSet<String>) {
    walk(node, |n| {
        match n.kind() {
            "identifier" | "shorthand_property_identifier_pattern" => {
                names.insert(text(n, source).to_string());
            }
            "pair_pattern" => {
                if let Some(value) = n.child_by_field_name("value") {
                    pattern_names(value, source, names);
                }
                return false;
            }
            _ => {}
        }
        true
    });
}

/// The names an `export { a, b as c }` clause gives.
fn clause_names(clause: Node<'_>, source: &str, names: &mut BTreeSet<String>) {
    let mut cursor = clause.walk();
    for spec in clause.named_children(&mut cursor) {
        if spec.kind() != "export_specifier" {
            continue;
        }
        let shown = spec
            .child_by_field_name("alias")
            .or_else(|| spec.child_by_field_name("name"));
        names.extend(shown.map(|n| unquote(text(n, source))));
    }
}

/// CommonJS: `exports.x = …`, `module.exports.x = …`, and
/// `module.exports = { a, b: … }` (its keys) or `= value`.
fn common_js(node: Node<'_>, source: &str, names: &mut BTreeSet<String>) {
    let Some(assign) = node.named_child(0) else {
        return;
    };
    if assign.kind() != "assignment_expression" {
        return;
    }
    let (Some(left), Some(right)) = (
        assign.child_by_field_name("left"),
        assign.child_by_field_name("right"),
    ) else {
        return;
    };
    let target = text(left, source).replace(char::is_whitespace, "");
    if target == "module.exports" {
        if right.kind() != "object" {
            names.insert("module.exports".into());
            return;
        }
        let mut cursor = right.walk();
        for entry in right.named_children(&mut cursor) {
            let key = match entry.kind() {
                "shorthand_property_identifier" => Some(entry),
                "pair" | "method_definition" => entry
                    .child_by_field_name("key")
                    .or_else(|| entry.child_by_field_name("name")),
                _ => None,
            };
            names.extend(key.map(|k| unquote(text(k, source))));
        }
        return;
    }
    for prefix in ["module.exports.", "exports."] {
        if let Some(name) = target.strip_prefix(prefix) {
            if !name.is_empty() && !name.contains('.') {
                names.insert(name.to_string());
            }
            return;
        }
    }
}

fn unquote(s: &str) -> String {
    s.trim_matches(['"', '\'']).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(path: &str, source: &str) -> Vec<String> {
        exports(path, source).names.into_iter().collect()
    }

    #[test]
    fn every_export_form_of_an_es_module_is_read() {
        let source = r#"
import { helper } from './helper';
export interface Money { cents: number }
export type Currency = string;
export enum Kind { A }
export function parseMoney(t: string): Money { return { cents: 0 }; }
export async function load() {}
export class Ledger {}
export const a = 1, { b, c: d } = obj, [e] = arr;
export let mutable = 2;
export { helper, helper as aliased };
export { x as y, default as other } from './other';
export * from './money';
export * as ns from './ns';
export type { Shape } from './shape';
export declare function declared(): void;
export default function main() {}
function notExported() {}
const hidden = 3;
"#;
        assert_eq!(
            names("src/a.ts", source),
            [
                "Currency",
                "Kind",
                "Ledger",
                "Money",
                "Shape",
                "a",
                "aliased",
                "b",
                "d",
                "declared",
                "default",
                "e",
                "helper",
                "load",
                "mutable",
                "ns",
                "other",
                "parseMoney",
                "y",
            ]
        );
        let found = exports("src/a.ts", source);
        assert_eq!(found.stars, ["./money"]);
        assert_eq!(found.from, ["./other", "./money", "./ns", "./shape"]);
    }

    #[test]
    fn common_js_exports_are_read() {
        let source = "exports.one = 1;\nmodule.exports.two = () => 2;\nmodule.exports = { three, four: 4, five() {} };\n";
        assert_eq!(
            names("lib/a.js", source),
            ["five", "four", "one", "three", "two"]
        );
        assert_eq!(
            names("lib/b.cjs", "module.exports = class Thing {};\n"),
            ["module.exports"]
        );
        assert_eq!(
            names("lib/c.js", "exports = 1;\nfoo.exports.x = 2;\n"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn typescript_export_equals_and_tsx_default_are_read() {
        assert_eq!(
            names("a.ts", "const x = 1;\nexport = x;\n"),
            ["module.exports"]
        );
        assert_eq!(
            names("a.tsx", "export default () => <div />;\n"),
            ["default"]
        );
    }

    #[test]
    fn a_definition_is_a_declaration_not_an_import_or_re_export() {
        let source = r#"
import { imported } from './x';
export { reexported } from './y';
export function fn1() {}
const arrow = () => 1;
export const alias = fn1;
class Klass {}
export interface Shape {}
"#;
        for name in ["fn1", "arrow", "Klass", "Shape"] {
            assert!(defines("a.ts", source, name, false), "{name}");
        }
        assert!(!defines("a.ts", source, "alias", false));
        assert!(defines("a.ts", source, "alias", true));
        for name in ["imported", "reexported", "missing"] {
            assert!(!defines("a.ts", source, name, true), "{name}");
        }
    }
}
