//! The process runner with fake scripts: timeouts and cancels kill the whole
//! process group, the environment is scrubbed, output is capped.

use std::time::{Duration, Instant};

use swarm::cancel::Cancel;
use swarm::tools::*;

use crate::support::*;

#[test]
fn timeout_kills_the_whole_process_group() {
    let dir = project(&[]);
    let pids = dir.path().join("pids");
    let fake = script(
        dir.path(),
        "spawner.sh",
        &format!(
            "#!/bin/sh\nsleep 1000 &\necho $$ > {p}.parent\necho $! > {p}.child\nsleep 1000\n",
            p = pids.display()
        ),
    );
    let started = Instant::now();
    let out = ProcessBuilder::new(&fake)
        .timeout(Duration::from_millis(700))
        .run(&Cancel::new())
        .expect("the script starts");
    let elapsed = started.elapsed();
    assert_eq!(out.ending, Ending::TimedOut);
    assert_eq!(out.exit_code(), None);
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    let read_pid = |suffix: &str| -> i32 {
        std::fs::read_to_string(format!("{}.{suffix}", pids.display()))
            .expect("the script wrote its pids")
            .trim()
            .parse()
            .expect("a pid")
    };
    let (parent, grandchild) = (read_pid("parent"), read_pid("child"));
    assert!(wait_gone(parent), "the script {parent} is still alive");
    assert!(
        wait_gone(grandchild),
        "the background sleep {grandchild} is still alive"
    );
}

#[test]
fn cancel_stops_a_running_process_quickly() {
    let cancel = Cancel::new();
    let flag = cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        flag.cancel();
    });
    let started = Instant::now();
    let out = ProcessBuilder::new("sleep")
        .arg("30")
        .run(&cancel)
        .expect("sleep starts");
    canceller.join().expect("canceller thread");
    assert_eq!(out.ending, Ending::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn background_children_left_behind_are_killed_at_exit() {
    let dir = project(&[]);
    let pid_file = dir.path().join("bg.pid");
    let fake = script(
        dir.path(),
        "leaver.sh",
        &format!(
            "#!/bin/sh\nsleep 1000 &\necho $! > {}\necho done\nexit 3\n",
            pid_file.display()
        ),
    );
    let started = Instant::now();
    let out = ProcessBuilder::new(&fake)
        .timeout(Duration::from_secs(30))
        .run(&Cancel::new())
        .expect("the script starts");
    assert_eq!(out.ending, Ending::Exited(3));
    assert_eq!(out.stdout.trim(), "done");
    // The background sleep held stdout open; the run must not wait for it.
    assert!(started.elapsed() < Duration::from_secs(5));
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("pid written")
        .trim()
        .parse()
        .expect("a pid");
    assert!(wait_gone(pid), "background child {pid} survived");
}

#[test]
fn environment_is_scrubbed_and_python_is_made_deterministic() {
    let base = [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("OPENAI_API_KEY", "sk-secret".to_string()),
        ("GOOGLE_API_KEY", "g-secret".to_string()),
        ("GITHUB_TOKEN", "gh-secret".to_string()),
        ("OPENAI_BASE_URL", "http://127.0.0.1:1".to_string()),
        ("GIT_DIR", "/elsewhere/.git".to_string()),
        ("GIT_INDEX_FILE", "/elsewhere/index".to_string()),
        ("KEEP_ME", "kept".to_string()),
    ];
    let out = ProcessBuilder::new("env")
        .base_env(base.iter().map(|(k, v)| (*k, v.as_str())))
        .run(&Cancel::new())
        .expect("env runs");
    assert_eq!(out.ending, Ending::Exited(0));
    let vars: Vec<&str> = out.stdout.lines().collect();
    assert!(vars.contains(&"KEEP_ME=kept"));
    assert!(vars.contains(&"PYTHONDONTWRITEBYTECODE=1"));
    assert!(vars.contains(&"PYTHONUNBUFFERED=1"));
    assert!(vars.contains(&"PYTHONHASHSEED=0"));
    assert!(!out.stdout.contains("secret"), "{}", out.stdout);
    for name in ["OPENAI_BASE_URL=", "GIT_DIR=", "GIT_INDEX_FILE="] {
        assert!(!out.stdout.contains(name), "{name} leaked");
    }
}

#[test]
fn large_output_on_both_streams_is_capped_without_deadlock() {
    let code = "import sys\nfor i in range(20000):\n    sys.stdout.write('out %06d\\n' % i)\n    sys.stderr.write('err %06d\\n' % i)\n";
    let out = ProcessBuilder::new("python3")
        .args(["-c", code])
        .output_cap(4096)
        .timeout(Duration::from_secs(60))
        .run(&Cancel::new())
        .expect("python runs");
    assert_eq!(out.ending, Ending::Exited(0));
    // 20000 lines of 11 bytes: head and tail kept, the middle counted.
    assert!(out.stdout.starts_with("out 000000\n"));
    assert!(out.stdout.ends_with("out 019999\n"));
    assert!(out
        .stdout
        .contains(&format!("… {} bytes cut …", 220_000 - 4096)));
    assert!(out.stderr.ends_with("err 019999\n"));
    assert!(out.stdout.len() < 4096 + 64);
}

#[test]
fn a_missing_program_is_a_spawn_error() {
    let err = ProcessBuilder::new("/nonexistent/python")
        .arg("-V")
        .run(&Cancel::new())
        .expect_err("cannot start");
    assert!(matches!(err, ProcessError::Spawn { .. }));
    assert!(err.to_string().contains("/nonexistent/python -V"));
}
