//! The Judge's verdict: how an attempt's measured state compares with the
//! best state so far (tests first, then checks, then pylint's score, with
//! half a hundredth of slack either way).

use super::Snapshot;

pub(super) fn pylint_lower(new: Option<f64>, old: Option<f64>) -> bool {
    match (new, old) {
        (Some(n), Some(o)) => n + 0.005 < o,
        (None, Some(_)) => true,
        _ => false,
    }
}

pub(super) fn pylint_higher(new: Option<f64>, old: Option<f64>) -> bool {
    match (new, old) {
        (Some(n), Some(o)) => n > o + 0.005,
        (Some(_), None) => true,
        _ => false,
    }
}

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
        matches!(self, Verdict::Green | Verdict::Improved)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Green => "green",
            Verdict::Improved => "improved",
            Verdict::Same => "same",
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

/// Compares an attempt's state with the best state so far.
///
/// A snapshot the Judge stopped early on (see [`early`]) is never accepted:
/// [`Verdict::Regressed`] when pylint dropped, else [`Verdict::NotImproved`].
pub fn compare(best: &Snapshot, new: &Snapshot, baseline_pylint: Option<f64>) -> Verdict {
    if new.tests.as_ref().is_some_and(|t| t.stopped_early) {
        return if pylint_lower(new.pylint, best.pylint) {
            Verdict::Regressed
        } else {
            Verdict::NotImproved
        };
    }
    let (regressed, gained) = match (&best.tests, &new.tests, &best.checks, &new.checks) {
        (Some(b), Some(n), _, _) => {
            let lost = b.passed.difference(&n.passed).next().is_some();
            let vanished = n.vanished.difference(&b.vanished).next().is_some();
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
    };
    if regressed {
        return Verdict::Regressed;
    }
    let improved = if gained {
        true
    } else if pylint_lower(new.pylint, best.pylint) {
        return Verdict::Regressed;
    } else {
        pylint_higher(new.pylint, best.pylint)
    };
    match (improved, new.is_green(baseline_pylint)) {
        (true, true) => Verdict::Green,
        (true, false) => Verdict::Improved,
        (false, _) => Verdict::Same,
    }
}
