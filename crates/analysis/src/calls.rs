//! What the behaviour check reads from Python source with tree-sitter: the
//! top-level functions to compare between two versions of a module, and
//! the calls in the repository whose arguments are all literals (inputs
//! the repository itself uses). Pure functions over text.

use std::collections::BTreeSet;

use tree_sitter::{Node, Parser};

use serde::Serialize;

use super::{outline, DefinitionKind};

/// One function to compare: its name at the best state and as changed
/// (they differ when the change renamed it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FunctionPair {
    pub original: String,
    pub changed: String,
    /// The function's text at the best state (decorators included), put
    /// back into the changed module when the original does not compile.
    pub original_source: String,
}

/// A call found in the repository, with literal arguments only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CallSite {
    /// The function called (its name at the call).
    pub function: String,
    /// The call as written, `mean([1, 2, 3])`.
    pub call: String,
}

/// At most this many functions of one module are compared.
pub const MAX_FUNCTIONS: usize = 40;
/// At most this many call sites per function are kept.
const MAX_SITES_PER_FUNCTION: usize = 4;
/// Longer call texts are left out (they are not "simple" inputs).
const MAX_CALL_LEN: usize = 200;

/// The top-level functions of `original` with the function of `changed`
/// each became: the same name, or, for a function renamed by the change,
/// the one whose name is the same but for case and underscores
/// (`HumanSize` → `human_size`). Functions only one side has are left out.
pub fn function_pairs(original: &str, changed: &str) -> Vec<FunctionPair> {
    let before = top_functions(original);
    let after = top_functions(changed);
    let after_names: BTreeSet<&str> = after.iter().map(|(n, _)| n.as_str()).collect();
    let before_names: BTreeSet<&str> = before.iter().map(|(n, _)| n.as_str()).collect();
    let mut pairs = Vec::new();
    for (name, text) in &before {
        let changed_name = if after_names.contains(name.as_str()) {
            Some(name.clone())
        } else {
            after
                .iter()
                .map(|(n, _)| n)
                .filter(|n| !before_names.contains(n.as_str()))
                .find(|n| folded(n) == folded(name))
                .cloned()
        };
        if let Some(changed_name) = changed_name {
            pairs.push(FunctionPair {
                original: name.clone(),
                changed: changed_name,
                original_source: text.clone(),
            });
        }
    }
    pairs.truncate(MAX_FUNCTIONS);
    pairs
}

fn folded(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// (name, text with decorators) of every top-level function.
fn top_functions(source: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = source.lines().collect();
    outline(source)
        .top_level()
        .filter(|d| d.kind == DefinitionKind::Function)
        .filter_map(|d| {
            let body = lines.get(d.start.checked_sub(1)?..d.end.min(lines.len()))?;
            Some((d.name.clone(), format!("{}\n", body.join("\n"))))
        })
        .collect()
}

/// The calls in `sources` (texts of the repository's modules) of a
/// function named in `names` (directly or as `module.name`) whose
/// arguments are all literals, each call text once, in source order.
pub fn literal_calls(sources: &[&str], names: &BTreeSet<String>) -> Vec<CallSite> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("the bundled Python grammar matches the tree-sitter ABI");
    let mut sites: Vec<CallSite> = Vec::new();
    for source in sources {
        let Some(tree) = parser.parse(source, None) else {
            continue;
        };
        let mut stack = vec![tree.root_node()];
        while let Some(node) = stack.pop() {
            if node.kind() == "call" {
                if let Some(site) = literal_call(node, source, names) {
                    let per_function = sites.iter().filter(|s| s.function == site.function);
                    let known = sites.iter().any(|s| s.call == site.call);
                    if !known && per_function.count() < MAX_SITES_PER_FUNCTION {
                        sites.push(site);
                    }
                }
            }
            let mut cursor = node.walk();
            let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
            stack.extend(children.into_iter().rev());
        }
    }
    sites
}

fn literal_call(node: Node<'_>, source: &str, names: &BTreeSet<String>) -> Option<CallSite> {
    let function = node.child_by_field_name("function")?;
    let name_node = match function.kind() {
        "identifier" => function,
        "attribute" => function.child_by_field_name("attribute")?,
        _ => return None,
    };
    let name = text(name_node, source);
    if !names.contains(name) {
        return None;
    }
    let arguments = node.child_by_field_name("arguments")?;
    if arguments.kind() != "argument_list" || arguments.has_error() {
        return None;
    }
    let mut cursor = arguments.walk();
    let all_literal = arguments
        .named_children(&mut cursor)
        .filter(|a| a.kind() != "comment")
        .all(|a| match a.kind() {
            "keyword_argument" => a
                .child_by_field_name("value")
                .is_some_and(|v| is_literal(v, source)),
            _ => is_literal(a, source),
        });
    let args_text = text(arguments, source);
    if !all_literal || args_text.len() > MAX_CALL_LEN || args_text.contains('\n') {
        return None;
    }
    Some(CallSite {
        function: name.to_string(),
        call: format!("{name}{args_text}"),
    })
}

/// Whether an expression is a literal `ast.literal_eval` accepts.
pub(crate) fn is_literal(node: Node<'_>, source: &str) -> bool {
    match node.kind() {
        "integer" | "float" | "true" | "false" | "none" => true,
        "string" => {
            let mut cursor = node.walk();
            let interpolated = node
                .named_children(&mut cursor)
                .any(|c| c.kind() == "interpolation");
            !interpolated && !text(node, source).starts_with(['f', 'F'])
        }
        "concatenated_string" | "list" | "tuple" | "set" | "parenthesized_expression" => {
            all_children_literal(node, source)
        }
        "dictionary" => {
            let mut cursor = node.walk();
            let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
            children.iter().all(|pair| {
                pair.kind() == "pair"
                    && pair
                        .child_by_field_name("key")
                        .is_some_and(|k| is_literal(k, source))
                    && pair
                        .child_by_field_name("value")
                        .is_some_and(|v| is_literal(v, source))
            })
        }
        "unary_operator" => {
            let operator = node
                .child_by_field_name("operator")
                .map(|o| text(o, source));
            matches!(operator, Some("-" | "+"))
                && node
                    .child_by_field_name("argument")
                    .is_some_and(|a| matches!(a.kind(), "integer" | "float"))
        }
        _ => false,
    }
}

fn all_children_literal(node: Node<'_>, source: &str) -> bool {
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
    children
        .iter()
        .filter(|c| c.kind() != "comment")
        .all(|c| is_literal(*c, source))
}

fn text<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    source.get(node.byte_range()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_follow_names_and_snake_case_renames() {
        let original = "import os\n\ndef mean(v):\n    return sum(v) / len(v)\n\n\
                        def HumanSize(n):\n    return str(n)\n\ndef gone():\n    pass\n\n\
                        def broken(x)\n    return x\n";
        let changed = "def mean(v):\n    return None\n\ndef human_size(n):\n    return f'{n}'\n\n\
                       def broken(x):\n    return x\n";
        let pairs = function_pairs(original, changed);
        let names: Vec<(&str, &str)> = pairs
            .iter()
            .map(|p| (p.original.as_str(), p.changed.as_str()))
            .collect();
        assert_eq!(names, vec![("mean", "mean"), ("HumanSize", "human_size")]);
        assert_eq!(
            pairs[0].original_source,
            "def mean(v):\n    return sum(v) / len(v)\n"
        );
    }

    #[test]
    fn only_calls_with_literal_arguments_are_inputs() {
        let names: BTreeSet<String> = ["mean".to_string(), "scale".to_string()].into();
        let source = "import stats\nprint(mean([1, 2, 3]))\nx = mean(data)\n\
                      stats.mean((1.5, -2))\nscale(2, factor=-1.5, label='a')\n\
                      scale(f'{x}')\nmean([1, 2, 3])\nother(4)\nmean({'a': 1, 'b': [None, True]})\n";
        let calls: Vec<String> = literal_calls(&[source], &names)
            .into_iter()
            .map(|c| c.call)
            .collect();
        assert_eq!(
            calls,
            vec![
                "mean([1, 2, 3])",
                "mean((1.5, -2))",
                "scale(2, factor=-1.5, label='a')",
                "mean({'a': 1, 'b': [None, True]})",
            ]
        );
    }
}
