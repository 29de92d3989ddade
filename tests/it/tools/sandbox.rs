//! The sandbox against hostile code under test: a `conftest.py` and tests
//! that try every attack, run through real pytest; what they record and
//! what is left on disk shows each attack failed. Runs that need secrets in
//! swarm's own environment, or a SIGKILL of "swarm", happen in a child
//! process of this test binary.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use swarm::cancel::Cancel;
use swarm::tools::*;

use crate::support::fixture::{copy_tree, fixture_dir, fixture_target};
use crate::support::*;

const SECRETS: [(&str, &str); 3] = [
    ("OPENAI_API_KEY", "sk-sandbox-test-openai"),
    ("AWS_SECRET_ACCESS_KEY", "sandbox-test-aws-secret"),
    ("DB_PASSWORD", "sandbox-test-db-password"),
];

const GIB: u64 = 1 << 30;

/// Runs one `#[ignore]`d test of this file in a child process with `env`.
fn run_child(test: &str, env: &[(&str, &OsStr)]) {
    let output = child_command(test, env)
        .output()
        .expect("run the child test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "child {test} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn child_command(test: &str, env: &[(&str, &OsStr)]) -> Command {
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
    command
}

/// The module-level part of the attack: it runs while pytest collects.
const HOSTILE_CONFTEST: &str = r#"
import json, os, time

HERE = os.path.dirname(os.path.abspath(__file__))
os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
with open(os.path.join(HERE, "results", "conftest_env.json"), "w") as handle:
    json.dump(dict(os.environ), handle)

# A daemon that leaves the process group and the session (double fork + setsid).
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(os.path.join(HERE, "daemon.pid.tmp"), "w") as handle:
            handle.write(os.readlink("/proc/self"))
        os.rename(os.path.join(HERE, "daemon.pid.tmp"), os.path.join(HERE, "daemon.pid"))
        time.sleep(300)
    os._exit(0)
for _ in range(200):
    if os.path.exists(os.path.join(HERE, "daemon.pid")):
        break
    time.sleep(0.02)
"#;

/// Each test tries one kind of attack and records what happened.
const HOSTILE_TESTS: &str = r#"
import json, os, resource, signal, socket, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = json.load(open(os.path.join(HERE, "attack.json")))


def record(name, value):
    with open(os.path.join(HERE, "results", name + ".json"), "w") as handle:
        json.dump(value, handle)


def attempt(action):
    try:
        return {"ok": True, "value": action()}
    except BaseException as err:  # MemoryError, PermissionError, ...
        return {"ok": False, "error": "%s: %s" % (type(err).__name__, err)}


def write(path):
    with open(path, "w") as handle:
        handle.write("written by the code under test")
    return path


def test_environment():
    record("environment", dict(os.environ))


def test_swarm_process():
    pid = open(os.path.join(HERE, "swarm.pid")).read().strip()
    record("swarm_environ", attempt(lambda: open("/proc/%s/environ" % pid, "rb").read().decode("latin-1")))
    record("swarm_mem", attempt(lambda: open("/proc/%s/mem" % pid, "rb").read(1) and "read"))
    record("signal_swarm", attempt(lambda: os.kill(int(pid), signal.SIGCONT)))


def test_network():
    def out():
        socket.create_connection(("127.0.0.1", CONFIG["port"]), timeout=5).close()
        return "connected"

    def loopback():
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        client = socket.create_connection(server.getsockname(), timeout=5)
        conn, _ = server.accept()
        client.sendall(b"hi")
        return conn.recv(2).decode()

    record("connect_out", attempt(out))
    record("loopback", attempt(loopback))


def test_writes():
    record("write_user_repo", attempt(lambda: write(os.path.join(CONFIG["user_repo"], "pwned.txt"))))
    record("write_real_home", attempt(lambda: write(os.path.join(CONFIG["real_home"], CONFIG["marker"]))))
    record("write_worktree", attempt(lambda: write(os.path.join(HERE, "written.txt"))))
    record("write_tmp", attempt(lambda: write(os.path.join(tempfile.gettempdir(), "t.txt"))))
    record("write_home", attempt(lambda: write(os.path.join(os.path.expanduser("~"), "h.txt"))))


def test_reads():
    record("read_secret", attempt(lambda: open(os.path.join(CONFIG["user_repo"], "secret.txt")).read()))
    record("list_real_home", attempt(lambda: os.listdir(CONFIG["real_home"])))


def test_memory():
    record("allocate_6g", attempt(lambda: len(bytearray(6 << 30))))


def test_limits():
    names = ["RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NPROC", "RLIMIT_CPU", "RLIMIT_CORE"]
    record("rlimits", {name: list(resource.getrlimit(getattr(resource, name))) for name in names})
"#;

/// Lays out a worktree with the hostile tests and a sibling "user repo".
struct Attack {
    dir: tempfile::TempDir,
    listener: TcpListener,
    marker: String,
}

impl Attack {
    fn new() -> Self {
        let dir = project(&[
            ("user_repo/secret.txt", "the user's secret"),
            ("work/conftest.py", HOSTILE_CONFTEST),
            ("work/test_attacks.py", HOSTILE_TESTS),
        ]);
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen on loopback");
        listener.set_nonblocking(true).expect("non-blocking");
        let marker = format!(".swarm-sandbox-test-{}", std::process::id());
        let config = serde_json::json!({
            "port": listener.local_addr().expect("address").port(),
            "user_repo": dir.path().join("user_repo"),
            "real_home": real_home(),
            "marker": marker,
        });
        write(&dir.path().join("work"), "attack.json", &config.to_string());
        Attack {
            dir,
            listener,
            marker,
        }
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn result(&self, name: &str) -> Value {
        let path = self.work().join("results").join(format!("{name}.json"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("no result {name} ({e}); the attack did not run"));
        serde_json::from_str(&text).expect("result JSON")
    }

    /// Asserts the attack `name` failed, and returns its error.
    fn failed(&self, name: &str) -> String {
        let result = self.result(name);
        assert_eq!(result["ok"], false, "{name} succeeded: {result}");
        result["error"].as_str().unwrap_or_default().to_string()
    }
}

fn real_home() -> PathBuf {
    PathBuf::from(std::env::var_os("HOME").expect("HOME is set for the tests"))
}

/// The variables pytest itself adds during a test.
fn set_by_pytest(name: &str) -> bool {
    matches!(name, "PYTEST_CURRENT_TEST" | "PYTEST_VERSION")
}

fn allowed_name(name: &str) -> bool {
    matches!(
        name,
        "PATH"
            | "LANG"
            | "LANGUAGE"
            | "TZ"
            | "HOME"
            | "TMPDIR"
            | "TMP"
            | "TEMP"
            | "VIRTUAL_ENV"
            | "PYTHONUSERBASE"
            | "PYTHONDONTWRITEBYTECODE"
            | "PYTHONUNBUFFERED"
            | "PYTHONHASHSEED"
    ) || name.starts_with("LC_")
        || name.starts_with("XDG_")
        || set_by_pytest(name)
}

#[test]
fn hostile_code_under_test_is_contained() {
    let attack = Attack::new();
    let user_repo_before = list_files(&attack.dir.path().join("user_repo"));
    let mut env: Vec<(&str, &OsStr)> = SECRETS.iter().map(|(k, v)| (*k, OsStr::new(*v))).collect();
    let work = attack.work();
    env.push(("SWARM_IT_WORK", work.as_os_str()));
    run_child("tools::sandbox::child_hostile_run", &env);

    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(attack.dir.path().join("report.json")).expect("report"),
    )
    .expect("report JSON");
    for layer in [
        "environment",
        "parent_death",
        "namespaces",
        "landlock",
        "limits",
    ] {
        assert_eq!(report[layer]["state"], "active", "{layer}: {report}");
    }
    let scratch = std::fs::read_to_string(attack.dir.path().join("scratch.txt")).expect("scratch");

    // No secret, in the tests or in the conftest; only allow-listed names.
    for name in ["environment", "conftest_env"] {
        let vars = match attack.result(name) {
            Value::Object(map) => map,
            other => panic!("{name}: {other}"),
        };
        for (key, _) in SECRETS {
            assert!(!vars.contains_key(key), "{key} reached the {name}");
        }
        let extra: Vec<&String> = vars.keys().filter(|k| !allowed_name(k)).collect();
        assert!(extra.is_empty(), "not allow-listed: {extra:?}");
        let home = vars["HOME"].as_str().expect("HOME");
        assert!(home.starts_with(&scratch), "HOME {home} not in {scratch}");
        assert!(vars["TMPDIR"]
            .as_str()
            .expect("TMPDIR")
            .starts_with(&scratch));
    }
    // Nor through /proc: swarm's environment and memory are closed.
    let environ = attack.result("swarm_environ");
    assert!(
        environ["ok"] == false
            || !environ["value"]
                .as_str()
                .unwrap_or_default()
                .contains("sk-sandbox-test-openai"),
        "{environ}"
    );
    attack.failed("swarm_mem");
    attack.failed("signal_swarm");

    // No network out, loopback inside works.
    let error = attack.failed("connect_out");
    assert!(
        error.contains("ConnectionRefused")
            || error.contains("Permission")
            || error.contains("unreachable"),
        "{error}"
    );
    match attack.listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the listener was reached: {other:?}"),
    }
    assert_eq!(attack.result("loopback")["value"], "hi");

    // Writes only in the worktree and the scratch folders.
    let error = attack.failed("write_user_repo");
    assert!(error.starts_with("PermissionError"), "{error}");
    assert_eq!(
        list_files(&attack.dir.path().join("user_repo")),
        user_repo_before
    );
    let planted = real_home().join(&attack.marker);
    let leaked = planted.exists();
    let _ = std::fs::remove_file(&planted);
    assert!(!leaked, "a file was written into the real HOME");
    attack.failed("write_real_home");
    for allowed in ["write_worktree", "write_tmp", "write_home"] {
        assert_eq!(attack.result(allowed)["ok"], true, "{allowed}");
    }
    assert!(attack.work().join("written.txt").exists());

    // Reads outside the allowed roots fail.
    let error = attack.failed("read_secret");
    assert!(error.starts_with("PermissionError"), "{error}");
    attack.failed("list_real_home");

    // Limits.
    let error = attack.failed("allocate_6g");
    assert!(error.starts_with("MemoryError"), "{error}");
    let limits = attack.result("rlimits");
    assert_eq!(limits["RLIMIT_AS"], serde_json::json!([4 * GIB, 4 * GIB]));
    assert_eq!(limits["RLIMIT_FSIZE"], serde_json::json!([GIB, GIB]));
    assert_eq!(limits["RLIMIT_NPROC"], serde_json::json!([1024, 1024]));
    assert_eq!(limits["RLIMIT_CORE"], serde_json::json!([0, 0]));
    assert_eq!(
        limits["RLIMIT_CPU"][0], 121,
        "the 120 s timeout plus one second"
    );

    // The daemon died with pytest.
    let daemon: i32 = std::fs::read_to_string(attack.work().join("daemon.pid"))
        .expect("the daemon started")
        .trim()
        .parse()
        .expect("a pid");
    assert!(
        wait_gone(daemon),
        "the setsid daemon {daemon} outlived pytest"
    );
}

#[test]
#[ignore = "run by hostile_code_under_test_is_contained"]
fn child_hostile_run() {
    let Some(work) = std::env::var_os("SWARM_IT_WORK").map(PathBuf::from) else {
        return;
    };
    // As swarm does at start-up.
    make_undumpable().expect("prctl");
    std::fs::write(work.join("swarm.pid"), std::process::id().to_string()).expect("pid");
    let sandbox = sandbox_for(&work);
    let parent = work.parent().expect("parent");
    std::fs::write(
        parent.join("report.json"),
        serde_json::to_string(sandbox.report()).expect("json"),
    )
    .expect("write report");
    std::fs::write(
        parent.join("scratch.txt"),
        sandbox.scratch().to_string_lossy().as_bytes(),
    )
    .expect("write scratch");
    let run = run_pytest(
        &system_env(),
        &sandbox,
        &work,
        Duration::from_secs(120),
        &Cancel::new(),
    )
    .expect("pytest runs");
    let outcomes: BTreeMap<&str, TestOutcome> = run
        .cases
        .iter()
        .map(|c| (c.id.as_str(), c.outcome))
        .collect();
    assert_eq!(run.cases.len(), 7, "{}", run.output);
    assert!(
        outcomes.values().all(|o| *o == TestOutcome::Passed),
        "{outcomes:?}\n{}",
        run.output
    );
}

/// A test that starts a setsid daemon and a child process, then hangs; each
/// writes its host pid.
const HANGING_TEST: &str = r#"
import os, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))


def publish(name):
    with open(os.path.join(HERE, name + ".tmp"), "w") as handle:
        handle.write(os.readlink("/proc/self"))
    os.rename(os.path.join(HERE, name + ".tmp"), os.path.join(HERE, name))


def test_hangs():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            publish("daemon.pid")
            time.sleep(300)
        os._exit(0)
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "MARKER"])
    publish("pytest.pid")
    while True:
        time.sleep(1)
"#;

/// Waits up to 30 s for the pid files of [`HANGING_TEST`].
fn wait_for_pids(work: &Path) -> Vec<i32> {
    let started = Instant::now();
    loop {
        let pids: Vec<i32> = ["pytest.pid", "daemon.pid"]
            .iter()
            .filter_map(|f| std::fs::read_to_string(work.join(f)).ok())
            .filter_map(|t| t.trim().parse().ok())
            .collect();
        if pids.len() == 2 {
            return pids;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the hanging test did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every process whose command line holds `needle` (the hanging test's sleeper).
fn processes_with(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmdline).contains(needle) && is_alive(pid) {
                found.push(pid);
            }
        }
    }
    found
}

fn hanging_project() -> (tempfile::TempDir, PathBuf) {
    let marker = format!(
        "sandbox-marker-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    );
    let source = HANGING_TEST.replace("MARKER", &marker);
    let dir = project(&[("work/test_hang.py", &source)]);
    let work = dir.path().join("work");
    std::fs::write(dir.path().join("marker.txt"), &marker).expect("marker");
    (dir, work)
}

fn marker_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("marker.txt")).expect("marker")
}

fn assert_all_gone(pids: &[i32], marker: &str) {
    for pid in pids {
        assert!(wait_gone(*pid), "process {pid} outlived its run");
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while !processes_with(marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        processes_with(marker),
        Vec::<i32>::new(),
        "a child of pytest survived"
    );
}

#[test]
fn a_timeout_kills_pytest_its_children_and_its_daemons() {
    let (dir, work) = hanging_project();
    let sandbox = sandbox_for(&work);
    let started = Instant::now();
    let run = run_pytest(
        &system_env(),
        &sandbox,
        &work,
        Duration::from_secs(4),
        &Cancel::new(),
    )
    .expect("a timeout is a value");
    assert!(run.timed_out, "{}", run.output);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_all_gone(&wait_for_pids(&work), &marker_of(dir.path()));
}

#[test]
fn a_cancel_kills_pytest_its_children_and_its_daemons() {
    let (dir, work) = hanging_project();
    let sandbox = sandbox_for(&work);
    let cancel = Cancel::new();
    let flag = cancel.clone();
    let watched = work.clone();
    let canceller = std::thread::spawn(move || {
        let pids = wait_for_pids(&watched);
        flag.cancel();
        pids
    });
    let result = run_pytest(
        &system_env(),
        &sandbox,
        &work,
        Duration::from_secs(120),
        &cancel,
    );
    let pids = canceller.join().expect("canceller");
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    assert_all_gone(&pids, &marker_of(dir.path()));
}

#[test]
fn sigkill_of_swarm_leaves_no_pytest_running() {
    let (dir, work) = hanging_project();
    let mut child = child_command(
        "tools::sandbox::child_run_hanging_pytest",
        &[("SWARM_IT_WORK", work.as_os_str())],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .expect("start the child");
    let pids = wait_for_pids(&work);
    child.kill().expect("SIGKILL the child");
    child.wait().expect("reap the child");
    assert_all_gone(&pids, &marker_of(dir.path()));
}

#[test]
#[ignore = "run by sigkill_of_swarm_leaves_no_pytest_running"]
fn child_run_hanging_pytest() {
    let Some(work) = std::env::var_os("SWARM_IT_WORK").map(PathBuf::from) else {
        return;
    };
    let sandbox = sandbox_for(&work);
    let _ = run_pytest(
        &system_env(),
        &sandbox,
        &work,
        Duration::from_secs(300),
        &Cancel::new(),
    );
}

const PLAIN_TEST: &str = r#"
import json, os, socket

HERE = os.path.dirname(os.path.abspath(__file__))


def test_record():
    config = json.load(open(os.path.join(HERE, "attack.json")))
    try:
        socket.create_connection(("127.0.0.1", config["port"]), timeout=5).close()
        reached = True
    except OSError:
        reached = False
    with open(os.path.join(HERE, "seen.json"), "w") as handle:
        json.dump({"home": os.environ["HOME"], "names": sorted(os.environ), "reached": reached}, handle)
"#;

#[test]
fn no_sandbox_keeps_the_allow_list_and_says_what_is_off() {
    let dir = project(&[("work/test_plain.py", PLAIN_TEST)]);
    let work = dir.path().join("work");
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("address").port();
    write(&work, "attack.json", &format!("{{\"port\": {port}}}"));
    let policy = SandboxPolicy {
        isolate: false,
        ..SandboxPolicy::for_worktree(&work)
    };
    let sandbox = Sandbox::new(policy, &system_env()).expect("sandbox");
    let report = sandbox.report();
    assert_eq!(report.namespaces, LayerState::Disabled);
    assert_eq!(report.landlock, LayerState::Disabled);
    assert_eq!(report.limits, LayerState::Disabled);
    assert!(report.environment.is_active() && report.parent_death.is_active());
    assert_eq!(
        report.shortfalls(),
        [
            "sandbox layer namespaces disabled (--no-sandbox)",
            "sandbox layer landlock disabled (--no-sandbox)",
            "sandbox layer limits disabled (--no-sandbox)",
        ]
    );
    let run = run_pytest(
        &system_env(),
        &sandbox,
        &work,
        Duration::from_secs(60),
        &Cancel::new(),
    )
    .expect("pytest runs");
    assert_eq!(run.exit_code, Some(0), "{}", run.output);
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("seen.json")).expect("seen"))
            .expect("json");
    // Off means off: the network is reachable...
    assert_eq!(seen["reached"], true);
    // ...but the environment is still the allow-list.
    assert!(seen["home"]
        .as_str()
        .expect("home")
        .starts_with(&sandbox.scratch().to_string_lossy().into_owned()));
    for name in seen["names"].as_array().expect("names") {
        let name = name.as_str().expect("name");
        assert!(allowed_name(name), "{name} is not allow-listed");
    }
}

/// The case ids and outcomes of a run, for comparing runs.
fn outcomes(run: &TestRun) -> Vec<(String, TestOutcome)> {
    run.cases
        .iter()
        .map(|c| (c.id.clone(), c.outcome))
        .collect()
}

#[test]
fn fixture_suites_give_the_same_results_inside_the_sandbox() {
    for name in ["single_module", "package", "monorepo_target"] {
        let dir = project(&[]);
        copy_tree(&fixture_dir(name).join("project"), dir.path());
        let target = fixture_target(name);
        let root = if target == "." {
            dir.path().to_path_buf()
        } else {
            dir.path().join(&target)
        };
        let run = |isolate: bool| {
            let policy = SandboxPolicy {
                isolate,
                ..SandboxPolicy::for_worktree(dir.path())
            };
            let sandbox = Sandbox::new(policy, &system_env()).expect("sandbox");
            run_pytest(
                &system_env(),
                &sandbox,
                &root,
                Duration::from_secs(120),
                &Cancel::new(),
            )
            .expect("pytest runs")
        };
        let confined = run(true);
        let open = run(false);
        assert!(!confined.cases.is_empty(), "{name}: {}", confined.output);
        assert_eq!(outcomes(&confined), outcomes(&open), "{name}");
        assert!(
            confined
                .cases
                .iter()
                .any(|c| c.outcome == TestOutcome::Failed),
            "{name}: the fixture's bugs still show"
        );
        // The fixed version passes under the sandbox.
        copy_tree(&fixture_dir(name).join("fixed"), dir.path());
        let fixed = run(true);
        assert_eq!(fixed.exit_code, Some(0), "{name}: {}", fixed.output);
    }
}

#[test]
fn the_no_tests_fixture_checks_imports_the_same_inside_the_sandbox() {
    let dir = project(&[]);
    copy_tree(&fixture_dir("no_tests").join("project"), dir.path());
    let files: Vec<String> = ["helpers.py", "config_loader.py", "watcher.py"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let check = |isolate: bool| {
        let policy = SandboxPolicy {
            isolate,
            ..SandboxPolicy::for_worktree(dir.path())
        };
        let sandbox = Sandbox::new(policy, &system_env()).expect("sandbox");
        check_imports(
            &system_env(),
            &sandbox,
            dir.path(),
            &files,
            Duration::from_secs(5),
            &Cancel::new(),
        )
        .expect("check runs")
    };
    let confined = check(true);
    let open = check(false);
    assert_eq!(confined.compile_errors, open.compile_errors);
    let paths = |c: &ImportCheck| {
        c.import_errors
            .iter()
            .map(|(p, _)| p.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(paths(&confined), paths(&open));
    assert!(!confined.compile_errors.is_empty() || !confined.import_errors.is_empty());
}

#[test]
fn configuration_above_the_worktree_is_neither_read_nor_fatal() {
    let dir = project(&[
        (
            "pyproject.toml",
            "[tool.pytest.ini_options]\naddopts = \"-x --deselect tests/test_ok.py::test_ok\"\n[tool.pylint.main]\ndisable = \"all\"\n",
        ),
        ("setup.cfg", "[tool:pytest]\naddopts = -p no_such_plugin\n"),
        (
            "conftest.py",
            "raise SystemExit('the conftest above the worktree was loaded')\n",
        ),
        ("work/tests/test_ok.py", "def test_ok():\n    assert True\n"),
        ("work/messy.py", "import os\n"),
    ]);
    let work = dir.path().join("work");
    // pytest stops at the worktree by itself, sandbox or not.
    for isolate in [true, false] {
        let policy = SandboxPolicy {
            isolate,
            ..SandboxPolicy::for_worktree(&work)
        };
        let sandbox = Sandbox::new(policy, &system_env()).expect("sandbox");
        let run = run_pytest(
            &system_env(),
            &sandbox,
            &work,
            Duration::from_secs(60),
            &Cancel::new(),
        )
        .expect("pytest runs");
        assert_eq!(run.exit_code, Some(0), "isolate={isolate}: {}", run.output);
        assert_eq!(
            outcomes(&run),
            [("tests/test_ok.py::test_ok".to_string(), TestOutcome::Passed)]
        );
    }
    // pylint looks further up; in the sandbox it cannot read what it finds.
    let report = run_pylint(
        &system_env(),
        &sandbox_for(&work),
        &work,
        &["messy.py".to_string()],
        Duration::from_secs(120),
        &Cancel::new(),
    )
    .expect("pylint runs");
    assert!(
        report.messages.iter().any(|m| m.symbol == "unused-import"),
        "{:?}",
        report.messages
    );
}
