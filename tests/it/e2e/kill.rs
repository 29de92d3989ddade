//! Kill safety: `swarm` is sent SIGKILL at a point of a real run — the
//! audit's pytest and pylint, the plan and fix model calls, the Reviewer and
//! apply, the Judge's pytest and pylint, the commit, the final check just
//! before the fast-forward, the fast-forward itself (widened by a slow git
//! filter) and just after it. After each kill:
//! - the user's HEAD, branch, index bytes, `git status` and working tree are
//!   exactly as before, or exactly the fast-forwarded state;
//! - no process of the run is left (a test's `setsid` daemon included);
//! - the next run exits 0 and removes the dead run's worktree.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::FAKE_KEY;
use crate::support::fixture::{good_model_reply, prompt_of, swarm_command, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};
use crate::support::procs;

/// When the kill is sent.
#[derive(Clone, Copy, Debug)]
enum Point {
    /// The `nth` (1-based) process working in the run's worktree whose
    /// command line contains `needle`, as soon as it is seen.
    Tool { needle: &'static str, nth: usize },
    /// The model received request `index` (0 is the plan).
    Request(usize),
    /// `after` once the model answered request `index`.
    AfterReply { index: usize, after: Duration },
    /// The attempt commit exists.
    Committed,
    /// `git merge --ff-only` runs in the user's repository.
    Merging,
    /// The user's branch moved.
    BranchMoved,
}

/// How long the model takes to answer each request.
const MODEL_DELAY: Duration = Duration::from_millis(1500);

/// A conftest that starts a `setsid` daemon and takes its time, as slow
/// suites do: it widens the window of every pytest run.
/// `{mark}` is the daemon's `sleep` argument, unique to each scene.
const CONFTEST: &str = r#""""Test configuration."""
import subprocess
import time


def pytest_sessionstart(session):
    """Start a background helper, then give the suite a moment."""
    subprocess.Popen(["sleep", "{mark}"], start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.8)
"#;

/// What must be identical after the kill (or be the fast-forwarded state).
#[derive(Debug, PartialEq, Eq)]
struct UserState {
    head: String,
    branch: String,
    index: Vec<u8>,
    status: String,
    files: BTreeMap<String, Vec<u8>>,
}

struct Scene {
    fx: FixtureRepo,
    server: LlmServer,
    /// When each model request was answered, by index.
    answered: Arc<Mutex<BTreeMap<usize, Instant>>>,
    /// Where run worktrees may live (old and new layouts).
    run_roots: Vec<PathBuf>,
    /// The argument of the conftest's daemon (`sleep <mark>`).
    daemon_mark: String,
}

impl Scene {
    fn new() -> Self {
        let fx = FixtureRepo::planned("single_module");
        let daemon_mark = format!(
            "9{}.{}",
            fastrand::u32(10_000..99_999),
            fastrand::u16(100..999)
        );
        fx.repo
            .write("conftest.py", &CONFTEST.replace("{mark}", &daemon_mark));
        fx.repo.write("NOTES.md", "notes\n");
        fx.repo.write(".gitattributes", "stats.py filter=slow\n");
        // A smudge filter that is slow in the user's checkout only, so the
        // fast-forward takes seconds while the run's own checkouts do not.
        let root = fx.repo.root.to_string_lossy().into_owned();
        let smudge = format!("if [ \"$PWD\" = '{root}' ]; then sleep 3; fi; cat");
        fx.repo.git(&["config", "filter.slow.smudge", &smudge]);
        fx.repo.git(&["config", "filter.slow.clean", "cat"]);
        fx.repo.commit_all("a slow suite");
        // Uncommitted work the run must keep: an untracked file and a
        // modified tracked file the run does not touch.
        fx.repo.write("scratch.txt", "mine\n");
        fx.repo.write("NOTES.md", "notes, edited\n");

        let answered = Arc::new(Mutex::new(BTreeMap::new()));
        let marks = Arc::clone(&answered);
        let target_rel = fx.target_rel.clone();
        let server = LlmServer::start(move |request| {
            std::thread::sleep(MODEL_DELAY);
            let text = good_model_reply("single_module", &target_rel, &prompt_of(request));
            marks
                .lock()
                .expect("marks lock")
                .insert(request.index, Instant::now());
            Reply::text_for(request, &text)
        });
        let run_roots = vec![
            fx.repo.root.join(".git/swarm"),
            fx.repo.home.join(".cache/swarm"),
        ];
        Scene {
            fx,
            server,
            answered,
            run_roots,
            daemon_mark,
        }
    }

    fn spawn(&self) -> Child {
        let cwd = self.fx.repo.tmp().join("cwd");
        std::fs::create_dir_all(&cwd).unwrap();
        let base = format!("{}/v1", self.server.base_url());
        let target = self.fx.target.to_string_lossy().into_owned();
        swarm_command(
            &cwd,
            &self.fx.repo.home,
            &["--target_dir", &target, "--json"],
            &[("OPENAI_API_KEY", FAKE_KEY), ("OPENAI_BASE_URL", &base)],
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("swarm starts")
    }

    fn user_state(&self) -> UserState {
        let repo = &self.fx.repo;
        let index = std::fs::read(repo.root.join(".git/index")).unwrap();
        UserState {
            head: repo.head(),
            branch: repo.git(&["symbolic-ref", "HEAD"]),
            status: repo.git(&["--no-optional-locks", "status", "--porcelain"]),
            index,
            files: working_files(&repo.root),
        }
    }

    /// Processes working in a run worktree, or started by the run.
    fn run_processes(&self) -> Vec<procs::Proc> {
        let target = self.fx.target.to_string_lossy().into_owned();
        let mut found: Vec<procs::Proc> = self
            .run_roots
            .iter()
            .flat_map(|root| procs::working_in(root))
            .collect();
        found.extend(procs::with_cmdline(&self.daemon_mark));
        found.extend(
            procs::with_cmdline(&target)
                .into_iter()
                .filter(|p| p.cmdline.contains("--target_dir")),
        );
        found.extend(
            procs::with_cmdline("merge --ff-only")
                .into_iter()
                .filter(|p| p.cwd.as_deref() == Some(self.fx.repo.root.as_path())),
        );
        found.sort_by_key(|p| p.pid);
        found.dedup_by_key(|p| p.pid);
        found
    }

    fn tool_processes(&self, needle: &str) -> Vec<i32> {
        self.run_roots
            .iter()
            .flat_map(|root| procs::working_in(root))
            .filter(|p| p.cmdline.contains(needle))
            .map(|p| p.pid)
            .collect()
    }

    /// The worktrees git knows besides the user's own.
    fn run_worktrees(&self) -> Vec<PathBuf> {
        let root = &self.fx.repo.root;
        self.fx
            .repo
            .worktrees()
            .into_iter()
            .filter(|w| w != root)
            .collect()
    }
}

/// Every file of the working tree outside `.git`, with its bytes.
fn working_files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path == root.join(".git") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                files.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// Waits for `point` while swarm runs, then sends it `signal`; returns how
/// it ended (`None` when it had ended by itself right at the point).
fn signal_at(
    scene: &Scene,
    child: &mut Child,
    point: Point,
    signal: libc::c_int,
) -> Option<std::process::ExitStatus> {
    let start_ref = std::fs::read_to_string(scene.fx.repo.root.join(".git/refs/heads/main"))
        .unwrap_or_default();
    let mut seen: Vec<i32> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        assert!(Instant::now() < deadline, "{point:?} never came");
        // Whether it already exited is asked first, the point second: a run
        // that ends right after the point (the last one is close to its
        // end) still counts as reached, never as missed.
        let exited = child.try_wait().unwrap();
        let hit = match point {
            Point::Tool { needle, nth } => {
                for pid in scene.tool_processes(needle) {
                    if !seen.contains(&pid) {
                        seen.push(pid);
                    }
                }
                seen.len() >= nth
            }
            Point::Request(index) => scene.server.requests().len() > index,
            Point::AfterReply { index, after } => scene
                .answered
                .lock()
                .unwrap()
                .get(&index)
                .is_some_and(|at| at.elapsed() >= after),
            Point::Committed => attempt_refs(&scene.fx.repo.root) > 0,
            Point::Merging => !procs::with_cmdline("merge --ff-only")
                .into_iter()
                .filter(|p| p.cwd.as_deref() == Some(scene.fx.repo.root.as_path()))
                .collect::<Vec<_>>()
                .is_empty(),
            Point::BranchMoved => {
                std::fs::read_to_string(scene.fx.repo.root.join(".git/refs/heads/main"))
                    .unwrap_or_default()
                    != start_ref
            }
        };
        if hit {
            if exited.is_some() {
                return None;
            }
            send(child.id(), signal);
            return child.wait().ok();
        }
        if let Some(status) = exited {
            let out = child.wait_with_output_lossy();
            panic!("the run ended ({status}) before {point:?}:\n{out}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn send(pid: u32, signal: libc::c_int) {
    // SAFETY: a plain signal to our own child, which has not been reaped.
    let rc = unsafe { libc::kill(pid as libc::pid_t, signal) };
    assert_eq!(rc, 0, "kill failed: {}", std::io::Error::last_os_error());
}

/// How many attempt branches exist.
fn attempt_refs(root: &Path) -> usize {
    let mut count = 0;
    let Ok(runs) = std::fs::read_dir(root.join(".git/refs/heads/swarm")) else {
        return 0;
    };
    for run in runs.flatten() {
        if let Ok(refs) = std::fs::read_dir(run.path()) {
            count += refs
                .flatten()
                .filter(|r| r.file_name().to_string_lossy().starts_with("attempt-"))
                .count();
        }
    }
    count
}

trait LossyOutput {
    fn wait_with_output_lossy(&mut self) -> String;
}

impl LossyOutput for Child {
    fn wait_with_output_lossy(&mut self) -> String {
        use std::io::Read;
        let mut text = String::new();
        if let Some(mut err) = self.stderr.take() {
            let _ = err.read_to_string(&mut text);
        }
        text
    }
}

/// Kills a run at `point`, checks the user's repository and the machine,
/// and runs again. Returns whether the user's branch was fast-forwarded.
fn kill_and_recover(point: Point) -> bool {
    let scene = Scene::new();
    let repo = &scene.fx.repo;
    let before = scene.user_state();
    let start = before.head.clone();
    let mut child = scene.spawn();
    signal_at(&scene, &mut child, point, libc::SIGKILL);

    // A fast-forward under way finishes by itself (it is shielded from
    // swarm's fate); wait for it before looking.
    assert!(
        procs::wait_until(Duration::from_secs(30), || procs::with_cmdline(
            "merge --ff-only"
        )
        .into_iter()
        .all(|p| p.cwd.as_deref() != Some(repo.root.as_path()))),
        "the merge never finished"
    );
    assert!(
        procs::wait_until(Duration::from_secs(10), || scene.run_processes().is_empty()),
        "{point:?}: processes of the run survived: {:#?}",
        scene.run_processes()
    );

    let after = scene.user_state();
    let delivered = after.head != start;
    if !delivered {
        assert_eq!(after, before, "{point:?}: the user's repository changed");
    } else {
        // Exactly the fast-forwarded state: the run branch's tip, every file
        // the run changed at its new version, everything else as it was.
        let runs = repo.git(&[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/swarm/",
        ]);
        let best = runs
            .lines()
            .find(|b| b.ends_with("/best"))
            .expect("a run branch");
        assert_eq!(after.head, repo.git(&["rev-parse", best]), "{point:?}");
        assert_eq!(after.branch, before.branch);
        assert_eq!(after.status, before.status, "{point:?}");
        let mut expected = before.files.clone();
        for path in repo.git(&["diff", "--name-only", &start, "HEAD"]).lines() {
            let content = repo.git(&["show", &format!("HEAD:{path}")]);
            expected.insert(path.to_string(), format!("{content}\n").into_bytes());
        }
        assert_eq!(
            after.files, expected,
            "{point:?}: the working tree is not the fast-forward"
        );
        assert!(
            repo.git_ok(&["diff", "--cached", "--quiet"]),
            "{point:?}: the index holds staged changes"
        );
    }

    // The next run succeeds and removes what the dead one left.
    let dead: Vec<PathBuf> = scene.run_worktrees();
    let next = scene.spawn().wait_with_output().expect("second run");
    assert_eq!(
        next.status.code(),
        Some(0),
        "{point:?}: the next run failed:\n{}",
        String::from_utf8_lossy(&next.stderr)
    );
    assert!(
        scene.run_worktrees().is_empty(),
        "{:?}",
        scene.run_worktrees()
    );
    for path in dead {
        // The worktree and the sandbox's scratch folder beside it.
        let scratch = PathBuf::from(format!("{}.scratch", path.display()));
        for leftover in [&path, &scratch] {
            assert!(
                !leftover.exists(),
                "{point:?}: {} is still there",
                leftover.display()
            );
        }
    }
    // Nothing of either run is left in the cache but the repository's folder
    // and the spare worktree the second run kept (see `git::spare`).
    let cache = scene.fx.repo.home.join(".cache/swarm/worktrees");
    assert!(cache.is_dir(), "runs work under {}", cache.display());
    let left: Vec<PathBuf> = std::fs::read_dir(&cache)
        .map(|dirs| {
            dirs.flatten()
                .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
                .map(|e| e.path())
                .filter(|p| !p.ends_with("spare") && !p.ends_with("spare.index"))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "{point:?}: left in the cache: {left:?}");
    delivered
}

#[test]
fn killed_during_the_audits_pytest() {
    let delivered = kill_and_recover(Point::Tool {
        needle: "-m pytest",
        nth: 1,
    });
    assert!(!delivered, "nothing is delivered before the fast-forward");
}

#[test]
fn killed_during_the_audits_pylint() {
    let delivered = kill_and_recover(Point::Tool {
        needle: "SWARM_PYLINT_DRIVER",
        nth: 1,
    });
    assert!(!delivered, "nothing is delivered before the fast-forward");
}

#[test]
fn killed_during_the_plan_call() {
    let delivered = kill_and_recover(Point::Request(0));
    assert!(!delivered, "nothing is delivered before the fast-forward");
}

#[test]
fn killed_during_a_fix_call() {
    // Request 1 asks for the held-out tests; request 2 for the fix.
    let delivered = kill_and_recover(Point::Request(2));
    assert!(!delivered, "nothing is delivered before the fast-forward");
}

#[test]
fn killed_while_reviewing_and_applying() {
    let delivered = kill_and_recover(Point::AfterReply {
        index: 2,
        after: Duration::from_millis(30),
    });
    assert!(!delivered, "nothing is delivered before the fast-forward");
}

#[test]
fn killed_during_the_judges_pytest() {
    let delivered = kill_and_recover(Point::Tool {
        needle: "-m pytest",
        nth: 2,
    });
    assert!(!delivered, "nothing is delivered before the fast-forward");
}

#[test]
fn killed_during_the_judges_pylint() {
    let delivered = kill_and_recover(Point::Tool {
        needle: "SWARM_PYLINT_DRIVER",
        nth: 2,
    });
    assert!(!delivered, "nothing is delivered before the fast-forward");
}

#[test]
fn killed_right_after_the_commit() {
    let delivered = kill_and_recover(Point::Committed);
    assert!(!delivered, "nothing is delivered before the fast-forward");
}

#[test]
fn killed_during_the_final_check_before_the_fast_forward() {
    let delivered = kill_and_recover(Point::Tool {
        needle: "-m pytest",
        nth: 3,
    });
    assert!(!delivered, "nothing is delivered before the fast-forward");
}

#[test]
fn killed_during_the_fast_forward() {
    let delivered = kill_and_recover(Point::Merging);
    assert!(delivered, "a fast-forward that started completes");
}

#[test]
fn killed_right_after_the_fast_forward() {
    let delivered = kill_and_recover(Point::BranchMoved);
    assert!(delivered, "a fast-forward that started completes");
}

#[test]
fn sigterm_during_the_judges_pytest_stops_the_run_and_every_tool() {
    let scene = Scene::new();
    let before = scene.user_state();
    let mut child = scene.spawn();
    let point = Point::Tool {
        needle: "-m pytest",
        nth: 2,
    };
    let status = signal_at(&scene, &mut child, point, libc::SIGTERM).expect("stopped mid-run");
    assert_eq!(status.code(), Some(130), "{status}");
    assert!(
        procs::wait_until(Duration::from_secs(10), || scene.run_processes().is_empty()),
        "processes of the run survived SIGTERM: {:#?}",
        scene.run_processes()
    );
    assert!(
        scene.run_worktrees().is_empty(),
        "{:?}",
        scene.run_worktrees()
    );
    assert_eq!(scene.user_state(), before);
}
