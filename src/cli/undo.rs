//! `swarm undo [RUN]` and `swarm clean [RUN|--all]`: taking a delivery
//! back and removing runs. The checks and the writes are `git`'s; this
//! picks the run, holds the repository's run lock and says what happened.

use std::time::Duration;

use clap::Args;

use super::runs::{find_run, open_repo, worktrees_root, RepoArgs};
use crate::error::{ExitKind, SwarmError};
use crate::git::{
    pre_ff_ref, redo_command, CleanRefusal, Cleaned, GitError, Repo, RepoLock, Undo, UndoRefusal,
};

/// `swarm undo`'s flags.
#[derive(Debug, Clone, Args)]
pub struct UndoArgs {
    /// The run to take back (an id or a unique prefix) [default: the newest delivered run].
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
    #[command(flatten)]
    pub repo: RepoArgs,
}

/// `swarm clean`'s flags.
#[derive(Debug, Clone, Args)]
pub struct CleanArgs {
    /// The run to remove (an id or a unique prefix).
    #[arg(
        value_name = "RUN",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub run: Option<String>,
    /// Remove every run of the repository (runs in progress are skipped).
    #[arg(long)]
    pub all: bool,
    /// Only print what would be removed.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub repo: RepoArgs,
}

/// The repository's run lock, taken without waiting: undo and clean do not
/// queue behind a run that may be about to move the same branch.
fn lock(repo: &Repo, what: &str) -> Result<RepoLock, SwarmError> {
    RepoLock::acquire(
        &repo.info().common_dir,
        what,
        Duration::ZERO,
        &|_| {},
        &|| false,
    )
    .map_err(|e| match e {
        GitError::RepositoryBusy { holder, .. } => SwarmError::git(format!(
            "another swarm process ({holder}) is working on this repository"
        ))
        .hint(format!("run `swarm {what}` again once it has finished")),
        other => other.into(),
    })
}

/// `swarm undo`.
pub fn undo(args: &UndoArgs) -> Result<ExitKind, SwarmError> {
    let repo = open_repo(args.repo.target_dir.as_deref())?;
    let _lock = lock(&repo, "undo")?;
    let runs = repo.past_runs(worktrees_root(&repo).as_deref())?;
    let run = match &args.run {
        Some(query) => find_run(&runs, query)?,
        None => runs
            .iter()
            .find(|r| r.pre_ff.is_some() && r.undone.is_none())
            .ok_or_else(|| {
                SwarmError::invalid(
                    "no delivered run to undo in this repository: `swarm log` lists the runs",
                )
            })?,
    };
    if run.undone.is_some() && run.pre_ff.is_none() {
        return Err(SwarmError::invalid(format!(
            "run {} was already undone; take its result again with `{}`",
            run.run_id,
            redo_command(&run.run_id)
        )));
    }
    match repo.undo_run(run)? {
        Undo::Refused(refusal) => Err(SwarmError::git(format!(
            "not undone: {refusal}; nothing was changed"
        ))
        .hint(what_to_do(&refusal))),
        Undo::Done { branch, from, to } => {
            let redo = redo_command(&run.run_id);
            let text = if args.repo.json {
                let value = serde_json::json!({
                    "run_id": run.run_id,
                    "branch": branch,
                    "from": from.0,
                    "to": to.0,
                    "redo": redo,
                });
                format!("{value}\n")
            } else {
                format!(
                    "undid run {}: {branch} is back at {} (it was at {}); take the result again with: {redo}\n",
                    run.run_id,
                    to.short(),
                    from.short()
                )
            };
            super::print_bytes(text.as_bytes(), "the result")
        }
    }
}

/// What the user can do about a refused undo, one line.
fn what_to_do(refusal: &UndoRefusal) -> String {
    match refusal {
        UndoRefusal::NotDelivered { .. } => {
            "`swarm log` lists the runs and what became of them".to_string()
        }
        UndoRefusal::ResultLost { run_id } => {
            format!("restore by hand with `git reset --keep {}`", pre_ff_ref(run_id))
        }
        UndoRefusal::NotCheckedOut { run_id, branch, .. } => {
            format!("run `swarm undo {run_id}` where {branch} is checked out")
        }
        UndoRefusal::NotHere { run_id, .. } => format!(
            "check out the branch the run delivered to and run `swarm undo {run_id}` there"
        ),
        UndoRefusal::Moved {
            run_id,
            branch,
            result,
            ..
        } => format!(
            "see them with `git log --oneline {}..{branch}`; to drop them anyway: `git reset --keep {}`",
            result.short(),
            pre_ff_ref(run_id)
        ),
        UndoRefusal::ResetRefused { .. } => {
            "commit or stash the changes in those files, then run `swarm undo` again".to_string()
        }
    }
}

/// `swarm clean`.
pub fn clean(args: &CleanArgs) -> Result<ExitKind, SwarmError> {
    let repo = open_repo(args.repo.target_dir.as_deref())?;
    let root = worktrees_root(&repo);
    let runs = repo.past_runs(root.as_deref())?;
    let chosen = match &args.run {
        Some(query) => vec![find_run(&runs, query)?],
        None => runs.iter().collect(),
    };
    let mut cleaned = Vec::new();
    let mut skipped = Vec::new();
    for run in chosen {
        match repo.clean_run(run, root.as_deref(), args.dry_run)? {
            Ok(done) => cleaned.push((done, run.delivery.as_ref().map(|(b, _)| b.clone()))),
            Err(refusal) if args.all => skipped.push(refusal),
            Err(refusal) => return Err(SwarmError::git(format!("not removed: {refusal}"))),
        }
    }
    let mut leftovers = Vec::new();
    let mut spare = None;
    if args.all {
        if let Some(root) = &root {
            if !args.dry_run {
                leftovers = repo.prune_stale_runs(root)?;
            }
            spare = repo.discard_spare_worktree(root, args.dry_run)?;
        }
    }
    let text = if args.repo.json {
        let value = serde_json::json!({
            "dry_run": args.dry_run,
            "removed": cleaned.iter().map(|(c, _)| c).collect::<Vec<_>>(),
            "skipped": skipped.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "leftover_worktrees": leftovers,
            "spare_worktree_removed": spare,
        });
        format!("{value}\n")
    } else {
        let mut text = clean_text(&cleaned, &skipped, &leftovers, args.dry_run);
        if let Some(folder) = &spare {
            let verb = if args.dry_run {
                "would remove"
            } else {
                "removed"
            };
            text.push_str(&format!(
                "{verb} the spare worktree kept for the next run: {}\n",
                folder.display()
            ));
        }
        text
    };
    super::print_bytes(text.as_bytes(), "what was removed")
}

/// What `swarm clean` says: per run, the refs and paths removed, and the
/// undo ref's loss where there was one.
fn clean_text(
    cleaned: &[(Cleaned, Option<String>)],
    skipped: &[CleanRefusal],
    leftovers: &[String],
    dry_run: bool,
) -> String {
    let verb = if dry_run { "would remove" } else { "removed" };
    let mut text = String::new();
    if cleaned.is_empty() && skipped.is_empty() {
        text.push_str("no swarm runs in this repository\n");
    }
    for (run, delivered_to) in cleaned {
        let refs: Vec<&str> = run
            .refs
            .iter()
            .map(|r| r.strip_prefix("refs/heads/").unwrap_or(r))
            .collect();
        text.push_str(&format!(
            "{verb} run {}: {} ref(s) ({})",
            run.run_id,
            refs.len(),
            refs.join(", ")
        ));
        if !run.paths.is_empty() {
            let paths: Vec<String> = run.paths.iter().map(|p| p.display().to_string()).collect();
            text.push_str(&format!("; {}", paths.join(", ")));
        }
        text.push('\n');
        if run.undo_ref_removed {
            let branch = delivered_to.as_deref().unwrap_or("your branch");
            text.push_str(&format!(
                "  note: this removes its undo ref refs/swarm/{}/pre-ff: its delivery to {branch} can no longer be undone with `swarm undo`\n",
                run.run_id
            ));
        }
    }
    for refusal in skipped {
        text.push_str(&format!("skipped: {refusal}\n"));
    }
    if !leftovers.is_empty() {
        text.push_str(&format!(
            "removed worktrees left by interrupted runs: {}\n",
            leftovers.join(", ")
        ));
    }
    text
}
