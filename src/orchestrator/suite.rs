//! Before any model call: the baseline's test suite must have run. A suite
//! that could not run in this environment (a plugin, a module, the project
//! itself not installed, a usage error) stops the run with what is missing
//! and how to get it (see [`crate::tools::suite`]); a collection error in
//! the project's own code is left for the Fixer, as any failing test.
//! Without tests, the import checks stand in: a module the code imports
//! that is not installed stops the run the same way.

use super::RunContext;
use crate::error::SwarmError;
use crate::pipeline::Measurement;
use crate::tools::project::Project;
use crate::tools::suite::{cannot_import, cannot_run, SuiteContext};
use crate::tools::TestFiles;

/// `Err` naming what the environment lacks when the baseline's pytest run
/// could not run the suite; `worktree` is the run's worktree (the project's
/// declarations are looked for from the target up to it).
pub(super) fn ensure_suite_runs(
    cx: &RunContext<'_>,
    worktree: &std::path::Path,
    baseline: &Measurement,
    files: &[String],
    tests: &TestFiles,
) -> Result<(), SwarmError> {
    let project = Project::find(cx.root, worktree);
    let stdlib = || crate::tools::stdlib_modules(cx.env);
    let weighing = SuiteContext {
        project: &project,
        files,
        tests,
        python: cx.env.python.clone(),
        stdlib: &stdlib,
    };
    let found = match (&baseline.import_check, &baseline.test_run) {
        (Some(check), _) => cannot_import(check, &weighing),
        (None, Some(run)) => cannot_run(run, &weighing),
        (None, None) => None,
    };
    match found {
        Some(missing) => Err(missing.into()),
        None => Ok(()),
    }
}
