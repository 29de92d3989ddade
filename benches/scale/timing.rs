//! Where a run's time went, read from its experiment log: the wall time of
//! each stage (`run_end`'s `stage_seconds`), the time pytest, pylint and
//! the model took in it, and what is left, swarm's own overhead; and the
//! steps of each attempt (the Executor's `commit` entries' `seconds`).
//!
//! Tool time of one measurement is the longer of pytest and pylint, which
//! run side by side, plus the full suite when it ran after a first pass
//! over the failing tests (`first_pass_seconds`); a measurement served from
//! the baseline cache ran no tool. pylint's time is its whole lint, cache
//! look-up included. Model time is each call's `elapsed_ms`.

use serde_json::Value;

/// The stages of `stage_seconds`, in run order.
pub const STAGES: [&str; 6] = [
    "setup",
    "audit",
    "plan",
    "rounds",
    "final_check",
    "delivery",
];

/// One stage's wall time and what of it was not swarm's.
#[derive(Clone, Copy, Debug, Default)]
pub struct StageTime {
    pub wall: f64,
    pub tools: f64,
    pub model: f64,
}

impl StageTime {
    /// swarm's own time: the wall time neither a tool nor the model took.
    pub fn own(&self) -> f64 {
        (self.wall - self.tools - self.model).max(0.0)
    }
}

/// The steps of one attempt, seconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct AttemptTime {
    pub review: f64,
    pub apply: f64,
    pub judge: f64,
    pub commit: f64,
    pub worktree: f64,
}

impl AttemptTime {
    /// Worktree update, apply, commit and the Judge: what an attempt costs
    /// once the model has answered.
    pub fn cost(&self) -> f64 {
        self.apply + self.judge + self.commit + self.worktree
    }
}

/// What the log says about a run's time.
#[derive(Clone, Debug, Default)]
pub struct RunTime {
    /// The run's own wall time (`run_end`'s `seconds`).
    pub run: f64,
    /// By stage, in [`STAGES`] order.
    pub stages: [StageTime; 6],
    pub attempts: Vec<AttemptTime>,
}

impl RunTime {
    /// Reads `entries` (one run's experiment log); `None` without a
    /// `run_end` entry that has the timings.
    pub fn from_log(entries: &[Value]) -> Option<Self> {
        let end = entries
            .iter()
            .rev()
            .find(|e| e["details"]["kind"] == "run_end")?;
        let mut time = RunTime {
            run: end["details"]["seconds"].as_f64()?,
            ..RunTime::default()
        };
        for (i, name) in STAGES.iter().enumerate() {
            time.stages[i].wall = end["details"]["stage_seconds"][name].as_f64()?;
        }
        let mut pending: Option<(usize, f64, f64)> = None;
        for entry in entries {
            let details = &entry["details"];
            let number = |key: &str| details[key].as_f64().unwrap_or(0.0);
            match (details["kind"].as_str(), details["tool"].as_str()) {
                (Some("llm_call"), _) => {
                    let stage = if entry["agent"] == "Fixer" {
                        "rounds"
                    } else {
                        "plan"
                    };
                    time.stages[index(stage)].model += number("elapsed_ms") / 1000.0;
                }
                (Some("tool"), Some("pytest")) => {
                    let stage = index(stage_of(entry));
                    if details["cached"] == true {
                        pending = None;
                        continue;
                    }
                    // (stage, first part beside pylint, part after it)
                    pending = Some(match details["first_pass_seconds"].as_f64() {
                        Some(first) => (stage, first, number("seconds")),
                        None => (stage, number("seconds"), 0.0),
                    });
                }
                (Some("tool"), Some("pylint")) => {
                    if let Some((stage, beside, after)) = pending.take() {
                        time.stages[stage].tools += beside.max(number("seconds")) + after;
                    }
                }
                (Some("commit"), _) => {
                    let s = &details["seconds"];
                    let of = |key: &str| s[key].as_f64().unwrap_or(0.0);
                    time.attempts.push(AttemptTime {
                        review: of("review"),
                        apply: of("apply"),
                        judge: of("judge"),
                        commit: of("commit"),
                        worktree: of("worktree"),
                    });
                }
                _ => {}
            }
        }
        Some(time)
    }

    /// The time the tools and the model took, all stages.
    pub fn outside(&self) -> f64 {
        self.stages.iter().map(|s| s.tools + s.model).sum()
    }
}

/// The stage a tool entry belongs to.
fn stage_of(entry: &Value) -> &'static str {
    match (
        entry["agent"].as_str(),
        entry["details"]["attempt"].is_null(),
    ) {
        (Some("Auditor"), _) => "audit",
        (_, false) => "rounds",
        _ => "final_check",
    }
}

fn index(stage: &str) -> usize {
    STAGES
        .iter()
        .position(|s| *s == stage)
        .expect("a known stage")
}

/// The median of `values` (the mean of the middle two for an even count);
/// 0 when there are none.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}
