//! The final step: the user's uncommitted work is sacred.

use super::{run_openai, summary_of};
use crate::support::fixture::{good_model, FixtureRepo};
use crate::support::llm_server::LlmServer;

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
    assert!(stderr.contains("uncommitted changes"), "{stderr}");
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
