//! Finding calls that can run arbitrary code or destroy data.
//!
//! A call is named by its dotted callee (`os.system`, `sp.run`), with the
//! first part resolved through the file's imports (`import subprocess as sp`,
//! `from os import system as run_shell`, `from os import *`), then matched
//! against [`is_dangerous`]. Calls on other objects (`re.compile`,
//! `self.eval`) are not dangerous.

use std::collections::HashMap;

use tree_sitter::Node;

use super::tree::{text, walk};
use super::DangerousCall;

/// Modules whose star import may bring dangerous names into scope.
const RISKY_MODULES: &[&str] = &[
    "os",
    "subprocess",
    "shutil",
    "pickle",
    "marshal",
    "builtins",
];

/// Whether a fully qualified callee is dangerous.
pub fn is_dangerous(name: &str) -> bool {
    let name = name.strip_prefix("builtins.").unwrap_or(name);
    if matches!(name, "eval" | "exec" | "compile" | "__import__") {
        return true;
    }
    if matches!(
        name,
        "os.system"
            | "os.popen"
            | "os.posix_spawn"
            | "os.posix_spawnp"
            | "shutil.rmtree"
            | "pickle.load"
            | "pickle.loads"
            | "marshal.load"
            | "marshal.loads"
            | "subprocess.run"
            | "subprocess.call"
            | "subprocess.Popen"
            | "subprocess.check_output"
            | "subprocess.check_call"
            | "subprocess.getoutput"
            | "subprocess.getstatusoutput"
    ) {
        return true;
    }
    ["os.exec", "os.spawn"].iter().any(|prefix| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_lowercase()))
    })
}

/// What local names stand for, from the file's imports.
#[derive(Debug, Default)]
struct Imports {
    /// local name -> qualified name (`sp` -> `subprocess`, `system` -> `os.system`).
    aliases: HashMap<String, String>,
    /// Risky modules imported with `*`.
    star: Vec<String>,
}

impl Imports {
    fn collect(root: Node<'_>, source: &str) -> Self {
        let mut imports = Self::default();
        walk(root, |node| {
            match node.kind() {
                "import_statement" => imports.add_import(node, source),
                "import_from_statement" => imports.add_from_import(node, source),
                _ => return true,
            }
            false
        });
        imports
    }

    /// `import a.b`, `import a.b as c`.
    fn add_import(&mut self, node: Node<'_>, source: &str) {
        let mut cursor = node.walk();
        for name in node.children_by_field_name("name", &mut cursor) {
            if name.kind() == "aliased_import" {
                if let (Some(module), Some(alias)) = (
                    name.child_by_field_name("name"),
                    name.child_by_field_name("alias"),
                ) {
                    self.aliases.insert(
                        text(alias, source).to_string(),
                        text(module, source).to_string(),
                    );
                }
            }
        }
    }

    /// `from m import a`, `from m import a as b`, `from m import *`.
    fn add_from_import(&mut self, node: Node<'_>, source: &str) {
        let Some(module) = node.child_by_field_name("module_name") else {
            return;
        };
        let module = text(module, source).to_string();
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if child.kind() == "wildcard_import" && RISKY_MODULES.contains(&module.as_str()) {
                self.star.push(module.clone());
            }
        }
        let mut cursor = node.walk();
        for name in node.children_by_field_name("name", &mut cursor) {
            let (imported, local) = match name.kind() {
                "aliased_import" => match (
                    name.child_by_field_name("name"),
                    name.child_by_field_name("alias"),
                ) {
                    (Some(imported), Some(alias)) => (text(imported, source), text(alias, source)),
                    _ => continue,
                },
                _ => (text(name, source), text(name, source)),
            };
            self.aliases
                .insert(local.to_string(), format!("{module}.{imported}"));
        }
    }

    /// The qualified names a dotted callee may stand for.
    fn resolve(&self, dotted: &str) -> Vec<String> {
        let (first, rest) = match dotted.split_once('.') {
            Some((first, rest)) => (first, Some(rest)),
            None => (dotted, None),
        };
        let mut names = Vec::new();
        match self.aliases.get(first) {
            Some(qualified) => names.push(match rest {
                Some(rest) => format!("{qualified}.{rest}"),
                None => qualified.clone(),
            }),
            None => {
                names.push(dotted.to_string());
                if rest.is_none() {
                    names.extend(self.star.iter().map(|m| format!("{m}.{dotted}")));
                }
            }
        }
        names
    }
}

/// The dotted text of a callee made only of names and attributes.
fn dotted_callee(node: Node<'_>, source: &str) -> Option<String> {
    match node.kind() {
        "identifier" => Some(text(node, source).to_string()),
        "attribute" => {
            let object = dotted_callee(node.child_by_field_name("object")?, source)?;
            let attribute = node.child_by_field_name("attribute")?;
            Some(format!("{object}.{}", text(attribute, source)))
        }
        _ => None,
    }
}

/// Every dangerous call under `root`, in source order.
pub(crate) fn find(root: Node<'_>, source: &str) -> Vec<DangerousCall> {
    let imports = Imports::collect(root, source);
    let mut calls = Vec::new();
    walk(root, |node| {
        if node.kind() == "call" {
            let callee = node
                .child_by_field_name("function")
                .and_then(|f| dotted_callee(f, source));
            if let Some(callee) = callee {
                if let Some(name) = imports
                    .resolve(&callee)
                    .into_iter()
                    .find(|n| is_dangerous(n))
                {
                    calls.push(DangerousCall {
                        name: name.strip_prefix("builtins.").unwrap_or(&name).to_string(),
                        line: node.start_position().row + 1,
                    });
                }
            }
        }
        true
    });
    calls
}

#[cfg(test)]
mod tests {
    use super::is_dangerous;

    #[test]
    fn dangerous_names() {
        for name in [
            "eval",
            "os.system",
            "os.execvp",
            "os.spawnl",
            "subprocess.Popen",
            "pickle.loads",
            "builtins.exec",
        ] {
            assert!(is_dangerous(name), "{name}");
        }
        for name in [
            "re.compile",
            "os.path.join",
            "os.exec",
            "os.execute_all",
            "json.loads",
            "evaluate",
        ] {
            assert!(!is_dangerous(name), "{name}");
        }
    }
}
