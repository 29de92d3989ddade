//! The evidence of a fix prompt (plan items, failing tests, import
//! problems, pylint messages, earlier attempts) at each level of trimming,
//! from everything down to the barest: what `fix_prompt` gives up, in
//! order, when a prompt does not fit its allowance.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::trim::{Trim, FULL};
use super::{clip, head_lines, one_line, stable, tail_lines, FixInput, PastAttempt};
use crate::stage::reach::Related;

/// The related code shown takes at most this many characters.
const RELATED_CHARS: usize = 1_600;

/// How much of a trimmed prompt's lines a single line may take.
const TRIMMED_LINE: usize = 300;

/// Plan items, failing tests, problems, lint and history at `trim`.
pub(super) fn evidence_text(input: &FixInput<'_>, trim: &Trim) -> String {
    let trimmed = *trim != FULL;
    let line = |text: &str| -> String {
        if trimmed {
            clip(text, TRIMMED_LINE).to_string()
        } else {
            text.to_string()
        }
    };
    let mut p = String::new();
    if let Some(items) = input.plan_items {
        let items = items.trim();
        let shown = clip(items, trim.plan_chars);
        let _ = writeln!(p, "\n## Plan items for this file\n{shown}");
        if shown.len() < items.len() {
            p.push_str("… (the rest of the plan items is left out for length)\n");
        }
    }
    if !input.failing.is_empty() && trim.tests > 0 {
        p.push_str("\n## Failing tests\n");
        let mut seen = HashSet::new();
        for case in input.failing.iter().take(trim.tests) {
            let message = one_line(case.message.as_deref());
            let _ = writeln!(p, "### {}\n{}", line(&case.id), stable(&message));
            if let (Some(details), true) = (&case.details, trim.trace_lines > 0) {
                let trace = stable(&tail_lines(details, trim.trace_lines));
                let _ = writeln!(p, "```\n{}\n```", collapse_repeats(&trace, &mut seen));
            }
        }
        left_out(
            &mut p,
            input.failing.len(),
            trim.tests,
            trimmed,
            "failing tests",
        );
    }
    related_section(&mut p, input.related, trim.related);
    if !input.problems.is_empty() && trim.problems > 0 {
        p.push_str("\n## Problems when compiling or importing this module\n");
        for problem in input.problems.iter().take(trim.problems) {
            let _ = writeln!(p, "- {}", line(&tail_lines(problem, trim.problem_lines)));
        }
        left_out(
            &mut p,
            input.problems.len(),
            trim.problems,
            trimmed,
            "problems",
        );
    }
    if !input.lint.is_empty() && trim.lint > 0 {
        let linter = crate::lang::linters_of(&[input.path.to_string()], " and ");
        let _ = writeln!(p, "\n## {linter} messages");
        let mut lint = input.lint.clone();
        if trimmed {
            lint.sort_by_key(|m| m.kind);
        }
        for m in lint.iter().take(trim.lint) {
            let text = format!(
                "- line {}: {} ({}) {}",
                m.line, m.message_id, m.symbol, m.message
            );
            let _ = writeln!(p, "{}", line(&text));
        }
        left_out(
            &mut p,
            input.lint.len(),
            trim.lint,
            trimmed,
            &format!("{linter} messages"),
        );
    }
    history_section(&mut p, input.history, trim);
    super::regression::regression_section(&mut p, input.history, trim);
    p
}

/// Runs of at least this many traceback lines already shown are told in
/// one line.
const REPEATED_RUN: usize = 3;

/// `trace` with every run of [`REPEATED_RUN`] or more lines an earlier
/// traceback of the prompt already showed (`seen`) told in one line:
/// failing tests that share their frames show them once. Adds `trace`'s
/// lines to `seen`.
fn collapse_repeats(trace: &str, seen: &mut HashSet<String>) -> String {
    let lines: Vec<&str> = trace.lines().collect();
    let repeated = |l: &str| !l.trim().is_empty() && seen.contains(l);
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let run = lines[i..].iter().take_while(|l| repeated(l)).count();
        if run >= REPEATED_RUN {
            out.push(format!("… ({run} lines as in a traceback above)"));
            i += run;
        } else {
            out.push(lines[i].to_string());
            i += 1;
        }
    }
    seen.extend(lines.iter().map(|l| l.to_string()));
    out.join("\n")
}

/// Says how many of `what` a trimmed prompt leaves out.
fn left_out(p: &mut String, total: usize, shown: usize, trimmed: bool, what: &str) {
    if trimmed && total > shown {
        let _ = writeln!(p, "({} more {what} left out for length)", total - shown);
    }
}

/// Tiered memory: nothing on a first try; the previous attempt in full on
/// the second; a compressed history and a push for a new approach after
/// that. `trim` drops the diff and older attempts when space is short.
fn history_section(p: &mut String, history: &[PastAttempt], trim: &Trim) {
    let trimmed = *trim != FULL;
    let line = |text: String| -> String {
        if trimmed {
            clip(&text, TRIMMED_LINE).to_string()
        } else {
            text
        }
    };
    match history {
        [] => {}
        _ if trim.history_entries == 0 => {
            let _ = writeln!(
                p,
                "\n## Earlier attempts\n{} earlier attempts on this file were not accepted. Take a \
                 different approach.",
                history.len()
            );
        }
        [only] => {
            let _ = writeln!(
                p,
                "\n## Previous attempt\n{}\nOutcome: {}",
                line(format!("{}: {}", only.label, only.summary)),
                line(only.outcome.clone())
            );
            let shown_below = !only.broke.is_empty();
            if let (Some(diff), true, false) = (&only.diff, trim.history_diff, shown_below) {
                let _ = writeln!(p, "```diff\n{}\n```", head_lines(diff, 60));
            }
        }
        many => {
            let _ = writeln!(p, "\n## Earlier attempts ({})", many.len());
            let recent = many.len().min(trim.history_entries);
            for a in &many[many.len() - recent..] {
                let text = format!("- {}: {} -> {}", a.label, a.summary, a.outcome);
                let _ = writeln!(p, "{}", line(text));
            }
            let tried: Vec<&str> = many.iter().map(|a| a.summary.as_str()).collect();
            let tried = format!(
                "Tried {} — none of it was accepted. Take a different approach.",
                tried.join("; ")
            );
            let _ = writeln!(p, "{}", line(tried));
        }
    }
}

/// The related code of other files that fits [`RELATED_CHARS`], at most
/// `max` definitions, most useful first.
fn related_section(p: &mut String, related: &[Related], max: usize) {
    let mut shown = String::new();
    for r in related.iter().take(max) {
        let block = format!(
            "### `{}` lines {}-{}: `{}` ({})\n```{}\n{}\n```\n",
            r.file,
            r.start,
            r.end,
            r.name,
            r.why,
            crate::lang::fence_of(&r.file),
            r.text
        );
        if shown.len() + block.len() > RELATED_CHARS {
            continue;
        }
        shown.push_str(&block);
    }
    if !shown.is_empty() {
        let _ = write!(
            p,
            "\n## Related code in other files (for context; a fix that must change one of them too \
             may add its diff to the same block, each file within its own size limit)\n{shown}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_two_failing_tests_share_are_shown_once() {
        let shared = "gcd.py:5: in gcd\n    return gcd(a % b, b)\ngcd.py:5: in gcd\n    return gcd(a % b, b)\nE   RecursionError";
        let first = format!("    def test_a():\n>       assert gcd(35, 21) == 7\n{shared}");
        let second = format!("    def test_b():\n>       assert gcd(300, 42) == 6\n{shared}");
        let mut seen = HashSet::new();
        assert_eq!(collapse_repeats(&first, &mut seen), first);
        let again = collapse_repeats(&second, &mut seen);
        assert_eq!(
            again,
            "    def test_b():\n>       assert gcd(300, 42) == 6\n… (5 lines as in a traceback above)"
        );
        // Fewer than three shared lines stay as they are.
        let short = "    def test_c():\ngcd.py:5: in gcd\nE   ZeroDivisionError";
        assert_eq!(collapse_repeats(short, &mut seen), short);
    }
}
