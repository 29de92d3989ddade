//! Runs that need process-wide environment from the start (a hook's
//! `GIT_DIR`/`GIT_INDEX_FILE`, a HOME without identity): each runs an
//! ignored test of this file in a child process of the test binary.

use std::fs;
use std::path::Path;
use std::process::Command;

use swarm::git::{FastForward, Repo, RunWorkspace};

use super::{open, sample, write, MESSAGE};
use crate::support::repo::TestRepo;

/// Runs one `#[ignore]`d test of this file in a child process with `env`,
/// so that process-wide variables (HOME, GIT_DIR, ...) apply from the start.
fn run_child(test: &str, env: &[(&str, &Path)]) {
    let mut command = Command::new(std::env::current_exe().expect("test binary"));
    command.args([
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("run the child test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "child {test} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_run_from_a_hook_environment_uses_the_target_repository() {
    let repo = sample();
    let decoy = TestRepo::with_files(&[("decoy.py", "d = 1\n")]);
    let decoy_before = decoy.snapshot();
    let bogus_index = repo.tmp().join("bogus-index");
    let decoy_git = decoy.root.join(".git");
    run_child(
        "git::hook_env::child_run_with_hook_env",
        &[
            ("SWARM_IT_REPO", &repo.root),
            ("GIT_DIR", &decoy_git),
            ("GIT_WORK_TREE", &decoy.root),
            ("GIT_INDEX_FILE", &bogus_index),
            ("GIT_COMMON_DIR", &decoy_git),
        ],
    );
    assert_eq!(repo.read("pkg/calc.py"), "from the hook\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert_eq!(repo.worktrees(), vec![repo.root.clone()]);
    assert!(!bogus_index.exists());
    assert_eq!(decoy.snapshot(), decoy_before);
}

#[test]
#[ignore = "run by a_run_from_a_hook_environment_uses_the_target_repository"]
fn child_run_with_hook_env() {
    let Some(root) = std::env::var_os("SWARM_IT_REPO") else {
        return;
    };
    let opened = open(Path::new(&root));
    let base = opened.info().head.clone();
    let runs = opened
        .worktrees_root(&Path::new(&root).with_file_name("cache"))
        .expect("runs root");
    let mut ws = RunWorkspace::create(&opened, &runs, "run-hook", &base).expect("create");
    let files = [write("pkg/calc.py", "from the hook\n")];
    ws.write_files(&files).expect("write");
    let best = ws.commit_attempt(1, &files, MESSAGE).expect("commit");
    ws.advance_best(&best).expect("advance");
    fs::write(ws.path().join("junk.txt"), "x").expect("junk");
    ws.reset_to(&best).expect("reset");
    assert!(!ws.path().join("junk.txt").exists());
    ws.remove().expect("remove");
    let touched = vec!["pkg/calc.py".to_string()];
    let outcome = opened
        .fast_forward(&base, &best, "swarm/run-hook/best", &touched)
        .expect("ff");
    assert!(
        matches!(outcome, FastForward::Updated { .. }),
        "{outcome:?}"
    );
}

#[test]
fn commits_fall_back_to_the_swarm_identity() {
    let dir = TestRepo::empty();
    dir.write("a.py", "a = 1\n");
    let empty_home = dir.tmp().join("empty-home");
    fs::create_dir_all(&empty_home).expect("mkdir");
    run_child(
        "git::hook_env::child_commit_without_identity",
        &[
            ("SWARM_IT_REPO", &dir.root),
            ("HOME", &empty_home),
            ("XDG_CONFIG_HOME", &empty_home),
        ],
    );
    assert_eq!(
        dir.git(&["log", "--all", "--topo-order", "--format=%an <%ae> %s"]),
        "swarm <swarm@localhost> attempt\nswarm <swarm@localhost> baseline"
    );
}

#[test]
#[ignore = "run by commits_fall_back_to_the_swarm_identity"]
fn child_commit_without_identity() {
    let Some(root) = std::env::var_os("SWARM_IT_REPO") else {
        return;
    };
    let opened = Repo::init_with_baseline(Path::new(&root), "baseline").expect("init");
    let runs = opened
        .worktrees_root(&Path::new(&root).with_file_name("cache"))
        .expect("runs root");
    let ws = RunWorkspace::create(&opened, &runs, "run-id", &opened.info().head).expect("create");
    ws.commit_attempt(1, &[write("a.py", "a = 2\n")], "attempt")
        .expect("commit");
    ws.remove().expect("remove");
}
