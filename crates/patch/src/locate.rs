//! Finds where a hunk belongs by its context and removed lines — never by
//! the header's numbers, which only break ties. Tries, in order: exact
//! text, then ignoring trailing whitespace, then ignoring indentation, then
//! with context lines trimmed from the edges. The first level that matches
//! anywhere decides; it must match in exactly one place (an exact match
//! must also be the only match up to trailing whitespace).

use super::{Hunk, HunkLine};

/// How leniently lines were compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    Exact,
    TrailingWhitespace,
    Indentation,
}

/// A file's lines, precomputed for each comparison level.
pub(crate) struct FileView<'a> {
    exact: Vec<&'a str>,
    trailing: Vec<&'a str>,
    indentation: Vec<&'a str>,
}

impl<'a> FileView<'a> {
    /// Prepares `lines` for matching.
    pub(crate) fn new(lines: &[&'a str]) -> FileView<'a> {
        FileView {
            exact: lines.to_vec(),
            trailing: lines.iter().map(|l| l.trim_end()).collect(),
            indentation: lines.iter().map(|l| l.trim()).collect(),
        }
    }

    /// Number of lines.
    pub(crate) fn len(&self) -> usize {
        self.exact.len()
    }

    /// The lines as compared at `level`.
    fn at(&self, level: Level) -> &[&'a str] {
        match level {
            Level::Exact => &self.exact,
            Level::TrailingWhitespace => &self.trailing,
            Level::Indentation => &self.indentation,
        }
    }
}

/// Normalizes a hunk line for `level`.
fn normalize(line: &str, level: Level) -> &str {
    match level {
        Level::Exact => line,
        Level::TrailingWhitespace => line.trim_end(),
        Level::Indentation => line.trim(),
    }
}

/// Where a hunk goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    /// File line (0-based) of the first old-side line still in the hunk.
    pub(crate) start: usize,
    /// Number of file lines the hunk covers.
    pub(crate) len: usize,
    /// Context lines trimmed from the hunk's start and end.
    pub(crate) lead: usize,
    pub(crate) tail: usize,
    pub(crate) level: Level,
}

/// The outcome of locating one hunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Located {
    Found(Placement),
    /// The hunk matches several places: their first lines (1-based).
    Ambiguous(Vec<usize>),
    NotFound,
    /// Only added lines, in a non-empty file: nothing says where they go.
    NoAnchor,
}

/// The hunk's old side (context and removed lines) between the trims.
pub(crate) fn old_side(lines: &[HunkLine]) -> Vec<&str> {
    lines
        .iter()
        .filter_map(|l| match l {
            HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
            HunkLine::Add(_) => None,
        })
        .collect()
}

/// Every position where `old` matches at `level`.
fn find_all(view: &FileView<'_>, old: &[&str], level: Level) -> Vec<usize> {
    let file = view.at(level);
    if old.is_empty() || old.len() > file.len() {
        return Vec::new();
    }
    let old: Vec<&str> = old.iter().map(|l| normalize(l, level)).collect();
    (0..=file.len() - old.len())
        .filter(|&pos| file[pos] == old[0] && file[pos..pos + old.len()] == old[..])
        .collect()
}

/// Count of leading and trailing context lines.
fn context_edges(lines: &[HunkLine]) -> (usize, usize) {
    let is_context = |l: &&HunkLine| matches!(l, HunkLine::Context(_));
    let lead = lines.iter().take_while(is_context).count();
    let tail = if lead == lines.len() {
        0
    } else {
        lines.iter().rev().take_while(is_context).count()
    };
    (lead, tail)
}

/// Locates `hunk` in the file.
pub(crate) fn locate(view: &FileView<'_>, hunk: &Hunk) -> Located {
    let full_old = old_side(&hunk.lines);
    if full_old.is_empty() {
        return if view.len() == 0 {
            Located::Found(Placement {
                start: 0,
                len: 0,
                lead: 0,
                tail: 0,
                level: Level::Exact,
            })
        } else {
            Located::NoAnchor
        };
    }
    let whole = |level: Level| -> Vec<Placement> {
        find_all(view, &full_old, level)
            .into_iter()
            .map(|start| Placement {
                start,
                len: full_old.len(),
                lead: 0,
                tail: 0,
                level,
            })
            .collect()
    };
    let exact = whole(Level::Exact);
    let trailing = whole(Level::TrailingWhitespace);
    // Trailing whitespace is invisible to the model: an exact match only
    // counts when no other place matches up to trailing whitespace.
    if !exact.is_empty() && exact.len() == trailing.len() {
        return decide(exact, hunk);
    }
    if !trailing.is_empty() {
        return decide(trailing, hunk);
    }
    let indented = whole(Level::Indentation);
    if !indented.is_empty() {
        return decide(indented, hunk);
    }
    let (ctx_lead, ctx_tail) = context_edges(&hunk.lines);
    let max_trim = ((ctx_lead + ctx_tail) / 2).max(1);
    for total in 1..=max_trim.min(ctx_lead + ctx_tail) {
        for level in [Level::TrailingWhitespace, Level::Indentation] {
            let mut found: Vec<Placement> = Vec::new();
            for lead in 0..=total.min(ctx_lead) {
                let tail = total - lead;
                if tail > ctx_tail {
                    continue;
                }
                let kept = &hunk.lines[lead..hunk.lines.len() - tail];
                let old = old_side(kept);
                if old.iter().filter(|l| !l.trim().is_empty()).count() < 2 {
                    continue;
                }
                for start in find_all(view, &old, level) {
                    let candidate = Placement {
                        start,
                        len: old.len(),
                        lead,
                        tail,
                        level,
                    };
                    let key = first_change(&candidate, hunk);
                    if !found.iter().any(|f| first_change(f, hunk) == key) {
                        found.push(candidate);
                    }
                }
            }
            if !found.is_empty() {
                return decide(found, hunk);
            }
        }
    }
    Located::NotFound
}

/// The file line where the hunk's first change lands (to merge candidates
/// that differ only in how much context was trimmed).
fn first_change(p: &Placement, hunk: &Hunk) -> usize {
    let unchanged = hunk.lines[p.lead..]
        .iter()
        .take_while(|l| matches!(l, HunkLine::Context(_)))
        .count();
    p.start + unchanged
}

/// One candidate wins; several are a rejection unless the header's start
/// line (trusted only when its counts fit the body) points at exactly one.
fn decide(found: Vec<Placement>, hunk: &Hunk) -> Located {
    if found.len() == 1 {
        return found
            .into_iter()
            .next()
            .map_or(Located::NotFound, Located::Found);
    }
    if let Some(hinted) = hunk.old_start {
        let at_hint: Vec<&Placement> = found
            .iter()
            .filter(|p| p.start >= p.lead && p.start - p.lead + 1 == hinted)
            .collect();
        if let [only] = at_hint.as_slice() {
            return Located::Found((*only).clone());
        }
    }
    let mut lines: Vec<usize> = found
        .iter()
        .map(|p| p.start.saturating_sub(p.lead) + 1)
        .collect();
    lines.sort_unstable();
    lines.dedup();
    Located::Ambiguous(lines)
}

/// Maps the indentation of added lines onto the file's, from the pairs of
/// (hunk line, file line) the hunk matched. Used at [`Level::Indentation`].
pub(crate) struct Reindent {
    pairs: Vec<(String, String)>,
    delta: isize,
    unit: char,
}

/// The most common value; ties go to the one closest to zero.
fn most_common(mut values: Vec<isize>) -> isize {
    values.sort_unstable();
    let mut best = (0isize, 0usize);
    let mut i = 0;
    while i < values.len() {
        let run = values[i..].iter().take_while(|&&d| d == values[i]).count();
        if run > best.1 || run == best.1 && values[i].abs() < best.0.abs() {
            best = (values[i], run);
        }
        i += run;
    }
    best.0
}

/// Leading whitespace of a line.
fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

impl Reindent {
    /// Learns the mapping from a hunk's kept lines and the file lines its
    /// old side matched. The shift is the most common one among removed
    /// lines (their `-` marker is explicit), else among context lines, where
    /// a one-column shift is a lost or doubled marker space, not a shift.
    pub(crate) fn learn(kept: &[HunkLine], file_old: &[&str]) -> Reindent {
        let mut pairs = Vec::new();
        let mut removed_deltas = Vec::new();
        let mut context_deltas = Vec::new();
        let old = kept.iter().filter(|l| !matches!(l, HunkLine::Add(_)));
        for (line, file) in old.zip(file_old) {
            let (HunkLine::Context(text) | HunkLine::Remove(text) | HunkLine::Add(text)) = line;
            if text.trim().is_empty() {
                continue;
            }
            let (h, f) = (indent(text), indent(file));
            let delta = f.chars().count() as isize - h.chars().count() as isize;
            match line {
                HunkLine::Remove(_) => removed_deltas.push(delta),
                _ => context_deltas.push(delta),
            }
            pairs.push((h.to_string(), f.to_string()));
        }
        let delta = if removed_deltas.is_empty() {
            Some(most_common(context_deltas))
                .filter(|d| d.abs() > 1)
                .unwrap_or(0)
        } else {
            most_common(removed_deltas)
        };
        let unit = pairs
            .iter()
            .find_map(|(_, f)| f.chars().next())
            .unwrap_or(' ');
        Reindent { pairs, delta, unit }
    }

    /// The added line re-indented to fit the file.
    pub(crate) fn apply(&self, line: &str) -> String {
        if line.trim().is_empty() {
            return line.to_string();
        }
        let own = indent(line);
        let body = &line[own.len()..];
        if let Some(file_indent) = self.mapped(own) {
            return format!("{file_indent}{body}");
        }
        let own_width = own.chars().count();
        let hunk_unit = own.chars().next().unwrap_or(' ');
        if hunk_unit != self.unit {
            // Tabs in the file, spaces in the hunk (or the reverse): scale.
            if let Some(ratio) = self.ratio() {
                let width = (own_width as f64 / ratio).round() as usize;
                let fresh: String = std::iter::repeat_n(self.unit, width).collect();
                return format!("{fresh}{body}");
            }
        }
        match self.delta {
            0 => line.to_string(),
            d if d > 0 => {
                let extra: String = std::iter::repeat_n(self.unit, d.unsigned_abs()).collect();
                format!("{extra}{line}")
            }
            d => {
                let keep: String = own.chars().skip(d.unsigned_abs()).collect();
                format!("{keep}{body}")
            }
        }
    }

    /// The file indentation that most matched lines with this hunk
    /// indentation had, if any line had it.
    fn mapped(&self, own: &str) -> Option<&str> {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for (_, f) in self.pairs.iter().filter(|(h, _)| h == own) {
            match counts.iter_mut().find(|(k, _)| *k == f.as_str()) {
                Some((_, n)) => *n += 1,
                None => counts.push((f.as_str(), 1)),
            }
        }
        counts.into_iter().max_by_key(|(_, n)| *n).map(|(k, _)| k)
    }

    /// Hunk indentation characters per file indentation character, from the
    /// first pair where both are indented.
    fn ratio(&self) -> Option<f64> {
        self.pairs.iter().find_map(|(h, f)| {
            let (hw, fw) = (h.chars().count(), f.chars().count());
            (hw > 0 && fw > 0).then(|| hw as f64 / fw as f64)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunk(lines: Vec<HunkLine>) -> Hunk {
        Hunk {
            header: None,
            old_start: None,
            lines,
            old_no_eol: false,
            new_no_eol: false,
        }
    }

    fn c(t: &str) -> HunkLine {
        HunkLine::Context(t.into())
    }

    fn r(t: &str) -> HunkLine {
        HunkLine::Remove(t.into())
    }

    #[test]
    fn exact_match_beats_looser_ones() {
        let file = ["a", "b ", "b", "c"];
        let view = FileView::new(&file);
        let found = locate(&view, &hunk(vec![c("b"), r("c")]));
        assert!(matches!(
            found,
            Located::Found(Placement {
                start: 2,
                level: Level::Exact,
                ..
            })
        ));
    }

    #[test]
    fn exact_match_is_ambiguous_when_another_differs_only_in_trailing_space() {
        let file = ["a", "b  ", "c", "b", "c"];
        let view = FileView::new(&file);
        assert_eq!(
            locate(&view, &hunk(vec![c("b"), r("c")])),
            Located::Ambiguous(vec![2, 4])
        );
    }

    #[test]
    fn reports_every_candidate_of_an_ambiguous_hunk() {
        let file = ["x", "y", "x", "y", "x", "y"];
        let view = FileView::new(&file);
        assert_eq!(
            locate(&view, &hunk(vec![c("x"), r("y")])),
            Located::Ambiguous(vec![1, 3, 5])
        );
    }

    #[test]
    fn trims_a_wrong_edge_context_line() {
        let file = ["def f():", "    a = 1", "    b = 2", "    return a"];
        let view = FileView::new(&file);
        let found = locate(
            &view,
            &hunk(vec![
                c("def g():"),
                c("    a = 1"),
                r("    b = 2"),
                c("    return a"),
            ]),
        );
        assert!(matches!(
            found,
            Located::Found(Placement {
                start: 1,
                lead: 1,
                ..
            })
        ));
    }

    #[test]
    fn reindent_follows_the_common_shift() {
        let re = Reindent::learn(
            &[c("x = 1"), c("if x:"), r("    y")],
            &["    x = 1", "    if x:", "        y"],
        );
        assert_eq!(re.apply("    z = 2"), "        z = 2");
        assert_eq!(re.apply("w"), "    w");
        let re = Reindent::learn(
            &[c("   a"), c("    b"), c("    c")],
            &["    a", "    b", "    c"],
        );
        assert_eq!(re.apply("    d"), "    d");
        let re = Reindent::learn(&[c("   a"), c("       b")], &["    a", "        b"]);
        assert_eq!(re.apply("        e"), "        e");
        let re = Reindent::learn(&[c("def f():"), r("    x")], &["def f():", "\tx"]);
        assert_eq!(re.apply("        y"), "\t\ty");
    }
}
