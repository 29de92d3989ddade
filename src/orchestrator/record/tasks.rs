//! The experiment log's entries of refactoring on request (`--task`): the
//! plan of the instruction, where each task got, and the public-name check
//! of a task's attempt.

use super::{as_json, Recorder};
use crate::error::SwarmError;
use crate::log::{Action, Agent, Kind, TaskPlanRecord, TaskRecord};
use crate::pipeline::{Task, TaskPlan, TaskStatus};
use crate::stage::judge::api::ApiCheck;

impl Recorder<'_> {
    /// The tasks `instruction` was planned as.
    pub fn task_plan(&mut self, instruction: &str, plan: &TaskPlan) -> Result<(), SwarmError> {
        let lines: Vec<String> = plan
            .tasks
            .iter()
            .map(|t| {
                format!(
                    "{}. {} ({}; {})",
                    t.number,
                    t.title,
                    t.kind.as_str(),
                    t.files().join(", ")
                )
            })
            .collect();
        let mut output = lines.join("\n");
        if let Some(why) = &plan.fallback {
            output = format!("fallback: {why}\n{output}");
        }
        let kind = Kind::TaskPlan(TaskPlanRecord {
            instruction: instruction.to_string(),
            tasks: plan.tasks.clone(),
            fallback: plan.fallback.clone(),
            notes: plan.notes.clone(),
        });
        let e = self.entry(
            Agent::Auditor,
            Action::CodeAnalysis,
            format!("plan the instruction as tasks: {instruction}"),
            output,
            kind,
        );
        self.write(e)
    }

    /// Where task `task` (of `total`) got.
    pub fn task_settled(
        &mut self,
        task: &Task,
        total: usize,
        status: &TaskStatus,
    ) -> Result<(), SwarmError> {
        let (reason, commits, tests_changed) = match status {
            TaskStatus::Done {
                commits,
                tests_changed,
                ..
            } => (None, commits.clone(), tests_changed.clone()),
            TaskStatus::Skipped { reason } => (Some(reason.clone()), Vec::new(), Vec::new()),
            TaskStatus::NotReached | TaskStatus::Pending => (None, Vec::new(), Vec::new()),
        };
        let output = match &reason {
            Some(reason) => format!("{}: {reason}", status.as_str()),
            None => format!("{} ({} commit(s))", status.as_str(), commits.len()),
        };
        let kind = Kind::Task(TaskRecord {
            number: task.number,
            total,
            title: task.title.clone(),
            task_kind: task.kind,
            status: status.as_str().to_string(),
            reason,
            commits,
            tests_changed,
        });
        let e = self.entry(
            Agent::System,
            Action::Fix,
            format!("task {}/{total}: {}", task.number, task.title),
            output,
            kind,
        );
        self.write(e)
    }

    /// The public-name check of attempt `attempt` (see
    /// [`crate::stage::judge::api`]).
    pub fn api_check(&mut self, check: &ApiCheck, attempt: u32) -> Result<(), SwarmError> {
        let files: Vec<&str> = check.modules.iter().map(|m| m.file.as_str()).collect();
        let what = format!(
            "public-name check of {}: every public name at its old path, compared with the best state",
            files.join(", ")
        );
        self.behaviour_entry(what, check.describe(), attempt, as_json(check))
    }
}
