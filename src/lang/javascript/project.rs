//! Which targets are JavaScript/TypeScript projects and which of their
//! files are sources, tests, runner configuration and lockfiles; where the
//! package and its workspace root are; whether the dependencies are
//! installed. Pure rules over paths, plus reading `package.json` files and
//! looking for `node_modules` folders.

use std::path::{Path, PathBuf};

use super::manifest::{workspace_glob_matches, Manifest, ManifestError};

/// Extensions of JavaScript and TypeScript sources.
pub const SOURCE_EXTENSIONS: &[&str] = &["js", "mjs", "cjs", "jsx", "ts", "mts", "cts", "tsx"];
/// Folders that never hold sources: installed dependencies and build output.
pub const NOT_SOURCE_DIRS: &[&str] = &[
    "node_modules",
    "dist",
    "build",
    "coverage",
    "out",
    ".next",
    ".nuxt",
    ".svelte-kit",
    ".turbo",
    ".cache",
];
/// Lockfiles, with the package manager that reads each.
pub const LOCKFILES: &[(&str, PackageManager)] = &[
    ("package-lock.json", PackageManager::Npm),
    ("npm-shrinkwrap.json", PackageManager::Npm),
    ("pnpm-lock.yaml", PackageManager::Pnpm),
    ("yarn.lock", PackageManager::Yarn),
    ("bun.lock", PackageManager::Bun),
    ("bun.lockb", PackageManager::Bun),
];
/// Runner configuration files, by name before their extension.
const RUNNER_CONFIG_STEMS: &[&str] = &[
    "vitest.config",
    "vitest.workspace",
    "vitest.setup",
    "vite.config",
    "jest.config",
    "jest.setup",
    "jest.preset",
    "babel.config",
];
/// Runner configuration files with a fixed name.
const RUNNER_CONFIG_NAMES: &[&str] = &[".babelrc", ".babelrc.js", ".mocharc.js", ".mocharc.json"];

/// Which tool installs the dependencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PackageManager {
    Npm,
    Pnpm,
    Yarn,
    Bun,
}

impl PackageManager {
    /// The command that installs what its lockfile says.
    pub fn install_command(self) -> &'static str {
        match self {
            PackageManager::Npm => "npm ci",
            PackageManager::Pnpm => "pnpm install",
            PackageManager::Yarn => "yarn install",
            PackageManager::Bun => "bun install",
        }
    }
}

/// The file name of `rel`.
fn name_of(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap_or(rel)
}

/// Whether a path (relative, `/`-separated) has a JavaScript/TypeScript extension.
pub fn has_source_extension(rel: &str) -> bool {
    name_of(rel)
        .rsplit_once('.')
        .is_some_and(|(_, ext)| SOURCE_EXTENSIONS.contains(&ext))
}

/// Whether a path is a JavaScript/TypeScript source swarm may work on: the
/// right extension, not in dependencies or build output, not a type
/// declaration (`.d.ts`), not minified or bundled output by its name.
pub fn is_source_path(rel: &str) -> bool {
    let name = name_of(rel);
    has_source_extension(rel)
        && !rel.split('/').any(|part| NOT_SOURCE_DIRS.contains(&part))
        && ![".d.ts", ".d.mts", ".d.cts"]
            .iter()
            .any(|s| name.ends_with(s))
        && ![".min.js", ".bundle.js", ".min.mjs", ".min.cjs"]
            .iter()
            .any(|s| name.ends_with(s))
}

/// Whether a file's text says it is generated (a marker in its first lines:
/// `@generated`, `DO NOT EDIT`, `auto-generated`, `automatically generated`).
pub fn is_generated_text(text: &str) -> bool {
    text.lines().take(5).any(|line| {
        let lower = line.to_ascii_lowercase();
        lower.contains("@generated")
            || lower.contains("do not edit")
            || lower.contains("auto-generated")
            || lower.contains("automatically generated")
    })
}

/// Whether a path is a test file: `*.test.*`, `*.spec.*`, or anything
/// under a `__tests__/`, `__mocks__/`, `test/` or `tests/` folder.
pub fn is_test_path(rel: &str) -> bool {
    let mut parts: Vec<&str> = rel.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    parts
        .iter()
        .any(|p| matches!(*p, "__tests__" | "__mocks__" | "test" | "tests"))
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// Whether a path is a test runner's configuration by its name
/// (`vitest.config.ts`, `jest.config.cjs`, `vite.config.js`, which vitest
/// reads too, babel's configuration, which jest compiles with).
pub fn is_runner_config_name(rel: &str) -> bool {
    let name = name_of(rel);
    RUNNER_CONFIG_NAMES.contains(&name)
        || RUNNER_CONFIG_STEMS.iter().any(|stem| {
            name.strip_prefix(stem)
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|ext| {
                    SOURCE_EXTENSIONS.contains(&ext) || ext == "json" || ext.ends_with(".ts")
                })
        })
}

/// The package manager of a lockfile name, when it is one.
pub fn lockfile_manager(rel: &str) -> Option<PackageManager> {
    let name = name_of(rel);
    LOCKFILES
        .iter()
        .find(|(file, _)| *file == name)
        .map(|(_, manager)| *manager)
}

/// A JavaScript/TypeScript project: the package holding a target.
#[derive(Clone, Debug)]
pub struct Project {
    /// The folder of the nearest `package.json` at or above the target.
    pub root: PathBuf,
    pub manifest: Manifest,
    /// The npm/yarn/pnpm workspace root whose workspaces include `root`
    /// (`None` when the package stands alone or is the root itself).
    pub workspace_root: Option<PathBuf>,
    /// The lockfile found at the package root or the workspace root.
    pub lockfile: Option<(PathBuf, PackageManager)>,
}

/// Dependencies are declared but not installed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the dependencies of {} are not installed (no node_modules): run `{command}` in {}", package.display(), install_in.display())]
pub struct DependenciesMissing {
    /// The package whose dependencies are missing.
    pub package: PathBuf,
    /// Where the install command is run (the workspace root or the package).
    pub install_in: PathBuf,
    /// The install command for the lockfile present (`npm ci`, `pnpm
    /// install`, `yarn install`; `npm install` without a lockfile).
    pub command: &'static str,
}

impl Project {
    /// The project holding `target`: the nearest `package.json` at or above
    /// it, no higher than `boundary` (the repository's root). `Ok(None)`
    /// when there is none.
    pub fn find(target: &Path, boundary: &Path) -> Result<Option<Project>, ManifestError> {
        let Some(root) = ancestors_within(target, boundary)
            .into_iter()
            .find(|dir| dir.join("package.json").is_file())
        else {
            return Ok(None);
        };
        let manifest = Manifest::read(&root.join("package.json"))?;
        let mut workspace_root = None;
        for dir in ancestors_within(&root, boundary).into_iter().skip(1) {
            let path = dir.join("package.json");
            if !path.is_file() {
                continue;
            }
            let outer = Manifest::read(&path)?;
            let rel = root
                .strip_prefix(&dir)
                .map(|r| r.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            let globs = outer.workspace_globs();
            if globs.iter().any(|g| workspace_glob_matches(g, &rel))
                || dir.join("pnpm-workspace.yaml").is_file()
            {
                workspace_root = Some(dir);
                break;
            }
        }
        let lockfile = [Some(&root), workspace_root.as_ref()]
            .into_iter()
            .flatten()
            .find_map(|dir| {
                LOCKFILES
                    .iter()
                    .find(|(name, _)| dir.join(name).is_file())
                    .map(|(name, manager)| (dir.join(name), *manager))
            });
        Ok(Some(Project {
            root,
            manifest,
            workspace_root,
            lockfile,
        }))
    }

    /// Where dependencies are installed from: the workspace root, else the package.
    pub fn install_root(&self) -> &Path {
        self.workspace_root.as_deref().unwrap_or(&self.root)
    }

    /// Every `node_modules` folder node would look in from the package,
    /// nearest first, up to the install root.
    pub fn node_modules(&self) -> Vec<PathBuf> {
        ancestors_within(&self.root, self.install_root())
            .into_iter()
            .map(|dir| dir.join("node_modules"))
            .filter(|dir| dir.is_dir())
            .collect()
    }

    /// `Err` naming the install command when the package (or its workspace
    /// root) declares dependencies and no `node_modules` is there.
    pub fn check_installed(&self) -> Result<(), DependenciesMissing> {
        let declares = self.manifest.has_dependencies()
            || self.workspace_root.as_ref().is_some_and(|root| {
                Manifest::read(&root.join("package.json")).is_ok_and(|m| m.has_dependencies())
            });
        if !declares || !self.node_modules().is_empty() {
            return Ok(());
        }
        Err(DependenciesMissing {
            package: self.root.clone(),
            install_in: self.install_root().to_path_buf(),
            command: self
                .lockfile
                .as_ref()
                .map_or("npm install", |(_, manager)| manager.install_command()),
        })
    }
}

/// Whether `files` (target-relative) make the target a JavaScript/TypeScript
/// one: a `package.json` holds it (`project`) and some file is a source.
pub fn is_javascript_target(project: Option<&Project>, files: &[String]) -> bool {
    project.is_some() && files.iter().any(|f| is_source_path(f))
}

/// `path` and its ancestors up to and including `boundary` (just `path`
/// when it is not below `boundary`), nearest first.
fn ancestors_within(path: &Path, boundary: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in path.ancestors() {
        found.push(dir.to_path_buf());
        if dir == boundary || !dir.starts_with(boundary) {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_code_outside_dependencies_and_build_output() {
        for yes in [
            "src/a.ts",
            "lib/b.mjs",
            "c.cjs",
            "ui/App.tsx",
            "ui/App.jsx",
            "x.mts",
        ] {
            assert!(is_source_path(yes), "{yes}");
        }
        for no in [
            "node_modules/x/index.js",
            "packages/a/node_modules/b.js",
            "dist/index.js",
            "build/app.js",
            "coverage/lcov-report/prettify.js",
            "types/index.d.ts",
            "vendor/jquery.min.js",
            "README.md",
            "src/a.py",
        ] {
            assert!(!is_source_path(no), "{no}");
        }
        assert!(is_generated_text("// @generated by protoc\nexport {}\n"));
        assert!(is_generated_text("/* eslint-disable */\n// DO NOT EDIT\n"));
        assert!(!is_generated_text("export const a = 1;\n"));
    }

    #[test]
    fn tests_and_runner_configuration_are_known_by_name() {
        for test in [
            "tests/money.test.ts",
            "src/money.spec.js",
            "__tests__/inventory.js",
            "test/helpers.mjs",
            "src/__mocks__/fs.js",
            "a.test.tsx",
        ] {
            assert!(is_test_path(test), "{test}");
        }
        for not in ["src/testing.ts", "src/latest.js", "src/contest.js"] {
            assert!(!is_test_path(not), "{not}");
        }
        for config in [
            "vitest.config.ts",
            "packages/core/vitest.config.mts",
            "jest.config.js",
            "jest.config.json",
            "vite.config.ts",
            "babel.config.cjs",
            ".babelrc",
            "jest.setup.js",
        ] {
            assert!(is_runner_config_name(config), "{config}");
        }
        assert!(!is_runner_config_name("src/config.ts"));
        assert_eq!(
            lockfile_manager("pnpm-lock.yaml"),
            Some(PackageManager::Pnpm)
        );
        assert_eq!(
            lockfile_manager("a/package-lock.json"),
            Some(PackageManager::Npm)
        );
        assert_eq!(lockfile_manager("package.json"), None);
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn a_workspace_member_finds_its_root_lockfile_and_dependencies() {
        let repo = tempfile::tempdir().expect("tempdir");
        let root = repo.path();
        write(
            &root.join("package.json"),
            r#"{"workspaces": ["packages/*"], "devDependencies": {"vitest": "3"}}"#,
        );
        write(&root.join("package-lock.json"), "{}");
        write(
            &root.join("packages/core/package.json"),
            r#"{"name": "@s/core", "scripts": {"test": "vitest run"}}"#,
        );
        let target = root.join("packages/core/src");
        std::fs::create_dir_all(&target).expect("mkdir");
        let project = Project::find(&target, root).expect("reads").expect("found");
        assert_eq!(project.root, root.join("packages/core"));
        assert_eq!(project.workspace_root.as_deref(), Some(root));
        assert_eq!(
            project.lockfile,
            Some((root.join("package-lock.json"), PackageManager::Npm))
        );
        let missing = project.check_installed().expect_err("not installed");
        assert_eq!(missing.command, "npm ci");
        assert_eq!(missing.install_in, root);
        let line = missing.to_string();
        assert!(line.contains("run `npm ci` in"), "{line}");
        std::fs::create_dir_all(root.join("node_modules")).expect("mkdir");
        assert_eq!(project.check_installed(), Ok(()));
        assert_eq!(project.node_modules(), [root.join("node_modules")]);
    }

    #[test]
    fn the_lockfile_names_the_install_command() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(
            &dir.path().join("package.json"),
            r#"{"dependencies": {"left-pad": "1"}}"#,
        );
        write(&dir.path().join("yarn.lock"), "");
        let project = Project::find(dir.path(), dir.path())
            .expect("reads")
            .expect("found");
        assert_eq!(
            project.check_installed().expect_err("missing").command,
            "yarn install"
        );
        let none = tempfile::tempdir().expect("tempdir");
        assert!(Project::find(none.path(), none.path())
            .expect("reads")
            .is_none());
    }
}
