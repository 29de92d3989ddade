//! How much of each piece of evidence a fix prompt shows, level by level:
//! what `fix_prompt` gives up, in order, when a prompt does not fit its
//! allowance. Shared by the evidence and the regression sections.

/// How much of each piece of evidence a fix prompt shows. The first
/// level shows everything; each next one shows less, in the order the
/// evidence is given up when the prompt does not fit its allowance:
/// earlier diffs, lint beyond the most serious few, traceback lines (each
/// failing test keeps its id and message), plan items, then the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Trim {
    pub(super) history_diff: bool,
    pub(super) history_entries: usize,
    pub(super) lint: usize,
    pub(super) tests: usize,
    pub(super) trace_lines: usize,
    pub(super) plan_chars: usize,
    pub(super) problems: usize,
    pub(super) problem_lines: usize,
    /// Related definitions in other files shown (read-only).
    pub(super) related: usize,
}

pub(super) const FULL: Trim = Trim {
    history_diff: true,
    history_entries: 6,
    lint: 40,
    tests: 8,
    trace_lines: 25,
    plan_chars: usize::MAX,
    problems: usize::MAX,
    problem_lines: 6,
    related: 4,
};

pub(super) const TRIMS: [Trim; 7] = [
    FULL,
    Trim {
        history_diff: false,
        ..FULL
    },
    Trim {
        history_diff: false,
        lint: 5,
        ..FULL
    },
    Trim {
        history_diff: false,
        lint: 5,
        trace_lines: 8,
        related: 2,
        ..FULL
    },
    Trim {
        history_diff: false,
        lint: 5,
        trace_lines: 0,
        plan_chars: 1_500,
        related: 1,
        ..FULL
    },
    Trim {
        history_diff: false,
        history_entries: 2,
        lint: 3,
        tests: 3,
        trace_lines: 0,
        plan_chars: 600,
        problems: 3,
        problem_lines: 2,
        related: 0,
    },
    Trim {
        history_diff: false,
        history_entries: 0,
        lint: 0,
        tests: 2,
        trace_lines: 0,
        plan_chars: 300,
        problems: 1,
        problem_lines: 1,
        related: 0,
    },
];
