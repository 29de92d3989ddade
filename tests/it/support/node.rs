//! The JavaScript fixtures as test inputs: their copies with dependencies
//! installed by `.ci/node-fixtures` (run when missing) into
//! `target/node-fixtures/<name>/`, copied into a test's folders with or
//! without their `node_modules`, and a snapshot of a folder to tell that it
//! did not change.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One install at a time.
static INSTALLING: Mutex<()> = Mutex::new(());

/// The installed copy of fixture `name` (installing it first when needed).
pub fn installed(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let _one = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    let status = std::process::Command::new("bash")
        .arg(root.join(".ci/node-fixtures"))
        .arg(name)
        .status()
        .expect("run .ci/node-fixtures");
    assert!(status.success(), ".ci/node-fixtures {name} failed");
    root.join("target/node-fixtures").join(name)
}

/// What a copy makes of the `node_modules` folders it meets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deps {
    /// Left out: a checkout whose dependencies are not installed.
    Left,
    /// Their files hard-linked (fast, no data copied).
    Linked,
    /// Every byte copied: a folder of the test's own, which nothing else
    /// shares.
    Copied,
}

/// Copies `from` into `to`: folders made, the project's files copied,
/// symlinks re-made with the same target, `node_modules` as `deps` says.
pub fn copy(from: &Path, to: &Path, deps: Deps) {
    copy_in(from, to, deps, false);
}

fn copy_in(from: &Path, to: &Path, deps: Deps, in_deps: bool) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let name = entry.file_name();
        let is_modules = name == "node_modules";
        if name == ".installed" || (is_modules && deps == Deps::Left) {
            continue;
        }
        let (src, dest) = (entry.path(), to.join(&name));
        let kind = entry.file_type().expect("file type");
        if kind.is_symlink() {
            let target = std::fs::read_link(&src).expect("read_link");
            std::os::unix::fs::symlink(target, &dest).expect("symlink");
        } else if kind.is_dir() {
            copy_in(&src, &dest, deps, in_deps || is_modules);
        } else if in_deps && deps == Deps::Linked {
            std::fs::hard_link(&src, &dest)
                .or_else(|_| std::fs::copy(&src, &dest).map(|_| ()))
                .expect("link file");
        } else {
            std::fs::copy(&src, &dest).expect("copy file");
        }
    }
}

/// Every entry under `dir` (links not followed): a folder, a link with its
/// target, a file with its mode and its bytes' digest.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    use sha2::{Digest, Sha256};
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("read_dir") {
            let entry = entry.expect("entry");
            let kind = entry.file_type().expect("type");
            let path = entry.path();
            let value = if kind.is_dir() {
                stack.push(path.clone());
                "dir".to_string()
            } else if kind.is_symlink() {
                format!("-> {}", std::fs::read_link(&path).expect("link").display())
            } else {
                let mode = entry.metadata().expect("metadata").permissions().mode();
                let bytes = std::fs::read(&path).expect("read");
                format!("{mode:o} {}", hex::encode(Sha256::digest(bytes)))
            };
            found.insert(path, value);
        }
    }
    found
}

/// swarm's pinned eslint (for projects without their own), installed once
/// from the npm registry into `target/node-fixtures/swarm-cache/` (here
/// when missing, as the fixtures' dependencies are) and made ready in the
/// swarm cache folder `cache` as a link to that install, so a run with a
/// fresh cache does not install it again.
pub fn with_pinned_linter(cache: &Path) {
    static INSTALL: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let installed = INSTALL.get_or_init(|| {
        let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/node-fixtures/swarm-cache");
        let node = swarm::tools::node::NodeInstall::from_env().expect("node is installed");
        swarm::tools::node::install_pinned_linter(
            &node,
            &shared,
            &|_| {},
            &swarm::cancel::Cancel::new(),
        )
        .expect("the pinned eslint installs")
        .dir
    });
    let tools = cache.join("node-tools");
    std::fs::create_dir_all(&tools).expect("mkdir");
    let name = installed.file_name().expect("a folder name");
    std::os::unix::fs::symlink(installed, tools.join(name)).expect("link the pinned eslint");
}
