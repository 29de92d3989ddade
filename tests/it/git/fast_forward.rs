//! The final fast-forward's refusals: dirty touched files, moved or
//! detached HEAD, another branch checked out.

use swarm::git::{CommitId, FastForward, Repo, RunWorkspace};

use super::{open, sample, write, MESSAGE};
use crate::support::repo::TestRepo;

/// A run whose best commit changes `pkg/calc.py`; returns (repo, opened, base, best).
fn finished_run(run: &str) -> (TestRepo, Repo, CommitId, CommitId) {
    let repo = sample();
    let opened = open(&repo.root);
    let base = opened.info().head.clone();
    let mut ws = RunWorkspace::create(&opened, run, &base).expect("create");
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
    let touched = vec!["pkg/calc.py".to_string(), "pkg/added.py".to_string()];
    type MakeDirty = fn(&TestRepo);
    let cases: [(&str, MakeDirty); 3] = [
        ("modified", |r| r.write("pkg/calc.py", "user edit\n")),
        ("staged", |r| {
            r.write("pkg/calc.py", "user edit\n");
            r.git(&["add", "pkg/calc.py"]);
        }),
        ("untracked", |r| r.write("pkg/added.py", "user file\n")),
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
