//! The size limit of a task's change (`--task`), for the change as a
//! whole: a module split deletes and creates hundreds of lines, so lines
//! moved unchanged — a removed line added back anywhere in the change,
//! compared without their indentation — are not counted. What is left is
//! what the change writes anew, and a rewrite of unrelated code still
//! exceeds the limit.

use std::collections::BTreeMap;

use super::{ChangedFile, Rejection};
use crate::stage::reviewer::TaskReview;

/// What a task's change writes anew.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct TaskSize {
    /// Added plus removed lines that are not moves.
    pub lines: usize,
    /// Their bytes (line ends included).
    pub bytes: usize,
    /// Lines moved: each counts once, for its removal and its addition.
    pub moved: usize,
}

/// `too_many_lines` for a task's change as a whole.
pub(super) fn lines_within(
    files: &[ChangedFile<'_>],
    task: &TaskReview<'_>,
) -> Result<(), Rejection> {
    let size = measure(files);
    if size.lines > task.max_changed_lines {
        return Err(Rejection::TaskTooManyLines {
            lines: size.lines,
            moved: size.moved,
            limit: task.max_changed_lines,
        });
    }
    Ok(())
}

/// `too_many_bytes` for a task's change as a whole.
pub(super) fn bytes_within(
    files: &[ChangedFile<'_>],
    task: &TaskReview<'_>,
) -> Result<(), Rejection> {
    let size = measure(files);
    if size.bytes > task.max_changed_bytes {
        return Err(Rejection::TaskTooManyBytes {
            bytes: size.bytes,
            limit: task.max_changed_bytes,
        });
    }
    Ok(())
}

/// The change's size with moved lines taken out. Blank lines are moves
/// when any blank line is removed; they are never counted alone.
pub(super) fn measure(files: &[ChangedFile<'_>]) -> TaskSize {
    let mut removed: Vec<&str> = Vec::new();
    let mut added: Vec<&str> = Vec::new();
    for file in files {
        let (before, after) = (file.before.unwrap_or(""), file.after.unwrap_or(""));
        let diff = similar::TextDiff::from_lines(before, after);
        for change in diff.iter_all_changes() {
            match change.tag() {
                similar::ChangeTag::Delete => removed.push(line_of(&change)),
                similar::ChangeTag::Insert => added.push(line_of(&change)),
                similar::ChangeTag::Equal => {}
            }
        }
    }
    let mut pool: BTreeMap<&str, usize> = BTreeMap::new();
    for line in &removed {
        *pool.entry(line.trim()).or_default() += 1;
    }
    let mut size = TaskSize::default();
    let mut unmatched_removed = pool.clone();
    for line in &added {
        let key = line.trim();
        match pool.get_mut(key) {
            Some(n) if *n > 0 => {
                *n -= 1;
                *unmatched_removed
                    .get_mut(key)
                    .expect("the pools share keys") -= 1;
                size.moved += 1;
            }
            _ if key.is_empty() => {}
            _ => {
                size.lines += 1;
                size.bytes += line.len() + 1;
            }
        }
    }
    for (line, count) in unmatched_removed {
        if !line.is_empty() {
            size.lines += count;
            size.bytes += (line.len() + 1) * count;
        }
    }
    size
}

/// The text of one line of a diff (without its line end).
fn line_of<'t>(change: &similar::Change<&'t str>) -> &'t str {
    change.value().trim_end_matches(['\n', '\r'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use swarm_analysis::Severity;

    fn file<'a>(path: &'a str, before: Option<&'a str>, after: Option<&'a str>) -> ChangedFile<'a> {
        ChangedFile {
            path,
            before,
            after,
            severity: Severity::Medium,
        }
    }

    #[test]
    fn a_faithful_move_costs_only_its_new_lines_a_rewrite_costs_all() {
        let body: String = (0..200).map(|i| format!("    x{i} = {i}\n")).collect();
        let cart = format!(
            "def parse_money(text):\n{body}    return x0\n\n\ndef total():\n    return 1\n"
        );
        let cart_after = "from shop.money import parse_money\n\n\ndef total():\n    return 1\n";
        let money =
            format!("\"\"\"Money.\"\"\"\n\n\ndef parse_money(text):\n{body}    return x0\n");
        let moved = measure(&[
            file("shop/cart.py", Some(&cart), Some(cart_after)),
            file("shop/money.py", None, Some(&money)),
        ]);
        assert_eq!(moved.lines, 2, "{moved:?}");
        assert!(moved.moved > 200);
        // The same size of change that rewrites the body is counted whole.
        let rewritten = money.replace(" = ", " = 1 + ");
        let rewrite = measure(&[
            file("shop/cart.py", Some(&cart), Some(cart_after)),
            file("shop/money.py", None, Some(&rewritten)),
        ]);
        assert!(rewrite.lines > 400, "{rewrite:?}");
        let task = TaskReview {
            max_changed_lines: 180,
            max_changed_bytes: 180 * 120,
            taken_names: &Default::default(),
        };
        let files = [
            file("shop/cart.py", Some(&cart), Some(cart_after)),
            file("shop/money.py", None, Some(&rewritten)),
        ];
        assert!(matches!(
            lines_within(&files, &task),
            Err(Rejection::TaskTooManyLines { .. })
        ));
    }
}
