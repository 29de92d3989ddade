//! `swarm log` and `swarm show RUN`: past runs as the repository's refs and
//! commit trailers record them, for people (a table) and scripts (`--json`).
//!
//! What a run's trailers mean (tests and pylint before and after, its
//! status) is read here; finding the refs and commits is `git`'s.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use crate::error::{ExitKind, SwarmError};
use crate::git::{PastAttempt, PastRun, Repo};
use crate::orchestrator::TestCount;

/// Where the repository is, and the output format.
#[derive(Debug, Clone, Args)]
pub struct RepoArgs {
    /// A folder of the repository [default: .].
    #[arg(
        long = "target-dir",
        visible_alias = "target_dir",
        value_name = "DIR",
        env = "SWARM_TARGET_DIR"
    )]
    pub target_dir: Option<PathBuf>,
    /// Print JSON on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `swarm show`'s flags.
#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    /// The run id, or a prefix of it that names one run.
    #[arg(value_name = "RUN")]
    pub run: String,
    #[command(flatten)]
    pub repo: RepoArgs,
}

/// What became of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// A live process is running it.
    InProgress,
    /// The user's branch was fast-forwarded to its result.
    Delivered,
    /// Delivered, then taken back by `swarm undo`.
    Undone,
    /// It accepted changes, but the user's branch was not moved.
    NotDelivered,
    /// No attempt was accepted.
    NothingAccepted,
}

impl RunStatus {
    fn of(run: &PastRun) -> Self {
        if run.in_progress {
            RunStatus::InProgress
        } else if run.undone.is_some() {
            RunStatus::Undone
        } else if run.pre_ff.is_some() {
            RunStatus::Delivered
        } else if run.best_attempt().is_some() {
            RunStatus::NotDelivered
        } else {
            RunStatus::NothingAccepted
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            RunStatus::InProgress => "in progress",
            RunStatus::Delivered => "delivered",
            RunStatus::Undone => "undone",
            RunStatus::NotDelivered => "not delivered",
            RunStatus::NothingAccepted => "nothing accepted",
        }
    }
}

/// One line of `swarm log`.
#[derive(Clone, Debug, Serialize)]
pub struct RunRow {
    pub run_id: String,
    /// When the run started, local time (`2026-11-22 10:15:00`).
    pub date: String,
    pub status: RunStatus,
    pub tests_before: Option<TestCount>,
    pub tests_after: Option<TestCount>,
    pub pylint_before: Option<f64>,
    pub pylint_after: Option<f64>,
    /// Committed attempts.
    pub attempts: usize,
    /// Attempts that moved the run branch.
    pub accepted: usize,
    /// The branch the run delivered to (also once undone).
    pub delivered_to: Option<String>,
    /// `swarm/<run>/best`, when it exists.
    pub run_branch: Option<String>,
}

/// One attempt of `swarm show`.
#[derive(Clone, Debug, Serialize)]
pub struct AttemptRow {
    pub iteration: Option<u32>,
    pub attempt: u32,
    pub verdict: String,
    pub tests: String,
    pub pylint: String,
    pub files_changed: Vec<String>,
    pub commit: String,
    pub subject: String,
    pub branch: String,
    /// The run branch points at it: the best state.
    pub best: bool,
}

impl RunRow {
    /// The row for `run`.
    pub fn of(run: &PastRun) -> Self {
        let measured = run.best_attempt().or(run.attempts.first());
        let accepted_any = run.best_attempt().is_some();
        let tests = measured
            .and_then(|a| a.trailer("Swarm-Tests"))
            .map(tests_of);
        let pylint = measured
            .and_then(|a| a.trailer("Swarm-Pylint"))
            .map(pylint_of);
        let (tests_before, tests_after) = match tests {
            Some((after, before)) if accepted_any => (before, after),
            Some((_, before)) => (before, before),
            None => (None, None),
        };
        let (pylint_before, pylint_after) = match pylint {
            Some((before, after)) if accepted_any => (before, after),
            Some((before, _)) => (before, before),
            None => (None, None),
        };
        RunRow {
            run_id: run.run_id.clone(),
            date: date_of(run),
            status: RunStatus::of(run),
            tests_before,
            tests_after,
            pylint_before,
            pylint_after,
            attempts: run.attempts.len(),
            accepted: run
                .attempts
                .iter()
                .filter(|a| matches!(a.trailer("Swarm-Verdict"), Some("green" | "improved")))
                .count(),
            delivered_to: run.delivery.as_ref().map(|(branch, _)| branch.clone()),
            run_branch: run
                .best
                .as_ref()
                .map(|_| format!("swarm/{}/best", run.run_id)),
        }
    }
}

impl AttemptRow {
    fn of(run: &PastRun, a: &PastAttempt) -> Self {
        AttemptRow {
            iteration: a.trailer("Swarm-Iteration").and_then(|v| v.parse().ok()),
            attempt: a.number,
            verdict: a.trailer("Swarm-Verdict").unwrap_or("?").to_string(),
            tests: a.trailer("Swarm-Tests").unwrap_or("?").to_string(),
            pylint: a.trailer("Swarm-Pylint").unwrap_or("?").to_string(),
            files_changed: a.files_changed.clone(),
            commit: a.commit.0.clone(),
            subject: a.subject.clone(),
            branch: a.branch.clone(),
            best: run.best.as_ref() == Some(&a.commit),
        }
    }
}

/// `5/6 passed (baseline 3/6)` → (5/6, 3/6); either is `None` when the
/// value does not say (`no tests; …`).
fn tests_of(value: &str) -> (Option<TestCount>, Option<TestCount>) {
    let count = |text: &str| {
        let (passed, total) = text.trim().split_once('/')?;
        Some(TestCount {
            passed: passed.trim().parse().ok()?,
            total: total.trim().parse().ok()?,
        })
    };
    let after = value
        .split_once(" passed")
        .and_then(|(head, _)| count(head));
    let baseline = value
        .rsplit_once("(baseline ")
        .and_then(|(_, tail)| tail.split_once(')'))
        .and_then(|(inner, _)| count(inner));
    (after, baseline)
}

/// `4.20 -> 7.85` → (4.20, 7.85); `n/a` is `None`.
fn pylint_of(value: &str) -> (Option<f64>, Option<f64>) {
    let score = |s: &str| s.trim().parse::<f64>().ok();
    match value.split_once("->") {
        Some((before, after)) => (score(before), score(after)),
        None => (None, score(value)),
    }
}

/// When the run started: from its id (`20261122-101500-7f3a`, local
/// time), else its first attempt's commit time.
fn date_of(run: &PastRun) -> String {
    let from_id = run
        .run_id
        .get(..15)
        .and_then(|stamp| chrono::NaiveDateTime::parse_from_str(stamp, "%Y%m%d-%H%M%S").ok());
    let from_commit = || {
        let first = run.attempts.iter().map(|a| a.time).min()?;
        let utc = chrono::DateTime::from_timestamp(first, 0)?;
        Some(utc.with_timezone(&chrono::Local).naive_local())
    };
    from_id
        .or_else(from_commit)
        .map(|at| at.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

/// The repository holding `--target-dir` (default `.`).
pub(crate) fn open_repo(target_dir: Option<&Path>) -> Result<Repo, SwarmError> {
    let target = target_dir.unwrap_or(Path::new("."));
    if !target.is_dir() {
        return Err(SwarmError::invalid(format!(
            "no such folder: {} (check --target-dir)",
            target.display()
        )));
    }
    Repo::open(target)?.ok_or_else(|| {
        SwarmError::invalid(format!(
            "{} is not in a git repository, so it has no swarm runs",
            target.display()
        ))
    })
}

/// This repository's run worktrees folder, when swarm has a cache folder.
pub(crate) fn worktrees_root(repo: &Repo) -> Option<PathBuf> {
    let cache = crate::config::cache_dir(&crate::config::ProcessEnv)?;
    repo.worktrees_root(&cache).ok()
}

/// The run named by `query`: its id, or a prefix naming one run.
pub(crate) fn find_run<'a>(runs: &'a [PastRun], query: &str) -> Result<&'a PastRun, SwarmError> {
    if let Some(run) = runs.iter().find(|r| r.run_id == query) {
        return Ok(run);
    }
    let matching: Vec<&PastRun> = runs
        .iter()
        .filter(|r| !query.is_empty() && r.run_id.starts_with(query))
        .collect();
    match matching.as_slice() {
        [run] => Ok(run),
        [] => Err(SwarmError::invalid(format!(
            "no run {query:?} in this repository: `swarm log` lists the runs"
        ))),
        many => Err(SwarmError::invalid(format!(
            "{query:?} names {} runs ({}): give more of the id (`swarm log` lists them)",
            many.len(),
            many.iter()
                .map(|r| r.run_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// `swarm log`.
pub fn log(args: &RepoArgs) -> Result<ExitKind, SwarmError> {
    let repo = open_repo(args.target_dir.as_deref())?;
    let runs = repo.past_runs(worktrees_root(&repo).as_deref())?;
    let rows: Vec<RunRow> = runs.iter().map(RunRow::of).collect();
    let text = if args.json {
        json_line(&rows)?
    } else if rows.is_empty() {
        "no swarm runs in this repository\n".to_string()
    } else {
        log_table(&rows)
    };
    super::print_bytes(text.as_bytes(), "the run list")
}

/// `swarm show RUN`.
pub fn show(args: &ShowArgs) -> Result<ExitKind, SwarmError> {
    let repo = open_repo(args.repo.target_dir.as_deref())?;
    let runs = repo.past_runs(worktrees_root(&repo).as_deref())?;
    let run = find_run(&runs, &args.run)?;
    let row = RunRow::of(run);
    let attempts: Vec<AttemptRow> = run
        .attempts
        .iter()
        .map(|a| AttemptRow::of(run, a))
        .collect();
    let text = if args.repo.json {
        json_line(&serde_json::json!({ "run": row, "attempts": attempts }))?
    } else {
        show_text(&row, &attempts)
    };
    super::print_bytes(text.as_bytes(), "the run")
}

fn json_line(value: &impl Serialize) -> Result<String, SwarmError> {
    let mut text = serde_json::to_string(value)
        .map_err(|e| SwarmError::internal("cannot write JSON").caused_by(e))?;
    text.push('\n');
    Ok(text)
}

fn count(c: Option<TestCount>) -> String {
    c.map(|c| format!("{}/{}", c.passed, c.total))
        .unwrap_or_else(|| "-".into())
}

fn score(s: Option<f64>) -> String {
    s.map(|v| format!("{v:.2}")).unwrap_or_else(|| "n/a".into())
}

/// The `swarm log` table, newest first.
fn log_table(rows: &[RunRow]) -> String {
    let mut lines = vec![vec![
        "RUN".to_string(),
        "DATE".into(),
        "STATUS".into(),
        "TESTS".into(),
        "PYLINT".into(),
        "ATTEMPTS".into(),
        "BRANCH".into(),
    ]];
    for row in rows {
        lines.push(vec![
            row.run_id.clone(),
            row.date.clone(),
            row.status.as_str().to_string(),
            format!("{} -> {}", count(row.tests_before), count(row.tests_after)),
            format!(
                "{} -> {}",
                score(row.pylint_before),
                score(row.pylint_after)
            ),
            format!("{} ({} accepted)", row.attempts, row.accepted),
            row.delivered_to.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    columns(&lines)
}

/// `swarm show`'s text: the run's line, then its attempts.
fn show_text(row: &RunRow, attempts: &[AttemptRow]) -> String {
    let delivered = match (&row.delivered_to, row.status) {
        (Some(branch), RunStatus::Delivered | RunStatus::Undone) => format!(" to {branch}"),
        _ => String::new(),
    };
    let mut text = format!(
        "run {} ({}): {}{delivered}\n  tests {} -> {}, pylint {} -> {}, {} attempt(s), {} accepted\n",
        row.run_id,
        row.date,
        row.status.as_str(),
        count(row.tests_before),
        count(row.tests_after),
        score(row.pylint_before),
        score(row.pylint_after),
        row.attempts,
        row.accepted,
    );
    if let Some(branch) = &row.run_branch {
        text.push_str(&format!("  branch: {branch}\n"));
    }
    if attempts.is_empty() {
        text.push_str("  no committed attempts\n");
        return text;
    }
    let mut lines = vec![vec![
        "ITER".to_string(),
        "ATTEMPT".into(),
        "VERDICT".into(),
        "TESTS".into(),
        "PYLINT".into(),
        "FILES".into(),
        "COMMIT".into(),
        "SUBJECT".into(),
    ]];
    for a in attempts {
        lines.push(vec![
            a.iteration
                .map(|i| i.to_string())
                .unwrap_or_else(|| "?".into()),
            format!("{}{}", a.attempt, if a.best { " (best)" } else { "" }),
            a.verdict.clone(),
            a.tests.clone(),
            a.pylint.clone(),
            a.files_changed.join(", "),
            a.commit[..a.commit.len().min(10)].to_string(),
            a.subject.clone(),
        ]);
    }
    text.push('\n');
    text.push_str(&columns(&lines));
    text
}

/// Left-aligned columns two spaces apart; the last column is not padded.
fn columns(lines: &[Vec<String>]) -> String {
    let width = lines.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..width)
        .map(|i| {
            lines
                .iter()
                .map(|l| l.get(i).map_or(0, |c| c.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for line in lines {
        let cells: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(i, cell)| {
                if i + 1 == line.len() {
                    cell.clone()
                } else {
                    format!("{cell:<w$}", w = widths[i])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailer_values_read_as_counts_and_scores() {
        let (after, before) = tests_of("5/6 passed (baseline 3/6)");
        assert_eq!(
            after,
            Some(TestCount {
                passed: 5,
                total: 6
            })
        );
        assert_eq!(
            before,
            Some(TestCount {
                passed: 3,
                total: 6
            })
        );
        let (after, before) =
            tests_of("4/6 passed, 2 not run (the test run hit its time limit) (baseline 3/6)");
        assert_eq!(after.map(|c| c.passed), Some(4));
        assert_eq!(before.map(|c| c.passed), Some(3));
        assert_eq!(tests_of("no tests; 3 of 3 files compile"), (None, None));
        assert_eq!(pylint_of("4.20 -> 7.85"), (Some(4.2), Some(7.85)));
        assert_eq!(pylint_of("n/a -> 7.00"), (None, Some(7.0)));
    }

    #[test]
    fn a_prefix_names_a_run_only_when_it_is_unique() {
        let run = |id: &str| PastRun {
            run_id: id.to_string(),
            best: None,
            pre_ff: None,
            undone: None,
            delivery: None,
            attempts: vec![],
            refs: vec![],
            in_progress: false,
        };
        let runs = vec![run("20261122-101500-7f3a"), run("20261122-101500-8b2c")];
        assert_eq!(
            find_run(&runs, "20261122-101500-7")
                .map(|r| r.run_id.clone())
                .ok(),
            Some("20261122-101500-7f3a".to_string())
        );
        let ambiguous = find_run(&runs, "20261122").unwrap_err();
        assert!(
            ambiguous.message.contains("names 2 runs"),
            "{}",
            ambiguous.message
        );
        let unknown = find_run(&runs, "nope").unwrap_err();
        assert!(
            unknown.message.contains("`swarm log`"),
            "{}",
            unknown.message
        );
        assert_eq!(unknown.kind, ExitKind::InvalidInput);
        assert!(find_run(&runs, "").is_err());
    }

    #[test]
    fn columns_line_up() {
        let text = columns(&[
            vec!["A".into(), "BB".into(), "C".into()],
            vec!["aaa".into(), "b".into(), "c c".into()],
        ]);
        assert_eq!(text, "A    BB  C\naaa  b   c c\n");
    }
}
