//! `swarm targets`: the repository's independent targets (each package
//! with tests of its own and a runner), for people or as a CI matrix
//! (`--json`), so a CI can fan one instruction out over them, one job and
//! one pull request per target (see docs/hooks-and-ci.md). Nothing is run
//! or installed: only committed files are read.

use std::path::Path;

use crate::error::{ExitKind, SwarmError};
use crate::lang::targets::{self, Target};

use super::runs::{open_repo, RepoArgs};

/// Lists the targets under `--target-dir` (default: the current folder).
pub fn execute(args: &RepoArgs) -> Result<ExitKind, SwarmError> {
    let repo = open_repo(args.target_dir.as_deref())?;
    let info = repo.info();
    let folder = if info.target_rel.is_empty() {
        info.root.clone()
    } else {
        info.root.join(&info.target_rel)
    };
    let prefix = if info.target_rel.is_empty() {
        String::new()
    } else {
        format!("{}/", info.target_rel)
    };
    let tracked: Vec<String> = repo
        .tracked_files()?
        .into_iter()
        .filter_map(|path| path.strip_prefix(&prefix).map(str::to_string))
        .collect();
    let found = targets::find(&folder, &tracked);
    if args.json {
        super::print_line(&targets::matrix_json(&found).to_string());
    } else {
        print_table(&found, &folder);
    }
    Ok(ExitKind::Success)
}

/// One line a target; a sentence when there is none.
fn print_table(found: &[Target], folder: &Path) {
    if found.is_empty() {
        super::print_line(&format!(
            "no target with tests of its own under {}: swarm needs tests to judge a change",
            folder.display()
        ));
        return;
    }
    let width = found.iter().map(|t| t.target.len()).max().unwrap_or(0);
    for t in found {
        super::print_line(&format!(
            "{:width$}  {} ({}, {} test file{})",
            t.target,
            t.language,
            t.runner,
            t.tests,
            if t.tests == 1 { "" } else { "s" },
        ));
    }
}
