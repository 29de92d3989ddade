//! What JavaScript and TypeScript modules define and export (see
//! [`crate::lang::names`]): a module's API is its export list, read by
//! `swarm_analysis::javascript::exports` and followed through
//! `export * from './…'` to the files the specifiers name (resolved as
//! [`super::reach`] resolves imports; package imports and path aliases are
//! not followed, and what they pass on is not counted).

use std::collections::BTreeSet;

use super::project::SOURCE_EXTENSIONS;
use super::reach::resolve_with;
use crate::lang::names::{Names, Read};

/// How deep `export *` chains are followed.
const MAX_DEPTH: usize = 8;

pub(super) struct Exports;

impl Names for Exports {
    /// A top-level function, class, interface, type, enum or namespace, or
    /// a variable holding a function or class (any variable when
    /// `assignment_counts`), exported or not.
    fn defines(&self, rel: &str, text: &str, name: &str, assignment_counts: bool) -> bool {
        swarm_analysis::javascript::defines(rel, text, name, assignment_counts)
    }

    /// `src/parse` is `src/parse.ts` (or any source extension), or the
    /// folder's `index`.
    fn files_of(&self, module: &str) -> Vec<String> {
        let mut files: Vec<String> = SOURCE_EXTENSIONS
            .iter()
            .map(|ext| format!("{module}.{ext}"))
            .collect();
        files.extend(
            SOURCE_EXTENSIONS
                .iter()
                .map(|ext| format!("{module}/index.{ext}")),
        );
        files
    }

    /// Its own export list (what `export *` passes on is another
    /// module's).
    fn top_names(&self, rel: &str, text: &str) -> BTreeSet<String> {
        swarm_analysis::javascript::exports(rel, text).names
    }

    fn reads_exports(&self) -> bool {
        true
    }

    /// Its own export list, and what each `export * from` module exports
    /// but its `default`.
    fn exports(&self, rel: &str, read: Read<'_>) -> Option<BTreeSet<String>> {
        let text = read(rel)?;
        let mut names = BTreeSet::new();
        let mut seen = vec![rel.to_string()];
        collect(rel, &text, read, &mut names, &mut seen, 0);
        Some(names)
    }

    fn reexports_from(&self, rel: &str, text: &str, read: Read<'_>) -> Vec<String> {
        let exists = |p: &str| read(p).is_some();
        swarm_analysis::javascript::exports(rel, text)
            .from
            .iter()
            .filter_map(|s| resolve_with(rel, s, &exists))
            .collect()
    }
}

fn collect(
    rel: &str,
    text: &str,
    read: Read<'_>,
    names: &mut BTreeSet<String>,
    seen: &mut Vec<String>,
    depth: usize,
) {
    let found = swarm_analysis::javascript::exports(rel, text);
    if depth == 0 {
        names.extend(found.names);
    } else {
        names.extend(found.names.into_iter().filter(|n| n != "default"));
    }
    if depth >= MAX_DEPTH {
        return;
    }
    let exists = |p: &str| read(p).is_some();
    for star in &found.stars {
        let Some(target) = resolve_with(rel, star, &exists) else {
            continue;
        };
        if seen.contains(&target) {
            continue;
        }
        seen.push(target.clone());
        if let Some(inner) = read(&target) {
            collect(&target, &inner, read, names, seen, depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn tree(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn star_re_exports_are_followed_without_their_default_and_cycles_end() {
        let files = tree(&[
            (
                "src/index.ts",
                "export * from './money';\nexport { cart } from './cart.js';\nexport default 1;\n",
            ),
            (
                "src/money.ts",
                "export * from './parse';\nexport * from './index';\nexport function format() {}\n",
            ),
            (
                "src/parse.ts",
                "export function parse() {}\nexport default parse;\n",
            ),
            ("src/cart.ts", "export const cart = 1;\n"),
        ]);
        let read = |p: &str| files.get(p).cloned();
        let names = Exports.exports("src/index.ts", &read).expect("in the tree");
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(names, ["cart", "default", "format", "parse"]);
        assert_eq!(Exports.exports("src/gone.ts", &read), None);
        let from = Exports.reexports_from("src/index.ts", &files["src/index.ts"], &read);
        assert_eq!(from, ["src/money.ts", "src/cart.ts"]);
    }
}
