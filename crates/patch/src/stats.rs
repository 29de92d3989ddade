//! Size of a change and its unified diff, for the Reviewer's limits, logs
//! and prompts.

use similar::{ChangeTag, TextDiff};

/// See [`super::changed_lines`].
pub(crate) fn changed_lines(before: &str, after: &str) -> usize {
    TextDiff::from_lines(before, after)
        .iter_all_changes()
        .filter(|c| c.tag() != ChangeTag::Equal)
        .count()
}

/// See [`super::changed_bytes`].
pub(crate) fn changed_bytes(before: &str, after: &str) -> usize {
    TextDiff::from_lines(before, after)
        .iter_all_changes()
        .filter(|c| c.tag() != ChangeTag::Equal)
        .map(|c| c.value().len())
        .sum()
}

/// See [`super::unified_diff`].
pub(crate) fn unified_diff(path: &str, before: &str, after: &str) -> String {
    TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_added_and_removed_lines() {
        assert_eq!(changed_lines("a\nb\nc\n", "a\nB\nc\nd\n"), 3);
        assert_eq!(changed_lines("same\n", "same\n"), 0);
    }

    #[test]
    fn counts_bytes_of_added_and_removed_lines() {
        assert_eq!(changed_bytes("a\nb\nc\n", "a\nB\nc\nd\n"), 6);
        assert_eq!(changed_bytes("same\n", "same\n"), 0);
        let long = format!("x = '{}'\n", "y".repeat(10_000));
        assert_eq!(changed_bytes("", &long), long.len());
        assert_eq!(changed_lines("", &long), 1);
    }

    #[test]
    fn diff_has_git_style_headers_and_marks_missing_newline() {
        let diff = unified_diff("pkg/m.py", "x = 1\n", "x = 2");
        assert!(
            diff.starts_with("--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1 +1 @@\n"),
            "{diff}"
        );
        assert!(
            diff.contains("-x = 1\n+x = 2\n\\ No newline at end of file"),
            "{diff}"
        );
    }
}
