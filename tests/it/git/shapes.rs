//! Repositories as people have them: links and submodules in the tree,
//! shallow clones, submodules in the run worktree, a branch named `swarm`,
//! a target inside `.git`.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use swarm::error::SwarmError;
use swarm::git::{CommitId, FastForward, FileKind, GitError, Repo};

use super::{create, open, sample, write, MESSAGE};
use crate::support::repo::{git_in, TestRepo};

#[test]
fn tree_files_name_each_kind_and_tracked_files_keep_regular_files_only() {
    let repo = sample();
    repo.write("pkg/run.sh", "#!/bin/sh\n");
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(
        repo.root.join("pkg/run.sh"),
        fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    std::os::unix::fs::symlink("/etc/hostname", repo.root.join("pkg/outside.py")).expect("ln");
    let submodule_commit = repo.head();
    repo.git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("160000,{submodule_commit},pkg/vendored"),
    ]);
    fs::create_dir_all(repo.root.join("pkg/vendored")).expect("unpopulated submodule");
    let head = repo.commit_all("links and a submodule");
    repo.write("pkg/staged.py", "s = 1\n");
    repo.git(&["add", "pkg/staged.py"]);

    let opened = open(&repo.root.join("pkg"));
    let files: BTreeMap<String, FileKind> = opened
        .tree_files(&CommitId(head))
        .expect("tree")
        .into_iter()
        .collect();
    assert_eq!(files["pkg/calc.py"], FileKind::Regular);
    assert_eq!(files["pkg/run.sh"], FileKind::Executable);
    assert_eq!(files["pkg/outside.py"], FileKind::Symlink);
    assert_eq!(files["pkg/vendored"], FileKind::Gitlink);
    assert!(!files.contains_key("pkg/staged.py"), "not committed");
    assert_eq!(files.len(), 8);
    assert_eq!(
        opened.tracked_files().expect("ls"),
        vec!["pkg/calc.py", "pkg/run.sh", "pkg/util.py"]
    );
    assert_eq!(
        opened.submodule_paths().expect("submodules"),
        vec!["pkg/vendored"]
    );
}

#[test]
fn a_shallow_clone_holds_a_whole_run() {
    let origin = sample();
    origin.write("CHANGES.md", "second\n");
    origin.commit_all("second commit");
    let clone = origin.tmp().join("shallow");
    origin.git(&[
        "clone",
        "--quiet",
        "--depth",
        "1",
        &format!("file://{}", origin.root.display()),
        clone.to_str().expect("utf8"),
    ]);
    let home = &origin.home;
    assert_eq!(
        git_in(&clone, home, &["rev-parse", "--is-shallow-repository"]),
        "true"
    );
    let clone = clone.canonicalize().expect("canonical");
    let opened = open(&clone);
    let base = opened.info().head.clone();
    let runs = opened
        .worktrees_root(&origin.tmp().join("cache"))
        .expect("root");
    let mut ws =
        swarm::git::RunWorkspace::create(&opened, &runs, "run-shallow", &base).expect("create");
    let files = [write("pkg/calc.py", "fixed\n")];
    ws.write_files(&files).expect("write");
    let attempt = ws.commit_attempt(1, &files, MESSAGE).expect("commit");
    ws.advance_best(&attempt)
        .expect("advance in a shallow clone");
    ws.reset_to(&attempt).expect("reset");
    ws.remove().expect("remove");
    let outcome = opened
        .fast_forward(&base, &attempt, "swarm/run-shallow/best", &[])
        .expect("ff");
    assert!(
        matches!(outcome, FastForward::Updated { .. }),
        "{outcome:?}"
    );
    assert_eq!(
        fs::read_to_string(clone.join("pkg/calc.py")).expect("read"),
        "fixed\n"
    );
    assert_eq!(git_in(&clone, home, &["status", "--porcelain"]), "");
}

/// Every file under `dir` with its bytes (a git dir's whole state).
fn tree_bytes(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in fs::read_dir(&current).expect("ls").flatten() {
            let path = entry.path();
            if entry.file_type().expect("type").is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).expect("under").display().to_string();
                files.insert(rel, fs::read(&path).unwrap_or_default());
            }
        }
    }
    files
}

/// A repository `name` next to `next_to`'s, with `files`, on `main`.
fn library(next_to: &TestRepo, name: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    let dir = next_to.tmp().join(name);
    fs::create_dir_all(&dir).expect("mkdir");
    let git = |args: &[&str]| git_in(&dir, &next_to.home, args);
    git(&["init", "--quiet", "--initial-branch=main"]);
    git(&["config", "user.name", "Lib"]);
    git(&["config", "user.email", "lib@example.com"]);
    for (path, text) in files {
        let full = dir.join(path);
        fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        fs::write(full, text).expect("write");
    }
    git(&["add", "-A"]);
    git(&["commit", "--quiet", "-m", "library"]);
    dir
}

#[test]
fn submodules_initialised_by_the_user_are_filled_in_the_run_worktree() {
    let repo = sample();
    let home = repo.home.clone();
    let allow = ["-c", "protocol.file.allow=always"];
    let inner = library(&repo, "inner", &[("deep.py", "DEEP = 1\n")]);
    let helpers = library(
        &repo,
        "helpers",
        &[("helpers/__init__.py", "def double(x):\n    return 2 * x\n")],
    );
    git_in(
        &helpers,
        &home,
        &[
            allow[0],
            allow[1],
            "submodule",
            "add",
            "--quiet",
            inner.to_str().expect("utf8"),
            "nested",
        ],
    );
    git_in(&helpers, &home, &["commit", "--quiet", "-m", "nested"]);
    let other = library(&repo, "other", &[("o.py", "O = 1\n")]);
    repo.git(&[
        allow[0],
        allow[1],
        "submodule",
        "add",
        "--quiet",
        helpers.to_str().expect("utf8"),
        "libs/helpers",
    ]);
    repo.git(&[
        allow[0],
        allow[1],
        "submodule",
        "add",
        "--quiet",
        other.to_str().expect("utf8"),
        "libs/other",
    ]);
    repo.git(&[
        allow[0],
        allow[1],
        "submodule",
        "update",
        "--init",
        "--recursive",
        "--quiet",
    ]);
    let base = repo.commit_all("submodules");
    let recorded = repo.git(&["rev-parse", "HEAD:libs/helpers"]);
    // The user deinitialises one submodule and moves another to a newer
    // commit that the superproject does not record.
    repo.git(&["submodule", "deinit", "--quiet", "libs/other"]);
    let user_sub = repo.root.join("libs/helpers");
    fs::write(
        user_sub.join("helpers/__init__.py"),
        "def double(x):\n    return x + x\n",
    )
    .expect("write");
    git_in(&user_sub, &home, &["commit", "--quiet", "-am", "newer"]);
    let modules_before = tree_bytes(&repo.root.join(".git/modules"));
    let user_before = repo.snapshot();

    let opened = open(&repo.root);
    assert_eq!(
        opened.submodule_paths().expect("paths"),
        vec!["libs/helpers", "libs/other"]
    );
    let ws = create(&repo, &opened, "run-sub", &CommitId(base.clone())).expect("create");
    let wt_sub = ws.path().join("libs/helpers");
    assert_eq!(
        fs::read_to_string(wt_sub.join("helpers/__init__.py")).expect("filled"),
        "def double(x):\n    return 2 * x\n",
        "the commit the superproject records, not the user's newer one"
    );
    assert_eq!(git_in(&wt_sub, &home, &["rev-parse", "HEAD"]), recorded);
    assert_eq!(
        fs::read_to_string(wt_sub.join("nested/deep.py")).expect("nested"),
        "DEEP = 1\n"
    );
    assert_eq!(ws.empty_submodules(), ["libs/other"]);
    assert_eq!(
        fs::read_dir(ws.path().join("libs/other"))
            .expect("ls")
            .count(),
        0
    );

    // Moving the worktree between commits keeps the submodules.
    fs::write(wt_sub.join("stray.txt"), "x").expect("write");
    ws.reset_to(&CommitId(base)).expect("reset");
    assert!(wt_sub.join("helpers/__init__.py").is_file());
    ws.remove().expect("remove");

    assert_eq!(
        tree_bytes(&repo.root.join(".git/modules")),
        modules_before,
        "submodule git dirs untouched"
    );
    assert_eq!(repo.snapshot(), user_before);
}

#[test]
fn a_submodule_missing_its_recorded_commit_is_a_clear_error() {
    let repo = sample();
    let lib = library(&repo, "lib", &[("l.py", "L = 1\n")]);
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "--quiet",
        lib.to_str().expect("utf8"),
        "lib",
    ]);
    let lib_commit = repo.git(&["rev-parse", ":lib"]);
    // Record a commit the user's submodule checkout does not have.
    let bogus = "0123456789abcdef0123456789abcdef01234567";
    repo.git(&[
        "update-index",
        "--cacheinfo",
        &format!("160000,{bogus},lib"),
    ]);
    repo.git(&["commit", "--quiet", "-m", "points at a missing commit"]);
    let base = repo.head();
    assert_eq!(repo.git(&["rev-parse", "HEAD:lib"]), bogus);
    assert_ne!(lib_commit, bogus);
    let opened = open(&repo.root);
    match create(&repo, &opened, "run-missing", &CommitId(base)) {
        Err(error @ GitError::SubmoduleCommitMissing { .. }) => {
            let fact = format!("submodule lib: commit {bogus} is not in your checkout of it");
            assert_eq!(error.to_string(), fact);
            assert_eq!(
                SwarmError::from(error).to_string(),
                format!("{fact}; run `git submodule update -- lib` and try again")
            );
        }
        other => panic!(
            "expected SubmoduleCommitMissing, got {:?}",
            other.map(|w| w.path().to_path_buf())
        ),
    }
    assert_eq!(repo.worktrees(), vec![repo.root.clone()]);
    assert!(!repo.git_ok(&["rev-parse", "--verify", "-q", "swarm/run-missing/best"]));
}

#[test]
fn a_branch_named_swarm_is_refused_with_what_to_do() {
    let repo = sample();
    repo.git(&["branch", "swarm"]);
    let opened = open(&repo.root);
    let error = match opened.check_run_refs_possible() {
        Err(error @ GitError::RunRefsBlocked { .. }) => error,
        other => panic!("expected RunRefsBlocked, got {other:?}"),
    };
    let fact = "a branch named swarm exists, so swarm cannot create its refs swarm/<run>/best";
    assert_eq!(error.to_string(), fact);
    assert_eq!(
        SwarmError::from(error).to_string(),
        format!("{fact}; rename it (git branch -m swarm <new-name>) and run again")
    );
    assert!(matches!(
        create(&repo, &opened, "run-1", &opened.info().head),
        Err(GitError::RunRefsBlocked { .. })
    ));
    assert_eq!(
        repo.git(&["for-each-ref", "--format=%(refname)"]),
        "refs/heads/main\nrefs/heads/swarm"
    );
    repo.git(&["branch", "-m", "swarm", "not-swarm"]);
    opened.check_run_refs_possible().expect("possible again");
}

#[test]
fn a_target_inside_dot_git_is_refused() {
    let repo = sample();
    for inside in [".git", ".git/refs", ".git/refs/heads"] {
        match Repo::open(&repo.root.join(inside)) {
            Err(error @ GitError::TargetInGitDir { .. }) => {
                let fact = format!(
                    "{} is inside the repository's .git folder",
                    repo.root.join(inside).display()
                );
                assert_eq!(error.to_string(), fact);
                assert_eq!(
                    SwarmError::from(error).to_string(),
                    format!("{fact}; point --target_dir at a folder of the working tree")
                );
            }
            other => panic!(
                "{inside}: expected TargetInGitDir, got {:?}",
                other.map(|r| r.is_some())
            ),
        }
    }
}
