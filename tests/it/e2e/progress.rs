//! Progress on stderr, as a user watching a run sees it: a model request
//! that has not answered yet is on screen while it waits, a retry says its
//! reason and its wait, `-q` shows only the summary, `-v` shows each tool
//! command with its time, and on a terminal (a real pty, through util-linux
//! `script`) spinners are drawn, without colour under `NO_COLOR`.
//!
//! Timing is never asserted: the model holds its fix reply until the test
//! has seen the "asking" line (or a generous minute has passed, which then
//! fails the test).

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::{summary_of, FAKE_KEY};
use crate::support::fixture::{good_model_reply, prompt_of, swarm_command, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};

const ASKING_FIX: &str = "for a fix to stats.py";

/// A flag the model waits on and stderr's reader raises.
#[derive(Clone, Default)]
struct Seen(Arc<(Mutex<bool>, Condvar)>);

impl Seen {
    fn raise(&self) {
        *self.0 .0.lock().unwrap() = true;
        self.0 .1.notify_all();
    }

    /// Waits until raised (or `limit` passed); whether it was.
    fn wait(&self, limit: Duration) -> bool {
        let (lock, cond) = &*self.0;
        let guard = lock.lock().unwrap();
        let (guard, _) = cond
            .wait_timeout_while(guard, limit, |seen| !*seen)
            .unwrap();
        *guard
    }
}

/// A good single_module model whose first plan request gets a 503 and
/// whose fix replies wait until `seen` is raised (at most a minute).
fn held_model(seen: &Seen) -> LlmServer {
    let seen = seen.clone();
    LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        if req.index == 0 {
            return Reply::html(503, "Service Unavailable");
        }
        if !prompt.starts_with("Write a refactoring plan") {
            // Unanswered until the user has been told about the request.
            let told = seen.wait(Duration::from_secs(60));
            let text = good_model_reply("single_module", "", &prompt);
            let reply = Reply::text_for(req, &text);
            return if told {
                reply
            } else {
                Reply::text_for(req, "too late")
            };
        }
        Reply::text_for(req, &good_model_reply("single_module", "", &prompt))
    })
}

fn swarm_args(fx: &FixtureRepo, server: &LlmServer, extra: &[&str]) -> Command {
    let base = format!("{}/v1", server.base_url());
    let target = fx.target.to_string_lossy().into_owned();
    let mut args = vec!["--target_dir", target.as_str(), "--json"];
    args.extend_from_slice(extra);
    let cwd = fx.repo.tmp().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    swarm_command(
        &cwd,
        &fx.repo.home,
        &args,
        &[("OPENAI_API_KEY", FAKE_KEY), ("OPENAI_BASE_URL", &base)],
    )
}

/// Runs `command`, raising `seen` as soon as a stderr line contains
/// `ASKING_FIX`; the output, with stderr as it came.
fn run_watching(mut command: Command, seen: &Seen) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("swarm starts");
    let stderr = child.stderr.take().unwrap();
    let watcher = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut all = Vec::new();
            for line in BufReader::new(stderr).split(b'\n') {
                let line = line.unwrap_or_default();
                if String::from_utf8_lossy(&line).contains(ASKING_FIX) {
                    seen.raise();
                }
                all.extend_from_slice(&line);
                all.push(b'\n');
            }
            all
        })
    };
    let mut out = child.wait_with_output().expect("swarm ends");
    out.stderr = watcher.join().unwrap();
    out
}

fn assert_delivered(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(summary_of(&out.stdout)["status"], "success", "{stderr}");
    stderr
}

#[test]
fn a_waiting_model_request_and_a_retry_are_on_screen_as_plain_lines() {
    let fx = FixtureRepo::planned("single_module");
    let seen = Seen::default();
    let server = held_model(&seen);
    let out = run_watching(swarm_args(&fx, &server, &[]), &seen);
    // The fix reply was held until the line was read: it was shown while
    // the request waited, and the run then went on with the real reply.
    let stderr = assert_delivered(&out);
    let asking = stderr
        .lines()
        .find(|l| l.contains(ASKING_FIX))
        .expect("the request is shown");
    assert!(
        asking.starts_with("asking ") && asking.ends_with(" ..."),
        "{asking}"
    );
    assert!(
        stderr.contains(&format!("{}: done in ", asking.trim_end_matches(" ..."))),
        "and when it ended, with its time:\n{stderr}"
    );
    let retry = stderr
        .lines()
        .find(|l| l.contains("retry 1/"))
        .unwrap_or_else(|| panic!("no retry line:\n{stderr}"));
    assert!(
        retry.contains(" in ") && retry.contains(" s: HTTP 503"),
        "the retry says its wait and its reason: {retry}"
    );
    for stage in [
        "audit: pytest ...",
        "audit: pylint ...",
        "judging attempt 1 (stats.py): pytest",
    ] {
        assert!(stderr.contains(stage), "{stage} missing:\n{stderr}");
    }
    assert!(
        !stderr.contains('\x1b'),
        "no escape codes off a terminal:\n{stderr}"
    );
}

#[test]
fn quiet_shows_only_the_summary() {
    let fx = FixtureRepo::planned("single_module");
    let seen = Seen::default();
    // Nothing will be shown, so nothing holds the reply for long.
    seen.raise();
    let server = held_model(&seen);
    let out = run_watching(swarm_args(&fx, &server, &["-q"]), &seen);
    let stderr = assert_delivered(&out);
    assert!(!stderr.contains("asking"), "{stderr}");
    assert!(!stderr.contains("retry"), "{stderr}");
    assert!(!stderr.contains("audit:"), "{stderr}");
    assert!(stderr.contains("swarm success"), "{stderr}");
}

#[test]
fn verbose_shows_each_tool_command_with_its_time() {
    let fx = FixtureRepo::planned("single_module");
    let seen = Seen::default();
    seen.raise();
    let server = held_model(&seen);
    let out = run_watching(swarm_args(&fx, &server, &["-v"]), &seen);
    let stderr = assert_delivered(&out);
    let pytest =
        regex::Regex::new(r"ran \S*python\S* .*-m pytest .* in \d+\.\d s \(exit \d+\)").unwrap();
    assert!(pytest.is_match(&stderr), "{stderr}");
    let git = regex::Regex::new(r"ran git \S+.* in \d+\.\d s").unwrap();
    assert!(git.is_match(&stderr), "{stderr}");
}

/// `command` run under a pseudo-terminal (util-linux `script`), with its
/// environment and `TERM=xterm`; everything it wrote to the terminal.
fn under_pty(command: &Command, no_color: bool) -> (Option<i32>, String) {
    let quote = |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', r"'\''"));
    let line: Vec<String> = std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(quote)
        .collect();
    let mut script = Command::new("script");
    script
        .args(["-qec", &line.join(" "), "/dev/null"])
        .current_dir(command.get_current_dir().unwrap())
        .env("TERM", "xterm")
        .stdin(Stdio::null());
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => script.env(name, value),
            None => script.env_remove(name),
        };
    }
    if no_color {
        script.env("NO_COLOR", "1");
    } else {
        script.env_remove("NO_COLOR");
    }
    let out = script.output().expect("util-linux `script` runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// A model whose fix reply takes two seconds, for the spinner to turn.
fn slow_fix_model() -> LlmServer {
    LlmServer::start(|req| {
        let prompt = prompt_of(req);
        let reply = Reply::text_for(req, &good_model_reply("single_module", "", &prompt));
        if prompt.starts_with("Write a refactoring plan") {
            reply
        } else {
            reply.with_delay(Duration::from_secs(2))
        }
    })
}

const SPINNER: &[char] = &[
    '⠁', '⠂', '⠄', '⡀', '⢀', '⠠', '⠐', '⠈', '⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏',
];

fn colour_codes(text: &str) -> Vec<String> {
    regex::Regex::new(r"\x1b\[[0-9;]*m")
        .unwrap()
        .find_iter(text)
        .map(|m| m.as_str().to_string())
        .collect()
}

#[test]
fn on_a_terminal_spinners_show_the_step_and_its_time_in_colour_unless_no_color() {
    let elapsed = regex::Regex::new(r"\d+\.\d s").unwrap();
    for no_color in [false, true] {
        let fx = FixtureRepo::planned("single_module");
        let server = slow_fix_model();
        let (code, screen) = under_pty(&swarm_args(&fx, &server, &[]), no_color);
        assert_eq!(code, Some(0), "{screen}");
        let spinner = screen
            .split(['\r', '\n'])
            .find(|l| l.contains(ASKING_FIX) && l.contains(SPINNER))
            .unwrap_or_else(|| panic!("no spinner for the request:\n{screen:?}"));
        assert!(
            elapsed.is_match(spinner),
            "with its elapsed time: {spinner:?}"
        );
        assert!(
            !screen.contains(&format!("{ASKING_FIX} (file 1 of 1) ...")),
            "no plain lines on a terminal"
        );
        assert!(screen.contains("swarm success"), "{screen}");
        let colours = colour_codes(&screen);
        if no_color {
            assert!(colours.is_empty(), "NO_COLOR, yet {colours:?}");
        } else {
            assert!(!colours.is_empty(), "a terminal in colour");
        }
    }
}
