//! Code under test runs with little power: a hostile test in the target
//! tries to steal swarm's key and other secrets, to reach the network, to
//! write into the user's files and HOME, to leave a daemon behind and to
//! allocate gigabytes, during a real run of the real binary. Each attempt
//! must fail, and what it reports lands in the experiment log (pytest's
//! output), where the test reads it.

use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use super::FAKE_KEY;
use crate::support::fixture::{good_model, FixtureRepo};
use crate::support::llm_server::LlmServer;
use crate::support::procs;

/// A secret that is not an API key: only the sandbox keeps it from the test.
const DB_PASSWORD: &str = "hunter2-db-Zq81x";
/// A cloud credential, likewise.
const AWS_SECRET: &str = "aws-SECRET-kQ93nB";

/// The probe: every attack, each result a line `name: outcome`; the test
/// fails with the whole report so it reaches pytest's output.
const PROBE: &str = r#"""""Probes what code under test can do."""
import json
import os
import socket
import subprocess


def attempt(name, action, report):
    try:
        report.append("%s: done %s" % (name, action()))
    except BaseException as err:  # noqa: BLE001 - the probe reports everything
        report.append("%s: refused %s" % (name, type(err).__name__))


def read_swarm_environ():
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if b"--target_dir" in cmdline:
            with open("/proc/%s/environ" % pid, "rb") as handle:
                found.append(handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip())
    # Print what was read, so a leak would show in the log.
    return json.dumps(found)


def write(path):
    with open(path, "w") as handle:
        handle.write("owned")
    return path


def connect():
    with socket.create_connection(("127.0.0.1", {port}), timeout=2) as conn:
        conn.sendall(b"hello from the code under test")
    return "connected"


def allocate():
    block = bytearray(6 * 1024 ** 3)
    return len(block)


def test_probe():
    """Tries what a hostile test would."""
    report = ["env: " + " ".join(sorted(os.environ))]
    report.append("values: " + " ".join(os.environ.values()))
    attempt("environ", read_swarm_environ, report)
    attempt("network", connect, report)
    attempt("repo", lambda: write("{repo}/owned.txt"), report)
    attempt("home", lambda: write("{home}/owned.txt"), report)
    attempt("secret", lambda: open("{secret}").read(), report)
    attempt("memory", allocate, report)
    subprocess.Popen(["sleep", "{mark}"], start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report.append("home is " + os.environ.get("HOME", "unset"))
    # The markers are built at run time so pytest's echo of this line
    # cannot be mistaken for the report.
    assert False, "\n".join(["PROBE-" + "REPORT"] + report + ["END-" + "REPORT"])
"#;

#[test]
fn a_hostile_test_can_neither_steal_nor_reach_out_nor_write_nor_linger() {
    let fx = FixtureRepo::new("single_module");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let secret_dir = fx.repo.tmp().join("secrets");
    std::fs::create_dir_all(&secret_dir).unwrap();
    let secret_file = secret_dir.join("credentials");
    std::fs::write(&secret_file, "aws_secret_access_key = FILE-SECRET-7731\n").unwrap();
    let mark = format!(
        "8{}.{}",
        fastrand::u32(10_000..99_999),
        fastrand::u16(100..999)
    );
    let probe = PROBE
        .replace("{port}", &port.to_string())
        .replace("{repo}", &fx.repo.root.to_string_lossy())
        .replace("{home}", &fx.repo.home.to_string_lossy())
        .replace("{secret}", &secret_file.to_string_lossy())
        .replace("{mark}", &mark);
    fx.repo.write("test_probe.py", &probe);
    fx.repo.commit_all("a hostile test");

    let server = LlmServer::start(good_model("single_module", &fx.target_rel));
    let base = format!("{}/v1", server.base_url());
    let target = fx.target.to_string_lossy().into_owned();
    let out = fx.swarm(
        &["--target_dir", &target, "--json", "--max-iterations", "1"],
        &[
            ("OPENAI_API_KEY", FAKE_KEY),
            ("OPENAI_BASE_URL", &base),
            ("DB_PASSWORD", DB_PASSWORD),
            ("AWS_SECRET_ACCESS_KEY", AWS_SECRET),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The probe always fails, so the run cannot be green.
    assert_eq!(out.status.code(), Some(4), "{stderr}");

    // What the probe saw, from the log.
    let log = std::fs::read_to_string(fx.repo.tmp().join("cwd/logs/experiment_data.json")).unwrap();
    let entries: Vec<serde_json::Value> = serde_json::from_str(&log).unwrap();
    let outputs: Vec<&str> = entries
        .iter()
        .filter(|e| e["details"]["tool"] == "pytest")
        .filter_map(|e| e["details"]["output_response"].as_str())
        .collect();
    let report = outputs
        .iter()
        .find_map(|o| {
            let start = o.find("PROBE-REPORT")?;
            let end = o[start..].find("END-REPORT")? + start;
            Some(&o[start..end])
        })
        .unwrap_or_else(|| panic!("no probe report in the log: {outputs:?}"));
    let line = |name: &str| {
        report
            .lines()
            .find(|l| {
                l.trim_start_matches(['E', ' '])
                    .starts_with(&format!("{name}: "))
            })
            .unwrap_or_else(|| panic!("no {name} line in {report}"))
            .to_string()
    };
    for secret in [FAKE_KEY, DB_PASSWORD, AWS_SECRET, "FILE-SECRET-7731"] {
        assert!(!log.contains(secret), "{secret} reached the log:\n{report}");
    }
    assert!(!line("env").contains("API_KEY"), "{report}");
    let environ = line("environ");
    assert!(
        environ.contains("refused") || !environ.contains("OPENAI"),
        "{environ}"
    );
    for name in ["network", "repo", "home", "secret", "memory"] {
        assert!(line(name).contains("refused"), "{name}: {report}");
    }
    // HOME is the process's scratch cell beside the run's worktree, never
    // the user's own.
    let home = report
        .lines()
        .find_map(|l| l.split_once("home is ").map(|(_, h)| h.trim()))
        .expect("a home line");
    assert_ne!(home, fx.repo.home.to_string_lossy(), "{report}");
    assert!(home.contains(".scratch/"), "{report}");

    // And on the machine: nothing written, nobody connected, no daemon left.
    assert!(!fx.repo.root.join("owned.txt").exists());
    assert!(!fx.repo.home.join("owned.txt").exists());
    let mut accepted = String::new();
    if let Ok((mut conn, _)) = listener.accept() {
        let _ = conn.read_to_string(&mut accepted);
        panic!("the code under test connected: {accepted:?}");
    }
    assert!(
        procs::wait_until(Duration::from_secs(5), || procs::with_cmdline(&mark)
            .is_empty()),
        "the test's daemon outlived the run: {:?}",
        procs::with_cmdline(&mark)
    );
}

/// Runs swarm in a user namespace that may not create further ones, as in
/// a container without unprivileged user namespaces.
fn run_without_user_namespaces(fx: &FixtureRepo, server: &LlmServer) -> std::process::Output {
    let base = format!("{}/v1", server.base_url());
    let target = fx.target.to_string_lossy().into_owned();
    let cwd = fx.repo.tmp().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let script = "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"";
    let command = crate::support::fixture::swarm_command(
        &cwd,
        &fx.repo.home,
        &[],
        &[("OPENAI_API_KEY", FAKE_KEY), ("OPENAI_BASE_URL", &base)],
    );
    let swarm = command.get_program().to_os_string();
    let mut unshare = std::process::Command::new("unshare");
    unshare
        .args(["--user", "--map-root-user", "sh", "-c", script, "sh"])
        .arg(swarm)
        .args(["--target_dir", &target, "--json"])
        .current_dir(&cwd);
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => unshare.env(key, value),
            None => unshare.env_remove(key),
        };
    }
    unshare.output().expect("unshare runs")
}

#[test]
fn a_layer_the_kernel_refuses_is_said_in_the_summary_and_the_log_and_the_rest_still_holds() {
    let fx = FixtureRepo::new("single_module");
    let start = fx.repo.head();
    let server = LlmServer::start(good_model("single_module", &fx.target_rel));
    let out = run_without_user_namespaces(&fx, &server);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_ne!(fx.repo.head(), start, "the fix was delivered");

    // Said once as a notice, and in the summary.
    let said = stderr
        .lines()
        .filter(|l| l.contains("namespaces unavailable"))
        .count();
    assert_eq!(said, 2, "one notice and one summary line:\n{stderr}");
    assert!(
        stderr.contains("  safety:   sandbox layer namespaces unavailable"),
        "{stderr}"
    );
    let summary = super::summary_of(&out.stdout);
    let safety = &summary["safety"];
    assert_eq!(
        safety["sandbox"]["namespaces"]["state"], "unavailable",
        "{safety}"
    );
    assert_eq!(safety["sandbox"]["landlock"]["state"], "active", "{safety}");
    assert_eq!(
        safety["sandbox"]["environment"]["state"], "active",
        "{safety}"
    );
    assert_eq!(safety["non_dumpable"], true);
    assert_eq!(safety["environ_cleared"], true);
    let shortfalls: Vec<&str> = safety["shortfalls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(shortfalls.len(), 1, "{shortfalls:?}");

    // And in the log, once.
    let log = fx.log();
    let entries: Vec<&serde_json::Value> = log
        .iter()
        .filter(|e| e["details"]["kind"] == "safety")
        .collect();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["agent"], "System");
    assert!(
        entries[0]["details"]["output_response"]
            .as_str()
            .unwrap()
            .contains("namespaces unavailable"),
        "{}",
        entries[0]
    );
}

#[test]
fn with_every_layer_the_summary_says_so() {
    let fx = FixtureRepo::new("single_module");
    let server = LlmServer::start(good_model("single_module", &fx.target_rel));
    let out = super::run_openai(&fx, &server, &[]);
    assert_eq!(out.status.code(), Some(0));
    let summary = super::summary_of(&out.stdout);
    assert_eq!(
        summary["safety"]["shortfalls"],
        serde_json::json!([]),
        "{summary}"
    );
    for layer in [
        "environment",
        "parent_death",
        "namespaces",
        "landlock",
        "limits",
    ] {
        assert_eq!(
            summary["safety"]["sandbox"][layer]["state"], "active",
            "{layer}"
        );
    }
    assert!(!String::from_utf8_lossy(&out.stderr).contains("safety:"));
}

#[test]
fn no_sandbox_turns_the_isolating_layers_off_and_says_so() {
    let fx = FixtureRepo::new("single_module");
    let server = LlmServer::start(good_model("single_module", &fx.target_rel));
    let out = super::run_openai(&fx, &server, &["--no-sandbox"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = super::summary_of(&out.stdout);
    for layer in ["namespaces", "landlock", "limits"] {
        assert_eq!(
            summary["safety"]["sandbox"][layer]["state"], "disabled",
            "{layer}"
        );
        assert!(
            stderr.contains(&format!(
                "safety:   sandbox layer {layer} disabled (--no-sandbox)"
            )),
            "{stderr}"
        );
    }
    assert_eq!(
        summary["safety"]["sandbox"]["environment"]["state"],
        "active"
    );
}
