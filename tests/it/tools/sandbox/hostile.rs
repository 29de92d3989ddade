//! A `conftest.py` and tests that try every attack; what they record and
//! what is left on disk shows that each one failed.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use swarm::cancel::Cancel;
use swarm::harden::make_undumpable;
use swarm::tools::*;

use super::{allowed_name, run_child};
use crate::support::*;

const SECRETS: [(&str, &str); 3] = [
    ("OPENAI_API_KEY", "sk-sandbox-test-openai"),
    ("AWS_SECRET_ACCESS_KEY", "sandbox-test-aws-secret"),
    ("DB_PASSWORD", "sandbox-test-db-password"),
];

const GIB: u64 = 1 << 30;

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

#[test]
fn hostile_code_under_test_is_contained() {
    let attack = Attack::new();
    let user_repo_before = list_files(&attack.dir.path().join("user_repo"));
    let mut env: Vec<(&str, &OsStr)> = SECRETS.iter().map(|(k, v)| (*k, OsStr::new(*v))).collect();
    let work = attack.work();
    env.push(("SWARM_IT_WORK", work.as_os_str()));
    run_child("tools::sandbox::hostile::child_hostile_run", &env);

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
        if let Some(path) = vars.get("PYTHONPATH") {
            let path = path.as_str().expect("PYTHONPATH");
            assert!(
                path.starts_with(&scratch) && !path.contains(':'),
                "PYTHONPATH {path} is not swarm's plugin folder in {scratch}"
            );
        }
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
