//! Refactoring on request (`--task`): the user's [`Instruction`], the
//! [`TaskPlan`] the Planner makes of it (tasks with their files, their
//! dependencies and their [`TaskKind`]), and where each task got
//! ([`TaskStatus`]). Values and the rules that order them; nothing here
//! asks a model, runs a tool or touches git.

pub mod stated;

use serde::{Deserialize, Serialize};

/// Longest instruction taken, in characters: an instruction is a request,
/// not a document.
pub const MAX_INSTRUCTION_CHARS: usize = 8_000;

/// At most this many tasks in one plan.
pub const MAX_TASKS: usize = 12;

/// The user's instruction, checked: not empty, not oversized. It is data,
/// never authority: prompts fence it as untrusted text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instruction(String);

/// Why an instruction is refused (exit 1).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InstructionProblem {
    #[error("the task instruction is empty; say what to refactor, for example --task \"move parse_money into shop/money.py\"")]
    Empty,
    #[error("the task instruction has {chars} characters, more than the {max} allowed; say what to do in a few sentences")]
    TooLong { chars: usize, max: usize },
}

impl Instruction {
    /// The instruction `text` (trimmed), or why it cannot be one.
    pub fn new(text: &str) -> Result<Self, InstructionProblem> {
        let text = text.trim();
        if text.is_empty() {
            return Err(InstructionProblem::Empty);
        }
        let chars = text.chars().count();
        if chars > MAX_INSTRUCTION_CHARS {
            return Err(InstructionProblem::TooLong {
                chars,
                max: MAX_INSTRUCTION_CHARS,
            });
        }
        Ok(Self(text.to_string()))
    }

    /// The instruction's text.
    pub fn text(&self) -> &str {
        &self.0
    }
}

/// What a task may do to behaviour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// A refactoring: every public name keeps its path and its behaviour.
    #[default]
    Preserving,
    /// The instruction asks for different behaviour: tests that expect the
    /// old one meet it honestly (see the run's stop reasons).
    Change,
}

impl TaskKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskKind::Preserving => "behaviour-preserving",
            TaskKind::Change => "behaviour change",
        }
    }
}

/// A public name the task renames: the old name is compared with the new
/// one (at its old module's path, or at a dotted `module.Name`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rename {
    pub from: String,
    pub to: String,
}

/// One task of the plan. Paths are target-relative.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// 1-based place in the plan.
    pub number: usize,
    pub title: String,
    /// Files the task changes (they exist).
    pub change: Vec<String>,
    /// Files the task creates.
    pub create: Vec<String>,
    /// Files the task deletes.
    pub delete: Vec<String>,
    /// Numbers of earlier tasks this one needs done first.
    pub depends_on: Vec<usize>,
    pub kind: TaskKind,
    /// Public names the task renames.
    #[serde(default)]
    pub renames: Vec<Rename>,
}

impl Task {
    /// Every file the task touches: changed, created, deleted (each once).
    pub fn files(&self) -> Vec<&str> {
        let mut files: Vec<&str> = Vec::new();
        for f in self.change.iter().chain(&self.create).chain(&self.delete) {
            if !files.contains(&f.as_str()) {
                files.push(f);
            }
        }
        files
    }
}

/// The tasks of an instruction, and why the plan fell back to one task
/// when the model's plan could not be used.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TaskPlan {
    pub tasks: Vec<Task>,
    /// Why the model's plan was not used, when it was not.
    pub fallback: Option<String>,
    /// What validation left out of the model's plan (a test file, a path
    /// outside the target, a task with no file left).
    pub notes: Vec<String>,
}

impl TaskPlan {
    /// Task numbers in an order where every task comes after those it
    /// depends on (plan order among equals). A plan is validated acyclic;
    /// a task caught in a cycle anyway comes last.
    pub fn order(&self) -> Vec<usize> {
        let mut done: Vec<usize> = Vec::new();
        while done.len() < self.tasks.len() {
            let next = self.tasks.iter().find(|t| {
                !done.contains(&t.number) && t.depends_on.iter().all(|d| done.contains(d))
            });
            match next {
                Some(task) => done.push(task.number),
                None => {
                    let rest = self.tasks.iter().map(|t| t.number);
                    let rest: Vec<usize> = rest.filter(|n| !done.contains(n)).collect();
                    done.extend(rest);
                }
            }
        }
        done
    }

    /// The task numbered `number`.
    pub fn task(&self, number: usize) -> Option<&Task> {
        self.tasks.iter().find(|t| t.number == number)
    }
}

/// Where a task got.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TaskStatus {
    /// Not started yet.
    Pending,
    /// Accepted: its commits on the run branch, and the test files it
    /// changed (only with `--allow-test-edits`).
    Done {
        commits: Vec<String>,
        tests_changed: Vec<String>,
        /// What the task did to the tests of each file it changed
        /// (`tests/t.py (removed test_a; added test_b)`, see
        /// [`test_changes`]).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        test_changes: Vec<String>,
    },
    /// Given up, and why (its own attempts failed, or a task it depends
    /// on was skipped).
    Skipped { reason: String },
    /// The run stopped before it (a limit, a conflict with the tests).
    NotReached,
}

impl TaskStatus {
    /// `done`, `skipped`, `not_reached`, `pending`.
    pub fn as_str(&self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::Done { .. } => "done",
            TaskStatus::Skipped { .. } => "skipped",
            TaskStatus::NotReached => "not_reached",
        }
    }
}

/// What a task's latest reply came to, as far as the task's end goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskReply {
    /// The model answered that the task needs no further change.
    SaidDone,
    /// A change the Reviewer found leaves every file as it is.
    LeftUnchanged,
    /// Anything else: a change, or no usable one.
    Other,
}

/// Whether a task is done after `reply`: the model said so, or — once a
/// change of the task is accepted (`accepted_before`) — it sent the files
/// back as they are. Green tests alone never end a task.
pub fn task_done(reply: TaskReply, accepted_before: bool) -> bool {
    match reply {
        TaskReply::SaidDone => true,
        TaskReply::LeftUnchanged => accepted_before,
        TaskReply::Other => false,
    }
}

/// The line that stops the run when a task's intended behaviour change
/// breaks tests that expect the old behaviour (`broke`: each test's id,
/// with its assertion when known) and test edits are not allowed; `None`
/// when the run goes on.
pub fn test_conflict(task: &Task, allow_test_edits: bool, broke: &[String]) -> Option<String> {
    if task.kind != TaskKind::Change || allow_test_edits || broke.is_empty() {
        return None;
    }
    Some(format!(
        "task {} ({}) changes behaviour that tests expect: {} contradict(s) the instruction; \
         the tests were not changed and nothing is delivered — rerun with --allow-test-edits \
         to let the task change them",
        task.number,
        task.title,
        broke.join(", ")
    ))
}

/// What a task's change did to the tests of each test file it rewrote
/// (`files`), from the tests that ran at `best` and with the change:
/// `tests/test_a.py (removed test_old; added test_new)`, or the file alone
/// when the same tests run (their bodies changed).
pub fn test_changes(
    best: &super::Snapshot,
    result: &super::Snapshot,
    files: &[String],
) -> Vec<String> {
    let ids = |s: &super::Snapshot| -> Vec<String> {
        s.tests.as_ref().map_or_else(Vec::new, |t| {
            let mut ids: Vec<String> = t.passed.iter().cloned().collect();
            ids.extend(t.failing.iter().map(|c| c.id.clone()));
            ids
        })
    };
    let (before, after) = (ids(best), ids(result));
    files
        .iter()
        .map(|file| {
            let prefix = format!("{file}::");
            let of = |ids: &[String], other: &[String]| -> Vec<String> {
                let mut names: Vec<String> = ids
                    .iter()
                    .filter(|id| id.starts_with(&prefix) && !other.contains(id))
                    .map(|id| id[prefix.len()..].to_string())
                    .collect();
                names.sort();
                names
            };
            let (removed, added) = (of(&before, &after), of(&after, &before));
            let mut parts = Vec::new();
            if !removed.is_empty() {
                parts.push(format!("removed {}", removed.join(", ")));
            }
            if !added.is_empty() {
                parts.push(format!("added {}", added.join(", ")));
            }
            if parts.is_empty() {
                file.clone()
            } else {
                format!("{file} ({})", parts.join("; "))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(number: usize, depends_on: &[usize]) -> Task {
        Task {
            number,
            title: format!("task {number}"),
            change: vec!["a.py".into()],
            create: vec!["b.py".into()],
            delete: vec!["a.py".into()],
            depends_on: depends_on.to_vec(),
            kind: TaskKind::Preserving,
            renames: Vec::new(),
        }
    }

    #[test]
    fn an_instruction_is_neither_empty_nor_oversized() {
        assert_eq!(Instruction::new("  \n\t"), Err(InstructionProblem::Empty));
        let long = "x".repeat(MAX_INSTRUCTION_CHARS + 1);
        assert!(matches!(
            Instruction::new(&long),
            Err(InstructionProblem::TooLong { .. })
        ));
        assert_eq!(Instruction::new(" split it ").unwrap().text(), "split it");
    }

    #[test]
    fn a_task_is_done_when_said_or_sent_back_unchanged_after_a_change() {
        assert!(task_done(TaskReply::SaidDone, false));
        assert!(task_done(TaskReply::LeftUnchanged, true));
        assert!(!task_done(TaskReply::LeftUnchanged, false));
        assert!(!task_done(TaskReply::Other, true));
    }

    #[test]
    fn only_an_intended_change_that_breaks_tests_conflicts_without_test_edits() {
        let broke = vec!["tests/test_a.py::test_old".to_string()];
        let preserving = task(1, &[]);
        assert_eq!(test_conflict(&preserving, false, &broke), None);
        let change = Task {
            kind: TaskKind::Change,
            ..task(2, &[])
        };
        assert_eq!(test_conflict(&change, true, &broke), None);
        assert_eq!(test_conflict(&change, false, &[]), None);
        let line = test_conflict(&change, false, &broke).unwrap_or_default();
        assert!(line.starts_with("task 2 (task 2) changes behaviour that tests expect"));
        assert!(line.contains(
            "tests/test_a.py::test_old contradict(s) the instruction; the tests were not changed"
        ));
    }

    #[test]
    fn the_test_changes_of_a_rewritten_file_name_the_tests_removed_and_added() {
        let run = |ids: &[&str]| crate::pipeline::Snapshot {
            tests: Some(crate::pipeline::TestState {
                passed: ids.iter().map(|s| s.to_string()).collect(),
                total: ids.len(),
                ..Default::default()
            }),
            checks: None,
            lint_score: None,
            lint: Default::default(),
        };
        let best = run(&["tests/t.py::test_raises", "tests/t.py::test_mean"]);
        let after = run(&["tests/t.py::test_zero", "tests/t.py::test_mean"]);
        let files = vec!["tests/t.py".to_string()];
        assert_eq!(
            test_changes(&best, &after, &files),
            vec!["tests/t.py (removed test_raises; added test_zero)"]
        );
        assert_eq!(test_changes(&best, &best, &files), vec!["tests/t.py"]);
    }

    #[test]
    fn tasks_run_after_what_they_depend_on() {
        let plan = TaskPlan {
            tasks: vec![task(1, &[3]), task(2, &[]), task(3, &[2])],
            fallback: None,
            notes: Vec::new(),
        };
        assert_eq!(plan.order(), vec![2, 3, 1]);
        assert_eq!(task(1, &[]).files(), vec!["a.py", "b.py"]);
    }
}
