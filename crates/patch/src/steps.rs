//! Cuts one file's change into its hunks — the groups of a line diff with
//! one line of context, so changes two or fewer lines apart stay together —
//! and writes the text with any prefix of them applied. What makes a good
//! step (the Reviewer's rules) is decided by the caller.

use similar::{DiffOp, TextDiff};

/// Unchanged lines around each hunk; changes closer than twice this stay
/// in one hunk.
const CONTEXT: usize = 1;

/// A file's change from `before` to `after`, as hunks in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSteps {
    before: Vec<String>,
    after: Vec<String>,
    /// Per hunk: the old and the new line range it covers.
    hunks: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
}

impl FileSteps {
    /// The hunks of the change from `before` to `after` (texts kept line
    /// for line, endings included).
    pub fn new(before: &str, after: &str) -> Self {
        let diff = TextDiff::from_lines(before, after);
        let hunks = diff
            .grouped_ops(CONTEXT)
            .into_iter()
            .filter(|group| group.iter().any(|op| !matches!(op, DiffOp::Equal { .. })))
            .filter_map(|group| {
                let (first, last) = (group.first()?, group.last()?);
                Some((
                    first.old_range().start..last.old_range().end,
                    first.new_range().start..last.new_range().end,
                ))
            })
            .collect();
        Self {
            before: split(before),
            after: split(after),
            hunks,
        }
    }

    /// Number of hunks.
    pub fn len(&self) -> usize {
        self.hunks.len()
    }

    /// True when nothing changes.
    pub fn is_empty(&self) -> bool {
        self.hunks.is_empty()
    }

    /// The text with hunks `0..applied` taken from `after` and the rest
    /// from `before`.
    pub fn text_with(&self, applied: usize) -> String {
        let mut out = String::new();
        let mut cursor = 0;
        for (k, (old, new)) in self.hunks.iter().enumerate() {
            out.extend(self.before[cursor..old.start].iter().map(String::as_str));
            if k < applied {
                out.extend(self.after[new.clone()].iter().map(String::as_str));
            } else {
                out.extend(self.before[old.clone()].iter().map(String::as_str));
            }
            cursor = old.end;
        }
        out.extend(self.before[cursor..].iter().map(String::as_str));
        out
    }
}

/// Lines with their endings.
fn split(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_apply_in_order_and_all_of_them_give_the_new_text() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let after = "A\nb\nc\nd\ne\nf\nG\nh\ni\n";
        let steps = FileSteps::new(before, after);
        // `A` and `G` are five lines apart: two hunks (`i` joins `G`).
        assert_eq!(steps.len(), 2);
        assert_eq!(steps.text_with(0), before);
        assert_eq!(steps.text_with(1), "A\nb\nc\nd\ne\nf\ng\nh\n");
        assert_eq!(steps.text_with(2), after);
    }

    #[test]
    fn changes_two_lines_apart_stay_in_one_hunk_and_no_change_has_none() {
        let steps = FileSteps::new("a\nb\nc\nd\n", "A\nb\nc\nD\n");
        assert_eq!(steps.len(), 1);
        assert!(FileSteps::new("a\n", "a\n").is_empty());
        let no_final_newline = FileSteps::new("a\nb", "a\nB");
        assert_eq!(no_final_newline.text_with(1), "a\nB");
    }
}
