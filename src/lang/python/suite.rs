//! Python's suite: pytest its runner and pylint its linter, run through
//! `tools` in the run's sandbox with the run's interpreter. What only they
//! do lives here, behind [`Suite`]: pylint's results kept by file content
//! for the whole run ([`LintCache`], keyed by blob ids when the content is
//! committed), pytest's run of chosen tests (the Judge's early stop), the
//! import checks that stand in when pytest collects no tests, and what the
//! environment lacks when the baseline's suite could not run at all.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::Python;
use crate::cancel::Cancel;
use crate::lang::suite::{FoundSuite, Rerun, StandIn, Suite, SuiteSetup};
use crate::lang::Language;
use crate::pipeline::{ImportCheck, LintReport, Measurement, TestRun};
use crate::tools::suite::CannotRun;
use crate::tools::{
    self, KnownContent, LintCache, LintSettings, PythonEnv, Sandbox, SandboxReport, SelectedRun,
    TestFiles, TestLimits, ToolError,
};

/// Python's suite before the run's worktree and interpreter exist: found
/// for every target, since the interpreter's tools judge any Python file
/// an accepted change adds (they run only while there is one, see
/// [`Suite::judges`]).
#[derive(Debug)]
pub struct Found;

impl FoundSuite for Found {
    fn language(&self) -> &'static dyn Language {
        &Python
    }

    /// The suite, with the checkout's ignored files its tests import laid
    /// in the worktree (see [`super::laid`]), said through `progress`.
    fn prepare(self: Box<Self>, setup: &SuiteSetup<'_>) -> Result<Box<dyn Suite>, ToolError> {
        let done = super::laid::lay(setup.checkout, setup.worktree, setup.ignored)
            .map_err(|source| ToolError::write(setup.worktree, source))?;
        tell_laid(&done, setup.progress);
        let mut suite = PythonSuite::new(
            Arc::clone(setup.toolchain),
            Arc::clone(setup.sandbox),
            LintCache::new(setup.cache_dir),
        );
        suite.laid = super::laid::in_worktree(setup.worktree, &done.laid);
        suite.ignored = setup.ignored.to_vec();
        Ok(Box::new(suite))
    }
}

/// Tells the user which ignored files were laid, and which were not for
/// their size.
fn tell_laid(done: &super::laid::LaidFiles, progress: &dyn Fn(&str)) {
    if !done.laid.is_empty() {
        progress(&format!(
            "laid {} git-ignored file(s) of your checkout that the project imports into the run's worktree (read-only, never shown to the model nor committed): {}",
            done.laid.len(),
            shortened(&done.laid)
        ));
    }
    if !done.over_budget.is_empty() {
        let names: Vec<String> = done.over_budget.iter().map(|(p, _)| p.clone()).collect();
        progress(&format!(
            "not laid in the run's worktree, over the size budget ({} MiB a file, {} MiB in all): {}",
            super::laid::FILE_BUDGET >> 20,
            super::laid::TOTAL_BUDGET >> 20,
            shortened(&names)
        ));
    }
}

/// The first few of `paths`, and how many more.
fn shortened(paths: &[String]) -> String {
    let more = paths.len().saturating_sub(5);
    let shown = paths.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if more > 0 {
        format!("{shown} and {more} more")
    } else {
        shown
    }
}

/// pytest and pylint with the run's interpreter, in the run's sandbox.
pub struct PythonSuite {
    env: Arc<PythonEnv>,
    sandbox: Arc<Sandbox>,
    /// pylint results by file content, shared by the run's measurements.
    lint_cache: LintCache,
    /// The checkout's ignored files laid in the worktree.
    laid: Vec<PathBuf>,
    /// The checkout's ignored files and folders, as git listed them.
    ignored: Vec<String>,
}

impl PythonSuite {
    /// The suite of `env` in `sandbox`, with pylint's results kept in
    /// `lint_cache`.
    pub fn new(env: Arc<PythonEnv>, sandbox: Arc<Sandbox>, lint_cache: LintCache) -> Self {
        Self {
            env,
            sandbox,
            lint_cache,
            laid: Vec::new(),
            ignored: Vec::new(),
        }
    }
}

impl Suite for PythonSuite {
    fn language(&self) -> &'static dyn Language {
        &Python
    }

    fn runner(&self) -> &str {
        Python.test_runner()
    }

    fn linter(&self) -> &str {
        Python.linter()
    }

    fn test(&self, root: &Path, limits: TestLimits, cancel: &Cancel) -> Result<TestRun, ToolError> {
        tools::run_pytest_with(&self.env, &self.sandbox, root, limits, cancel)
    }

    fn lint(
        &self,
        root: &Path,
        files: &[String],
        timeout: Duration,
        known: Option<&KnownContent>,
        cancel: &Cancel,
    ) -> Result<LintReport, ToolError> {
        tools::run_pylint_on(
            &self.env,
            &self.sandbox,
            tools::LintTarget { root, files, known },
            &LintSettings::new(timeout),
            &self.lint_cache,
            cancel,
        )
    }

    fn lints_beside_tests(&self) -> bool {
        true
    }

    fn rerun(&self) -> Option<&dyn Rerun> {
        Some(self)
    }

    fn stand_in(&self) -> Option<&dyn StandIn> {
        Some(self)
    }

    fn cannot_run(
        &self,
        root: &Path,
        worktree: &Path,
        baseline: &Measurement,
        files: &[String],
        tests: &TestFiles,
    ) -> Option<CannotRun> {
        self.differs_from_checkout(root, worktree, baseline)
            .or_else(|| super::suite_cannot_run(&self.env, root, worktree, baseline, files, tests))
    }

    /// Unless ignored files were laid: their content is not in the key.
    fn baseline_reusable(&self) -> bool {
        self.laid.is_empty()
    }

    fn laid(&self) -> &[PathBuf] {
        &self.laid
    }

    fn sandbox_report(&self) -> Option<SandboxReport> {
        None
    }
}

impl PythonSuite {
    /// The modules the baseline could not import in the worktree that the
    /// user's checkout has (see [`super::difference`]).
    fn differs_from_checkout(
        &self,
        root: &Path,
        worktree: &Path,
        baseline: &Measurement,
    ) -> Option<CannotRun> {
        let checkout = self.sandbox.checkout()?;
        let mut bases = vec![root.to_path_buf(), worktree.to_path_buf()];
        bases.extend(crate::tools::worktree::source_roots(root, worktree));
        let sides = super::difference::Sides {
            checkout,
            worktree,
            bases,
            ignored: &self.ignored,
        };
        let missing = super::difference::differences(
            baseline.test_run.as_ref(),
            baseline.import_check.as_ref(),
            &sides,
        );
        (!missing.is_empty()).then(|| CannotRun {
            missing,
            python: self.env.python.clone(),
            install: None,
        })
    }
}

impl Rerun for PythonSuite {
    /// pytest collects the whole suite and deselects the rest (see
    /// [`tools::run_pytest_only`]).
    fn run_only(
        &self,
        root: &Path,
        limits: TestLimits,
        ids: &[String],
        cancel: &Cancel,
    ) -> Result<SelectedRun, ToolError> {
        tools::run_pytest_only(&self.env, &self.sandbox, root, limits, ids, cancel)
    }
}

impl StandIn for PythonSuite {
    fn name(&self) -> &str {
        "import checks"
    }

    /// Every module compiles and imports.
    fn check(
        &self,
        root: &Path,
        sources: &[String],
        timeout: Duration,
        cancel: &Cancel,
    ) -> Result<ImportCheck, ToolError> {
        tools::check_imports(&self.env, &self.sandbox, root, sources, timeout, cancel)
    }
}
