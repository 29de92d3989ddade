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

use std::sync::OnceLock;

use regex::Regex;

use crate::analysis::{self, DefinitionKind, Outline};
use crate::llm::budget_tokens;
use crate::tools::{LintMessage, TestCase};

/// Lines shown before and after an implicated function.
const CONTEXT: usize = 3;
/// Lines shown either side of an implicated line outside any function.
const LOOSE_WINDOW: usize = 5;
/// At most this many implicated places are considered.
const MAX_TARGETS: usize = 40;
/// At most this many definitions one name in the tests or plan may point at.
const MAX_PER_NAME: usize = 3;
/// The imports are shown when they take at most this share of the room.
const IMPORTS_SHARE: u64 = 8;
/// The outline takes at most this share of the room.
const OUTLINE_SHARE: u64 = 4;

/// One piece of the file shown in a prompt: lines `start..=end` (1-based)
/// and why they were chosen.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Excerpt {
    pub start: usize,
    pub end: usize,
    pub why: String,
}

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
    let outline_text =
        view.outline_within(path, &blocks, left.min(reserve.max(room / OUTLINE_SHARE)));
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

/// One implicated place: the lines it would be shown with in full, and
/// the lines that matter most when it cannot be.
#[derive(Clone, Debug)]
struct Target {
    /// Lines of the function or class, or a window around a loose line.
    span: (usize, usize),
    /// The signature lines of a definition.
    signature: Option<(usize, usize)>,
    /// Header lines of the classes a method sits in, with their names.
    headers: Vec<((usize, usize), String)>,
    /// The implicated lines.
    focus: Vec<usize>,
    why: String,
}

impl Target {
    /// Every range the target is shown with in full.
    fn full(&self, last: usize) -> Vec<Excerpt> {
        let mut out = self.header_ranges();
        out.push(Excerpt {
            start: self.span.0.saturating_sub(CONTEXT).max(1),
            end: (self.span.1 + CONTEXT).min(last),
            why: self.why.clone(),
        });
        out
    }

    /// The target in part: its class headers, signature, and `k` lines
    /// either side of each implicated line, within its span.
    fn partial(&self, k: usize) -> Vec<Excerpt> {
        let mut out = self.header_ranges();
        let why = format!("{} (in part)", self.why);
        if let Some((start, end)) = self.signature {
            out.push(Excerpt {
                start,
                end,
                why: why.clone(),
            });
        }
        for &line in &self.focus {
            out.push(Excerpt {
                start: line.saturating_sub(k).max(self.span.0),
                end: (line + k).min(self.span.1),
                why: why.clone(),
            });
        }
        out
    }

    fn header_ranges(&self) -> Vec<Excerpt> {
        self.headers
            .iter()
            .map(|((start, end), name)| Excerpt {
                start: *start,
                end: *end,
                why: format!("class `{name}`"),
            })
            .collect()
    }
}

/// Something the evidence points at, before it is resolved in the outline.
enum Pointer {
    Line(usize),
    Name(String),
}

/// The implicated places, most important first, one per span.
fn targets(path: &str, outline: &Outline, evidence: &Evidence<'_>) -> Vec<Target> {
    let mut found: Vec<Target> = Vec::new();
    for (pointer, why) in pointers(path, evidence) {
        for target in resolve(outline, &pointer, &why) {
            if let Some(known) = found.iter_mut().find(|t| t.span == target.span) {
                for line in target.focus {
                    if !known.focus.contains(&line) {
                        known.focus.push(line);
                    }
                }
            } else if found.len() < MAX_TARGETS {
                found.push(target);
            }
        }
    }
    if found.is_empty() && outline.lines > 0 {
        found.push(Target {
            span: (1, outline.lines),
            signature: None,
            headers: Vec::new(),
            focus: vec![1],
            why: "start of the file (nothing points elsewhere)".into(),
        });
    }
    found
}

/// What the evidence points at, in rank order, with the reason.
fn pointers(path: &str, evidence: &Evidence<'_>) -> Vec<(Pointer, String)> {
    let mut out = Vec::new();
    for case in evidence.failing {
        let texts = [case.details.as_deref(), case.message.as_deref()];
        let mut lines: Vec<usize> = texts
            .iter()
            .flatten()
            .flat_map(|t| frame_lines(t, path))
            .collect();
        // The innermost frame is where it broke: show it first.
        lines.reverse();
        for line in lines {
            out.push((
                Pointer::Line(line),
                format!("line {line} in the traceback of {}", short(&case.id)),
            ));
        }
    }
    for problem in evidence.problems {
        for line in frame_lines(problem, path).into_iter().rev() {
            out.push((
                Pointer::Line(line),
                format!("line {line} in an import problem"),
            ));
        }
    }
    for case in evidence.failing {
        let texts = [case.details.as_deref(), case.message.as_deref()];
        for name in texts.iter().flatten().flat_map(|t| called_names(t)) {
            out.push((
                Pointer::Name(name),
                format!("called by {}", short(&case.id)),
            ));
        }
    }
    let mut lint: Vec<&&LintMessage> = evidence.lint.iter().filter(|m| m.line > 0).collect();
    lint.sort_by_key(|m| kind_rank(&m.kind));
    for m in lint {
        out.push((
            Pointer::Line(m.line as usize),
            format!("pylint {} at line {}", m.symbol, m.line),
        ));
    }
    if let Some(plan) = evidence.plan_items {
        for line in plan_lines(plan) {
            out.push((Pointer::Line(line), format!("line {line} in the plan")));
        }
        for name in identifiers(plan) {
            out.push((Pointer::Name(name), "named in the plan".into()));
        }
    }
    out
}

/// A test id clipped for a header.
fn short(id: &str) -> String {
    match id.char_indices().nth(80) {
        Some((end, _)) => format!("{}…", &id[..end]),
        None => id.to_string(),
    }
}

/// pylint kinds, most serious first.
fn kind_rank(kind: &str) -> u8 {
    match kind {
        "fatal" => 0,
        "error" => 1,
        "warning" => 2,
        "refactor" => 3,
        "convention" => 4,
        _ => 5,
    }
}

/// Lines of `path` in a traceback: `path:12:` (pytest) and
/// `File "…/path", line 12` (Python), in the order they appear.
fn frame_lines(text: &str, path: &str) -> Vec<usize> {
    static FRAME: OnceLock<Regex> = OnceLock::new();
    let re = FRAME.get_or_init(|| {
        Regex::new(r#"([A-Za-z0-9_./\\-]+\.py):(\d+)|File "([^"]+\.py)", line (\d+)"#)
            .expect("static regex")
    });
    re.captures_iter(text)
        .filter_map(|c| {
            let (file, line) = match (c.get(1), c.get(2), c.get(3), c.get(4)) {
                (Some(f), Some(l), _, _) | (_, _, Some(f), Some(l)) => (f.as_str(), l.as_str()),
                _ => return None,
            };
            let file = file.replace('\\', "/");
            let ours = file == path || file.ends_with(&format!("/{path}"));
            ours.then(|| line.parse().ok()).flatten()
        })
        .filter(|line| *line > 0)
        .collect()
}

/// Names called in `text` (`name(`), in order, without repeats.
fn called_names(text: &str) -> Vec<String> {
    static CALL: OnceLock<Regex> = OnceLock::new();
    let re =
        CALL.get_or_init(|| Regex::new(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(").expect("static regex"));
    unique(re.captures_iter(text).map(|c| c[1].to_string()))
}

/// Identifiers and dotted names in `text`, in order, without repeats.
fn identifiers(text: &str) -> Vec<String> {
    static NAME: OnceLock<Regex> = OnceLock::new();
    let re = NAME.get_or_init(|| {
        Regex::new(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*").expect("static regex")
    });
    unique(re.find_iter(text).map(|m| m.as_str().to_string()))
}

/// Line numbers the plan names (`line 12`, `lines 6-10`: the first).
fn plan_lines(text: &str) -> Vec<usize> {
    static LINE: OnceLock<Regex> = OnceLock::new();
    let re = LINE.get_or_init(|| Regex::new(r"(?i)\blines?\s+(\d+)").expect("static regex"));
    let lines = re.captures_iter(text).filter_map(|c| c[1].parse().ok());
    unique(lines.filter(|l: &usize| *l > 0))
}

fn unique<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// The targets a pointer resolves to in the outline.
fn resolve(outline: &Outline, pointer: &Pointer, why: &str) -> Vec<Target> {
    match pointer {
        Pointer::Line(line) if *line <= outline.lines => vec![at_line(outline, *line, why)],
        Pointer::Line(_) => Vec::new(),
        Pointer::Name(name) => {
            let dotted = name.contains('.');
            outline
                .definitions
                .iter()
                .enumerate()
                .filter(|(_, d)| {
                    d.name == *name
                        || (!dotted && d.short_name() == name)
                        || (dotted && d.name.ends_with(&format!(".{name}")))
                })
                .take(MAX_PER_NAME)
                .map(|(index, d)| definition_target(outline, index, d.line, why))
                .collect()
        }
    }
}

/// The target for a line: the outermost function holding it (with the
/// headers of the classes around it), else a window in its class or module.
fn at_line(outline: &Outline, line: usize, why: &str) -> Target {
    let chain = outline.enclosing(line);
    let function = chain
        .iter()
        .find(|&&i| outline.definitions[i].kind == DefinitionKind::Function);
    if let Some(&index) = function {
        return definition_target(outline, index, line, why);
    }
    let (low, high) = match chain.last() {
        Some(&class) => {
            let d = &outline.definitions[class];
            (d.header_end + 1, d.end)
        }
        None => (1, outline.lines),
    };
    let start = line.saturating_sub(LOOSE_WINDOW).max(low).min(line);
    let end = (line + LOOSE_WINDOW).min(high).max(line);
    Target {
        span: (start, end),
        signature: None,
        headers: class_headers(outline, &chain),
        focus: vec![line],
        why: why.to_string(),
    }
}

/// The target for definition `index`, focused on `line`.
fn definition_target(outline: &Outline, index: usize, line: usize, why: &str) -> Target {
    let d = &outline.definitions[index];
    let chain = outline.enclosing(d.line);
    let ancestors: Vec<usize> = chain.into_iter().filter(|&i| i != index).collect();
    Target {
        span: (d.start, d.end),
        signature: Some((d.start, d.header_end)),
        headers: class_headers(outline, &ancestors),
        focus: vec![line],
        why: format!("`{}`: {why}", d.name),
    }
}

/// The header lines of the classes among `chain`.
fn class_headers(outline: &Outline, chain: &[usize]) -> Vec<((usize, usize), String)> {
    chain
        .iter()
        .map(|&i| &outline.definitions[i])
        .filter(|d| d.kind == DefinitionKind::Class)
        .map(|d| ((d.start, d.header_end), d.name.clone()))
        .collect()
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
