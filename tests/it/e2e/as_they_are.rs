//! Real projects as they are, end to end: shapes taken from open-source
//! Python projects (a CLI module whose `main` exits, ...), each built in a
//! temp folder and run with the real binary, git, pytest and pylint.

use super::{summary_of, FAKE_KEY};
use crate::support::fixture::{prompt_of, read_log, swarm_in};
use crate::support::llm_server::{LlmServer, RecordedRequest, Reply};
use crate::support::repo::TestRepo;

/// A command-line module with no tests: ruff removes its unused import,
/// and its `main()` ends the interpreter the way argparse and `sys.exit`
/// do.
const CLI: &str = r#"import json
import os
import sys


def greet(name):
    return "hello " + name


def main():
    print(greet("world"))
    sys.exit(0)


def fail():
    raise SystemExit(2)


def stop():
    raise KeyboardInterrupt


def vanish():
    os._exit(0)
"#;

/// Runs swarm on `repo` with `args` (after `--target_dir <root> --json`).
fn run(repo: &TestRepo, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let cwd = repo.tmp().join("cwd");
    std::fs::create_dir_all(&cwd).expect("cwd");
    let target = repo.root.to_string_lossy().into_owned();
    let mut all = vec!["--target_dir", target.as_str(), "--json"];
    all.extend_from_slice(args);
    swarm_in(&cwd, &repo.home, &all, env)
}

#[test]
fn a_module_whose_main_exits_is_reported_not_checked_and_the_fix_is_delivered() {
    let repo = TestRepo::with_files(&[("cli.py", CLI)]);
    let start = repo.head();
    let out = run(&repo, &["--offline"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    assert_ne!(repo.head(), start, "the fix was delivered");
    assert!(!repo.read("cli.py").contains("import json\n"));

    // The Judge's behaviour check says what it could not compare, and why.
    let log = read_log(&repo.tmp().join("cwd/logs/experiment_data.json"));
    let checks: Vec<String> = log
        .iter()
        .filter(|e| e["agent"] == "Judge" && !e["details"]["behaviour"].is_null())
        .map(|e| e["details"]["behaviour"].to_string())
        .collect();
    let all = checks.join("\n");
    for (function, why) in [
        ("main()", "SystemExit"),
        ("fail()", "SystemExit"),
        ("stop()", "KeyboardInterrupt"),
        ("vanish()", "os._exit"),
    ] {
        assert!(all.contains(function) && all.contains(why), "{all}");
    }
}

/// A src-layout package, as `pip install -e .` users have it: `add` has a bug.
const CALC_PYPROJECT: &str = "[build-system]\nrequires = [\"setuptools>=61\"]\n\
build-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"calc\"\nversion = \"0.1.0\"\n";
const CALC_INIT: &str =
    "\"\"\"Arithmetic.\"\"\"\n\nfrom .ops import add, double\n\n__all__ = [\"add\", \"double\"]\n";
const OPS_BUG: &str = "    return a - b\n";
const OPS_FIX: &str = "    return a + b\n";
const CALC_TESTS: &str = "from calc import add, double\n\n\n\
def test_add():\n    assert add(2, 3) == 5\n\n\n\
def test_double():\n    assert double(4) == 8\n";

fn ops(body: &str) -> String {
    format!(
        "\"\"\"Operations.\"\"\"\n\n\ndef add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n{body}\n\n\
         def double(a):\n    \"\"\"Twice a.\"\"\"\n    return add(a, a)\n"
    )
}

/// The src-layout project committed in a fresh repository.
fn src_layout_repo() -> TestRepo {
    TestRepo::with_files(&[
        ("pyproject.toml", CALC_PYPROJECT),
        (".gitignore", "*.egg-info/\nbuild/\n__pycache__/\n"),
        ("src/calc/__init__.py", CALC_INIT),
        ("src/calc/ops.py", &ops(OPS_BUG)),
        ("tests/test_ops.py", CALC_TESTS),
    ])
}

/// A virtualenv that sees the machine's pytest and pylint, with the
/// project installed into it by `pip install -e .` (`extra` are further
/// pip arguments); its folder.
fn editable_venv(repo: &TestRepo, extra: &[&str]) -> std::path::PathBuf {
    let venv = repo.tmp().join("venv");
    let python = crate::support::make_venv(&venv, true);
    let installed = std::process::Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-e",
        ])
        .arg(&repo.root)
        .args(extra)
        .output()
        .expect("pip runs");
    // `make_venv` makes a venv without pip: the machine's pip (seen
    // through the system site) installs into it.
    assert!(
        installed.status.success(),
        "pip install -e: {}",
        String::from_utf8_lossy(&installed.stderr)
    );
    venv
}

/// The file a fix prompt asks about and its current text, when shown whole.
fn asked(prompt: &str) -> Option<(String, String)> {
    let rest = prompt.strip_prefix("Fix and improve `")?;
    let file = rest[..rest.find('`')?].to_string();
    let marker = format!("## Current text of `{file}`\n```python\n");
    let start = prompt.rfind(&marker)? + marker.len();
    let end = prompt[start..]
        .find("\n```\n")
        .map_or(prompt.len(), |i| start + i);
    Some((file, format!("{}\n", &prompt[start..end])))
}

/// A model whose plan blames `file` and that fixes it by `fix` (declining
/// every other file); every request it got is kept by the server.
fn fixing_model(file: &'static str, fix: fn(&str) -> String) -> LlmServer {
    LlmServer::start(move |request: &RecordedRequest| {
        let prompt = prompt_of(request);
        if prompt.starts_with("Write a refactoring plan") {
            let plan = format!(
                "# Refactoring plan\n\n## Summary\n\nA test fails.\n\n## {file}\n\n- **Type**: bug\n  \
                 **Severity**: high\n  **Location**: `{file}`\n  **Description**: wrong result.\n  \
                 **Suggested fix**: correct the arithmetic.\n"
            );
            return Reply::text_for(request, &plan);
        }
        let text = match asked(&prompt) {
            Some((asked_file, current)) if asked_file == file => {
                let after = fix(&current);
                let body = similar::TextDiff::from_lines(current.as_str(), after.as_str())
                    .unified_diff()
                    .context_radius(3)
                    .header(&format!("a/{file}"), &format!("b/{file}"))
                    .to_string();
                format!("Fix {file}.\n\n```diff\n{body}```\n")
            }
            _ => "NO CHANGE: this file looks right to me.".to_string(),
        };
        Reply::text_for(request, &text)
    })
}

/// Runs swarm as a client of `server`.
fn run_with_model(
    repo: &TestRepo,
    server: &LlmServer,
    args: &[&str],
    env: &[(&str, &str)],
) -> std::process::Output {
    let base = format!("{}/v1", server.base_url());
    let mut all_env = vec![
        ("OPENAI_API_KEY", FAKE_KEY),
        ("OPENAI_BASE_URL", base.as_str()),
    ];
    all_env.extend_from_slice(env);
    run(repo, args, &all_env)
}

/// The verdicts of the run's attempts, in order, from their commits.
fn verdicts(repo: &TestRepo, run_id: &str) -> Vec<String> {
    let mut found: Vec<(u32, String)> = repo
        .git(&[
            "for-each-ref",
            "--format=%(refname:short)",
            &format!("refs/heads/swarm/{run_id}/"),
        ])
        .lines()
        .filter_map(|b| {
            let k = b.rsplit("attempt-").next()?.parse().ok()?;
            let message = repo.git(&["log", "-1", "--format=%B", b]);
            let verdict = message
                .lines()
                .find_map(|l| l.strip_prefix("Swarm-Verdict: "))?
                .to_string();
            Some((k, verdict))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, v)| v).collect()
}

fn judge_the_worktree_of_an_editable_install(pip_extra: &[&str]) {
    let repo = src_layout_repo();
    let start = repo.head();
    let venv = editable_venv(&repo, pip_extra);
    // The user's own pytest sees the bug in their checkout.
    let server = fixing_model("src/calc/ops.py", |t| t.replace(OPS_BUG, OPS_FIX));
    let venv_text = venv.to_string_lossy().into_owned();
    let out = run_with_model(
        &repo,
        &server,
        &["--max-iterations", "2", "--no-generate-tests"],
        &[("VIRTUAL_ENV", &venv_text)],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    // The model's first proposal, the right fix, was judged as what it is.
    let run_id = summary["run_id"].as_str().expect("run id");
    assert_eq!(verdicts(&repo, run_id), vec!["green"], "{stderr}");
    assert_ne!(repo.head(), start);
    assert_eq!(repo.read("src/calc/ops.py"), ops(OPS_FIX));
    // The baseline measured the checkout's bug: one test failed, then none.
    assert_eq!(summary["tests_before"]["passed"], 0, "{summary}");
    assert_eq!(summary["tests_after"]["passed"], 2, "{summary}");
}

#[test]
fn the_judge_tests_the_attempt_not_the_editable_install_of_the_checkout() {
    judge_the_worktree_of_an_editable_install(&[]);
}

#[test]
fn the_judge_tests_the_attempt_also_through_an_editable_import_hook() {
    // setuptools' strict mode: a link tree of the checkout's files, found
    // by an import hook rather than a path.
    judge_the_worktree_of_an_editable_install(&["--config-settings", "editable_mode=strict"]);
}

/// A flat module and its tests: `add` has a bug, the model fixes it.
const FLAT_CALC: &str =
    "\"\"\"Arithmetic.\"\"\"\n\n\ndef add(a, b):\n    \"\"\"The sum.\"\"\"\n    return a - b\n";
const FLAT_TESTS: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";

/// Runs swarm on `repo` with a model that would fix `calc.py`; the run's
/// output and the model requests it made.
fn run_against_fixing_model(repo: &TestRepo) -> (std::process::Output, usize) {
    let server = fixing_model("calc.py", |t| t.replace("a - b", "a + b"));
    let out = run_with_model(repo, &server, &["--max-iterations", "2"], &[]);
    let requests = server.requests().len();
    (out, requests)
}

/// The one line swarm's error printed (the message and its hints).
fn error_line(out: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    stderr
        .lines()
        .find(|l| l.starts_with("swarm: error: "))
        .unwrap_or_else(|| panic!("no error line in:\n{stderr}"))
        .to_string()
}

#[test]
fn addopts_naming_a_plugin_that_is_not_installed_is_named_before_any_model_call() {
    let repo = TestRepo::with_files(&[
        (
            "pyproject.toml",
            "[project]\nname = \"calc\"\nversion = \"1.0\"\n\n\
             [project.optional-dependencies]\ntest = [\"pytest\", \"pytest-cov\"]\n\n\
             [tool.pytest.ini_options]\naddopts = \"--cov=calc --cov-report=term-missing\"\n",
        ),
        ("calc.py", FLAT_CALC),
        ("tests/test_calc.py", FLAT_TESTS),
    ]);
    let start = repo.head();
    let (out, requests) = run_against_fixing_model(&repo);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(requests, 0, "no model request");
    let line = error_line(&out);
    assert!(
        line.contains("the test suite cannot run with ")
            && line.contains("pytest does not know --cov=calc --cov-report=term-missing (the plugin pytest-cov is not installed)")
            && line.contains("-m pip install pytest-cov")
            && line.contains("pip install -e '.[test]'")
            && line.contains("--install-deps"),
        "{line}"
    );
    assert_eq!(repo.head(), start);
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["exit_code"], 1, "{summary}");
}

#[test]
fn a_missing_runtime_dependency_is_named_before_any_model_call() {
    // A flat project with one root `test.py`, as its README runs it, and a
    // dependency its requirements name but this environment lacks.
    let repo = TestRepo::with_files(&[
        ("requirements.txt", "frobnicate-tools>=1.2\n"),
        ("pytest.ini", "[pytest]\ntestpaths = test.py\n"),
        (
            "calc.py",
            &format!(
                "import frobnicate\n\n{}",
                FLAT_CALC.replace("\"\"\"Arithmetic.\"\"\"\n\n", "")
            ),
        ),
        ("test.py", FLAT_TESTS),
    ]);
    let (out, requests) = run_against_fixing_model(&repo);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(requests, 0, "no model request");
    let line = error_line(&out);
    assert!(
        line.contains("the module frobnicate (imported by calc.py) is not installed")
            && line.contains("-m pip install frobnicate-tools")
            && line.contains("pip install -r requirements.txt"),
        "{line}"
    );
}

#[test]
fn a_bad_import_in_the_project_s_code_stays_the_fixer_s() {
    // `utilz` is a typo of the project's own `utils`: a bug, not a missing
    // dependency; the model's fix is judged and delivered.
    let repo = TestRepo::with_files(&[
        ("utils.py", "def twice(x):\n    return 2 * x\n"),
        (
            "calc.py",
            "\"\"\"Arithmetic.\"\"\"\nfrom utilz import twice\n\n\ndef add(a, b):\n    \"\"\"The sum.\"\"\"\n    return a + b\n\n\n\
             def double(a):\n    \"\"\"Twice a.\"\"\"\n    return twice(a)\n",
        ),
        ("tests/test_calc.py", FLAT_TESTS),
    ]);
    let server = fixing_model("calc.py", |t| t.replace("from utilz", "from utils"));
    let out = run_with_model(&repo, &server, &["--max-iterations", "2"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(repo.read("calc.py").contains("from utils import twice"));
}

/// A flat module with one root `test.py` (`testpaths = ["test.py"]`), as
/// small libraries have it: `bump` has a bug.
const SEMVER: &str = "\"\"\"Version numbers.\"\"\"\n\n\ndef bump(version):\n    \
\"\"\"The next patch version.\"\"\"\n    major, minor, patch = version.split(\".\")\n    \
return f\"{major}.{minor}.{int(patch)}\"\n";
const SEMVER_TESTS: &str = "from semver import bump\n\n\ndef test_bump():\n    \
assert bump(\"1.2.3\") == \"1.2.4\"\n";

#[test]
fn a_root_test_py_that_pytest_collects_is_a_test_never_the_fixer_s() {
    let repo = TestRepo::with_files(&[
        (
            "pyproject.toml",
            "[tool.pytest.ini_options]\ntestpaths = [\"test.py\"]\n",
        ),
        ("semver.py", SEMVER),
        ("test.py", SEMVER_TESTS),
    ]);
    // A model that, asked about `test.py`, rewrites its failing assertion,
    // and asked about `semver.py`, fixes the bug; its plan blames `test.py`.
    let server = LlmServer::start(|request: &RecordedRequest| {
        let prompt = prompt_of(request);
        if prompt.starts_with("Write a refactoring plan") {
            let plan = "# Refactoring plan\n\n## Summary\n\nThe test fails.\n\n## test.py\n\n\
                        - **Type**: bug\n  **Severity**: high\n  **Location**: `test_bump`\n  \
                        **Description**: the expected value is wrong.\n  \
                        **Suggested fix**: expect what bump returns.\n";
            return Reply::text_for(request, plan);
        }
        let (file, current) = asked(&prompt).unwrap_or_default();
        let after = match file.as_str() {
            "test.py" => current.replace("\"1.2.4\"", "\"1.2.3\""),
            "semver.py" => current.replace("{int(patch)}", "{int(patch) + 1}"),
            _ => current.clone(),
        };
        if after == current {
            return Reply::text_for(request, "NO CHANGE: looks right.");
        }
        let body = similar::TextDiff::from_lines(current.as_str(), after.as_str())
            .unified_diff()
            .header(&format!("a/{file}"), &format!("b/{file}"))
            .to_string();
        Reply::text_for(request, &format!("```diff\n{body}```\n"))
    });
    let out = run_with_model(&repo, &server, &["--max-iterations", "3"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        repo.read("test.py"),
        SEMVER_TESTS,
        "the tests are untouched"
    );
    assert!(repo.read("semver.py").contains("{int(patch) + 1}"));
    let asked_files: Vec<String> = server
        .requests()
        .iter()
        .filter_map(|r| asked(&prompt_of(r)).map(|(file, _)| file))
        .collect();
    assert!(
        !asked_files.iter().any(|f| f == "test.py"),
        "{asked_files:?}"
    );
}

#[test]
fn a_test_calling_through_a_wrapper_reaches_the_module_that_defines_the_code() {
    // python-semver's shape: `semver.cmd_compare` is `_deprecated.py`'s
    // `deprecated(cli.cmd_compare)`; the bug is in `cli.py`, and no
    // traceback names it (the test's assertion fails on a wrong value).
    let repo = TestRepo::with_files(&[
        (
            "pyproject.toml",
            "[project]\nname = \"semver\"\nversion = \"3.0.0\"\n\n\
             [tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
        ),
        (
            "src/semver/__init__.py",
            "\"\"\"Semantic versions.\"\"\"\nfrom ._deprecated import cmd_compare\nfrom .version import parse\n",
        ),
        (
            "src/semver/_deprecated.py",
            "\"\"\"Deprecated entry points.\"\"\"\nimport functools\n\nfrom . import cli\n\n\n\
             def deprecated(func):\n    \"\"\"Marks func deprecated.\"\"\"\n\n    \
             @functools.wraps(func)\n    def wrapper(*args, **kwargs):\n        \
             return func(*args, **kwargs)\n\n    return wrapper\n\n\n\
             cmd_compare = deprecated(cli.cmd_compare)\n",
        ),
        (
            "src/semver/cli.py",
            "\"\"\"The command line.\"\"\"\nfrom .version import parse\n\n\n\
             def cmd_compare(first, second):\n    \"\"\"-1, 0 or 1 as first is lower, equal or higher.\"\"\"\n    \
             a, b = parse(first), parse(second)\n    return str((a > b) - (a < b) + 1)\n",
        ),
        (
            "src/semver/version.py",
            "\"\"\"Parsing.\"\"\"\n\n\ndef parse(text):\n    \"\"\"The version's numbers.\"\"\"\n    \
             return tuple(int(p) for p in text.split(\".\"))\n",
        ),
        (
            "tests/test_cli.py",
            "import semver\n\n\ndef test_compare():\n    assert semver.cmd_compare(\"1.0.0\", \"2.0.0\") == \"-1\"\n\n\n\
             def test_parse():\n    assert semver.parse(\"1.2.3\") == (1, 2, 3)\n",
        ),
    ]);
    let server = LlmServer::start(|request: &RecordedRequest| {
        let prompt = prompt_of(request);
        if prompt.starts_with("Write a refactoring plan") {
            let plan = "# Refactoring plan\n\n## Summary\n\nA comparison test fails; the package needs a look.\n";
            return Reply::text_for(request, plan);
        }
        match asked(&prompt) {
            Some((file, current)) if file == "src/semver/cli.py" => {
                let after = current.replace(" + 1)\n", ")\n");
                let body = similar::TextDiff::from_lines(current.as_str(), after.as_str())
                    .unified_diff()
                    .header(&format!("a/{file}"), &format!("b/{file}"))
                    .to_string();
                Reply::text_for(request, &format!("```diff\n{body}```\n"))
            }
            _ => Reply::text_for(request, "NO CHANGE: looks right."),
        }
    });
    let out = run_with_model(&repo, &server, &["--max-iterations", "3"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!repo.read("src/semver/cli.py").contains(" + 1)"));
    // `cli.py` was the first file the Fixer was asked about.
    let first = server
        .requests()
        .iter()
        .find_map(|r| asked(&prompt_of(r)).map(|(file, _)| file));
    assert_eq!(first.as_deref(), Some("src/semver/cli.py"), "{stderr}");
}

/// Writes a wheel of the distribution `dist` (version 1.0) holding the
/// module `module` with `code` into `dir`, as a package index would serve it.
fn local_wheel(dir: &std::path::Path, dist: &str, module: &str, code: &str) {
    std::fs::create_dir_all(dir).expect("wheel folder");
    let script = r#"
import base64, hashlib, sys, zipfile
folder, dist, module, code = sys.argv[1:5]
name = dist.replace("-", "_")
info = f"{name}-1.0.dist-info"
files = {
    f"{module}/__init__.py": code,
    f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n",
    f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: swarm-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for path, text in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
    record.append(f"{path},sha256={digest},{len(text.encode())}")
record.append(f"{info}/RECORD,,")
files[f"{info}/RECORD"] = "\n".join(record) + "\n"
with zipfile.ZipFile(f"{folder}/{name}-1.0-py3-none-any.whl", "w") as wheel:
    for path, text in files.items():
        wheel.writestr(path, text)
"#;
    let made = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(dir)
        .args([dist, module, code])
        .status()
        .expect("python3 runs");
    assert!(made.success(), "the wheel is written");
}

#[test]
fn install_deps_builds_the_declared_environment_once_and_benchmarks_run_untimed() {
    // A project whose runtime dependency and test plugin this environment
    // lacks; its benchmark test passes only when the benchmark runs once.
    let repo = TestRepo::with_files(&[
        (
            "pyproject.toml",
            "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n\
             [project]\nname = \"calc\"\nversion = \"0.1.0\"\ndependencies = [\"frobnicate-tools\"]\n\n\
             [project.optional-dependencies]\ntest = [\"pytest-benchmark\"]\n\n\
             [tool.setuptools]\npy-modules = [\"calc\"]\n",
        ),
        (
            "calc.py",
            &format!("import frobnicate\n\n{}", FLAT_CALC.replace("\"\"\"Arithmetic.\"\"\"\n\n", "")),
        ),
        (
            "tests/test_calc.py",
            "from calc import add\n\nCALLS = []\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n\
             def test_add_benchmark(benchmark):\n    benchmark(lambda: CALLS.append(add(1, 1)))\n    \
             assert len(CALLS) == 1\n",
        ),
    ]);
    let wheels = repo.tmp().join("wheels");
    local_wheel(
        &wheels,
        "frobnicate-tools",
        "frobnicate",
        "VERSION = '1.0'\n",
    );
    let wheels = wheels.to_string_lossy().into_owned();
    let uv_cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("uv-cache");
    let uv_cache = uv_cache.to_string_lossy().into_owned();
    let env = [
        ("UV_FIND_LINKS", wheels.as_str()),
        ("UV_CACHE_DIR", uv_cache.as_str()),
    ];
    let server = fixing_model("calc.py", |t| t.replace("a - b", "a + b"));
    let out = run_with_model(
        &repo,
        &server,
        &["--install-deps", "--dry-run", "--max-iterations", "2"],
        &env,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("building the project's declared environment in "),
        "{stderr}"
    );
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["tests_after"]["passed"], 2, "{summary}");
    assert!(
        summary["time"]["judge_seconds"].as_f64().unwrap() > 0.0,
        "{summary}"
    );
    assert!(
        stderr.contains("  time:     ") && stderr.contains("the Judge (tests and pylint)"),
        "{stderr}"
    );

    // A second run finds it in the cache.
    let again = run_with_model(
        &repo,
        &server,
        &["--install-deps", "--dry-run", "--max-iterations", "1"],
        &env,
    );
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("reusing the project's declared environment "),
        "{stderr}"
    );
    assert!(
        !stderr.contains("building the project's declared environment"),
        "{stderr}"
    );

    // The user's own Python was left alone.
    let own = std::process::Command::new("python3")
        .args(["-c", "import frobnicate"])
        .output()
        .expect("python3 runs");
    assert!(
        !own.status.success(),
        "frobnicate was installed into the user's Python"
    );
}

#[test]
fn a_commit_that_changes_two_files_names_both_in_its_subject() {
    let helpers =
        "\"\"\"Helpers.\"\"\"\n\n\ndef negate(x):\n    \"\"\"Minus x.\"\"\"\n    return -x\n";
    let calc = "\"\"\"Arithmetic.\"\"\"\nfrom helpers import negate\n\n\n\
                def add(a, b):\n    \"\"\"The sum.\"\"\"\n    return a + negate(b)\n";
    let repo = TestRepo::with_files(&[
        ("helpers.py", helpers),
        ("calc.py", calc),
        ("tests/test_calc.py", FLAT_TESTS),
    ]);
    let fixed_helpers = helpers.replace("def negate(x):\n    \"\"\"Minus x.\"\"\"\n    return -x\n",
        "def negate(x):\n    \"\"\"Minus x.\"\"\"\n    return -x\n\n\ndef same(x):\n    \"\"\"x itself.\"\"\"\n    return x\n");
    let fixed_calc = calc
        .replace("from helpers import negate", "from helpers import same")
        .replace("negate(b)", "same(b)");
    let reply = format!(
        "Fix add() with a helper of its own.\n\n```diff\n{}{}```\n",
        similar::TextDiff::from_lines(calc, fixed_calc.as_str())
            .unified_diff()
            .header("a/calc.py", "b/calc.py"),
        similar::TextDiff::from_lines(helpers, fixed_helpers.as_str())
            .unified_diff()
            .header("a/helpers.py", "b/helpers.py"),
    );
    let server = LlmServer::start(move |request: &RecordedRequest| {
        let prompt = prompt_of(request);
        if prompt.starts_with("Fix and improve `calc.py`") {
            Reply::text_for(request, &reply)
        } else if prompt.starts_with("Write a refactoring plan") {
            Reply::text_for(
                request,
                "# Refactoring plan\n\n## Summary\n\nadd() is wrong.\n",
            )
        } else {
            Reply::text_for(request, "NO CHANGE: looks right.")
        }
    });
    let out = run_with_model(&repo, &server, &["--max-iterations", "2"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let subject = repo.git(&["log", "-1", "--format=%s"]);
    assert!(subject.ends_with("(calc.py, helpers.py)"), "{subject}");
}
