//! `tsc --noEmit`'s diagnostics read per file, and which of them a change
//! adds: a proposal that adds type errors is refused, as a Python proposal
//! that does not parse is.
//!
//! Diagnostics are compared without their line and column (an edit above an
//! old error moves it): by file, code and message, counted.

use std::collections::HashMap;

/// One `tsc` diagnostic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeError {
    /// Path relative to the folder `tsc` ran in.
    pub path: String,
    /// 1-based line and column.
    pub line: u32,
    pub column: u32,
    /// `TS2322`.
    pub code: String,
    pub message: String,
}

impl std::fmt::Display for TypeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {} {}",
            self.path, self.line, self.column, self.code, self.message
        )
    }
}

/// Reads `tsc --pretty false` output: `file(line,col): error TSnnnn: text`
/// lines, each followed by indented continuation lines (kept in the
/// message). Lines of another shape (a summary) are skipped.
pub fn parse_tsc_output(text: &str) -> Vec<TypeError> {
    let mut errors: Vec<TypeError> = Vec::new();
    for line in text.lines() {
        if let Some(parsed) = parse_line(line) {
            errors.push(parsed);
        } else if line.starts_with(' ') && !line.trim().is_empty() {
            if let Some(last) = errors.last_mut() {
                last.message.push('\n');
                last.message.push_str(line.trim());
            }
        }
    }
    errors
}

/// One `file(line,col): error TSnnnn: text` line.
fn parse_line(line: &str) -> Option<TypeError> {
    let (location, rest) = line.split_once("): error ")?;
    let (path, position) = location.rsplit_once('(')?;
    let (line_no, column) = position.split_once(',')?;
    let (code, message) = rest.split_once(": ")?;
    Some(TypeError {
        path: path.replace('\\', "/"),
        line: line_no.trim().parse().ok()?,
        column: column.trim().parse().ok()?,
        code: code.to_string(),
        message: message.to_string(),
    })
}

/// The diagnostics of `after` that `before` does not have (compared by
/// file, code and message, as many times as they occur).
pub fn added_errors(before: &[TypeError], after: &[TypeError]) -> Vec<TypeError> {
    let mut known: HashMap<(&str, &str, &str), usize> = HashMap::new();
    for e in before {
        *known
            .entry((e.path.as_str(), e.code.as_str(), e.message.as_str()))
            .or_default() += 1;
    }
    after
        .iter()
        .filter(|e| {
            let key = (e.path.as_str(), e.code.as_str(), e.message.as_str());
            match known.get_mut(&key) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            }
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostics_are_read_per_file() {
        let out = "src/money.ts(34,14): error TS2322: Type 'string' is not assignable to type 'number'.\n\
                   src/a.ts(1,1): error TS2345: Argument of type 'X' is not assignable.\n  Types of property 'a' are incompatible.\n\
                   Found 2 errors in 2 files.\n";
        let errors = parse_tsc_output(out);
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].path, "src/money.ts");
        assert_eq!((errors[0].line, errors[0].column), (34, 14));
        assert_eq!(errors[0].code, "TS2322");
        assert!(errors[1]
            .message
            .ends_with("Types of property 'a' are incompatible."));
    }

    #[test]
    fn only_new_errors_count_against_a_change() {
        let old = parse_tsc_output(
            "src/a.ts(3,1): error TS7006: Parameter 'x' implicitly has an 'any' type.\n",
        );
        let moved = parse_tsc_output(
            "src/a.ts(9,1): error TS7006: Parameter 'x' implicitly has an 'any' type.\n",
        );
        assert!(added_errors(&old, &moved).is_empty());
        let worse = parse_tsc_output(
            "src/a.ts(9,1): error TS7006: Parameter 'x' implicitly has an 'any' type.\n\
             src/b.ts(2,7): error TS2322: Type 'string' is not assignable to type 'number'.\n",
        );
        let added = added_errors(&old, &worse);
        assert_eq!(added.len(), 1);
        assert_eq!(
            added[0].to_string(),
            "src/b.ts:2:7: TS2322 Type 'string' is not assignable to type 'number'."
        );
    }
}
