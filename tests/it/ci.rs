//! What a team's CI does with swarm besides a run: list the targets of a
//! monorepo as a matrix to fan one instruction out over, read what the CLI
//! says it is, and set up the checks on a Python that refuses system-wide
//! installs.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::support::fixture::swarm_in;
use crate::support::repo::TestRepo;

const VITEST_PACKAGE: &str = r#"{
  "name": "@acme/web",
  "private": true,
  "type": "module",
  "scripts": { "build": "tsc -p .", "test": "vitest run" },
  "devDependencies": { "typescript": "5.6.3", "vitest": "2.1.8" }
}
"#;

/// A monorepo as teams have them: two Python packages (one with a `src`
/// layout and pyproject, one with setup.py), a TypeScript package with
/// vitest, a workspace root with no tests of its own, and docs.
fn monorepo() -> TestRepo {
    TestRepo::with_files(&[
        ("package.json", r#"{"name": "acme", "private": true, "workspaces": ["web"]}"#),
        ("README.md", "# acme\n"),
        ("docs/conf.py", "project = 'acme'\n"),
        (
            "services/billing/pyproject.toml",
            "[project]\nname = \"billing\"\nversion = \"0.1.0\"\n",
        ),
        ("services/billing/src/billing/__init__.py", ""),
        ("services/billing/src/billing/invoice.py", "def total(xs):\n    return sum(xs)\n"),
        (
            "services/billing/tests/test_invoice.py",
            "from billing.invoice import total\n\ndef test_total():\n    assert total([1, 2]) == 3\n",
        ),
        ("services/inventory/setup.py", "from setuptools import setup\nsetup(name='inventory')\n"),
        ("services/inventory/inventory/__init__.py", ""),
        ("services/inventory/inventory/stock.py", "def count(xs):\n    return len(xs)\n"),
        (
            "services/inventory/tests/test_stock.py",
            "from inventory.stock import count\n\ndef test_count():\n    assert count([1]) == 1\n",
        ),
        (
            "services/inventory/tests/test_more.py",
            "from inventory.stock import count\n\ndef test_none():\n    assert count([]) == 0\n",
        ),
        ("web/package.json", VITEST_PACKAGE),
        ("web/tsconfig.json", r#"{"compilerOptions": {"strict": true}}"#),
        ("web/src/price.ts", "export const price = (n: number): number => n * 2;\n"),
        (
            "web/src/price.test.ts",
            "import { expect, test } from 'vitest';\nimport { price } from './price';\ntest('price', () => expect(price(2)).toBe(4));\n",
        ),
    ])
}

#[test]
fn the_targets_of_a_monorepo_are_listed_as_a_ci_matrix() {
    let repo = monorepo();
    let out = swarm_in(&repo.root, &repo.home, &["targets", "--json"], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let matrix: Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    assert_eq!(
        matrix,
        json!({"include": [
            {"target": "services/billing", "language": "Python", "runner": "pytest", "tests": 1},
            {"target": "services/inventory", "language": "Python", "runner": "pytest", "tests": 2},
            {"target": "web", "language": "JavaScript/TypeScript", "runner": "vitest", "tests": 1},
        ]})
    );
    // From a folder of the repository: the targets under it, relative to it.
    let out = swarm_in(
        &repo.root,
        &repo.home,
        &["targets", "--target-dir", "services"],
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].starts_with("billing ") && lines[0].contains("Python (pytest, 1 test file)"),
        "{stdout}"
    );
    assert!(
        lines[1].starts_with("inventory ") && lines[1].contains("2 test files"),
        "{stdout}"
    );
    // Nothing in the repository changed.
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_repository_without_tests_lists_no_target_and_says_why() {
    let repo = TestRepo::with_files(&[("tool.py", "print('hi')\n")]);
    let out = swarm_in(&repo.root, &repo.home, &["targets"], &[]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("no target with tests of its own"),
        "{stdout}"
    );
    let out = swarm_in(&repo.root, &repo.home, &["targets", "--json"], &[]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        r#"{"include":[]}"#
    );
}

/// The snapshot of what `swarm --help` and `swarm run --help` say; rewrite
/// it with `SWARM_WRITE_DOCS=1 cargo test --test it help_says`.
#[test]
fn the_help_says_what_swarm_is() {
    let repo = TestRepo::empty();
    let mut text = String::new();
    for args in [&["--help"][..], &["run", "--help"][..]] {
        let out = swarm_in(&repo.root, &repo.home, args, &[("COLUMNS", "100")]);
        assert_eq!(out.status.code(), Some(0));
        text.push_str(&format!("$ swarm {}\n", args.join(" ")));
        text.push_str(&String::from_utf8_lossy(&out.stdout));
        text.push('\n');
    }
    let snapshot = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/snapshots/help.txt");
    if std::env::var_os("SWARM_WRITE_DOCS").is_some() {
        std::fs::create_dir_all(snapshot.parent().unwrap()).unwrap();
        std::fs::write(&snapshot, &text).unwrap();
    }
    let kept = std::fs::read_to_string(&snapshot).unwrap_or_default();
    assert!(
        kept == text,
        "the help changed; if that is meant, rewrite the snapshot with SWARM_WRITE_DOCS=1:\n{text}"
    );
    for needle in ["Python", "JavaScript/TypeScript", "--task", "repair"] {
        assert!(text.contains(needle), "{needle} not in the help");
    }
}

/// A throwaway interpreter that refuses system-wide installs as Debian's
/// and Ubuntu's do (PEP 668): the machine's base Python, copied with a
/// standard library of links and an `EXTERNALLY-MANAGED` marker of its own.
fn externally_managed_python(dir: &Path) -> PathBuf {
    let info = Command::new("python3")
        .args([
            "-c",
            "import json, os, sys, sysconfig; print(json.dumps({'exe': os.path.realpath(sys._base_executable), 'stdlib': sysconfig.get_path('stdlib'), 'v': '%d.%d' % sys.version_info[:2]}))",
        ])
        .output()
        .expect("python3 runs");
    let info: Value = serde_json::from_slice(&info.stdout).expect("json");
    let version = info["v"].as_str().unwrap();
    let stdlib = PathBuf::from(info["stdlib"].as_str().unwrap());
    let bin = dir.join("bin");
    let lib = dir.join("lib").join(format!("python{version}"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&lib).unwrap();
    let python = bin.join(format!("python{version}"));
    std::fs::copy(info["exe"].as_str().unwrap(), &python).unwrap();
    std::os::unix::fs::symlink(&python, bin.join("python3")).unwrap();
    for entry in std::fs::read_dir(&stdlib).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "site-packages" || name == "dist-packages" || name == "EXTERNALLY-MANAGED" {
            continue;
        }
        std::os::unix::fs::symlink(entry.path(), lib.join(&name)).unwrap();
    }
    std::fs::create_dir_all(lib.join("site-packages")).unwrap();
    std::fs::write(
        lib.join("EXTERNALLY-MANAGED"),
        "[externally-managed]\nError=This Python is managed by the test's pretend distribution.\n",
    )
    .unwrap();
    bin.join("python3")
}

/// `.ci/setup` (what `.ci/run` starts with) on a Python that refuses
/// system-wide installs: it builds its own environment, installs the pinned
/// tools there, and leaves the interpreter's own packages as they were.
/// Downloads from PyPI, so it runs in `.ci/run` with `--ignored`.
#[test]
#[ignore = "downloads the test tools from PyPI; .ci/run runs it"]
fn the_checks_set_up_on_a_python_that_refuses_system_wide_installs() {
    let tmp = tempfile::tempdir().unwrap();
    let python = externally_managed_python(&tmp.path().join("python"));
    let packages = || {
        let lib = tmp.path().join("python/lib");
        let version = lib.read_dir().unwrap().next().unwrap().unwrap().path();
        std::fs::read_dir(version.join("site-packages"))
            .unwrap()
            .count()
    };
    let before = packages();
    // The interpreter is externally managed as PEP 668 defines it (the
    // marker in its stdlib, not a virtualenv), and cannot install into
    // itself (pip refuses; Debian's base Python has ensurepip disabled).
    let managed = Command::new(&python)
        .args([
            "-c",
            "import os, sys, sysconfig; print(os.path.isfile(os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')) and sys.prefix == sys.base_prefix)",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&managed.stdout).trim(), "True");
    let refused = Command::new(&python)
        .args(["-m", "ensurepip", "--default-pip"])
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&refused.stdout),
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(
        !refused.status.success()
            && (said.contains("externally-managed") || said.contains("ensurepip is disabled")),
        "{said}"
    );

    let venv = tmp.path().join("ci-python");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let setup = Command::new("bash")
        .arg(root.join(".ci/setup"))
        .env("SWARM_CI_PYTHON", &python)
        .env("SWARM_CI_VENV", &venv)
        .env("SWARM_CI_SKIP_FIXTURES", "1")
        .env("SWARM_CI_NO_BROWSER", "1")
        .env_remove("VIRTUAL_ENV")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&setup.stderr);
    assert!(setup.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&setup.stdout).contains("export VIRTUAL_ENV="));
    let tools = Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import pytest, pylint; print(pytest.__version__, pylint.__version__)",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&tools.stdout).trim(), "9.2.0 4.1.4");
    let after = packages();
    assert_eq!(before, after, "nothing was installed into the interpreter");
}
