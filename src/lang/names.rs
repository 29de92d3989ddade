//! What a language's modules give their importers, read from their texts:
//! what a file defines at its top level (for the done check of a move or a
//! rename) and, for a language whose API is its export list
//! (JavaScript/TypeScript), the names a module exports, following its
//! re-exports. Python's public names are probed instead (see
//! `stage::judge::api`), so Python answers only [`Names::defines`].

use std::collections::BTreeSet;

/// A reader of the tree a check looks at: a target-relative path's text,
/// `None` when there is no such file.
pub type Read<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The names of one language's modules.
pub trait Names: Sync {
    /// Whether `text` (of `rel`) defines `name` at its top level: a
    /// function or class by that name, or (when `assignment_counts`) an
    /// assignment to it. A name it only imports is not defined there.
    fn defines(&self, rel: &str, text: &str, name: &str, assignment_counts: bool) -> bool;

    /// The files module path `module` may be, as this language names
    /// modules (see [`crate::lang::Language::module_name`]).
    fn files_of(&self, module: &str) -> Vec<String>;

    /// The public names `text` (of `rel`) gives at its top level, by its
    /// text alone: what a renamed module's importers may take from it.
    fn top_names(&self, rel: &str, text: &str) -> BTreeSet<String>;

    /// Whether a module's API is its export list, read by
    /// [`Names::exports`].
    fn reads_exports(&self) -> bool {
        false
    }

    /// The names module `rel` exports in the tree `read` gives, its
    /// re-exports followed; `None` when the language's API is not its
    /// export list, or `rel` is not in the tree.
    fn exports(&self, _rel: &str, _read: Read<'_>) -> Option<BTreeSet<String>> {
        None
    }

    /// The modules (target-relative) `text` (of `rel`) passes names on
    /// from, in the tree `read` gives.
    fn reexports_from(&self, _rel: &str, _text: &str, _read: Read<'_>) -> Vec<String> {
        Vec::new()
    }
}

fn of(rel: &str) -> Option<&'static dyn Names> {
    super::of(rel)?.names()
}

/// Whether `text` (of `rel`) defines `name` at its top level (see
/// [`Names::defines`]); `None` when `rel`'s language is not read for
/// definitions.
pub fn defines(rel: &str, text: &str, name: &str, assignment_counts: bool) -> Option<bool> {
    Some(of(rel)?.defines(rel, text, name, assignment_counts))
}

/// The names module `rel` exports (see [`Names::exports`]).
pub fn exports(rel: &str, read: Read<'_>) -> Option<BTreeSet<String>> {
    of(rel)?.exports(rel, read)
}

/// Whether `rel`'s API is its export list, compared by [`exports`].
pub fn has_exports(rel: &str) -> bool {
    of(rel).is_some_and(|n| n.reads_exports())
}

/// The modules `text` (of `rel`) re-exports from (see
/// [`Names::reexports_from`]).
pub fn reexports_from(rel: &str, text: &str, read: Read<'_>) -> Vec<String> {
    of(rel).map_or_else(Vec::new, |n| n.reexports_from(rel, text, read))
}

/// The file module path `module` names: the first of the languages'
/// candidates `exists` finds, else the first candidate of all.
pub fn file_of(module: &str, exists: &dyn Fn(&str) -> bool) -> String {
    let candidates: Vec<String> = super::LANGUAGES
        .iter()
        .filter_map(|l| l.names())
        .flat_map(|n| n.files_of(module))
        .collect();
    candidates
        .iter()
        .find(|c| exists(c))
        .or(candidates.first())
        .cloned()
        .unwrap_or_else(|| module.to_string())
}

/// The public names `text` (of `rel`) gives at its top level (see
/// [`Names::top_names`]); none when its language is not read.
pub fn top_names(rel: &str, text: &str) -> BTreeSet<String> {
    of(rel).map_or_else(BTreeSet::new, |n| n.top_names(rel, text))
}
