//! Which linted files a file depends on directly, for the cache key: pylint
//! infers through the modules a file imports, so their content is part of
//! what its result depends on.
//!
//! A fast line scan, not a parser: `import a.b as c, d`, `from a.b import
//! (c, d)` (over several lines too), relative `from ..x import y`, anywhere
//! in the file. A name resolves to every linted file whose dotted path ends
//! with it (`pkg.mod` matches `src/pkg/mod.py` and `pkg/mod/__init__.py`),
//! plus the packages on the way (`pkg/__init__.py`); a file also depends on
//! the `__init__.py` files of its own packages. Matching too much only costs
//! a re-lint; what it never follows is a second level (a file imported by an
//! import) and imports built at run time (`importlib`, `__import__`).

use std::collections::{BTreeSet, HashMap};

/// The dotted module names of the linted files, with every suffix, mapped to
/// the files that carry them.
pub(super) struct ModuleIndex<'a> {
    by_name: HashMap<String, Vec<usize>>,
    files: &'a [String],
}

impl<'a> ModuleIndex<'a> {
    /// Indexes `files` (paths relative to the lint root, `/`-separated).
    pub(super) fn new(files: &'a [String]) -> Self {
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, file) in files.iter().enumerate() {
            let parts = module_parts(file);
            for start in 0..parts.len() {
                by_name.entry(parts[start..].join(".")).or_default().push(i);
            }
        }
        Self { by_name, files }
    }

    /// The indexes of the files `files[of]` (with text `source`) imports
    /// directly, and its own packages' `__init__.py`; never itself.
    pub(super) fn imports_of(&self, of: usize, source: &str) -> BTreeSet<usize> {
        let file = &self.files[of];
        let mut found = BTreeSet::new();
        let parts = module_parts(file);
        let package: Vec<&str> = if file.ends_with("__init__.py") {
            parts.clone()
        } else {
            parts[..parts.len().saturating_sub(1)].to_vec()
        };
        for end in 1..=package.len() {
            self.add_full(&package[..end].join("."), &mut found);
        }
        for statement in statements(source) {
            for name in imported_names(&statement, &package) {
                let name_parts: Vec<&str> = name.split('.').filter(|p| !p.is_empty()).collect();
                for end in 1..=name_parts.len() {
                    self.add_suffix(&name_parts[..end].join("."), &mut found);
                }
            }
        }
        found.remove(&of);
        found
    }

    fn add_suffix(&self, name: &str, found: &mut BTreeSet<usize>) {
        if let Some(hits) = self.by_name.get(name) {
            found.extend(hits.iter().copied());
        }
    }

    /// A name resolved from the lint root (a relative import): only files
    /// whose whole dotted path is `name`.
    fn add_full(&self, name: &str, found: &mut BTreeSet<usize>) {
        if let Some(hits) = self.by_name.get(name) {
            found.extend(
                hits.iter()
                    .copied()
                    .filter(|&i| module_parts(&self.files[i]).join(".") == name),
            );
        }
    }
}

/// `pkg/mod.py` → `[pkg, mod]`, `pkg/__init__.py` → `[pkg]`.
fn module_parts(file: &str) -> Vec<&str> {
    let stem = file.strip_suffix(".py").unwrap_or(file);
    let mut parts: Vec<&str> = stem.split('/').filter(|p| !p.is_empty()).collect();
    if parts.last() == Some(&"__init__") && parts.len() > 1 {
        parts.pop();
    }
    parts
}

/// The `import …` and `from … import …` statements of `source`, one string
/// each: comments dropped, continuation lines and parentheses joined,
/// `;`-separated statements split.
fn statements(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending: Option<String> = None;
    for raw in source.lines() {
        let line = raw.split('#').next().unwrap_or("");
        if let Some(mut text) = pending.take() {
            text.push(' ');
            text.push_str(line.trim().trim_end_matches('\\'));
            if continues(&text, line) {
                pending = Some(text);
            } else {
                out.push(text);
            }
            continue;
        }
        for part in line.split(';') {
            let part = part.trim();
            if part.starts_with("import ") || part.starts_with("from ") {
                let text = part.trim_end_matches('\\').to_string();
                if continues(&text, part) {
                    pending = Some(text);
                } else {
                    out.push(text);
                }
            }
        }
    }
    out.extend(pending);
    out
}

/// Whether a statement goes on past this line: an open parenthesis or a
/// trailing backslash.
fn continues(text: &str, line: &str) -> bool {
    text.matches('(').count() > text.matches(')').count() || line.trim_end().ends_with('\\')
}

/// The dotted names a statement may load, relative ones resolved against
/// `package` (the importing file's package, as path parts from the root).
fn imported_names(statement: &str, package: &[&str]) -> Vec<String> {
    let clean: String = statement
        .chars()
        .map(|c| if c == '(' || c == ')' { ' ' } else { c })
        .collect();
    let words = |text: &str| -> Vec<String> {
        text.split(',')
            .filter_map(|item| item.split_whitespace().next().map(str::to_string))
            .filter(|name| {
                name.chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
            })
            .collect()
    };
    if let Some(rest) = clean.strip_prefix("import ") {
        return words(rest);
    }
    let Some(rest) = clean.strip_prefix("from ") else {
        return Vec::new();
    };
    let Some((module, names)) = rest.split_once(" import ") else {
        return Vec::new();
    };
    let module = module.trim();
    let dots = module.chars().take_while(|&c| c == '.').count();
    let base = if dots == 0 {
        module.to_string()
    } else {
        let keep = package.len().saturating_sub(dots - 1);
        let mut parts: Vec<&str> = package[..keep].to_vec();
        let tail = &module[dots..];
        if !tail.is_empty() {
            parts.push(tail);
        }
        parts.join(".")
    };
    let mut names: Vec<String> = words(names)
        .into_iter()
        .filter(|n| n != "*")
        .map(|n| {
            if base.is_empty() {
                n
            } else {
                format!("{base}.{n}")
            }
        })
        .collect();
    if !base.is_empty() {
        names.push(base);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    fn imports(all: &[String], of: &str, source: &str) -> Vec<String> {
        let index = ModuleIndex::new(all);
        let i = all.iter().position(|f| f == of).expect("file listed");
        index
            .imports_of(i, source)
            .into_iter()
            .map(|j| all[j].clone())
            .collect()
    }

    #[test]
    fn absolute_imports_resolve_to_files_and_their_packages() {
        let all = files(&[
            "app.py",
            "pkg/__init__.py",
            "pkg/util.py",
            "pkg/sub/__init__.py",
            "pkg/sub/deep.py",
            "other.py",
        ]);
        let source = "import os, pkg.util as u\nfrom pkg.sub import (\n    deep,\n    missing,\n)\nX = 1  # import other\n";
        assert_eq!(
            imports(&all, "app.py", source),
            [
                "pkg/__init__.py",
                "pkg/util.py",
                "pkg/sub/__init__.py",
                "pkg/sub/deep.py"
            ]
        );
    }

    #[test]
    fn relative_imports_resolve_from_the_package() {
        let all = files(&[
            "src/pkg/__init__.py",
            "src/pkg/a.py",
            "src/pkg/b.py",
            "src/pkg/sub/c.py",
            "src/pkg/sub/__init__.py",
            "b.py",
        ]);
        assert_eq!(
            imports(
                &all,
                "src/pkg/sub/c.py",
                "from ..b import thing\nfrom . import x\n"
            ),
            [
                "src/pkg/__init__.py",
                "src/pkg/b.py",
                "src/pkg/sub/__init__.py"
            ]
        );
        // A src layout: `import pkg.a` names src/pkg/a.py by its suffix.
        assert_eq!(
            imports(&all, "b.py", "import pkg.a; from pkg import b\n"),
            ["src/pkg/__init__.py", "src/pkg/a.py", "src/pkg/b.py"]
        );
    }

    #[test]
    fn continuation_lines_and_indented_imports_count() {
        let all = files(&["m.py", "a.py", "b.py", "c.py"]);
        let source = "def f():\n    import a\nfrom b import \\\n    thing\nimport c  # noqa\n";
        assert_eq!(imports(&all, "m.py", source), ["a.py", "b.py", "c.py"]);
    }
}
