//! A file too large for the Fixer's prompt, shown in pieces: the functions
//! and classes the evidence points at, in full where they fit, with their
//! line numbers in the file, a few lines around them, the module's imports
//! and the class header of a method; then an outline of the rest.
//!
//! What is implicated, most important first: (a) functions holding a line
//! of this file in a failing test's traceback (or in an import problem),
//! (b) functions and classes a failing test calls, (c) functions with
//! pylint messages, (d) names and lines in the plan items. Each is added
//! while the token room lasts; one that does not fit whole is shown as its
//! signature and the implicated lines with as much context as fits.
//!
//! The text shown is the file's own, byte for byte, so a model can copy
//! context lines into a diff; line numbers are only in headers. This
//! module decides what to show within a room; how big the room is, and
//! what else the prompt holds, is `prompt`'s business.

use crate::llm::budget_tokens;
use crate::pipeline::Excerpt;
use crate::pipeline::{LintMessage, TestCase};
use swarm_analysis::{self as analysis, DefinitionKind, Outline};

mod targets;

use targets::{pointed_at, targets, Target};

/// Lines shown before and after an implicated function.
const CONTEXT: usize = 3;
/// The imports are shown when they take at most this share of the room.
const IMPORTS_SHARE: u64 = 8;
/// The outline takes at most this share of the room.
const OUTLINE_SHARE: u64 = 5;

/// What points at parts of a file.
#[derive(Clone, Copy, Debug)]
pub struct Evidence<'a> {
    pub failing: &'a [&'a TestCase],
    /// Import or compile problems of the file (tracebacks).
    pub problems: &'a [&'a str],
    pub lint: &'a [&'a LintMessage],
    pub plan_items: Option<&'a str>,
}

/// The file's section of a prompt in excerpts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown {
    /// The Markdown section: notice, excerpts, outline.
    pub text: String,
    /// The excerpts in file order.
    pub excerpts: Vec<Excerpt>,
}

/// One place of a file the evidence points at: a definition, or lines
/// outside any function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Implicated {
    /// Its first and last line (1-based).
    pub start: usize,
    pub end: usize,
    /// The definition it is, when it is one (`name`, `Class.method`).
    pub definition: Option<String>,
    /// Why it is implicated (`` `mean`: line 10 in the traceback of test_x ``).
    pub why: String,
}

/// What the evidence points at in `text` (the file at target-relative
/// `path`), most important first (see the module doc); nothing when it
/// points nowhere in the file.
pub fn implicated(path: &str, text: &str, evidence: &Evidence<'_>) -> Vec<Implicated> {
    let outline = analysis::outline(text);
    pointed_at(path, &outline, evidence)
        .into_iter()
        .map(|target| Implicated {
            start: target.span.0,
            end: target.span.1,
            definition: target.definition,
            why: target.why,
        })
        .collect()
}

/// The section showing `text` (the file at target-relative `path`) in
/// excerpts, within `room` tokens by [`budget_tokens`].
pub fn excerpts(path: &str, text: &str, evidence: &Evidence<'_>, room: u64) -> Shown {
    let lines: Vec<&str> = text
        .split_inclusive('\n')
        .map(|l| l.strip_suffix('\n').unwrap_or(l))
        .collect();
    let outline = analysis::outline(text);
    let notice = notice(path, lines.len());
    let notice_tokens = budget_tokens(&notice);
    if notice_tokens > room {
        return Shown {
            text: String::new(),
            excerpts: Vec::new(),
        };
    }
    let room = room - notice_tokens;
    let view = FileView {
        lines: &lines,
        outline: &outline,
    };
    let full_outline = view.outline_text(path, &[], usize::MAX);
    let reserve = budget_tokens(&full_outline).min(room / OUTLINE_SHARE);
    let chosen = view.choose(&targets(path, &outline, evidence), room - reserve);
    let blocks = merge(&chosen);
    let excerpts_text = view.render(&blocks);
    let left = room.saturating_sub(budget_tokens(&excerpts_text));
    let outline_text = view.outline_within(path, &blocks, left.min(room / OUTLINE_SHARE));
    Shown {
        text: format!("{notice}{excerpts_text}{outline_text}"),
        excerpts: blocks,
    }
}

/// What the model is told about excerpts.
fn notice(path: &str, lines: usize) -> String {
    format!(
        "\n## Excerpts of `{path}`\n`{path}` has {lines} lines, too many to show whole in this \
         request, so it is shown in excerpts: the parts the evidence points at, each under a header \
         with its line numbers in the full file, then an outline of the rest. Your diff applies to \
         the full file: copy context lines exactly as shown, take the hunk line numbers from the \
         excerpt headers, and change only lines you were shown.\n"
    )
}

/// Overlapping or adjacent ranges joined, in file order, reasons kept once each.
fn merge(ranges: &[Excerpt]) -> Vec<Excerpt> {
    let mut sorted: Vec<&Excerpt> = ranges.iter().filter(|r| r.start <= r.end).collect();
    sorted.sort_by_key(|r| (r.start, r.end));
    let mut out: Vec<Excerpt> = Vec::new();
    for r in sorted {
        match out.last_mut() {
            Some(last) if r.start <= last.end + 2 => {
                last.end = last.end.max(r.end);
                let known = last.why.split("; ").any(|w| w == r.why);
                if !known {
                    last.why = format!("{}; {}", last.why, r.why);
                }
            }
            _ => out.push(r.clone()),
        }
    }
    out
}

/// The file's lines and outline, for rendering.
struct FileView<'a> {
    lines: &'a [&'a str],
    outline: &'a Outline,
}

impl FileView<'_> {
    /// The ranges to show: the imports when small, then each target whole
    /// when it fits, else in part with as much context as fits.
    fn choose(&self, targets: &[Target], room: u64) -> Vec<Excerpt> {
        let last = self.lines.len();
        let mut chosen: Vec<Excerpt> = Vec::new();
        let fits = |ranges: &[Excerpt]| budget_tokens(&self.render(&merge(ranges))) <= room;
        if let Some((start, end)) = self.outline.imports {
            let imports = Excerpt {
                start,
                end,
                why: "imports".into(),
            };
            let cost = budget_tokens(&self.render(std::slice::from_ref(&imports)));
            if cost <= room / IMPORTS_SHARE {
                chosen.push(imports);
            }
        }
        for target in targets {
            let with = |extra: Vec<Excerpt>| {
                let mut all = chosen.clone();
                all.extend(extra);
                all
            };
            let whole = with(target.full(last));
            if fits(&whole) {
                chosen = whole;
                continue;
            }
            if !fits(&with(target.partial(0))) {
                continue;
            }
            // The widest context that fits: k lines either side.
            let (mut low, mut high) = (0, target.span.1 - target.span.0 + 1);
            while low < high {
                let mid = (low + high).div_ceil(2);
                if fits(&with(target.partial(mid))) {
                    low = mid;
                } else {
                    high = mid - 1;
                }
            }
            chosen = with(target.partial(low));
        }
        chosen
    }

    /// The excerpt blocks as Markdown.
    fn render(&self, blocks: &[Excerpt]) -> String {
        let total = self.lines.len();
        let mut out = String::new();
        for b in blocks {
            let end = b.end.min(total);
            if b.start == 0 || b.start > end {
                continue;
            }
            out.push_str(&format!(
                "\n### lines {}-{end} of {total} ({})\n```python\n",
                b.start, b.why
            ));
            for line in &self.lines[b.start - 1..end] {
                out.push_str(line);
                out.push('\n');
            }
            out.push_str("```\n");
        }
        out
    }

    /// The outline within `room` tokens: top-level definitions not shown
    /// in full, the nearest to the excerpts listed, runs of the others
    /// counted; empty when not even the counts fit.
    fn outline_within(&self, path: &str, shown: &[Excerpt], room: u64) -> String {
        let rest = self.rest(shown);
        if rest.is_empty() {
            return String::new();
        }
        let fits = |keep: usize| {
            let text = self.outline_text(path, shown, keep);
            (budget_tokens(&text) <= room).then_some(text)
        };
        if let Some(all) = fits(usize::MAX) {
            return all;
        }
        let (mut low, mut high) = (0, rest.len());
        if fits(0).is_none() {
            return String::new();
        }
        while low < high {
            let mid = (low + high).div_ceil(2);
            if fits(mid).is_some() {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        fits(low).unwrap_or_default()
    }

    /// Indices of top-level definitions not wholly inside `shown`.
    fn rest(&self, shown: &[Excerpt]) -> Vec<usize> {
        self.outline
            .definitions
            .iter()
            .enumerate()
            .filter(|(_, d)| d.parent.is_none())
            .filter(|(_, d)| !shown.iter().any(|s| s.start <= d.start && d.end <= s.end))
            .map(|(i, _)| i)
            .collect()
    }

    /// The outline listing the `keep` definitions nearest to `shown`;
    /// the others in each gap become one line with their count.
    fn outline_text(&self, path: &str, shown: &[Excerpt], keep: usize) -> String {
        let rest = self.rest(shown);
        if rest.is_empty() {
            return String::new();
        }
        let distance = |i: usize| {
            let d = &self.outline.definitions[i];
            shown
                .iter()
                .map(|s| {
                    if d.end < s.start {
                        s.start - d.end
                    } else {
                        d.start.saturating_sub(s.end)
                    }
                })
                .min()
                .unwrap_or(d.start)
        };
        let mut by_nearness = rest.clone();
        by_nearness.sort_by_key(|&i| (distance(i), i));
        let mut listed = vec![false; self.outline.definitions.len()];
        for &i in by_nearness.iter().take(keep) {
            listed[i] = true;
        }
        let mut methods = vec![0usize; self.outline.definitions.len()];
        for d in &self.outline.definitions {
            if let (Some(parent), DefinitionKind::Function) = (d.parent, d.kind) {
                methods[parent] += 1;
            }
        }
        let mut out = format!("\n### Outline of the rest of `{path}`\n");
        let mut skipped: Vec<usize> = Vec::new();
        for &i in &rest {
            if listed[i] {
                self.flush_skipped(&mut out, &mut skipped);
                let d = &self.outline.definitions[i];
                let what = match d.kind {
                    DefinitionKind::Function => format!("def {}", d.name),
                    DefinitionKind::Class => format!("class {} ({} methods)", d.name, methods[i]),
                };
                out.push_str(&format!("- lines {}-{}: {what}\n", d.start, d.end));
            } else {
                skipped.push(i);
            }
        }
        self.flush_skipped(&mut out, &mut skipped);
        out
    }

    fn flush_skipped(&self, out: &mut String, skipped: &mut Vec<usize>) {
        let (Some(&first), Some(&last)) = (skipped.first(), skipped.last()) else {
            return;
        };
        let (a, b) = (
            &self.outline.definitions[first],
            &self.outline.definitions[last],
        );
        let line = if skipped.len() == 1 {
            format!(
                "- lines {}-{}: 1 more definition ({})\n",
                a.start, a.end, a.name
            )
        } else {
            format!(
                "- lines {}-{}: {} more definitions ({} … {})\n",
                a.start,
                b.end,
                skipped.len(),
                a.name,
                b.name
            )
        };
        out.push_str(&line);
        skipped.clear();
    }
}

#[cfg(test)]
mod tests;
