//! What the evidence implicates in a file, most important first, each
//! resolved to a function, a class or a window of lines in the outline.

use std::sync::OnceLock;

use regex::Regex;

use super::{Evidence, CONTEXT};
use crate::pipeline::Excerpt;
use crate::pipeline::LintMessage;
use swarm_analysis::{DefinitionKind, Outline};

/// At most this many definitions one name in the tests or plan may point at.
const MAX_PER_NAME: usize = 3;
/// At most this many implicated places are considered.
const MAX_TARGETS: usize = 40;
/// Lines shown either side of an implicated line outside any function.
const LOOSE_WINDOW: usize = 5;
/// One implicated place: the lines it would be shown with in full, and
/// the lines that matter most when it cannot be.
#[derive(Clone, Debug)]
pub(super) struct Target {
    /// Lines of the function or class, or a window around a loose line.
    pub(super) span: (usize, usize),
    /// The signature lines of a definition.
    signature: Option<(usize, usize)>,
    /// Header lines of the classes a method sits in, with their names.
    headers: Vec<((usize, usize), String)>,
    /// The implicated lines.
    focus: Vec<usize>,
    pub(super) why: String,
    /// The definition it is, when it is one (`name`, `Class.method`).
    pub(super) definition: Option<String>,
}

impl Target {
    /// Every range the target is shown with in full.
    pub(super) fn full(&self, last: usize) -> Vec<Excerpt> {
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
    pub(super) fn partial(&self, k: usize) -> Vec<Excerpt> {
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

/// The implicated places, most important first, one per span; the start
/// of the file when nothing points anywhere.
pub(super) fn targets(path: &str, outline: &Outline, evidence: &Evidence<'_>) -> Vec<Target> {
    let mut found = pointed_at(path, outline, evidence);
    if found.is_empty() && outline.lines > 0 {
        found.push(Target {
            span: (1, outline.lines),
            signature: None,
            headers: Vec::new(),
            focus: vec![1],
            why: "start of the file (nothing points elsewhere)".into(),
            definition: None,
        });
    }
    found
}

/// The places the evidence points at, most important first, one per span.
pub(super) fn pointed_at(path: &str, outline: &Outline, evidence: &Evidence<'_>) -> Vec<Target> {
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
    lint.sort_by_key(|m| m.kind);
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
        definition: None,
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
        definition: Some(d.name.clone()),
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
