//! Cuts one file's change into its hunks — the groups of a line diff with
//! one line of context, so changes two or fewer lines apart stay together —
//! and writes the text with any prefix of them, or any chosen few, applied;
//! says which lines each hunk changes. What makes a good step or a good
//! choice (the Reviewer's rules, the evidence) is decided by the caller.

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
    /// Per hunk: the old and the new lines it changes (its context left out).
    changed: Vec<HunkLines>,
}

/// The lines one hunk changes, 0-based and end-exclusive, without its
/// context: `old` in the text before, `new` in the text after. An empty
/// `old` range is an insertion before line `old.start`; an empty `new`
/// range, a deletion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HunkLines {
    pub old: std::ops::Range<usize>,
    pub new: std::ops::Range<usize>,
}

impl FileSteps {
    /// The hunks of the change from `before` to `after` (texts kept line
    /// for line, endings included).
    pub fn new(before: &str, after: &str) -> Self {
        Self::with_context(before, after, CONTEXT)
    }

    /// The change from `before` to `after` cut as finely as it goes: every
    /// run of changed lines is a hunk of its own, however close the next.
    pub fn fine(before: &str, after: &str) -> Self {
        Self::with_context(before, after, 0)
    }

    /// Hunks with `context` unchanged lines around each: changes closer
    /// than twice that stay together.
    fn with_context(before: &str, after: &str, context: usize) -> Self {
        let diff = TextDiff::from_lines(before, after);
        let groups: Vec<Vec<DiffOp>> = diff
            .grouped_ops(context)
            .into_iter()
            .filter(|group| group.iter().any(|op| !matches!(op, DiffOp::Equal { .. })))
            .collect();
        let mut hunks = Vec::with_capacity(groups.len());
        let mut changed = Vec::with_capacity(groups.len());
        for group in &groups {
            let (Some(first), Some(last)) = (group.first(), group.last()) else {
                continue;
            };
            hunks.push((
                first.old_range().start..last.old_range().end,
                first.new_range().start..last.new_range().end,
            ));
            let mut edits = group
                .iter()
                .filter(|op| !matches!(op, DiffOp::Equal { .. }));
            let first = edits.next().unwrap_or(first);
            let last = edits.next_back().unwrap_or(first);
            changed.push(HunkLines {
                old: first.old_range().start..last.old_range().end,
                new: first.new_range().start..last.new_range().end,
            });
        }
        Self {
            before: split(before),
            after: split(after),
            hunks,
            changed,
        }
    }

    /// Cuts hunk `k` in two at line `at` of the text after (0-based): the
    /// first keeps its removed lines and the added lines before `at`, the
    /// second inserts the rest after them. Either may then be taken without
    /// the other. False, and nothing cut, when `at` is not strictly inside
    /// the lines the hunk adds.
    pub fn cut(&mut self, k: usize, at: usize) -> bool {
        let Some(lines) = self.changed.get(k).cloned() else {
            return false;
        };
        if !(lines.new.start < at && at < lines.new.end) {
            return false;
        }
        let (old, new) = self.hunks[k].clone();
        // The second part: an insertion at the end of the first's lines.
        let second = (old.end..old.end, at..new.end);
        self.hunks[k] = (old, new.start..at);
        self.hunks.insert(k + 1, second);
        self.changed[k] = HunkLines {
            old: lines.old.clone(),
            new: lines.new.start..at,
        };
        self.changed.insert(
            k + 1,
            HunkLines {
                old: lines.old.end..lines.old.end,
                new: at..lines.new.end,
            },
        );
        true
    }

    /// The lines hunk `k` changes (see [`HunkLines`]); `None` past the last.
    pub fn changed(&self, k: usize) -> Option<&HunkLines> {
        self.changed.get(k)
    }

    /// The text with the hunks `chosen` says yes to taken from `after`
    /// and every other one left as in `before`.
    pub fn text_choosing(&self, chosen: impl Fn(usize) -> bool) -> String {
        let mut out = String::new();
        let mut cursor = 0;
        for (k, (old, new)) in self.hunks.iter().enumerate() {
            out.extend(self.before[cursor..old.start].iter().map(String::as_str));
            if chosen(k) {
                out.extend(self.after[new.clone()].iter().map(String::as_str));
            } else {
                out.extend(self.before[old.clone()].iter().map(String::as_str));
            }
            cursor = old.end;
        }
        out.extend(self.before[cursor..].iter().map(String::as_str));
        out
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
        self.text_choosing(|k| k < applied)
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

    #[test]
    fn cut_finely_changes_one_line_apart_are_hunks_of_their_own() {
        let (before, after) = ("a\nb\nc\nd\n", "A\nb\nC\nd\ne\n");
        assert_eq!(FileSteps::new(before, after).len(), 1);
        let fine = FileSteps::fine(before, after);
        assert_eq!(fine.len(), 3);
        assert_eq!(fine.text_choosing(|k| k == 1), "a\nb\nC\nd\n");
        assert_eq!(fine.text_choosing(|_| true), after);
    }

    #[test]
    fn a_hunk_cut_in_two_gives_either_part_alone() {
        // Line 2 replaced by three lines: `B`, then `x`, `y` inserted.
        let (before, after) = ("a\nb\nc\n", "a\nB\nx\ny\nc\n");
        let mut steps = FileSteps::fine(before, after);
        assert_eq!(steps.len(), 1);
        assert!(!steps.cut(0, 1), "not inside what it adds");
        assert!(steps.cut(0, 2));
        assert_eq!(steps.len(), 2);
        assert_eq!(steps.text_choosing(|k| k == 0), "a\nB\nc\n");
        assert_eq!(steps.text_choosing(|k| k == 1), "a\nb\nx\ny\nc\n");
        assert_eq!(steps.text_choosing(|_| true), after);
        assert_eq!(
            steps.changed(1),
            Some(&HunkLines {
                old: 2..2,
                new: 2..4
            })
        );
    }

    #[test]
    fn any_hunks_can_be_chosen_and_each_says_what_it_changes() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let after = "A\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let steps = FileSteps::new(before, after);
        assert_eq!(steps.len(), 2);
        assert_eq!(
            steps.text_choosing(|k| k == 1),
            "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
        );
        assert_eq!(steps.text_choosing(|k| k == 0), "A\nb\nc\nd\ne\nf\ng\nh\n");
        // Line 1 replaced; two lines inserted after line 8 (context left out).
        assert_eq!(
            steps.changed(0),
            Some(&HunkLines {
                old: 0..1,
                new: 0..1
            })
        );
        assert_eq!(
            steps.changed(1),
            Some(&HunkLines {
                old: 8..8,
                new: 8..10
            })
        );
        assert_eq!(steps.changed(2), None);
    }
}
