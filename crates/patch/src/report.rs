//! Writes the reasons a patch was rejected, for the model to act on: which
//! file and hunk, which lines were not found, and the closest region of the
//! file with the lines that differ.

use super::locate::old_side;
use super::Hunk;

/// Most differing lines shown for one hunk.
const MAX_SHOWN: usize = 8;

/// `hunk 2 of 3 (`@@ -4,2 +4,3 @@`)`.
pub(crate) fn hunk_label(index: usize, count: usize, hunk: &Hunk) -> String {
    match &hunk.header {
        Some(h) => format!("hunk {} of {count} (`{h}`)", index + 1),
        None => format!("hunk {} of {count}", index + 1),
    }
}

/// Joins 1-based line numbers as `10, 40 and 70`.
fn list(numbers: &[usize]) -> String {
    let text: Vec<String> = numbers.iter().map(usize::to_string).collect();
    match text.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// The hunk matches several places.
pub(crate) fn ambiguous(path: &str, label: &str, lines: &[usize]) -> String {
    format!(
        "`{path}`, {label}: its context and removed lines match {} places (starting at lines {}), \
         so it is unclear which one to change; add unchanged lines around the change until they \
         match only one place",
        lines.len(),
        list(lines)
    )
}

/// The hunk, read as a region's new text, fits several regions.
pub(crate) fn ambiguous_region(path: &str, label: &str, lines: &[usize]) -> String {
    format!(
        "`{path}`, {label}: its lines are not in the file as written, and read as the new text of \
         a region they fit {} places (starting at lines {}); copy the unchanged lines exactly and \
         mark the changed ones with `-` and `+`",
        lines.len(),
        list(lines)
    )
}

/// The hunk has only added lines.
pub(crate) fn no_anchor(path: &str, label: &str) -> String {
    format!(
        "`{path}`, {label}: it has only `+` lines and no unchanged lines, so nothing says where \
         they go; include 2-3 unchanged lines before and after the added lines"
    )
}

/// Two hunks cover the same lines: (hunk index, first line, last line),
/// lines 1-based.
pub(crate) fn overlap(
    path: &str,
    first: (usize, usize, usize),
    second: (usize, usize, usize),
) -> String {
    format!(
        "`{path}`: hunks {} and {} change overlapping lines ({}-{} and {}-{}); merge them into \
         one hunk",
        first.0 + 1,
        second.0 + 1,
        first.1,
        first.2,
        second.1,
        second.2,
    )
}

/// The hunk's lines were not found: which ones, and the closest region.
pub(crate) fn not_found(path: &str, label: &str, hunk: &Hunk, file: &[&str]) -> String {
    let old = old_side(&hunk.lines);
    let mut out = format!(
        "`{path}`, {label}: its context and removed lines (the ` ` and `-` lines) were not found \
         in the file."
    );
    let missing: Vec<&str> = old
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty() && !file.iter().any(|f| f.trim() == l.trim()))
        .collect();
    if !missing.is_empty() {
        out.push_str(" These lines occur nowhere in it:");
        for line in missing.iter().take(MAX_SHOWN) {
            out.push_str(&format!("\n    `{line}`"));
        }
        if missing.len() > MAX_SHOWN {
            out.push_str(&format!("\n    … and {} more", missing.len() - MAX_SHOWN));
        }
    }
    match closest(&old, file) {
        Some((start, score)) if score > 0 => {
            let end = (start + old.len()).min(file.len());
            out.push_str(&format!(
                "\nThe closest region is lines {}-{end} of `{path}`; there, the file differs \
                 from your hunk:",
                start + 1
            ));
            let differing: Vec<(usize, &str, &str)> = old
                .iter()
                .enumerate()
                .filter_map(|(i, want)| {
                    let have = file.get(start + i).copied().unwrap_or("");
                    (have != *want).then_some((start + i + 1, *want, have))
                })
                .collect();
            for (line, want, have) in differing.iter().take(MAX_SHOWN) {
                out.push_str(&format!(
                    "\n    line {line}: the file has `{have}` where your hunk has `{want}`"
                ));
            }
            if differing.len() > MAX_SHOWN {
                out.push_str(&format!("\n    … and {} more", differing.len() - MAX_SHOWN));
            }
            out.push_str("\nCopy the unchanged and removed lines exactly from the current file.");
        }
        _ => out.push_str(
            "\nNo region of the file resembles the hunk; copy the lines you change from the \
             current file.",
        ),
    }
    out
}

/// The window of the file that shares the most lines (ignoring
/// surrounding whitespace) with `old`, position for position.
fn closest(old: &[&str], file: &[&str]) -> Option<(usize, usize)> {
    if old.is_empty() || file.is_empty() {
        return None;
    }
    let old: Vec<&str> = old.iter().map(|l| l.trim()).collect();
    let file: Vec<&str> = file.iter().map(|l| l.trim()).collect();
    let last_start = file.len().saturating_sub(old.len());
    (0..=last_start)
        .map(|start| {
            let score = old
                .iter()
                .zip(&file[start..])
                .filter(|(a, b)| !a.is_empty() && a == b)
                .count();
            (start, score)
        })
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HunkLine;

    #[test]
    fn not_found_names_missing_lines_and_closest_region() {
        let hunk = Hunk {
            header: Some("@@ -2,3 +2,3 @@".into()),
            old_start: None,
            lines: vec![
                HunkLine::Context("def total(values):".into()),
                HunkLine::Remove("    return sum(vals)".into()),
                HunkLine::Add("    return sum(values)".into()),
            ],
            old_no_eol: false,
            new_no_eol: false,
        };
        let file = [
            "import os",
            "def total(values):",
            "    return sum(values) + 1",
        ];
        let msg = not_found("m.py", &hunk_label(0, 1, &hunk), &hunk, &file);
        assert!(
            msg.contains("`m.py`, hunk 1 of 1 (`@@ -2,3 +2,3 @@`)"),
            "{msg}"
        );
        assert!(
            msg.contains("occur nowhere in it:\n    `    return sum(vals)`"),
            "{msg}"
        );
        assert!(msg.contains("closest region is lines 2-3"), "{msg}");
        assert!(
            msg.contains("line 3: the file has `    return sum(values) + 1` where your hunk has `    return sum(vals)`"),
            "{msg}"
        );
    }

    #[test]
    fn lists_numbers_in_prose() {
        assert_eq!(list(&[10, 40, 70]), "10, 40 and 70");
        assert_eq!(list(&[3]), "3");
    }
}
