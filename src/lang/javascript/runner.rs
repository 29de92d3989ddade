//! Which test runner a project uses and its command line: vitest, jest or
//! node's built-in runner, found from `package.json` (`scripts.test`, the
//! dependencies, the `jest` key) and configuration files; run through node
//! directly (`node <runner's entry> …`, not `npm test`, so nothing else the
//! script does runs) with a machine-readable per-test reporter written into
//! the process's sandbox cell and a per-test time limit.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::project::Project;
use crate::tools::node::Arg;

/// The reporter file a run writes into its cell.
pub const REPORT_FILE: &str = "report.json";
/// Where swarm's node reporter writes its lines.
pub const NODE_RESULTS_FILE: &str = "results.jsonl";
/// swarm's node reporter's file name in the cell.
pub const NODE_REPORTER_FILE: &str = "swarm_reporter.mjs";
/// swarm's reporter for node's built-in runner.
pub const NODE_REPORTER: &str = include_str!("swarm_reporter.mjs");

/// A test runner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Runner {
    Vitest,
    Jest,
    /// `node --test`, with the file or folder arguments `scripts.test` gave.
    Node {
        paths: Vec<String>,
    },
}

impl Runner {
    /// `vitest`, `jest` or `node --test`.
    pub fn name(&self) -> &'static str {
        match self {
            Runner::Vitest => "vitest",
            Runner::Jest => "jest",
            Runner::Node { .. } => "node --test",
        }
    }

    /// The runner `project` uses, `None` when nothing says (no test
    /// script, no runner dependency, no configuration). `scripts.test`
    /// decides first, then the configuration files in the package, then the
    /// dependencies of the package or its workspace root.
    pub fn detect(project: &Project) -> Option<Runner> {
        if let Some(script) = project.manifest.scripts.get("test") {
            if let Some(runner) = from_script(script) {
                return Some(runner);
            }
        }
        let has_config = |stem: &str| {
            ["js", "mjs", "cjs", "ts", "mts", "cts", "json"]
                .iter()
                .any(|ext| project.root.join(format!("{stem}.{ext}")).is_file())
        };
        if has_config("vitest.config") {
            return Some(Runner::Vitest);
        }
        if has_config("jest.config") || project.manifest.jest.is_some() {
            return Some(Runner::Jest);
        }
        let root_manifest = project
            .workspace_root
            .as_ref()
            .and_then(|r| super::manifest::Manifest::read(&r.join("package.json")).ok());
        let depends = |package: &str| {
            project.manifest.depends_on(package)
                || root_manifest
                    .as_ref()
                    .is_some_and(|m| m.depends_on(package))
        };
        if depends("vitest") {
            Some(Runner::Vitest)
        } else if depends("jest") {
            Some(Runner::Jest)
        } else {
            None
        }
    }

    /// The runner's entry script in the first of `node_modules` folders
    /// that has it (`vitest/vitest.mjs`, `jest/bin/jest.js`); `None` for
    /// node's own runner, or when it is not installed.
    pub fn entry(&self, node_modules: &[PathBuf]) -> Option<PathBuf> {
        let rel = match self {
            Runner::Vitest => "vitest/vitest.mjs",
            Runner::Jest => "jest/bin/jest.js",
            Runner::Node { .. } => return None,
        };
        node_modules
            .iter()
            .map(|dir| dir.join(rel))
            .find(|path| path.is_file())
    }

    /// The arguments after `node`: the runner (`entry` for vitest and
    /// jest), its reporter into the cell, `case` per test, no watch mode.
    pub fn args(&self, entry: Option<&Path>, case: Duration) -> Vec<Arg> {
        let millis = case.as_millis().max(1).to_string();
        let mut args = Vec::new();
        match self {
            Runner::Vitest => {
                args.push(Arg::plain(
                    entry.map_or_else(Default::default, |e| e.as_os_str().to_owned()),
                ));
                args.extend(
                    ["run", "--reporter=json", "--watch=false"]
                        .into_iter()
                        .map(Arg::plain),
                );
                args.push(Arg::in_cell("--outputFile=", REPORT_FILE));
                args.push(Arg::plain(format!("--testTimeout={millis}")));
                args.push(Arg::plain(format!("--hookTimeout={millis}")));
            }
            Runner::Jest => {
                args.push(Arg::plain(
                    entry.map_or_else(Default::default, |e| e.as_os_str().to_owned()),
                ));
                args.extend(
                    ["--json", "--ci", "--watchman=false", "--no-cache"]
                        .into_iter()
                        .map(Arg::plain),
                );
                args.push(Arg::in_cell("--outputFile=", REPORT_FILE));
                args.push(Arg::plain(format!("--testTimeout={millis}")));
            }
            Runner::Node { paths } => {
                args.push(Arg::plain("--test"));
                args.push(Arg::in_cell("--test-reporter=", NODE_REPORTER_FILE));
                args.push(Arg::in_cell(
                    "--test-reporter-destination=",
                    NODE_RESULTS_FILE,
                ));
                args.push(Arg::plain(format!("--test-timeout={millis}")));
                args.extend(paths.iter().map(Arg::plain));
            }
        }
        args
    }
}

/// The runner a `test` script names: the first command of the script that
/// is `vitest`, `jest` or `node --test` (after `npx`, `cross-env X=1` and
/// the like); `None` when it names none (`npm run build && mocha`).
pub fn from_script(script: &str) -> Option<Runner> {
    for command in script.split(['&', ';', '|']) {
        let words: Vec<&str> = command.split_whitespace().collect();
        for (i, word) in words.iter().enumerate() {
            let program = word.rsplit('/').next().unwrap_or(word);
            match program {
                "vitest" => return Some(Runner::Vitest),
                "jest" => return Some(Runner::Jest),
                "node" if words[i + 1..].contains(&"--test") => {
                    let paths = words[i + 1..]
                        .iter()
                        .filter(|w| !w.starts_with('-'))
                        .map(|w| w.trim_matches(['"', '\'']).to_string())
                        .collect();
                    return Some(Runner::Node { paths });
                }
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_script_names_the_runner() {
        assert_eq!(from_script("vitest run"), Some(Runner::Vitest));
        assert_eq!(from_script("vitest"), Some(Runner::Vitest));
        assert_eq!(from_script("npx jest --coverage"), Some(Runner::Jest));
        assert_eq!(
            from_script("cross-env NODE_ENV=test jest"),
            Some(Runner::Jest)
        );
        assert_eq!(
            from_script("node --test"),
            Some(Runner::Node { paths: vec![] })
        );
        assert_eq!(
            from_script("node --test --test-concurrency=1 test/ 'lib/**/*.test.mjs'"),
            Some(Runner::Node {
                paths: vec!["test/".into(), "lib/**/*.test.mjs".into()]
            })
        );
        assert_eq!(from_script("tsc && node dist/index.js"), None);
        assert_eq!(from_script("mocha"), None);
    }

    #[test]
    fn the_command_line_asks_for_a_report_and_a_per_test_limit() {
        let case = Duration::from_secs(10);
        let entry = Path::new("/p/node_modules/vitest/vitest.mjs");
        let args = Runner::Vitest.args(Some(entry), case);
        assert_eq!(args[0], Arg::plain("/p/node_modules/vitest/vitest.mjs"));
        assert!(args.contains(&Arg::in_cell("--outputFile=", REPORT_FILE)));
        assert!(args.contains(&Arg::plain("--testTimeout=10000")));
        let jest = Runner::Jest.args(Some(Path::new("/p/jest.js")), case);
        assert!(jest.contains(&Arg::plain("--json")));
        let node = Runner::Node {
            paths: vec!["test/".into()],
        }
        .args(None, case);
        assert_eq!(node[0], Arg::plain("--test"));
        assert!(node.contains(&Arg::plain("--test-timeout=10000")));
        assert_eq!(node.last(), Some(&Arg::plain("test/")));
    }
}
