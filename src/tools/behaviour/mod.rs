//! Running swarm's behaviour probe: one module's functions at the best state
//! (the original) and as changed, called on the same inputs, under the
//! sandbox, in one Python process.
//!
//! The probe (`probe.py`, embedded in the binary like the pytest plugin and
//! written into the process's sandbox cell) reads a JSON request from the
//! cell and writes a JSON result there. It imports the changed module twice
//! (a module that cannot be imported twice is not checked), loads the
//! original from its text (when that text does not compile, the changed
//! module with each original function put back), and refuses side effects
//! at import and in calls with an audit hook. What the results mean is the
//! Judge's business (`stage::judge::behaviour`); this module only runs the
//! probe and reads what it wrote. The same probe checks a module's public
//! names for a task of refactoring on request ([`probe_api`]): each still
//! importable from the same path, with the same behaviour.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::env::last_line;
use super::imports::module_name;
use super::process::Ending;
use super::worktree::ImportGuard;
use super::{PythonEnv, Sandbox, ToolError};
use crate::cancel::Cancel;
use swarm_analysis::{CallSite, FunctionPair};

/// The probe's source.
const PROBE_SOURCE: &str = include_str!("probe.py");

/// What the probe compares for one module.
#[derive(Clone, Debug)]
pub struct ProbeRequest<'a> {
    /// The target-relative path of the module.
    pub file: &'a str,
    /// The module's text at the best state.
    pub original: &'a str,
    pub pairs: &'a [FunctionPair],
    pub calls: &'a [CallSite],
    /// Longest one import may take.
    pub import_timeout: Duration,
    /// Longest one call may take.
    pub call_timeout: Duration,
    /// Type-guided samples per function.
    pub max_samples: usize,
    /// Calls per function, call sites first.
    pub max_calls: usize,
    /// No call starts after this long: the functions left are not checked.
    pub deadline: Duration,
}

/// What one call did in both versions.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct ProbedCall {
    /// The call, `mean([1, 2, 3])`, with the function's changed name.
    pub call: String,
    /// `call site` or `sample`.
    pub source: String,
    /// `value`, `raised`, `exit` (SystemExit, KeyboardInterrupt: the call
    /// would end the interpreter), `timeout` or `side_effect`.
    pub before_kind: String,
    pub after_kind: String,
    /// The value's repr, `raises ZeroDivisionError`, ….
    pub before: String,
    pub after: String,
    /// Equal results (or the same exception type), the same printed text
    /// and arguments left alike.
    pub same: bool,
}

/// The probe's findings for one function.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct ProbedFunction {
    pub function: String,
    pub calls: Vec<ProbedCall>,
    /// Why the function was not compared.
    pub not_checked: Option<String>,
}

/// The probe's findings for one module.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct ProbeResult {
    pub module: String,
    pub functions: Vec<ProbedFunction>,
    /// Why the module was not compared at all (its import has side effects,
    /// hangs, fails, or cannot be done twice).
    pub not_checked: Option<String>,
    /// The original did not compile: functions were compared against the
    /// changed module with the original function put back.
    pub spliced: bool,
}

#[derive(Serialize)]
struct WireRequest<'a> {
    root: String,
    import_root: String,
    module: String,
    path: String,
    original: &'a str,
    pairs: &'a [FunctionPair],
    calls: &'a [CallSite],
    import_timeout: f64,
    call_timeout: f64,
    max_samples: usize,
    max_calls: usize,
    deadline: f64,
}

/// Runs the probe on `request.file` in `root` (the target folder in the
/// worktree, holding the changed text). `Ok(None)` when the file is not an
/// importable module. The process is killed when it runs past its imports,
/// the deadline and one more pair of calls.
///
/// Whatever the module's code does to the probe — exits, is interrupted,
/// ends the interpreter with `os._exit`, crashes it, hangs, leaves no
/// result or an unreadable one — and whatever keeps the probe from
/// starting, the module is "not checked" with the reason: the check never
/// ends a run. Only a cancel is an `Err`.
pub fn probe(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    request: &ProbeRequest<'_>,
    cancel: &Cancel,
) -> Result<Option<ProbeResult>, ToolError> {
    let root = &std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let Some((import_root, module)) = module_name(root, request.file) else {
        return Ok(None);
    };
    let wire = WireRequest {
        root: root.display().to_string(),
        import_root: import_root.display().to_string(),
        module,
        path: root.join(request.file).display().to_string(),
        original: request.original,
        pairs: request.pairs,
        calls: request.calls,
        import_timeout: request.import_timeout.as_secs_f64(),
        call_timeout: request.call_timeout.as_secs_f64(),
        max_samples: request.max_samples,
        max_calls: request.max_calls,
        deadline: request.deadline.as_secs_f64(),
    };
    let json = serde_json::to_string(&wire).expect("the probe request serialises");
    // Two imports of each version, the calls until the deadline, and the
    // last call pair that started before it.
    let budget = request.import_timeout * 4 + request.deadline + request.call_timeout * 2;
    let ran = match run_probe(env, sandbox, root, &json, budget, cancel) {
        Ok(ran) => ran,
        Err(ToolError::Cancelled) => return Err(ToolError::Cancelled),
        Err(e) => Ran::Stopped(format!("the probe could not run: {e}")),
    };
    Ok(Some(match ran {
        Ran::Result(text) => match serde_json::from_str(&text) {
            Ok(found) => found,
            Err(e) => not_checked(
                &wire.module,
                format!("the probe's result could not be read ({e})"),
            ),
        },
        Ran::Stopped(reason) => not_checked(&wire.module, reason),
    }))
}

/// What one probe process gave: its result file's text, or why it wrote none.
enum Ran {
    Result(String),
    Stopped(String),
}

/// Runs the probe with the request `json` in a sandbox cell, under the
/// worktree's import guard, killed after `budget`.
fn run_probe(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    json: &str,
    budget: Duration,
    cancel: &Cancel,
) -> Result<Ran, ToolError> {
    let cell = sandbox.cell("behaviour")?;
    let script = cell.dir().join("swarm_behaviour_probe.py");
    let request_file = cell.dir().join("request.json");
    let result_file = cell.dir().join("result.json");
    write_file(&script, PROBE_SOURCE)?;
    write_file(&request_file, json)?;
    let guard = ImportGuard::write(&cell, sandbox, root)?;
    let command = guard
        .apply(cell.command(&env.python))
        .arg("-B")
        .arg(&script)
        .arg(&request_file)
        .arg(&result_file)
        .cwd(root)
        .timeout(budget)
        .output_cap(8 * 1024);
    let out = command.run(cancel).map_err(|source| ToolError::Run {
        command: command.command_line(),
        source,
    })?;
    if let Err(foreign) = guard.check("the behaviour probe") {
        return Ok(Ran::Stopped(foreign.to_string()));
    }
    match out.ending {
        Ending::Exited(0) => {}
        Ending::Cancelled => return Err(ToolError::Cancelled),
        Ending::TimedOut => {
            return Ok(Ran::Stopped(format!(
                "the probe took longer than {}s",
                budget.as_secs_f64()
            )))
        }
        Ending::Exited(_) | Ending::Signalled(_) => {
            // The module's code took the interpreter down (os._exit, a
            // crash, a resource limit): nothing was compared.
            return Ok(Ran::Stopped(format!(
                "the probe stopped: {}",
                last_line(&out.combined())
            )));
        }
    }
    Ok(match std::fs::read_to_string(&result_file) {
        Ok(text) => Ran::Result(text),
        // Exit 0 and no result: `os._exit(0)` in the module's code.
        Err(_) => Ran::Stopped(
            "the probe ended without its result (the module's code ended the interpreter)"
                .to_string(),
        ),
    })
}

/// What the public-name check compares for one module (see `probe.py`,
/// mode `api`).
#[derive(Clone, Debug)]
pub struct ApiRequest<'a> {
    /// The module's target-relative path (it may be gone in the changed tree).
    pub file: &'a str,
    /// Its text at the best state.
    pub original: &'a str,
    /// Old public name → the name (or dotted `module.Name`) it was renamed to.
    pub renames: &'a std::collections::BTreeMap<String, String>,
    /// Old names that must still be found at their old place too.
    pub keep: &'a [String],
    /// The repository's literal calls of the module's functions.
    pub calls: &'a [CallSite],
    pub import_timeout: Duration,
    pub call_timeout: Duration,
    pub max_samples: usize,
    pub max_calls: usize,
    pub deadline: Duration,
}

/// What the public-name check found for one name.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct ApiName {
    pub name: String,
    /// Where it was looked up: the same name, or what it was renamed to.
    pub now: String,
    /// `same`, `missing`, `different` or `not_compared`.
    pub status: String,
    pub detail: String,
    /// Calls compared (functions).
    pub calls: usize,
}

/// What the public-name check found for one module.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct ApiResult {
    pub module: String,
    pub names: Vec<ApiName>,
    /// Why the module was not checked at all.
    pub not_checked: Option<String>,
}

#[derive(Serialize)]
struct ApiWire<'a> {
    mode: &'static str,
    root: String,
    import_root: String,
    module: String,
    path: String,
    original: &'a str,
    renames: &'a std::collections::BTreeMap<String, String>,
    keep: &'a [String],
    calls: &'a [CallSite],
    import_timeout: f64,
    call_timeout: f64,
    max_samples: usize,
    max_calls: usize,
    deadline: f64,
}

/// Runs the public-name check of `request.file` in `root` (the target
/// folder in the worktree, holding the changed tree). `Ok(None)` when the
/// path cannot name a module.
pub fn probe_api(
    env: &PythonEnv,
    sandbox: &Sandbox,
    root: &Path,
    request: &ApiRequest<'_>,
    cancel: &Cancel,
) -> Result<Option<ApiResult>, ToolError> {
    let root = &std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let Some((import_root, module)) = module_name(root, request.file) else {
        return Ok(None);
    };
    let wire = ApiWire {
        mode: "api",
        root: root.display().to_string(),
        import_root: import_root.display().to_string(),
        module,
        path: root.join(request.file).display().to_string(),
        original: request.original,
        renames: request.renames,
        keep: request.keep,
        calls: request.calls,
        import_timeout: request.import_timeout.as_secs_f64(),
        call_timeout: request.call_timeout.as_secs_f64(),
        max_samples: request.max_samples,
        max_calls: request.max_calls,
        deadline: request.deadline.as_secs_f64(),
    };
    let json = serde_json::to_string(&wire).expect("the probe request serialises");
    let budget = request.import_timeout * 3 + request.deadline + request.call_timeout * 2;
    let ran = match run_probe(env, sandbox, root, &json, budget, cancel) {
        Ok(ran) => ran,
        Err(ToolError::Cancelled) => return Err(ToolError::Cancelled),
        Err(e) => Ran::Stopped(format!("the probe could not run: {e}")),
    };
    let not_checked = |reason| ApiResult {
        module: wire.module.clone(),
        names: Vec::new(),
        not_checked: Some(reason),
    };
    Ok(Some(match ran {
        Ran::Result(text) => serde_json::from_str(&text)
            .unwrap_or_else(|e| not_checked(format!("the probe's result could not be read ({e})"))),
        Ran::Stopped(reason) => not_checked(reason),
    }))
}

fn not_checked(module: &str, reason: String) -> ProbeResult {
    ProbeResult {
        module: module.to_string(),
        functions: Vec::new(),
        not_checked: Some(reason),
        spliced: false,
    }
}

fn write_file(path: &Path, text: &str) -> Result<(), ToolError> {
    std::fs::write(path, text).map_err(|source| ToolError::write(path, source))
}
