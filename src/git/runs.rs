//! Past runs as the repository records them: the run branch
//! `swarm/<run>/best`, the attempt branches `swarm/<run>/attempt-<k>` with
//! their `Swarm-` trailers, the undo ref `refs/swarm/<run>/pre-ff`, the
//! mark `refs/swarm/<run>/undone` that `swarm undo` leaves, and the branch
//! reflogs that say which branch a delivery moved.
//!
//! Refs and commits are the source of truth: nothing here needs the
//! experiment log. This module only reads; undoing and cleaning live in
//! `undo` and `clean`. It never interprets trailer values beyond splitting
//! them into keys and values.

use std::collections::BTreeMap;
use std::path::Path;

use git2::{ErrorCode, Oid, Repository};

use super::layout::{is_run_id, pre_ff_ref, undone_ref};
use super::lock::{repo_lock_holder, run_lock_held};
use super::repo::changed_paths;
use super::{CommitId, GitError, Repo};

/// A run found in the repository's refs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PastRun {
    pub run_id: String,
    /// The run branch's tip (`swarm/<run>/best`); `None` once deleted (a run
    /// that accepted nothing, or cleaned by hand).
    pub best: Option<CommitId>,
    /// The undo ref `refs/swarm/<run>/pre-ff`: where the user's branch was
    /// before the fast-forward.
    pub pre_ff: Option<CommitId>,
    /// `refs/swarm/<run>/undone`: set once `swarm undo` took the delivery
    /// back; the commit the branch was moved away from.
    pub undone: Option<CommitId>,
    /// The branch the delivery moved and the commit it moved it to, read
    /// from the branch's reflog (`None` when no reflog records it).
    pub delivery: Option<(String, CommitId)>,
    /// The committed attempts, by attempt number.
    pub attempts: Vec<PastAttempt>,
    /// Every ref of the run, full names, sorted.
    pub refs: Vec<String>,
    /// A live process holds the run's lock (or the repository's run lock
    /// for this run).
    pub in_progress: bool,
}

/// One committed attempt: the tip of `swarm/<run>/attempt-<k>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PastAttempt {
    /// The `<k>` of the branch name.
    pub number: u32,
    pub branch: String,
    pub commit: CommitId,
    /// The commit message's first line.
    pub subject: String,
    /// The commit time, seconds since the Unix epoch.
    pub time: i64,
    /// The message's trailers (`Swarm-Verdict` → `improved`), in order.
    pub trailers: Vec<(String, String)>,
    /// Repo-relative paths the attempt changed against its parent, sorted.
    pub files_changed: Vec<String>,
}

impl PastAttempt {
    /// The first value of trailer `key` (case-insensitive).
    pub fn trailer(&self, key: &str) -> Option<&str> {
        self.trailers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }
}

impl PastRun {
    /// The attempt the run branch points at (the best state), if any.
    pub fn best_attempt(&self) -> Option<&PastAttempt> {
        let best = self.best.as_ref()?;
        self.attempts.iter().find(|a| &a.commit == best)
    }

    /// The commit a delivery moved the user's branch to: from the reflog,
    /// else the run branch's tip.
    pub fn delivered_commit(&self) -> Option<&CommitId> {
        self.delivery
            .as_ref()
            .map(|(_, to)| to)
            .or(self.best.as_ref())
    }
}

impl Repo {
    /// Every run with a ref in the repository, newest first (run ids start
    /// with their start time). `worktrees_root` (see
    /// [`Repo::worktrees_root`]) is where live runs hold their locks; without
    /// it only the repository's run lock tells a run in progress.
    pub fn past_runs(&self, worktrees_root: Option<&Path>) -> Result<Vec<PastRun>, GitError> {
        let git = self.objects()?;
        let mut by_run: BTreeMap<String, Vec<(String, Oid)>> = BTreeMap::new();
        for glob in ["refs/heads/swarm/*", "refs/swarm/*"] {
            let refs = git
                .references_glob(glob)
                .map_err(|e| GitError::git2(format!("list {glob}"), e))?;
            for reference in refs {
                let reference = reference.map_err(|e| GitError::git2(format!("list {glob}"), e))?;
                let (Some(name), Some(target)) = (reference.name(), reference.target()) else {
                    continue;
                };
                if let Some(run) = run_of_ref(name) {
                    by_run
                        .entry(run.to_string())
                        .or_default()
                        .push((name.to_string(), target));
                }
            }
        }
        let busy_with = repo_lock_holder(&self.info().common_dir);
        let deliveries = branch_moves(&git)?;
        let mut runs = Vec::new();
        for (run_id, refs) in by_run {
            let mut run = read_run(&git, &run_id, refs, &deliveries)?;
            run.in_progress = busy_with.as_deref() == Some(run_id.as_str())
                || worktrees_root.is_some_and(|root| run_lock_held(root, &run_id));
            runs.push(run);
        }
        runs.sort_by(|a, b| b.run_id.cmp(&a.run_id));
        Ok(runs)
    }
}

/// The run id of a ref of the run (`refs/heads/swarm/<run>/…` or
/// `refs/swarm/<run>/…`).
fn run_of_ref(name: &str) -> Option<&str> {
    let rest = name
        .strip_prefix("refs/heads/swarm/")
        .or_else(|| name.strip_prefix("refs/swarm/"))?;
    let (run, below) = rest.split_once('/')?;
    (is_run_id(run) && !below.is_empty()).then_some(run)
}

/// A run from its refs.
fn read_run(
    git: &Repository,
    run_id: &str,
    mut refs: Vec<(String, Oid)>,
    moves: &[BranchMove],
) -> Result<PastRun, GitError> {
    refs.sort();
    let find = |full: &str| {
        refs.iter()
            .find(|(name, _)| name == full)
            .map(|(_, oid)| CommitId::from_oid(*oid))
    };
    let best = find(&format!("refs/heads/swarm/{run_id}/best"));
    let pre_ff = find(&pre_ff_ref(run_id));
    let undone = find(&undone_ref(run_id));
    let attempt_prefix = format!("refs/heads/swarm/{run_id}/attempt-");
    let mut attempts = Vec::new();
    for (name, oid) in &refs {
        let Some(number) = name
            .strip_prefix(&attempt_prefix)
            .and_then(|k| k.parse::<u32>().ok())
        else {
            continue;
        };
        attempts.push(read_attempt(git, number, name, *oid)?);
    }
    attempts.sort_by_key(|a| a.number);
    // The move from the undo ref to the result; once undone (the undo ref
    // is gone), the move to the result.
    let delivery = match (&pre_ff, &undone) {
        (Some(from), _) => moves
            .iter()
            .rev()
            .find(|m| &m.from == from && best.as_ref().is_none_or(|to| &m.to == to)),
        (None, Some(result)) => moves.iter().find(|m| &m.to == result),
        (None, None) => None,
    }
    .map(|m| (m.branch.clone(), m.to.clone()));
    Ok(PastRun {
        run_id: run_id.to_string(),
        best,
        pre_ff,
        undone,
        delivery,
        attempts,
        refs: refs.into_iter().map(|(name, _)| name).collect(),
        in_progress: false,
    })
}

/// An attempt branch's tip.
fn read_attempt(
    git: &Repository,
    number: u32,
    full_ref: &str,
    oid: Oid,
) -> Result<PastAttempt, GitError> {
    let commit = git
        .find_commit(oid)
        .map_err(|e| GitError::git2(format!("read {full_ref}"), e))?;
    let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
    let id = CommitId::from_oid(oid);
    let files_changed = match commit.parent_id(0) {
        Ok(parent) => changed_paths(git, &CommitId::from_oid(parent), &id)?,
        Err(_) => Vec::new(),
    };
    Ok(PastAttempt {
        number,
        branch: full_ref
            .strip_prefix("refs/heads/")
            .unwrap_or(full_ref)
            .to_string(),
        commit: id,
        subject: message.lines().next().unwrap_or_default().to_string(),
        time: commit.time().seconds(),
        trailers: trailers(&message),
        files_changed,
    })
}

/// The trailers of a commit message: the `Key: value` lines of its last
/// paragraph (when every line of it is one), as `git interpret-trailers`
/// reads them.
pub fn trailers(message: &str) -> Vec<(String, String)> {
    let trimmed = message.trim_end();
    let last = trimmed.rsplit("\n\n").next().unwrap_or_default();
    if last == trimmed && !trimmed.contains('\n') {
        return Vec::new();
    }
    let parsed: Option<Vec<(String, String)>> = last
        .lines()
        .map(|line| {
            let (key, value) = line.split_once(':')?;
            let key_ok =
                !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
            key_ok.then(|| (key.to_string(), value.trim().to_string()))
        })
        .collect();
    parsed.unwrap_or_default()
}

/// A local branch's move recorded in its reflog.
#[derive(Debug)]
struct BranchMove {
    branch: String,
    from: CommitId,
    to: CommitId,
}

/// The moves of every local branch outside `swarm/`, from their reflogs
/// (oldest first per branch). A fast-forward swarm made is one of them.
fn branch_moves(git: &Repository) -> Result<Vec<BranchMove>, GitError> {
    let mut moves = Vec::new();
    let refs = git
        .references_glob("refs/heads/*")
        .map_err(|e| GitError::git2("list branches", e))?;
    for reference in refs.flatten() {
        let Some(name) = reference.name() else {
            continue;
        };
        let Some(branch) = name.strip_prefix("refs/heads/") else {
            continue;
        };
        if branch.starts_with("swarm/") {
            continue;
        }
        let reflog = match git.reflog(name) {
            Ok(reflog) => reflog,
            Err(e) if e.code() == ErrorCode::NotFound => continue,
            Err(e) => return Err(GitError::git2(format!("read the reflog of {branch}"), e)),
        };
        // Entries come newest first.
        let mut entries: Vec<BranchMove> = reflog
            .iter()
            .map(|entry| BranchMove {
                branch: branch.to_string(),
                from: CommitId::from_oid(entry.id_old()),
                to: CommitId::from_oid(entry.id_new()),
            })
            .collect();
        entries.reverse();
        moves.extend(entries);
    }
    Ok(moves)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailers_are_the_key_value_lines_of_the_last_paragraph() {
        let message = "swarm: fix mean (stats.py)\n\nAttempt 1: improved.\n\n\
                       Swarm-Run: r-1\nSwarm-Tests: 5/6 passed (baseline 3/6)\nSwarm-Pylint: 4.20 -> 7.85\n";
        let found = trailers(message);
        assert_eq!(found.len(), 3);
        assert_eq!(
            found[1],
            ("Swarm-Tests".into(), "5/6 passed (baseline 3/6)".into())
        );
        assert!(trailers("just a subject").is_empty());
        assert!(trailers("subject\n\nA body: with a colon\nand prose").is_empty());
    }

    #[test]
    fn run_ids_come_from_both_ref_spaces() {
        assert_eq!(run_of_ref("refs/heads/swarm/r-1/best"), Some("r-1"));
        assert_eq!(run_of_ref("refs/swarm/r-1/pre-ff"), Some("r-1"));
        assert_eq!(run_of_ref("refs/heads/swarm/best"), None);
        assert_eq!(run_of_ref("refs/heads/main"), None);
    }
}
