//! The final fast-forward's refusals: dirty touched files, moved or
//! detached HEAD, another branch checked out.

use swarm::git::{CommitId, FastForward, Repo};

use super::{create, open, sample, write, MESSAGE};
use crate::support::repo::TestRepo;

/// A run whose best commit changes `pkg/calc.py`; returns (repo, opened, base, best).
fn finished_run(run: &str) -> (TestRepo, Repo, CommitId, CommitId) {
    let repo = sample();
    let opened = open(&repo.root);
    let base = opened.info().head.clone();
    let mut ws = create(&repo, &opened, run, &base).expect("create");
    let files = [write("pkg/calc.py", "fixed\n")];
    let best = ws.commit_attempt(1, &files, MESSAGE).expect("commit");
    ws.advance_best(&best).expect("advance");
    ws.remove().expect("remove");
    (repo, opened, base, best)
}

fn assert_skipped(outcome: FastForward, run: &str, reason_has: &str) {
    match outcome {
        FastForward::Skipped { reason, command } => {
            assert_eq!(command, format!("git merge --ff-only swarm/{run}/best"));
            assert!(
                reason.contains(reason_has),
                "reason {reason:?} mentions {reason_has:?}"
            );
            assert!(!reason.contains('\n'));
        }
        other => panic!("expected Skipped, got {other:?}"),
    }
}

#[test]
fn fast_forward_refuses_when_a_touched_file_is_dirty() {
    let touched = vec![
        "pkg/calc.py".to_string(),
        "pkg/added.py".to_string(),
        "newpkg/sub/added.py".to_string(),
    ];
    type MakeDirty = fn(&TestRepo);
    let cases: [(&str, MakeDirty); 6] = [
        ("modified", |r| r.write("pkg/calc.py", "user edit\n")),
        ("staged", |r| {
            r.write("pkg/calc.py", "user edit\n");
            r.git(&["add", "pkg/calc.py"]);
        }),
        ("untracked", |r| r.write("pkg/added.py", "user file\n")),
        ("untracked in a new folder", |r| {
            r.write("newpkg/sub/added.py", "user file\n")
        }),
        ("deleted", |r| {
            r.git(&["rm", "-q", "--cached", "pkg/calc.py"]);
        }),
        ("staged elsewhere, then moved here", |r| {
            r.git(&["mv", "pkg/calc.py", "pkg/renamed.py"]);
            r.write("pkg/calc.py", "user file\n");
        }),
    ];
    for (what, make_dirty) in cases {
        let (repo, opened, base, best) = finished_run("run-dirty");
        make_dirty(&repo);
        let before = repo.snapshot();
        let outcome = opened
            .fast_forward(&base, &best, "swarm/run-dirty/best", &touched)
            .expect("ff");
        assert_skipped(outcome, "run-dirty", "uncommitted changes");
        assert_eq!(repo.snapshot(), before, "{what}: nothing written");
        assert!(!repo.git_ok(&["rev-parse", "--verify", "-q", "refs/swarm/run-dirty/pre-ff"]));
    }
}

#[test]
fn fast_forward_refuses_when_head_moved_or_is_detached() {
    let (repo, opened, base, best) = finished_run("run-moved");
    repo.write("other.py", "o = 1\n");
    let moved = repo.commit_all("user commit during the run");
    let touched = vec!["pkg/calc.py".to_string()];
    let outcome = opened
        .fast_forward(&base, &best, "swarm/run-moved/best", &touched)
        .expect("ff");
    assert_skipped(outcome, "run-moved", "moved");
    assert_eq!(repo.head(), moved);

    let (repo, opened, base, best) = finished_run("run-detached");
    repo.git(&["checkout", "--quiet", "--detach"]);
    let outcome = opened
        .fast_forward(&base, &best, "swarm/run-detached/best", &touched)
        .expect("ff");
    assert_skipped(outcome, "run-detached", "detached");
    assert_eq!(repo.git(&["rev-parse", "main"]), base.0);

    let (repo, opened, base, best) = finished_run("run-switched");
    repo.git(&["checkout", "--quiet", "-b", "elsewhere"]);
    let outcome = opened
        .fast_forward(&base, &best, "swarm/run-switched/best", &touched)
        .expect("ff");
    assert_skipped(outcome, "run-switched", "elsewhere");
    assert_eq!(repo.git(&["rev-parse", "main"]), base.0);

    assert_eq!(
        opened
            .fast_forward(&base, &base, "swarm/run-switched/best", &touched)
            .expect("ff"),
        FastForward::NothingToDo
    );
}

#[test]
fn fast_forward_waits_for_no_one_holding_the_index_lock() {
    let (repo, opened, base, best) = finished_run("run-locked");
    let lock = repo.root.join(".git/index.lock");
    std::fs::write(&lock, "").expect("lock");
    let touched = vec!["pkg/calc.py".to_string()];
    let outcome = opened
        .fast_forward(&base, &best, "swarm/run-locked/best", &touched)
        .expect("ff");
    assert_skipped(outcome, "run-locked", "index.lock");
    assert_eq!(repo.git(&["rev-parse", "main"]), base.0);

    std::fs::remove_file(&lock).expect("unlock");
    let outcome = opened
        .fast_forward(&base, &best, "swarm/run-locked/best", &touched)
        .expect("ff");
    assert!(
        matches!(outcome, FastForward::Updated { .. }),
        "{outcome:?}"
    );
    assert_eq!(repo.read("pkg/calc.py"), "fixed\n");
    assert_eq!(
        repo.git(&["rev-parse", "refs/swarm/run-locked/pre-ff"]),
        base.0
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

/// A finished run on `sample()` plus `.gitignore` entries, whose best commit
/// writes `files`; returns (repo, opened, base, best).
fn run_writing(
    run: &str,
    ignore: &str,
    files: &[(&str, &str)],
) -> (TestRepo, Repo, CommitId, CommitId) {
    let repo = sample();
    repo.write(".gitignore", ignore);
    repo.commit_all("ignore rules");
    let opened = open(&repo.root);
    let base = opened.info().head.clone();
    let mut ws = create(&repo, &opened, run, &base).expect("create");
    let writes: Vec<_> = files.iter().map(|(p, c)| write(p, c)).collect();
    let best = ws.commit_attempt(1, &writes, MESSAGE).expect("commit");
    ws.advance_best(&best).expect("advance");
    ws.remove().expect("remove");
    (repo, opened, base, best)
}

#[test]
fn fast_forward_never_overwrites_ignored_or_untracked_files() {
    /// What the run writes, what the user has, the path the refusal names.
    type Case = (
        &'static [(&'static str, &'static str)],
        fn(&TestRepo),
        &'static str,
    );
    let cases: [Case; 4] = [
        // An ignored file exactly where the run creates one: `git merge`
        // would silently replace it.
        (
            &[("generated/data.py", "DATA = 2\n")],
            |r| r.write("generated/data.py", "DATA = 'mine'\n"),
            "generated/data.py",
        ),
        // An ignored file where the run needs a folder.
        (
            &[("cache/mod.py", "M = 1\n")],
            |r| r.write("cache", "my cache\n"),
            "cache",
        ),
        // An ignored folder holding the user's files where the run creates a file.
        (
            &[("generated", "now a file\n")],
            |r| r.write("generated/keep.txt", "mine\n"),
            "generated",
        ),
        // An untracked file where the run needs a folder.
        (
            &[("pkg/extra/mod.py", "M = 1\n")],
            |r| r.write("pkg/extra", "mine\n"),
            "pkg/extra",
        ),
    ];
    for (i, (files, setup, named)) in cases.into_iter().enumerate() {
        let run = format!("run-ignored-{i}");
        let (repo, opened, base, best) = run_writing(&run, "generated/\ncache\n", files);
        setup(&repo);
        let before = repo.snapshot();
        let outcome = opened
            .fast_forward(&base, &best, &format!("swarm/{run}/best"), &[])
            .expect("ff");
        assert_skipped(outcome, &run, named);
        assert_eq!(repo.snapshot(), before, "{named}: nothing written");
        assert!(!repo.git_ok(&[
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/swarm/{run}/pre-ff")
        ]));
    }

    // Ignored files elsewhere do not stand in the way.
    let (repo, opened, base, best) = run_writing(
        "run-ignored-ok",
        "generated/\n",
        &[("generated/data.py", "DATA = 2\n")],
    );
    repo.write("generated/other.py", "mine\n");
    let outcome = opened
        .fast_forward(&base, &best, "swarm/run-ignored-ok/best", &[])
        .expect("ff");
    assert!(
        matches!(outcome, FastForward::Updated { .. }),
        "{outcome:?}"
    );
    assert_eq!(repo.read("generated/other.py"), "mine\n");
}

#[test]
fn an_updated_branch_comes_with_a_working_undo_command() {
    let (repo, opened, base, best) = finished_run("run-undo");
    repo.write("notes.txt", "mine\n");
    let outcome = opened
        .fast_forward(&base, &best, "swarm/run-undo/best", &[])
        .expect("ff");
    let FastForward::Updated { undo, .. } = outcome else {
        panic!("expected Updated, got {outcome:?}");
    };
    assert_eq!(undo, "git reset --keep refs/swarm/run-undo/pre-ff");
    assert_eq!(repo.read("pkg/calc.py"), "fixed\n");
    let args: Vec<&str> = undo.split(' ').skip(1).collect();
    repo.git(&args);
    assert_eq!(repo.head(), base.0);
    assert_eq!(
        repo.read("pkg/calc.py"),
        "def average(xs):\n    return sum(xs) / len(xs)\n"
    );
    assert_eq!(repo.read("notes.txt"), "mine\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), "?? notes.txt");
}

#[test]
fn a_merge_that_leaves_a_half_state_is_a_failed_delivery() {
    // A smudge filter that fails makes `git merge --ff-only` stop after it
    // has already removed a file: neither the old nor the new state.
    let (repo, opened, base, best) = run_writing(
        "run-half",
        "",
        &[("pkg/calc.py", "fixed\n"), ("pkg/util.py", "X = 2\n")],
    );
    repo.write(".gitattributes", "pkg/*.py filter=broken\n");
    repo.git(&["config", "filter.broken.smudge", "false"]);
    repo.git(&["config", "filter.broken.clean", "cat"]);
    repo.git(&["config", "filter.broken.required", "true"]);
    let outcome = opened
        .fast_forward(&base, &best, "swarm/run-half/best", &[])
        .expect("ff");
    let FastForward::Failed { reason, command } = outcome else {
        panic!("expected Failed, got {outcome:?}");
    };
    assert!(reason.contains("failed"), "{reason}");
    assert!(reason.contains("files differ from HEAD"), "{reason}");
    assert!(reason.contains("refs/swarm/run-half/pre-ff"), "{reason}");
    assert!(!reason.contains('\n'));
    assert_eq!(
        command,
        "git restore --source=HEAD --staged --worktree -- pkg/calc.py pkg/util.py"
    );
    // With a working filter, the command restores the starting state.
    repo.git(&["config", "filter.broken.smudge", "cat"]);
    let args: Vec<&str> = command.split(' ').skip(1).collect();
    repo.git(&args);
    assert_eq!(repo.head(), base.0);
    assert_eq!(repo.git(&["status", "--porcelain"]), "?? .gitattributes");
}

#[test]
fn the_fast_forward_starts_no_git_maintenance_in_the_users_repository() {
    // Two packs and a pack limit of one: the `git maintenance run --auto`
    // that `git merge` starts would repack them into one (run in the
    // foreground here, so its effect is there to see when the merge ends).
    let (repo, opened, base, best) = finished_run("run-gc");
    repo.git(&["repack", "-d", "-q"]);
    repo.write("notes.txt", "an object packed on its own\n");
    let blob = repo.git(&["hash-object", "-w", "notes.txt"]);
    repo.git(&["tag", "packed-apart", &blob]);
    repo.git(&["repack", "-d", "-q"]);
    let packs = || {
        std::fs::read_dir(repo.root.join(".git/objects/pack"))
            .expect("pack folder")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "pack"))
            })
            .count()
    };
    assert_eq!(packs(), 2);
    for (key, value) in [
        ("gc.autoPackLimit", "1"),
        ("maintenance.autoDetach", "false"),
        ("gc.autoDetach", "false"),
    ] {
        repo.git(&["config", key, value]);
    }
    let outcome = opened
        .fast_forward(&base, &best, "swarm/run-gc/best", &[])
        .expect("ff");
    assert!(
        matches!(outcome, FastForward::Updated { .. }),
        "{outcome:?}"
    );
    assert_eq!(repo.read("pkg/calc.py"), "fixed\n");
    assert_eq!(packs(), 2, "git's maintenance repacked the user's objects");
}
