//! Undo and inspect, end to end: `swarm log`, `swarm show`, `swarm undo`
//! and `swarm clean` on repositories that real runs (loopback model, real
//! pytest and pylint) left behind.

use std::process::Output;

use serde_json::Value;

use super::{run_openai, summary_of};
use crate::support::fixture::{good_model, FixtureRepo};
use crate::support::llm_server::LlmServer;

/// Runs a swarm subcommand against the fixture's repository.
fn swarm_on(fx: &FixtureRepo, args: &[&str]) -> Output {
    let root = fx.repo.root.to_string_lossy().into_owned();
    let mut all: Vec<&str> = args.to_vec();
    all.extend_from_slice(&["--target-dir", &root]);
    fx.swarm(&all, &[])
}

/// Stdout parsed as one JSON value, after checking the exit code is 0.
fn json_of(out: &Output) -> Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// One good run on the fixture: its `--json` summary.
fn good_run(fx: &FixtureRepo, extra: &[&str]) -> Value {
    let server = LlmServer::start(good_model("single_module", ""));
    let out = run_openai(fx, &server, extra);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    summary_of(&out.stdout)
}

fn run_id(summary: &Value) -> String {
    summary["run_id"].as_str().expect("run id").to_string()
}

/// The full names of the refs under `prefix`.
fn refs_under(fx: &FixtureRepo, prefix: &str) -> Vec<String> {
    fx.repo
        .git(&["for-each-ref", "--format=%(refname)", prefix])
        .lines()
        .map(str::to_string)
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn log_lists_runs_newest_first_and_show_lists_a_runs_attempts() {
    let fx = FixtureRepo::new("single_module");
    let left = good_run(&fx, &["--dry-run"]);
    let delivered = good_run(&fx, &[]);
    let rows = json_of(&swarm_on(&fx, &["log", "--json"]));
    let rows = rows.as_array().expect("an array of runs");
    assert_eq!(rows.len(), 2, "{rows:?}");
    let (newest, older) = (&rows[0], &rows[1]);
    assert_eq!(newest["run_id"], delivered["run_id"]);
    assert_eq!(newest["status"], "delivered");
    assert_eq!(newest["delivered_to"], "main");
    assert_eq!(older["run_id"], left["run_id"]);
    assert_eq!(older["status"], "not_delivered");
    assert!(older["delivered_to"].is_null());
    for (row, summary) in [(newest, &delivered), (older, &left)] {
        assert_eq!(row["tests_before"], summary["tests_before"], "{row}");
        assert_eq!(row["tests_after"], summary["tests_after"], "{row}");
        assert_eq!(row["attempts"], summary["attempts"], "{row}");
        assert_eq!(row["accepted"], summary["accepted"], "{row}");
        let pylint = |v: &Value| (v.as_f64().expect("a score") * 100.0).round();
        assert_eq!(
            pylint(&row["pylint_after"]),
            pylint(&summary["pylint_after"])
        );
    }
    assert_ne!(newest["tests_before"], newest["tests_after"]);

    // The table says the same for people.
    let out = swarm_on(&fx, &["log"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("RUN"), "{text}");
    assert!(lines[1].starts_with(&run_id(&delivered)), "{text}");
    assert!(
        lines[1].contains("delivered") && lines[1].ends_with("main"),
        "{text}"
    );
    assert!(lines[2].contains("not delivered"), "{text}");

    // show: a unique prefix is enough; every attempt with its commit.
    let id = run_id(&delivered);
    let shown = json_of(&swarm_on(&fx, &["show", &id[..id.len() - 2], "--json"]));
    assert_eq!(shown["run"]["run_id"], id.as_str());
    let attempts = shown["attempts"].as_array().expect("attempts");
    assert_eq!(
        attempts.len() as u64,
        delivered["attempts"].as_u64().unwrap()
    );
    let first = &attempts[0];
    let branch = format!("swarm/{id}/attempt-1");
    assert_eq!(
        first["commit"],
        fx.repo.git(&["rev-parse", &branch]).as_str()
    );
    assert_eq!(first["branch"], branch.as_str());
    assert_eq!(first["files_changed"], serde_json::json!(["stats.py"]));
    assert_eq!(first["iteration"], 1);
    assert!(
        matches!(first["verdict"].as_str(), Some("green" | "improved")),
        "{first}"
    );
    assert_eq!(
        first["subject"],
        fx.repo.git(&["log", "-1", "--format=%s", &branch]).as_str()
    );
    let text = String::from_utf8_lossy(&swarm_on(&fx, &["show", &id]).stdout).into_owned();
    assert!(text.contains(&format!("run {id}")), "{text}");
    assert!(text.contains("delivered to main"), "{text}");
    assert!(text.contains("stats.py"), "{text}");

    // An unknown run: one line naming `swarm log`.
    let out = swarm_on(&fx, &["show", "no-such-run"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("`swarm log`"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn undo_restores_the_branch_and_files_and_keeps_other_uncommitted_work() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let original = fx.repo.read("stats.py");
    let summary = good_run(&fx, &[]);
    let id = run_id(&summary);
    assert_ne!(fx.repo.head(), start);
    let result = fx.repo.head();
    // Uncommitted work that the undo must keep: a tracked file the run did
    // not change, and an untracked one.
    let tests = fx.repo.read("test_stats.py") + "\n# my uncommitted comment\n";
    fx.repo.write("test_stats.py", &tests);
    fx.repo.write("NOTES.md", "mine\n");

    let out = swarm_on(&fx, &["undo"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("undid run {id}")), "{said}");
    assert!(
        said.contains(&format!("git merge --ff-only refs/swarm/{id}/undone")),
        "{said}"
    );
    assert_eq!(fx.repo.head(), start);
    assert_eq!(fx.repo.git(&["rev-parse", "--abbrev-ref", "HEAD"]), "main");
    assert_eq!(fx.repo.read("stats.py"), original);
    assert_eq!(fx.repo.read("test_stats.py"), tests);
    assert_eq!(fx.repo.read("NOTES.md"), "mine\n");
    // The undo ref gave way to the undone mark; the result is kept.
    assert_eq!(
        refs_under(&fx, &format!("refs/swarm/{id}/")),
        [format!("refs/swarm/{id}/undone")]
    );
    assert_eq!(
        fx.repo
            .git(&["rev-parse", &format!("refs/swarm/{id}/undone")]),
        result
    );

    let rows = json_of(&swarm_on(&fx, &["log", "--json"]));
    assert_eq!(rows[0]["status"], "undone");
    assert_eq!(rows[0]["delivered_to"], "main");

    // Nothing left to undo.
    let out = swarm_on(&fx, &["undo"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no delivered run"),
        "{}",
        stderr(&out)
    );
    let out = swarm_on(&fx, &["undo", &id]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("already undone"), "{}", stderr(&out));
    assert_eq!(fx.repo.head(), start);
}

#[test]
fn undo_refuses_after_a_later_commit_and_changes_nothing() {
    let fx = FixtureRepo::new("single_module");
    let summary = good_run(&fx, &[]);
    let id = run_id(&summary);
    fx.repo.write("NOTES.md", "later work\n");
    let later = fx.repo.commit_all("later work");
    let before = fx.repo.snapshot();

    let out = swarm_on(&fx, &["undo", &id]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("main has 1 commit(s) since run"), "{err}");
    assert!(err.contains("git log --oneline"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert_eq!(fx.repo.head(), later);
    assert_eq!(fx.repo.snapshot(), before);
    assert_eq!(
        refs_under(&fx, &format!("refs/swarm/{id}/")),
        [format!("refs/swarm/{id}/pre-ff")]
    );
}

#[test]
fn undo_refuses_to_overwrite_uncommitted_changes_or_move_a_branch_not_checked_out() {
    let fx = FixtureRepo::new("single_module");
    let summary = good_run(&fx, &[]);
    let id = run_id(&summary);
    let result = fx.repo.head();

    // An uncommitted change in a file the run changed: reset --keep refuses.
    let mine = fx.repo.read("stats.py") + "\n# work in progress\n";
    fx.repo.write("stats.py", &mine);
    let out = swarm_on(&fx, &["undo"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing was changed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fx.repo.head(), result);
    assert_eq!(fx.repo.read("stats.py"), mine);
    fx.repo.git(&["checkout", "--", "stats.py"]);

    // Another branch checked out: main is left alone.
    fx.repo.git(&["switch", "--quiet", "-c", "elsewhere"]);
    let out = swarm_on(&fx, &["undo", &id]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("delivered to main, which is not checked out"),
        "{err}"
    );
    assert_eq!(fx.repo.git(&["rev-parse", "main"]), result);
    assert_eq!(fx.repo.git(&["rev-parse", "elsewhere"]), result);
    assert_eq!(
        refs_under(&fx, &format!("refs/swarm/{id}/")),
        [format!("refs/swarm/{id}/pre-ff")]
    );
}

#[test]
fn clean_removes_exactly_one_runs_refs_and_all_removes_every_run() {
    let fx = FixtureRepo::new("single_module");
    let left = run_id(&good_run(&fx, &["--dry-run"]));
    let delivered = run_id(&good_run(&fx, &[]));
    fx.repo.git(&["branch", "swarm-notes"]);
    let all_before = refs_under(&fx, "refs/");
    let ours = |run: &str| {
        let mut refs = refs_under(&fx, &format!("refs/heads/swarm/{run}/"));
        refs.extend(refs_under(&fx, &format!("refs/swarm/{run}/")));
        refs
    };
    let (left_refs, delivered_refs) = (ours(&left), ours(&delivered));
    assert!(left_refs.len() >= 2, "{left_refs:?}");

    // A dry run names what would go, and the undo ref's loss, and removes nothing.
    let out = swarm_on(&fx, &["clean", &delivered, "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.starts_with(&format!("would remove run {delivered}")),
        "{said}"
    );
    assert!(
        said.contains(&format!("refs/swarm/{delivered}/pre-ff")),
        "{said}"
    );
    assert!(said.contains("can no longer be undone"), "{said}");
    assert_eq!(refs_under(&fx, "refs/"), all_before);

    // One run: exactly its refs.
    let out = swarm_on(&fx, &["clean", &left]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.starts_with(&format!("removed run {left}: {} ref(s)", left_refs.len())),
        "{said}"
    );
    assert!(!said.contains("undone"), "{said}");
    assert!(ours(&left).is_empty());
    assert_eq!(ours(&delivered), delivered_refs);
    let expected: Vec<String> = all_before
        .iter()
        .filter(|r| !left_refs.contains(r))
        .cloned()
        .collect();
    assert_eq!(refs_under(&fx, "refs/"), expected);
    let rows = json_of(&swarm_on(&fx, &["log", "--json"]));
    assert_eq!(rows.as_array().map(Vec::len), Some(1));

    // --all: every run goes, the user's branches stay, and so does the
    // spare worktree the runs kept in the cache folder.
    assert!(
        super::repos::spare_folder(&fx).is_some(),
        "the runs kept a spare worktree"
    );
    let head = fx.repo.head();
    let out = swarm_on(&fx, &["clean", "--all", "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("would remove the spare worktree"), "{said}");
    assert!(super::repos::spare_folder(&fx).is_some(), "{said}");
    let out = swarm_on(&fx, &["clean", "--all"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("removed run {delivered}")), "{said}");
    assert!(said.contains("removed the spare worktree"), "{said}");
    assert_eq!(super::repos::spare_folder(&fx), None);
    assert!(refs_under(&fx, "refs/swarm/").is_empty());
    assert!(refs_under(&fx, "refs/heads/swarm/").is_empty());
    let mut left_over = refs_under(&fx, "refs/heads/");
    left_over.sort();
    assert_eq!(left_over, ["refs/heads/main", "refs/heads/swarm-notes"]);
    assert_eq!(fx.repo.head(), head);
    let out = swarm_on(&fx, &["log"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("no swarm runs"));
    // Neither RUN nor --all: a usage error.
    assert_eq!(swarm_on(&fx, &["clean"]).status.code(), Some(1));
}

/// A second run on the same repository takes the first run's worktree (the
/// very folder: same inode) instead of checking every file out again, and
/// still starts from exactly the committed files: the first run's fix in
/// the kept folder and a file a test left there do not leak into it, so it
/// finds the bug again, fixes it and delivers.
#[test]
fn a_second_run_takes_the_spare_worktree_and_starts_from_the_committed_files() {
    use std::os::unix::fs::MetadataExt;
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let first = good_run(&fx, &[]);
    assert_eq!(first["status"], "success");
    let spare = super::repos::spare_folder(&fx).expect("the first run kept its worktree");
    let inode = std::fs::metadata(&spare).expect("spare").ino();
    assert!(
        std::fs::read_to_string(spare.join("stats.py")).expect("the fixed module in the spare")
            != fx.repo.git(&["show", &format!("{start}:stats.py")]),
        "the spare holds the first run's fix"
    );
    std::fs::write(spare.join("left_by_a_test.py"), "import sys\n").expect("junk");

    // The user takes the fix back: the bug is in HEAD again.
    fx.repo.git(&["reset", "--quiet", "--hard", &start]);
    let server = LlmServer::start(good_model("single_module", ""));
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let second = summary_of(&out.stdout);
    assert_eq!(second["status"], "success", "{second}");
    assert!(
        second["tests_before"] != second["tests_after"],
        "the second run saw the bug, not the kept fix: {second}"
    );
    assert_ne!(fx.repo.head(), start, "delivered again");
    assert!(!stderr.contains("left by interrupted runs"), "{stderr}");
    let spare_after = super::repos::spare_folder(&fx).expect("kept again");
    assert_eq!(
        std::fs::metadata(&spare_after).expect("spare").ino(),
        inode,
        "the same folder went through the second run"
    );
    assert!(!spare_after.join("left_by_a_test.py").exists());
    assert_eq!(fx.repo.worktrees(), vec![fx.repo.root.clone()]);
}
