//! Repositories as people have them: shallow clones, submodules, staged
//! files, odd branch names, unreadable git dirs.

use super::{run_openai, summary_of};
use crate::support::fixture::{good_model, FixtureRepo};
use crate::support::llm_server::LlmServer;

#[test]
fn repro_shallow() {
    let fx = FixtureRepo::new("single_module");
    fx.repo.write("CHANGELOG.md", "one\n");
    fx.repo.commit_all("second commit");
    let shallow = fx.repo.tmp().join("shallow");
    fx.repo.git(&[
        "clone",
        "--quiet",
        "--depth",
        "1",
        &format!("file://{}", fx.repo.root.display()),
        shallow.to_str().unwrap(),
    ]);
    let fx2 = FixtureRepo {
        name: fx.name.clone(),
        repo: crate::support::repo::TestRepo::empty(),
        target: shallow.clone(),
        target_rel: String::new(),
    };
    let server = LlmServer::start(good_model("single_module", ""));
    let out = run_openai(&fx2, &server, &[]);
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    panic!("{:?}", out.status.code());
}
