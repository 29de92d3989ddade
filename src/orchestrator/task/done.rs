//! Whether a task the model calls done is done: what it names holds in the
//! tree it leaves (see [`crate::pipeline::task::stated::unmet`]) — the
//! files it creates exist, those it deletes are gone, a name it renames is
//! defined under its new name, a definition it moves is at its new module
//! and no longer defined at its old one. The model's word alone
//! never ends a task.
//!
//! What the instruction itself states (see
//! [`crate::pipeline::task::stated`]) holds a task to it when it is the
//! task's: the plan has one task, the task's files hold a move's new
//! module, or its title names the renamed name.

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
        crate::lang::names::defines(rel, &text, name, assignment_counts)
    }

    fn module_of(&self, rel: &str) -> String {
        crate::lang::module_name(rel)
    }

    fn file_of(&self, module: &str) -> String {
        crate::lang::names::file_of(module, &|rel| self.0.join(rel).is_file())
    }
}

/// What `task` names that does not hold in the worktree; empty when it is
/// done.
pub(super) fn unmet(cx: &RunContext<'_>, state: &RunState, task: &Task) -> Vec<String> {
    let mut renames = task.renames.clone();
    let mut modules = Vec::new();
    let mut keep_old = false;
    if let Some(book) = state.work.tasks.as_ref() {
        let single = book.plan.tasks.len() == 1;
        let said = stated::stated(&book.instruction);
        for rename in said.renames {
            let known = renames.iter().any(|r| r.from == rename.from);
            if !known && (single || concerns(task, &rename)) {
                renames.push(rename);
            }
        }
        let own = |f: &String| {
            task.change
                .iter()
                .chain(&task.create)
                .chain(&task.delete)
                .any(|t| t == f)
        };
        modules.extend(
            said.modules
                .into_iter()
                .filter(|m| single || own(&m.from) || own(&m.to)),
        );
        keep_old = said.keep_old;
    }
    stated::unmet_with_modules(task, &renames, (&modules, keep_old), &Worktree(cx.root))
}

/// Whether a rename the instruction states is `task`'s: its files hold the
/// new module of a move, or its title names the old or the new name.
fn concerns(task: &Task, rename: &crate::pipeline::task::Rename) -> bool {
    let named = |n: &str| {
        let short = n.rsplit('.').next().unwrap_or(n);
        task.title.contains(short)
    };
    let destination = rename.to.rsplit_once('.').is_some_and(|(module, _)| {
        task.change
            .iter()
            .chain(&task.create)
            .any(|f| crate::lang::module_name(f) == module)
    });
    destination || named(&rename.from) || named(&rename.to)
}
