//! Real projects as they are, end to end: the environments open-source
//! Python projects are tested in — an editable install of a src-layout
//! package in a real virtualenv (through a `.pth` path and through an
//! import hook), `addopts` naming a plugin that is not installed, a runtime
//! dependency that is not installed, `--install-deps` — each built in a
//! temp folder and run with the real binary, git, pip, uv, pytest and
//! pylint, and a loopback model. The shapes of their code and tests are in
//! `shapes.rs`.

use super::{summary_of, FAKE_KEY};
use crate::support::fixture::{prompt_of, swarm_in};
use crate::support::llm_server::{LlmServer, RecordedRequest, Reply};
use crate::support::repo::TestRepo;

/// Runs swarm on `repo` with `args` (after `--target_dir <root> --json`).
pub(super) fn run(repo: &TestRepo, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let cwd = repo.tmp().join("cwd");
    std::fs::create_dir_all(&cwd).expect("cwd");
    let target = repo.root.to_string_lossy().into_owned();
    let mut all = vec!["--target_dir", target.as_str(), "--json"];
    all.extend_from_slice(args);
    swarm_in(&cwd, &repo.home, &all, env)
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
pub(super) fn editable_venv(repo: &TestRepo, extra: &[&str]) -> std::path::PathBuf {
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
pub(super) fn asked(prompt: &str) -> Option<(String, String)> {
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
pub(super) fn fixing_model(file: &'static str, fix: fn(&str) -> String) -> LlmServer {
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
pub(super) fn run_with_model(
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
pub(super) const FLAT_TESTS: &str =
    "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";

/// Runs swarm on `repo` with a model that would fix `calc.py`; the run's
/// output and the model requests it made.
fn run_against_fixing_model(repo: &TestRepo) -> (std::process::Output, usize) {
    let server = fixing_model("calc.py", |t| t.replace("a - b", "a + b"));
    let out = run_with_model(repo, &server, &["--max-iterations", "2"], &[]);
    let requests = server.requests().len();
    (out, requests)
}

/// The one line swarm's error printed (the message and its hints).
pub(super) fn error_line(out: &std::process::Output) -> String {
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
