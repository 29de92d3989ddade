//! Where a run's wall time goes, for the experiment log: a clock charged
//! to one stage at a time (setup, audit, plan, rounds, final check,
//! delivery), and the steps of one attempt. It only measures; what the
//! figures mean (tool and model time against swarm's own) is worked out
//! from the log by whoever reads it, as `benches/scale.rs` does.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::log::AttemptSeconds;

/// A part of the run whose wall time the run-end entry reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// From the start of the run to the audit: repository, lock, log,
    /// preflight, tool environment, worktree, sandbox probe.
    Setup,
    Audit,
    /// Every plan batch, the first and any later one.
    Plan,
    /// The Fixer→Reviewer→Executor→Judge rounds, plan batches left out.
    Rounds,
    FinalCheck,
    /// The worktree put aside (kept as the spare, or removed), the
    /// fast-forward and the summary.
    Delivery,
}

impl Stage {
    const ALL: [Stage; 6] = [
        Stage::Setup,
        Stage::Audit,
        Stage::Plan,
        Stage::Rounds,
        Stage::FinalCheck,
        Stage::Delivery,
    ];

    /// The name in the log's `stage_seconds`.
    fn name(self) -> &'static str {
        match self {
            Stage::Setup => "setup",
            Stage::Audit => "audit",
            Stage::Plan => "plan",
            Stage::Rounds => "rounds",
            Stage::FinalCheck => "final_check",
            Stage::Delivery => "delivery",
        }
    }

    fn index(self) -> usize {
        Stage::ALL
            .iter()
            .position(|s| *s == self)
            .expect("every stage is in ALL")
    }
}

/// The run's wall time, charged to the stage it is in: every moment since
/// the clock started belongs to exactly one stage.
#[derive(Debug)]
pub(crate) struct StageClock {
    started: Instant,
    current: Stage,
    since: Instant,
    spent: [Duration; 6],
    /// The Judge's measurements outside the audit and the final check
    /// (each attempt's, the Tester's validation).
    judged: Duration,
}

impl StageClock {
    /// A clock in [`Stage::Setup`] from now.
    pub fn start() -> Self {
        let now = Instant::now();
        Self {
            started: now,
            current: Stage::Setup,
            since: now,
            spent: [Duration::ZERO; 6],
            judged: Duration::ZERO,
        }
    }

    /// Counts `spent` as the Judge's (an attempt's measurement, the
    /// Tester's validation runs).
    pub fn charge_judge(&mut self, spent: Duration) {
        self.judged += spent;
    }

    /// The run's wall time so far and the Judge's share of it: the audit
    /// (the baseline), every attempt's measurement, the Tester's
    /// validation and the final check, in seconds.
    pub fn judge_share(&self) -> (f64, f64) {
        let mut spent = self.spent;
        spent[self.current.index()] += self.since.elapsed();
        let judge = spent[Stage::Audit.index()] + spent[Stage::FinalCheck.index()] + self.judged;
        (millis(self.started.elapsed()), millis(judge))
    }

    /// Charges the time since the last switch to the current stage and
    /// moves to `stage`; returns the stage it was in (to go back to).
    pub fn enter(&mut self, stage: Stage) -> Stage {
        let now = Instant::now();
        self.spent[self.current.index()] += now - self.since;
        self.since = now;
        std::mem::replace(&mut self.current, stage)
    }

    /// `{"setup": 0.41, "audit": 3.2, …}` (seconds, to the millisecond)
    /// and the total since the start, as of now.
    pub fn report(&self) -> (BTreeMap<String, f64>, f64) {
        let mut spent = self.spent;
        spent[self.current.index()] += self.since.elapsed();
        let stages = Stage::ALL
            .iter()
            .map(|s| (s.name().to_string(), millis(spent[s.index()])))
            .collect();
        (stages, millis(self.started.elapsed()))
    }
}

/// The steps of one attempt, as the Executor's commit entry reports them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AttemptTimes {
    /// The Reviewer's rules.
    pub review: Duration,
    /// The change written into the worktree.
    pub apply: Duration,
    /// The Judge's measurement (pytest and pylint with swarm's work around them).
    pub judge: Duration,
    /// The attempt's commit, built from blobs, and the run branch moved.
    pub commit: Duration,
    /// The worktree put back at the best state (checkout and clean).
    pub worktree: Duration,
}

impl AttemptTimes {
    /// Each step in seconds, to the millisecond.
    pub fn seconds(self) -> AttemptSeconds {
        AttemptSeconds {
            review: millis(self.review),
            apply: millis(self.apply),
            judge: millis(self.judge),
            commit: millis(self.commit),
            worktree: millis(self.worktree),
        }
    }
}

/// Seconds, rounded to the millisecond.
fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_moment_is_charged_to_one_stage() {
        let mut clock = StageClock::start();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(clock.enter(Stage::Audit), Stage::Setup);
        std::thread::sleep(Duration::from_millis(30));
        let back = clock.enter(Stage::Plan);
        std::thread::sleep(Duration::from_millis(10));
        clock.enter(back);
        let (stages, total) = clock.report();
        let of = |name: &str| stages[name];
        assert!(of("setup") >= 0.02, "{stages:?}");
        assert!(of("audit") >= 0.03, "{stages:?}");
        assert!(of("plan") >= 0.01, "{stages:?}");
        assert_eq!(of("rounds"), 0.0);
        assert_eq!(of("delivery"), 0.0);
        let sum: f64 = Stage::ALL.iter().map(|s| of(s.name())).sum();
        assert!((sum - total).abs() < 0.005, "{sum} vs {total}");
    }

    #[test]
    fn the_judge_s_share_is_the_audit_the_final_check_and_what_was_charged() {
        let mut clock = StageClock::start();
        clock.enter(Stage::Audit);
        std::thread::sleep(Duration::from_millis(20));
        clock.enter(Stage::Rounds);
        clock.charge_judge(Duration::from_millis(500));
        let (total, judge) = clock.judge_share();
        assert!((0.52..0.6).contains(&judge), "{judge}");
        assert!(total >= 0.02 && total < judge, "{total}");
    }

    #[test]
    fn attempt_times_read_as_seconds() {
        let times = AttemptTimes {
            judge: Duration::from_millis(1500),
            worktree: Duration::from_micros(12_345),
            ..AttemptTimes::default()
        };
        let seconds = times.seconds();
        assert_eq!(seconds.judge, 1.5);
        assert_eq!(seconds.worktree, 0.012);
        assert_eq!(seconds.apply, 0.0);
    }
}
