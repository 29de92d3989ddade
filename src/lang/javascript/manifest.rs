//! A project's `package.json`, as far as swarm reads it: its name, scripts,
//! dependencies, workspaces and the `jest` key.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

/// The parts of a `package.json` swarm reads. Unknown keys are ignored.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Manifest {
    pub name: Option<String>,
    /// `module` for ES modules, else CommonJS.
    #[serde(rename = "type")]
    pub module_type: Option<String>,
    pub scripts: BTreeMap<String, String>,
    pub dependencies: BTreeMap<String, serde_json::Value>,
    #[serde(rename = "devDependencies")]
    pub dev_dependencies: BTreeMap<String, serde_json::Value>,
    /// npm/yarn workspaces: a list of globs, or `{ "packages": [...] }`.
    pub workspaces: Option<serde_json::Value>,
    /// jest's configuration, when it lives in `package.json`.
    pub jest: Option<serde_json::Value>,
}

/// Why a `package.json` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid package.json: {source}")]
    Parse {
        path: String,
        #[source]
        source: serde_json::Error,
    },
}

impl Manifest {
    /// Parses the text of a `package.json`.
    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Reads the `package.json` at `path`.
    pub fn read(path: &Path) -> Result<Self, ManifestError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&text).map_err(|source| ManifestError::Parse {
            path: shown,
            source,
        })
    }

    /// Whether it names `package` as a dependency of any kind.
    pub fn depends_on(&self, package: &str) -> bool {
        self.dependencies.contains_key(package) || self.dev_dependencies.contains_key(package)
    }

    /// Whether it declares any dependency at all.
    pub fn has_dependencies(&self) -> bool {
        !self.dependencies.is_empty() || !self.dev_dependencies.is_empty()
    }

    /// The workspace globs (`packages/*`), empty when it is no workspace root.
    pub fn workspace_globs(&self) -> Vec<String> {
        let list = match &self.workspaces {
            Some(serde_json::Value::Array(list)) => list.clone(),
            Some(serde_json::Value::Object(map)) => match map.get("packages") {
                Some(serde_json::Value::Array(list)) => list.clone(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        list.into_iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    }

    /// The setup files its `jest` key names (`setupFiles`,
    /// `setupFilesAfterEnv`, `globalSetup`, `globalTeardown`), as written.
    pub fn jest_setup_files(&self) -> Vec<String> {
        let Some(jest) = &self.jest else {
            return Vec::new();
        };
        let mut files = Vec::new();
        for key in [
            "setupFiles",
            "setupFilesAfterEnv",
            "globalSetup",
            "globalTeardown",
        ] {
            match jest.get(key) {
                Some(serde_json::Value::String(one)) => files.push(one.clone()),
                Some(serde_json::Value::Array(many)) => {
                    files.extend(many.iter().filter_map(|v| v.as_str().map(str::to_string)))
                }
                _ => {}
            }
        }
        files
    }
}

/// Whether the workspace glob `glob` (`packages/*`, `apps/**`, `tools/cli`)
/// matches the folder `rel` (relative to the workspace root).
pub fn workspace_glob_matches(glob: &str, rel: &str) -> bool {
    let glob = glob.trim_start_matches("./").trim_end_matches('/');
    let pattern: Vec<&str> = glob.split('/').collect();
    let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
    fn matches(pattern: &[&str], parts: &[&str]) -> bool {
        match (pattern.first(), parts.first()) {
            (None, None) => true,
            (Some(&"**"), _) => {
                matches(&pattern[1..], parts)
                    || (!parts.is_empty() && matches(pattern, &parts[1..]))
            }
            (Some(p), Some(part)) => {
                segment_matches(p, part) && matches(&pattern[1..], &parts[1..])
            }
            _ => false,
        }
    }
    matches(&pattern, &parts)
}

/// One path segment against a pattern with `*` wildcards.
fn segment_matches(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            let Some(rest) = text.strip_prefix(head) else {
                return false;
            };
            (0..=rest.len())
                .filter(|i| rest.is_char_boundary(*i))
                .any(|i| segment_matches(tail, &rest[i..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_swarm_reads_are_read() {
        let m = Manifest::parse(
            r#"{"name": "a", "type": "module", "scripts": {"test": "vitest run"},
                "devDependencies": {"vitest": "3.2.4"}, "workspaces": {"packages": ["packages/*"]},
                "jest": {"setupFilesAfterEnv": ["./jest.setup.js"], "globalSetup": "./g.js"},
                "other": [1, 2]}"#,
        )
        .expect("parses");
        assert_eq!(m.scripts["test"], "vitest run");
        assert!(m.depends_on("vitest"));
        assert!(!m.depends_on("jest"));
        assert_eq!(m.workspace_globs(), ["packages/*"]);
        assert_eq!(m.jest_setup_files(), ["./jest.setup.js", "./g.js"]);
    }

    #[test]
    fn workspace_globs_match_folders() {
        assert!(workspace_glob_matches("packages/*", "packages/core"));
        assert!(!workspace_glob_matches("packages/*", "packages/core/src"));
        assert!(workspace_glob_matches("./apps/**", "apps/web/admin"));
        assert!(workspace_glob_matches("tools/cli", "tools/cli"));
        assert!(workspace_glob_matches("packages/lib-*", "packages/lib-a"));
        assert!(!workspace_glob_matches("packages/lib-*", "packages/core"));
    }
}
