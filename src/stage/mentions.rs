//! Old dotted paths that live in strings and configuration: no import
//! check sees `mock.patch("shop.cart.parse_money")`, a logger named
//! `"shop.cart"` or an entry point `shop.cart:main`, and a re-export keeps
//! such a path resolvable while a patch of it no longer intercepts calls
//! made inside the new module. Before a task changes a module, the places
//! outside the task's files that name the module's dotted path this way
//! are found, shown to the model and listed in the summary.

/// Mentions shown per task.
const MAX_MENTIONS: usize = 12;

/// The places in `texts` (path and text; the task's own files left out by
/// the caller) that name one of `modules` (dotted: `shop.cart`) inside a
/// string literal or a configuration value: `path:line: the line`.
/// Import statements are not mentions: pylint judges those.
pub fn old_path_mentions(texts: &[(String, String)], modules: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in texts {
        let config = !path.ends_with(".py");
        for (index, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("import ") || trimmed.starts_with("from ") {
                continue;
            }
            if modules.iter().any(|m| names(line, m, config)) {
                found.push(format!("{path}:{}: {}", index + 1, trimmed.trim_end()));
                if found.len() >= MAX_MENTIONS {
                    return found;
                }
            }
        }
    }
    found
}

/// Whether `line` names `module` (or something inside it) in a string
/// literal, or anywhere in a configuration file.
fn names(line: &str, module: &str, config: bool) -> bool {
    let mut from = 0;
    while let Some(at) = line[from..].find(module) {
        let start = from + at;
        let end = start + module.len();
        let before = line[..start].chars().next_back();
        let after = line[end..].chars().next();
        let bounded_before = before.is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '.'));
        let bounded_after = after.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let quoted = matches!(before, Some('"' | '\''));
        if bounded_before && bounded_after && (config || quoted) {
            return true;
        }
        from = end;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::old_path_mentions;

    #[test]
    fn strings_and_configuration_name_old_paths_imports_do_not() {
        let texts = vec![
        (
            "tests/test_report.py".to_string(),
            "from shop.cart import parse_money\n@mock.patch(\"shop.cart.parse_money\")\nlog = getLogger('shop.cart')\nx = 'shop.cartography'\n".to_string(),
        ),
        (
            "pyproject.toml".to_string(),
            "[project.scripts]\nshop = \"shop.cart:main\"\n".to_string(),
        ),
    ];
        let found = old_path_mentions(&texts, &["shop.cart".to_string()]);
        assert_eq!(
            found,
            vec![
                "tests/test_report.py:2: @mock.patch(\"shop.cart.parse_money\")",
                "tests/test_report.py:3: log = getLogger('shop.cart')",
                "pyproject.toml:2: shop = \"shop.cart:main\"",
            ]
        );
    }
}
