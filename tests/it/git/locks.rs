//! Locks that die with the process: pruning takes a dead run's worktree
//! whatever process id it names, never a live one's; old-layout runs are
//! cleaned up too; a busy repository's run lock names the run holding it.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use swarm::error::{ExitKind, SwarmError};
use swarm::git::RepoLock;

use super::{create, open, runs_root, sample};
use crate::support::repo::TestRepo;

/// A Python process that holds an exclusive `flock` on `path` until killed;
/// returns once the lock is taken.
fn hold_lock_in_another_process(path: &Path) -> Child {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import fcntl, sys, time\n\
             f = open(sys.argv[1], 'a')\n\
             fcntl.flock(f, fcntl.LOCK_EX)\n\
             print('locked', flush=True)\n\
             time.sleep(120)\n",
        ])
        .arg(path)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 can be started");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    assert_eq!(line.trim(), "locked");
    child
}

/// A worktree left by a run that died: the folder, git's entry and an
/// unlocked lock file naming `pid`.
fn dead_run(repo: &TestRepo, runs: &Path, run: &str, pid: u32) {
    let path = runs.join(run);
    repo.git(&[
        "worktree",
        "add",
        "--quiet",
        "--detach",
        path.to_str().expect("utf8"),
    ]);
    fs::write(
        runs.join(format!("{run}.lock")),
        format!("run {run}\npid {pid}\n"),
    )
    .expect("lock file");
}

#[test]
fn prune_removes_runs_whose_lock_is_free_whatever_pid_they_name() {
    let repo = sample();
    let opened = open(&repo.root);
    let head = opened.info().head.clone();
    let runs = runs_root(&repo, &opened);
    let live = create(&repo, &opened, "run-live", &head).expect("create");
    let leaked = create(&repo, &opened, "run-leaked", &head).expect("create");
    let leaked_path = leaked.path().to_path_buf();
    std::mem::forget(leaked); // its lock stays held by this process

    // A dead run whose lock file names a live process (this one): a reused
    // PID must not keep it alive.
    dead_run(&repo, &runs, "run-reused-pid", std::process::id());
    // A dead run without a lock file, and one whose folder vanished.
    repo.git(&[
        "worktree",
        "add",
        "--quiet",
        "--detach",
        runs.join("run-no-lock").to_str().expect("utf8"),
    ]);
    dead_run(&repo, &runs, "run-vanished", 1);
    fs::remove_dir_all(runs.join("run-vanished")).expect("rm");

    assert_eq!(
        opened.prune_stale_runs(&runs).expect("prune"),
        vec!["run-no-lock", "run-reused-pid", "run-vanished"]
    );
    for gone in [
        "run-reused-pid",
        "run-reused-pid.lock",
        "run-no-lock",
        "run-vanished.lock",
    ] {
        assert!(!runs.join(gone).exists(), "{gone} removed");
    }
    assert!(live.path().exists());
    assert!(leaked_path.exists(), "a held lock is never pruned");
    assert_eq!(
        repo.worktrees(),
        vec![
            repo.root.clone(),
            leaked_path.clone(),
            live.path().to_path_buf()
        ]
    );
    assert_eq!(
        opened.prune_stale_runs(&runs).expect("prune again"),
        Vec::<String>::new()
    );
    live.remove().expect("remove");
    assert_eq!(repo.worktrees(), vec![repo.root.clone(), leaked_path]);
}

#[test]
fn a_lock_held_by_another_process_protects_its_run_until_that_process_dies() {
    let repo = sample();
    let opened = open(&repo.root);
    let runs = runs_root(&repo, &opened);
    fs::create_dir_all(&runs).expect("mkdir");
    dead_run(&repo, &runs, "run-other", 1);
    let mut holder = hold_lock_in_another_process(&runs.join("run-other.lock"));

    assert_eq!(
        opened.prune_stale_runs(&runs).expect("prune"),
        Vec::<String>::new()
    );
    assert!(runs.join("run-other").is_dir());

    holder.kill().expect("kill");
    holder.wait().expect("wait");
    assert_eq!(
        opened.prune_stale_runs(&runs).expect("prune"),
        vec!["run-other"]
    );
    assert!(!runs.join("run-other").exists());
    assert_eq!(repo.worktrees(), vec![repo.root.clone()]);
}

#[test]
fn old_layout_runs_are_removed_unless_their_owner_still_runs() {
    let repo = sample();
    let opened = open(&repo.root);
    let legacy = repo.root.join(".git/swarm/worktrees");
    fs::create_dir_all(&legacy).expect("mkdir");
    let old_run = |run: &str, pid: u32, written: SystemTime| {
        let path = legacy.join(run);
        repo.git(&[
            "worktree",
            "add",
            "--quiet",
            "--detach",
            path.to_str().expect("utf8"),
        ]);
        let owner = legacy.join(format!("{run}.owner"));
        fs::write(&owner, format!("pid {pid}\n")).expect("owner");
        fs::File::options()
            .write(true)
            .open(&owner)
            .and_then(|f| f.set_modified(written))
            .expect("set mtime");
    };
    let mut exited = Command::new("true").spawn().expect("spawn");
    let dead_pid = exited.id();
    exited.wait().expect("wait");
    let now = SystemTime::now();
    old_run("old-dead", dead_pid, now);
    // This process is alive but started after the file was written: it
    // only reuses the dead owner's PID.
    old_run(
        "old-reused",
        std::process::id(),
        now - Duration::from_secs(30 * 24 * 3600),
    );
    old_run("old-live", std::process::id(), now);

    let runs = runs_root(&repo, &opened);
    assert_eq!(
        opened.prune_stale_runs(&runs).expect("prune"),
        vec!["old-dead", "old-reused"]
    );
    assert!(legacy.join("old-live").is_dir());
    assert!(!legacy.join("old-dead").exists() && !legacy.join("old-dead.owner").exists());
    assert_eq!(
        repo.worktrees(),
        vec![repo.root.clone(), legacy.join("old-live")]
    );

    fs::remove_file(legacy.join("old-live.owner")).expect("rm owner");
    assert_eq!(
        opened.prune_stale_runs(&runs).expect("prune"),
        vec!["old-live"]
    );
    assert!(
        !repo.root.join(".git/swarm").exists(),
        "no folder of the old layout is left"
    );
    assert_eq!(repo.worktrees(), vec![repo.root.clone()]);
}

#[test]
fn a_busy_repository_names_the_other_run_and_the_flag_that_waits_longer() {
    let dir = tempfile::tempdir().expect("tmp");
    let _first = RepoLock::acquire(dir.path(), "run-a", Duration::ZERO, &|_| {}, &|| false)
        .expect("a free lock");
    let error = RepoLock::acquire(dir.path(), "run-b", Duration::ZERO, &|_| {}, &|| false)
        .expect_err("held by run-a");
    let fact = "another swarm run (run-a) is working on this repository (waited 0 s)";
    assert_eq!(error.to_string(), fact);
    let error = SwarmError::from(error);
    assert_eq!(error.kind, ExitKind::Git);
    assert_eq!(
        error.hints,
        ["wait for it to finish or raise --lock-timeout"]
    );
    assert_eq!(
        error.to_string(),
        format!("{fact}; wait for it to finish or raise --lock-timeout")
    );
}
