//! A JavaScript/TypeScript target's suite in a run: found before any model
//! call ([`find`]: the package, its runner, node, the installed
//! dependencies), then prepared in the run's worktree ([`Found::prepare`]:
//! the user's `node_modules` laid as links, the linter chosen, the node
//! sandbox made) and asked by the Judge for every state it measures
//! ([`NodeSuite`]: the project's runner, eslint and `tsc`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::project::{is_source_path, Project};
use super::runner::Runner;
use super::{lint_files, project_eslint, run_tests, type_check, Linter};
use crate::cancel::Cancel;
use crate::lang::suite::{runner_failed, type_error_message, FoundSuite, Suite, SuiteSetup};
use crate::lang::Language;
use crate::pipeline::{LintReport, TestRun};
use crate::tools::node::{install_pinned_linter, NodeInstall};
use crate::tools::{KnownContent, Sandbox, SandboxPolicy, TestLimits, ToolError};

/// What [`find`] learned of one package before the run's worktree exists.
#[derive(Clone, Debug)]
pub struct Found {
    pub project: Project,
    pub runner: Runner,
    pub install: NodeInstall,
    /// Where the package stands from the target.
    pub place: Place,
    /// The package's folder relative to the repository's root (`""` at the
    /// root).
    pub package_in_repo: String,
}

/// Where a package's folder stands from the target's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// The package holds the target: the target relative to the package
    /// (`""` when it is the package; `src` when the target is below it).
    Holds(String),
    /// The package is a folder inside the target, relative to it (`web`).
    Inside(String),
}

impl Place {
    /// A package-relative path as a target-relative one (unchanged when
    /// it is outside the target).
    pub fn in_target(&self, rel: &str) -> String {
        match self {
            Place::Holds(prefix) if prefix.is_empty() => rel.to_string(),
            Place::Holds(prefix) => rel
                .strip_prefix(prefix.as_str())
                .and_then(|r| r.strip_prefix('/'))
                .unwrap_or(rel)
                .to_string(),
            Place::Inside(folder) => format!("{folder}/{rel}"),
        }
    }

    /// A target-relative path as a package-relative one.
    pub fn in_package(&self, rel: &str) -> String {
        match self {
            Place::Holds(prefix) if prefix.is_empty() => rel.to_string(),
            Place::Holds(prefix) => format!("{prefix}/{rel}"),
            Place::Inside(folder) => rel
                .strip_prefix(folder.as_str())
                .and_then(|r| r.strip_prefix('/'))
                .unwrap_or(rel)
                .to_string(),
        }
    }

    /// The package's folder for the target folder `root` in the worktree.
    pub fn package_dir(&self, root: &Path) -> PathBuf {
        match self {
            Place::Holds(prefix) => {
                let depth = Path::new(prefix).components().count();
                root.ancestors().nth(depth).unwrap_or(root).to_path_buf()
            }
            Place::Inside(folder) => root.join(folder),
        }
    }

    /// Whether a target-relative file is in the package.
    pub fn contains(&self, rel: &str) -> bool {
        match self {
            Place::Holds(_) => true,
            Place::Inside(folder) => rel
                .strip_prefix(folder.as_str())
                .is_some_and(|r| r.starts_with('/')),
        }
    }
}

/// The JS/TS suites of the target `target` (canonical, in the checkout
/// whose root is `checkout`) with `files` (target-relative sources of every
/// language): one per package (the nearest `package.json` of a source) that
/// names a test runner, the outermost when packages nest (a workspace
/// root's runner runs its members' tests). None when there is no JS/TS
/// source or no runner says how it is tested; `Err` with one line saying
/// what to do when node is missing or a package's dependencies are not
/// installed.
pub fn find(target: &Path, checkout: &Path, files: &[String]) -> Result<Vec<Found>, String> {
    let mut roots: Vec<PathBuf> = Vec::new();
    for file in files.iter().filter(|f| is_source_path(f)) {
        let dir = target.join(file);
        let Some(parent) = dir.parent() else { continue };
        if let Some(root) = parent
            .ancestors()
            .take_while(|d| d.starts_with(checkout))
            .find(|d| d.join("package.json").is_file())
        {
            if !roots.iter().any(|r| r == root) {
                roots.push(root.to_path_buf());
            }
        }
    }
    roots.sort();
    let mut packages: Vec<(Project, Runner)> = Vec::new();
    for root in &roots {
        let project = match Project::find(root, checkout) {
            Ok(Some(project)) => project,
            Ok(None) => continue,
            Err(e) => return Err(format!("{e}: fix package.json, then run swarm again")),
        };
        if let Some(runner) = Runner::detect(&project) {
            // Sorted: an enclosing package comes first and runs this one's tests.
            if !packages
                .iter()
                .any(|(p, _)| project.root.starts_with(&p.root))
            {
                packages.push((project, runner));
            }
        }
    }
    if packages.is_empty() {
        return Ok(Vec::new());
    }
    let install = NodeInstall::from_env().map_err(|e| e.to_string())?;
    let rel = |path: &Path, base: &Path| {
        path.strip_prefix(base)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default()
    };
    let mut found = Vec::new();
    for (project, runner) in packages {
        project.check_installed().map_err(|e| e.to_string())?;
        let place = if target.starts_with(&project.root) {
            Place::Holds(rel(target, &project.root))
        } else {
            Place::Inside(rel(&project.root, target))
        };
        found.push(Found {
            package_in_repo: rel(&project.root, checkout),
            place,
            project,
            runner,
            install: install.clone(),
        });
    }
    Ok(found)
}

impl Found {
    /// The suite in the run's worktree `worktree` (checked out from the
    /// user's checkout `checkout`): the user's dependencies laid there,
    /// the project's eslint (else the pinned one from `cache_dir`, installed
    /// when missing; no lint when it cannot be had, said through
    /// `progress`), and node's sandbox under `policy` (writable: the
    /// worktree).
    pub fn prepare(
        self,
        checkout: &Path,
        worktree: &Path,
        cache_dir: Option<&Path>,
        policy: SandboxPolicy,
        progress: &dyn Fn(&str),
        cancel: &Cancel,
    ) -> Result<NodeSuite, ToolError> {
        let user_modules = self.project.node_modules();
        let laid = super::lay(checkout, worktree, &user_modules)
            .map_err(|source| ToolError::write(worktree, source))?;
        let package_dir = worktree.join(&self.package_in_repo);
        let node_modules: Vec<PathBuf> = user_modules
            .iter()
            .filter_map(|m| m.strip_prefix(checkout).ok())
            .map(|rel| worktree.join(rel))
            .collect();
        let folders: Vec<PathBuf> = package_dir
            .ancestors()
            .take_while(|dir| dir.starts_with(worktree))
            .map(Path::to_path_buf)
            .collect();
        let mut readable = laid.readable.clone();
        let linter = match project_eslint(&node_modules, &folders) {
            Some(linter) => Some(linter),
            None => match cache_dir {
                Some(cache) => {
                    match install_pinned_linter(&self.install, cache, progress, cancel) {
                        Ok(pinned) => {
                            readable.push(pinned.dir.clone());
                            Some(Linter::Pinned(pinned))
                        }
                        Err(e) => {
                            progress(&format!(
                            "the JavaScript/TypeScript files are not linted: the pinned eslint could not be installed ({e})"
                        ));
                            None
                        }
                    }
                }
                None => None,
            },
        };
        let sandbox = super::sandbox_for(&self.install, policy, readable)?;
        Ok(NodeSuite {
            found: self,
            sandbox,
            linter,
            node_modules,
            laid: laid.folders,
        })
    }
}

impl FoundSuite for Found {
    fn language(&self) -> &'static dyn Language {
        &super::JavaScript
    }

    /// [`Found::prepare`], with node's own sandbox.
    fn prepare(self: Box<Self>, setup: &SuiteSetup<'_>) -> Result<Box<dyn Suite>, ToolError> {
        let suite = Found::prepare(
            *self,
            setup.checkout,
            setup.worktree,
            setup.cache_dir,
            setup.policy.clone(),
            setup.progress,
            setup.cancel,
        )?;
        Ok(Box::new(suite))
    }
}

/// The project's runner, eslint and `tsc`, in the run's worktree.
pub struct NodeSuite {
    found: Found,
    sandbox: Sandbox,
    linter: Option<Linter>,
    /// The `node_modules` folders in the worktree, nearest first.
    node_modules: Vec<PathBuf>,
    /// The folders [`super::lay`] made.
    laid: Vec<PathBuf>,
}

impl NodeSuite {
    fn package_dir(&self, root: &Path) -> PathBuf {
        self.found.place.package_dir(root)
    }

    fn in_target(&self, rel: &str) -> String {
        self.found.place.in_target(rel)
    }

    fn in_package(&self, rel: &str) -> String {
        self.found.place.in_package(rel)
    }
}

impl Suite for NodeSuite {
    fn language(&self) -> &'static dyn Language {
        &super::JavaScript
    }

    fn runner(&self) -> &str {
        self.found.runner.name()
    }

    fn linter(&self) -> &str {
        "eslint"
    }

    fn owns(&self, rel: &str) -> bool {
        self.language().is_source(rel) && self.found.place.contains(rel)
    }

    /// The package's runner runs its tests whatever the files.
    fn judges(&self, _files: &[String]) -> bool {
        true
    }

    fn test(&self, root: &Path, limits: TestLimits, cancel: &Cancel) -> Result<TestRun, ToolError> {
        let package = self.package_dir(root);
        let mut run = run_tests(
            &self.found.install,
            &self.sandbox,
            &package,
            &self.found.runner,
            &self.node_modules,
            limits,
            cancel,
        )?;
        for case in &mut run.cases {
            case.id = match case.id.split_once("::") {
                Some((file, name)) => format!("{}::{name}", self.in_target(file)),
                None => self.in_target(&case.id),
            };
        }
        if run.cases.is_empty() && !run.timed_out && run.exit_code != Some(0) {
            run.cases.push(runner_failed(self.runner(), &run));
            run.no_tests = false;
        }
        // The interpreter's runner says "no tests" with 5.
        if run.no_tests {
            run.exit_code = Some(5);
        }
        Ok(run)
    }

    fn lint(
        &self,
        root: &Path,
        files: &[String],
        timeout: Duration,
        _known: Option<&KnownContent>,
        cancel: &Cancel,
    ) -> Result<LintReport, ToolError> {
        let package = self.package_dir(root);
        let in_package: Vec<String> = files.iter().map(|f| self.in_package(f)).collect();
        let statements = super::statements_in(root, files);
        let mut report = match &self.linter {
            Some(linter) if !files.is_empty() => lint_files(
                &self.found.install,
                &self.sandbox,
                &package,
                (&in_package, statements),
                linter,
                timeout,
                cancel,
            )?,
            _ => LintReport::default(),
        };
        for message in &mut report.messages {
            message.path = self.in_target(&message.path);
        }
        let errors = type_check(
            &self.found.install,
            &self.sandbox,
            &package,
            &self.node_modules,
            timeout,
            cancel,
        )?;
        if let Some(errors) = errors {
            let from_eslint = report.messages.len();
            for e in errors {
                report.messages.push(type_error_message(
                    self.in_target(&e.path),
                    e.line,
                    e.column.saturating_sub(1),
                    &e.code,
                    &e.message,
                ));
            }
            if report.messages.len() > from_eslint {
                report.output.push_str("\n[type check]");
                for m in &report.messages[from_eslint..] {
                    report.output.push_str(&format!(
                        "\n{}:{}: {} {}",
                        m.path, m.line, m.symbol, m.message
                    ));
                }
            }
            // Type errors weigh as lint errors in the score.
            report.score = super::lint::score(&report.messages, statements).or(report.score);
        }
        Ok(report)
    }

    fn sandbox_report(&self) -> Option<crate::tools::SandboxReport> {
        Some(self.sandbox.report().clone())
    }

    fn laid(&self) -> &[PathBuf] {
        &self.laid
    }

    fn verified_by(
        &self,
        root: &Path,
        changed: &[String],
        files: &[String],
    ) -> Vec<(String, String)> {
        let mine: Vec<&String> = changed.iter().filter(|f| self.owns(f)).collect();
        if mine.is_empty() {
            return Vec::new();
        }
        let runner = self.found.runner.name();
        let mut checks = Vec::new();
        if self.found.project.root.join("tsconfig.json").is_file() {
            checks.push("tsc's type check");
        }
        if self.linter.is_some() {
            checks.push("eslint");
        }
        let tested = std::iter::once(format!("{runner}'s tests"))
            .chain(checks.iter().map(|c| c.to_string()))
            .collect::<Vec<_>>()
            .join(", ");
        let checked = match checks.as_slice() {
            [] => "that it parses".to_string(),
            _ => checks.join(" and "),
        };
        let untested = format!("{checked} only: no {runner} test reaches it");
        let reached = super::reach::reached_by_tests(root, files);
        mine.into_iter()
            .map(|file| {
                let by = if reached.contains(file) {
                    &tested
                } else {
                    &untested
                };
                (file.clone(), by.clone())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_move_between_the_target_and_its_package() {
        let root = Path::new("/w/run/web/src");
        let holds = Place::Holds("src".into());
        assert_eq!(holds.package_dir(root), Path::new("/w/run/web"));
        assert_eq!(holds.in_target("src/a.ts"), "a.ts");
        assert_eq!(holds.in_target("tests/a.test.ts"), "tests/a.test.ts");
        assert_eq!(holds.in_package("a.ts"), "src/a.ts");
        assert!(holds.contains("anything.ts"));
        let same = Place::Holds(String::new());
        assert_eq!(same.package_dir(root), root);
        assert_eq!(same.in_target("src/a.ts"), "src/a.ts");
        assert_eq!(same.in_package("a.ts"), "a.ts");
        let inside = Place::Inside("web".into());
        let repo = Path::new("/w/run");
        assert_eq!(inside.package_dir(repo), Path::new("/w/run/web"));
        assert_eq!(inside.in_target("src/a.ts"), "web/src/a.ts");
        assert_eq!(inside.in_package("web/src/a.ts"), "src/a.ts");
        assert!(inside.contains("web/src/a.ts"));
        assert!(!inside.contains("webapp/a.ts"));
        assert!(!inside.contains("api/app.py"));
    }
}
