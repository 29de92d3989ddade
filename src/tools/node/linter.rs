//! swarm's pinned linter for projects without an eslint of their own:
//! eslint with its recommended rules and typescript-eslint's for
//! TypeScript, installed once from the npm registry into swarm's cache
//! (`<cache>/node-tools/eslint-<version>-<digest>/`) with `npm ci` from a
//! lockfile embedded in swarm, so every machine lints with the same code.
//!
//! The install runs outside the sandbox (it needs the registry), with npm's
//! lifecycle scripts off; a finished install is kept and found again by
//! the digest of what was installed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::NodeInstall;
use crate::cancel::Cancel;
use crate::tools::process::{cap_text, Ending, ProcessBuilder};
use crate::tools::ToolError;

/// The eslint version swarm pins.
pub const PINNED_ESLINT: &str = "9.39.1";
/// The manifest of the pinned install.
const MANIFEST: &str = include_str!("linter/package.json");
/// Its lockfile: every package and version, with their integrity hashes.
const LOCKFILE: &str = include_str!("linter/package-lock.json");
/// The flat configuration it lints with.
const CONFIG: &str = include_str!("linter/swarm.eslint.config.mjs");
/// The configuration's file name in the install.
const CONFIG_NAME: &str = "swarm.eslint.config.mjs";
/// How long the install may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);

/// An installed pinned linter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinnedLinter {
    /// The install's folder (readable in the sandbox).
    pub dir: PathBuf,
    /// eslint's command-line entry (`node <it>`).
    pub eslint: PathBuf,
    /// The configuration to pass with `--config`.
    pub config: PathBuf,
}

impl PinnedLinter {
    /// The linter installed at `dir`, when it is complete.
    fn at(dir: PathBuf) -> Option<Self> {
        let eslint = dir.join("node_modules/eslint/bin/eslint.js");
        let config = dir.join(CONFIG_NAME);
        (eslint.is_file() && config.is_file()).then_some(Self {
            dir,
            eslint,
            config,
        })
    }
}

/// The folder of the pinned install under `cache_dir`.
fn install_dir(cache_dir: &Path) -> PathBuf {
    let mut digest = Sha256::new();
    for part in [MANIFEST, LOCKFILE, CONFIG] {
        digest.update(part.as_bytes());
    }
    let digest = hex::encode(digest.finalize());
    cache_dir
        .join("node-tools")
        .join(format!("eslint-{PINNED_ESLINT}-{}", &digest[..12]))
}

/// The pinned linter under `cache_dir`, installing it with `install`'s npm
/// first when it is not there (reporting the step through `progress`).
pub fn install_pinned_linter(
    install: &NodeInstall,
    cache_dir: &Path,
    progress: &dyn Fn(&str),
    cancel: &Cancel,
) -> Result<PinnedLinter, ToolError> {
    let dir = install_dir(cache_dir);
    if let Some(found) = PinnedLinter::at(dir.clone()) {
        return Ok(found);
    }
    progress(&format!(
        "installing eslint {PINNED_ESLINT} from the npm registry into {}",
        dir.display()
    ));
    let parent = dir.parent().unwrap_or(cache_dir);
    std::fs::create_dir_all(parent).map_err(|source| ToolError::File {
        action: crate::tools::FileAction::Mkdir,
        path: parent.to_path_buf(),
        source,
    })?;
    let staging = tempfile::Builder::new()
        .prefix(".eslint-install-")
        .tempdir_in(parent)
        .map_err(|source| ToolError::write(parent, source))?;
    for (name, text) in [
        ("package.json", MANIFEST),
        ("package-lock.json", LOCKFILE),
        (CONFIG_NAME, CONFIG),
    ] {
        let path = staging.path().join(name);
        std::fs::write(&path, text).map_err(|source| ToolError::write(&path, source))?;
    }
    let npm = npm_of(install);
    let builder = ProcessBuilder::new(&npm)
        .args([
            "ci",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--loglevel=error",
        ])
        .env("PATH", path_with(install))
        .cwd(staging.path())
        .timeout(INSTALL_TIMEOUT);
    let out = builder.run(cancel).map_err(|source| ToolError::Run {
        command: builder.command_line(),
        source,
    })?;
    match out.ending {
        Ending::Exited(0) => {}
        Ending::Cancelled => return Err(ToolError::Cancelled),
        _ => {
            return Err(ToolError::Failed {
                command: out.command.clone(),
                message: format!(
                    "npm could not install eslint {PINNED_ESLINT}: {}",
                    cap_text(out.combined().trim(), 2000)
                ),
            })
        }
    }
    let staged = staging.keep();
    if let Err(source) = std::fs::rename(&staged, &dir) {
        // Another run finished the same install first: use that one.
        let _ = std::fs::remove_dir_all(&staged);
        if PinnedLinter::at(dir.clone()).is_none() {
            return Err(ToolError::write(&dir, source));
        }
    }
    PinnedLinter::at(dir.clone()).ok_or_else(|| ToolError::Failed {
        command: "npm ci".to_string(),
        message: format!("eslint is missing from {} after the install", dir.display()),
    })
}

/// npm beside `install`'s node, else `npm` on `PATH`.
fn npm_of(install: &NodeInstall) -> PathBuf {
    let beside = install.prefix.join("bin").join("npm");
    if beside.exists() {
        beside
    } else {
        PathBuf::from("npm")
    }
}

/// `PATH` with node's folder first, so npm's `#!/usr/bin/env node` finds it.
fn path_with(install: &NodeInstall) -> std::ffi::OsString {
    let mut dirs: Vec<PathBuf> = install
        .node
        .parent()
        .map(Path::to_path_buf)
        .into_iter()
        .collect();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_install_folder_names_the_version_and_what_is_pinned() {
        let dir = install_dir(Path::new("/cache"));
        let name = dir.file_name().and_then(|n| n.to_str()).expect("a name");
        assert!(name.starts_with("eslint-9.39.1-"), "{name}");
        assert!(dir.starts_with("/cache/node-tools"));
        assert!(LOCKFILE.contains("\"node_modules/eslint\""));
        assert!(MANIFEST.contains(&format!("\"eslint\": \"{PINNED_ESLINT}\"")));
    }
}
