//! Publishing a run's result for review: its branch pushed to a remote
//! under the name of the target's pull-request branch.

use super::command::{first_lines, GitCommand};
use super::{GitError, Repo};

impl Repo {
    /// Pushes `local` (a branch or commit of this repository) to `remote`
    /// as the branch `dest`, replacing what that branch held: it is swarm's
    /// own pull-request branch, made anew by every run for the same target
    /// and instruction. The remote's credentials are git's (a CI checkout's
    /// token, a credential helper); nothing else is pushed.
    pub fn push_branch(&self, remote: &str, local: &str, dest: &str) -> Result<(), GitError> {
        let out = GitCommand::new(&self.info().root)
            .arg("push")
            .arg("--quiet")
            .arg("--force")
            .arg("--no-verify")
            .arg(remote)
            .arg(format!("{local}:refs/heads/{dest}"))
            .output()?;
        if out.success {
            Ok(())
        } else {
            Err(GitError::Push {
                remote: remote.to_string(),
                branch: dest.to_string(),
                message: first_lines(&out.stderr),
            })
        }
    }
}
