//! Bad input gets a one-line error that says what to do, and the right exit
//! code; the user's repository is never touched.

use std::path::Path;
use std::process::Output;

use crate::support::fixture::{swarm_in, FixtureRepo};
use crate::support::repo::TestRepo;

fn swarm(repo: &TestRepo, args: &[&str], env: &[(&str, &str)]) -> Output {
    let cwd = repo.tmp().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    swarm_in(&cwd, &repo.home, args, env)
}

/// The error is one line on stderr, starting with `swarm: error:`, and mentions `needle`.
fn assert_one_line_error(out: &Output, code: i32, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line, got: {stderr}");
    assert!(lines[0].starts_with("swarm: error: "), "{stderr}");
    assert!(lines[0].contains(needle), "{needle:?} not in {stderr}");
    assert!(!stderr.contains("panicked"));
}

const KEY: (&str, &str) = ("OPENAI_API_KEY", "sk-test");

#[test]
fn a_missing_folder_is_refused() {
    let repo = TestRepo::empty();
    let missing = repo.tmp().join("nope");
    let out = swarm(&repo, &["--target_dir", missing.to_str().unwrap()], &[KEY]);
    assert_one_line_error(&out, 1, "no such folder");
}

#[test]
fn a_missing_target_flag_is_refused() {
    let repo = TestRepo::empty();
    let out = swarm(&repo, &[], &[KEY]);
    assert_one_line_error(&out, 1, "--target_dir");
}

#[test]
fn a_file_instead_of_a_folder_is_refused() {
    let repo = TestRepo::with_files(&[("a.py", "x = 1\n")]);
    let out = swarm(
        &repo,
        &["--target-dir", repo.root.join("a.py").to_str().unwrap()],
        &[KEY],
    );
    assert_one_line_error(&out, 1, "not a folder");
}

#[test]
fn a_folder_without_source_files_is_refused() {
    let repo = TestRepo::with_files(&[("README.md", "# hi\n"), ("src/main.c", "int main(){}\n")]);
    let before = repo.snapshot();
    let out = swarm(
        &repo,
        &["--target_dir", repo.root.to_str().unwrap()],
        &[KEY],
    );
    assert_one_line_error(
        &out,
        1,
        "no committed Python or JavaScript/TypeScript files",
    );
    assert_eq!(repo.snapshot(), before);
}

#[test]
fn a_bare_repository_is_refused() {
    let repo = TestRepo::empty();
    repo.git(&["init", "--bare", "--quiet"]);
    let out = swarm(
        &repo,
        &["--target_dir", repo.root.to_str().unwrap()],
        &[KEY],
    );
    assert_one_line_error(&out, 1, "bare repository");
}

#[test]
fn a_repository_without_commits_is_refused() {
    let repo = TestRepo::empty();
    repo.git(&["init", "--quiet"]);
    repo.write("a.py", "x = 1\n");
    let out = swarm(
        &repo,
        &["--target_dir", repo.root.to_str().unwrap()],
        &[KEY],
    );
    assert_one_line_error(&out, 1, "no commits");
    assert!(!repo.root.join(".git/swarm").exists());
}

#[test]
fn no_provider_names_the_variables() {
    let fx = FixtureRepo::new("single_module");
    let before = fx.repo.snapshot();
    let out = fx.swarm(&["--target_dir", fx.target.to_str().unwrap()], &[]);
    assert_one_line_error(&out, 1, "OPENAI_API_KEY");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("GEMINI_API_KEY"), "{stderr}");
    assert_eq!(fx.repo.snapshot(), before);
}

#[test]
fn json_errors_carry_the_hints_as_a_list() {
    let fx = FixtureRepo::new("single_module");
    let out = fx.swarm(
        &["--target_dir", fx.target.to_str().unwrap(), "--json"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(json["status"], "error");
    assert_eq!(json["exit_code"], 1);
    let error = json["error"].as_str().expect("error text");
    assert!(
        error.starts_with("no model provider configured; set "),
        "{error}"
    );
    let hints = json["hints"].as_array().expect("hints");
    assert_eq!(hints.len(), 1, "{json}");
    assert!(
        hints[0]
            .as_str()
            .is_some_and(|h| h.contains("ANTHROPIC_API_KEY")),
        "{json}"
    );
}

#[test]
fn unknown_flags_and_bad_values_exit_1() {
    let repo = TestRepo::with_files(&[("a.py", "x = 1\n")]);
    let out = swarm(&repo, &["--target_dir", ".", "--frobnicate"], &[KEY]);
    assert_eq!(out.status.code(), Some(1));
    let out = swarm(
        &repo,
        &[
            "--target_dir",
            repo.root.to_str().unwrap(),
            "--max-iterations",
            "0",
        ],
        &[KEY],
    );
    assert_one_line_error(&out, 1, "max_iterations must be at least 1");
    let out = swarm(
        &repo,
        &[
            "--target_dir",
            repo.root.to_str().unwrap(),
            "--provider",
            "nope",
        ],
        &[KEY],
    );
    assert_one_line_error(&out, 1, "unknown provider");
    let out = swarm(
        &repo,
        &[
            "--target_dir",
            repo.root.to_str().unwrap(),
            "--provider",
            "replay",
        ],
        &[],
    );
    assert_one_line_error(&out, 1, "--cassette");
}

#[test]
fn a_bad_config_file_is_refused() {
    let repo = TestRepo::with_files(&[
        ("a.py", "x = 1\n"),
        (".swarm.toml", "max-iterations = 'many'\n"),
    ]);
    let out = swarm(
        &repo,
        &["--target_dir", repo.root.to_str().unwrap()],
        &[KEY],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // One line that says it all, then toml's excerpt with the caret.
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines[0].starts_with("swarm: error: "), "{stderr}");
    assert!(
        lines[0]
            .contains(".swarm.toml is not a valid swarm config: line 1, column 18: invalid type"),
        "{stderr}"
    );
    assert_eq!(
        &lines[1..],
        [
            "  |",
            "1 | max-iterations = 'many'",
            "  |                  ^^^^^^"
        ],
        "{stderr}"
    );
}

#[test]
fn a_toml_syntax_error_shows_the_line_and_a_caret_under_the_column() {
    let repo = TestRepo::with_files(&[
        ("a.py", "x = 1\n"),
        (
            "pyproject.toml",
            "[project]\nname = 'x'\n[tool.swarm\nmodel = 'm'\n",
        ),
    ]);
    let out = swarm(
        &repo,
        &["config", "--target-dir", repo.root.to_str().unwrap()],
        &[KEY],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines[0]
            .contains("pyproject.toml is not valid TOML: line 3, column 12: invalid table header"),
        "{stderr}"
    );
    assert_eq!(lines.len(), 4, "{stderr}");
    assert_eq!(lines[2], "3 | [tool.swarm");
    assert_eq!(
        lines[3].find('^'),
        lines[2].find("[tool").map(|at| at + "[tool.swarm".len()),
        "{stderr}"
    );
}

#[test]
fn a_mistyped_subcommand_gets_did_you_mean_and_flags_still_run() {
    let repo = TestRepo::with_files(&[("a.py", "x = 1\n")]);
    for (typo, meant) in [
        ("demmo", "demo"),
        ("confg", "config"),
        ("unddo", "undo"),
        ("doctr", "doctor"),
    ] {
        let out = swarm(&repo, &[typo], &[KEY]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!("error: unrecognized subcommand '{typo}'")),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!("tip: a similar subcommand exists: '{meant}'")),
            "{stderr}"
        );
    }
    // The default command still takes its flags without a subcommand.
    let out = swarm(
        &repo,
        &["--target_dir", repo.root.join("nope").to_str().unwrap()],
        &[KEY],
    );
    assert_one_line_error(&out, 1, "no such folder");
}

#[test]
fn config_shows_sources_and_masks_keys() {
    let repo = TestRepo::with_files(&[
        ("a.py", "x = 1\n"),
        (
            "pyproject.toml",
            "[tool.swarm]\nmodel = 'from-file'\njobs = 3\n",
        ),
    ]);
    let out = swarm(
        &repo,
        &[
            "config",
            "--target_dir",
            repo.root.to_str().unwrap(),
            "--max-iterations",
            "4",
        ],
        &[
            ("GEMINI_API_KEY", "AIza-secret-value-9876"),
            ("SWARM_MODEL", "from-env"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains("AIza-secret-value-9876"), "{stdout}");
    assert!(stdout.contains("****9876"), "{stdout}");
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line("provider").contains("gemini") && line("provider").contains("env GEMINI_API_KEY"),
        "{stdout}"
    );
    assert!(
        line("model").contains("from-env") && line("model").contains("env SWARM_MODEL"),
        "{stdout}"
    );
    assert!(
        line("jobs").contains('3') && line("jobs").contains("pyproject.toml"),
        "{stdout}"
    );
    assert!(
        line("max_iterations").contains("flag --max-iterations"),
        "{stdout}"
    );
    assert!(
        line("test_timeout").contains("60") && line("test_timeout").contains("default"),
        "{stdout}"
    );
}

#[test]
fn config_shows_the_sandbox_from_the_file_and_the_flag() {
    let repo = TestRepo::with_files(&[
        ("a.py", "x = 1\n"),
        (
            ".swarm.toml",
            "[sandbox]\nmemory-mb = 2048\nfile-size-mb = 0\nprocesses = 64\nread-paths = ['data']\n",
        ),
    ]);
    let target = repo.root.to_str().unwrap();
    let sandbox_line = |extra: &[&str]| {
        let mut args = vec!["config", "--target_dir", target];
        args.extend_from_slice(extra);
        let out = swarm(&repo, &args, &[KEY]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.starts_with("sandbox"))
            .unwrap_or_default()
            .to_string()
    };
    let from_file = sandbox_line(&[]);
    assert!(
        from_file.contains("on: memory 2048 MiB, files unlimited, 64 processes")
            && from_file.contains(&format!("also readable: {target}/data"))
            && from_file.contains(".swarm.toml"),
        "{from_file}"
    );
    let off = sandbox_line(&["--no-sandbox"]);
    assert!(
        off.contains("off: environment allow-list and parent-death signal only")
            && off.contains("flag --no-sandbox"),
        "{off}"
    );
}

#[test]
fn a_folder_outside_any_repository_gets_one() {
    let repo = TestRepo::empty();
    repo.write("calc.py", "def add(a, b):\n    return a + b\n");
    // The provider points at a closed port: the run fails at the model, after the
    // repository was initialised.
    let out = swarm(
        &repo,
        &[
            "--target_dir",
            repo.root.to_str().unwrap(),
            "--no-preflight",
            "--retries",
            "1",
            "--llm-timeout",
            "5",
        ],
        &[
            ("OPENAI_API_KEY", "sk-test"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("initialised one there"), "{stderr}");
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(Path::new(&repo.root.join(".git")).is_dir());
    assert_eq!(
        repo.git(&["log", "--format=%s"]),
        "swarm: baseline of the files before refactoring"
    );
    assert_eq!(repo.worktrees().len(), 1);
}

#[test]
fn config_shows_the_model_time_limits_and_refuses_zero() {
    let repo =
        TestRepo::with_files(&[("a.py", "x = 1\n"), (".swarm.toml", "llm-max-time = 600\n")]);
    let target = repo.root.to_str().unwrap();
    let out = swarm(
        &repo,
        &["config", "--target_dir", target, "--llm-timeout", "30"],
        &[KEY],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line("llm_timeout").contains("30") && line("llm_timeout").contains("flag --llm-timeout"),
        "{stdout}"
    );
    assert!(
        line("llm_max_time").contains("600") && line("llm_max_time").contains(".swarm.toml"),
        "{stdout}"
    );
    let out = swarm(
        &repo,
        &["--target_dir", target, "--llm-max-time", "0"],
        &[KEY],
    );
    assert_one_line_error(&out, 1, "llm_max_time must be at least 1");
}

#[test]
fn a_local_model_server_gets_slower_defaults_and_a_short_plan_budget() {
    let repo = TestRepo::with_files(&[("a.py", "x = 1\n")]);
    let target = repo.root.to_str().unwrap();
    let config_with = |base: &str, extra: &[&str]| {
        let mut args = vec!["config", "--target_dir", target];
        args.extend_from_slice(extra);
        let out = swarm(
            &repo,
            &args,
            &[("OPENAI_API_KEY", "sk-test"), ("OPENAI_BASE_URL", base)],
        );
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let line = |stdout: &str, name: &str| {
        stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_default()
            .to_string()
    };
    for base in ["http://127.0.0.1:8080/v1", "http://192.168.1.20:11434/v1"] {
        let local = config_with(base, &[]);
        let timeout = line(&local, "llm_timeout");
        assert!(
            timeout.contains("600") && timeout.contains("local model server"),
            "{local}"
        );
        assert!(line(&local, "llm_max_time").contains("3600"), "{local}");
        let budget = line(&local, "budget");
        assert!(
            budget.contains("plan 8000") && budget.contains("short replies"),
            "{local}"
        );
    }
    // A flag still wins, and a remote server keeps the usual defaults.
    let flagged = config_with("http://127.0.0.1:8080/v1", &["--llm-timeout", "45"]);
    assert!(line(&flagged, "llm_timeout").contains("45"), "{flagged}");
    let proxy = config_with("http://127.0.0.1:4000/v1", &["--local-model", "false"]);
    assert!(
        line(&proxy, "local_model").contains("flag --local-model"),
        "{proxy}"
    );
    assert!(line(&proxy, "llm_timeout").contains("120"), "{proxy}");
    assert!(line(&proxy, "budget").contains("plan 16000"), "{proxy}");
    let remote = config_with("https://openrouter.ai/api/v1", &[]);
    let timeout = line(&remote, "llm_timeout");
    assert!(
        timeout.contains("120") && !timeout.contains("local"),
        "{remote}"
    );
    assert!(line(&remote, "budget").contains("plan 16000"), "{remote}");
}

#[test]
fn completions_load_in_a_real_bash_and_the_man_page_covers_every_command() {
    let repo = TestRepo::with_files(&[("a.py", "x = 1\n")]);
    let out = swarm(&repo, &["completions", "bash"], &[]);
    assert_eq!(out.status.code(), Some(0));
    let script = repo.tmp().join("swarm.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("source {} && complete -p swarm", script.display()))
        .output()
        .expect("bash runs");
    let registered = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success() && registered.contains("swarm"),
        "{registered}"
    );
    let script = String::from_utf8_lossy(&out.stdout);
    for word in ["--target-dir", "--max-iterations", "demo", "config"] {
        assert!(script.contains(word), "{word} not completed");
    }

    let out = swarm(&repo, &["man"], &[]);
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH swarm 1"),
        "{page}"
    );
    for word in [
        "target\\-dir",
        "demo",
        "config",
        "completions",
        "SWARM_MAX_ITERATIONS",
    ] {
        assert!(page.contains(word), "{word} not in the man page");
    }
    let out = swarm(&repo, &["completions", "tcsh"], &[]);
    assert_eq!(out.status.code(), Some(1), "an unknown shell is bad input");
}

/// `swarm --help` and `swarm run --help` name every language swarm
/// handles, not Python alone.
#[test]
fn the_help_names_every_language() {
    let repo = TestRepo::empty();
    for args in [&["--help"][..], &["run", "--help"][..]] {
        let out = swarm(&repo, args, &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}");
        assert!(
            stdout.contains("JavaScript/TypeScript"),
            "{args:?}: {stdout}"
        );
        assert!(!stdout.contains("for Python repositories"), "{stdout}");
        assert!(!stdout.contains("the Python code"), "{stdout}");
    }
}
