//! `swarm hook`: swarm run from a git hook — the pre-commit framework's
//! `.pre-commit-hooks.yaml` at the repository root, or `hooks/pre-commit`.
//!
//! A hook must not surprise: it is a dry run (the result stays on
//! `swarm/<run>/best`, the user's branch, index and files are not touched),
//! it spends at most 3 rounds unless told otherwise, it does not wait for
//! another run's lock, and its log goes under the git directory so the hook
//! adds no untracked file to the tree. It reports and does not block (exit
//! 0) unless `SWARM_HOOK_BLOCK=1`; an interrupt always ends it.

use std::path::PathBuf;

use super::printer::Printer;
use super::{run, RunArgs};
use crate::error::{ExitKind, SwarmError};
use crate::git::Repo;

/// Rounds a hook spends when neither the flag nor its variable says.
const HOOK_ROUNDS: u32 = 3;

/// Runs swarm as a hook; see the module docs.
pub async fn execute(args: RunArgs, printer: &Printer) -> Result<ExitKind, SwarmError> {
    let args = hook_args(args);
    let block = std::env::var("SWARM_HOOK_BLOCK").is_ok_and(|v| v == "1");
    let outcome = run::execute(args, printer).await;
    let code = match &outcome {
        Ok(kind) => kind.code(),
        Err(err) => err.kind.code(),
    };
    match outcome {
        Ok(ExitKind::Success) => Ok(ExitKind::Success),
        Ok(ExitKind::Interrupted) => Ok(ExitKind::Interrupted),
        Err(err) if err.kind == ExitKind::Interrupted => Err(err),
        outcome if block => {
            eprintln!("swarm hook: exit {code}; refused (SWARM_HOOK_BLOCK=1)");
            outcome
        }
        outcome => {
            if let Err(err) = outcome {
                eprintln!("swarm: error: {err}");
            }
            eprintln!(
                "swarm hook: exit {code}; not blocking (set SWARM_HOOK_BLOCK=1 to block on it)"
            );
            Ok(ExitKind::Success)
        }
    }
}

/// The run flags of a hook: the current folder, a dry run, [`HOOK_ROUNDS`]
/// rounds, no wait for the lock and the log under the git directory, each
/// unless set.
fn hook_args(mut args: RunArgs) -> RunArgs {
    args.dry_run = true;
    args.max_iterations.get_or_insert(HOOK_ROUNDS);
    args.lock_timeout.get_or_insert(0);
    let target = args
        .target_dir
        .get_or_insert_with(|| PathBuf::from("."))
        .clone();
    if args.log_file.is_none() {
        // Not in a repository: the run itself says so in its own words.
        if let Ok(Some(repo)) = Repo::open(&target) {
            args.log_file = Some(repo.info().common_dir.join("swarm/experiment_data.json"));
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_is_a_short_dry_run_that_does_not_wait() {
        let dir = tempfile::tempdir().unwrap();
        let args = hook_args(RunArgs {
            target_dir: Some(dir.path().to_path_buf()),
            ..RunArgs::default()
        });
        assert!(args.dry_run);
        assert_eq!(args.max_iterations, Some(HOOK_ROUNDS));
        assert_eq!(args.lock_timeout, Some(0));
        // No repository: the log is left to the run, which refuses.
        assert_eq!(args.log_file, None);
    }

    #[test]
    fn the_target_defaults_to_the_current_folder() {
        let args = hook_args(RunArgs::default());
        assert_eq!(args.target_dir, Some(PathBuf::from(".")));
    }

    #[test]
    fn what_the_user_set_wins() {
        let args = hook_args(RunArgs {
            max_iterations: Some(7),
            lock_timeout: Some(30),
            log_file: Some(PathBuf::from("my.json")),
            ..RunArgs::default()
        });
        assert_eq!(args.max_iterations, Some(7));
        assert_eq!(args.lock_timeout, Some(30));
        assert_eq!(args.log_file, Some(PathBuf::from("my.json")));
    }
}
