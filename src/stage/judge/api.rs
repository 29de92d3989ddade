//! The Judge's public-name check, for a behaviour-preserving task of
//! refactoring on request (`--task`): every public name a changed or
//! deleted module gave at the best state — what its text defines or
//! assigns, what it re-exports from the project, or its `__all__` — must
//! still be importable from the same path in the changed tree (or from
//! where the task renamed it), with the same behaviour: functions compared
//! on the same inputs (the repository's literal calls, then type-guided
//! samples), classes keeping their public attributes, values equal. A
//! function moved to a new module and re-exported is compared at its old
//! path. How the probe runs is [`crate::tools::behaviour::probe_api`]'s; a
//! missing or different name makes the verdict a regression through
//! `Bar::after_behaviour`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::behaviour::{ChangedModule, CALL_TIMEOUT};
use super::{Limits, Tools, IMPORT_TIMEOUT};
use crate::cancel::Cancel;
use crate::lang::names::Read;
use crate::pipeline::task::stated::Stated;
use crate::pipeline::task::Rename;
use crate::pipeline::BehaviourOutcome;
use crate::tools::behaviour::{self, ApiName, ApiRequest};
use crate::tools::ToolError;
use swarm_analysis::literal_calls;

/// Type-guided samples per function.
const MAX_SAMPLES: usize = 5;
/// Calls per function, call sites first.
const MAX_CALLS: usize = 8;
/// Problems kept for the log and the Fixer.
const MAX_PROBLEMS: usize = 8;

/// What the check found in one module.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ModuleNames {
    pub file: String,
    /// Public names compared.
    pub names: usize,
    /// Calls compared over its functions.
    pub calls: usize,
    /// Why it was not checked at all.
    pub not_checked: Option<String>,
}

/// The public-name check of one task attempt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ApiCheck {
    pub outcome: BehaviourOutcome,
    /// `shop.cart.parse_money: missing (...)`, at most [`MAX_PROBLEMS`].
    pub problems: Vec<String>,
    pub modules: Vec<ModuleNames>,
    pub seconds: f64,
}

impl ApiCheck {
    /// One line for the Fixer, the log and the summary.
    pub fn describe(&self) -> String {
        let names: usize = self.modules.iter().map(|m| m.names).sum();
        let calls: usize = self.modules.iter().map(|m| m.calls).sum();
        match self.outcome {
            BehaviourOutcome::Same if calls == 0 => format!(
                "public names: {names} name(s) still importable from the same path(s)"
            ),
            BehaviourOutcome::Same => format!(
                "public names: {names} name(s) still importable from the same path(s), {calls} call(s) give the same results"
            ),
            BehaviourOutcome::Regressed => format!(
                "public names lost or changed: {}",
                self.problems.join("; ")
            ),
            BehaviourOutcome::NotChecked => {
                let why: Vec<String> = self
                    .modules
                    .iter()
                    .filter_map(|m| m.not_checked.as_ref().map(|w| format!("{}: {w}", m.file)))
                    .collect();
                format!("public names not checked: {}", why.join("; "))
            }
        }
    }
}

impl ApiCheck {
    /// The check that found `problems` in `modules`: regressed when there
    /// are any, the same when it compared any name, else not checked.
    pub fn of(mut problems: Vec<String>, modules: Vec<ModuleNames>, started: Instant) -> Self {
        let compared: usize = modules.iter().map(|m| m.names).sum();
        let outcome = if !problems.is_empty() {
            BehaviourOutcome::Regressed
        } else if compared > 0 {
            BehaviourOutcome::Same
        } else {
            BehaviourOutcome::NotChecked
        };
        problems.truncate(MAX_PROBLEMS);
        ApiCheck {
            outcome,
            problems,
            modules,
            seconds: started.elapsed().as_secs_f64(),
        }
    }

    /// This check and `other` (of other modules) as one: regressed when
    /// either is, else the same when either compared anything.
    pub fn join(self, other: ApiCheck) -> ApiCheck {
        use BehaviourOutcome::{NotChecked, Regressed, Same};
        let outcome = match (self.outcome, other.outcome) {
            (Regressed, _) | (_, Regressed) => Regressed,
            (Same, _) | (_, Same) => Same,
            _ => NotChecked,
        };
        let mut problems = self.problems;
        problems.extend(other.problems);
        problems.truncate(MAX_PROBLEMS);
        let mut modules = self.modules;
        modules.extend(other.modules);
        ApiCheck {
            outcome,
            problems,
            modules,
            seconds: self.seconds + other.seconds,
        }
    }
}

/// The renames a task's public names are compared under: old name → new
/// name (or dotted `module.Name` for a move), and the old names the
/// instruction asks to keep at their old place too.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Renamed {
    pub renames: BTreeMap<String, String>,
    pub keep: Vec<String>,
}

impl Renamed {
    /// The renames of a task: those the instruction states (`stated`) and
    /// the plan declares (`declared`), each name of a module the
    /// instruction renames whole mapped to the new module (its names read
    /// from the best state's text through `best`), and the names kept.
    pub fn of(stated: &Stated, declared: &[Rename], best: Read<'_>) -> Renamed {
        let mut renames: BTreeMap<String, String> = stated
            .renames
            .iter()
            .chain(declared)
            .map(|r| (r.from.clone(), r.to.clone()))
            .collect();
        let mut keep = stated.keep.clone();
        for module in &stated.modules {
            let Some(text) = best(&module.from) else {
                continue;
            };
            let to = crate::lang::module_name(&module.to);
            for name in crate::lang::names::top_names(&module.from, &text) {
                if stated.keep_old {
                    keep.push(name.clone());
                }
                renames
                    .entry(name.clone())
                    .or_insert_with(|| format!("{to}.{name}"));
            }
        }
        keep.sort();
        keep.dedup();
        Renamed { renames, keep }
    }
}

/// Checks the public names of `modules` (their best-state texts; the
/// changed tree is in `root`). `sources` are the target's Python files,
/// searched for literal calls; `renamed` maps old names to new ones.
pub fn check_api(
    tools: Tools<'_>,
    root: &Path,
    modules: &[ChangedModule],
    sources: &[String],
    renamed: &Renamed,
    limits: Limits,
    cancel: &Cancel,
) -> Result<ApiCheck, ToolError> {
    let started = Instant::now();
    let texts: Vec<String> = sources
        .iter()
        .filter_map(|f| crate::stage::read_source_text(root, f))
        .collect();
    let mut checked = Vec::new();
    let mut problems = Vec::new();
    for module in modules {
        let found = check_module(tools, root, module, &texts, renamed, limits, cancel)?;
        problems.extend(found.1);
        checked.push(found.0);
    }
    Ok(ApiCheck::of(problems, checked, started))
}

/// One module's public names: what was compared, and the problems.
fn check_module(
    tools: Tools<'_>,
    root: &Path,
    module: &ChangedModule,
    texts: &[String],
    renamed: &Renamed,
    limits: Limits,
    cancel: &Cancel,
) -> Result<(ModuleNames, Vec<String>), ToolError> {
    let names: BTreeSet<String> = swarm_analysis::outline(&module.original)
        .top_level()
        .map(|d| d.name.clone())
        .collect();
    let mut all: Vec<&str> = texts.iter().map(String::as_str).collect();
    all.push(&module.original);
    let calls = literal_calls(&all, &names);
    let request = ApiRequest {
        file: &module.file,
        original: &module.original,
        renames: &renamed.renames,
        keep: &renamed.keep,
        calls: &calls,
        import_timeout: limits.tests.min(IMPORT_TIMEOUT),
        call_timeout: limits
            .test_case
            .map_or(CALL_TIMEOUT, |c| c.min(CALL_TIMEOUT)),
        max_samples: MAX_SAMPLES,
        max_calls: MAX_CALLS,
        deadline: limits.tests,
    };
    let result = {
        let _step = tools.step(&format!("public names of {}", module.file));
        behaviour::probe_api(tools.env, tools.sandbox, root, &request, cancel)?
    };
    let Some(result) = result else {
        let checked = ModuleNames {
            file: module.file.clone(),
            names: 0,
            calls: 0,
            not_checked: Some("not an importable module".into()),
        };
        return Ok((checked, Vec::new()));
    };
    let problems = result
        .names
        .iter()
        .filter(|n| n.status == "missing" || n.status == "different")
        .map(|n| problem(&result.module, n))
        .collect();
    let checked = ModuleNames {
        file: module.file.clone(),
        names: result.names.len(),
        calls: result.names.iter().map(|n| n.calls).sum(),
        not_checked: result.not_checked,
    };
    Ok((checked, problems))
}

/// `shop.cart.parse_money (now shop.cart.Basket): missing: ImportError …`.
fn problem(module: &str, name: &ApiName) -> String {
    let now = if name.now == name.name {
        String::new()
    } else {
        format!(" (as {})", name.now)
    };
    format!(
        "{module}.{}{now}: {}{}",
        name.name,
        name.status,
        if name.detail.is_empty() {
            String::new()
        } else {
            format!(" ({})", name.detail)
        }
    )
}
