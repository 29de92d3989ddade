//! Renders events and the summary for people, on stderr.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::log::{Event, EventSink};
use crate::orchestrator::{Delivery, StopReason, Summary};

/// Erases the terminal line the cursor is on.
const CLEAR_LINE: &str = "\r\x1b[2K";

/// Writes progress to stderr unless quiet. Clones share the terminal line a
/// streaming reply's progress is drawn on.
#[derive(Clone)]
pub struct Printer {
    quiet: bool,
    verbose: u8,
    /// stderr is a terminal: only then is streaming progress drawn.
    terminal: bool,
    /// A progress line is on screen (no newline after it yet).
    progress_shown: Arc<AtomicBool>,
}

impl Printer {
    pub fn new(quiet: bool, verbose: u8) -> Self {
        Self {
            quiet,
            verbose,
            terminal: std::io::stderr().is_terminal(),
            progress_shown: Arc::new(AtomicBool::new(false)),
        }
    }

    fn line(&self, text: &str) {
        let mut err = std::io::stderr().lock();
        if self.progress_shown.swap(false, Ordering::SeqCst) {
            let _ = write!(err, "{CLEAR_LINE}");
        }
        let _ = writeln!(err, "{text}");
    }

    /// Draws (or, when `text` is `None`, erases) the progress line.
    fn progress(&self, text: Option<&str>) {
        if !self.terminal {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = match text {
            Some(text) => {
                self.progress_shown.store(true, Ordering::SeqCst);
                write!(err, "{CLEAR_LINE}{text}")
            }
            None if self.progress_shown.swap(false, Ordering::SeqCst) => {
                write!(err, "{CLEAR_LINE}")
            }
            None => Ok(()),
        };
        let _ = err.flush();
    }

    /// The final summary (always shown, even with -q).
    pub fn summary(&self, s: &Summary) {
        let score = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "n/a".into());
        let tests = if s.verified_by_tests || s.tests_before.total > 0 {
            format!(
                "{}/{} passed -> {}/{} passed",
                s.tests_before.passed,
                s.tests_before.total,
                s.tests_after.passed,
                s.tests_after.total
            )
        } else {
            "no tests: result NOT verified by tests (checked: every file compiles and imports, pylint not lower)".into()
        };
        let mut out = vec![
            String::new(),
            format!(
                "{} — run {}",
                headline(
                    s.status,
                    s.stop_reason,
                    s.final_check.as_ref().is_some_and(|c| !c.passed)
                ),
                s.run_id
            ),
            format!("  tests:    {tests}"),
            format!(
                "  pylint:   {} -> {}",
                score(s.pylint_before),
                score(s.pylint_after)
            ),
            format!(
                "  attempts: {} committed, {} accepted, {} round(s); tokens {} in / {} out{}",
                s.attempts,
                s.accepted,
                s.iterations,
                s.tokens.input,
                s.tokens.output,
                s.tokens
                    .cost_usd
                    .map(|c| format!(", ${c:.4}"))
                    .unwrap_or_default()
            ),
            branch_line(s),
        ];
        out.extend(verification_lines(s));
        let c = &s.coverage;
        if c.summarised + c.not_reached > 0 {
            out.push(format!(
                "  files:    {} of {} looked at in depth, {} summarised, {} not reached ({} plan(s))",
                c.in_depth, c.source_files, c.summarised, c.not_reached, c.plans
            ));
        }
        if let Some(check) = s.final_check.as_ref().filter(|c| !c.passed) {
            out.push(format!(
                "  check:    FAILED with the base commit's tests and test configuration — {}; not delivered",
                check.tests
            ));
        }
        out.push(delivery_line(s));
        for line in &s.safety.shortfalls {
            out.push(format!("  safety:   {line}"));
        }
        out.push(format!("  log:      {}", s.log_file));
        self.line(&out.join("\n"));
    }
}

/// Per changed file, what verified it — shown when anything but the
/// existing tests did.
fn verification_lines(s: &Summary) -> Vec<String> {
    use crate::stage::judge::behaviour::Verification;
    if s.verification
        .values()
        .all(|v| *v == Verification::ExistingTests)
    {
        return Vec::new();
    }
    s.verification
        .iter()
        .map(|(file, how)| format!("  verified: {file}: {how}"))
        .collect()
}

impl EventSink for Printer {
    fn emit(&self, event: Event) {
        if self.quiet {
            return;
        }
        let score = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "n/a".into());
        let text = match event {
            Event::Notice { message } => format!("swarm: {message}"),
            Event::Started {
                run_id,
                worktree,
                model,
                ..
            } => {
                let mut t = format!("swarm: run {run_id} with {model}");
                if self.verbose > 0 {
                    t.push_str(&format!(" (worktree {})", worktree.display()));
                }
                t
            }
            Event::Audited {
                files,
                tests_passed,
                tests_total,
                no_tests,
                pylint,
            } => {
                let tests = if no_tests {
                    "no tests found".to_string()
                } else {
                    format!("{tests_passed}/{tests_total} tests pass")
                };
                format!(
                    "audit: {files} Python files, {tests}, pylint {}",
                    score(pylint)
                )
            }
            Event::Planned { files } => format!("plan: {} file(s) to work on", files.len()),
            Event::Iteration { number, files } => format!("round {number}: {}", files.join(", ")),
            Event::Rejected { file, reason, .. } => format!("  {file}: rejected — {reason}"),
            Event::NoProposal { file, reason } => {
                format!("  {file}: no usable proposal — {reason}")
            }
            Event::Declined { file } => format!("  {file}: nothing to change, says the model"),
            Event::Judged {
                attempt,
                file,
                verdict,
                tests,
                pylint,
                commit,
            } => format!(
                "  {file}: attempt {attempt} {verdict} — {tests}, pylint {} ({commit})",
                score(pylint)
            ),
            Event::ModelProgress {
                call,
                model,
                tokens,
                tokens_per_second,
                done,
            } => {
                let text = progress_text(call, &model, tokens, tokens_per_second);
                self.progress((!done).then_some(text.as_str()));
                return;
            }
            Event::ModelRetry {
                call,
                attempt,
                reason,
                wait_ms,
                ..
            } => retry_text(call, attempt, &reason, wait_ms),
        };
        self.line(&text);
    }
}

/// The progress line of a streaming reply.
fn progress_text(call: u64, model: &str, tokens: u64, tokens_per_second: f64) -> String {
    format!(
        "  model call {call} ({model}): {tokens} tokens so far, {tokens_per_second:.1} tokens/s"
    )
}

/// The line saying a model request goes out again, and why.
fn retry_text(call: u64, attempt: u32, reason: &str, wait_ms: u64) -> String {
    let when = if wait_ms == 0 {
        "now".to_string()
    } else {
        format!("in {:.1} s", wait_ms as f64 / 1000.0)
    };
    format!("  model call {call}: asking again {when} (request {attempt}) — {reason}")
}

/// The summary's first line: the status, and why the run stopped unless
/// the status says it already (`swarm interrupted`, not `swarm
/// interrupted (interrupted)`).
fn headline(status: &str, stop: StopReason, check_failed: bool) -> String {
    let said = status.replace('_', " ");
    match (status, stop) {
        _ if check_failed => format!("swarm {said} ({})", stop_reason(stop, check_failed)),
        ("success", StopReason::Green) | ("interrupted", StopReason::Interrupted) => {
            format!("swarm {said}")
        }
        ("model_failure", StopReason::ModelFailure) => {
            "swarm stopped: the model gave no usable answer (see the notes above)".to_string()
        }
        _ => format!("swarm {said} ({})", stop_reason(stop, check_failed)),
    }
}

/// Why the run stopped, as the summary's first line says it.
fn stop_reason(stop: StopReason, check_failed: bool) -> &'static str {
    match stop {
        _ if check_failed => "the final check with the base commit's tests failed",
        StopReason::Green => "done",
        StopReason::IterationLimit => "iteration limit reached",
        StopReason::NoProgress => "no progress in three rounds",
        StopReason::ModelFailure => "no usable answer from the model; see the notes above",
        StopReason::Budget => "token or cost budget reached",
        StopReason::Interrupted => "interrupted",
    }
}

/// The run branch and how to inspect it, or why there is none.
fn branch_line(s: &Summary) -> String {
    if s.branch.is_empty() {
        format!(
            "  branch:   none: nothing was accepted, so no run branch is kept (the attempts: {})",
            s.inspect
        )
    } else {
        format!("  branch:   {}  (inspect: {})", s.branch, s.inspect)
    }
}

/// What happened to the user's branch.
fn delivery_line(s: &Summary) -> String {
    match &s.delivery {
        Delivery::Updated { branch, commit, undo } => format!(
            "  target:   {branch} fast-forwarded to {}\n  undo:     {undo}",
            &commit[..commit.len().min(10)]
        ),
        Delivery::Failed { reason, command } => {
            format!("  target:   DELIVERY FAILED — {reason}; next: {command}")
        }
        Delivery::Unchanged => "  target:   unchanged (nothing to apply)".into(),
        Delivery::Left { reason, command } => format!("  target:   not updated — {reason}; take it with: {command}"),
        Delivery::NotAccepted if s.branch.is_empty() => {
            "  target:   not updated — no state with all tests passing was reached".into()
        }
        Delivery::NotAccepted => {
            "  target:   not updated — no state with all tests passing was reached; partial work is on the branch".into()
        }
}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headline_never_says_the_same_thing_twice() {
        assert_eq!(
            headline("model_failure", StopReason::ModelFailure, false),
            "swarm stopped: the model gave no usable answer (see the notes above)"
        );
        assert_eq!(
            headline("interrupted", StopReason::Interrupted, false),
            "swarm interrupted"
        );
        assert_eq!(
            headline("success", StopReason::Green, false),
            "swarm success"
        );
        assert_eq!(
            headline("gave_up", StopReason::IterationLimit, false),
            "swarm gave up (iteration limit reached)"
        );
        assert_eq!(
            headline("gave_up", StopReason::Green, true),
            "swarm gave up (the final check with the base commit's tests failed)"
        );
    }

    #[test]
    fn progress_and_retries_read_plainly() {
        assert_eq!(
            progress_text(3, "qwen2.5-coder", 812, 26.14),
            "  model call 3 (qwen2.5-coder): 812 tokens so far, 26.1 tokens/s"
        );
        assert_eq!(
            retry_text(3, 2, "no data for 120 s (--llm-timeout)", 1250),
            "  model call 3: asking again in 1.2 s (request 2) — no data for 120 s (--llm-timeout)"
        );
        assert!(retry_text(1, 2, "refused", 0).contains("asking again now"));
    }
}
