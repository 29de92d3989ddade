//! What the run's worktree holds, known from git: the blob ids the Judge's
//! lint keys by, and the files they leave to be read.

use std::collections::HashMap;
use std::fs;

use swarm::git::blob_id;

use super::{create, open, sample, write};

/// `git ls-tree -r` under `under`, as path (relative to it) → blob id.
fn ls_tree(
    repo: &crate::support::repo::TestRepo,
    commit: &str,
    under: &str,
) -> HashMap<String, String> {
    repo.git(&["ls-tree", "-r", commit, "--", under])
        .lines()
        .map(|line| {
            let (meta, path) = line.split_once('\t').expect("a tab");
            let id = meta.split_whitespace().nth(2).expect("an id");
            let rel = path
                .strip_prefix(under)
                .unwrap_or(path)
                .trim_start_matches('/');
            (rel.to_string(), id.to_string())
        })
        .collect()
}

#[test]
fn committed_blob_ids_are_gits_less_the_files_written_since_the_reset() {
    let repo = sample();
    let opened = open(&repo.root.join("pkg"));
    let base = opened.info().head.clone();
    let mut ws = create(&repo, &opened, "run-1", &base).expect("create");

    // Freshly checked out: every file of the folder, by git's own ids, and
    // those ids are what hashing the files on disk gives.
    let ids = ws.committed_blob_ids("pkg").expect("ids");
    assert_eq!(ids, ls_tree(&repo, &base.0, "pkg"));
    for (path, id) in &ids {
        let on_disk = fs::read(ws.path().join("pkg").join(path)).expect("read");
        assert_eq!(&blob_id(&on_disk), id, "{path}");
    }
    assert_eq!(ws.committed_blob_ids("").expect("all").len(), 5);

    // A changed and a new file are no longer known: they must be read.
    let change = [
        write("pkg/calc.py", "def average(xs):\n    return 0\n"),
        write("pkg/new.py", "N = 1\n"),
    ];
    ws.write_files(&change).expect("write");
    let ids = ws.committed_blob_ids("pkg").expect("ids");
    assert_eq!(ids.keys().collect::<Vec<_>>(), ["util.py"]);

    // Committed and made the best state, then reset: known again.
    let commit = ws
        .commit_attempt(1, &change, "swarm: change\n")
        .expect("commit");
    ws.advance_best(&commit).expect("advance");
    let best = ws.best().clone();
    ws.reset_to(&best).expect("reset");
    let ids = ws.committed_blob_ids("pkg").expect("ids");
    assert_eq!(ids, ls_tree(&repo, &commit.0, "pkg"));
    assert_eq!(ids.len(), 3);
    assert_eq!(ids["new.py"], blob_id(b"N = 1\n"));
}

/// The whole seconds of a file's modification time.
fn mtime_secs(path: &std::path::Path) -> u64 {
    fs::metadata(path)
        .expect("stat")
        .modified()
        .expect("mtime")
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

#[test]
fn a_fresh_checkouts_index_is_rewritten_once_its_second_is_over() {
    let repo = sample();
    let opened = open(&repo.root);
    let base = opened.info().head.clone();
    let ws = create(&repo, &opened, "run-1", &base).expect("create");
    let newest_file = repo
        .git_at(ws.path(), &["ls-files"])
        .lines()
        .map(|f| mtime_secs(&ws.path().join(f)))
        .max()
        .expect("files");
    let index =
        std::path::PathBuf::from(repo.git_at(ws.path(), &["rev-parse", "--git-dir"])).join("index");
    // git trusts the times it keeps only for files older than its index:
    // a second later the index is rewritten, and a reset reads no file.
    std::thread::sleep(std::time::Duration::from_millis(2_300));
    assert!(
        mtime_secs(&index) > newest_file,
        "the index ({}) is not newer than the files ({newest_file})",
        mtime_secs(&index)
    );
    ws.reset_to(&base).expect("reset");
    assert_eq!(repo.git_at(ws.path(), &["status", "--porcelain"]), "");
    ws.retire().expect("retire");

    // A reset or an end before the refresh is due calls it off.
    let ws = create(&repo, &opened, "run-2", &base).expect("create");
    ws.reset_to(&base).expect("reset");
    ws.remove().expect("remove");
}
