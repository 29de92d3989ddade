//! Where run worktrees live: outside the repository's directory tree, one
//! folder per repository, never inside the working tree or `.git`.

use std::fs;

use swarm::error::SwarmError;
use swarm::git::{GitError, RunWorkspace};

use super::{cache_of, create, open, runs_root, sample};
use crate::support::repo::TestRepo;

#[test]
fn run_worktrees_live_in_the_cache_keyed_by_repository() {
    let repo = sample();
    let opened = open(&repo.root);
    let runs = runs_root(&repo, &opened);
    let key = opened.repo_key();
    assert_eq!(
        runs,
        cache_of(&repo).join("worktrees").join(&key),
        "<cache>/worktrees/<repo key>"
    );
    let (name, hash) = key.rsplit_once('-').expect("name-hash");
    assert_eq!(name, "repo");
    assert_eq!(hash.len(), 12);
    assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));

    // Another repository with the same folder name gets another key; a
    // folder of the same repository (or a linked worktree) the same one.
    let other = TestRepo::with_files(&[("a.py", "a = 1\n")]);
    assert_ne!(open(&other.root).repo_key(), key);
    assert_eq!(open(&repo.root.join("pkg")).repo_key(), key);
    let linked = repo.tmp().join("linked");
    repo.git(&[
        "worktree",
        "add",
        "--quiet",
        "--detach",
        linked.to_str().expect("utf8"),
    ]);
    assert_eq!(open(&linked).repo_key(), key);

    let ws = create(&repo, &opened, "run-where", &opened.info().head).expect("create");
    assert_eq!(ws.path(), runs.join("run-where"));
    assert!(!ws.path().starts_with(&repo.root));
    // No ancestor of the worktree is a folder of the repository: pytest's
    // walk up from it never meets the user's files.
    assert!(ws
        .path()
        .ancestors()
        .all(|dir| !dir.starts_with(&repo.root)));
    ws.remove().expect("remove");
}

#[test]
fn a_cache_inside_the_repository_is_refused_before_anything_is_written() {
    let repo = sample();
    let opened = open(&repo.root);
    let head = opened.info().head.clone();
    let before = repo.snapshot();
    let link = repo.tmp().join("link-into-repo");
    std::os::unix::fs::symlink(repo.root.join("pkg"), &link).expect("symlink");
    for cache in [
        repo.root.join("cache"),
        repo.root.join(".git/cache"),
        repo.root.join("pkg/../.git"),
        link.join("cache"),
    ] {
        match opened.worktrees_root(&cache) {
            Err(GitError::WorktreesInsideRepo { path, repo: inside }) => {
                assert!(path.starts_with(&repo.root), "{}", path.display());
                assert_eq!(inside, repo.root);
                // The fact from git, the way out from the top-level error.
                let fact = format!(
                    "the run worktree folder {} is inside the repository at {}",
                    path.display(),
                    inside.display()
                );
                let error = GitError::WorktreesInsideRepo { path, repo: inside };
                assert_eq!(error.to_string(), fact);
                let message = SwarmError::from(error).to_string();
                assert_eq!(
                    message,
                    format!("{fact}; set SWARM_CACHE_DIR to a folder outside it")
                );
                assert!(!message.contains('\n'));
            }
            other => panic!("{} accepted: {other:?}", cache.display()),
        }
        let inside = cache.join("worktrees/key");
        assert!(matches!(
            RunWorkspace::create(&opened, &inside, "run-in", &head),
            Err(GitError::WorktreesInsideRepo { .. })
        ));
    }
    assert_eq!(repo.snapshot(), before);
    assert!(!repo.root.join("cache").exists());
    assert!(!repo.root.join(".git/cache").exists());
    assert!(!repo.git_ok(&["rev-parse", "--verify", "-q", "swarm/run-in/best"]));
    assert_eq!(fs::read_dir(repo.root.join("pkg")).expect("ls").count(), 2);
}
