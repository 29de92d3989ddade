//! Past runs at the git layer: what `swarm log` reads from refs and
//! trailers, and `swarm clean` on a run in progress and on a dead run's
//! leftovers.

use std::fs;

use super::{create, open, runs_root, sample, write};

const ATTEMPT: &str = "swarm: fix average() (pkg/calc.py)\n\nAttempt 1 of run run-1.\n\n\
Swarm-Run: run-1\nSwarm-Iteration: 1\nSwarm-Attempt: 1\nSwarm-Verdict: improved\n\
Swarm-Tests: 1/1 passed (baseline 0/1)\nSwarm-Pylint: 5.00 -> 9.00\n";

#[test]
fn a_live_run_is_listed_in_progress_and_never_cleaned() {
    let repo = sample();
    let opened = open(&repo.root);
    let head = opened.info().head.clone();
    let mut ws = create(&repo, &opened, "run-1", &head).expect("workspace");
    let commit = ws
        .commit_attempt(1, &[write("pkg/calc.py", "X = 2\n")], ATTEMPT)
        .expect("attempt");
    ws.advance_best(&commit).expect("advance");
    let root = runs_root(&repo, &opened);

    let runs = opened.past_runs(Some(&root)).expect("runs");
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert!(run.in_progress);
    assert_eq!(run.best.as_ref(), Some(&commit));
    let attempt = run.best_attempt().expect("best is attempt 1");
    assert_eq!(
        attempt.trailer("swarm-tests"),
        Some("1/1 passed (baseline 0/1)")
    );
    assert_eq!(attempt.files_changed, ["pkg/calc.py"]);
    assert_eq!(attempt.subject, "swarm: fix average() (pkg/calc.py)");

    let refused = opened.clean_run(run, Some(&root), false).expect("clean");
    assert!(refused.is_err(), "{refused:?}");
    assert!(ws.path().is_dir());
    assert_eq!(repo.git(&["rev-parse", "swarm/run-1/best"]), commit.0);

    // Over: cleaning takes its refs.
    ws.remove().expect("remove");
    let runs = opened.past_runs(Some(&root)).expect("runs");
    assert!(!runs[0].in_progress);
    let cleaned = opened
        .clean_run(&runs[0], Some(&root), false)
        .expect("clean")
        .expect("not in progress");
    assert_eq!(
        cleaned.refs,
        [
            "refs/heads/swarm/run-1/attempt-1",
            "refs/heads/swarm/run-1/best"
        ]
    );
    assert!(opened.past_runs(Some(&root)).expect("runs").is_empty());
}

#[test]
fn cleaning_a_dead_run_removes_its_worktree_admin_entry_and_lock_but_no_other_run() {
    let repo = sample();
    let opened = open(&repo.root);
    let root = runs_root(&repo, &opened);
    fs::create_dir_all(&root).expect("runs root");
    for run in ["dead-1", "dead-2"] {
        let path = root.join(run);
        repo.git(&[
            "worktree",
            "add",
            "--quiet",
            "--detach",
            path.to_str().expect("utf8"),
        ]);
        fs::write(root.join(format!("{run}.lock")), format!("run {run}\n")).expect("lock");
        repo.git(&["branch", &format!("swarm/{run}/best")]);
    }
    assert_eq!(repo.worktrees().len(), 3);
    let runs = opened.past_runs(Some(&root)).expect("runs");
    let dead = runs.iter().find(|r| r.run_id == "dead-1").expect("listed");

    let preview = opened
        .clean_run(dead, Some(&root), true)
        .expect("dry run")
        .expect("free");
    assert!(preview.paths.contains(&root.join("dead-1")), "{preview:?}");
    assert!(
        preview.paths.contains(&root.join("dead-1.lock")),
        "{preview:?}"
    );
    assert!(
        preview
            .paths
            .iter()
            .any(|p| p.ends_with("worktrees/dead-1")),
        "git's admin entry: {preview:?}"
    );
    assert!(root.join("dead-1").is_dir());
    assert_eq!(
        repo.git(&["branch", "--list", "swarm/dead-1/*"]).trim(),
        "swarm/dead-1/best"
    );

    let cleaned = opened
        .clean_run(dead, Some(&root), false)
        .expect("clean")
        .expect("free");
    assert_eq!(cleaned.refs, ["refs/heads/swarm/dead-1/best"]);
    assert!(!root.join("dead-1").exists());
    assert!(!root.join("dead-1.lock").exists());
    assert_eq!(repo.worktrees().len(), 2, "{:?}", repo.worktrees());
    assert_eq!(repo.git(&["branch", "--list", "swarm/dead-1/*"]), "");
    assert!(root.join("dead-2").is_dir());
    assert!(root.join("dead-2.lock").exists());
    assert_eq!(
        repo.git(&["branch", "--list", "swarm/dead-2/*"]).trim(),
        "swarm/dead-2/best"
    );
}
