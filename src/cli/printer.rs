//! Renders events and the summary for people, on stderr, through the
//! progress display (see `progress`): steps and streaming replies as
//! spinners on a terminal, plain lines elsewhere, nothing but the summary
//! and errors with `-q`.

use std::sync::Arc;

use super::progress::{self, Display, Key, Mode};
use crate::log::{Event, EventSink};
use crate::orchestrator::{Delivery, StopReason, Summary};

/// Writes progress to stderr unless quiet. Clones share the display.
#[derive(Clone)]
pub struct Printer {
    quiet: bool,
    verbose: u8,
    display: Arc<Display>,
}

impl Printer {
    /// A printer for this process's stderr.
    pub fn new(quiet: bool, verbose: u8) -> Self {
        Self::with_mode(quiet, verbose, Mode::of_stderr())
    }

    /// A printer in the given display mode.
    pub fn with_mode(quiet: bool, verbose: u8, mode: Mode) -> Self {
        Self {
            quiet,
            verbose,
            display: Display::new(mode),
        }
    }

    /// The display, for the tracing writer.
    pub fn display(&self) -> Arc<Display> {
        Arc::clone(&self.display)
    }

    fn line(&self, text: &str) {
        self.display.line(text);
    }

    /// The final summary (always shown, even with -q).
    pub fn summary(&self, s: &Summary) {
        let score = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "n/a".into());
        let tests = tests_line(s);
        let mut out = vec![
            String::new(),
            format!("{} — run {}", first_line(s), s.run_id),
            format!("  tests:    {tests}"),
            format!(
                "  {:<9} {} -> {}",
                format!("{}:", s.linter),
                score(s.lint_before),
                score(s.lint_after)
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
            format!(
                "  time:     {:.1} s, the Judge (tests and {}) {:.1} s of it ({:.0}%)",
                s.time.seconds,
                s.linter,
                s.time.judge_seconds,
                s.time.judge_percent()
            ),
            branch_line(s),
        ];
        out.extend(verification_lines(s));
        for left in &s.left_out {
            out.push(format!(
                "  left out: {} of attempt {}: {}",
                left.hunk, left.attempt, left.why
            ));
        }
        out.extend(reply_lines(s));
        out.extend(task_lines(s));
        out.extend(fitted_lines(s));
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
        if s.secrets.withheld > 0 || s.secrets.allowed {
            out.push(format!("  secrets:  {}", s.secrets.describe()));
        }
        out.push(format!("  log:      {}", s.log_file));
        self.line(&out.join("\n"));
    }
}

/// The summary's tests line: before and after, or what stood in for tests.
fn tests_line(s: &Summary) -> String {
    if s.verified_by_tests || s.tests_before.total > 0 {
        format!(
            "{}/{} passed -> {}/{} passed",
            s.tests_before.passed, s.tests_before.total, s.tests_after.passed, s.tests_after.total
        )
    } else {
        format!(
            "no tests: result NOT verified by tests (checked: every file compiles and imports, {} not lower)",
            s.linter
        )
    }
}

/// The summary's first line: [`headline`], or what a success verified by
/// compiling and importing alone lacked.
fn first_line(s: &Summary) -> String {
    if s.status == "success_unverified" {
        return format!(
            "swarm success, compiles and imports only ({} did not compile and no reference could \
             be made to compare its behaviour with)",
            s.no_reference.join(", ")
        );
    }
    headline(
        s.status,
        s.stop_reason,
        s.final_check.as_ref().is_some_and(|c| !c.passed),
    )
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

/// One line per task of the instruction (`--task`) with its status.
fn task_lines(s: &Summary) -> Vec<String> {
    use crate::pipeline::TaskStatus;
    let Some(report) = &s.tasks else {
        return Vec::new();
    };
    let total = report.tasks.len();
    let mut lines = Vec::new();
    if let Some(why) = &report.fallback {
        lines.push(format!("  plan:     one task over the named files ({why})"));
    }
    for t in &report.tasks {
        let status = match &t.status {
            TaskStatus::Done {
                commits,
                tests_changed,
                test_changes,
            } => {
                let listed = if test_changes.is_empty() {
                    tests_changed
                } else {
                    test_changes
                };
                let tests = if listed.is_empty() {
                    String::new()
                } else {
                    format!("; tests changed: {}", listed.join(", "))
                };
                format!("done ({} commit(s){tests})", commits.len())
            }
            TaskStatus::Skipped { reason } => format!("skipped: {reason}"),
            TaskStatus::NotReached => "not reached".to_string(),
            TaskStatus::Pending => "pending".to_string(),
        };
        lines.push(format!(
            "  task {}/{total}: {} — {status}",
            t.task.number, t.task.title
        ));
        for mention in &t.mentions {
            lines.push(format!("            old path still named at {mention}"));
        }
    }
    lines
}

impl EventSink for Printer {
    fn emit(&self, event: Event) {
        if self.quiet {
            return;
        }
        let text = match event {
            Event::ModelProgress { .. }
            | Event::ModelRepeated { .. }
            | Event::ModelRetry { .. }
            | Event::StepStarted { .. }
            | Event::StepDone { .. } => self.progress_line(event),
            other => self.run_line(other),
        };
        if let Some(text) = text {
            self.line(&text);
        }
    }
}

impl Printer {
    /// The line of an event about the run's work (the audit, the plan, a
    /// round, a verdict).
    fn run_line(&self, event: Event) -> Option<String> {
        let score = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "n/a".into());
        Some(match event {
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
                language,
                linter,
                tests_passed,
                tests_total,
                no_tests,
                lint_score: pylint,
            } => {
                let tests = if no_tests {
                    "no tests found".to_string()
                } else {
                    format!("{tests_passed}/{tests_total} tests pass")
                };
                format!(
                    "audit: {files} {language} files, {tests}, {linter} {}",
                    score(pylint)
                )
            }
            Event::Planned { files } => format!("plan: {} file(s) to work on", files.len()),
            Event::Iteration { number, files } => format!("round {number}: {}", files.join(", ")),
            Event::Task {
                number,
                total,
                title,
                status,
                detail,
            } => {
                let detail = if detail.is_empty() {
                    String::new()
                } else {
                    format!(" — {detail}")
                };
                format!("task {number}/{total} {title}: {status}{detail}")
            }
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
                lint_score: pylint,
                linter,
                commit,
            } => format!(
                "  {file}: attempt {attempt} {verdict} — {tests}, {linter} {} ({commit})",
                score(pylint)
            ),
            Event::ModelProgress { .. }
            | Event::ModelRepeated { .. }
            | Event::ModelRetry { .. }
            | Event::StepStarted { .. }
            | Event::StepDone { .. } => return None,
        })
    }

    /// What an event about work under way shows: a live line that updates
    /// in place (then nothing is printed), or a line of its own.
    fn progress_line(&self, event: Event) -> Option<String> {
        Some(match event {
            Event::ModelProgress {
                call,
                model,
                tokens,
                tokens_per_second,
                done,
            } => {
                if done {
                    self.display.clear(Key::Stream(call));
                } else {
                    let text = progress_text(call, &model, tokens, tokens_per_second);
                    self.display.show(Key::Stream(call), &text);
                }
                return None;
            }
            Event::ModelRepeated {
                call,
                model,
                tokens,
            } => format!(
                "  model call {call} ({model}): {}",
                crate::pipeline::ReplyProblem::Repeated { tokens }
            ),
            Event::ModelRetry {
                call,
                attempt,
                of,
                reason,
                wait_ms,
                ..
            } => retry_text(call, attempt, of, &reason, wait_ms),
            Event::StepStarted { step, what } => {
                if self.display.mode().live {
                    self.display.show(Key::Step(step), &what);
                    return None;
                }
                format!("{what} ...")
            }
            Event::StepDone {
                step,
                what,
                elapsed_ms,
            } => {
                if self.display.mode().live {
                    self.display.clear(Key::Step(step));
                    if self.verbose == 0 {
                        return None;
                    }
                }
                format!("{what}: done in {}", progress::seconds(elapsed_ms))
            }
            _ => return None,
        })
    }
}

/// The progress line of a streaming reply.
fn progress_text(call: u64, model: &str, tokens: u64, tokens_per_second: f64) -> String {
    format!(
        "  model call {call} ({model}): {tokens} tokens so far, {tokens_per_second:.1} tokens/s"
    )
}

/// The line saying a model request goes out again, when, and why:
/// `attempt` is the request about to go out, of `of` in all.
fn retry_text(call: u64, attempt: u32, of: u32, reason: &str, wait_ms: u64) -> String {
    let when = if wait_ms == 0 {
        "now".to_string()
    } else {
        format!("in {}", progress::seconds(wait_ms))
    };
    let retries = of.saturating_sub(1).max(attempt.saturating_sub(1));
    format!(
        "  model call {call}: retry {}/{retries} {when}: {reason}",
        attempt.saturating_sub(1)
    )
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
    if check_failed {
        return "the final check with the base commit's tests failed";
    }
    stop.describe()
}

/// The attempts fitted to the visible tests: overfitted (held-out tests
/// failed) or answering their inputs with literals. None was delivered.
fn fitted_lines(s: &Summary) -> Vec<String> {
    let overfitted = s.overfitted.iter().map(|o| {
        format!(
            "  held-out: attempt {} ({}) was overfitted to {}: it passes them but fails \
             held-out test(s) {}; not delivered",
            o.attempt,
            o.file,
            o.overfitted_to.join(", "),
            o.failed.join(", ")
        )
    });
    let hard_coded = s
        .hard_coded
        .iter()
        .map(|h| format!("  hard-coded: attempt {}: {}", h.attempt, h.describe()));
    overfitted.chain(hard_coded).collect()
}

/// The run branch and how to inspect it, or why there is none.
/// The forms of the Fixer's replies, the ones not used and why, and what
/// would help.
fn reply_lines(s: &Summary) -> Vec<String> {
    let r = &s.replies;
    let unguarded = s.unguarded.iter().map(|file| {
        format!(
            "  held-out: no held-out test guarded the change to {file} (the model wrote none \
             that held): only the visible tests checked it"
        )
    });
    if r.diff + r.whole_file == 0 && r.unusable.is_empty() {
        return unguarded.collect();
    }
    let mut out = vec![format!(
        "  replies:  {} diff, {} whole file; {} could not be used",
        r.diff,
        r.whole_file,
        r.unusable.len()
    )];
    out.extend(
        r.unusable
            .iter()
            .take(5)
            .map(|u| format!("    not used: {u}")),
    );
    if let Some(advice) = r.advice() {
        out.push(format!("    {advice}"));
    }
    out.extend(unguarded);
    out
}

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
            "  target:   {branch} fast-forwarded to {}\n  undo:     swarm undo {}  (or: {undo})",
            &commit[..commit.len().min(10)],
            s.run_id
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
            retry_text(3, 2, 4, "no data for 120 s (--llm-timeout)", 1250),
            "  model call 3: retry 1/3 in 1.2 s: no data for 120 s (--llm-timeout)"
        );
        assert_eq!(
            retry_text(1, 3, 5, "HTTP 503: busy", 4000),
            "  model call 1: retry 2/4 in 4.0 s: HTTP 503: busy"
        );
        assert!(retry_text(1, 2, 4, "refused", 0).contains("retry 1/3 now"));
    }
}
