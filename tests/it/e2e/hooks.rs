//! swarm from a real git pre-commit hook: git exports GIT_DIR and
//! GIT_INDEX_FILE and holds the index lock; swarm must work on HEAD, leave the
//! commit alone and put its result on the run branch.

use super::FAKE_KEY;
use crate::support::fixture::{good_model, FixtureRepo};
use crate::support::llm_server::LlmServer;
use crate::support::repo::git_command;

#[test]
fn the_pre_commit_hook_runs_swarm_without_disturbing_the_commit() {
    let fx = FixtureRepo::new("single_module");
    let hook = fx.repo.root.join(".git/hooks/pre-commit");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("hooks/pre-commit"),
        &hook,
    )
    .unwrap();
    let buggy = fx.repo.read("stats.py");
    fx.repo.write("NOTES.md", "release notes\n");
    fx.repo.git(&["add", "NOTES.md"]);
    let server = LlmServer::start(good_model("single_module", ""));
    let base = format!("{}/v1", server.base_url());
    let out = git_command(&fx.repo.root, &fx.repo.home)
        .args(["commit", "-q", "-m", "add notes"])
        .env("SWARM_BIN", env!("CARGO_BIN_EXE_swarm"))
        .env("OPENAI_API_KEY", FAKE_KEY)
        .env("OPENAI_BASE_URL", &base)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !server.requests().is_empty(),
        "the hook did not run swarm: {stderr}"
    );
    // The user's commit is exactly what they staged.
    assert_eq!(fx.repo.git(&["log", "-1", "--format=%s"]), "add notes");
    assert_eq!(
        fx.repo.git(&["show", "--name-only", "--format=", "HEAD"]),
        "NOTES.md"
    );
    assert_eq!(fx.repo.read("stats.py"), buggy);
    assert!(fx.repo.git(&["status", "--porcelain"]).is_empty());
    // The fix waits on the run branch.
    let best = fx.repo.git(&[
        "for-each-ref",
        "--format=%(refname:short)",
        "refs/heads/swarm/",
    ]);
    let best = best
        .lines()
        .find(|b| b.ends_with("/best"))
        .expect("a run branch");
    let fixed = &fx.fixed_files()[0].1;
    assert_eq!(
        &format!("{}\n", fx.repo.git(&["show", &format!("{best}:stats.py")])),
        fixed
    );
    assert_eq!(fx.repo.worktrees().len(), 1);
    // The hook's experiment log lives in the git dir, not in the working tree.
    let log =
        crate::support::fixture::read_log(&fx.repo.root.join(".git/swarm/experiment_data.json"));
    assert!(log.iter().any(|e| e["agent"] == "Judge"));
}

#[test]
fn swarm_hook_reports_a_problem_without_blocking_unless_asked_to() {
    use crate::support::fixture::swarm_in;
    let fx = FixtureRepo::new("single_module");
    // No provider key: the run cannot start.
    let out = swarm_in(&fx.repo.root, &fx.repo.home, &["hook"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("API_KEY"), "the error is shown: {stderr}");
    assert!(stderr.contains("exit 1; not blocking"), "{stderr}");
    let out = swarm_in(
        &fx.repo.root,
        &fx.repo.home,
        &["hook"],
        &[("SWARM_HOOK_BLOCK", "1")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("refused (SWARM_HOOK_BLOCK=1)"), "{stderr}");
    // Nothing was written into the working tree.
    assert_eq!(fx.repo.git(&["status", "--porcelain"]), "");
}
