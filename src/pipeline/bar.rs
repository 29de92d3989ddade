//! What the Judge calls green and better, in one place: the [`Bar`] a run's
//! states are held to (fixed by its baseline), the [`Verdict`] on an attempt
//! against the best state so far (tests first, then checks, then pylint's
//! score, with half a hundredth of slack either way), and how the behaviour
//! check's finding bears on it, and on an attempt the Judge stopped early
//! ([`early_stop`]); for a task of refactoring on request, what
//! a change must keep ([`Bar::task_verdict`]). Every caller — the rounds, the behaviour
//! check, the final check, the summary — asks here.
//!
//! An improvement is an improvement: when the tests (or checks) tie, pylint
//! alone makes a state better only when its score rose by at least
//! [`MEANINGFUL_PYLINT_GAIN`] *and* pylint found less to say (its weighted
//! messages, as its score counts them, went down). Added junk — a
//! duplicated assignment, dead code — raises the score only by adding
//! statements, never by removing a message, so it is never an improvement.

use super::measure::{LintKind, LintMessage, LintReport};
use super::state::{Snapshot, TestState};
use super::verdict::{BehaviourOutcome, Verdict};

/// The least rise of pylint's score that makes a state better when the
/// tests tie: five hundredths of a point.
pub const MEANINGFUL_PYLINT_GAIN: f64 = 0.05;

/// pylint's score dropped by more than the slack (or vanished).
fn pylint_lower(new: Option<f64>, old: Option<f64>) -> bool {
    match (new, old) {
        (Some(n), Some(o)) => n + 0.005 < o,
        (None, Some(_)) => true,
        _ => false,
    }
}

/// pylint's score rose by more than the slack (or appeared).
fn pylint_higher(new: Option<f64>, old: Option<f64>) -> bool {
    match (new, old) {
        (Some(n), Some(o)) => n > o + 0.005,
        (Some(_), None) => true,
        _ => false,
    }
}

/// The verdict on an attempt measured on the best state's failing tests
/// alone, every one still failing and no test new (the Judge's early
/// stop): `None` while a higher lint score could still make it better (the
/// full suite must decide); else [`Verdict::Regressed`] when the score
/// dropped (certain without the tests) and [`Verdict::NotImproved`]
/// otherwise, since whether a passing test broke was not measured.
pub fn early_stop(best: &Snapshot, lint_score: Option<f64>) -> Option<Verdict> {
    if pylint_higher(lint_score, best.lint_score) {
        return None;
    }
    Some(stopped_verdict(best, lint_score))
}

/// The verdict on an attempt stopped early with `lint_score`.
fn stopped_verdict(best: &Snapshot, lint_score: Option<f64>) -> Verdict {
    if pylint_lower(lint_score, best.lint_score) {
        Verdict::Regressed
    } else {
        Verdict::NotImproved
    }
}

/// What pylint's score counts against the code: 5 per error or fatal
/// message, 1 per warning, refactor, convention (or unknown kind), 0 per
/// informational one.
fn lint_penalty(report: &LintReport) -> usize {
    report
        .messages
        .iter()
        .map(|m| match m.kind {
            LintKind::Error | LintKind::Fatal => 5,
            LintKind::Info => 0,
            LintKind::Warning | LintKind::Refactor | LintKind::Convention | LintKind::Other => 1,
        })
        .sum()
}

/// pylint alone makes `new` better than `best`: a score that appeared, or
/// one that rose by at least [`MEANINGFUL_PYLINT_GAIN`] with less for
/// pylint to say (not a score raised by added statements alone).
fn pylint_improved(best: &Snapshot, new: &Snapshot) -> bool {
    match (new.lint_score, best.lint_score) {
        (Some(_), None) => true,
        (Some(n), Some(o)) => {
            n >= o + MEANINGFUL_PYLINT_GAIN - 1e-9
                && lint_penalty(&new.lint) < lint_penalty(&best.lint)
        }
        _ => false,
    }
}

/// What a run's states are held to, fixed by its baseline: when a state is
/// green (acceptable as a final result) and how an attempt compares with
/// the best state so far. Made once from the baseline; every question of
/// "green" and "better" in a run goes through it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bar {
    /// The baseline's pylint score: without tests, a green state may not
    /// fall below it.
    baseline_pylint: Option<f64>,
}

impl Bar {
    /// The bar of a run whose baseline is `baseline`.
    pub fn of(baseline: &Snapshot) -> Self {
        Self {
            baseline_pylint: baseline.lint_score,
        }
    }

    /// The state is acceptable as a final result: every test passes, or —
    /// without tests — everything compiles and imports and pylint did not
    /// drop below the baseline's score.
    pub fn is_green(&self, state: &Snapshot) -> bool {
        match (&state.tests, &state.checks) {
            (Some(t), _) => t.all_pass(),
            (None, Some(c)) => {
                c.problems.is_empty() && !pylint_lower(state.lint_score, self.baseline_pylint)
            }
            (None, None) => false,
        }
    }

    /// Compares an attempt's state with the best state so far.
    ///
    /// A snapshot the Judge stopped early on (see `stage::judge::early`) is
    /// never accepted: [`Verdict::Regressed`] when pylint dropped, else
    /// [`Verdict::NotImproved`].
    pub fn verdict(&self, best: &Snapshot, new: &Snapshot) -> Verdict {
        if new.tests.as_ref().is_some_and(|t| t.stopped_early) {
            return stopped_verdict(best, new.lint_score);
        }
        let (regressed, gained) = tests_or_checks(best, new);
        if regressed || !added_type_errors(&best.lint.messages, &new.lint.messages).is_empty() {
            return Verdict::Regressed;
        }
        let improved = if gained {
            true
        } else if pylint_lower(new.lint_score, best.lint_score) {
            return Verdict::Regressed;
        } else {
            pylint_improved(best, new)
        };
        match (improved, self.is_green(new)) {
            (true, true) => Verdict::Green,
            (true, false) => Verdict::Improved,
            (false, _) => Verdict::Same,
        }
    }

    /// The verdict once the behaviour check has spoken: a change whose
    /// compared calls give other results than before is a regression,
    /// whatever the tests said.
    pub fn after_behaviour(&self, verdict: Verdict, outcome: BehaviourOutcome) -> Verdict {
        match outcome {
            BehaviourOutcome::Regressed => Verdict::Regressed,
            BehaviourOutcome::Same | BehaviourOutcome::NotChecked => verdict,
        }
    }
}

impl Bar {
    /// The verdict on a task's change (`--task`): nothing the best state
    /// had is lost — no test that passed fails (as in [`Bar::verdict`]),
    /// and pylint's error-class messages ([`risen_errors`]) do not rise
    /// anywhere in the target, so a caller left pointing at a moved name
    /// is caught even when no test reaches it. A refactoring need not
    /// raise anything: a change that keeps everything is
    /// [`Verdict::Kept`] ([`Verdict::Green`] when the state is green).
    /// The public-name check then speaks through [`Bar::after_behaviour`].
    pub fn task_verdict(&self, best: &Snapshot, new: &Snapshot) -> Verdict {
        self.task_verdict_rewriting(best, new, &[])
    }

    /// [`Bar::task_verdict`] for a task that changes the test files
    /// `rewritten` (with `--allow-test-edits`): a test of those files that
    /// the change removed or renamed (it is gone, neither passing nor
    /// failing) is not lost — the task is judged by the tests as it leaves
    /// them, and by every other test unchanged. A test of those files that
    /// still runs and now fails is lost as any other.
    pub fn task_verdict_rewriting(
        &self,
        best: &Snapshot,
        new: &Snapshot,
        rewritten: &[String],
    ) -> Verdict {
        let (regressed, _) = tests_or_checks_except(best, new, rewritten);
        if regressed || !risen_errors(best, new).is_empty() {
            return Verdict::Regressed;
        }
        if self.is_green(new) {
            Verdict::Green
        } else {
            Verdict::Kept
        }
    }
}

/// Which bar an attempt is held to: a repair's ([`Bar::verdict`]: better
/// than the best state) or a task's ([`Bar::task_verdict`]: nothing lost).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judging {
    Repair,
    Task,
}

impl Bar {
    /// The verdict on an attempt held to `judging`'s bar.
    pub fn judge(&self, judging: Judging, best: &Snapshot, new: &Snapshot) -> Verdict {
        match judging {
            Judging::Repair => self.verdict(best, new),
            Judging::Task => self.task_verdict(best, new),
        }
    }

    /// The verdict once the held-out tests that apply have run: an
    /// attempt that fails any of them is a regression, whatever the
    /// visible tests said.
    pub fn after_held_out(&self, verdict: Verdict, failed: bool) -> Verdict {
        if failed {
            Verdict::Regressed
        } else {
            verdict
        }
    }

    /// The verdict once the change is found to answer the failing tests'
    /// inputs with literals (see `stage::judge::answers`): no fix, whatever
    /// the tests say.
    pub fn after_literal_answers(&self, verdict: Verdict, found: bool) -> Verdict {
        if found {
            Verdict::Regressed
        } else {
            verdict
        }
    }

    /// Every test ran and passed (a state without tests does not): what
    /// the Tester's generated tests must show before they are committed.
    pub fn all_tests_pass(&self, state: &Snapshot) -> bool {
        state.tests.as_ref().is_some_and(|t| t.all_pass())
    }
}

/// The `message_id` of a lint message that is a type checker's diagnostic
/// (its symbol is the checker's code, `TS2322`): a change that adds one is
/// refused, as a change that does not parse is.
pub const TYPE_ERROR_KIND: &str = "type error";

/// Whether a lint message is a type checker's diagnostic.
pub fn is_type_error(message: &LintMessage) -> bool {
    message.message_id == TYPE_ERROR_KIND
}

/// The type errors of `after` that `before` does not have, compared by
/// file, code and text (not line: an edit above an old error moves it),
/// as many times as they occur.
pub fn added_type_errors<'a>(
    before: &[LintMessage],
    after: &'a [LintMessage],
) -> Vec<&'a LintMessage> {
    let mut known: Vec<(&str, &str, &str)> = before
        .iter()
        .filter(|m| is_type_error(m))
        .map(|m| (m.path.as_str(), m.symbol.as_str(), m.message.as_str()))
        .collect();
    after
        .iter()
        .filter(|m| is_type_error(m))
        .filter(|m| {
            let key = (m.path.as_str(), m.symbol.as_str(), m.message.as_str());
            match known.iter().position(|k| *k == key) {
                Some(i) => {
                    known.swap_remove(i);
                    false
                }
                None => true,
            }
        })
        .collect()
}

/// Whether a pylint message says the code cannot work (import-error,
/// no-name-in-module, no-value-for-parameter, undefined-variable and
/// every other error or fatal message).
pub fn is_error_class(message: &LintMessage) -> bool {
    matches!(message.kind, LintKind::Error | LintKind::Fatal)
}

/// The error-class messages of `new` whose symbol `new` has more often than
/// `best` has, over the whole target (a moved file's messages count under
/// their symbol wherever they now are): those not in `best` at the same
/// path and text.
pub fn risen_errors<'a>(best: &Snapshot, new: &'a Snapshot) -> Vec<&'a LintMessage> {
    let count = |s: &Snapshot, symbol: &str| {
        s.lint
            .messages
            .iter()
            .filter(|m| is_error_class(m) && m.symbol == symbol)
            .count()
    };
    let mut risen: Vec<&LintMessage> = Vec::new();
    for message in new.lint.messages.iter().filter(|m| is_error_class(m)) {
        if count(new, &message.symbol) <= count(best, &message.symbol) {
            continue;
        }
        let known = best.lint.messages.iter().any(|m| {
            m.symbol == message.symbol && m.path == message.path && m.message == message.message
        });
        if !known {
            risen.push(message);
        }
    }
    risen
}

/// Whether the tests (or, without tests, the checks) lost anything, and
/// whether they gained anything, from `best` to `new`.
fn tests_or_checks(best: &Snapshot, new: &Snapshot) -> (bool, bool) {
    tests_or_checks_except(best, new, &[])
}

/// Whether test `id` is in one of the test files `rewritten` and is gone
/// from `new` (neither passed nor failing there): removed or renamed by the
/// change that rewrote its file.
fn rewritten_away(id: &str, new: &TestState, rewritten: &[String]) -> bool {
    let file = id.split("::").next().unwrap_or(id);
    rewritten.iter().any(|f| f == file)
        && !new.passed.contains(id)
        && !new.failing.iter().any(|c| c.id == id)
}

/// [`tests_or_checks`], a test removed or renamed from the test files
/// `rewritten` not counting as lost.
fn tests_or_checks_except(best: &Snapshot, new: &Snapshot, rewritten: &[String]) -> (bool, bool) {
    match (&best.tests, &new.tests, &best.checks, &new.checks) {
        (Some(b), Some(n), _, _) => {
            let lost = b
                .passed
                .difference(&n.passed)
                .any(|id| !rewritten_away(id, n, rewritten));
            let vanished = n
                .vanished
                .difference(&b.vanished)
                .any(|id| !rewritten_away(id, n, rewritten));
            let gained = n.passed.difference(&b.passed).next().is_some();
            (lost || vanished || (n.timed_out && !b.timed_out), gained)
        }
        // Tests vanished (a module no longer imports so nothing is collected).
        (Some(_), None, _, _) => (true, false),
        (None, Some(n), _, _) => (false, !n.passed.is_empty()),
        (None, None, Some(b), Some(n)) => {
            let broke = n
                .problems
                .iter()
                .any(|(p, _)| !b.problems.iter().any(|(q, _)| q == p));
            (broke, n.problems.len() < b.problems.len())
        }
        _ => (false, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::measure::{LintReport, TestCase, TestOutcome, TestRun};
    use crate::pipeline::state::{CheckState, TestState};
    use std::collections::BTreeSet;

    fn bar(baseline_pylint: f64) -> Bar {
        Bar {
            baseline_pylint: Some(baseline_pylint),
        }
    }

    /// A lint report with `n` convention messages.
    fn lint_with(n: usize) -> LintReport {
        LintReport {
            messages: (0..n)
                .map(|i| crate::pipeline::measure::LintMessage {
                    path: "m.py".into(),
                    line: i as u32 + 1,
                    column: 0,
                    kind: LintKind::Convention,
                    symbol: "missing-function-docstring".into(),
                    message_id: "C0116".into(),
                    message: "Missing function or method docstring".into(),
                })
                .collect(),
            ..LintReport::default()
        }
    }

    /// pylint's score for `n` convention messages over 10 statements.
    fn score_of(n: usize) -> f64 {
        10.0 - n as f64
    }

    fn snap(passed: &[&str], failing: &[&str], pylint: f64) -> Snapshot {
        let failing: Vec<TestCase> = failing
            .iter()
            .map(|id| TestCase {
                id: id.to_string(),
                outcome: TestOutcome::Failed,
                message: None,
                details: None,
            })
            .collect();
        Snapshot {
            tests: Some(TestState {
                passed: passed.iter().map(|s| s.to_string()).collect(),
                total: passed.len() + failing.len(),
                failing,
                timed_out: false,
                ..TestState::default()
            }),
            checks: None,
            lint_score: Some(pylint),
            // The messages pylint's score says there are (one per point
            // below 10, over 10 statements).
            lint: lint_with((10.0 - pylint).round().max(0.0) as usize),
        }
    }

    #[test]
    fn a_test_the_task_removed_from_a_file_it_rewrote_is_not_lost() {
        let best = snap(
            &["t.py::test_raises", "t.py::test_mean", "u.py::test_x"],
            &[],
            9.0,
        );
        let rewritten = vec!["t.py".to_string()];
        // Replaced by another test: judged by the tests as the task leaves them.
        let replaced = snap(
            &["t.py::test_zero", "t.py::test_mean", "u.py::test_x"],
            &[],
            9.0,
        );
        assert_eq!(bar(9.0).task_verdict(&best, &replaced), Verdict::Regressed);
        let verdict = bar(9.0).task_verdict_rewriting(&best, &replaced, &rewritten);
        assert!(verdict.is_accepted(), "{verdict:?}");
        // A test of the rewritten file that still runs and fails is lost;
        // so is a test of a file the task did not rewrite.
        let failing = snap(
            &["t.py::test_mean", "u.py::test_x"],
            &["t.py::test_raises"],
            9.0,
        );
        let verdict = bar(9.0).task_verdict_rewriting(&best, &failing, &rewritten);
        assert_eq!(verdict, Verdict::Regressed);
        let other = snap(&["t.py::test_raises", "t.py::test_mean"], &[], 9.0);
        let verdict = bar(9.0).task_verdict_rewriting(&best, &other, &rewritten);
        assert_eq!(verdict, Verdict::Regressed);
    }

    #[test]
    fn an_attempt_is_held_to_its_purpose_bar_and_held_out_tests() {
        let best = snap(&["a", "b"], &["c"], 8.0);
        let kept = snap(&["a", "b"], &["c"], 8.0);
        assert_eq!(bar(8.0).judge(Judging::Repair, &best, &kept), Verdict::Same);
        assert_eq!(bar(8.0).judge(Judging::Task, &best, &kept), Verdict::Kept);
        let green = snap(&["a", "b", "c"], &[], 8.0);
        let verdict = bar(8.0).judge(Judging::Repair, &best, &green);
        assert_eq!(verdict, Verdict::Green);
        assert_eq!(bar(8.0).after_held_out(verdict, false), Verdict::Green);
        assert_eq!(bar(8.0).after_held_out(verdict, true), Verdict::Regressed);
        assert!(bar(8.0).all_tests_pass(&green));
        assert!(!bar(8.0).all_tests_pass(&best));
        let untested = Snapshot {
            tests: None,
            ..green
        };
        assert!(!bar(8.0).all_tests_pass(&untested));
    }

    #[test]
    fn verdicts_follow_the_ratchet() {
        let best = snap(&["a", "b"], &["c", "d"], 5.0);
        assert_eq!(
            bar(5.0).verdict(&best, &snap(&["a", "b", "c"], &["d"], 4.0)),
            Verdict::Improved
        );
        assert_eq!(
            bar(5.0).verdict(&best, &snap(&["a", "b", "c", "d"], &[], 6.0)),
            Verdict::Green
        );
        assert_eq!(
            bar(5.0).verdict(&best, &snap(&["a", "c", "d"], &["b"], 9.0)),
            Verdict::Regressed
        );
        assert_eq!(
            bar(5.0).verdict(&best, &snap(&["a", "b"], &["c", "d"], 5.0)),
            Verdict::Same
        );
        assert_eq!(
            bar(5.0).verdict(&best, &snap(&["a", "b"], &["c", "d"], 6.5)),
            Verdict::Improved
        );
        assert_eq!(
            bar(5.0).verdict(&best, &snap(&["a", "b"], &["c", "d"], 4.5)),
            Verdict::Regressed
        );
    }

    fn type_error(path: &str, line: u32, code: &str, text: &str) -> LintMessage {
        LintMessage {
            path: path.into(),
            line,
            column: 0,
            kind: LintKind::Error,
            symbol: code.into(),
            message_id: TYPE_ERROR_KIND.into(),
            message: text.into(),
        }
    }

    #[test]
    fn only_type_errors_a_change_adds_count() {
        let before = vec![type_error("a.ts", 3, "TS2322", "x")];
        let after = vec![
            type_error("a.ts", 9, "TS2322", "x"),
            type_error("a.ts", 4, "TS2345", "y"),
        ];
        let added = added_type_errors(&before, &after);
        assert_eq!(added.len(), 1);
        assert_eq!(added[0].symbol, "TS2345");
    }

    fn run_of(cases: &[(&str, TestOutcome)]) -> TestRun {
        TestRun {
            cases: cases
                .iter()
                .map(|(id, outcome)| TestCase {
                    id: id.to_string(),
                    outcome: *outcome,
                    message: None,
                    details: None,
                })
                .collect(),
            exit_code: Some(1),
            ..TestRun::default()
        }
    }

    fn state_of(run: &TestRun, baseline: Option<&TestState>) -> Snapshot {
        Snapshot {
            tests: Some(TestState::from_run(run, baseline)),
            checks: None,
            lint_score: Some(5.0),
            lint: LintReport::default(),
        }
    }

    #[test]
    fn a_baseline_test_that_vanishes_is_a_regression_never_green() {
        use TestOutcome::*;
        let base_run = run_of(&[("t::a", Passed), ("t::b", Failed), ("t::c", Skipped)]);
        let baseline = state_of(&base_run, None);
        let reference = baseline.tests.as_ref();

        // The failing test deselected: everything that runs passes, yet it is not green.
        let deselected = state_of(&run_of(&[("t::a", Passed), ("t::c", Skipped)]), reference);
        let tests = deselected.tests.as_ref().unwrap();
        assert_eq!(tests.vanished, BTreeSet::from(["t::b".to_string()]));
        assert!(!tests.all_pass());
        assert_eq!(
            tests.describe(),
            "1/2 passed, 1 baseline test(s) missing, deselected or skipped"
        );
        assert_eq!(bar(5.0).verdict(&baseline, &deselected), Verdict::Regressed);

        // Skipped now where it ran before: the same.
        let skipped = state_of(
            &run_of(&[("t::a", Passed), ("t::b", Skipped), ("t::c", Skipped)]),
            reference,
        );
        assert_eq!(bar(5.0).verdict(&baseline, &skipped), Verdict::Regressed);

        // A test that was skipped at the baseline may stay skipped; the real fix is green.
        let fixed = state_of(
            &run_of(&[("t::a", Passed), ("t::b", Passed), ("t::c", Skipped)]),
            reference,
        );
        assert!(fixed.tests.as_ref().unwrap().vanished.is_empty());
        assert_eq!(bar(5.0).verdict(&baseline, &fixed), Verdict::Green);

        // Tests only ever added are fine; a passing baseline test that vanishes is lost.
        let lost = state_of(&run_of(&[("t::b", Passed), ("t::new", Passed)]), reference);
        assert_eq!(bar(5.0).verdict(&baseline, &lost), Verdict::Regressed);
    }

    #[test]
    fn a_pylint_gain_is_an_improvement_only_when_meaningful_and_not_junk() {
        let with = |lint: LintReport, pylint: f64| Snapshot {
            lint,
            lint_score: Some(pylint),
            ..snap(&["a"], &["b"], pylint)
        };
        let best = with(lint_with(3), 6.90);
        // A duplicated line: one more statement, the same messages.
        assert_eq!(
            bar(6.9).verdict(&best, &with(lint_with(3), 6.91)),
            Verdict::Same
        );
        // Dead code raising the score a whole point, nothing fixed.
        assert_eq!(
            bar(6.9).verdict(&best, &with(lint_with(3), 7.9)),
            Verdict::Same
        );
        // A message fixed, but the score barely moves (a large file).
        assert_eq!(
            bar(6.9).verdict(&best, &with(lint_with(2), 6.92)),
            Verdict::Same
        );
        // A message fixed, and it shows.
        assert_eq!(
            bar(6.9).verdict(&best, &with(lint_with(2), score_of(2))),
            Verdict::Improved
        );
        assert_eq!(
            bar(6.9).verdict(&best, &with(lint_with(3), 6.90 - 0.01)),
            Verdict::Regressed
        );
    }

    #[test]
    fn a_file_that_did_not_collect_and_now_does_is_repaired_not_vanished() {
        use TestOutcome::*;
        let baseline = state_of(
            &run_of(&[
                ("tests/test_a.py", Error),
                ("tests/test_b.py::test_b", Passed),
            ]),
            None,
        );
        let repaired = state_of(
            &run_of(&[
                ("tests/test_a.py::test_x", Passed),
                ("tests/test_b.py::test_b", Passed),
            ]),
            baseline.tests.as_ref(),
        );
        assert!(repaired.tests.as_ref().unwrap().vanished.is_empty());
        assert_eq!(bar(5.0).verdict(&baseline, &repaired), Verdict::Green);
        // A file that collects nothing now has vanished all the same.
        let emptied = state_of(
            &run_of(&[("tests/test_b.py::test_b", Passed)]),
            baseline.tests.as_ref(),
        );
        assert_eq!(bar(5.0).verdict(&baseline, &emptied), Verdict::Regressed);
    }

    #[test]
    fn tests_left_unrun_by_the_time_limit_count_but_never_pass() {
        use TestOutcome::*;
        let base_run = run_of(&[("t::a", Passed), ("t::b", Failed), ("t::c", Passed)]);
        let baseline = state_of(&base_run, None);
        let mut cut_run = run_of(&[("t::a", Passed), ("t::b", Failed), ("t::c", NotRun)]);
        cut_run.timed_out = true;
        let cut = state_of(&cut_run, baseline.tests.as_ref());
        let tests = cut.tests.as_ref().unwrap();
        assert_eq!(tests.not_run, BTreeSet::from(["t::c".to_string()]));
        // Counted once: as not run, not again as vanished.
        assert!(tests.vanished.is_empty());
        assert_eq!(cut.counts(), (1, 3));
        assert_eq!(
            tests.describe(),
            "1/3 passed, 1 not run (the test run hit its time limit)"
        );
        assert!(!tests.all_pass());
        assert_eq!(bar(5.0).verdict(&baseline, &cut), Verdict::Regressed);

        // A baseline cut short is beaten by a run where everything passes.
        let all = state_of(
            &run_of(&[("t::a", Passed), ("t::b", Passed), ("t::c", Passed)]),
            cut.tests.as_ref(),
        );
        assert_eq!(bar(5.0).verdict(&cut, &all), Verdict::Green);
    }

    #[test]
    fn without_tests_checks_decide() {
        let mk = |problems: &[&str], pylint: f64| Snapshot {
            tests: None,
            checks: Some(CheckState {
                problems: problems
                    .iter()
                    .map(|p| (p.to_string(), "x".to_string()))
                    .collect(),
                files: 3,
            }),
            lint_score: Some(pylint),
            lint: LintReport::default(),
        };
        let best = mk(&["a.py", "b.py"], 3.0);
        assert_eq!(
            bar(3.0).verdict(&best, &mk(&["b.py"], 3.5)),
            Verdict::Improved
        );
        assert_eq!(bar(3.0).verdict(&best, &mk(&[], 3.5)), Verdict::Green);
        assert_eq!(
            bar(3.0).verdict(&best, &mk(&["a.py", "c.py"], 3.5)),
            Verdict::Regressed
        );
    }

    fn with_error(mut s: Snapshot, path: &str, symbol: &str) -> Snapshot {
        s.lint.messages.push(LintMessage {
            path: path.into(),
            line: 1,
            column: 0,
            kind: LintKind::Error,
            symbol: symbol.into(),
            message_id: "E0611".into(),
            message: format!("{symbol} in {path}"),
        });
        s
    }

    #[test]
    fn a_task_keeps_tests_and_error_class_lint_and_need_not_improve() {
        let best = snap(&["a", "b"], &["c"], 8.0);
        // Same tests, lower score: a refactoring may cost style points.
        assert_eq!(
            bar(8.0).task_verdict(&best, &snap(&["a", "b"], &["c"], 7.0)),
            Verdict::Kept
        );
        assert_eq!(
            bar(8.0).task_verdict(&best, &snap(&["a"], &["b", "c"], 9.0)),
            Verdict::Regressed
        );
        let green = snap(&["a", "b", "c"], &[], 8.0);
        assert_eq!(bar(8.0).task_verdict(&best, &green), Verdict::Green);
        // A caller left importing a moved name: a new error-class message.
        let broken = with_error(green.clone(), "shop/report.py", "no-name-in-module");
        assert_eq!(bar(8.0).task_verdict(&best, &broken), Verdict::Regressed);
        assert_eq!(risen_errors(&best, &broken).len(), 1);
        // The same error, moved with its file, did not rise.
        let before = with_error(best.clone(), "shop/cart.py", "no-name-in-module");
        let moved = with_error(green, "shop/money.py", "no-name-in-module");
        assert!(risen_errors(&before, &moved).is_empty());
        assert!(Verdict::Kept.is_accepted());
    }
}
