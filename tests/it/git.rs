//! The git layer against real repositories in temporary folders: discovery,
//! baseline, run worktree and branches, attempts, cleanup, fast-forward.

use std::fs;
use std::path::{Path, PathBuf};

use swarm::git::{CommitId, FastForward, FileWrite, GitError, Repo, RunWorkspace};

use crate::support::repo::{git_in, git_ok, TestRepo};

mod content;
mod fast_forward;
mod hook_env;
mod location;
mod locks;
mod runs;
mod shapes;
mod spare;

pub(crate) fn open(path: &Path) -> Repo {
    Repo::open(path).expect("open").expect("a repository")
}

/// The cache folder the tests use for `repo`: next to it, outside it.
pub(crate) fn cache_of(repo: &TestRepo) -> PathBuf {
    repo.tmp().join("cache")
}

/// Where `opened`'s run worktrees live with the test cache.
pub(crate) fn runs_root(repo: &TestRepo, opened: &Repo) -> PathBuf {
    opened
        .worktrees_root(&cache_of(repo))
        .expect("worktrees root")
}

/// A run workspace in the test cache.
pub(crate) fn create(
    repo: &TestRepo,
    opened: &Repo,
    run: &str,
    base: &CommitId,
) -> Result<RunWorkspace, GitError> {
    RunWorkspace::create(opened, &runs_root(repo, opened), run, base)
}

pub(crate) fn write(path: &str, content: &str) -> FileWrite {
    FileWrite {
        path: path.to_string(),
        content: Some(content.as_bytes().to_vec()),
    }
}

pub(crate) fn delete(path: &str) -> FileWrite {
    FileWrite {
        path: path.to_string(),
        content: None,
    }
}

pub(crate) const MESSAGE: &str = "swarm: fix average() on empty input (pkg/calc.py)\n\n\
Swarm-Run: run-1\nSwarm-Iteration: 1\nSwarm-Verdict: improved\n";

pub(crate) fn sample() -> TestRepo {
    TestRepo::with_files(&[
        (
            "pkg/calc.py",
            "def average(xs):\n    return sum(xs) / len(xs)\n",
        ),
        ("pkg/util.py", "X = 1\n"),
        ("tests/test_calc.py", "from pkg.calc import average\n"),
        ("README.md", "readme\n"),
        (".gitignore", "*.log\n"),
    ])
}

#[test]
fn open_at_root_subfolder_and_symlink() {
    let repo = sample();
    let head = repo.head();

    let at_root = open(&repo.root);
    let info = at_root.info();
    assert_eq!(info.root, repo.root);
    assert_eq!(info.common_dir, repo.root.join(".git"));
    assert_eq!(info.target_rel, "");
    assert_eq!(info.head, CommitId(head.clone()));
    assert_eq!(info.branch.as_deref(), Some("main"));

    assert_eq!(open(&repo.root.join("pkg")).info().target_rel, "pkg");
    fs::create_dir_all(repo.root.join("pkg/deep/er")).expect("mkdir");
    assert_eq!(
        open(&repo.root.join("pkg/deep/er")).info().target_rel,
        "pkg/deep/er"
    );

    let link = repo.tmp().join("link-to-pkg");
    std::os::unix::fs::symlink(repo.root.join("pkg"), &link).expect("symlink");
    let via_link = open(&link);
    assert_eq!(via_link.info().root, repo.root);
    assert_eq!(via_link.info().target_rel, "pkg");
}

#[test]
fn open_outside_bare_and_unborn() {
    let plain = tempfile::tempdir().expect("tmp");
    assert!(Repo::open(plain.path()).expect("no error").is_none());

    let bare = TestRepo::empty();
    bare.git(&["init", "--quiet", "--bare"]);
    assert!(matches!(Repo::open(&bare.root), Err(GitError::Bare { .. })));

    let unborn = TestRepo::empty();
    unborn.git(&["init", "--quiet"]);
    unborn.write("a.py", "x = 1\n");
    match Repo::open(&unborn.root) {
        Err(GitError::NoCommits { path }) => assert_eq!(path, unborn.root),
        other => panic!("expected NoCommits, got {:?}", other.map(|r| r.is_some())),
    }
}

#[test]
fn open_inside_a_linked_worktree_and_fast_forward_there() {
    let repo = sample();
    let linked = repo.tmp().join("linked");
    repo.git(&[
        "worktree",
        "add",
        "--quiet",
        "-b",
        "feature",
        linked.to_str().expect("utf8"),
    ]);
    let linked = linked.canonicalize().expect("canonical");

    let opened = open(&linked.join("pkg"));
    let info = opened.info().clone();
    assert_eq!(info.root, linked);
    assert_eq!(info.common_dir, repo.root.join(".git"));
    assert_eq!(info.target_rel, "pkg");
    assert_eq!(info.branch.as_deref(), Some("feature"));
    assert_eq!(opened.tracked_files().expect("ls")[0], "pkg/calc.py");

    let mut ws = create(&repo, &opened, "run-linked", &info.head).expect("create");
    let files = [write("pkg/util.py", "X = 2\n")];
    ws.write_files(&files).expect("write");
    let attempt = ws.commit_attempt(1, &files, MESSAGE).expect("commit");
    ws.advance_best(&attempt).expect("advance");
    ws.remove().expect("remove");

    let touched = vec!["pkg/util.py".to_string()];
    let outcome = opened
        .fast_forward(&info.head, &attempt, "swarm/run-linked/best", &touched)
        .expect("ff");
    assert!(matches!(outcome, FastForward::Updated { ref branch, .. } if branch == "feature"));
    assert_eq!(
        fs::read_to_string(linked.join("pkg/util.py")).expect("read"),
        "X = 2\n"
    );
    assert_eq!(repo.git(&["rev-parse", "feature"]), attempt.0);
    assert_eq!(
        repo.read("pkg/util.py"),
        "X = 1\n",
        "the main worktree is not touched"
    );
}

#[test]
fn init_with_baseline_commits_files_but_not_environments_or_caches() {
    let repo = TestRepo::empty();
    repo.write("app.py", "print('hi')\n");
    repo.write("pkg/mod.py", "y = 2\n");
    repo.write(".gitignore", "build/\n");
    repo.write("build/out.txt", "built\n");
    repo.write(".venv/lib/site.py", "venv\n");
    repo.write("venv/bin/activate", "venv\n");
    repo.write("pkg/__pycache__/mod.cpython-312.pyc", "bytecode");
    repo.write("stray.pyc", "bytecode");

    let opened = Repo::init_with_baseline(&repo.root, "swarm: baseline").expect("init");
    assert_eq!(opened.info().branch.as_deref(), Some("main"));
    assert_eq!(
        opened.tracked_files().expect("ls"),
        vec![".gitignore", "app.py", "pkg/mod.py"]
    );
    assert_eq!(
        repo.git(&["ls-tree", "-r", "--name-only", "HEAD"]),
        ".gitignore\napp.py\npkg/mod.py"
    );
    assert_eq!(repo.git(&["log", "--format=%s"]), "swarm: baseline");
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        "",
        "nothing left over"
    );
    assert_eq!(opened.dirty_paths().expect("dirty"), Vec::<String>::new());
    assert!(Repo::init_with_baseline(&repo.root, "again").is_err());
}

#[test]
fn tracked_files_under_a_subfolder_come_from_head_not_the_index() {
    let repo = sample();
    repo.write("pkg/untracked.py", "u = 1\n");
    repo.write("pkg/staged.py", "s = 1\n");
    repo.git(&["add", "pkg/staged.py"]);
    repo.git(&["rm", "--quiet", "--cached", "pkg/util.py"]);
    let pkg = open(&repo.root.join("pkg"));
    // The run's worktree is a checkout of HEAD: a staged new file is not
    // there, a file removed from the index only still is.
    assert_eq!(
        pkg.tracked_files().expect("ls"),
        vec!["pkg/calc.py", "pkg/util.py"]
    );
    assert_eq!(open(&repo.root).tracked_files().expect("ls").len(), 5);
}

#[test]
fn dirty_paths_lists_staged_modified_deleted_and_untracked() {
    let repo = sample();
    repo.write("pkg/calc.py", "changed\n");
    repo.write("pkg/util.py", "staged\n");
    repo.git(&["add", "pkg/util.py"]);
    fs::remove_file(repo.root.join("README.md")).expect("rm");
    repo.write("new/file.py", "n\n");
    repo.write("debug.log", "ignored\n");
    assert_eq!(
        open(&repo.root).dirty_paths().expect("dirty"),
        vec!["README.md", "new/file.py", "pkg/calc.py", "pkg/util.py"]
    );
}

#[test]
fn a_full_run_never_touches_the_user_checkout_until_the_fast_forward() {
    let repo = sample();
    repo.write("notes.txt", "user's untracked notes\n");
    repo.write("README.md", "user's unstaged edit\n");
    repo.write("tests/test_calc.py", "user's staged edit\n");
    repo.git(&["add", "tests/test_calc.py"]);
    let before = repo.snapshot();
    let opened = open(&repo.root.join("pkg"));
    let base = opened.info().head.clone();

    let mut ws = create(&repo, &opened, "run-1", &base).expect("create");
    let common = repo.root.join(".git");
    let runs = runs_root(&repo, &opened);
    assert_eq!(ws.path(), runs.join("run-1"));
    assert!(!ws.path().starts_with(&repo.root), "outside the repository");
    assert!(runs.join("run-1.lock").is_file(), "the run's lock file");
    assert!(ws.path().join("pkg/calc.py").is_file());
    assert_eq!(ws.best_branch(), "swarm/run-1/best");
    assert_eq!(ws.run_branch_prefix(), "swarm/run-1/");
    assert_eq!(repo.git(&["rev-parse", "swarm/run-1/best"]), base.0);
    assert_eq!(
        opened.branch_tip("swarm/run-1/best").expect("tip"),
        Some(base.clone())
    );
    assert_eq!(repo.worktrees().len(), 2);
    assert!(!repo.git(&["status", "--porcelain"]).contains("swarm"));

    // Attempt 1 improves: a change and a new file.
    let fix = "def average(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n";
    let files = [write("pkg/calc.py", fix), write("pkg/new.py", "N = 1\n")];
    ws.write_files(&files).expect("write");
    assert_eq!(
        fs::read_to_string(ws.path().join("pkg/calc.py")).expect("read"),
        fix
    );
    let first = ws.commit_attempt(1, &files, MESSAGE).expect("commit 1");
    assert_eq!(repo.git(&["rev-parse", "swarm/run-1/attempt-1"]), first.0);
    assert_eq!(repo.git(&["rev-parse", &format!("{first}^")]), base.0);
    assert_eq!(
        repo.git(&["log", "-1", "--format=%B", &first.0]),
        MESSAGE.trim_end()
    );
    assert_eq!(
        repo.git(&[
            "log",
            "-1",
            "--format=%(trailers:key=Swarm-Run,valueonly)",
            &first.0
        ]),
        "run-1"
    );
    assert_eq!(
        repo.git(&["log", "-1", "--format=%an <%ae>", &first.0]),
        "Repo User <repo@example.com>"
    );
    assert_eq!(
        repo.git(&["diff", "--name-status", &base.0, &first.0]),
        "M\tpkg/calc.py\nA\tpkg/new.py"
    );
    assert_eq!(
        repo.git(&["show", &format!("{first}:pkg/calc.py")]),
        fix.trim_end()
    );
    ws.advance_best(&first).expect("advance");
    assert_eq!(ws.best(), &first);
    assert_eq!(repo.git(&["rev-parse", "swarm/run-1/best"]), first.0);

    // Attempt 2 is worse: it stays on its own branch, parent = best.
    let worse = [delete("pkg/util.py"), write("pkg/calc.py", "broken(\n")];
    ws.write_files(&worse).expect("write");
    assert!(!ws.path().join("pkg/util.py").exists());
    let second = ws
        .commit_attempt(2, &worse, "swarm: worse\n\nSwarm-Run: run-1\n")
        .expect("commit 2");
    assert_eq!(repo.git(&["rev-parse", &format!("{second}^")]), first.0);
    assert_eq!(
        repo.git(&["diff", "--name-status", &first.0, &second.0]),
        "M\tpkg/calc.py\nD\tpkg/util.py"
    );
    assert!(matches!(
        ws.commit_attempt(2, &worse, "again"),
        Err(GitError::BranchExists { .. })
    ));
    assert_eq!(
        opened
            .log_messages("swarm/run-1/attempt-2")
            .expect("log")
            .len(),
        3
    );

    // Back to best: caches and stray files disappear.
    fs::create_dir_all(ws.path().join("pkg/__pycache__")).expect("mkdir");
    fs::write(ws.path().join("pkg/__pycache__/calc.pyc"), "x").expect("write");
    fs::create_dir_all(ws.path().join(".pytest_cache/v")).expect("mkdir");
    fs::write(ws.path().join("stray.txt"), "x").expect("write");
    ws.reset_to(ws.best()).expect("reset");
    assert_eq!(
        fs::read_to_string(ws.path().join("pkg/calc.py")).expect("read"),
        fix
    );
    assert_eq!(
        fs::read_to_string(ws.path().join("pkg/util.py")).expect("read"),
        "X = 1\n"
    );
    for gone in ["pkg/__pycache__", ".pytest_cache", "stray.txt"] {
        assert!(!ws.path().join(gone).exists(), "{gone} removed");
    }
    assert_eq!(
        git_in(ws.path(), &repo.home, &["rev-parse", "HEAD"]),
        first.0
    );
    assert!(!git_ok(
        ws.path(),
        &repo.home,
        &["symbolic-ref", "-q", "HEAD"]
    ));
    assert_eq!(
        git_in(ws.path(), &repo.home, &["status", "--porcelain"]),
        ""
    );

    assert_eq!(
        ws.files_changed_since_base().expect("changed"),
        vec!["pkg/calc.py", "pkg/new.py"]
    );
    let path = ws.path().to_path_buf();
    ws.remove().expect("remove");
    assert!(!path.exists());
    assert!(!runs.join("run-1.lock").exists());
    assert!(!runs.exists(), "no empty folder is left in the cache");
    assert_eq!(repo.worktrees(), vec![repo.root.clone()]);
    assert!(!common.join("worktrees/run-1").exists());
    let branches = repo.git(&["branch", "--list", "swarm/*", "--format=%(refname:short)"]);
    assert_eq!(
        branches,
        "swarm/run-1/attempt-1\nswarm/run-1/attempt-2\nswarm/run-1/best"
    );
    assert_eq!(
        repo.snapshot(),
        before,
        "user checkout byte-identical before the fast-forward"
    );

    // The fast-forward takes the change and keeps the user's other edits.
    let touched = vec!["pkg/calc.py".to_string(), "pkg/new.py".to_string()];
    let outcome = opened
        .fast_forward(&base, &first, "swarm/run-1/best", &touched)
        .expect("ff");
    assert_eq!(
        outcome,
        FastForward::Updated {
            branch: "main".into(),
            from: base.clone(),
            to: first.clone(),
            undo: "git reset --keep refs/swarm/run-1/pre-ff".into(),
        }
    );
    assert_eq!(repo.head(), first.0);
    assert_eq!(repo.git(&["symbolic-ref", "HEAD"]), "refs/heads/main");
    assert_eq!(repo.read("pkg/calc.py"), fix);
    assert_eq!(repo.read("pkg/new.py"), "N = 1\n");
    assert_eq!(repo.read("README.md"), "user's unstaged edit\n");
    assert_eq!(repo.read("tests/test_calc.py"), "user's staged edit\n");
    assert_eq!(repo.read("notes.txt"), "user's untracked notes\n");
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        " M README.md\nM  tests/test_calc.py\n?? notes.txt"
    );
    assert_eq!(repo.git(&["rev-parse", "refs/swarm/run-1/pre-ff"]), base.0);
}

#[test]
fn dropping_the_workspace_removes_the_worktree_and_keeps_the_branch() {
    let repo = sample();
    let opened = open(&repo.root);
    let path = {
        let ws = create(&repo, &opened, "run-drop", &opened.info().head).expect("create");
        ws.path().to_path_buf()
    };
    assert!(!path.exists());
    assert_eq!(repo.worktrees(), vec![repo.root.clone()]);
    assert_eq!(
        repo.git(&["rev-parse", "swarm/run-drop/best"]),
        opened.info().head.0
    );
    assert!(matches!(
        create(&repo, &opened, "run-drop", &opened.info().head),
        Err(GitError::BranchExists { .. })
    ));
}

#[test]
fn workspace_refuses_bad_paths_run_ids_and_backwards_moves() {
    let repo = sample();
    let opened = open(&repo.root);
    let head = opened.info().head.clone();
    assert!(matches!(
        create(&repo, &opened, "bad/id", &head),
        Err(GitError::InvalidRunId { .. })
    ));
    let mut ws = create(&repo, &opened, "run-guard", &head).expect("create");
    for bad in ["../escape.py", "/abs.py", ".git/config", "a//b.py", ""] {
        assert!(
            matches!(
                ws.write_files(&[write(bad, "x")]),
                Err(GitError::InvalidPath { .. })
            ),
            "{bad:?} refused"
        );
        assert!(ws.commit_attempt(9, &[write(bad, "x")], "m").is_err());
    }
    assert!(!runs_root(&repo, &opened).join("escape.py").exists());

    // Deleting the only file of a folder drops the folder from the tree.
    let only = [delete("tests/test_calc.py")];
    let commit = ws.commit_attempt(1, &only, MESSAGE).expect("commit");
    assert_eq!(
        repo.git(&["ls-tree", "-r", "--name-only", &commit.0]),
        ".gitignore\nREADME.md\npkg/calc.py\npkg/util.py"
    );
    ws.advance_best(&commit).expect("advance");
    assert!(matches!(
        ws.advance_best(&head),
        Err(GitError::NotDescendant { .. })
    ));
    ws.remove().expect("remove");
}
