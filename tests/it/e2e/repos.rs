//! Repositories as people have them, with the real binary: uncommitted
//! test configuration at the root, runs killed or running side by side,
//! shallow clones, submodules, staged files, a branch named `swarm`, a
//! target inside `.git`, a `.git` the user cannot read.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::{run_openai, summary_of, FAKE_KEY};
use crate::support::fixture::{good_model, prompt_of, swarm_in, FixtureRepo};
use crate::support::llm_server::LlmServer;
use crate::support::repo::git_in;

/// The cache folder [`FixtureRepo::swarm`] gives swarm (`SWARM_CACHE_DIR`).
pub(super) fn cache_dir(fx: &FixtureRepo) -> PathBuf {
    fx.repo.home.join(".cache/swarm")
}

/// Every run folder and lock file left under the cache's worktrees (the
/// spare worktree kept for the next run, `spare` and `spare.index`, is no
/// run's: see `git::spare`).
pub(super) fn leftover_runs(fx: &FixtureRepo) -> Vec<String> {
    let Ok(keys) = fs::read_dir(cache_dir(fx).join("worktrees")) else {
        return Vec::new();
    };
    let mut left: Vec<String> = keys
        .flatten()
        .flat_map(|key| fs::read_dir(key.path()).into_iter().flatten().flatten())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "spare" && name != "spare.index")
        .collect();
    left.sort();
    left
}

/// The spare worktree's folder in the fixture's cache (see `git::spare`),
/// when a run kept one.
pub(super) fn spare_folder(fx: &FixtureRepo) -> Option<PathBuf> {
    fs::read_dir(cache_dir(fx).join("worktrees"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|key| key.path().join("spare"))
        .find(|spare| spare.is_dir())
}

/// Starts swarm on the fixture in the background, in its own process group
/// (so a test can signal swarm's whole group without signalling itself),
/// with the same hermetic environment as [`FixtureRepo::swarm`].
pub(super) fn spawn_swarm(fx: &FixtureRepo, server: &LlmServer, extra: &[&str]) -> Child {
    use std::os::unix::process::CommandExt;
    let cwd = fx.repo.tmp().join("cwd");
    fs::create_dir_all(&cwd).expect("cwd");
    let mut command = Command::new(env!("CARGO_BIN_EXE_swarm"));
    command
        .current_dir(&cwd)
        .arg("--target_dir")
        .arg(&fx.target)
        .arg("--json")
        .args(extra)
        .env("HOME", &fx.repo.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("SWARM_CACHE_DIR", cache_dir(fx))
        .env("NO_COLOR", "1")
        .env("OPENAI_API_KEY", FAKE_KEY)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
        .env_remove("GEMINI_API_KEY")
        .env_remove("GOOGLE_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("SWARM_PROVIDER")
        .env_remove("VIRTUAL_ENV")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    command.spawn().expect("swarm can be started")
}

/// Polls `check` every 50 ms until it holds; panics after `limit`.
pub(super) fn wait_for(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A good model for single_module whose first reply comes after `delay`.
fn slow_good_model(delay: Duration) -> LlmServer {
    let good = good_model("single_module", "");
    LlmServer::start(move |request| {
        let reply = good(request);
        if request.index == 0 {
            reply.with_delay(delay)
        } else {
            reply
        }
    })
}

/// Runs swarm on `target` (outside any fixture) from `<tmp>/cwd`.
fn swarm_on(tmp: &Path, home: &Path, target: &Path, server: &LlmServer, extra: &[&str]) -> Output {
    let cwd = tmp.join("cwd");
    fs::create_dir_all(&cwd).expect("cwd");
    let target = target.to_string_lossy().into_owned();
    let base = format!("{}/v1", server.base_url());
    let mut args = vec!["--target_dir", target.as_str(), "--json"];
    args.extend_from_slice(extra);
    swarm_in(
        &cwd,
        home,
        &args,
        &[("OPENAI_API_KEY", FAKE_KEY), ("OPENAI_BASE_URL", &base)],
    )
}

/// The one line swarm printed as its error, checked to be the only one.
fn one_line_error(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("swarm: error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    errors[0].to_string()
}

#[test]
fn an_uncommitted_conftest_and_pytest_ini_at_the_root_are_not_seen_by_the_judge() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    // Loaded, these break every test: the plugin does not exist and the
    // autouse fixture raises.
    let ini = "[pytest]\naddopts = -p swarm_tripwire_plugin\n";
    let conftest = "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef _tripwire():\n    raise RuntimeError('the uncommitted conftest.py was loaded')\n";
    fx.repo.write("pytest.ini", ini);
    fx.repo.write("conftest.py", conftest);
    let server = LlmServer::start(good_model("single_module", ""));
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success");
    assert_eq!(summary["delivery"]["state"], "updated", "{summary}");
    assert_eq!(
        summary["tests_after"]["passed"],
        summary["tests_after"]["total"]
    );
    assert_ne!(fx.repo.head(), start);
    for (path, fixed) in fx.fixed_files() {
        assert_eq!(fx.repo.read(&path), fixed);
    }
    assert_eq!(fx.repo.read("pytest.ini"), ini);
    assert_eq!(fx.repo.read("conftest.py"), conftest);
    assert!(!stderr.contains("tripwire"), "{stderr}");
    assert_eq!(leftover_runs(&fx), Vec::<String>::new());
}

#[test]
fn the_worktree_of_a_killed_run_is_removed_by_the_next_run_whatever_pid_it_names() {
    let fx = FixtureRepo::new("single_module");
    let server = slow_good_model(Duration::from_secs(60));
    let mut first = spawn_swarm(&fx, &server, &[]);
    wait_for("the first run's worktree", Duration::from_secs(60), || {
        leftover_runs(&fx).iter().any(|n| !n.ends_with(".lock"))
    });
    wait_for("the first model request", Duration::from_secs(60), || {
        !server.requests().is_empty()
    });
    first.kill().expect("SIGKILL the first run");
    first.wait().expect("reap");
    let dead = leftover_runs(&fx);
    let dead_run = dead
        .iter()
        .find(|n| !n.ends_with(".lock"))
        .expect("the dead run's folder")
        .clone();
    assert_eq!(
        fx.repo.worktrees().len(),
        2,
        "the dead run's worktree is registered"
    );
    // Its lock file names a process that is alive: a reused PID.
    let mut alive = Command::new("sleep").arg("60").spawn().expect("sleep");
    let lock = fs::read_dir(cache_dir(&fx).join("worktrees"))
        .expect("ls")
        .flatten()
        .map(|key| key.path().join(format!("{dead_run}.lock")))
        .find(|p| p.exists())
        .expect("the dead run's lock file");
    fs::write(&lock, format!("run {dead_run}\npid {}\n", alive.id())).expect("rewrite");

    let start = fx.repo.head();
    let next = LlmServer::start(good_model("single_module", ""));
    let out = run_openai(&fx, &next, &[]);
    alive.kill().expect("kill sleep");
    let _ = alive.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "removed worktrees left by interrupted runs: {dead_run}"
        )),
        "{stderr}"
    );
    assert_ne!(fx.repo.head(), start);
    assert_eq!(leftover_runs(&fx), Vec::<String>::new());
    assert_eq!(fx.repo.worktrees(), vec![fx.repo.root.clone()]);
}

#[test]
fn a_second_run_on_the_same_repository_waits_or_stops_naming_the_first() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let server = slow_good_model(Duration::from_secs(6));
    let first = spawn_swarm(&fx, &server, &[]);
    wait_for("the first model request", Duration::from_secs(60), || {
        !server.requests().is_empty()
    });
    let lock = fx.repo.root.join(".git/swarm/run.lock");
    let holder = fs::read_to_string(&lock).expect("the repository's run lock");
    let first_run = holder
        .lines()
        .find_map(|l| l.strip_prefix("run "))
        .expect("the lock names its run")
        .to_string();

    // One that will not wait stops at once with a one-line message.
    let impatient = LlmServer::start(good_model("single_module", ""));
    let stopped = run_openai(&fx, &impatient, &["--lock-timeout", "0"]);
    assert_eq!(
        stopped.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&stopped.stderr)
    );
    let message = one_line_error(&stopped);
    assert!(message.contains(&first_run), "{message}");
    assert!(message.contains("--lock-timeout"), "{message}");
    assert!(impatient.requests().is_empty(), "no work was done");

    // One that waits starts once the first is over, from its result.
    let patient_server = LlmServer::start(good_model("single_module", ""));
    let patient = spawn_swarm(&fx, &patient_server, &["--lock-timeout", "300"]);
    let first = first.wait_with_output().expect("first run");
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let after_first = fx.repo.head();
    assert_ne!(after_first, start);
    let patient = patient.wait_with_output().expect("second run");
    let stderr = String::from_utf8_lossy(&patient.stderr);
    assert_eq!(patient.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("another run ({first_run})")),
        "{stderr}"
    );
    assert!(stderr.contains("waiting up to 300 s"), "{stderr}");
    let second = summary_of(&patient.stdout);
    assert_eq!(
        second["tests_before"]["passed"], second["tests_before"]["total"],
        "{second}"
    );
    assert_ne!(second["run_id"], first_run.as_str());
}

#[test]
fn a_shallow_clone_is_refactored_and_delivered() {
    let fx = FixtureRepo::new("single_module");
    fx.repo.write("CHANGES.md", "second commit\n");
    fx.repo.commit_all("second commit");
    let clone = fx.repo.tmp().join("shallow");
    fx.repo.git(&[
        "clone",
        "--quiet",
        "--depth",
        "1",
        &format!("file://{}", fx.repo.root.display()),
        clone.to_str().expect("utf8"),
    ]);
    let home = &fx.repo.home;
    assert_eq!(
        git_in(&clone, home, &["rev-parse", "--is-shallow-repository"]),
        "true"
    );
    let start = git_in(&clone, home, &["rev-parse", "HEAD"]);
    let server = LlmServer::start(good_model("single_module", ""));
    let out = swarm_on(fx.repo.tmp(), home, &clone, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(summary_of(&out.stdout)["delivery"]["state"], "updated");
    assert_ne!(git_in(&clone, home, &["rev-parse", "HEAD"]), start);
    for (path, fixed) in fx.fixed_files() {
        assert_eq!(fs::read_to_string(clone.join(&path)).expect("read"), fixed);
    }
    assert_eq!(git_in(&clone, home, &["status", "--porcelain"]), "");
}

#[test]
fn tests_importing_from_a_submodule_pass_in_the_run() {
    let fx = FixtureRepo::new("single_module");
    let home = fx.repo.home.clone();
    let lib = fx.repo.tmp().join("mathhelpers-src");
    fs::create_dir_all(&lib).expect("mkdir");
    let in_lib = |args: &[&str]| git_in(&lib, &home, args);
    in_lib(&["init", "--quiet", "--initial-branch=main"]);
    in_lib(&["config", "user.name", "Lib"]);
    in_lib(&["config", "user.email", "lib@example.com"]);
    fs::write(
        lib.join("__init__.py"),
        "\"\"\"Small helpers.\"\"\"\n\n\ndef double(x):\n    \"\"\"Twice x.\"\"\"\n    return 2 * x\n",
    )
    .expect("write");
    in_lib(&["add", "-A"]);
    in_lib(&["commit", "--quiet", "-m", "helpers"]);
    fx.repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "--quiet",
        lib.to_str().expect("utf8"),
        "mathhelpers",
    ]);
    fx.repo.write(
        "test_helpers.py",
        "\"\"\"Uses the submodule.\"\"\"\nfrom mathhelpers import double\n\n\ndef test_double():\n    \"\"\"Twice three.\"\"\"\n    assert double(3) == 6\n",
    );
    let start = fx.repo.commit_all("use a submodule");
    let server = LlmServer::start(good_model("single_module", ""));
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    assert_eq!(summary["tests_after"]["total"], 9, "{summary}");
    assert_eq!(summary["tests_after"]["passed"], 9, "{summary}");
    assert_ne!(fx.repo.head(), start);
    assert_eq!(
        fx.repo.git(&["rev-parse", "HEAD:mathhelpers"]),
        fx.repo.git(&["rev-parse", &format!("{start}:mathhelpers")])
    );
    assert_eq!(fx.repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_staged_but_uncommitted_file_is_not_part_of_the_run() {
    let fx = FixtureRepo::new("single_module");
    fx.repo.write("extra.py", "import os\nx=1\n");
    fx.repo.git(&["add", "extra.py"]);
    let server = LlmServer::start(good_model("single_module", ""));
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["delivery"]["state"], "updated", "{summary}");
    for entry in fx.log() {
        let details = entry["details"].to_string();
        assert!(
            !details.contains("extra.py"),
            "the run saw the staged file: {entry}"
        );
    }
    assert!(server
        .requests()
        .iter()
        .all(|r| !prompt_of(r).contains("extra.py")));
    // Still staged, as the user left it.
    assert_eq!(fx.repo.git(&["status", "--porcelain"]), "A  extra.py");
}

#[test]
fn a_branch_named_swarm_stops_the_run_before_any_work() {
    let fx = FixtureRepo::new("single_module");
    fx.repo.git(&["branch", "swarm"]);
    let before = fx.repo.snapshot();
    let server = LlmServer::start(good_model("single_module", ""));
    let out = run_openai(&fx, &server, &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let message = one_line_error(&out);
    assert!(message.contains("a branch named swarm exists"), "{message}");
    assert!(
        message.contains("git branch -m swarm <new-name>"),
        "{message}"
    );
    assert!(server.requests().is_empty());
    assert_eq!(fx.repo.snapshot(), before);
    assert_eq!(
        fx.repo.git(&["for-each-ref", "--format=%(refname)"]),
        "refs/heads/main\nrefs/heads/swarm"
    );
    assert_eq!(leftover_runs(&fx), Vec::<String>::new());
}

#[test]
fn a_target_inside_dot_git_is_invalid_input() {
    let fx = FixtureRepo::new("single_module");
    let server = LlmServer::start(good_model("single_module", ""));
    for inside in [".git", ".git/refs/heads"] {
        let out = swarm_on(
            fx.repo.tmp(),
            &fx.repo.home,
            &fx.repo.root.join(inside),
            &server,
            &[],
        );
        assert_eq!(
            out.status.code(),
            Some(1),
            "{inside}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let message = one_line_error(&out);
        assert!(
            message.contains("inside the repository's .git folder"),
            "{message}"
        );
    }
    assert!(server.requests().is_empty());
}

/// Runs the swarm binary as an unprivileged user when this process is root
/// (permissions do not bite root), else as this user. The binary is copied
/// into `tmp` so the other user can run it wherever the build lives.
fn swarm_as_other_user(tmp: &Path, home: &Path, target: &Path, server: &LlmServer) -> Output {
    let bin = tmp.join("bin/swarm");
    fs::create_dir_all(bin.parent().expect("parent")).expect("mkdir");
    fs::copy(env!("CARGO_BIN_EXE_swarm"), &bin).expect("copy the binary");
    let cwd = tmp.join("other-cwd");
    fs::create_dir_all(&cwd).expect("mkdir");
    let mut command = if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin);
        c
    } else {
        Command::new(&bin)
    };
    command
        .current_dir(&cwd)
        .arg("--target_dir")
        .arg(target)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("SWARM_CACHE_DIR", home.join(".cache/swarm"))
        .env("OPENAI_API_KEY", FAKE_KEY)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
        .output()
        .expect("run swarm as another user")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

fn chown_tree(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).expect("chown");
    if path.is_dir() && !path.is_symlink() {
        for entry in fs::read_dir(path).expect("ls").flatten() {
            chown_tree(&entry.path(), uid);
        }
    }
}

#[test]
fn an_unreadable_dot_git_is_refused_and_no_repository_is_nested() {
    let fx = FixtureRepo::new("single_module");
    fx.repo
        .write("lib/helper.py", "def helper():\n    return 1\n");
    fx.repo.commit_all("a subfolder");
    let tmp = fx.repo.tmp().to_path_buf();
    let home = tmp.join("other-home");
    fs::create_dir_all(&home).expect("mkdir");
    let git_dir = fx.repo.root.join(".git");
    if is_root() {
        // The other user may walk the tree and write the working tree and
        // its own folders, but the git dir stays root's alone.
        chmod(&tmp, 0o755);
        for dir in [&fx.repo.root, &fx.repo.root.join("lib")] {
            chown_tree(dir, 65534);
        }
        chown_tree(&git_dir, 0);
        chmod(&git_dir, 0o700);
        chown_tree(&home, 65534);
        fs::create_dir_all(tmp.join("other-cwd")).expect("mkdir");
        chown_tree(&tmp.join("other-cwd"), 65534);
    } else {
        chmod(&git_dir, 0o000);
    }
    let server = LlmServer::start(good_model("single_module", ""));
    let outcomes: Vec<(PathBuf, Output)> = [fx.repo.root.join("lib"), fx.repo.root.clone()]
        .into_iter()
        .map(|target| {
            let out = swarm_as_other_user(&tmp, &home, &target, &server);
            (target, out)
        })
        .collect();
    if is_root() {
        chown_tree(&fx.repo.root, 0);
    }
    chmod(&git_dir, 0o755);
    for (target, out) in outcomes {
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}: {}",
            target.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let message = one_line_error(&out);
        assert!(
            message.contains("cannot be opened as a repository by this user"),
            "{message}"
        );
        assert!(message.contains("permission denied"), "{message}");
    }
    assert!(
        !fx.repo.root.join("lib/.git").exists(),
        "no repository nested in lib/"
    );
    assert!(server.requests().is_empty());
    assert_eq!(fx.repo.git(&["status", "--porcelain"]), "");
    assert_eq!(
        fx.repo.git(&["for-each-ref", "--format=%(refname)"]),
        "refs/heads/main"
    );
}
