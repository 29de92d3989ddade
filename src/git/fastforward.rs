//! The final step: fast-forwarding the user's branch and working tree to
//! the run's best state — the first and only write to the user's checkout.
//!
//! Every check happens first (HEAD unchanged and on the same branch, no
//! uncommitted change in a file the fast-forward changes, no file that git
//! does not track — untracked or ignored — where the fast-forward would
//! write, no index lock); any failed check is a [`FastForward::Skipped`]
//! value with the command that takes the result by hand, and nothing is
//! written. Before the branch moves, `refs/swarm/<run>/pre-ff` records the
//! old HEAD as an undo handle. The move itself is `git merge --ff-only`,
//! which updates the branch, the index and the files the run changed, and
//! leaves the user's other uncommitted changes alone; it runs shielded from
//! the terminal's signals (see `GitCommand::output_shielded`), so it is
//! either complete or not started. Afterwards the result is verified (HEAD
//! on the branch at the target commit, every changed file as git expects
//! it); anything else is a [`FastForward::Failed`], never a success.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use git2::{ErrorCode, Repository};

use super::command::{first_lines, GitCommand, GitOutput};
use super::layout::pre_ff_ref;
use super::repo::{changed_paths, dirty_paths_among, head_state, tree_files};
use super::{CommitId, FastForward, GitError, Repo};

/// The command that takes a run's result by hand: `git merge --ff-only <run branch>`.
pub fn take_command(run_branch: &str) -> String {
    format!("git merge --ff-only {run_branch}")
}

/// The command that takes a fast-forward back:
/// `git reset --keep refs/swarm/<run>/pre-ff` (it refuses rather than
/// overwrite files changed since).
pub fn undo_command(run_id: &str) -> String {
    format!("git reset --keep {}", pre_ff_ref(run_id))
}

/// The run id inside a run branch name `swarm/<run>/best` (the part between
/// `swarm/` and `/best`); the whole name when it has another shape.
pub fn run_id_of_branch(run_branch: &str) -> &str {
    let name = run_branch.strip_prefix("refs/heads/").unwrap_or(run_branch);
    let name = name.strip_prefix("swarm/").unwrap_or(name);
    name.strip_suffix("/best").unwrap_or(name)
}

impl Repo {
    /// Fast-forwards the user's branch to `to`, updating the working tree,
    /// only if `HEAD` is still `expected_head` on the same branch, none of
    /// the files that differ between the two (and none of `touched`,
    /// repo-relative) has uncommitted changes, and no untracked or ignored
    /// file sits where the fast-forward would write.
    ///
    /// `NothingToDo` when `to == expected_head`. Writes the undo ref
    /// `refs/swarm/<run>/pre-ff` (see [`pre_ff_ref`]) before moving the
    /// branch. A refused update is `Ok(Skipped { reason, command })` where
    /// `command` is `git merge --ff-only <run_branch>`; an update that did
    /// not verify is `Ok(Failed { .. })`.
    pub fn fast_forward(
        &self,
        expected_head: &CommitId,
        to: &CommitId,
        run_branch: &str,
        touched: &[String],
    ) -> Result<FastForward, GitError> {
        if to == expected_head {
            return Ok(FastForward::NothingToDo);
        }
        let skip = |reason: String| {
            Ok(FastForward::Skipped {
                reason,
                command: take_command(run_branch),
            })
        };
        let git = self.git()?;
        let objects = self.objects()?;
        let branch = match self.branch_to_move(&git, &objects, expected_head, to)? {
            Ok(branch) => branch,
            Err(reason) => return skip(reason),
        };
        let mut changed: BTreeSet<String> = changed_paths(&objects, expected_head, to)?
            .into_iter()
            .collect();
        changed.extend(touched.iter().cloned());
        if let Some(reason) =
            self.checkout_in_the_way(&git, &objects, expected_head, to, &changed)?
        {
            return skip(reason);
        }

        let undo = pre_ff_ref(run_id_of_branch(run_branch));
        git.reference(
            &undo,
            expected_head.oid()?,
            true,
            &format!("swarm: {branch} before fast-forward"),
        )
        .map_err(|e| GitError::git2(format!("write {undo}"), e))?;
        let merge = GitCommand::new(&self.info().root)
            .arg("merge")
            .arg("--ff-only")
            .arg("--quiet")
            .arg(to.to_string());
        let output = merge.output_shielded()?;
        let tried = TriedMove {
            branch,
            from: expected_head,
            to,
            changed: changed.into_iter().collect(),
            run_branch,
            undo,
            merge,
            output,
        };
        self.outcome(&git, &objects, tried)
    }

    /// The branch to move: the one `HEAD` is on, when it is still the branch
    /// the run started on, at the commit it started from, and `to` descends
    /// from that commit. Otherwise (`Err`) why the branch is left alone.
    fn branch_to_move(
        &self,
        git: &Repository,
        objects: &Repository,
        expected_head: &CommitId,
        to: &CommitId,
    ) -> Result<Result<String, String>, GitError> {
        let (head, branch) = head_state(git, &self.info().root)?;
        let Some(branch) = branch else {
            return Ok(Err(format!(
                "HEAD is detached at {}; check out a branch to take the result",
                head.short()
            )));
        };
        if self.info().branch.as_deref() != Some(branch.as_str()) {
            return Ok(Err(format!(
                "HEAD moved to branch {branch} during the run (it was on {})",
                self.info().branch.as_deref().unwrap_or("a detached HEAD")
            )));
        }
        if &head != expected_head {
            return Ok(Err(format!(
                "branch {branch} moved from {} to {} during the run",
                expected_head.short(),
                head.short()
            )));
        }
        if !is_ancestor(objects, expected_head, to)? {
            return Ok(Err(format!(
                "{} does not descend from {branch} ({}): not a fast-forward",
                to.short(),
                expected_head.short()
            )));
        }
        Ok(Ok(branch))
    }

    /// What in the user's checkout keeps the fast-forward from `from` to
    /// `to` from being written, if anything: uncommitted changes in
    /// `changed` (repo-relative), files git does not track where the run
    /// writes, or another git process's index lock.
    fn checkout_in_the_way(
        &self,
        git: &Repository,
        objects: &Repository,
        from: &CommitId,
        to: &CommitId,
        changed: &BTreeSet<String>,
    ) -> Result<Option<String>, GitError> {
        let dirty = dirty_paths_among(git, changed)?;
        let blocking: Vec<&str> = changed
            .iter()
            .map(String::as_str)
            .filter(|path| dirty.iter().any(|d| d == path))
            .collect();
        if !blocking.is_empty() {
            return Ok(Some(format!(
                "uncommitted changes in files the run changed: {}",
                blocking.join(", ")
            )));
        }
        let in_the_way = untracked_in_the_way(objects, from, to, &self.info().root)?;
        if !in_the_way.is_empty() {
            return Ok(Some(format!(
                "files git does not track (untracked or ignored) are where the run writes, and the fast-forward would overwrite them: {}",
                in_the_way.join(", ")
            )));
        }
        if git.path().join("index.lock").exists() {
            return Ok(Some(
                "the index is locked by another git process (index.lock)".to_string(),
            ));
        }
        Ok(None)
    }

    /// What the merge did, told from the checkout after it: the branch at
    /// `to` with every changed file as git expects it is `Updated`; the
    /// branch untouched after a refusal is `Skipped` (the undo ref goes
    /// again); anything else is `Failed`, with the next step for the user.
    fn outcome(
        &self,
        git: &Repository,
        objects: &Repository,
        tried: TriedMove<'_>,
    ) -> Result<FastForward, GitError> {
        let TriedMove {
            branch,
            from,
            to,
            changed,
            run_branch,
            undo,
            merge,
            output,
        } = tried;
        match self.checkout_state(&changed) {
            Ok(state) if state.clean_at(&branch, to) && output.success => {
                Ok(FastForward::Updated {
                    branch,
                    from: from.clone(),
                    to: to.clone(),
                    undo: undo_command(run_id_of_branch(run_branch)),
                })
            }
            Ok(state) if state.clean_at(&branch, from) && !output.success => {
                if let Ok(mut reference) = git.find_reference(&undo) {
                    let _ = reference.delete();
                }
                Ok(FastForward::Skipped {
                    reason: format!(
                        "`{}` refused: {}",
                        merge.display(),
                        first_lines(&output.stderr)
                    ),
                    command: take_command(run_branch),
                })
            }
            state => {
                let what = if output.success {
                    format!("`{}` reported success, but", merge.display())
                } else {
                    format!(
                        "`{}` failed ({}) and",
                        merge.display(),
                        first_lines(&output.stderr)
                    )
                };
                Ok(match state {
                    Ok(state) => FastForward::Failed {
                        reason: format!(
                            "{what} {}; undo ref {undo}",
                            state.differences(&branch, to).join("; ")
                        ),
                        command: restore_command(&state.restorable(objects, &changed)?),
                    },
                    Err(error) => FastForward::Failed {
                        reason: format!("{what} the result could not be checked: {error}"),
                        command: "git status".to_string(),
                    },
                })
            }
        }
    }

    /// The user's checkout after the merge: HEAD's commit and branch, and
    /// which of `paths` differ from HEAD in the index or the working tree
    /// (as git sees them, filters applied).
    fn checkout_state(&self, paths: &[String]) -> Result<CheckoutState, GitError> {
        let git = self.git()?;
        let (head, on) = head_state(&git, &self.info().root)?;
        let mut mismatched = Vec::new();
        if !paths.is_empty() {
            let mut status = GitCommand::new(&self.info().root)
                .arg("--no-optional-locks")
                .arg("--literal-pathspecs")
                .arg("status")
                .arg("--porcelain")
                .arg("--untracked-files=all")
                .arg("--ignore-submodules=all")
                .arg("--");
            for path in paths {
                status = status.arg(path);
            }
            mismatched = status
                .run()?
                .stdout
                .lines()
                .filter_map(|line| line.get(3..))
                .map(str::to_string)
                .collect();
        }
        Ok(CheckoutState {
            head,
            branch: on,
            mismatched,
        })
    }
}

/// The move of the user's branch as it was tried: the branch, the commits
/// it moves between, the paths the move changes (with those the run
/// touched, sorted), the run branch, the undo ref written before the move,
/// and the merge with what it gave.
struct TriedMove<'a> {
    branch: String,
    from: &'a CommitId,
    to: &'a CommitId,
    changed: Vec<String>,
    run_branch: &'a str,
    undo: String,
    merge: GitCommand,
    output: GitOutput,
}

/// See [`Repo::checkout_state`].
struct CheckoutState {
    head: CommitId,
    branch: Option<String>,
    mismatched: Vec<String>,
}

impl CheckoutState {
    /// On `branch` at `commit`, with every path matching it.
    fn clean_at(&self, branch: &str, commit: &CommitId) -> bool {
        self.branch.as_deref() == Some(branch) && &self.head == commit && self.mismatched.is_empty()
    }

    /// How the checkout differs from `branch` at `commit`, one phrase each.
    fn differences(&self, branch: &str, commit: &CommitId) -> Vec<String> {
        let mut found = Vec::new();
        if self.branch.as_deref() != Some(branch) {
            found.push(format!("HEAD is no longer on {branch}"));
        }
        if &self.head != commit {
            found.push(format!(
                "HEAD is at {} (expected {})",
                self.head.short(),
                commit.short()
            ));
        }
        if !self.mismatched.is_empty() {
            found.push(format!(
                "files differ from HEAD: {}",
                self.mismatched.join(", ")
            ));
        }
        found
    }

    /// Those of `changed` that HEAD has, so `git restore` can put them back.
    fn restorable<'a>(
        &self,
        objects: &Repository,
        changed: &'a [String],
    ) -> Result<Vec<&'a str>, GitError> {
        let in_head: BTreeSet<String> = tree_files(objects, &self.head)?
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        Ok(changed
            .iter()
            .map(String::as_str)
            .filter(|path| in_head.contains(*path))
            .collect())
    }
}

/// `git restore --source=HEAD --staged --worktree -- <paths>`: makes the
/// files the fast-forward touched (those HEAD has) match whatever HEAD now
/// is; they had no uncommitted changes before, so nothing of the user's is
/// lost. `git status` when there is no such file.
fn restore_command(paths: &[&str]) -> String {
    if paths.is_empty() {
        return "git status".to_string();
    }
    let mut command = String::from("git restore --source=HEAD --staged --worktree --");
    for path in paths {
        command.push(' ');
        command.push_str(&shell_quote(path));
    }
    command
}

/// `path` as one shell word.
fn shell_quote(path: &str) -> String {
    let plain = !path.is_empty()
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./+=:@%".contains(c));
    if plain {
        path.to_string()
    } else {
        format!("'{}'", path.replace('\'', "'\\''"))
    }
}

/// Paths where the fast-forward from `from` to `to` would write but the
/// working tree at `root` holds something git does not track in `from`: a
/// file, link or folder at an added path, or a file or link where an added
/// path needs a folder. `git merge` silently overwrites ignored files
/// there; swarm refuses instead. Sorted.
fn untracked_in_the_way(
    repo: &Repository,
    from: &CommitId,
    to: &CommitId,
    root: &Path,
) -> Result<Vec<String>, GitError> {
    let before: BTreeSet<String> = tree_files(repo, from)?
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    let tracked_dirs: BTreeSet<String> = before
        .iter()
        .flat_map(|path| parent_dirs(path))
        .map(str::to_string)
        .collect();
    let mut in_the_way = BTreeSet::new();
    for (path, _) in tree_files(repo, to)? {
        if before.contains(&path) {
            continue;
        }
        for dir in parent_dirs(&path) {
            if tracked_dirs.contains(dir) {
                continue;
            }
            let on_disk = fs::symlink_metadata(root.join(dir));
            if on_disk.is_ok_and(|meta| !meta.is_dir()) {
                in_the_way.insert(dir.to_string());
            }
        }
        let full = root.join(&path);
        match fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_dir() => {
                if holds_untracked(&full, &path, &before) {
                    in_the_way.insert(path);
                }
            }
            Ok(_) => {
                in_the_way.insert(path);
            }
            Err(_) => {}
        }
    }
    Ok(in_the_way.into_iter().collect())
}

/// `a/b/c.py` → `a`, `a/b`.
fn parent_dirs(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(move |(i, _)| &path[..i])
}

/// Whether the folder `dir` (repo-relative `rel`) holds anything that is
/// not a tracked file of `tracked`.
fn holds_untracked(dir: &Path, rel: &str, tracked: &BTreeSet<String>) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return true;
    };
    entries.flatten().any(|entry| {
        let child = format!("{rel}/{}", entry.file_name().to_string_lossy());
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => holds_untracked(&entry.path(), &child, tracked),
            _ => !tracked.contains(&child),
        }
    })
}

fn is_ancestor(git: &Repository, ancestor: &CommitId, commit: &CommitId) -> Result<bool, GitError> {
    let op = || format!("compare {} and {}", ancestor.short(), commit.short());
    match git.graph_descendant_of(commit.oid()?, ancestor.oid()?) {
        Ok(descends) => Ok(descends),
        Err(e) if e.code() == ErrorCode::NotFound => Ok(false),
        Err(e) => Err(GitError::git2(op(), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_quote_paths_and_name_the_undo_ref() {
        assert_eq!(
            undo_command("20261122-101500-7f3a"),
            "git reset --keep refs/swarm/20261122-101500-7f3a/pre-ff"
        );
        assert_eq!(
            restore_command(&["a/b.py", "it's here.py"]),
            "git restore --source=HEAD --staged --worktree -- a/b.py 'it'\\''s here.py'"
        );
        assert_eq!(parent_dirs("a/b/c.py").collect::<Vec<_>>(), ["a", "a/b"]);
        assert_eq!(run_id_of_branch("refs/heads/swarm/r-1/best"), "r-1");
    }
}
