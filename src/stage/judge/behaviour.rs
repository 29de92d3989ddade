//! The Judge's behaviour check: before a change to code no test covers is
//! accepted, the functions of each changed module run at the best state and
//! as changed, on the same inputs — the repository's own calls with literal
//! arguments, then type-guided samples (by annotation, default and
//! parameter name) — and their results are compared (see
//! [`crate::tools::behaviour`] for how the probe runs).
//!
//! What counts as a regression (the attempt is rejected and the differing
//! calls go to the Fixer):
//! - a different value (`==`, else the same `repr`), different printed
//!   output, or arguments left differently mutated;
//! - a value before, an exception or no result in time now;
//! - another exception type on a call the repository makes.
//!
//! Not a regression, but reported: a call that raised and now returns (a
//! crash fixed), another exception type on a made-up sample. Not compared:
//! a call that hung or had side effects at the best state. A module whose
//! import has side effects, hangs, fails or cannot be done twice is "not
//! checked", never passed silently. Only the changed modules' top-level
//! functions are compared; methods are not.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::{Limits, Tools, IMPORT_TIMEOUT};
use crate::cancel::Cancel;
use crate::pipeline::BehaviourOutcome;
use crate::stage::reach;
use crate::tools::behaviour::{self, ProbeRequest, ProbeResult, ProbedCall};
use crate::tools::{TestFiles, ToolError};
use swarm_analysis::{function_pairs, literal_calls};

/// Longest one call of one version may take (capped by the per-test limit).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(2);
/// Type-guided samples per function.
const MAX_SAMPLES: usize = 5;
/// Calls per function, call sites first.
const MAX_CALLS: usize = 10;
/// Differences kept for the log and the Fixer.
const MAX_DIFFERENCES: usize = 8;

/// A changed module to check: its target-relative path and its text at the
/// best state.
#[derive(Clone, Debug)]
pub struct ChangedModule {
    pub file: String,
    pub original: String,
}

/// One call whose result changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Difference {
    pub file: String,
    /// `mean([1, 2, 3])`.
    pub call: String,
    /// `call site` or `sample`.
    pub source: String,
    /// `2.0`, `raises ZeroDivisionError`, ….
    pub before: String,
    pub after: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): was {}, now {}",
            self.call, self.file, self.before, self.after
        )
    }
}

/// What the check found in one module.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileBehaviour {
    pub file: String,
    /// Functions compared on at least one call.
    pub functions: usize,
    /// Calls compared (both versions ran them).
    pub calls: usize,
    /// Why the module, or some of its functions, were not compared.
    pub not_checked: Vec<String>,
    /// Changes that are not regressions (a crash fixed, …).
    pub notes: Vec<String>,
}

/// The behaviour check of one attempt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BehaviourCheck {
    pub outcome: BehaviourOutcome,
    /// Calls compared over all modules.
    pub calls: usize,
    pub differences: Vec<Difference>,
    pub files: Vec<FileBehaviour>,
    pub seconds: f64,
}

impl BehaviourCheck {
    /// One line for the Fixer and the summary.
    pub fn describe(&self) -> String {
        match self.outcome {
            BehaviourOutcome::Same => format!(
                "behaviour check: {} call(s) of {} function(s) give the same results",
                self.calls,
                self.files.iter().map(|f| f.functions).sum::<usize>()
            ),
            BehaviourOutcome::Regressed => format!(
                "behaviour check: results changed: {}",
                self.differences
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            BehaviourOutcome::NotChecked => format!(
                "behaviour not checked: {}",
                self.files
                    .iter()
                    .flat_map(|f| f
                        .not_checked
                        .iter()
                        .map(move |r| format!("{}: {r}", f.file)))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        }
    }
}

/// What verified the change to one file on the delivered state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Verification {
    /// A test module of the target reaches the file: the tests judged it.
    ExistingTests,
    /// Tests the Tester generated and validated (see
    /// [`crate::stage::tester`]) reach the file and judged the change:
    /// `kept` of them were committed, `discarded` dropped for `reasons`.
    GeneratedTests {
        kept: usize,
        discarded: usize,
        reasons: Vec<String>,
    },
    /// The behaviour check compared `calls` calls of `functions` functions
    /// and found the same results; `not_checked` says what it could not run.
    BehaviourCheck {
        functions: usize,
        calls: usize,
        not_checked: Vec<String>,
    },
    /// Only that it compiles and imports (and pylint): `reason` says why
    /// nothing more.
    CompilesAndImportsOnly { reason: String },
    /// A language with no behaviour check or Tester in swarm yet: what its
    /// own tools checked (`vitest's tests, tsc's type check, eslint`, or
    /// `tsc's type check and eslint only: no vitest test reaches it`).
    LanguageTools { tools: String },
    /// A language with no behaviour check or Tester in swarm yet whose
    /// suite did not say what checked the file: only that.
    NotAvailable { language: String },
}

impl std::fmt::Display for Verification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verification::ExistingTests => f.write_str("existing tests"),
            Verification::GeneratedTests {
                kept,
                discarded,
                reasons,
            } => {
                write!(f, "generated tests ({kept} kept, {discarded} discarded")?;
                if !reasons.is_empty() {
                    write!(f, ": {}", reasons.join("; "))?;
                }
                f.write_str(")")
            }
            Verification::BehaviourCheck {
                functions,
                calls,
                not_checked,
            } => {
                write!(
                    f,
                    "behaviour check: {calls} call(s) of {functions} function(s) give the same results as before"
                )?;
                if !not_checked.is_empty() {
                    write!(f, " (not checked: {})", not_checked.join("; "))?;
                }
                Ok(())
            }
            Verification::CompilesAndImportsOnly { reason } => {
                write!(f, "compiles and imports only ({reason})")
            }
            Verification::LanguageTools { tools } => f.write_str(tools),
            Verification::NotAvailable { language } => write!(
                f,
                "its suite only: the behaviour check and generated tests are not available for {language}"
            ),
        }
    }
}

/// The behaviour check of one attempt, with what it was run on.
#[derive(Clone, Debug)]
pub struct BehaviourRun {
    /// The attempt's modules no test reaches (see [`untested_modules`]).
    pub untested: Vec<String>,
    /// The check, when any of them existed at the best state.
    pub check: Option<BehaviourCheck>,
}

impl BehaviourRun {
    /// What verifies `file` (a module the attempt changed) once accepted.
    pub fn verification(&self, file: &str) -> Verification {
        if !self.untested.iter().any(|f| f == file) {
            return Verification::ExistingTests;
        }
        let found = self
            .check
            .as_ref()
            .and_then(|c| c.files.iter().find(|b| b.file == file));
        match found {
            Some(b) if b.functions > 0 => Verification::BehaviourCheck {
                functions: b.functions,
                calls: b.calls,
                not_checked: b.not_checked.clone(),
            },
            Some(b) => Verification::CompilesAndImportsOnly {
                reason: format!("behaviour not checked: {}", b.not_checked.join("; ")),
            },
            None => Verification::CompilesAndImportsOnly {
                reason: "a new file, nothing to compare it with".into(),
            },
        }
    }
}

/// The modules of `changed` (target-relative paths) the check is for:
/// modules of a language it reaches (see [`crate::lang::beyond`]), and — when the target has tests (`has_tests`) —
/// only those no test module reaches. `files` are the target's Python
/// files, `tests` says which of them are tests (the project's pytest
/// configuration and collection, see [`TestFiles`]); `read` reads one.
pub fn untested_modules(
    changed: &[impl AsRef<str>],
    files: &[String],
    tests: &TestFiles,
    has_tests: bool,
    read: &dyn Fn(&str) -> Option<String>,
) -> Vec<String> {
    let mut modules: Vec<String> = changed
        .iter()
        .map(AsRef::as_ref)
        .filter(|f| crate::lang::beyond::checks(f) && !tests.contains(f))
        .map(str::to_string)
        .collect();
    if has_tests {
        let sources: Vec<&String> = files.iter().filter(|f| !tests.contains(f)).collect();
        let mut reached = BTreeSet::new();
        for test in files.iter().filter(|f| tests.contains(f)) {
            if let Some(text) = read(test) {
                reached.extend(
                    reach::reached_sources(&text, &sources, read)
                        .into_iter()
                        .map(|(file, _)| file),
                );
                // What the tests call through re-exports and wrappers.
                reached.extend(
                    reach::definitions_called_by(test, &text, &sources, read)
                        .into_iter()
                        .map(|found| found.file),
                );
            }
        }
        modules.retain(|f| !reached.contains(f));
    }
    modules
}

/// Runs the check on `modules` (changed, in `root`: the target folder in
/// the worktree, holding the changed state). `sources` are the target's
/// Python files (target-relative), searched for literal calls.
pub fn check(
    tools: Tools<'_>,
    root: &Path,
    modules: &[ChangedModule],
    sources: &[String],
    limits: Limits,
    cancel: &Cancel,
) -> Result<BehaviourCheck, ToolError> {
    let started = Instant::now();
    let texts: Vec<String> = sources
        .iter()
        .filter_map(|f| crate::stage::read_source_text(root, f))
        .collect();
    let call_timeout = limits
        .test_case
        .map_or(CALL_TIMEOUT, |c| c.min(CALL_TIMEOUT));
    let mut files = Vec::new();
    let mut differences = Vec::new();
    for module in modules {
        let Some(changed) = crate::stage::read_source_text(root, &module.file) else {
            continue;
        };
        let pairs = function_pairs(&module.original, &changed);
        let names: BTreeSet<String> = pairs
            .iter()
            .flat_map(|p| [p.original.clone(), p.changed.clone()])
            .collect();
        let mut all: Vec<&str> = texts.iter().map(String::as_str).collect();
        all.push(&module.original);
        let calls = literal_calls(&all, &names);
        let request = ProbeRequest {
            file: &module.file,
            original: &module.original,
            pairs: &pairs,
            calls: &calls,
            import_timeout: limits.tests.min(IMPORT_TIMEOUT),
            call_timeout,
            max_samples: MAX_SAMPLES,
            max_calls: MAX_CALLS,
            deadline: limits.tests,
        };
        let result = if pairs.is_empty() {
            None
        } else {
            let _step = tools.step(&format!("behaviour check of {}", module.file));
            behaviour::probe(tools.env, tools.sandbox, root, &request, cancel)?
        };
        let (file, found) = read_result(&module.file, pairs.len(), result);
        differences.extend(found);
        files.push(file);
    }
    let calls = files.iter().map(|f| f.calls).sum();
    let outcome = if !differences.is_empty() {
        BehaviourOutcome::Regressed
    } else if calls > 0 {
        BehaviourOutcome::Same
    } else {
        BehaviourOutcome::NotChecked
    };
    differences.truncate(MAX_DIFFERENCES);
    Ok(BehaviourCheck {
        outcome,
        calls,
        differences,
        files,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// How one call's two outcomes are judged.
#[derive(Debug, PartialEq, Eq)]
enum Judgement {
    Same,
    Regression,
    Note(&'static str),
    NotCompared,
}

fn judge_call(call: &ProbedCall) -> Judgement {
    match (call.before_kind.as_str(), call.after_kind.as_str()) {
        // A call that ends the interpreter (SystemExit, KeyboardInterrupt)
        // at the best state says nothing to compare with; one that returned
        // and now ends it is a change of behaviour.
        ("exit", _) => return Judgement::NotCompared,
        ("value" | "raised", "exit") => return Judgement::Regression,
        _ => {}
    }
    if call.same {
        return Judgement::Same;
    }
    match (call.before_kind.as_str(), call.after_kind.as_str()) {
        ("timeout" | "side_effect", _) | (_, "side_effect") => Judgement::NotCompared,
        ("raised", "value") => Judgement::Note("a call that raised now returns"),
        ("raised", "raised") if call.source != "call site" => {
            Judgement::Note("another exception on a made-up input")
        }
        _ => Judgement::Regression,
    }
}

/// The module's findings and its differences.
fn read_result(
    file: &str,
    functions: usize,
    result: Option<ProbeResult>,
) -> (FileBehaviour, Vec<Difference>) {
    let mut behaviour = FileBehaviour {
        file: file.to_string(),
        functions: 0,
        calls: 0,
        not_checked: Vec::new(),
        notes: Vec::new(),
    };
    let mut differences = Vec::new();
    let Some(result) = result else {
        let reason = if functions == 0 {
            "no top-level function of the best state (that parses) to compare"
        } else {
            "not an importable module"
        };
        behaviour.not_checked.push(reason.to_string());
        return (behaviour, differences);
    };
    if let Some(reason) = result.not_checked {
        behaviour.not_checked.push(reason);
    }
    for function in result.functions {
        if let Some(reason) = &function.not_checked {
            behaviour
                .not_checked
                .push(format!("{}(): {reason}", function.function));
        }
        let mut compared = 0;
        for call in &function.calls {
            match judge_call(call) {
                Judgement::NotCompared => continue,
                Judgement::Same => {}
                Judgement::Regression => differences.push(Difference {
                    file: file.to_string(),
                    call: call.call.clone(),
                    source: call.source.clone(),
                    before: call.before.clone(),
                    after: call.after.clone(),
                }),
                Judgement::Note(what) => behaviour.notes.push(format!(
                    "{what}: {} was {}, now {}",
                    call.call, call.before, call.after
                )),
            }
            compared += 1;
        }
        behaviour.calls += compared;
        if compared > 0 {
            behaviour.functions += 1;
        } else if function.not_checked.is_none() {
            behaviour.not_checked.push(format!(
                "{}(): no call could be compared",
                function.function
            ));
        }
    }
    (behaviour, differences)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(before: (&str, &str), after: (&str, &str), source: &str, same: bool) -> ProbedCall {
        ProbedCall {
            call: "mean([1, 2, 3])".into(),
            source: source.into(),
            before_kind: before.0.into(),
            before: before.1.into(),
            after_kind: after.0.into(),
            after: after.1.into(),
            same,
        }
    }

    #[test]
    fn a_changed_value_or_a_new_exception_is_a_regression_a_fixed_crash_is_not() {
        let value = ("value", "2.0");
        let none = ("value", "None");
        let raises = ("raised", "raises ZeroDivisionError");
        let other = ("raised", "raises ValueError");
        assert_eq!(
            judge_call(&call(value, value, "sample", true)),
            Judgement::Same
        );
        assert_eq!(
            judge_call(&call(value, none, "sample", false)),
            Judgement::Regression
        );
        assert_eq!(
            judge_call(&call(value, raises, "sample", false)),
            Judgement::Regression
        );
        assert_eq!(
            judge_call(&call(value, ("timeout", "no result"), "sample", false)),
            Judgement::Regression
        );
        assert!(matches!(
            judge_call(&call(raises, value, "sample", false)),
            Judgement::Note(_)
        ));
        assert!(matches!(
            judge_call(&call(raises, other, "sample", false)),
            Judgement::Note(_)
        ));
        assert_eq!(
            judge_call(&call(raises, other, "call site", false)),
            Judgement::Regression
        );
        assert_eq!(
            judge_call(&call(("timeout", "no result"), value, "sample", false)),
            Judgement::NotCompared
        );
    }

    #[test]
    fn with_tests_only_modules_no_test_reaches_are_checked() {
        let files: Vec<String> = [
            "pkg/__init__.py",
            "pkg/core.py",
            "pkg/cli.py",
            "tests/test_core.py",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let read = |p: &str| match p {
            "tests/test_core.py" => Some("from pkg.core import run\n".to_string()),
            _ => Some(String::new()),
        };
        let changed: Vec<String> = [
            "pkg/core.py",
            "pkg/cli.py",
            "tests/test_core.py",
            "README.md",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            untested_modules(&changed, &files, &TestFiles::default(), true, &read),
            vec!["pkg/cli.py"]
        );
        // Without tests every changed module is checked (never the tests or other files).
        assert_eq!(
            untested_modules(&changed, &files, &TestFiles::default(), false, &read),
            vec!["pkg/core.py", "pkg/cli.py"]
        );
        let run = BehaviourRun {
            untested: vec!["pkg/cli.py".into()],
            check: None,
        };
        assert_eq!(run.verification("pkg/core.py"), Verification::ExistingTests);
        assert!(matches!(
            run.verification("pkg/cli.py"),
            Verification::CompilesAndImportsOnly { .. }
        ));
    }

    #[test]
    fn a_difference_found_before_the_deadline_still_counts() {
        let result = ProbeResult {
            module: "stats".into(),
            functions: vec![crate::tools::behaviour::ProbedFunction {
                function: "mean".into(),
                calls: vec![call(("value", "2.0"), ("value", "None"), "sample", false)],
                not_checked: Some("the check ran out of time (1s)".into()),
            }],
            not_checked: None,
            spliced: false,
        };
        let (file, differences) = read_result("stats.py", 1, Some(result));
        assert_eq!(differences.len(), 1);
        assert_eq!(
            differences[0].to_string(),
            "mean([1, 2, 3]) (stats.py): was 2.0, now None"
        );
        assert_eq!(
            file.not_checked,
            vec!["mean(): the check ran out of time (1s)"]
        );
    }

    #[test]
    fn a_module_not_imported_is_not_checked_never_same() {
        let result = ProbeResult {
            module: "stats".into(),
            functions: Vec::new(),
            not_checked: Some("as changed, its import prints".into()),
            spliced: false,
        };
        let (file, differences) = read_result("stats.py", 2, Some(result));
        assert!(differences.is_empty());
        assert_eq!(file.calls, 0);
        assert_eq!(file.not_checked, vec!["as changed, its import prints"]);
    }
}
