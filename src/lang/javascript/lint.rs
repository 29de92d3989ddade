//! eslint's JSON report read into the pipeline's [`LintMessage`]s, and a
//! score comparable across attempts, defined as pylint's is: 10 minus ten
//! times the weighted messages per statement (an error counts five, a
//! warning one), never below 0, and 0 when a file does not parse (eslint's
//! fatal message). Statements are counted by tree-sitter
//! ([`swarm_analysis::javascript::statement_count`]).

use std::path::Path;

use serde::Deserialize;

use crate::tools::{LintKind, LintMessage};

/// One file of eslint's `--format json` report.
#[derive(Debug, Deserialize)]
struct FileReport {
    #[serde(rename = "filePath")]
    file_path: String,
    #[serde(default)]
    messages: Vec<Message>,
}

/// One eslint message.
#[derive(Debug, Deserialize)]
struct Message {
    #[serde(rename = "ruleId")]
    rule_id: Option<String>,
    severity: u8,
    message: String,
    #[serde(default)]
    line: u32,
    #[serde(default)]
    column: u32,
    #[serde(default)]
    fatal: bool,
}

/// Reads eslint's JSON report; paths become relative to `root` (the folder
/// eslint ran in). Messages keep eslint's order, file by file.
pub fn parse_eslint_json(text: &str, root: &Path) -> Result<Vec<LintMessage>, serde_json::Error> {
    let files: Vec<FileReport> = serde_json::from_str(text)?;
    let mut messages = Vec::new();
    for file in files {
        let path = Path::new(&file.file_path);
        let rel = path
            .strip_prefix(root)
            .or_else(|_| {
                root.canonicalize()
                    .map_err(|_| ())
                    .and_then(|r| path.strip_prefix(r).map_err(|_| ()))
            })
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_else(|_| file.file_path.clone());
        for m in file.messages {
            let kind = if m.fatal {
                LintKind::Fatal
            } else if m.severity >= 2 {
                LintKind::Error
            } else {
                LintKind::Warning
            };
            let symbol = m
                .rule_id
                .unwrap_or_else(|| if m.fatal { "parse-error" } else { "eslint" }.to_string());
            messages.push(LintMessage {
                path: rel.clone(),
                line: m.line,
                // eslint counts columns from 1, pylint (and LintMessage) from 0.
                column: m.column.saturating_sub(1),
                kind,
                message_id: symbol.clone(),
                symbol,
                message: m.message,
            });
        }
    }
    Ok(messages)
}

/// The score of `messages` over files holding `statements` statements
/// (see the module doc); `None` when there is nothing to score.
pub fn score(messages: &[LintMessage], statements: usize) -> Option<f64> {
    if statements == 0 {
        return None;
    }
    if messages.iter().any(|m| m.kind == LintKind::Fatal) {
        return Some(0.0);
    }
    let weighted: usize = messages.iter().map(|m| m.kind.weight()).sum();
    Some((10.0 - 10.0 * weighted as f64 / statements as f64).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_score_read_like_pylints() {
        let report = r#"[
          {"filePath": "/w/tree/src/inventory.js", "messages": [
            {"ruleId": "no-unused-vars", "severity": 2, "message": "'unused' is assigned a value but never used.", "line": 26, "column": 11},
            {"ruleId": "eqeqeq", "severity": 1, "message": "Expected '===' and instead saw '=='.", "line": 3, "column": 9}
          ]},
          {"filePath": "/w/tree/__tests__/a.test.js", "messages": []}
        ]"#;
        let messages = parse_eslint_json(report, Path::new("/w/tree")).expect("parses");
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].path, "src/inventory.js");
        assert_eq!(messages[0].kind, LintKind::Error);
        assert_eq!(messages[0].symbol, "no-unused-vars");
        assert_eq!((messages[0].line, messages[0].column), (26, 10));
        assert_eq!(messages[1].kind, LintKind::Warning);
        // 5 + 1 over 20 statements: 10 - 10 * 6 / 20 = 7.
        assert_eq!(score(&messages, 20), Some(7.0));
        assert_eq!(score(&messages, 2), Some(0.0));
        assert_eq!(score(&[], 20), Some(10.0));
        assert_eq!(score(&[], 0), None);
    }

    #[test]
    fn a_file_that_does_not_parse_scores_zero() {
        let report = r#"[{"filePath": "/w/a.js", "messages": [
            {"ruleId": null, "fatal": true, "severity": 2, "message": "Parsing error: Unexpected token", "line": 2, "column": 3}]}]"#;
        let messages = parse_eslint_json(report, Path::new("/w")).expect("parses");
        assert_eq!(messages[0].kind, LintKind::Fatal);
        assert_eq!(messages[0].symbol, "parse-error");
        assert_eq!(score(&messages, 100), Some(0.0));
    }
}
