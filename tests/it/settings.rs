//! Where settings come from: `SWARM_*` variables for every flag, config
//! files found from the target up to the repository root and in the user's
//! config folder, provider keys in the repository's `.env`, and `swarm
//! config` with nothing configured.

use std::process::Output;

use crate::support::fixture::{good_model, swarm_in, FixtureRepo};
use crate::support::llm_server::LlmServer;
use crate::support::repo::TestRepo;

const KEY: (&str, &str) = ("OPENAI_API_KEY", "sk-test-key-0000");

fn config(repo: &TestRepo, target: &str, extra: &[&str], env: &[(&str, &str)]) -> String {
    let cwd = repo.tmp().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut args = vec!["config", "--target_dir", target];
    args.extend_from_slice(extra);
    let out: Output = swarm_in(&cwd, &repo.home, &args, env);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn line<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no {name} row in {stdout}"))
}

#[test]
fn every_flag_has_its_swarm_variable_and_the_flag_wins() {
    let repo = TestRepo::with_files(&[("a.py", "x = 1\n")]);
    let root = repo.root.to_str().unwrap();
    let env = [
        KEY,
        ("SWARM_MAX_ITERATIONS", "3"),
        ("SWARM_NO_SANDBOX", "1"),
        ("SWARM_LLM_TIMEOUT", "45"),
    ];
    let stdout = config(&repo, root, &[], &env);
    assert!(
        line(&stdout, "max_iterations").contains("3  (env SWARM_MAX_ITERATIONS)"),
        "{stdout}"
    );
    assert!(
        line(&stdout, "llm_timeout").contains("45  (env SWARM_LLM_TIMEOUT)"),
        "{stdout}"
    );
    let sandbox = line(&stdout, "sandbox");
    assert!(
        sandbox.contains("off") && sandbox.contains("env SWARM_NO_SANDBOX"),
        "{sandbox}"
    );

    let stdout = config(&repo, root, &["--max-iterations", "5"], &env);
    assert!(
        line(&stdout, "max_iterations").contains("5  (flag --max-iterations)"),
        "{stdout}"
    );
    // A false value turns a switch off.
    let stdout = config(&repo, root, &[], &[KEY, ("SWARM_NO_SANDBOX", "false")]);
    assert!(line(&stdout, "sandbox").contains("on:"), "{stdout}");

    // --help names the variable of every flag.
    let cwd = repo.tmp().join("cwd");
    let help = swarm_in(&cwd, &repo.home, &["run", "--help"], &[]);
    // Joined into one line: clap wraps the help text.
    let help = String::from_utf8_lossy(&help.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for var in [
        "SWARM_TARGET_DIR",
        "SWARM_MAX_COST",
        "SWARM_DRY_RUN",
        "SWARM_LOCK_TIMEOUT",
    ] {
        assert!(
            help.contains(&format!("[env: {var}")),
            "{var} not in {help}"
        );
    }
}

#[test]
fn the_project_config_is_found_from_a_subfolder_up_to_the_repository_root() {
    let repo = TestRepo::with_files(&[
        (
            "pyproject.toml",
            "[project]\nname = 'x'\n\n[tool.swarm]\njobs = 3\nmax-iterations = 6\n",
        ),
        ("pkg/pyproject.toml", "[project]\nname = 'inner'\n"),
        ("pkg/a.py", "x = 1\n"),
        ("other/.swarm.toml", "max-iterations = 2\n"),
        ("other/b.py", "y = 1\n"),
    ]);
    let pkg = repo.root.join("pkg");
    let stdout = config(&repo, pkg.to_str().unwrap(), &[], &[KEY]);
    let root_file = repo.root.join("pyproject.toml").canonicalize().unwrap();
    let jobs = line(&stdout, "jobs");
    assert!(
        jobs.contains('3') && jobs.contains(&root_file.display().to_string()),
        "{stdout}"
    );
    // The nearest file wins.
    let other = repo.root.join("other");
    let stdout = config(&repo, other.to_str().unwrap(), &[], &[KEY]);
    let iterations = line(&stdout, "max_iterations");
    assert!(
        iterations.contains('2') && iterations.contains(".swarm.toml"),
        "{stdout}"
    );
    assert!(line(&stdout, "jobs").contains("1  (default)"), "{stdout}");
}

#[test]
fn the_user_config_fills_in_what_the_project_does_not_set() {
    let repo = TestRepo::with_files(&[("a.py", "x = 1\n"), (".swarm.toml", "jobs = 2\n")]);
    let xdg = repo.tmp().join("xdg");
    std::fs::create_dir_all(xdg.join("swarm")).unwrap();
    std::fs::write(
        xdg.join("swarm/config.toml"),
        "jobs = 9\nmax-iterations = 7\nmodel = 'my-model'\n",
    )
    .unwrap();
    let env = [KEY, ("XDG_CONFIG_HOME", xdg.to_str().unwrap())];
    let stdout = config(&repo, repo.root.to_str().unwrap(), &[], &env);
    assert!(line(&stdout, "jobs").contains("2  (file"), "{stdout}");
    let iterations = line(&stdout, "max_iterations");
    assert!(
        iterations.contains('7') && iterations.contains("swarm/config.toml"),
        "{stdout}"
    );
    assert!(line(&stdout, "model").contains("my-model"), "{stdout}");
}

#[test]
fn config_works_with_no_provider_and_defaults_the_target_to_the_current_folder() {
    let repo = TestRepo::with_files(&[("a.py", "x = 1\n")]);
    let out = swarm_in(&repo.root, &repo.home, &["config"], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let target = line(&stdout, "target");
    assert!(
        target.ends_with(&repo.root.canonicalize().unwrap().display().to_string()),
        "{stdout}"
    );
    assert!(line(&stdout, "provider").contains("not set"), "{stdout}");
    assert!(line(&stdout, "api_key").contains("(not set)"), "{stdout}");
    assert!(line(&stdout, "max_iterations").contains("10"), "{stdout}");
}

#[test]
fn provider_keys_in_the_repository_dotenv_are_used_and_never_shown_or_committed() {
    let fx = FixtureRepo::new("single_module");
    let server = LlmServer::start(good_model("single_module", &fx.target_rel));
    let env_file = format!(
        "# local secrets\nexport OPENAI_API_KEY=\"sk-from-dotenv-4321\"\nOPENAI_BASE_URL={}/v1\nPATH=/nowhere\n",
        server.base_url()
    );
    fx.repo.write(".env", &env_file);
    fx.repo.write(".gitignore", ".env\n");
    fx.repo.commit_all("ignore .env");

    let target = fx.target.to_str().unwrap();
    let out = fx.swarm(&["config", "--target_dir", target], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains("sk-from-dotenv-4321"), "{stdout}");
    assert!(
        line(&stdout, "api_key").contains("****4321") && line(&stdout, "api_key").contains(".env"),
        "{stdout}"
    );

    let out = fx.swarm(&["--target_dir", target, "--no-preflight"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let requests = server.requests();
    assert!(!requests.is_empty());
    assert!(
        requests
            .iter()
            .all(|r| r.header("authorization") == Some("Bearer sk-from-dotenv-4321")),
        "every request carries the key from .env"
    );
    let log = std::fs::read_to_string(fx.repo.tmp().join("cwd/logs/experiment_data.json")).unwrap();
    assert!(
        !log.contains("sk-from-dotenv-4321"),
        "the key is never logged"
    );
    assert!(!fx
        .repo
        .git(&["log", "-p", "--all"])
        .contains("sk-from-dotenv-4321"));

    // The shell's key wins over the file's.
    let out = fx.swarm(
        &["config", "--target_dir", target],
        &[("OPENAI_API_KEY", "sk-shell-key-7777")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        line(&stdout, "api_key").contains("****7777  (env OPENAI_API_KEY)"),
        "{stdout}"
    );
}
