//! Where a module's definitions are: every function and class with the
//! lines it spans (decorators included), its signature lines and the
//! definition it sits in, and the block of imports at the top. The Fixer
//! uses this to show a large file in pieces; nothing here decides what to
//! show.

use tree_sitter::Node;

use super::tree::{parse, text, walk};

/// A function or a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefinitionKind {
    Function,
    Class,
}

/// One function or class of a module. Lines are 1-based and inclusive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Definition {
    /// `name`, `Class.method` or `outer.inner`.
    pub name: String,
    pub kind: DefinitionKind,
    /// First line, decorators included.
    pub start: usize,
    /// The line of `def` or `class`.
    pub line: usize,
    /// The last line of the signature (before the body starts).
    pub header_end: usize,
    /// The last line of the body.
    pub end: usize,
    /// Index (in [`Outline::definitions`]) of the definition this one is
    /// nested in, if any.
    pub parent: Option<usize>,
}

impl Definition {
    /// The last part of the name (`method` of `Class.method`).
    pub fn short_name(&self) -> &str {
        self.name.rsplit('.').next().unwrap_or(&self.name)
    }

    /// Whether `line` lies within this definition (decorators included).
    pub fn contains(&self, line: usize) -> bool {
        (self.start..=self.end).contains(&line)
    }
}

/// The definitions of a module.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outline {
    /// Number of lines of the source (a last line without `\n` counts).
    pub lines: usize,
    /// Lines 1 to the end of the last top-level import that comes before
    /// the first top-level definition; `None` without such imports.
    pub imports: Option<(usize, usize)>,
    /// Every function and class, in source order (parents before children).
    pub definitions: Vec<Definition>,
}

impl Outline {
    /// The top-level definitions (those not nested in another).
    pub fn top_level(&self) -> impl Iterator<Item = &Definition> {
        self.definitions.iter().filter(|d| d.parent.is_none())
    }

    /// The chain of definitions holding `line`, outermost first.
    pub fn enclosing(&self, line: usize) -> Vec<usize> {
        let mut chain = Vec::new();
        let mut scope: Option<usize> = None;
        loop {
            let inner = self
                .definitions
                .iter()
                .enumerate()
                .find(|(_, d)| d.parent == scope && d.contains(line));
            match inner {
                Some((index, _)) => {
                    chain.push(index);
                    scope = Some(index);
                }
                None => return chain,
            }
        }
    }
}

/// The outline of `source`. A source that does not parse still gives the
/// definitions tree-sitter could recognise.
pub fn outline(source: &str) -> Outline {
    let tree = parse(source);
    let root = tree.root_node();
    let mut definitions: Vec<Definition> = Vec::new();
    // (node, index of its definition) for the definitions still to descend into.
    let mut scopes: Vec<(Node<'_>, Option<usize>)> = vec![(root, None)];
    while let Some((scope, parent)) = scopes.pop() {
        let prefix = parent.map(|p| definitions[p].name.clone());
        let mut nested = Vec::new();
        walk(scope, |node| {
            if node == scope {
                return true;
            }
            let kind = match node.kind() {
                "function_definition" => DefinitionKind::Function,
                "class_definition" => DefinitionKind::Class,
                _ => return true,
            };
            let name = node
                .child_by_field_name("name")
                .map(|n| text(n, source))
                .unwrap_or("<unnamed>");
            let name = match &prefix {
                Some(p) => format!("{p}.{name}"),
                None => name.to_string(),
            };
            let outer = node
                .parent()
                .filter(|p| p.kind() == "decorated_definition")
                .unwrap_or(node);
            let line = node.start_position().row + 1;
            let header_end = node
                .child_by_field_name("body")
                .map(|body| body.start_position().row)
                .filter(|row| *row >= line)
                .unwrap_or(line);
            definitions.push(Definition {
                name,
                kind,
                start: outer.start_position().row + 1,
                line,
                header_end,
                end: last_line(node),
                parent,
            });
            nested.push((node, Some(definitions.len() - 1)));
            false
        });
        scopes.extend(nested.into_iter().rev());
    }
    // Parents come before their children already; source order overall.
    let mut order: Vec<usize> = (0..definitions.len()).collect();
    order.sort_by_key(|&i| (definitions[i].start, definitions[i].line));
    let mut new_index = vec![0; definitions.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    let definitions = order
        .iter()
        .map(|&old| {
            let mut d = definitions[old].clone();
            d.parent = d.parent.map(|p| new_index[p]);
            d
        })
        .collect();
    Outline {
        lines: source.split_inclusive('\n').count(),
        imports: imports(root),
        definitions,
    }
}

/// The 1-based last line of a node (a node ending at the start of a line
/// ends on the line before).
fn last_line(node: Node<'_>) -> usize {
    let end = node.end_position();
    if end.column == 0 && end.row > node.start_position().row {
        end.row
    } else {
        end.row + 1
    }
}

/// Lines 1 to the last top-level import before the first definition.
fn imports(root: Node<'_>) -> Option<(usize, usize)> {
    let mut cursor = root.walk();
    let mut last = None;
    for child in root.named_children(&mut cursor) {
        match child.kind() {
            "import_statement" | "import_from_statement" | "future_import_statement" => {
                last = Some(last_line(child));
            }
            "function_definition" | "class_definition" | "decorated_definition" => break,
            _ => {}
        }
    }
    last.map(|end| (1, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = r#""""Doc."""
import os
from math import (
    floor,
)

LIMIT = 3


def first(x):
    return x


@dataclass
class Box:
    size: int

    @property
    def area(
        self,
    ):
        def inner():
            return 1
        return inner()

import sys
"#;

    #[test]
    fn definitions_have_their_lines_and_parents() {
        let o = outline(SOURCE);
        assert_eq!(o.lines, 26);
        assert_eq!(o.imports, Some((1, 5)));
        let names: Vec<&str> = o.definitions.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["first", "Box", "Box.area", "Box.area.inner"]);
        let first = &o.definitions[0];
        assert_eq!(
            (first.start, first.line, first.header_end, first.end),
            (10, 10, 10, 11)
        );
        let class = &o.definitions[1];
        assert_eq!((class.start, class.line, class.end), (14, 15, 24));
        assert_eq!(class.kind, DefinitionKind::Class);
        let method = &o.definitions[2];
        assert_eq!((method.start, method.line, method.header_end), (18, 19, 21));
        assert_eq!(method.parent, Some(1));
        assert_eq!(method.short_name(), "area");
        assert_eq!(o.definitions[3].parent, Some(2));
        assert_eq!(o.top_level().count(), 2);
    }

    #[test]
    fn enclosing_goes_from_the_outside_in() {
        let o = outline(SOURCE);
        assert_eq!(o.enclosing(23), vec![1, 2, 3]);
        assert_eq!(o.enclosing(16), vec![1]);
        assert_eq!(o.enclosing(11), vec![0]);
        assert_eq!(o.enclosing(7), Vec::<usize>::new());
    }

    #[test]
    fn broken_sources_and_sources_without_imports_still_outline() {
        let o = outline("def f(:\n    pass\n\ndef g():\n    return 2\n");
        assert!(o.definitions.iter().any(|d| d.name == "g"));
        assert_eq!(o.imports, None);
        assert_eq!(outline("").lines, 0);
    }
}
