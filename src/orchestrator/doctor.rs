//! `swarm doctor`: whether swarm can judge a project as its user's own
//! test runner does, told without a model and without changing the
//! repository.
//!
//! Two throwaway folders are made outside the repository: *swarm's view*,
//! `HEAD`'s files written out and laid as a run lays its worktree (the
//! suites' `prepare`: the checkout's ignored modules the project imports,
//! the user's `node_modules`); and *the checkout's view*, a copy of every
//! file of the checkout, ignored ones included (the `.git` folder,
//! virtualenvs, `node_modules` and caches aside). Each suite of the target
//! runs its tests in both with the user's environment and the import
//! guard a run uses (which makes the project's code load from the folder
//! tested, as it loads from the checkout for the user). Every test whose
//! outcome differs is a difference, with the reason each side's runner
//! gave; what the run would stop on before any model call is named too.
//! No ref, index, worktree or file of the repository is written; the
//! folders are removed at the end.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::RunConfig;
use crate::cancel::Cancel;
use crate::error::SwarmError;
use crate::git::Repo;
use crate::lang::{self, Suite, Toolchain};
use crate::pipeline::{LintReport, TargetDir, TestCase, TestOutcome, TestRun};
use crate::tools::{self, Sandbox, TestFiles};

/// What the doctor found.
#[derive(Debug, Default)]
pub struct Checkup {
    /// The target folder.
    pub target: PathBuf,
    /// The tools found: name and version (or path).
    pub tools: Vec<(String, String)>,
    /// What preparing the views said (files laid, files not laid).
    pub notes: Vec<String>,
    /// The test runs in swarm's view, one per suite.
    pub swarm: Vec<TestRun>,
    /// The test runs in the checkout's view, one per suite.
    pub checkout: Vec<TestRun>,
    /// Every test whose outcome differs.
    pub differences: Vec<Difference>,
    /// What a run would stop on before any model call, in its words.
    pub stops: Option<String>,
    /// What a run never shows the model: the files laid for the tests
    /// (repo-relative), and the secrets its files hold (a description).
    pub laid: Vec<String>,
    pub secrets: Option<String>,
}

impl Checkup {
    /// Whether a run would judge the project as its user's runner does.
    pub fn agrees(&self) -> bool {
        self.differences.is_empty() && self.stops.is_none()
    }
}

/// One test whose outcome differs between the views.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub id: String,
    /// Its outcome in swarm's view (`None`: not collected there).
    pub swarm: Option<TestOutcome>,
    /// Its outcome in the checkout's view.
    pub checkout: Option<TestOutcome>,
    /// The runner's message on the side where it did not pass.
    pub why: String,
}

/// Folder names not copied into the checkout's view (besides any
/// `*_cache` folder and virtualenvs).
const NOT_COPIED: &[&str] = &[".git", "node_modules", "__pycache__", ".tox", ".nox"];

/// Checks the project at `config.target` (see the module doc); `progress`
/// tells what it does.
pub fn check(config: &RunConfig, progress: &dyn Fn(&str)) -> Result<Checkup, SwarmError> {
    let target = config.target.canonicalize().map_err(|e| {
        SwarmError::invalid(format!("cannot open {}", config.target.display())).caused_by(e)
    })?;
    let repo = Repo::open(&target)?.ok_or_else(|| {
        SwarmError::invalid(format!("{} is not in a git repository", target.display()))
    })?;
    let info = repo.info().clone();
    let target_dir = TargetDir::new(info.target_rel.as_str());
    let files = lang::sources(&repo.tracked_files()?, &target_dir);
    if files.is_empty() {
        return Err(SwarmError::invalid(lang::no_sources(&target)));
    }
    let env = Arc::new(if config.install_deps {
        let settings = tools::EnvSettings::from_env();
        tools::declared_env(&target, &info.root, &settings, progress)?
    } else {
        tools::resolve_env(&target, config.bootstrap, progress)?
    });
    let mut checkup = Checkup {
        target: target.clone(),
        tools: tools_of(&env),
        ..Checkup::default()
    };
    let scratch = tempfile::Builder::new()
        .prefix("swarm-doctor-")
        .tempdir()
        .map_err(|e| SwarmError::internal("cannot make a scratch folder").caused_by(e))?;
    let base = scratch
        .path()
        .canonicalize()
        .unwrap_or_else(|_| scratch.path().into());
    let ignored = repo.ignored_paths()?;
    let views = Views {
        config,
        checkout: &info.root,
        target_rel: &info.target_rel,
        files: &files,
        ignored: &ignored,
        env: &env,
    };
    progress("running the tests in swarm's view (HEAD's files, laid as a run lays them)");
    let swarm_dir = base.join("swarm");
    repo.write_head_files(&swarm_dir)?;
    let swarm = views.measure(&swarm_dir, &base.join("scratch-swarm"), &mut checkup.notes)?;
    progress("running the tests in a copy of your checkout (ignored files included)");
    let copy_dir = base.join("checkout");
    copy_checkout(&info.root, &copy_dir)
        .map_err(|e| SwarmError::internal("cannot copy the checkout").caused_by(e))?;
    let copy = views.measure(&copy_dir, &base.join("scratch-checkout"), &mut Vec::new())?;
    for runner in &swarm.runners {
        if !checkup.tools.iter().any(|(t, _)| t == runner) {
            checkup
                .tools
                .push(("test runner".to_string(), runner.clone()));
        }
    }
    checkup.laid = swarm.laid.clone();
    checkup.stops = swarm.stops.clone();
    checkup.secrets = secrets_in(&swarm_dir.join(&info.target_rel), &files);
    checkup.swarm = swarm.runs;
    checkup.checkout = copy.runs;
    checkup.differences = differences(&checkup.swarm, &checkup.checkout);
    Ok(checkup)
}

/// git, the interpreter and its tools, with their versions.
fn tools_of(env: &Toolchain) -> Vec<(String, String)> {
    let git = crate::git::git_version().unwrap_or_else(|| "not found".to_string());
    let mut tools = vec![("git".to_string(), git)];
    tools.extend(lang::toolchain_versions(env));
    tools
}

/// What both views share.
struct Views<'a> {
    config: &'a RunConfig,
    checkout: &'a Path,
    target_rel: &'a str,
    files: &'a [String],
    ignored: &'a [String],
    env: &'a Arc<Toolchain>,
}

/// One view measured.
struct Measured {
    runners: Vec<String>,
    runs: Vec<TestRun>,
    laid: Vec<String>,
    stops: Option<String>,
}

impl Views<'_> {
    /// Prepares the target's suites in `dir` (a view of the repository)
    /// as a run prepares them in its worktree, runs their tests there and
    /// says what a run would stop on; what preparing said goes to `notes`.
    fn measure(
        &self,
        dir: &Path,
        scratch: &Path,
        notes: &mut Vec<String>,
    ) -> Result<Measured, SwarmError> {
        let target = dir.join(self.target_rel);
        let mut policy = self.config.sandbox.clone();
        policy.writable = vec![dir.to_path_buf()];
        policy.scratch_parent = Some(scratch.to_path_buf());
        std::fs::create_dir_all(scratch)
            .map_err(|e| SwarmError::internal("cannot make a scratch folder").caused_by(e))?;
        let mut sandbox = Sandbox::new(policy.clone(), self.env)?;
        sandbox.set_checkout(self.checkout);
        let sandbox = Arc::new(sandbox);
        let said = Mutex::new(Vec::new());
        let progress = |m: &str| {
            said.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(m.to_string())
        };
        let cancel = Cancel::new();
        let setup = lang::suite::SuiteSetup {
            checkout: self.checkout,
            worktree: dir,
            ignored: self.ignored,
            cache_dir: self.config.cache_dir.as_deref(),
            policy: &policy,
            toolchain: self.env,
            sandbox: &sandbox,
            progress: &progress,
            cancel: &cancel,
        };
        let suites = lang::FoundSuites::find(&target, self.checkout, self.files)
            .map_err(SwarmError::invalid)?
            .prepare(&setup)?;
        notes.extend(said.into_inner().unwrap_or_else(|e| e.into_inner()));
        let limits = tools::TestLimits {
            run: self.config.limits.tests,
            case: self.config.limits.test_case,
        };
        let mut runs = Vec::new();
        for suite in &suites {
            runs.push(suite.test(&target, limits, &cancel)?);
        }
        let laid = suites
            .iter()
            .flat_map(|s| s.laid().iter())
            .filter_map(|p| p.strip_prefix(dir).ok())
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .collect();
        let stops = self.stops(&suites, &runs, dir, &target);
        let runners = suites.iter().map(|s| s.runner().to_string()).collect();
        Ok(Measured {
            runners,
            runs,
            laid,
            stops,
        })
    }

    /// What a run would stop on before any model call, given the tests
    /// `runs` of `suites` measured in `dir`.
    fn stops(
        &self,
        suites: &[Box<dyn Suite>],
        runs: &[TestRun],
        dir: &Path,
        target: &Path,
    ) -> Option<String> {
        let [run] = runs else {
            return None;
        };
        let baseline = crate::stage::judge::assemble(
            target,
            self.files,
            run.clone(),
            LintReport::default(),
            None,
            None,
        );
        let tests = TestFiles::read(target, dir).with_collected(Some(run));
        lang::suite_cannot_run(suites, target, dir, &baseline, self.files, &tests)
            .map(|c| SwarmError::from(c).to_string())
    }
}

/// The secrets a run would withhold from the model, described.
fn secrets_in(root: &Path, files: &[String]) -> Option<String> {
    let secrets = crate::secrets::Withheld::new();
    for file in files {
        if let Some(text) = crate::stage::read_source_text(root, file) {
            secrets.scan(file, &text);
        }
    }
    (!secrets.is_empty()).then(|| secrets.report().describe())
}

/// The tests whose outcome differs between `swarm` and `checkout`, by id.
fn differences(swarm: &[TestRun], checkout: &[TestRun]) -> Vec<Difference> {
    let by_id = |runs: &[TestRun]| -> BTreeMap<String, TestCase> {
        runs.iter()
            .flat_map(|r| r.cases.iter())
            .map(|c| (c.id.clone(), c.clone()))
            .collect()
    };
    let (ours, theirs) = (by_id(swarm), by_id(checkout));
    let mut ids: Vec<&String> = ours.keys().chain(theirs.keys()).collect();
    ids.sort();
    ids.dedup();
    let mut found = Vec::new();
    for id in ids {
        let (a, b) = (ours.get(id), theirs.get(id));
        let outcome = |c: Option<&TestCase>| c.map(|c| c.outcome);
        if outcome(a) == outcome(b) {
            continue;
        }
        let failing = [a, b]
            .into_iter()
            .flatten()
            .find(|c| c.outcome != TestOutcome::Passed);
        let why = failing
            .and_then(|c| c.message.clone())
            .unwrap_or_else(|| "not collected on one side".to_string());
        found.push(Difference {
            id: id.clone(),
            swarm: outcome(a),
            checkout: outcome(b),
            why: why.lines().next().unwrap_or_default().to_string(),
        });
    }
    found
}

/// Copies the checkout at `from` into `to`: every file, ignored ones
/// included, but the folders of [`NOT_COPIED`], tools' caches (`*_cache`)
/// and virtualenvs (a folder holding `pyvenv.cfg`); symbolic links are
/// copied as links.
fn copy_checkout(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        let source = entry.path();
        let dest = to.join(&name);
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source)?, &dest)?;
        } else if kind.is_dir() {
            let skipped = NOT_COPIED.iter().any(|n| name == *n)
                || name.to_string_lossy().ends_with("_cache")
                || source.join("pyvenv.cfg").exists();
            if !skipped {
                copy_checkout(&source, &dest)?;
            }
        } else if kind.is_file() {
            std::fs::copy(&source, &dest)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(id: &str, outcome: TestOutcome, message: &str) -> TestCase {
        TestCase {
            id: id.to_string(),
            outcome,
            message: (!message.is_empty()).then(|| message.to_string()),
            details: None,
        }
    }

    #[test]
    fn a_test_that_differs_is_named_with_the_failing_side_message() {
        let swarm = TestRun {
            cases: vec![
                case("t.py::a", TestOutcome::Passed, ""),
                case(
                    "t.py::b",
                    TestOutcome::Error,
                    "ModuleNotFoundError: No module named 'p._v'\nmore",
                ),
            ],
            ..TestRun::default()
        };
        let checkout = TestRun {
            cases: vec![
                case("t.py::a", TestOutcome::Passed, ""),
                case("t.py::b", TestOutcome::Passed, ""),
                case("t.py::c", TestOutcome::Failed, "assert 1 == 2"),
            ],
            ..TestRun::default()
        };
        let found = differences(&[swarm], &[checkout]);
        assert_eq!(
            found,
            vec![
                Difference {
                    id: "t.py::b".to_string(),
                    swarm: Some(TestOutcome::Error),
                    checkout: Some(TestOutcome::Passed),
                    why: "ModuleNotFoundError: No module named 'p._v'".to_string(),
                },
                Difference {
                    id: "t.py::c".to_string(),
                    swarm: None,
                    checkout: Some(TestOutcome::Failed),
                    why: "assert 1 == 2".to_string(),
                },
            ]
        );
    }
}
