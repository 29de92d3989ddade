//! The Reviewer's JavaScript/TypeScript rules as pure functions over a
//! path and the file's text before and after a change: what is protected
//! (tests, runner configuration and the setup files it names, lockfiles,
//! installed dependencies, the `jest` and `scripts` keys of `package.json`)
//! and which dangerous calls a change adds. The Reviewer will call these
//! through the language boundary; they decide, they do not report.

use swarm_analysis::javascript as analysis;
use swarm_analysis::DangerousCall;

use super::manifest::Manifest;
use super::project::{is_runner_config_name, is_test_path, lockfile_manager};

/// Why a path may not be changed by a proposal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Protected {
    /// A test file.
    Test,
    /// A test runner's configuration file, or a setup file it names.
    RunnerConfig,
    /// A lockfile: the installed dependencies are the user's.
    Lockfile,
    /// Inside `node_modules`.
    Dependencies,
}

impl std::fmt::Display for Protected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Protected::Test => "a test file",
            Protected::RunnerConfig => "test runner configuration",
            Protected::Lockfile => "a lockfile",
            Protected::Dependencies => "installed dependencies (node_modules)",
        })
    }
}

/// Whether `rel` (relative to the package root) is protected, and why.
/// `setup_files` are the setup files the runner's configuration names
/// ([`setup_files`]).
pub fn protection(rel: &str, setup_files: &[String]) -> Option<Protected> {
    let rel = rel.trim_start_matches("./");
    if rel.split('/').any(|part| part == "node_modules") {
        Some(Protected::Dependencies)
    } else if lockfile_manager(rel).is_some() {
        Some(Protected::Lockfile)
    } else if is_runner_config_name(rel) || setup_files.iter().any(|s| s == rel) {
        Some(Protected::RunnerConfig)
    } else if is_test_path(rel) {
        Some(Protected::Test)
    } else {
        None
    }
}

/// The setup files a project's runner configuration names, relative to
/// the package root: the `jest` key's (`setupFiles`, `setupFilesAfterEnv`,
/// `globalSetup`, `globalTeardown`) and every string of a `setupFiles`,
/// `setupFilesAfterEnv`, `globalSetup` or `globalTeardown` entry in the
/// configuration files' texts (`configs`).
pub fn setup_files(manifest: &Manifest, configs: &[&str]) -> Vec<String> {
    let mut found = manifest.jest_setup_files();
    let keys = [
        "setupFiles",
        "setupFilesAfterEnv",
        "globalSetup",
        "globalTeardown",
    ];
    for text in configs {
        for key in keys {
            let mut from = 0;
            while let Some(at) = text[from..].find(key) {
                let start = from + at + key.len();
                from = start;
                let rest = &text[start..];
                let Some(rest) = rest.trim_start().strip_prefix([':', '=']) else {
                    continue;
                };
                let end = rest
                    .find(['\n', ','])
                    .filter(|_| !rest.trim_start().starts_with('['));
                let value = match end {
                    Some(end) => &rest[..end],
                    None => rest.split(']').next().unwrap_or_default(),
                };
                found.extend(quoted_strings(value));
            }
        }
    }
    let mut found: Vec<String> = found
        .into_iter()
        .map(|f| {
            f.trim_start_matches("<rootDir>/")
                .trim_start_matches("./")
                .to_string()
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The quoted strings in `text`.
fn quoted_strings(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(['\'', '"', '`']) {
        let quote = rest[start..].chars().next().unwrap_or('"');
        let after = &rest[start + 1..];
        let Some(end) = after.find(quote) else { break };
        found.push(after[..end].to_string());
        rest = &after[end + 1..];
    }
    found
}

/// The parts of `package.json` a change touches that configure the tests
/// (`scripts`, `jest`), or that decide what is installed (the dependency
/// lists, `workspaces`): `None` when it touches none. A `package.json` that
/// no longer parses touches all of them.
pub fn package_json_change(before: &str, after: &str) -> Option<String> {
    let (Ok(old), Ok(new)) = (
        serde_json::from_str::<serde_json::Value>(before),
        serde_json::from_str::<serde_json::Value>(after),
    ) else {
        return Some("package.json as a whole (it no longer parses)".to_string());
    };
    let keys = [
        "scripts",
        "jest",
        "dependencies",
        "devDependencies",
        "peerDependencies",
        "optionalDependencies",
        "workspaces",
        "type",
    ];
    let changed: Vec<&str> = keys
        .into_iter()
        .filter(|k| old.get(k) != new.get(k))
        .collect();
    (!changed.is_empty()).then(|| format!("the `{}` key of package.json", changed.join("`, `")))
}

/// The first dangerous call (see [`swarm_analysis::javascript`]) that
/// `after` has more often than `before`: what a change adds.
pub fn added_dangerous_call(path: &str, before: &str, after: &str) -> Option<DangerousCall> {
    let old = analysis::dangerous_calls(path, before);
    let new = analysis::dangerous_calls(path, after);
    let count =
        |calls: &[DangerousCall], name: &str| calls.iter().filter(|c| c.name == name).count();
    new.iter()
        .find(|call| count(&new, &call.name) > count(&old, &call.name))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_configuration_lockfiles_and_dependencies_are_protected() {
        let setup = vec!["test/setup.ts".to_string()];
        assert_eq!(
            protection("tests/money.test.ts", &setup),
            Some(Protected::Test)
        );
        assert_eq!(protection("src/a.spec.js", &setup), Some(Protected::Test));
        assert_eq!(
            protection("vitest.config.ts", &setup),
            Some(Protected::RunnerConfig)
        );
        assert_eq!(
            protection("./test/setup.ts", &setup),
            Some(Protected::RunnerConfig)
        );
        assert_eq!(
            protection("package-lock.json", &setup),
            Some(Protected::Lockfile)
        );
        assert_eq!(
            protection("pnpm-lock.yaml", &setup),
            Some(Protected::Lockfile)
        );
        assert_eq!(
            protection("node_modules/x/a.js", &setup),
            Some(Protected::Dependencies)
        );
        assert_eq!(protection("src/money.ts", &setup), None);
    }

    #[test]
    fn setup_files_are_read_from_the_jest_key_and_config_texts() {
        let manifest =
            Manifest::parse(r#"{"jest": {"setupFilesAfterEnv": ["<rootDir>/jest.setup.js"]}}"#)
                .expect("parses");
        let vitest = "export default defineConfig({\n  test: {\n    setupFiles: ['./test/setup.ts', 'test/more.ts'],\n    globalSetup: './test/global.ts',\n  },\n});\n";
        assert_eq!(
            setup_files(&manifest, &[vitest]),
            [
                "jest.setup.js",
                "test/global.ts",
                "test/more.ts",
                "test/setup.ts"
            ]
        );
    }

    #[test]
    fn scripts_and_the_jest_key_of_package_json_are_test_configuration() {
        let before = r#"{"name": "a", "version": "1.0.0", "scripts": {"test": "jest"}, "jest": {"testEnvironment": "node"}}"#;
        let bumped = r#"{"name": "a", "version": "1.0.1", "scripts": {"test": "jest"}, "jest": {"testEnvironment": "node"}}"#;
        assert_eq!(package_json_change(before, bumped), None);
        let script = r#"{"name": "a", "version": "1.0.0", "scripts": {"test": "jest --passWithNoTests"}, "jest": {"testEnvironment": "node"}}"#;
        assert_eq!(
            package_json_change(before, script).as_deref(),
            Some("the `scripts` key of package.json")
        );
        let jest = r#"{"name": "a", "version": "1.0.0", "scripts": {"test": "jest"}, "jest": {"testPathIgnorePatterns": ["money"]}}"#;
        assert!(package_json_change(before, jest).is_some_and(|p| p.contains("`jest`")));
        assert!(package_json_change(before, "{").is_some());
    }

    #[test]
    fn a_change_that_adds_a_dangerous_call_is_found() {
        let before = "import { exec } from 'node:child_process';\nexport const a = 1;\n";
        let same = "import { exec } from 'node:child_process';\nexport const a = 2;\n";
        assert_eq!(added_dangerous_call("a.js", before, same), None);
        let worse = "import { exec } from 'node:child_process';\nexport const a = eval('2');\n";
        let added = added_dangerous_call("a.js", before, worse).expect("found");
        assert_eq!((added.name.as_str(), added.line), ("eval", 2));
    }
}
