//! Whether a task the model calls done is done: what it names holds in the
//! tree it leaves (see [`crate::pipeline::task::stated::unmet`]) — the
//! files it creates exist, those it deletes are gone, a name it renames is
//! defined under its new name, a definition it moves is at its new module
//! and no longer defined at its old one. The plan's last task is held to
//! what the instruction itself states as well. The model's word alone
//! never ends a task.

use std::path::Path;

use crate::orchestrator::{RunContext, RunState};
use crate::pipeline::task::stated::{self, Tree};
use crate::pipeline::Task;
use crate::stage::read_source_text;

/// The tree a task leaves: the worktree's target folder.
struct Worktree<'a>(&'a Path);

impl Tree for Worktree<'_> {
    fn exists(&self, rel: &str) -> bool {
        self.0.join(rel).is_file()
    }

    fn defines(&self, rel: &str, name: &str, assignment_counts: bool) -> Option<bool> {
        let text = read_source_text(self.0, rel)?;
        crate::lang::beyond::defines(rel, &text, name, assignment_counts)
    }

    fn module_of(&self, rel: &str) -> String {
        crate::lang::module_name(rel)
    }
}

/// What `task` names that does not hold in the worktree; empty when it is
/// done.
pub(super) fn unmet(cx: &RunContext<'_>, state: &RunState, task: &Task) -> Vec<String> {
    let mut renames = task.renames.clone();
    if let Some(book) = state.work.tasks.as_ref() {
        if book.plan.order().last() == Some(&task.number) {
            for rename in stated::stated(&book.instruction).renames {
                if !renames.iter().any(|r| r.from == rename.from) {
                    renames.push(rename);
                }
            }
        }
    }
    stated::unmet(task, &renames, &Worktree(cx.root))
}
