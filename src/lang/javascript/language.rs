//! JavaScript/TypeScript as a [`Language`]: its files, tools' names, fence
//! tags, syntax check and dangerous calls, from the pieces of this folder
//! and `swarm_analysis::javascript`.
//!
//! Registered in [`crate::lang::LANGUAGES`]; the project's runner, eslint
//! and `tsc` run through [`super::suite::NodeSuite`].

use crate::lang::Language;
use crate::pipeline::TargetDir;

use super::project::{
    has_source_extension, is_runner_config_name, is_source_path, is_test_path, lockfile_manager,
};

/// JavaScript and TypeScript: `.js .mjs .cjs .jsx .ts .mts .cts .tsx`
/// sources in a package (`package.json`), the project's runner and eslint.
pub struct JavaScript;

/// Whether `rel` is in or under a folder of installed dependencies.
fn in_dependencies(rel: &str) -> bool {
    rel.split('/').any(|part| part == "node_modules")
}

impl Language for JavaScript {
    fn name(&self) -> &'static str {
        "JavaScript/TypeScript"
    }

    /// One suite per package that names a test runner (see
    /// [`super::suite::find`]).
    fn find_suites(
        &self,
        target: &std::path::Path,
        checkout: &std::path::Path,
        files: &[String],
    ) -> Result<Vec<Box<dyn crate::lang::suite::FoundSuite>>, String> {
        let found = super::suite::find(target, checkout, files)?;
        Ok(found
            .into_iter()
            .map(|f| Box::new(f) as Box<dyn crate::lang::suite::FoundSuite>)
            .collect())
    }

    fn no_suite(&self, target: &std::path::Path) -> String {
        format!(
            "no test runner found for the JavaScript/TypeScript files under {}: swarm runs vitest, jest or node --test, named by package.json's `scripts.test`, a config file (vitest.config.*, jest.config.*) or a dev dependency",
            target.display()
        )
    }

    fn extensions(&self) -> &'static str {
        ".js/.ts"
    }

    /// The runner is the project's: one of these.
    fn test_runner(&self) -> &'static str {
        "vitest, jest or node --test"
    }

    fn linter(&self) -> &'static str {
        "eslint"
    }

    fn fence(&self) -> &'static str {
        "ts"
    }

    fn fences(&self) -> &'static [&'static str] {
        &[
            "",
            "js",
            "javascript",
            "jsx",
            "mjs",
            "cjs",
            "ts",
            "typescript",
            "tsx",
            "mts",
            "cts",
        ]
    }

    fn is_source(&self, rel: &str) -> bool {
        has_source_extension(rel)
    }

    /// Committed sources under the target that belong to a package: a
    /// `package.json` is committed in their folder or a folder above it
    /// (the target's, one above the target, or one inside it such as a
    /// front end's `web/`); never dependencies, build output, type
    /// declarations, minified bundles, or the runner's and the linter's
    /// configuration (the harness, never worked on).
    fn sources(&self, tracked: &[String], target: &TargetDir) -> Vec<String> {
        let packages: std::collections::HashSet<&str> = tracked
            .iter()
            .filter_map(|p| {
                if p == "package.json" {
                    Some("")
                } else {
                    p.strip_suffix("/package.json")
                }
            })
            .filter(|folder| !in_dependencies(folder))
            .collect();
        if packages.is_empty() {
            return Vec::new();
        }
        let in_package = |repo_path: &str| {
            let mut folder = repo_path;
            while let Some((parent, _)) = folder.rsplit_once('/') {
                if packages.contains(parent) {
                    return true;
                }
                folder = parent;
            }
            packages.contains("")
        };
        let mut files: Vec<String> = tracked
            .iter()
            .filter(|p| in_package(p))
            .filter_map(|p| target.relative(p))
            .filter(|p| {
                is_source_path(p) && !is_runner_config_name(p) && !self.is_lint_configuration(p)
            })
            .map(str::to_string)
            .collect();
        files.sort();
        files
    }

    fn is_test(&self, rel: &str) -> bool {
        has_source_extension(rel) && is_test_path(rel)
    }

    /// Lockfiles and anything under `node_modules`.
    fn is_dependency(&self, rel: &str) -> bool {
        lockfile_manager(rel).is_some() || in_dependencies(rel)
    }

    /// Tests, the runner's configuration, lockfiles and installed
    /// dependencies.
    fn is_test_harness(&self, rel: &str) -> bool {
        self.is_test(rel) || is_runner_config_name(rel) || self.is_dependency(rel)
    }

    fn configures_runner(&self, rel: &str) -> bool {
        is_runner_config_name(rel)
    }

    /// eslint's configuration files.
    fn is_lint_configuration(&self, rel: &str) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        name.starts_with("eslint.config.") || name.starts_with(".eslintrc")
    }

    /// The path without its extension, as an import names it
    /// (`src/money.ts` → `src/money`).
    fn names(&self) -> Option<&'static dyn crate::lang::names::Names> {
        Some(&super::names::Exports)
    }

    fn module_name(&self, rel: &str) -> String {
        match rel.rsplit_once('.') {
            Some((stem, _)) if has_source_extension(rel) => stem.to_string(),
            _ => rel.to_string(),
        }
    }

    /// `vitest.config.*`, `jest.config.*` and the other runner
    /// configuration files.
    fn runner_config_file(&self, rel: &str) -> Option<String> {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        is_runner_config_name(rel).then(|| name.to_string())
    }

    /// The `scripts`, `jest`, dependency or `workspaces` keys of
    /// `package.json`.
    fn runner_config_change(&self, rel: &str, before: &str, after: &str) -> Option<String> {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if name != "package.json" {
            return None;
        }
        super::rules::package_json_change(before, after)
    }

    /// The runners load no plugin from an ordinary module.
    fn runner_code(&self, _: &str, _: &str) -> Option<(&'static str, usize)> {
        None
    }

    /// No runner swarm knows runs documentation examples.
    fn doc_examples(&self, _: &str) -> Vec<(usize, String)> {
        Vec::new()
    }

    fn project_files(&self) -> &'static [&'static str] {
        &["package.json", "tsconfig.json"]
    }

    fn package_files(&self) -> &'static [&'static str] {
        &["package.json"]
    }

    /// The runner `scripts.test`, a runner configuration or a dependency
    /// names (see [`super::runner::Runner::detect`]).
    fn package_runner(&self, package: &std::path::Path, root: &std::path::Path) -> Option<String> {
        let project = super::project::Project::find(package, root).ok()??;
        (std::fs::canonicalize(&project.root).ok() == std::fs::canonicalize(package).ok())
            .then(|| super::runner::Runner::detect(&project))
            .flatten()
            .map(|runner| runner.name().to_string())
    }

    /// No reading of the runner or patching of the test framework is known
    /// for JavaScript yet: nothing is found.
    fn test_probes(&self, rel: &str, text: &str) -> Vec<swarm_analysis::TestProbe> {
        swarm_analysis::javascript::test_probes(rel, text)
    }

    fn check_syntax(&self, rel: &str, text: &str) -> Result<(), swarm_analysis::SyntaxIssue> {
        swarm_analysis::javascript::check_syntax(rel, text)
    }

    fn dangerous_calls(&self, rel: &str, text: &str) -> Vec<swarm_analysis::DangerousCall> {
        swarm_analysis::javascript::dangerous_calls(rel, text)
    }

    fn metrics(&self, rel: &str, text: &str) -> swarm_analysis::FileMetrics {
        swarm_analysis::javascript::analyze(rel, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracked(paths: &[&str]) -> Vec<String> {
        paths.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn sources_need_a_package_and_leave_out_dependencies_and_output() {
        let files = tracked(&[
            "package.json",
            "src/money.ts",
            "src/view.tsx",
            "src/types.d.ts",
            "dist/money.js",
            "node_modules/x/index.js",
            "tests/money.test.ts",
            "README.md",
        ]);
        assert_eq!(
            JavaScript.sources(&files, &TargetDir::default()),
            ["src/money.ts", "src/view.tsx", "tests/money.test.ts"]
        );
        assert!(JavaScript
            .sources(&tracked(&["src/a.js"]), &TargetDir::default())
            .is_empty());
        let monorepo = tracked(&[
            "package.json",
            "packages/core/package.json",
            "packages/core/src/a.ts",
            "packages/web/src/b.ts",
        ]);
        assert_eq!(
            JavaScript.sources(&monorepo, &TargetDir::new("packages/core")),
            ["src/a.ts"]
        );
        // A front end's package inside a Python service's target; static
        // scripts outside any package are not sources.
        let mixed = tracked(&[
            "api/app.py",
            "web/package.json",
            "web/src/app.ts",
            "web/vitest.config.ts",
            "static/legacy.js",
        ]);
        assert_eq!(
            JavaScript.sources(&mixed, &TargetDir::default()),
            ["web/src/app.ts"]
        );
    }

    #[test]
    fn tests_runner_configuration_lockfiles_and_dependencies_are_the_harness() {
        for p in [
            "src/money.test.ts",
            "__tests__/a.js",
            "vitest.config.ts",
            "jest.config.cjs",
            "package-lock.json",
            "node_modules/left-pad/index.js",
        ] {
            assert!(JavaScript.is_test_harness(p), "{p}");
        }
        for p in ["src/money.ts", "package.json", "README.md"] {
            assert!(!JavaScript.is_test_harness(p), "{p}");
        }
        assert!(JavaScript.configures_runner("vitest.config.ts"));
        assert!(!JavaScript.configures_runner("src/a.test.ts"));
        assert_eq!(
            JavaScript
                .runner_config_file("pkg/jest.config.js")
                .as_deref(),
            Some("jest.config.js")
        );
        let before = r#"{"name": "m", "scripts": {"test": "vitest run"}}"#;
        let after = r#"{"name": "m", "scripts": {"test": "exit 0"}}"#;
        assert!(JavaScript
            .runner_config_change("package.json", before, after)
            .is_some());
        assert!(JavaScript
            .runner_config_change("src/config.json", before, after)
            .is_none());
    }

    #[test]
    fn a_change_that_adds_a_dangerous_call_or_does_not_parse_is_seen() {
        let calls = JavaScript.dangerous_calls(
            "src/a.js",
            "const cp = require('child_process');\ncp.execSync('ls');\n",
        );
        assert!(!calls.is_empty());
        assert!(JavaScript
            .check_syntax("src/a.ts", "export function f(: number {")
            .is_err());
        assert!(JavaScript
            .check_syntax(
                "src/a.ts",
                "export const f = (x: number): number => x + 1;\n"
            )
            .is_ok());
        assert_eq!(JavaScript.module_name("src/money.ts"), "src/money");
    }
}
