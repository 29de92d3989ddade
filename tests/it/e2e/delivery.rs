//! The final step: the user's uncommitted work is sacred.

use std::time::Duration;

use super::repos::{spawn_swarm, wait_for};
use super::{run_openai, summary_of};
use crate::support::fixture::{good_model, good_model_reply, prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};

#[test]
fn uncommitted_work_in_other_files_survives_the_fast_forward() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    fx.repo.write("NOTES.md", "my notes, not committed\n");
    let test_text = fx.repo.read("test_stats.py") + "\n# my uncommitted comment\n";
    fx.repo.write("test_stats.py", &test_text);
    let server = LlmServer::start(good_model("single_module", ""));
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("2 file(s) under the target have uncommitted changes"),
        "{stderr}"
    );
    assert_ne!(fx.repo.head(), start);
    assert_eq!(fx.repo.read("NOTES.md"), "my notes, not committed\n");
    assert_eq!(fx.repo.read("test_stats.py"), test_text);
}

#[test]
fn a_dirty_touched_file_leaves_the_branch_for_the_user() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let mine = fx.repo.read("stats.py") + "\n# work in progress\n";
    fx.repo.write("stats.py", &mine);
    let index_before = std::fs::read(fx.repo.root.join(".git/index")).unwrap();
    let server = LlmServer::start(good_model("single_module", ""));
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["delivery"]["state"], "left", "{summary}");
    let command = summary["delivery"]["command"].as_str().unwrap();
    assert_eq!(
        command,
        format!(
            "git merge --ff-only {}",
            summary["branch"].as_str().unwrap()
        )
    );
    assert!(stderr.contains(command), "{stderr}");
    // Nothing of the user's was touched.
    assert_eq!(fx.repo.head(), start);
    assert_eq!(fx.repo.read("stats.py"), mine);
    assert_eq!(
        std::fs::read(fx.repo.root.join(".git/index")).unwrap(),
        index_before
    );
}

#[test]
fn dry_run_does_everything_but_the_fast_forward() {
    let fx = FixtureRepo::new("single_module");
    let before = fx.repo.snapshot();
    let server = LlmServer::start(good_model("single_module", ""));
    let out = run_openai(&fx, &server, &["--dry-run"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["dry_run"], true);
    assert_eq!(summary["delivery"]["state"], "left");
    assert_eq!(fx.repo.snapshot(), before);
    let branch = summary["branch"].as_str().unwrap();
    let tree_files = fx.repo.git(&["show", &format!("{branch}:stats.py")]);
    let fixed = fx.fixed_files();
    assert_eq!(format!("{tree_files}\n"), fixed[0].1);
}

/// The undo command printed for run `summary`.
fn undo_of(summary: &serde_json::Value) -> String {
    format!(
        "git reset --keep refs/swarm/{}/pre-ff",
        summary["run_id"].as_str().expect("run id")
    )
}

#[test]
fn the_summary_prints_the_undo_command_and_it_works() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let original = fx.repo.read("stats.py");
    let server = LlmServer::start(good_model("single_module", ""));
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = summary_of(&out.stdout);
    let undo = undo_of(&summary);
    assert_eq!(summary["delivery"]["state"], "updated");
    assert_eq!(summary["delivery"]["undo"], undo.as_str());
    let run_id = summary["run_id"].as_str().unwrap();
    assert!(
        stderr.contains(&format!("undo:     swarm undo {run_id}  (or: {undo})")),
        "{stderr}"
    );
    let args: Vec<&str> = undo.split(' ').skip(1).collect();
    fx.repo.git(&args);
    assert_eq!(fx.repo.head(), start);
    assert_eq!(fx.repo.read("stats.py"), original);
    assert_eq!(fx.repo.git(&["status", "--porcelain"]), "");
}

/// A good single_module model that also creates `_version.py`.
fn model_creating_version_file() -> LlmServer {
    LlmServer::start(|request| {
        let mut text = good_model_reply("single_module", "", &prompt_of(request));
        if let Some(end) = text.rfind("```") {
            if text.contains("```diff") {
                text.insert_str(
                    end,
                    "--- /dev/null\n+++ b/_version.py\n@@ -0,0 +1,2 @@\n+\"\"\"The version.\"\"\"\n+VERSION = \"1.0\"\n",
                );
            }
        }
        Reply::text_for(request, &text)
    })
}

#[test]
fn an_ignored_file_where_the_run_creates_one_is_left_alone() {
    let fx = FixtureRepo::new("single_module");
    fx.repo.write(".gitignore", "_version.py\n");
    let start = fx.repo.commit_all("ignore the generated version file");
    // Generated by the user's build, ignored by git: `git merge` would
    // silently replace it.
    fx.repo.write("_version.py", "VERSION = 'local build'\n");
    let server = model_creating_version_file();
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["delivery"]["state"], "left", "{summary}");
    let reason = summary["delivery"]["reason"].as_str().expect("reason");
    assert!(
        reason.contains("_version.py") && reason.contains("ignored"),
        "{reason}"
    );
    let branch = summary["branch"].as_str().expect("branch");
    assert_eq!(
        summary["delivery"]["command"],
        format!("git merge --ff-only {branch}").as_str()
    );
    assert!(
        fx.repo
            .git_ok(&["cat-file", "-e", &format!("{branch}:_version.py")]),
        "the run did create the file"
    );
    assert_eq!(fx.repo.read("_version.py"), "VERSION = 'local build'\n");
    assert_eq!(fx.repo.head(), start);
    assert_eq!(fx.repo.git(&["status", "--porcelain"]), "");
}

/// Makes `stats.py`'s checkout in the user's repository slow (a smudge
/// filter that sleeps, only there: the run's worktree checks out fast) and
/// returns the file the filter touches when it starts.
fn slow_checkout_in_the_user_repo(fx: &FixtureRepo, seconds: u32) -> std::path::PathBuf {
    let marker = fx.repo.tmp().join("merge-started");
    fx.repo.write(".gitattributes", "stats.py filter=slow\n");
    fx.repo.commit_all("a filter on stats.py");
    let smudge = format!(
        "sh -c 'if [ \"$(pwd -P)\" = \"{root}\" ]; then touch \"{marker}\"; sleep {seconds}; fi; cat'",
        root = fx.repo.root.display(),
        marker = marker.display(),
    );
    fx.repo.git(&["config", "filter.slow.smudge", &smudge]);
    fx.repo.git(&["config", "filter.slow.clean", "cat"]);
    marker
}

/// Sends `signal` to every process of swarm's group.
fn signal_group(child: &std::process::Child, signal: i32) {
    let group = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill with a negative pid signals that process group only.
    assert_eq!(unsafe { libc::kill(-group, signal) }, 0, "kill");
}

/// The run branch's tip, once the run created it.
fn best_tip(fx: &FixtureRepo) -> String {
    let refs = fx
        .repo
        .git(&["for-each-ref", "--format=%(refname)", "refs/heads/swarm/"]);
    let best = refs
        .lines()
        .find(|r| r.ends_with("/best"))
        .expect("a run branch");
    fx.repo.git(&["rev-parse", best])
}

#[test]
fn ctrl_c_during_the_fast_forward_leaves_it_complete_and_says_so() {
    let fx = FixtureRepo::new("single_module");
    let marker = slow_checkout_in_the_user_repo(&fx, 3);
    let start = fx.repo.head();
    let server = LlmServer::start(good_model("single_module", ""));
    let swarm = spawn_swarm(&fx, &server, &[]);
    wait_for("the fast-forward", Duration::from_secs(120), || {
        marker.exists()
    });
    std::thread::sleep(Duration::from_millis(300));
    signal_group(&swarm, libc::SIGINT);
    let out = swarm.wait_with_output().expect("swarm");
    let stderr = String::from_utf8_lossy(&out.stderr);

    // The merge is shielded: it finished, and the summary says exactly that.
    let best = best_tip(&fx);
    assert_eq!(fx.repo.head(), best, "{stderr}");
    assert_ne!(best, start);
    for (path, fixed) in fx.fixed_files() {
        assert_eq!(fx.repo.read(&path), fixed);
    }
    assert_eq!(fx.repo.git(&["status", "--porcelain"]), "", "no half state");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success");
    assert_eq!(summary["delivery"]["state"], "updated");
    assert_eq!(summary["delivery"]["commit"], best.as_str());
}

#[test]
fn a_killed_swarm_still_completes_the_fast_forward_it_started() {
    let fx = FixtureRepo::new("single_module");
    let marker = slow_checkout_in_the_user_repo(&fx, 3);
    let start = fx.repo.head();
    let server = LlmServer::start(good_model("single_module", ""));
    let mut swarm = spawn_swarm(&fx, &server, &[]);
    wait_for("the fast-forward", Duration::from_secs(120), || {
        marker.exists()
    });
    signal_group(&swarm, libc::SIGKILL);
    swarm.wait().expect("reap");
    let best = best_tip(&fx);
    assert_ne!(best, start);
    wait_for("git to finish the merge", Duration::from_secs(60), || {
        fx.repo.head() == best && !fx.repo.root.join(".git/index.lock").exists()
    });
    for (path, fixed) in fx.fixed_files() {
        assert_eq!(fx.repo.read(&path), fixed);
    }
    assert_eq!(fx.repo.git(&["status", "--porcelain"]), "", "no half state");
}

#[test]
fn a_fast_forward_that_breaks_half_way_is_a_failed_delivery_not_success() {
    let fx = FixtureRepo::new("single_module");
    // A required smudge filter that fails in the user's checkout only: git
    // removes stats.py, then dies before the index and branch move.
    fx.repo.write(".gitattributes", "stats.py filter=fragile\n");
    let start = fx.repo.commit_all("a filter on stats.py");
    let smudge = format!(
        "sh -c 'if [ \"$(pwd -P)\" = \"{}\" ]; then exit 1; fi; cat'",
        fx.repo.root.display()
    );
    fx.repo.git(&["config", "filter.fragile.smudge", &smudge]);
    fx.repo.git(&["config", "filter.fragile.clean", "cat"]);
    fx.repo.git(&["config", "filter.fragile.required", "true"]);
    let server = LlmServer::start(good_model("single_module", ""));
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "delivery_failed", "{summary}");
    assert_eq!(summary["delivery"]["state"], "failed");
    let reason = summary["delivery"]["reason"].as_str().expect("reason");
    assert!(reason.contains("stats.py"), "{reason}");
    let command = summary["delivery"]["command"].as_str().expect("command");
    assert_eq!(
        command,
        "git restore --source=HEAD --staged --worktree -- stats.py"
    );
    assert!(stderr.contains("DELIVERY FAILED"), "{stderr}");
    assert!(!stderr.contains("swarm success"), "{stderr}");
    assert_eq!(fx.repo.head(), start);
    // The command given puts the file back once the filter works.
    fx.repo.git(&["config", "filter.fragile.smudge", "cat"]);
    let args: Vec<&str> = command.split(' ').skip(1).collect();
    fx.repo.git(&args);
    assert_eq!(fx.repo.git(&["status", "--porcelain"]), "");
}
