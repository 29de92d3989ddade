//! `cargo bench --bench task`: a directive run (`swarm --task`) end to end —
//! a 300-line module split into a package of three, with the real binary,
//! git, pytest and pylint, and a loopback model that answers the plan, the
//! task's change and "TASK DONE". Reports the model requests, the prompt
//! characters sent and the wall time (median of three runs).
//!
//! Most of the wall time is pytest, pylint and the public-name check; the
//! requests and characters say what a directive costs in model calls.

use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "support/loopback.rs"]
mod loopback;
use loopback::{git, serve, swarm, Seen};

const RUNS: usize = 3;

/// A module of about 300 lines in three groups of ten helpers; the groups.
fn textkit() -> (String, Vec<(String, String)>) {
    let mut parts = Vec::new();
    for (group, body) in [
        ("clean", "return text.strip().lower() + \"{i}\""),
        ("count", "return len(text.split()) * {i}"),
        ("shape", "return text.center({i} + len(text), \"*\")"),
    ] {
        let mut text = String::new();
        for i in 0..10 {
            text.push_str(&format!(
                "\n\ndef {group}_{i}(text):\n    \"\"\"{group} number {i}.\n\n    Kept short on purpose:\n    \
                 each helper does one thing.\n    \"\"\"\n    if not isinstance(text, str):\n        \
                 raise TypeError(\"text must be a str\")\n    {}\n",
                body.replace("{i}", &i.to_string())
            ));
        }
        parts.push((group.to_string(), text));
    }
    let module = format!(
        "\"\"\"Text helpers.\"\"\"\n{}",
        parts.iter().map(|(_, t)| t.as_str()).collect::<String>()
    );
    (module, parts)
}

fn diff(path: &str, before: Option<&str>, after: Option<&str>) -> String {
    let old = before.map_or("/dev/null".to_string(), |_| format!("a/{path}"));
    let new = after.map_or("/dev/null".to_string(), |_| format!("b/{path}"));
    let body = similar::TextDiff::from_lines(before.unwrap_or(""), after.unwrap_or(""))
        .unified_diff()
        .context_radius(3)
        .header(&old, &new)
        .to_string();
    format!("```diff\n{body}```\n")
}

/// The split as one reply: the module deleted, three modules and the
/// package's `__init__.py` created.
fn split_reply(module: &str, parts: &[(String, String)]) -> String {
    let mut reply = String::from("Split it.\n");
    reply.push_str(&diff("textkit.py", Some(module), None));
    let mut init = String::from("\"\"\"Text helpers.\"\"\"\n");
    let mut names = Vec::new();
    for (group, text) in parts {
        let file = format!("\"\"\"Text helpers: {group}.\"\"\"\n{text}");
        reply.push_str(&diff(&format!("textkit/{group}.py"), None, Some(&file)));
        let group_names: Vec<String> = (0..10).map(|i| format!("{group}_{i}")).collect();
        init.push_str(&format!(
            "from textkit.{group} import {}\n",
            group_names.join(", ")
        ));
        names.extend(group_names);
    }
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    init.push_str(&format!("\n__all__ = [{}]\n", quoted.join(", ")));
    reply.push_str(&diff("textkit/__init__.py", None, Some(&init)));
    reply
}

const PLAN: &str = "```json\n{\"tasks\": [{\"title\": \"Split textkit into a package\", \"kind\": \
    \"preserving\", \"delete\": [\"textkit.py\"], \"create\": [\"textkit/__init__.py\", \
    \"textkit/clean.py\", \"textkit/count.py\", \"textkit/shape.py\"]}]}\n```\n";

/// One directive run on a fresh repository: (wall time, requests, prompt characters).
fn run_once(module: &str, split: &str) -> (Duration, usize, usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (repo, home) = (dir.path().join("repo"), dir.path().join("home"));
    std::fs::create_dir_all(repo.join("tests")).expect("create the repository");
    std::fs::create_dir_all(&home).expect("create home");
    std::fs::write(repo.join("textkit.py"), module).expect("write the module");
    std::fs::write(
        repo.join("tests/test_textkit.py"),
        "from textkit import clean_3, count_2\n\n\ndef test_helpers():\n    \
         assert clean_3(' A ') == 'a3'\n    assert count_2('a b') == 4\n",
    )
    .expect("write the test");
    git(&repo, &home, &["init", "--quiet", "--initial-branch=main"]);
    git(&repo, &home, &["config", "user.name", "Bench"]);
    git(&repo, &home, &["config", "user.email", "bench@example.com"]);
    git(&repo, &home, &["add", "-A"]);
    git(&repo, &home, &["commit", "--quiet", "-m", "baseline"]);
    let seen = Arc::new(Seen::default());
    let split = split.to_string();
    let answer = move |first_user: &str| {
        if first_user.starts_with("Plan the user's") {
            PLAN.to_string()
        } else if first_user.contains("`textkit/__init__.py` does not exist yet") {
            split.clone()
        } else {
            "TASK DONE".to_string()
        }
    };
    let base = serve(answer, Arc::clone(&seen));
    let started = Instant::now();
    let out = swarm(&repo, &home, &base)
        .args([
            "--target_dir",
            ".",
            "--no-preflight",
            "--max-iterations",
            "4",
            "-q",
        ])
        .args([
            "--task",
            "split textkit.py into a package with one module per kind of helper",
        ])
        .output()
        .expect("swarm runs");
    let wall = started.elapsed();
    assert!(
        out.status.success(),
        "swarm --task failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        repo.join("textkit/clean.py").is_file(),
        "the split was not delivered"
    );
    let (requests, chars) = seen.counts();
    (wall, requests, chars)
}

fn main() {
    let (module, parts) = textkit();
    let split = split_reply(&module, &parts);
    let mut runs: Vec<(Duration, usize, usize)> =
        (0..RUNS).map(|_| run_once(&module, &split)).collect();
    runs.sort();
    let (median, requests, chars) = runs[RUNS / 2];
    println!(
        "directive run: split a {}-line module into a package of three",
        module.lines().count()
    );
    println!(
        "  requests: {requests}   prompt characters: {chars}   wall: median {:.2}s, min {:.2}s ({RUNS} runs)",
        median.as_secs_f64(),
        runs[0].0.as_secs_f64()
    );
}
