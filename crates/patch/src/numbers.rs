//! Removes line numbers that models echo into code (`12 | x = 1`,
//! `12: x = 1`, `12<TAB>x = 1`) — only when every line carries one and the
//! numbers increase, so real code is never touched.

use std::sync::OnceLock;

use regex::Regex;

use super::HunkLine;

/// `12 | `, `12: `, `12\t` at the start of a line.
fn pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        Regex::new(r"^\s*(\d+)(?:\s*[|:](?: |$)|\t)").expect("the pattern is a valid regex")
    })
}

/// The number and the length of its prefix, when `line` starts with one.
fn prefix(line: &str) -> Option<(usize, usize)> {
    let caps = pattern().captures(line)?;
    let number = caps.get(1)?.as_str().parse().ok()?;
    Some((number, caps.get(0)?.end()))
}

/// True when every non-blank line of `lines` is numbered, the numbers
/// strictly increase, and there are at least two of them.
fn all_numbered<'a>(lines: impl Iterator<Item = &'a str>) -> bool {
    let mut last: Option<usize> = None;
    let mut seen = 0;
    for line in lines.filter(|l| !l.trim().is_empty()) {
        match prefix(line) {
            Some((n, _)) if last.is_none_or(|l| n > l) => {
                last = Some(n);
                seen += 1;
            }
            _ => return false,
        }
    }
    seen >= 2
}

/// Strips the number prefix from `line` if it has one.
fn strip(line: &str) -> &str {
    match prefix(line) {
        Some((_, end)) => &line[end..],
        None => line,
    }
}

/// Strips echoed numbers from a whole-file block's lines.
pub(crate) fn strip_from_block(lines: &[&str]) -> Option<Vec<String>> {
    if !all_numbered(lines.iter().copied()) {
        return None;
    }
    Some(lines.iter().map(|l| strip(l).to_string()).collect())
}

/// Strips echoed numbers from a hunk when all its old-side lines carry one.
pub(crate) fn strip_from_hunk(body: &mut [HunkLine]) {
    let old_side = body.iter().filter_map(|l| match l {
        HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
        HunkLine::Add(_) => None,
    });
    if !all_numbered(old_side) {
        return;
    }
    for line in body.iter_mut() {
        let (HunkLine::Context(t) | HunkLine::Remove(t) | HunkLine::Add(t)) = line;
        *t = strip(t).to_string();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_pipe_colon_and_tab_forms_keeping_indentation() {
        let lines = vec!["1 | def f():", "2 |     return 1", "3 |"];
        assert_eq!(
            strip_from_block(&lines),
            Some(vec![
                "def f():".into(),
                "    return 1".into(),
                String::new()
            ])
        );
        let lines = vec!["10: x = 1", "11: y = 2"];
        assert_eq!(
            strip_from_block(&lines),
            Some(vec!["x = 1".into(), "y = 2".into()])
        );
        let lines = vec!["  7\tx = 1", "  8\t    y"];
        assert_eq!(
            strip_from_block(&lines),
            Some(vec!["x = 1".into(), "    y".into()])
        );
    }

    #[test]
    fn leaves_code_alone_unless_every_line_is_numbered_in_order() {
        assert_eq!(strip_from_block(&["1: 'a',", "x = 2"]), None);
        assert_eq!(strip_from_block(&["2: 'a',", "1: 'b',"]), None);
        assert_eq!(strip_from_block(&["1: 'a',"]), None);
    }
}
