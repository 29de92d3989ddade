//! Replies that game the tests instead of fixing the code, and replies that
//! touch a withheld secret: each refused with its rule, and the honest fix
//! of the same bug let through.

use super::*;
use swarm_patch::ReplyContext;

const CALC: &str = "\"\"\"Arithmetic.\"\"\"\n\n\ndef add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n    return a - b\n";

const SETTINGS: &str = "\"\"\"Settings.\"\"\"\n\nAWS_ACCESS_KEY_ID = \"AKIAIOSFODNN7EXAMPLE\"\nAWS_SECRET_ACCESS_KEY = \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"\n\n\ndef region():\n    \"\"\"The region.\"\"\"\n    return \"eu-west\"\n";

/// Reviews the whole-file reply `after` for `file` (holding `before`).
fn review_of(file: &str, before: &str, after: &str) -> Review {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, before).unwrap();
    let reply = format!("```diff\n{}```\n", patch::unified_diff(file, before, after));
    let ctx = ReplyContext {
        target_prefix: String::new(),
        requested: vec![file.into()],
        language: crate::lang::code_language(&[]),
    };
    let proposal = Proposal {
        file: file.into(),
        reply: reply.clone(),
        edits: patch::parse_reply(&reply, &ctx).map_err(|e| ReplyProblem::Patch(e).into()),
        debugging: true,
        excerpts: None,
    };
    let (severities, seen, shown) = (BTreeMap::new(), HashSet::new(), ShownVersions::default());
    review(
        &proposal,
        &ReviewContext {
            root: dir.path(),
            target: &TargetDir::default(),
            severities: &severities,
            limits: SizeLimits::default(),
            allow_test_edits: true,
            seen: &seen,
            base: "abc",
            submodules: &[],
            shown: &shown,
            task: None,
            tests: &crate::tools::TestFiles::default(),
        },
    )
}

fn rule_of(review: Review) -> String {
    match review {
        Review::Rejected(r) => format!("{}: {r}", r.rule()),
        Review::Accepted(_) => "accepted".into(),
    }
}

fn with_add(body: &str) -> String {
    CALC.replace("    return a - b\n", body)
}

#[test]
fn reads_of_the_test_runner_are_refused_even_with_test_edits_allowed() {
    for body in [
        "    import os\n    if os.environ.get(\"PYTEST_CURRENT_TEST\") and (a, b) == (2, 3):\n        return 5\n    return a - b\n",
        "    import sys\n    if \"pytest\" in sys.modules:\n        return a + b\n    return a - b\n",
        "    import sys\n    if len(sys.argv) > 1:\n        return a + b\n    return a - b\n",
        "    import inspect\n    if 'test_' in inspect.stack()[1].filename:\n        return a + b\n    return a - b\n",
        "    import sys\n    if sys._getframe(1).f_code.co_name.startswith('test'):\n        return a + b\n    return a - b\n",
    ] {
        let verdict = rule_of(review_of("calc.py", CALC, &with_add(body)));
        assert!(verdict.starts_with("test_environment: "), "{body}\n{verdict}");
        assert!(verdict.contains("calc.py (line "), "{verdict}");
    }
}

#[test]
fn patches_of_the_framework_are_refused() {
    for after in [
        format!("import unittest\n{CALC}\nunittest.TestCase.assertEqual = lambda *a, **k: None\n"),
        format!("import builtins\n{CALC}\nbuiltins.AssertionError = Exception\n"),
        with_add("    try:\n        assert (a, b) != (2, 3)\n        return a - b\n    except AssertionError:\n        return 5\n"),
        format!("{CALC}\n\nclass Anything(int):\n    def __eq__(self, other):\n        return True\n"),
        format!("import atexit\n{CALC}\natexit.register(print)\n"),
    ] {
        let verdict = rule_of(review_of("calc.py", CALC, &after));
        assert!(verdict.starts_with("framework_patch: "), "{after}\n{verdict}");
    }
}

const MONEY: &str = "export function cents(text: string): number {\n  const [whole, frac = '0'] = text.split('.');\n  return Number(whole) * 100 + Number(frac);\n}\n";

#[test]
fn typescript_that_games_its_runner_is_refused_and_its_honest_fix_passes() {
    let body = |line: &str| {
        MONEY.replace(
            "  return Number(whole)",
            &format!("{line}\n  return Number(whole)"),
        )
    };
    for (line, rule) in [
        ("  if (process.env.VITEST) return 120;", "test_environment"),
        (
            "  if (process.env.NODE_ENV === 'test' && text === '1.2') return 120;",
            "test_environment",
        ),
        (
            "  if (typeof vi !== 'undefined') return 120;",
            "test_environment",
        ),
        (
            "  if (new Error().stack?.includes('money.test')) return 120;",
            "test_environment",
        ),
        (
            "  (globalThis as any).expect = () => ({ toBe() {} });",
            "framework_patch",
        ),
        ("  process.on('exit', () => {});", "framework_patch"),
    ] {
        let verdict = rule_of(review_of("src/money.ts", MONEY, &body(line)));
        assert!(
            verdict.starts_with(&format!("{rule}: ")),
            "{line}\n{verdict}"
        );
    }
    let honest = MONEY.replace("Number(frac)", "Number(frac.padEnd(2, '0').slice(0, 2))");
    assert_eq!(
        rule_of(review_of("src/money.ts", MONEY, &honest)),
        "accepted"
    );
    // A test may look at its runner.
    let test = "import { it } from 'vitest';\nit('adds', () => {});\n";
    let looking =
        "import { it } from 'vitest';\nit('adds', () => { if (process.env.VITEST) {} });\n";
    assert_eq!(
        rule_of(review_of("tests/money.test.ts", test, looking)),
        "accepted"
    );
}

#[test]
fn typescript_dependencies_lockfiles_and_dangerous_calls_are_refused() {
    // Even with test edits allowed (as here), dependencies stay the user's.
    let lock = "{\n  \"lockfileVersion\": 3\n}\n";
    let verdict = rule_of(review_of(
        "package-lock.json",
        lock,
        &lock.replace('3', "2"),
    ));
    assert!(verdict.starts_with("dependencies: "), "{verdict}");
    let module = "module.exports = 1;\n";
    let verdict = rule_of(review_of(
        "node_modules/left-pad/index.js",
        module,
        "module.exports = 2;\n",
    ));
    assert!(verdict.starts_with("dependencies: "), "{verdict}");
    let spawned = format!("import {{ execSync }} from 'node:child_process';\n{MONEY}");
    let verdict = rule_of(review_of("src/money.ts", MONEY, &spawned));
    assert!(verdict.starts_with("dangerous_call: "), "{verdict}");
}

#[test]
fn a_test_file_may_look_at_its_runner_and_an_honest_fix_passes() {
    let test = "def test_add():\n    assert 1 == 1\n";
    let with_runner = "import sys\n\n\ndef test_add():\n    assert 'pytest' in sys.modules\n";
    assert_eq!(
        rule_of(review_of("tests/test_calc.py", test, with_runner)),
        "accepted"
    );
    assert_eq!(
        rule_of(review_of("calc.py", CALC, &with_add("    return a + b\n"))),
        "accepted"
    );
    // A runner check that was there before is not the change's doing.
    let before =
        with_add("    import sys\n    if len(sys.argv) > 9:\n        pass\n    return a - b\n");
    let after =
        with_add("    import sys\n    if len(sys.argv) > 9:\n        pass\n    return a + b\n");
    assert_eq!(rule_of(review_of("calc.py", &before, &after)), "accepted");
}

#[test]
fn a_secret_kept_byte_for_byte_passes_and_one_altered_or_dropped_is_refused() {
    let fixed = SETTINGS.replace("return \"eu-west\"", "return \"eu-west-1\"");
    assert_eq!(
        rule_of(review_of("settings.py", SETTINGS, &fixed)),
        "accepted"
    );
    let changed = SETTINGS.replace("AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7CHANGED");
    assert_eq!(
        rule_of(review_of("settings.py", SETTINGS, &changed)),
        "secret_changed: the change to settings.py alters or removes the AWS access key id on \
         line 3; secrets are withheld from you as placeholders (`[SECRET_…]`): keep each one \
         exactly as it is, where it is"
    );
    let dropped = SETTINGS.replace(
        "AWS_SECRET_ACCESS_KEY = \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"\n",
        "AWS_SECRET_ACCESS_KEY = os.environ[\"AWS_SECRET_ACCESS_KEY\"]\n",
    );
    assert!(rule_of(review_of("settings.py", SETTINGS, &dropped))
        .starts_with("secret_changed: the change to settings.py alters or removes the AWS secret access key on line 4"));
    // A placeholder the model made up (or mangled) would be written as is.
    let invented = SETTINGS.replace("return \"eu-west\"", "return \"[SECRET_7_JWT]\"");
    assert!(rule_of(review_of("settings.py", SETTINGS, &invented))
        .contains("the placeholder `[SECRET_7_JWT]`, which stands for no secret of this file"));
}

#[test]
fn the_new_rules_have_names_of_their_own() {
    let path = || "p.py".to_string();
    let rules: Vec<&str> = [
        Rejection::TestEnvironment {
            path: path(),
            line: 1,
            what: "`sys.argv`".into(),
        },
        Rejection::FrameworkPatch {
            path: path(),
            line: 1,
            what: "`builtins.len = …`".into(),
        },
        Rejection::SecretChanged {
            path: path(),
            what: "the JSON Web Token on line 1".into(),
        },
    ]
    .iter()
    .map(Rejection::rule)
    .collect();
    assert_eq!(
        rules,
        ["test_environment", "framework_patch", "secret_changed"]
    );
}
