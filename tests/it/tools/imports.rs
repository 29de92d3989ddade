//! The compile-and-import check on a package with a syntax error, a failing
//! import and an import that never finishes.

use std::time::{Duration, Instant};

use swarm::cancel::Cancel;
use swarm::tools::*;

use crate::support::*;

#[test]
fn import_check_reports_compile_errors_failures_and_hangs() {
    let dir = project(&[
        ("pkg/__init__.py", ""),
        (
            "pkg/good.py",
            "from . import helper\nVALUE = helper.ONE + 1\n",
        ),
        ("pkg/helper.py", "ONE = 1\n"),
        ("pkg/broken.py", "def f(:\n    pass\n"),
        ("pkg/loops.py", "while True:\n    pass\n"),
        ("pkg/needs.py", "import not_a_real_module_xyz\n"),
        (
            "tests/test_pkg.py",
            "raise SystemExit('test files are not imported')\n",
        ),
    ]);
    let files: Vec<String> = [
        "pkg/__init__.py",
        "pkg/good.py",
        "pkg/helper.py",
        "pkg/broken.py",
        "pkg/loops.py",
        "pkg/needs.py",
        "tests/test_pkg.py",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let started = Instant::now();
    let check = check_imports(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        &files,
        Duration::from_secs(2),
        &Cancel::new(),
    )
    .expect("the check runs");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(check.compile_errors.len(), 1);
    assert_eq!(check.compile_errors[0].0, "pkg/broken.py");
    assert!(
        check.compile_errors[0].1.contains("SyntaxError"),
        "{:?}",
        check.compile_errors
    );
    assert!(check.compile_errors[0].1.contains("line 1"));
    let errors: Vec<(&str, &str)> = check
        .import_errors
        .iter()
        .map(|(p, e)| (p.as_str(), e.as_str()))
        .collect();
    assert_eq!(
        errors,
        [
            ("pkg/loops.py", "did not finish importing within 2s"),
            (
                "pkg/needs.py",
                "ModuleNotFoundError: No module named 'not_a_real_module_xyz'"
            ),
        ]
    );
    assert!(
        check
            .output
            .contains("7 files compiled, 1 with errors; 5 modules imported, 2 with errors"),
        "{}",
        check.output
    );
    assert!(!list_files(dir.path())
        .iter()
        .any(|f| f.contains("__pycache__")));
}
