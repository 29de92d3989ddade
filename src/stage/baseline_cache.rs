//! The Auditor's baseline (pytest or the import checks, and pylint, of the
//! starting state) kept across runs, so a second run on an unchanged
//! repository does not measure it again.
//!
//! A [`BaselineKey`] hashes everything the result depends on (see
//! [`KeyInputs`]): the git tree the run's worktree holds at the start (the
//! whole commit's tree, not only the target folder's: tests and tools read
//! `conftest.py`, configuration and sibling packages above the target), the
//! target folder and its file list, the submodules left empty, the Python
//! environment (and the times of its `sys.path` folders, which change when
//! a package is installed or removed), the time limits, the sandbox and
//! swarm's own build.
//! Untracked and uncommitted files are not in a tree id, and need not be:
//! the run measures HEAD's tree in its own worktree, never the user's
//! checkout.
//!
//! Entries are one JSON file each under `<cache dir>/baseline/`, written to
//! a temporary file and renamed into place, with a format number; an entry
//! that cannot be read, parsed or is of another format is a miss, never an
//! error. A result that hit a time limit (the whole run's, a test's, an
//! import's, or pylint's on a file) depends on the machine's load as much
//! as on the code and is not kept. Only the baseline is served from here:
//! the Judge's measurements and the final check always run the tools.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::judge::{self, Limits};
use crate::pipeline::Measurement;
use crate::pipeline::{ImportCheck, LintMessage, LintReport, TestCase, TestOutcome, TestRun};
use crate::tools::{PythonEnv, SandboxReport};

/// Bumped whenever an entry's layout or meaning changes.
const FORMAT: u32 = 1;
/// The folder is pruned, oldest first, past this many entries.
pub const MAX_ENTRIES: usize = 256;

/// What a baseline's result depends on.
#[derive(Clone, Copy, Debug)]
pub struct KeyInputs<'a> {
    /// The git tree id of the worktree's base commit (the whole tree).
    pub tree: &'a str,
    /// The target folder, repo-relative (`""` for the root).
    pub target_rel: &'a str,
    /// The Python files measured, target-relative.
    pub files: &'a [String],
    /// Submodules left empty in the worktree.
    pub empty_submodules: &'a [String],
    pub env: &'a PythonEnv,
    pub limits: Limits,
    /// Which sandbox layers hold.
    pub sandbox: &'a SandboxReport,
    /// The resource limits every tool process runs under (their `Debug`
    /// text), and whether isolation was asked for.
    pub resource_limits: &'a str,
    pub isolate: bool,
}

/// The hash of a [`KeyInputs`], 64 hex digits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaselineKey(String);

impl KeyInputs<'_> {
    /// The key: every input, length-prefixed, with swarm's version and
    /// build (the executable's size and modification time, so a rebuilt
    /// swarm with other tool plugins never reads an older one's entries).
    pub fn key(&self) -> BaselineKey {
        self.key_for_build(&build_identity())
    }

    fn key_for_build(&self, build: &str) -> BaselineKey {
        let mut hash = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(bytes);
        };
        field(&FORMAT.to_le_bytes());
        field(build.as_bytes());
        field(self.tree.as_bytes());
        field(self.target_rel.as_bytes());
        field(&(self.files.len() as u64).to_le_bytes());
        for file in self.files {
            field(file.as_bytes());
        }
        field(&(self.empty_submodules.len() as u64).to_le_bytes());
        for path in self.empty_submodules {
            field(path.as_bytes());
        }
        let env = self.env;
        field(env.python.as_os_str().as_encoded_bytes());
        field(interpreter_identity(&env.python).as_bytes());
        field(env.pytest_version.as_bytes());
        field(env.pylint_version.as_bytes());
        field(format!("{:?}", env.layout).as_bytes());
        // What is installed: a package installed or removed (pytest-cov, a
        // dependency, the project itself) changes its folder's time.
        for dir in &env.layout.sys_path {
            field(file_identity(dir).as_bytes());
        }
        let limits = self.limits;
        field(&limits.tests.as_nanos().to_le_bytes());
        field(
            &limits
                .test_case
                .map_or(0, |d| d.as_nanos() + 1)
                .to_le_bytes(),
        );
        field(&limits.lint.as_nanos().to_le_bytes());
        field(&serde_json::to_vec(self.sandbox).unwrap_or_default());
        field(self.resource_limits.as_bytes());
        field(&[u8::from(self.isolate)]);
        BaselineKey(hex::encode(hash.finalize()))
    }
}

/// swarm's version and, when it can be read, its executable's size and
/// modification time.
fn build_identity() -> String {
    let exe = std::env::current_exe().ok();
    format!(
        "{} {}",
        env!("CARGO_PKG_VERSION"),
        exe.as_deref().map(file_identity).unwrap_or_default()
    )
}

/// The interpreter's version shows in its file: an upgrade replaces it.
fn interpreter_identity(python: &Path) -> String {
    let resolved = python
        .canonicalize()
        .unwrap_or_else(|_| python.to_path_buf());
    format!("{} {}", resolved.display(), file_identity(&resolved))
}

/// `<bytes> <modified, ns since the epoch>`, empty when unreadable.
fn file_identity(path: &Path) -> String {
    let Ok(meta) = std::fs::metadata(path) else {
        return String::new();
    };
    let modified = meta
        .modified()
        .ok()
        .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("{} {modified}", meta.len())
}

/// A baseline found in the cache.
#[derive(Debug)]
pub struct Reused {
    /// The measurement, as the tools gave it then (`cached` set).
    pub measurement: Measurement,
    /// The run that measured it.
    pub run_id: String,
    /// When, RFC 3339.
    pub measured_at: String,
}

/// The baselines kept under `<cache dir>/baseline/` (see the module docs).
#[derive(Clone, Debug)]
pub struct BaselineCache {
    dir: PathBuf,
}

impl BaselineCache {
    /// The cache under `cache_dir`.
    pub fn new(cache_dir: &Path) -> Self {
        Self {
            dir: cache_dir.join("baseline"),
        }
    }

    fn entry_path(&self, key: &BaselineKey) -> PathBuf {
        self.dir.join(format!("{}.json", key.0))
    }

    /// The baseline stored under `key`, its paths moved from the worktree
    /// it was measured in to `worktree`, and assembled for the files in
    /// `root`; `None` on any miss.
    pub fn load(
        &self,
        key: &BaselineKey,
        worktree: &Path,
        root: &Path,
        files: &[String],
    ) -> Option<Reused> {
        let text = std::fs::read(self.entry_path(key)).ok()?;
        let mut value: serde_json::Value = serde_json::from_slice(&text).ok()?;
        let old = value.get("worktree")?.as_str()?.to_string();
        let new = worktree.display().to_string();
        if !old.is_empty() {
            rebase_strings(&mut value, &old, &new);
        }
        let entry: Entry = serde_json::from_value(value).ok()?;
        if entry.format != FORMAT || entry.key != key.0 {
            return None;
        }
        let run = entry.tests?.into_run()?;
        let check = entry.check.map(CachedCheck::into_check);
        if run.no_tests && check.is_none() {
            return None;
        }
        let mut measurement =
            judge::assemble(root, files, run, entry.lint.into_report(), check, None);
        measurement.cached = true;
        Some(Reused {
            measurement,
            run_id: entry.run_id,
            measured_at: entry.measured_at,
        })
    }

    /// Stores `m` under `key` when it is worth keeping (see
    /// [`worth_keeping`]); a write that fails is left out quietly (the
    /// baseline is measured again next time). Returns whether it was kept.
    pub fn store(&self, key: &BaselineKey, m: &Measurement, run_id: &str, worktree: &Path) -> bool {
        if !worth_keeping(m) {
            return false;
        }
        let Some(run) = &m.test_run else {
            return false;
        };
        let entry = Entry {
            format: FORMAT,
            key: key.0.clone(),
            run_id: run_id.to_string(),
            measured_at: chrono::Utc::now().to_rfc3339(),
            worktree: worktree.display().to_string(),
            tests: Some(CachedRun::from_run(run)),
            check: m.import_check.as_ref().map(CachedCheck::from_check),
            lint: CachedLint::from_report(&m.snapshot.lint),
        };
        let kept = crate::atomic::write_json(&self.entry_path(key), &entry).is_ok();
        if kept {
            self.prune(MAX_ENTRIES);
        }
        kept
    }

    /// Removes the oldest entries while there are more than `max`.
    fn prune(&self, max: usize) {
        let mut entries: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        if entries.len() <= max {
            return;
        }
        entries.sort();
        let extra = entries.len() - max;
        for (_, path) in entries.into_iter().take(extra) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Whether a baseline may be reused: it did not hit any time limit and is
/// a complete measurement.
pub fn worth_keeping(m: &Measurement) -> bool {
    let Some(run) = &m.test_run else {
        return false;
    };
    let test_timeout = run.cases.iter().any(|c| {
        c.outcome == TestOutcome::NotRun
            || c.message
                .as_deref()
                .is_some_and(|msg| msg.starts_with("timed out after"))
    });
    let import_timeout = m.import_check.as_ref().is_some_and(|c| {
        c.import_errors
            .iter()
            .any(|(_, problem)| problem.contains("did not finish importing"))
    });
    !m.cached
        && m.early_stop.is_none()
        && !run.timed_out
        && run.exit_code.is_some()
        && !test_timeout
        && !import_timeout
        && m.snapshot.lint.skipped.is_empty()
        && m.snapshot.lint.score.is_some()
}

/// Replaces `old` by `new` in every string of `value`.
fn rebase_strings(value: &mut serde_json::Value, old: &str, new: &str) {
    match value {
        serde_json::Value::String(s) if s.contains(old) => *s = s.replace(old, new),
        serde_json::Value::Array(items) => {
            items.iter_mut().for_each(|v| rebase_strings(v, old, new));
        }
        serde_json::Value::Object(map) => {
            map.values_mut().for_each(|v| rebase_strings(v, old, new));
        }
        _ => {}
    }
}

/// One stored baseline.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Entry {
    format: u32,
    /// The key again: a file renamed by hand is a miss.
    key: String,
    run_id: String,
    measured_at: String,
    /// The worktree it was measured in; its paths in texts are moved to the
    /// reading run's worktree.
    worktree: String,
    tests: Option<CachedRun>,
    check: Option<CachedCheck>,
    lint: CachedLint,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct CachedCase {
    id: String,
    outcome: String,
    message: Option<String>,
    details: Option<String>,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct CachedRun {
    cases: Vec<CachedCase>,
    exit_code: Option<i32>,
    timed_out: bool,
    no_tests: bool,
    command: String,
    output: String,
    duration_ms: u64,
}

impl CachedRun {
    fn from_run(run: &TestRun) -> Self {
        Self {
            cases: run
                .cases
                .iter()
                .map(|c| CachedCase {
                    id: c.id.clone(),
                    outcome: outcome_name(c.outcome).to_string(),
                    message: c.message.clone(),
                    details: c.details.clone(),
                })
                .collect(),
            exit_code: run.exit_code,
            timed_out: run.timed_out,
            no_tests: run.no_tests,
            command: run.command.clone(),
            output: run.output.clone(),
            duration_ms: run.duration.as_millis() as u64,
        }
    }

    /// The run; `None` when a case has an outcome this build does not know.
    fn into_run(self) -> Option<TestRun> {
        let cases = self
            .cases
            .into_iter()
            .map(|c| {
                Some(TestCase {
                    outcome: outcome_named(&c.outcome)?,
                    id: c.id,
                    message: c.message,
                    details: c.details,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(TestRun {
            cases,
            exit_code: self.exit_code,
            timed_out: self.timed_out,
            no_tests: self.no_tests,
            command: self.command,
            output: self.output,
            duration: Duration::from_millis(self.duration_ms),
        })
    }
}

const OUTCOMES: &[(TestOutcome, &str)] = &[
    (TestOutcome::Passed, "passed"),
    (TestOutcome::Failed, "failed"),
    (TestOutcome::Error, "error"),
    (TestOutcome::Skipped, "skipped"),
    (TestOutcome::NotRun, "not_run"),
];

fn outcome_name(outcome: TestOutcome) -> &'static str {
    OUTCOMES
        .iter()
        .find(|(o, _)| *o == outcome)
        .map_or("unknown", |(_, name)| name)
}

fn outcome_named(name: &str) -> Option<TestOutcome> {
    OUTCOMES.iter().find(|(_, n)| *n == name).map(|(o, _)| *o)
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct CachedCheck {
    compile_errors: Vec<(String, String)>,
    import_errors: Vec<(String, String)>,
    command: String,
    output: String,
}

impl CachedCheck {
    fn from_check(check: &ImportCheck) -> Self {
        Self {
            compile_errors: check.compile_errors.clone(),
            import_errors: check.import_errors.clone(),
            command: check.command.clone(),
            output: check.output.clone(),
        }
    }

    fn into_check(self) -> ImportCheck {
        ImportCheck {
            compile_errors: self.compile_errors,
            import_errors: self.import_errors,
            command: self.command,
            output: self.output,
        }
    }
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct CachedLint {
    score: Option<f64>,
    messages: Vec<LintMessage>,
    notes: Vec<String>,
    command: String,
    output: String,
    /// Files whose result the lint had (linted then, or from pylint's cache).
    files: usize,
}

impl CachedLint {
    fn from_report(report: &LintReport) -> Self {
        Self {
            score: report.score,
            messages: report.messages.clone(),
            notes: report.notes.clone(),
            command: report.command.clone(),
            output: report.output.clone(),
            files: report.linted + report.from_cache,
        }
    }

    /// The report as this run sees it: no pylint process ran, every file's
    /// result came from a cache.
    fn into_report(self) -> LintReport {
        LintReport {
            score: self.score,
            messages: self.messages,
            notes: self.notes,
            command: self.command,
            output: self.output,
            linted: 0,
            from_cache: self.files,
            ..LintReport::default()
        }
    }
}

#[cfg(test)]
mod tests;
