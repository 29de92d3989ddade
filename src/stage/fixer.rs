//! The Fixer: chooses the files to work on, asks the model for a change to
//! one file, and turns the reply into a `Proposal`. A reply that is cut off,
//! empty, a refusal, not valid UTF-8 or holds no usable diff is asked again
//! once with a message naming what was wrong; after that it is a failed
//! attempt ([`Unusable`]), not an error that ends the run.

use std::collections::BTreeSet;

use regex::Regex;

use super::excerpt::Excerpt;
use super::prompt::{self, FixInput, FixPrompt};
use super::{call_model, is_test_path, ModelCall};
use crate::llm::{self, ChatModel, Finish, LlmError};
use crate::patch::{self, FileEdit, ReplyContext};
use crate::tools::TestCase;

/// What the model proposed for a file.
#[derive(Clone, Debug)]
pub struct Proposal {
    /// Target-relative path the prompt was about.
    pub file: String,
    /// The raw reply that was used.
    pub reply: String,
    /// What the reply is, or why nothing in it can be used.
    pub edits: Result<Vec<FileEdit>, Unusable>,
    /// Whether the prompt analysed errors (logged as DEBUG) or not (FIX).
    pub debugging: bool,
    /// The parts of the file the prompt showed, when it did not show it whole.
    pub excerpts: Option<Vec<Excerpt>>,
}

/// What is wrong with one reply, so that nothing in it can be used.
/// `Display` is the sentence sent back to the model and logged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplyProblem {
    #[error("the reply was cut off by the output length limit")]
    CutOff,
    #[error("the reply was blocked by the provider's safety filter")]
    Filtered,
    #[error("the reply was empty")]
    Empty,
    #[error("the reply declined the task instead of proposing a change")]
    Refusal,
    /// The provider's bytes were not UTF-8 (see [`LlmError::NotUtf8`]).
    #[error("the reply was not valid UTF-8 ({detail}); send plain UTF-8 text")]
    NotUtf8 { detail: String },
    /// No change could be read from it.
    #[error("{0}")]
    Patch(patch::PatchError),
}

impl ReplyProblem {
    /// A stable snake_case name, for logs and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            ReplyProblem::CutOff => "cut_off",
            ReplyProblem::Filtered => "filtered",
            ReplyProblem::Empty => "empty",
            ReplyProblem::Refusal => "refusal",
            ReplyProblem::NotUtf8 { .. } => "not_utf8",
            ReplyProblem::Patch(patch::PatchError::NoChange) => "no_change",
            ReplyProblem::Patch(_) => "unreadable_change",
        }
    }
}

/// Why a proposal holds no change: the last reply's problem, and the first
/// reply's when the model was asked again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unusable {
    /// What was wrong with the reply that was kept.
    pub problem: ReplyProblem,
    /// What was wrong with the first reply, when the model was asked again.
    pub first: Option<ReplyProblem>,
}

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.first {
            None => write!(f, "{}", self.problem),
            Some(first) => write!(
                f,
                "{} (also after asking again; first reply: {first})",
                self.problem
            ),
        }
    }
}

impl From<ReplyProblem> for Unusable {
    fn from(problem: ReplyProblem) -> Self {
        Self {
            problem,
            first: None,
        }
    }
}

/// What stands in for a reply whose bytes could not be read, in the
/// follow-up request's history.
const UNREADABLE_REPLY: &str = "(this reply could not be read: it was not valid UTF-8)";

impl Proposal {
    /// One line saying what was tried: the reply's first line of prose, or a default.
    pub fn summary(&self) -> String {
        let prose = self
            .reply
            .lines()
            .map(str::trim)
            .take_while(|l| {
                !l.starts_with("```") && !l.starts_with("---") && !l.starts_with("diff ")
            })
            .find(|l| l.len() >= 12 && !l.starts_with('#'));
        match prose {
            Some(line) => {
                let line = line.trim_start_matches(['*', '-', ' ']);
                let clipped = prompt::clip(line, 72);
                clipped.trim_end_matches([':', '.']).to_string()
            }
            None if self.debugging => format!("fix failing tests in {}", self.file),
            None => format!("clean up {}", self.file),
        }
    }
}

/// Asks the model for a change to one file. `Err` only when the model could
/// not be reached after its retries; every model call made is returned for
/// the log either way.
pub async fn propose(
    model: &dyn ChatModel,
    input: &FixInput<'_>,
    ctx: &ReplyContext,
) -> (Vec<ModelCall>, Result<Proposal, LlmError>) {
    let FixPrompt { request, excerpts } = prompt::fix_prompt(input);
    let debugging = input.is_debugging();
    let proposal = |reply: String, edits| Proposal {
        file: input.path.to_string(),
        reply,
        edits,
        debugging,
        excerpts: excerpts.clone(),
    };
    let mut calls = Vec::new();
    let (call, first) = call_model(model, request.clone()).await;
    calls.push(call);
    let (first_text, problem) = match read_reply(first, ctx) {
        Err(e) => return (calls, Err(e)),
        Ok((text, Ok(edits))) => return (calls, Ok(proposal(text, Ok(edits)))),
        Ok((text, Err(problem))) => (text, problem),
    };
    let follow = match problem {
        ReplyProblem::CutOff => prompt::reask_truncated(),
        _ => prompt::reask_unusable(&problem.to_string()),
    };
    let shown = match problem {
        ReplyProblem::NotUtf8 { .. } => UNREADABLE_REPLY,
        _ => first_text.as_str(),
    };
    let retry = prompt::follow_up_within(request, shown, follow, input.allowance);
    let (call, second) = call_model(model, retry).await;
    calls.push(call);
    let (text, edits) = match read_reply(second, ctx) {
        Err(e) => return (calls, Err(e)),
        Ok(read) => read,
    };
    let edits = edits.map_err(|second| Unusable {
        problem: second,
        first: Some(problem),
    });
    (calls, Ok(proposal(text, edits)))
}

/// The text of a model's answer and its edits (or what is wrong with it).
/// `Err` only when the model could not be reached: a reply that was not
/// valid UTF-8 is an unusable reply, not a failed call.
type ReadReply = (String, Result<Vec<FileEdit>, ReplyProblem>);

fn read_reply(
    answer: Result<llm::ChatResponse, LlmError>,
    ctx: &ReplyContext,
) -> Result<ReadReply, LlmError> {
    match answer {
        Ok(r) => {
            let edits = judge_reply(&r.text, &r.finish, ctx);
            Ok((r.text, edits))
        }
        Err(LlmError::NotUtf8 { detail, .. }) => {
            Ok((String::new(), Err(ReplyProblem::NotUtf8 { detail })))
        }
        Err(e) => Err(e),
    }
}

/// The edits in a reply, or what is wrong with it.
fn judge_reply(
    text: &str,
    finish: &Finish,
    ctx: &ReplyContext,
) -> Result<Vec<FileEdit>, ReplyProblem> {
    if *finish == Finish::Length {
        return Err(ReplyProblem::CutOff);
    }
    if *finish == Finish::Filtered {
        return Err(ReplyProblem::Filtered);
    }
    if llm::is_empty_reply(text) {
        return Err(ReplyProblem::Empty);
    }
    if llm::looks_like_refusal(text) {
        return Err(ReplyProblem::Refusal);
    }
    match patch::parse_reply(text, ctx) {
        Ok(edits) if edits.is_empty() => Err(ReplyProblem::Patch(patch::PatchError::NoChange)),
        Ok(edits) => Ok(edits),
        Err(e) => Err(ReplyProblem::Patch(e)),
    }
}

/// Files to work on this round, most urgent first: source files named in
/// failing tests' tracebacks, then source files the failing test modules
/// import, then `others` (files with problems or plan items) in their order.
pub fn implicated_files(
    failing: &[TestCase],
    files: &[String],
    read: &dyn Fn(&str) -> Option<String>,
    others: &[String],
) -> Vec<String> {
    let sources: Vec<&String> = files.iter().filter(|f| !is_test_path(f)).collect();
    let mut order: Vec<String> = Vec::new();
    let mut push = |f: &str| {
        if !order.iter().any(|o| o == f) {
            order.push(f.to_string());
        }
    };
    for case in failing {
        for src in &sources {
            if traceback_mentions(case, src) {
                push(src);
            }
        }
    }
    let test_files: BTreeSet<&str> = failing.iter().filter_map(test_module).collect();
    for test_file in test_files {
        let Some(text) = read(test_file) else {
            continue;
        };
        let modules = imported_modules(&text);
        for src in &sources {
            if imports(&modules, src) {
                push(src);
            }
        }
    }
    for f in others {
        if sources.contains(&f) {
            push(f);
        }
    }
    order
}

/// The failing tests that concern `file`: its path is in their traceback, or
/// their test module imports it. All of them when none does, so the model
/// always sees what fails.
pub fn failures_for<'a>(
    failing: &'a [TestCase],
    file: &str,
    read: &dyn Fn(&str) -> Option<String>,
) -> Vec<&'a TestCase> {
    let relevant: Vec<&TestCase> = failing
        .iter()
        .filter(|case| {
            traceback_mentions(case, file)
                || test_module(case)
                    .and_then(read)
                    .is_some_and(|text| imports(&imported_modules(&text), file))
        })
        .collect();
    if relevant.is_empty() {
        failing.iter().collect()
    } else {
        relevant
    }
}

/// The test module of a case (`tests/test_x.py` of `tests/test_x.py::test_y`).
pub(crate) fn test_module(case: &TestCase) -> Option<&str> {
    case.id.split("::").next().filter(|f| f.ends_with(".py"))
}

/// Whether a case's message or traceback names `file` (target-relative).
pub(crate) fn traceback_mentions(case: &TestCase, file: &str) -> bool {
    static PATH: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = PATH.get_or_init(|| Regex::new(r"([A-Za-z0-9_./\\-]+\.py)").expect("static regex"));
    [case.message.as_deref(), case.details.as_deref()]
        .into_iter()
        .flatten()
        .flat_map(|text| re.captures_iter(text))
        .map(|m| m[1].replace('\\', "/"))
        .any(|p| p == file || p.ends_with(&format!("/{file}")))
}

/// Whether `modules` (from [`imported_modules`]) include the module of `file`.
pub(crate) fn imports(modules: &[String], file: &str) -> bool {
    let stem = file.trim_end_matches(".py").trim_end_matches("/__init__");
    modules.iter().any(|module| {
        let as_path = module.replace('.', "/");
        stem == as_path || stem.ends_with(&format!("/{as_path}"))
    })
}

/// Modules named by `import x.y` and `from x.y import z` (and `from x import y`
/// as `x.y`, which may be a submodule).
pub(crate) fn imported_modules(text: &str) -> Vec<String> {
    static IMPORT: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = IMPORT.get_or_init(|| {
        Regex::new(r"(?m)^\s*(?:from\s+([\w.]+)\s+import\s+([\w, ]+)|import\s+([\w.]+))")
            .expect("static regex")
    });
    let mut out = Vec::new();
    for c in re.captures_iter(text) {
        if let Some(module) = c.get(1) {
            let module = module.as_str().trim_start_matches('.');
            out.push(module.to_string());
            for name in c[2].split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let name = name.split_whitespace().next().unwrap_or(name);
                out.push(format!("{module}.{name}"));
            }
        } else if let Some(module) = c.get(3) {
            out.push(module.as_str().to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests;
