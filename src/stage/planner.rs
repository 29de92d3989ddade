//! The plan: asks the model for the Markdown refactoring plan and splits it
//! into the items of each file.

use std::collections::BTreeMap;

/// The refactoring plan and its per-file sections.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub markdown: String,
    /// Target-relative path → the plan's text about it.
    pub items: BTreeMap<String, String>,
}

impl Plan {
    /// Splits `markdown` into sections for the known `files`: a heading that
    /// names a file starts its section, the next heading of the same or a
    /// higher level ends it.
    pub fn parse(markdown: &str, files: &[String]) -> Self {
        let mut items: BTreeMap<String, String> = BTreeMap::new();
        let mut current: Option<(String, usize)> = None;
        for line in markdown.lines() {
            if let Some(level) = heading_level(line) {
                if let Some(file) = file_in(line, files) {
                    current = Some((file, level));
                    continue;
                }
                if current.as_ref().is_some_and(|(_, l)| level <= *l) {
                    current = None;
                }
            }
            if let Some((file, _)) = &current {
                let entry = items.entry(file.clone()).or_default();
                entry.push_str(line);
                entry.push('\n');
            }
        }
        items.retain(|_, text| !text.trim().is_empty());
        Self {
            markdown: markdown.to_string(),
            items,
        }
    }
}

fn heading_level(line: &str) -> Option<usize> {
    let hashes = line.chars().take_while(|c| *c == '#').count();
    (hashes > 0 && line[hashes..].starts_with(' ')).then_some(hashes)
}

/// The file a heading names: the longest known path that appears in it as a
/// whole token (backticks, `File:` and similar decorations allowed).
fn file_in(line: &str, files: &[String]) -> Option<String> {
    let tokens: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || "`*:()[]\"'".contains(c))
        .filter(|t| !t.is_empty())
        .collect();
    files
        .iter()
        .filter(|f| {
            tokens.iter().any(|t| {
                t == f || t.trim_start_matches("./") == f.as_str() || t.ends_with(&format!("/{f}"))
            })
        })
        .max_by_key(|f| f.len())
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_sections_by_file() {
        let md = "# Refactoring plan\n## Summary\nTwo bugs.\n## `stats.py`\n- **Type**: bug\n  mean of empty\n### notes\nmore\n## Summary of risks\nnone\n## File: pkg/report.py\n- **Type**: style\n";
        let files = vec!["stats.py".to_string(), "pkg/report.py".to_string()];
        let plan = Plan::parse(md, &files);
        assert_eq!(plan.items.len(), 2);
        assert!(plan.items["stats.py"].contains("mean of empty"));
        assert!(plan.items["stats.py"].contains("more"));
        assert!(!plan.items["stats.py"].contains("none"));
        assert!(plan.items["pkg/report.py"].contains("style"));
    }
}
