//! The spare worktree: a finished run's worktree kept, unregistered, for the
//! next run of the same repository, which must still start from exactly
//! its base commit's files whatever the last run (or its tests) left.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use swarm::git::CommitId;

use super::{create, open, runs_root, sample};
use crate::support::repo::git_in;

/// Every file under `dir` (not `.git`), by relative path.
fn files_of(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in fs::read_dir(dir).expect("read dir").flatten() {
            let path = entry.path();
            if entry.file_name() == ".git" {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).expect("under root");
                out.insert(
                    rel.to_string_lossy().into_owned(),
                    fs::read(&path).expect("read"),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn a_retired_worktree_is_the_next_runs_checkout_at_exactly_its_base() {
    let repo = sample();
    let opened = open(&repo.root);
    let first_base = CommitId(repo.head());
    let root = runs_root(&repo, &opened);

    let ws = create(&repo, &opened, "run-1", &first_base).expect("first run");
    let first_path = ws.path().to_path_buf();
    // What a run and its tests leave behind: a file changed in place with
    // its size and times put back, a deleted file, untracked and ignored
    // files, a cache folder.
    // (The test file stays the same in the next base commit.)
    let calc = first_path.join("tests/test_calc.py");
    let meta = fs::metadata(&calc).expect("test file");
    let same_size = "from pkg.calc import averagX\n";
    assert_eq!(same_size.len() as u64, meta.len());
    fs::write(&calc, same_size).expect("tamper");
    let times = fs::FileTimes::new()
        .set_modified(meta.modified().expect("mtime"))
        .set_accessed(meta.accessed().expect("atime"));
    fs::File::options()
        .write(true)
        .open(&calc)
        .expect("open")
        .set_times(times)
        .expect("times");
    fs::remove_file(first_path.join("pkg/util.py")).expect("delete");
    fs::write(first_path.join("junk.txt"), "left by a test\n").expect("junk");
    fs::write(first_path.join("run.log"), "ignored\n").expect("log");
    fs::create_dir_all(first_path.join("pkg/__pycache__")).expect("cache");
    fs::write(first_path.join("pkg/__pycache__/calc.pyc"), "x").expect("pyc");
    ws.retire().expect("retired");

    // Kept, unregistered: git knows no second worktree and no run folder.
    assert!(!first_path.exists());
    assert!(root.join("spare").is_dir());
    assert!(root.join("spare.index").is_file());
    assert!(!root.join("spare/.git").exists());
    assert_eq!(repo.worktrees(), vec![repo.root.clone()]);

    // The user commits meanwhile: the next run starts from the new HEAD.
    repo.write(
        "pkg/calc.py",
        "def average(xs):\n    return sum(xs) / max(len(xs), 1)\n",
    );
    repo.write("pkg/new.py", "Y = 2\n");
    repo.git(&["rm", "--quiet", "README.md"]);
    let second_base = CommitId(repo.commit_all("second"));
    let ws = create(&repo, &opened, "run-2", &second_base).expect("second run");
    assert!(!root.join("spare").exists(), "the spare was taken");
    assert!(!root.join("spare.index").exists());

    // Exactly the base commit's files, as a fresh checkout has them.
    let fresh = repo.tmp().join("fresh");
    git_in(
        &repo.root,
        &repo.home,
        &[
            "worktree",
            "add",
            "--quiet",
            "--detach",
            &fresh.to_string_lossy(),
            &second_base.0,
        ],
    );
    assert_eq!(files_of(ws.path()), files_of(&fresh));
    assert_eq!(
        git_in(
            ws.path(),
            &repo.home,
            &["status", "--porcelain", "--ignored"]
        ),
        ""
    );
    assert_eq!(
        git_in(ws.path(), &repo.home, &["rev-parse", "HEAD"]).trim(),
        second_base.0
    );
    // A retired worktree can be retired again and then removed for good.
    ws.retire().expect("retired again");
    assert!(root.join("spare").is_dir());
    // A dry run names it and leaves it.
    assert_eq!(
        opened.discard_spare_worktree(&root, true).expect("dry run"),
        Some(root.join("spare"))
    );
    assert!(root.join("spare").is_dir() && root.join("spare.index").is_file());
    assert_eq!(
        opened
            .discard_spare_worktree(&root, false)
            .expect("discard"),
        Some(root.join("spare"))
    );
    assert!(!root.join("spare").exists() && !root.join("spare.index").exists());
}

/// A spare cut short (a crash between its steps) is thrown away and the run
/// checks out afresh; a repository with submodules keeps no spare.
#[test]
fn half_a_spare_is_discarded_and_submodules_keep_none() {
    let repo = sample();
    let opened = open(&repo.root);
    let base = CommitId(repo.head());
    let root = runs_root(&repo, &opened);
    fs::create_dir_all(root.join("spare/pkg")).expect("spare");
    fs::write(root.join("spare/pkg/calc.py"), "stale\n").expect("stale");
    let ws = create(&repo, &opened, "run-1", &base).expect("run");
    assert!(!root.join("spare").exists());
    assert_eq!(
        fs::read_to_string(ws.path().join("pkg/calc.py")).expect("calc"),
        "def average(xs):\n    return sum(xs) / len(xs)\n"
    );
    // A `.gitmodules` in the tree: removed, not kept.
    fs::write(ws.path().join(".gitmodules"), "").expect("gitmodules");
    ws.retire().expect("removed");
    assert!(!root.join("spare").exists());
    assert_eq!(repo.worktrees(), vec![repo.root.clone()]);
}
