//! The Judge's decision on an attempt ([`Verdict`]) and the behaviour
//! check's finding ([`BehaviourOutcome`]), as values. How they are reached
//! is [`super::bar`]'s.

/// The Judge's decision on an attempt, relative to the best state so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Better than best, and acceptable as a final result.
    Green,
    /// Better than best.
    Improved,
    /// Neither better nor worse.
    Same,
    /// A task's change that keeps everything the best state had (tests,
    /// error-class lint, public names and their behaviour) without being
    /// green: what a refactoring asks for (see `Bar::task_verdict`).
    Kept,
    /// Worse than best: a passing test now fails, a check broke, or tests hung.
    Regressed,
    /// Not better than best, known without the full suite (the Judge
    /// stopped early, see [`early`]); whether it is also worse was not
    /// measured.
    #[serde(rename = "not-improved")]
    NotImproved,
}

impl Verdict {
    /// Whether the run branch moves to the attempt.
    pub fn is_accepted(self) -> bool {
        matches!(self, Verdict::Green | Verdict::Improved | Verdict::Kept)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Green => "green",
            Verdict::Improved => "improved",
            Verdict::Same => "same",
            Verdict::Kept => "kept",
            Verdict::Regressed => "regressed",
            Verdict::NotImproved => "not-improved",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The behaviour check's overall finding (see `stage::judge::behaviour`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BehaviourOutcome {
    /// Every compared call gave the same result.
    Same,
    /// At least one call differs: the change is a regression.
    Regressed,
    /// Nothing could be compared (see the files' reasons).
    NotChecked,
}

impl BehaviourOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            BehaviourOutcome::Same => "same",
            BehaviourOutcome::Regressed => "regressed",
            BehaviourOutcome::NotChecked => "not_checked",
        }
    }
}
