//! The plan of an instruction (`--task`): asks the model for tasks, reads
//! its reply tolerantly (a JSON block or object, or Markdown sections with
//! `- change:` bullets) and validates it against the target: paths inside
//! it, no test files unless `--allow-test-edits`, changes only to files
//! that exist and creations only of files that do not, dependencies only
//! on other tasks and without cycles, at most [`MAX_TASKS`]. A reply with
//! no usable task falls back to one task over the files the instruction
//! names (or every source file) and says why.

use std::path::{Component, Path};

use serde_json::Value;

use super::super::{call_model, ModelCall};
use crate::llm::{ChatModel, ChatRequest, ChatResponse, LlmError};
use crate::pipeline::task::{Rename, MAX_TASKS};
use crate::pipeline::{clip, Instruction, Task, TaskKind, TaskPlan};
use crate::stage::is_test_path;

/// Source files the fallback task names when the instruction names none.
const FALLBACK_FILES: usize = 20;

/// What the plan is checked against.
pub struct PlanScope<'a> {
    /// The target's files (target-relative).
    pub files: &'a [String],
    /// The target folder relative to the repository root (`""` at the
    /// root): a path the plan writes from the repository root loses it.
    pub target_prefix: &'a str,
    pub allow_test_edits: bool,
}

/// Asks the model for the plan of `instruction`: the call for the log, and
/// the validated plan (or the fallback) with the reply.
pub async fn ask_tasks(
    model: &dyn ChatModel,
    request: ChatRequest,
    instruction: &Instruction,
    scope: &PlanScope<'_>,
) -> (ModelCall, Result<(TaskPlan, ChatResponse), LlmError>) {
    let (call, reply) = call_model(model, request).await;
    let planned = reply.map(|r| (plan_of(&r.text, instruction, scope), r));
    (call, planned)
}

/// The validated plan read from `reply`, or the fallback task when nothing
/// usable is in it.
pub fn plan_of(reply: &str, instruction: &Instruction, scope: &PlanScope<'_>) -> TaskPlan {
    let read = read_tasks(reply);
    match read.and_then(|raw| validate(raw, scope)) {
        Ok(plan) => plan,
        Err(why) => fallback(instruction, scope, why),
    }
}

/// A task as the reply wrote it, before validation.
#[derive(Debug, Default)]
struct RawTask {
    title: String,
    kind: TaskKind,
    change: Vec<String>,
    create: Vec<String>,
    delete: Vec<String>,
    depends_on: Vec<usize>,
    renames: Vec<Rename>,
}

/// The tasks of a reply: JSON first, then Markdown.
fn read_tasks(reply: &str) -> Result<Vec<RawTask>, String> {
    if let Some(tasks) = json_tasks(reply) {
        return Ok(tasks);
    }
    let tasks = markdown_tasks(reply);
    if tasks.is_empty() {
        return Err("the plan's reply held no task in JSON or Markdown".into());
    }
    Ok(tasks)
}

/// Candidate JSON texts: fenced blocks, then the span from the first `{`
/// or `[` to the last `}` or `]`.
fn json_candidates(reply: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut block: Option<String> = None;
    for line in reply.lines() {
        if line.trim_start().starts_with("```") {
            match block.take() {
                Some(text) => found.push(text),
                None => block = Some(String::new()),
            }
            continue;
        }
        if let Some(text) = block.as_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    let start = reply.find(['{', '[']);
    let end = reply.rfind(['}', ']']);
    if let (Some(s), Some(e)) = (start, end) {
        if s < e {
            found.push(reply[s..=e].to_string());
        }
    }
    found
}

fn json_tasks(reply: &str) -> Option<Vec<RawTask>> {
    for text in json_candidates(reply) {
        let Ok(value) = serde_json::from_str::<Value>(text.trim()) else {
            continue;
        };
        let list = match &value {
            Value::Array(items) => items.clone(),
            Value::Object(map) => match map.get("tasks").or_else(|| map.get("plan")) {
                Some(Value::Array(items)) => items.clone(),
                _ => continue,
            },
            _ => continue,
        };
        let tasks: Vec<RawTask> = list.iter().filter_map(json_task).collect();
        if !tasks.is_empty() {
            return Some(tasks);
        }
    }
    None
}

fn json_task(value: &Value) -> Option<RawTask> {
    let map = value.as_object()?;
    let field = |names: &[&str]| {
        map.iter()
            .find(|(k, _)| {
                names.contains(&k.to_ascii_lowercase().replace([' ', '-'], "_").as_str())
            })
            .map(|(_, v)| v)
    };
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let list = |v: Option<&Value>| -> Vec<String> {
        match v {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            Some(Value::String(s)) => split_list(s),
            _ => Vec::new(),
        }
    };
    let depends = match field(&["depends_on", "dependencies", "depends", "after"]) {
        Some(Value::Array(items)) => items.iter().filter_map(number_of).collect(),
        Some(v) => number_of(v).into_iter().collect(),
        None => Vec::new(),
    };
    let renames = match field(&["renames", "rename"]) {
        Some(Value::Array(items)) => items.iter().filter_map(rename_of).collect(),
        _ => Vec::new(),
    };
    Some(RawTask {
        title: text(field(&["title", "name", "task", "description"])),
        kind: kind_of(&text(field(&["kind", "type"]))),
        change: list(field(&[
            "change",
            "files",
            "modify",
            "edit",
            "files_to_change",
        ])),
        create: list(field(&["create", "new", "add", "files_to_create"])),
        delete: list(field(&["delete", "remove", "files_to_delete"])),
        depends_on: depends,
        renames,
    })
}

fn number_of(value: &Value) -> Option<usize> {
    match value {
        Value::Number(n) => n.as_u64().map(|n| n as usize),
        Value::String(s) => digits(s),
        _ => None,
    }
}

fn digits(text: &str) -> Option<usize> {
    let d: String = text
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    d.parse().ok()
}

fn rename_of(value: &Value) -> Option<Rename> {
    let map = value.as_object()?;
    let get = |k: &str| map.get(k).and_then(Value::as_str).map(str::to_string);
    Some(Rename {
        from: get("from").or_else(|| get("old"))?,
        to: get("to").or_else(|| get("new"))?,
    })
}

fn kind_of(text: &str) -> TaskKind {
    let t = text.to_ascii_lowercase();
    if (t.contains("change") && !t.contains("preserv")) || t.contains("feature") {
        TaskKind::Change
    } else {
        TaskKind::Preserving
    }
}

/// `a.py, b.py` or `` `a.py` and `b.py` `` as paths.
fn split_list(text: &str) -> Vec<String> {
    text.split([',', ';', ' '])
        .map(|p| p.trim().trim_matches(['`', '"', '\'', '*']))
        .filter(|p| !p.is_empty() && *p != "and" && *p != "none" && *p != "-")
        .map(str::to_string)
        .collect()
}

/// Markdown tasks: a heading or a numbered line starts one, `- key: value`
/// bullets fill it.
fn markdown_tasks(reply: &str) -> Vec<RawTask> {
    let mut tasks: Vec<RawTask> = Vec::new();
    for line in reply.lines() {
        let trimmed = line.trim();
        if let Some(title) = task_start(trimmed) {
            tasks.push(RawTask {
                title,
                ..RawTask::default()
            });
            continue;
        }
        let Some(task) = tasks.last_mut() else {
            continue;
        };
        let bullet = trimmed.trim_start_matches(['-', '*', ' ']);
        let Some((key, value)) = bullet.split_once(':') else {
            continue;
        };
        let key = key.trim().trim_matches('*').to_ascii_lowercase();
        match key.as_str() {
            "change" | "files" | "modify" | "edit" | "files to change" => {
                task.change.extend(split_list(value))
            }
            "create" | "new" | "new files" | "files to create" => {
                task.create.extend(split_list(value))
            }
            "delete" | "remove" | "files to delete" => task.delete.extend(split_list(value)),
            "depends on" | "depends_on" | "dependencies" | "after" => {
                task.depends_on.extend(value.split(',').filter_map(digits))
            }
            "kind" | "type" => task.kind = kind_of(value),
            _ => {}
        }
    }
    tasks
}

/// The title of a line that starts a task: `## Task 2: title`,
/// `### 2. title`, `2. title`.
fn task_start(line: &str) -> Option<String> {
    let heading = line.starts_with('#');
    let rest = line.trim_start_matches('#').trim();
    let lower = rest.to_ascii_lowercase();
    let rest = if lower.starts_with("task") {
        rest[4..].trim_start()
    } else if heading {
        rest
    } else {
        let numbered = rest.chars().next().is_some_and(|c| c.is_ascii_digit());
        if !numbered {
            return None;
        }
        rest
    };
    let number_len = rest.chars().take_while(char::is_ascii_digit).count();
    if number_len == 0 {
        return None;
    }
    let title = rest[number_len..].trim_start_matches(['.', ':', ')', ' ', '-']);
    let title = title.trim().trim_matches('*').trim();
    (!title.is_empty()).then(|| title.to_string())
}

/// The plan's tasks checked against the target: numbered from 1, with
/// notes on what was dropped; `Err` with why when nothing usable is left.
fn validate(raw: Vec<RawTask>, scope: &PlanScope<'_>) -> Result<TaskPlan, String> {
    if raw.len() > MAX_TASKS {
        return Err(format!(
            "the plan had {} tasks, more than the {MAX_TASKS} allowed",
            raw.len()
        ));
    }
    let mut notes = Vec::new();
    let mut kept: Vec<(usize, Task)> = Vec::new();
    for (index, task) in raw.into_iter().enumerate() {
        let number = index + 1;
        match checked_task(number, task, scope, &mut notes) {
            Some(task) => kept.push((number, task)),
            None => notes.push(format!(
                "task {number} was dropped: no file of it may change"
            )),
        }
    }
    if kept.is_empty() {
        return Err("no task of the plan names a file that may change".into());
    }
    let renumber = |old: usize| kept.iter().position(|(n, _)| *n == old).map(|i| i + 1);
    let mut tasks = Vec::new();
    for (i, (_, task)) in kept.iter().enumerate() {
        let mut task = task.clone();
        task.number = i + 1;
        task.depends_on = task
            .depends_on
            .iter()
            .filter_map(|d| renumber(*d))
            .filter(|d| *d != task.number)
            .collect();
        task.depends_on.dedup();
        tasks.push(task);
    }
    let plan = TaskPlan {
        tasks,
        fallback: None,
        notes,
    };
    if has_cycle(&plan) {
        return Err("the plan's dependencies form a cycle".into());
    }
    Ok(plan)
}

/// One task with its paths checked, or `None` when none is left.
fn checked_task(
    number: usize,
    raw: RawTask,
    scope: &PlanScope<'_>,
    notes: &mut Vec<String>,
) -> Option<Task> {
    let exists = |p: &str| scope.files.iter().any(|f| f == p);
    let mut task = Task {
        number,
        title: clip(raw.title.trim(), 120).to_string(),
        change: Vec::new(),
        create: Vec::new(),
        delete: Vec::new(),
        depends_on: raw.depends_on,
        kind: raw.kind,
        renames: raw.renames,
    };
    let all = raw
        .change
        .into_iter()
        .map(|p| (p, 'c'))
        .chain(raw.create.into_iter().map(|p| (p, 'n')))
        .chain(raw.delete.into_iter().map(|p| (p, 'd')));
    for (path, what) in all {
        let path = match path.strip_prefix(scope.target_prefix) {
            Some(rest)
                if !scope.target_prefix.is_empty() && rest.starts_with('/') && !exists(&path) =>
            {
                rest.trim_start_matches('/').to_string()
            }
            _ => path,
        };
        let Some(path) = normalised(&path) else {
            notes.push(format!(
                "task {number}: `{path}` is not a path inside the target; left out"
            ));
            continue;
        };
        if !scope.allow_test_edits && is_test_path(&path) {
            notes.push(format!(
                "task {number}: `{path}` is a test file; left out (tests change only with --allow-test-edits)"
            ));
            continue;
        }
        let list = match (what, exists(&path)) {
            ('d', true) => &mut task.delete,
            ('d', false) => continue,
            (_, true) => &mut task.change,
            (_, false) => &mut task.create,
        };
        if !list.contains(&path) {
            list.push(path);
        }
    }
    if task.title.is_empty() {
        task.title = format!("task {number}");
    }
    (!task.files().is_empty()).then_some(task)
}

/// A target-relative path without `./`, or `None` when it leaves the
/// target, is absolute or lies in `.git`.
fn normalised(path: &str) -> Option<String> {
    let path = path
        .trim()
        .trim_matches(['`', '"', '\''])
        .replace('\\', "/");
    let path = path.trim_start_matches("./");
    if path.is_empty() || path.starts_with('/') || path.starts_with('~') || path.contains(':') {
        return None;
    }
    let ok = Path::new(path).components().all(|c| match c {
        Component::Normal(part) => part != ".git",
        _ => false,
    });
    ok.then(|| path.to_string())
}

fn has_cycle(plan: &TaskPlan) -> bool {
    let mut done: Vec<usize> = Vec::new();
    loop {
        let next = plan
            .tasks
            .iter()
            .find(|t| !done.contains(&t.number) && t.depends_on.iter().all(|d| done.contains(d)));
        match next {
            Some(t) => done.push(t.number),
            None => return done.len() < plan.tasks.len(),
        }
    }
}

/// One task over the files the instruction names (or every source file),
/// when the model's plan cannot be used: `why` says so.
pub fn fallback(instruction: &Instruction, scope: &PlanScope<'_>, why: String) -> TaskPlan {
    let text = instruction.text();
    let named = |f: &String| {
        let module = f.trim_end_matches(".py").replace('/', ".");
        let module = module.trim_end_matches(".__init__");
        text.contains(f.as_str()) || (module.contains('.') && text.contains(module))
    };
    let editable = |f: &&String| scope.allow_test_edits || !is_test_path(f);
    let mut change: Vec<String> = scope
        .files
        .iter()
        .filter(editable)
        .filter(|f| named(f))
        .cloned()
        .collect();
    let create: Vec<String> = text
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '`' | '"' | '\'' | '(' | ')'))
        .map(|w| w.trim_end_matches(['.', ':']))
        .filter(|w| w.ends_with(".py"))
        .filter_map(normalised)
        .filter(|w| !scope.files.contains(w) && (scope.allow_test_edits || !is_test_path(w)))
        .fold(Vec::new(), |mut acc, w| {
            if !acc.contains(&w) {
                acc.push(w);
            }
            acc
        });
    if change.is_empty() && create.is_empty() {
        change = scope
            .files
            .iter()
            .filter(|f| f.ends_with(".py") && !is_test_path(f))
            .take(FALLBACK_FILES)
            .cloned()
            .collect();
    }
    let title = clip(text.lines().next().unwrap_or(text), 72).to_string();
    TaskPlan {
        tasks: vec![Task {
            number: 1,
            title,
            change,
            create,
            delete: Vec::new(),
            depends_on: Vec::new(),
            kind: TaskKind::Preserving,
            renames: Vec::new(),
        }],
        fallback: Some(why),
        notes: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
