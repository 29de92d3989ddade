//! `swarm doctor`: whether swarm can judge this project as your own test
//! runner does, printed; no model is asked and the repository is not
//! changed (see [`crate::orchestrator::doctor`]). Exits 0 when a run would
//! judge the project as your runner does, 1 when it would not.

use super::{settings, RunArgs};
use crate::config::ProcessEnv;
use crate::error::{ExitKind, SwarmError};
use crate::orchestrator::doctor::{self, Checkup, Difference};
use crate::pipeline::{TestOutcome, TestRun};

/// Runs the checks and prints the report to stdout (progress to stderr).
pub fn execute(args: &RunArgs, quiet: bool) -> Result<ExitKind, SwarmError> {
    let mut args = args.clone();
    if args.target_dir.is_none() {
        args.target_dir = Some(".".into());
    }
    // No model is asked: the settings of a run without one.
    args.offline = true;
    let resolved = settings::resolve(&args, &ProcessEnv)?;
    let progress = |m: &str| {
        if !quiet {
            eprintln!("swarm doctor: {m}");
        }
    };
    let checkup = doctor::check(&resolved.run, &progress)?;
    for line in report(&checkup) {
        super::print_line(&line);
    }
    Ok(if checkup.agrees() {
        ExitKind::Success
    } else {
        ExitKind::InvalidInput
    })
}

/// The report's lines.
fn report(checkup: &Checkup) -> Vec<String> {
    let mut lines = vec![format!("target: {}", checkup.target.display())];
    for (tool, version) in &checkup.tools {
        lines.push(format!("{tool}: {version}"));
    }
    lines.extend(checkup.notes.iter().cloned());
    lines.push(format!("swarm's view: {}", counts(&checkup.swarm)));
    lines.extend(failing(&checkup.swarm));
    lines.push(format!("your checkout: {}", counts(&checkup.checkout)));
    lines.extend(failing(&checkup.checkout));
    if checkup.differences.is_empty() {
        lines.push(
            "no difference: every test has the same outcome in swarm's view as in your checkout"
                .to_string(),
        );
    } else {
        lines.push(format!("{} test(s) differ:", checkup.differences.len()));
        lines.extend(checkup.differences.iter().map(difference));
    }
    if let Some(stop) = &checkup.stops {
        lines.push(format!("a run would stop before any model call: {stop}"));
    }
    if checkup.laid.is_empty() {
        lines.push("laid for the tests, never shown to the model: nothing".to_string());
    } else {
        lines.push(format!(
            "laid for the tests, never shown to the model nor committed: {}",
            checkup.laid.join(", ")
        ));
    }
    if let Some(secrets) = &checkup.secrets {
        lines.push(format!("secrets: {secrets}"));
    }
    lines
}

/// `3/4 tests passed` over every suite's run, and whether a runner could
/// not run at all.
fn counts(runs: &[TestRun]) -> String {
    let cases = runs.iter().flat_map(|r| r.cases.iter());
    let total = cases.clone().count();
    let passed = cases.filter(|c| c.outcome == TestOutcome::Passed).count();
    let mut text = format!("{passed}/{total} tests passed");
    if runs.iter().any(|r| r.timed_out) {
        text.push_str(" (the run timed out)");
    } else if total == 0 {
        text.push_str(" (the suite did not run: no test collected)");
    }
    text
}

/// One line per test that did not pass (at most ten, then how many more).
fn failing(runs: &[TestRun]) -> Vec<String> {
    let ids: Vec<&str> = runs
        .iter()
        .flat_map(|r| r.cases.iter())
        .filter(|c| !matches!(c.outcome, TestOutcome::Passed | TestOutcome::Skipped))
        .map(|c| c.id.as_str())
        .collect();
    let mut lines: Vec<String> = ids
        .iter()
        .take(10)
        .map(|id| format!("  not passed: {id}"))
        .collect();
    if ids.len() > 10 {
        lines.push(format!("  and {} more", ids.len() - 10));
    }
    lines
}

fn difference(d: &Difference) -> String {
    let outcome = |o: Option<TestOutcome>| {
        o.map_or("not collected".to_string(), |o| {
            format!("{o:?}").to_lowercase()
        })
    };
    format!(
        "  {}: {} in swarm's view, {} in your checkout: {}",
        d.id,
        outcome(d.swarm),
        outcome(d.checkout),
        d.why
    )
}
