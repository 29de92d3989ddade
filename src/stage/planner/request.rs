//! The plan request, built within its allowance from what matters.
//!
//! Files are taken in the evidence ranking's order: shown in full (its
//! metrics, pylint messages and source, a large file only in part) while
//! the allowance lasts; then one line each (path, lines of code, severity,
//! worst message); past that only a count per folder. Room for the counts
//! of every file is kept from the start, so a request is never cut off and
//! never exceeds the allowance. When even the facts and the counts do not
//! fit, nothing is sent: [`PlanTooBig`] says what to do.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::evidence::Ranked;
use crate::llm::{budget_tokens, prompt_tokens, ChatMessage, ChatRequest, Role};
use crate::pipeline::clip;
use crate::pipeline::{LintMessage, TestCase};
use crate::stage::auditor::lint_for;
use crate::stage::budget::{Allowance, PLAN_REPLY};
use crate::stage::prompt::{one_line, stable};
use swarm_analysis::{FileMetrics, Severity};

/// `{language}`: the languages of the files (see [`crate::lang::worded`]).
const PLAN_SYSTEM: &str = "You are the Auditor of swarm, an automated refactoring tool for {language} \
projects. You read static analysis results, test results and source code, and write a precise, \
actionable refactoring plan in Markdown. You never write code in the plan; the Fixer does that later.";

const INSTRUCTIONS: &str = "\n## What to write\nA Markdown document:\n\
     # Refactoring plan\n## Summary\n(two to five sentences)\n\
     then one section per file that needs work, headed `## <path>` with the path exactly as above, \
     listing issues as bullets, each with **Type** (bug, style, complexity, docs), **Severity** \
     (low, medium, high), **Location** (function and line), **Description** and **Suggested fix**. \
     Put bugs that make tests fail first. Do not plan changes to test files.\n";

/// The closing instructions; a reply limit below the usual one (a local
/// model) asks for a short plan that fits it.
fn instructions(reply_tokens: u32) -> String {
    if reply_tokens >= PLAN_REPLY {
        return INSTRUCTIONS.to_string();
    }
    let words = u64::from(reply_tokens) * 2 / 3;
    format!(
        "{INSTRUCTIONS}Keep the plan short, under about {words} words: the files that matter most \
         (failing tests first), at most three issues each, one line per field.\n"
    )
}

/// Failing tests listed by name.
const FAILING_SHOWN: usize = 20;
/// pylint messages shown per file in full.
const LINT_PER_FILE: usize = 30;
/// Tokens kept free for estimate slack.
const SLACK: u64 = 32;

/// What the plan request is built from.
pub struct PlanInput<'a> {
    /// Source files, most urgent first.
    pub ranked: &'a [Ranked],
    pub metrics: &'a BTreeMap<String, FileMetrics>,
    pub lint: &'a [LintMessage],
    /// Reads a target-relative file's current text.
    pub read: &'a dyn Fn(&str) -> Option<String>,
    /// Whether a file still holds the text its `metrics` were made from
    /// (the run has not changed it).
    pub unchanged: &'a dyn Fn(&str) -> bool,
    pub lint_score: Option<f64>,
    /// `3/6 passed` or a no-tests description.
    pub tests_summary: String,
    pub failing: &'a [TestCase],
    /// Files an earlier plan of this run showed in full: named, not shown again.
    pub planned: &'a BTreeSet<String>,
    /// 1 for the first plan of a run.
    pub batch: u32,
    pub allowance: Allowance,
}

/// What a plan request showed, for the log and the summary.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Selection {
    pub batch: u32,
    /// Shown with their source, most urgent first.
    pub in_full: Vec<Shown>,
    /// Shown as one line each.
    pub summarised: Vec<String>,
    /// Folder (`pkg/sub/`, `./` for the top) → files only counted there.
    pub counted: BTreeMap<String, usize>,
    pub prompt_tokens: u64,
    pub allowance_tokens: u64,
}

impl Selection {
    /// Files only counted, in all folders.
    pub fn counted_files(&self) -> usize {
        self.counted.values().sum()
    }
}

/// A file shown with its source.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Shown {
    pub path: String,
    /// Why it was chosen (the ranking's reasons), empty when only room allowed it.
    pub why: Vec<String>,
    /// Only part of its source fitted.
    pub partial: bool,
}

/// Not even the facts and a count per folder fit the allowance.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the plan request for {files} files in {folders} folders needs at least {needed} tokens even \
     with every file reduced to a count per folder, more than the plan allowance of {allowance} \
     tokens; point --target_dir at a smaller folder, or use a model with a bigger context window \
     (context-window, [budget] plan-tokens)"
)]
pub struct PlanTooBig {
    pub files: usize,
    pub folders: usize,
    pub needed: u64,
    pub allowance: u64,
}

/// The Auditor's request for a refactoring plan, and what it shows.
pub fn plan_request(input: &PlanInput<'_>) -> Result<(ChatRequest, Selection), PlanTooBig> {
    let head = head(input);
    let all: Vec<&Ranked> = input.ranked.iter().collect();
    let folders = count_by_folder(&all, input.metrics);
    let counts_all = counted_section(&folders);
    let reply = input.allowance.reply_tokens;
    let skeleton = request(
        input,
        format!("{head}\n## Files\n{counts_all}{}", instructions(reply)),
        reply,
    );
    let needed = prompt_tokens(&skeleton) + SLACK;
    let allowance = input.allowance.prompt_tokens;
    if needed > allowance {
        return Err(PlanTooBig {
            files: all.len(),
            folders: folders.len(),
            needed,
            allowance,
        });
    }
    // What is left once every file is counted; sections and one-liners
    // take from it, and the counts shrink as files move out of them.
    let mut left = allowance - needed;
    let per_file = (allowance / 3).max(1_000);
    let mut selection = Selection {
        batch: input.batch,
        allowance_tokens: allowance,
        ..Selection::default()
    };
    let (full, rest) = sections(input, per_file, &mut left, &mut selection);
    let (lines, counted) = one_liners(input, rest, &mut left, &mut selection);
    selection.counted = count_by_folder(&counted, input.metrics)
        .into_iter()
        .map(|(folder, c)| (folder, c.files))
        .collect();
    let mut files = full;
    if !lines.is_empty() {
        files.push_str("\n### Other files (one line each)\n");
        files.push_str(&lines);
    }
    if !counted.is_empty() {
        files.push_str(&counted_section(&count_by_folder(&counted, input.metrics)));
    }
    let built = request(
        input,
        format!("{head}\n## Files\n{files}{}", instructions(reply)),
        reply,
    );
    selection.prompt_tokens = prompt_tokens(&built);
    Ok((built, selection))
}

/// The files shown in full (or, pointed at by evidence, in part), most
/// urgent first, while they fit in `left`; the rest in rank order.
fn sections<'a>(
    input: &PlanInput<'a>,
    per_file: u64,
    left: &mut u64,
    selection: &mut Selection,
) -> (String, Vec<&'a Ranked>) {
    let mut full = String::new();
    let mut rest: Vec<&Ranked> = Vec::new();
    for ranked in input.ranked {
        if input.planned.contains(&ranked.path) {
            rest.push(ranked);
            continue;
        }
        let head = section_head(input, ranked);
        if !could_fit(input, ranked, &head, *left) {
            rest.push(ranked);
            continue;
        }
        let section = (input.read)(&ranked.path)
            .map(|text| section(head, &ranked.path, &text, per_file.min(*left)));
        match section {
            // Only a file the evidence points at is worth showing in part.
            Some((text, partial))
                if !text.is_empty()
                    && budget_tokens(&text) <= *left
                    && (!partial || ranked.needs_work()) =>
            {
                *left -= budget_tokens(&text);
                full.push_str(&text);
                selection.in_full.push(Shown {
                    path: ranked.path.clone(),
                    why: ranked.reasons.iter().map(ToString::to_string).collect(),
                    partial,
                });
            }
            _ => rest.push(ranked),
        }
    }
    (full, rest)
}

/// What [`section`] adds around the file's text: the opening and closing
/// code fence.
const FENCES: u64 = "```python\n".len() as u64 + "\n```\n".len() as u64;

/// Whether `ranked`'s section (opening with `head`) may fit in `left`,
/// told without reading the file: one no evidence points at is shown whole
/// or not at all, and whole it costs at least its head, its fences and a
/// token per three characters of its text (`budget_tokens` counts three
/// ASCII characters or one other as a token). Past the budget a large
/// target's files are then not read one by one to be turned down.
fn could_fit(input: &PlanInput<'_>, ranked: &Ranked, head: &str, left: u64) -> bool {
    if ranked.needs_work() || !(input.unchanged)(&ranked.path) {
        return true;
    }
    let Some(metrics) = input.metrics.get(&ranked.path) else {
        return true;
    };
    let ascii = head.chars().filter(char::is_ascii).count() as u64;
    let other = head.chars().count() as u64 - ascii;
    (ascii + FENCES + metrics.chars as u64).div_ceil(3) + other <= left
}

/// One line each for `rest` while they fit in `left`; the files past that
/// are only counted per folder.
fn one_liners<'a>(
    input: &PlanInput<'_>,
    rest: Vec<&'a Ranked>,
    left: &mut u64,
    selection: &mut Selection,
) -> (String, Vec<&'a Ranked>) {
    let mut lines = String::new();
    let mut counted: Vec<&Ranked> = Vec::new();
    for ranked in rest {
        let line = one_liner(input, ranked);
        let cost = budget_tokens(&line);
        if counted.is_empty() && cost <= *left {
            *left -= cost;
            lines.push_str(&line);
            selection.summarised.push(ranked.path.clone());
        } else {
            counted.push(ranked);
        }
    }
    (lines, counted)
}

fn request(input: &PlanInput<'_>, prompt: String, reply_tokens: u32) -> ChatRequest {
    ChatRequest {
        system: crate::lang::worded(PLAN_SYSTEM, &ranked_paths(input)),
        messages: vec![ChatMessage {
            role: Role::User,
            content: prompt,
        }],
        max_output_tokens: reply_tokens,
        temperature: 0.2,
        sampling: Default::default(),
    }
}

/// The paths the plan ranks, for naming their languages.
fn ranked_paths<'a>(input: &PlanInput<'a>) -> Vec<&'a str> {
    input.ranked.iter().map(|r| r.path.as_str()).collect()
}

/// The opening: what is asked, the facts, the failing tests.
fn head(input: &PlanInput<'_>) -> String {
    let mut p = crate::lang::worded(
        "Write a refactoring plan for this {language} project.\n\n",
        &ranked_paths(input),
    );
    if input.batch > 1 {
        let _ = writeln!(
            p,
            "This is plan {} of the run: earlier plans covered {} file(s), which are only named below.\n",
            input.batch,
            input.planned.len()
        );
    }
    let score = input
        .lint_score
        .map(|s| format!("{s:.2}/10"))
        .unwrap_or_else(|| "none".into());
    let paths: Vec<String> = input.ranked.iter().map(|r| r.path.clone()).collect();
    let _ = writeln!(
        p,
        "## Facts\n- {} score: {score}\n- tests: {}\n- source files: {}",
        crate::lang::linters_of(&paths, " and "),
        input.tests_summary,
        input.ranked.len()
    );
    if !input.failing.is_empty() {
        p.push_str("\n## Failing tests\n");
        for case in input.failing.iter().take(FAILING_SHOWN) {
            let _ = writeln!(
                p,
                "- `{}`: {}",
                case.id,
                stable(&one_line(case.message.as_deref()))
            );
        }
        if input.failing.len() > FAILING_SHOWN {
            let _ = writeln!(p, "- … and {} more", input.failing.len() - FAILING_SHOWN);
        }
    }
    p
}

/// The facts and pylint messages a file's section opens with.
fn section_head(input: &PlanInput<'_>, ranked: &Ranked) -> String {
    let mut s = String::new();
    let metrics = input.metrics.get(&ranked.path);
    let _ = write!(s, "\n### {}\n", ranked.path);
    if let Some(m) = metrics {
        let _ = writeln!(
            s,
            "lines of code: {}, functions: {}, max complexity: {}, severity: {:?}{}",
            m.loc,
            m.functions.len(),
            m.functions.iter().map(|f| f.complexity).max().unwrap_or(0),
            m.severity,
            if m.hotspots.is_empty() {
                String::new()
            } else {
                format!(", hotspots: {}", m.hotspots.join(", "))
            }
        );
        if !m.syntax_errors.is_empty() {
            let _ = writeln!(s, "syntax errors at lines: {:?}", m.syntax_errors);
        }
    }
    if !ranked.reasons.is_empty() {
        let why: Vec<String> = ranked.reasons.iter().map(ToString::to_string).collect();
        let _ = writeln!(s, "why shown: {}", why.join("; "));
    }
    for m in lint_for(input.lint, &ranked.path)
        .into_iter()
        .take(LINT_PER_FILE)
    {
        let _ = writeln!(
            s,
            "- {} {} ({}) line {}: {}",
            crate::lang::linters_of(std::slice::from_ref(&ranked.path), " and "),
            m.message_id,
            m.symbol,
            m.line,
            m.message
        );
    }
    s
}

/// A file in full: `head` (see [`section_head`]) and its source (cut to
/// `max_tokens`, then marked partial). Empty when not even the facts fit.
fn section(mut s: String, path: &str, text: &str, max_tokens: u64) -> (String, bool) {
    let used = budget_tokens(&s) + 16;
    if used >= max_tokens {
        return (String::new(), false);
    }
    let room = usize::try_from((max_tokens - used) * 3).unwrap_or(usize::MAX);
    let text = text.trim_end_matches('\n');
    let shown = clip(text, room);
    let partial = shown.len() < text.len();
    let shown = if partial {
        // Cut at a line end, and say how much is missing.
        let cut = shown.rfind('\n').map_or(shown, |i| &shown[..i]);
        let total = text.lines().count();
        let kept = cut.lines().count();
        let note = format!("\n# … lines {}-{total} not shown", kept + 1);
        let cut = clip(cut, room.saturating_sub(note.len()));
        let cut = cut.rfind('\n').map_or(cut, |i| &cut[..i]);
        format!("{cut}{note}")
    } else {
        shown.to_string()
    };
    let _ = writeln!(s, "```{}\n{shown}\n```", crate::lang::fence_of(path));
    (s, partial)
}

/// `- path — 120 lines of code, low severity; worst: W0611 unused-import (line 3)`.
fn one_liner(input: &PlanInput<'_>, ranked: &Ranked) -> String {
    let mut line = format!("- {}", ranked.path);
    if let Some(m) = input.metrics.get(&ranked.path) {
        let _ = write!(
            line,
            " — {} lines of code, {} severity",
            m.loc,
            m.severity.name()
        );
    }
    if let Some(reason) = ranked.reasons.first() {
        let _ = write!(line, "; {reason}");
    }
    let worst = lint_for(input.lint, &ranked.path)
        .into_iter()
        .min_by_key(|m| m.kind);
    if let Some(m) = worst {
        let _ = write!(
            line,
            "; worst: {} {} (line {})",
            m.message_id, m.symbol, m.line
        );
    }
    line.push('\n');
    line
}

/// Files of one folder that are only counted.
#[derive(Clone, Copy, Debug, Default)]
struct FolderCount {
    files: usize,
    high: usize,
    medium: usize,
}

fn count_by_folder(
    files: &[&Ranked],
    metrics: &BTreeMap<String, FileMetrics>,
) -> BTreeMap<String, FolderCount> {
    let mut counts: BTreeMap<String, FolderCount> = BTreeMap::new();
    for ranked in files {
        let folder = match ranked.path.rsplit_once('/') {
            Some((folder, _)) => format!("{folder}/"),
            None => "./".to_string(),
        };
        let count = counts.entry(folder).or_default();
        count.files += 1;
        match metrics.get(&ranked.path).map(|m| m.severity) {
            Some(Severity::High) => count.high += 1,
            Some(Severity::Medium) => count.medium += 1,
            _ => {}
        }
    }
    counts
}

fn counted_section(counts: &BTreeMap<String, FolderCount>) -> String {
    if counts.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n### Files not shown (count per folder)\n");
    for (folder, c) in counts {
        let _ = writeln!(
            s,
            "- {folder}: {} file(s), {} high and {} medium severity",
            c.files, c.high, c.medium
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::TestOutcome;
    use crate::stage::budget::{Budget, BudgetSettings};
    use crate::stage::planner::evidence::{rank, Facts};

    /// A project of `n` clean modules in folders of 50, plus `buggy.py`
    /// whose failing test's traceback runs through it.
    fn project(n: usize) -> (Vec<String>, BTreeMap<String, String>) {
        let mut texts = BTreeMap::new();
        for i in 0..n {
            let path = format!("pkg{}/mod_{i}.py", i / 50);
            let body = format!(
                "\"\"\"Module {i}.\"\"\"\n\n\ndef value_{i}(x):\n    \"\"\"Return x plus {i}.\"\"\"\n    return x + {i}\n"
            );
            texts.insert(path, body);
        }
        texts.insert(
            "buggy.py".into(),
            "def mean(values):\n    return sum(values) / (len(values) + 1)\n".into(),
        );
        (texts.keys().cloned().collect(), texts)
    }

    fn failing() -> Vec<TestCase> {
        vec![TestCase {
            id: "tests/test_buggy.py::test_mean".into(),
            outcome: TestOutcome::Failed,
            message: Some("assert 1.0 == 1.5".into()),
            details: Some("buggy.py:2: in mean\n    return".into()),
        }]
    }

    fn build(n: usize, allowance: Allowance) -> Result<(ChatRequest, Selection), PlanTooBig> {
        build_reading(n, allowance, true).0
    }

    /// [`build`], saying whether the metrics still describe the files, and
    /// counting the files read.
    fn build_reading(
        n: usize,
        allowance: Allowance,
        unchanged: bool,
    ) -> (Result<(ChatRequest, Selection), PlanTooBig>, usize) {
        let (sources, texts) = project(n);
        let metrics: BTreeMap<String, FileMetrics> = texts
            .iter()
            .map(|(p, t)| (p.clone(), swarm_analysis::analyze(p, t)))
            .collect();
        let reads = std::cell::Cell::new(0);
        let read = |p: &str| {
            reads.set(reads.get() + 1);
            texts.get(p).cloned()
        };
        let failing = failing();
        let facts = Facts {
            sources: &sources,
            metrics: &metrics,
            lint: &[],
            failing: &failing,
            read: &read,
        };
        let ranked = rank(&facts);
        let planned = BTreeSet::new();
        reads.set(0);
        let built = plan_request(&PlanInput {
            ranked: &ranked,
            metrics: &metrics,
            lint: &[],
            read: &read,
            unchanged: &|_| unchanged,
            lint_score: Some(9.5),
            tests_summary: "0/1 passed".into(),
            failing: &failing,
            planned: &planned,
            batch: 1,
            allowance,
        });
        (built, reads.get())
    }

    #[test]
    fn files_past_the_allowance_are_turned_down_without_being_read() {
        let allowance = Budget::default().plan;
        let (known, reads_known) = build_reading(1_000, allowance, true);
        let (unknown, reads_all) = build_reading(1_000, allowance, false);
        let (known, unknown) = (known.expect("fits"), unknown.expect("fits"));
        // The same request either way: only what could not fit is not read.
        assert_eq!(known.0.messages[0].content, unknown.0.messages[0].content);
        assert_eq!(known.1, unknown.1);
        assert_eq!(
            reads_all, 1_001,
            "each file read once to be shown or turned down"
        );
        assert!(
            reads_known < known.1.in_full.len() + 100,
            "{reads_known} reads for {} files shown",
            known.1.in_full.len()
        );
    }

    #[test]
    fn every_size_stays_within_the_allowance_and_the_evidence_comes_first() {
        let allowance = Budget::default().plan;
        for n in [0, 10, 100, 1_000, 10_000] {
            let (request, selection) = build(n, allowance).expect("fits");
            let tokens = prompt_tokens(&request);
            assert!(tokens <= allowance.prompt_tokens, "{n} files: {tokens}");
            assert_eq!(selection.prompt_tokens, tokens);
            assert_eq!(selection.in_full[0].path, "buggy.py");
            assert_eq!(
                selection.in_full.len() + selection.summarised.len() + selection.counted_files(),
                n + 1,
                "every file is shown, named or counted"
            );
            assert!(request.messages[0]
                .content
                .contains("return sum(values) / (len(values) + 1)"));
        }
        let (_, small) = build(10, allowance).expect("fits");
        assert_eq!(small.in_full.len(), 11, "a small project is shown whole");
        let (request, large) = build(10_000, allowance).expect("fits");
        assert!(large.counted_files() > 0);
        assert!(request.messages[0].content.contains("count per folder"));
    }

    #[test]
    fn a_small_window_shrinks_the_plan_and_a_tiny_allowance_is_refused() {
        let window = Budget::new(
            &BudgetSettings {
                context_window: Some(6_000),
                ..BudgetSettings::default()
            },
            "local",
        )
        .expect("fits")
        .plan;
        let (request, selection) = build(1_000, window).expect("fits");
        assert!(prompt_tokens(&request) + u64::from(request.max_output_tokens) <= 6_000);
        assert_eq!(selection.in_full[0].path, "buggy.py");
        let tiny = Allowance {
            prompt_tokens: 300,
            reply_tokens: 1_024,
        };
        let error = build(1_000, tiny).expect_err("facts alone do not fit");
        assert_eq!(error.files, 1_001);
        assert!(error.to_string().contains("--target_dir"));
    }

    #[test]
    fn a_later_batch_only_names_what_was_planned() {
        let allowance = Budget::default().plan;
        let (sources, texts) = project(5);
        let metrics: BTreeMap<String, FileMetrics> = texts
            .iter()
            .map(|(p, t)| (p.clone(), swarm_analysis::analyze(p, t)))
            .collect();
        let read = |p: &str| texts.get(p).cloned();
        let facts = Facts {
            sources: &sources,
            metrics: &metrics,
            lint: &[],
            failing: &[],
            read: &read,
        };
        let ranked = rank(&facts);
        let planned: BTreeSet<String> = ["buggy.py".to_string()].into();
        let (request, selection) = plan_request(&PlanInput {
            ranked: &ranked,
            metrics: &metrics,
            lint: &[],
            read: &read,
            unchanged: &|_| true,
            lint_score: None,
            tests_summary: "no tests".into(),
            failing: &[],
            planned: &planned,
            batch: 2,
            allowance,
        })
        .expect("fits");
        assert!(!selection.in_full.iter().any(|s| s.path == "buggy.py"));
        assert_eq!(selection.summarised, vec!["buggy.py"]);
        assert!(request.messages[0].content.contains("This is plan 2"));
    }

    #[test]
    fn a_short_reply_limit_asks_for_a_short_plan() {
        assert!(!instructions(PLAN_REPLY).contains("Keep the plan short"));
        let short = instructions(1_536);
        assert!(short.starts_with(INSTRUCTIONS), "{short}");
        assert!(short.contains("under about 1024 words"), "{short}");
    }
}
