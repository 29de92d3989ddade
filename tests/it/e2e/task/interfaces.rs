//! The ways in: `--task`, `--task-file`, `SWARM_TASK`, `swarm hook` and the
//! GitHub Action's step; an empty or oversized instruction is refused
//! (exit 1) before any model is asked.

use std::path::{Path, PathBuf};

use super::cases::{shop, CART, CART_AFTER, INSTRUCTION, MONEY, MOVE_PLAN};
use super::{diff, model, task_trailers};
use crate::e2e::{run_openai, FAKE_KEY};
use crate::support::fixture::{swarm_in, PROVIDER_ENV};
use crate::support::llm_server::LlmServer;

fn move_model() -> LlmServer {
    model(MOVE_PLAN.into(), |_, prompt| {
        if prompt.contains("`shop/money.py` does not exist yet") {
            format!(
                "Move it.\n{}{}",
                diff("shop/money.py", None, Some(MONEY)),
                diff("shop/cart.py", Some(CART), Some(CART_AFTER))
            )
        } else {
            "TASK DONE".into()
        }
    })
}

#[test]
fn an_empty_or_oversized_instruction_is_refused_before_any_model_call() {
    let fx = shop();
    let server = move_model();
    let task_file = fx.repo.tmp().join("task.txt");
    std::fs::write(&task_file, "   \n\n").unwrap();
    let oversized = "split the module ".repeat(1_000);
    for args in [
        vec!["--task", "  "],
        vec!["--task", oversized.as_str()],
        vec!["--task-file", task_file.to_str().unwrap()],
        vec!["--task-file", "no-such-file.txt"],
    ] {
        let out = run_openai(&fx, &server, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("task"), "{args:?}: {stderr}");
    }
    // SWARM_TASK is the flag's variable.
    let base = format!("{}/v1", server.base_url());
    let target = fx.target.to_string_lossy().into_owned();
    let out = fx.swarm(
        &["--target_dir", &target],
        &[
            ("OPENAI_API_KEY", FAKE_KEY),
            ("OPENAI_BASE_URL", &base),
            ("SWARM_TASK", ""),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(server.requests().is_empty(), "a model was asked");
}

#[test]
fn the_instruction_comes_from_a_file_or_swarm_task() {
    let fx = shop();
    let start = fx.repo.head();
    let server = move_model();
    let base = format!("{}/v1", server.base_url());
    let target = fx.target.to_string_lossy().into_owned();
    let out = fx.swarm(
        &["--target_dir", &target, "--json", "--max-iterations", "4"],
        &[
            ("OPENAI_API_KEY", FAKE_KEY),
            ("OPENAI_BASE_URL", &base),
            ("SWARM_TASK", INSTRUCTION),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(task_trailers(&fx, &start).len(), 1);
    assert!(
        stderr.contains("task 1/1 Move parse_money into shop/money.py: done"),
        "{stderr}"
    );
}

#[test]
fn swarm_hook_takes_a_task_as_a_dry_run() {
    let fx = shop();
    let start = fx.repo.head();
    let server = move_model();
    let base = format!("{}/v1", server.base_url());
    let out = swarm_in(
        &fx.repo.root,
        &fx.repo.home,
        &["hook", "--task", INSTRUCTION, "--max-iterations", "4"],
        &[("OPENAI_API_KEY", FAKE_KEY), ("OPENAI_BASE_URL", &base)],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // A hook never moves the branch: the task waits on the run branch.
    assert_eq!(fx.repo.head(), start);
    let branches = fx.repo.git(&[
        "for-each-ref",
        "--format=%(refname:short)",
        "refs/heads/swarm/",
    ]);
    let best = branches
        .lines()
        .find(|b| b.ends_with("/best"))
        .unwrap_or_else(|| panic!("no run branch: {branches}\n{stderr}"));
    let trailer = fx.repo.git(&[
        "log",
        "-1",
        "--format=%(trailers:key=Swarm-Task,valueonly)",
        best,
    ]);
    assert_eq!(trailer.trim(), "1/1 Move parse_money into shop/money.py");
}

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_action_step_passes_the_task_input_and_lists_the_tasks() {
    let action = std::fs::read_to_string(project_root().join("action.yml")).unwrap();
    assert!(
        action.contains("SWARM_ACTION_TASK: ${{ inputs.task }}"),
        "{action}"
    );
    let fx = shop();
    let server = move_model();
    let base = format!("{}/v1", server.base_url());
    let summary = fx.repo.tmp().join("step-summary.md");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_swarm")).parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut step = std::process::Command::new("bash");
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("SWARM_") {
            step.env_remove(name);
        }
    }
    for name in PROVIDER_ENV {
        step.env_remove(name);
    }
    let out = step
        .arg(project_root().join("hooks/action.sh"))
        .current_dir(&fx.repo.root)
        .env("HOME", &fx.repo.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("SWARM_CACHE_DIR", fx.repo.home.join(".cache/swarm"))
        .env("OPENAI_API_KEY", FAKE_KEY)
        .env("OPENAI_BASE_URL", &base)
        .env("PATH", path)
        .env("SWARM_ACTION_TASK", INSTRUCTION)
        .env("SWARM_ACTION_ARGS", "--max-iterations 4")
        .env("SWARM_ACTION_PUSH", "false")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(
        text.contains("| 1. Move parse_money into shop/money.py | done |"),
        "{text}"
    );
}
