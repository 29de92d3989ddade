//! The Planner: ranks the files by evidence ([`evidence`]), builds the plan
//! request within its allowance ([`request`]), asks the model, and splits
//! the Markdown plan into the items of each file. A repository with more
//! files in need of work than one plan can show is planned in batches: the
//! orchestrator asks for the next batch once the last one is worked off.
//! An instruction (`--task`) is planned as tasks instead ([`tasks`]).

pub mod evidence;
pub mod request;
pub mod tasks;

use std::collections::BTreeMap;

pub use evidence::{rank, Facts, Ranked};
pub use request::{plan_request, PlanInput, Selection};

use super::{call_model, ModelCall};
use crate::llm::{ChatModel, ChatRequest, ChatResponse, LlmError};

/// Asks the model for a plan: the call for the log, and the reply with the
/// plan read from it (split over the known `files`).
pub async fn ask(
    model: &dyn ChatModel,
    request: ChatRequest,
    files: &[String],
) -> (ModelCall, Result<(Plan, ChatResponse), LlmError>) {
    let (call, reply) = call_model(model, request).await;
    let planned = reply.map(|r| (Plan::parse(&r.text, files), r));
    (call, planned)
}

/// The refactoring plan and its per-file sections.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub markdown: String,
    /// Target-relative path → the plan's text about it.
    pub items: BTreeMap<String, String>,
}

impl Plan {
    /// Adds a later batch's plan: its Markdown after this one's, its items
    /// after this one's items for the same file.
    pub fn extend(&mut self, later: Plan) {
        if !self.markdown.is_empty() {
            self.markdown.push_str("\n\n");
        }
        self.markdown.push_str(&later.markdown);
        for (file, text) in later.items {
            let entry = self.items.entry(file).or_default();
            entry.push_str(&text);
        }
    }

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

/// The plan of a project with one source module, from its evidence alone:
/// no item for the module (the Fixer's and the Tester's prompts show its
/// failing tests and lint messages themselves), so nothing is said twice.
pub fn evidence_plan(file: &str, failing: &[String], lint_messages: usize) -> Plan {
    let mut markdown = format!(
        "# Refactoring plan\n\n`{file}` is the project's one source module: this plan is \
         built from the evidence, no model was asked.\n\n## {file}\n\n"
    );
    if !failing.is_empty() {
        markdown.push_str(&format!(
            "- make the failing tests pass: {}\n",
            failing.join(", ")
        ));
    }
    if lint_messages > 0 {
        markdown.push_str(&format!(
            "- clear the linter's {lint_messages} message(s)\n"
        ));
    }
    Plan {
        markdown,
        items: BTreeMap::new(),
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
