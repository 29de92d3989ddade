use super::*;

const GENERATED: &str = "import pytest\nfrom stats import mean\n\n\n\
def test_mean():\n    assert mean([1, 2, 3]) == 2.0\n\n\n\
def test_nothing():\n    mean([1, 2])\n\n\n\
def test_true():\n    assert True\n\n\n\
class TestMore:\n    def test_x(self):\n        assert mean([1]) == 1\n";

/// The step a test failed, if any.
fn failed_at(fate: &TestFate) -> Option<Step> {
    fate.steps.iter().find(|s| !s.passed).map(|s| s.step)
}

#[test]
fn python_comes_from_the_fence_or_the_whole_reply() {
    let fenced = "Here are tests.\n\n```python\nimport stats\n```\nDone.";
    assert_eq!(extract_python(fenced).as_deref(), Some("import stats\n"));
    let bare = "from stats import mean\n\ndef test_a():\n    assert mean([2]) == 2\n";
    assert_eq!(extract_python(bare).as_deref(), Some(bare));
    assert_eq!(extract_python("I cannot write tests for this."), None);
    assert_eq!(extract_python("```diff\n-a\n+b\n```\n"), None);
}

#[test]
fn names_and_places_follow_the_module() {
    assert_eq!(module_of("stats.py"), "stats");
    assert_eq!(module_of("pkg/money.py"), "pkg.money");
    assert_eq!(module_of("pkg/__init__.py"), "pkg");
    assert_eq!(test_path("stats.py"), "tests/test_stats_swarm.py");
    assert_eq!(test_path("pkg/money.py"), "tests/test_pkg_money_swarm.py");
}

#[test]
fn the_static_steps_keep_real_assertions_only() {
    let reply = format!("```python\n{GENERATED}```\n");
    let generated = prepare("stats.py", &reply);
    assert_eq!(generated.note, None);
    let fates: Vec<(&str, bool)> = generated
        .tests
        .iter()
        .map(|t| (t.test.as_str(), t.kept))
        .collect();
    assert_eq!(
        fates,
        [
            ("test_mean", true),
            ("test_nothing", false),
            ("test_true", false),
            ("TestMore", false)
        ]
    );
    let nothing = &generated.tests[1];
    assert_eq!(failed_at(nothing), Some(Step::RealAssertions));
    assert!(
        nothing
            .reason
            .as_deref()
            .unwrap()
            .contains("does not raise"),
        "{nothing:?}"
    );
}

#[test]
fn a_file_that_does_not_import_the_module_keeps_nothing() {
    let generated = prepare(
        "stats.py",
        "```python\ndef test_a():\n    assert 1 + 1 == 2\n```\n",
    );
    assert_eq!(generated.kept(), 0);
    assert_eq!(failed_at(&generated.tests[0]), Some(Step::ImportsModule));
    let broken = prepare("stats.py", "```python\ndef test_a(:\n    pass\n```\n");
    assert!(broken.note.as_deref().unwrap().contains("does not parse"));
    assert!(!broken.file_steps[0].passed);
}

#[test]
fn the_kept_file_leaves_the_dropped_tests_out() {
    let generated = prepare("stats.py", GENERATED);
    let text = generated.kept_text("stats").expect("one test kept");
    assert!(text.contains("def test_mean():"), "{text}");
    assert!(text.starts_with("\"\"\"Characterization tests of `stats.py`"));
    // pytest was only used by nothing kept: its import went with them.
    assert!(text.contains("\nfrom stats import mean\n") && !text.contains("import pytest"));
    for dropped in ["test_nothing", "test_true", "TestMore"] {
        assert!(!text.contains(dropped), "{dropped} left in:\n{text}");
    }
    assert!(!text.contains("\n\n\n\n"), "{text}");
    assert_eq!(swarm_analysis::check_syntax(&text), Ok(()));
}

#[test]
fn call_sites_are_lines_of_other_files_calling_public_functions() {
    let text = "def mean(v):\n    return v\n\n\ndef _hidden():\n    pass\n";
    let sources = vec![
        ("stats.py".to_string(), "x = mean([0])\n".to_string()),
        (
            "report.py".to_string(),
            "from stats import mean\nprint(mean([1, 2, 3]))\nremean(1)\n_hidden()\n".to_string(),
        ),
    ];
    assert_eq!(
        call_sites("stats.py", text, &sources),
        ["report.py:2: print(mean([1, 2, 3]))"]
    );
}

#[test]
fn a_docstring_example_with_the_tests_call_and_result_makes_the_fix_intended() {
    let source =
        "from stats import mean\n\n\ndef test_mean_of_two():\n    assert mean([1,  2]) == 1.5\n";
    let generated = prepare("stats.py", source);
    let documented = "def mean(values):\n    \"\"\"The mean.\n\n    >>> mean([1, 2])\n    1.5\n    \"\"\"\n    return sum(values) // len(values)\n";
    assert_eq!(
        generated
            .intended("test_mean_of_two", None, Some(documented))
            .as_deref(),
        Some("a docstring of stats.py shows `mean([1, 2])` giving `1.5`")
    );
    // Another result, another call, or no example: not intended.
    let other_result = documented.replace("    1.5\n", "    1\n");
    let other_call = documented.replace(">>> mean([1, 2])", ">>> mean([4, 2])");
    let no_result = documented.replace("    1.5\n", "");
    for original in [other_result, other_call, no_result] {
        assert_eq!(
            generated.intended("test_mean_of_two", None, Some(&original)),
            None,
            "{original}"
        );
    }
}

#[test]
fn a_set_aside_test_counts_only_when_the_plan_calls_it_a_bug_and_it_passes() {
    let source =
        "from stats import mean\n\n\ndef test_mean_of_two():\n    assert mean([1, 2]) == 1.5\n";
    let mut generated = prepare("stats.py", source);
    generated.tests[0].kept = false;
    generated.tests[0].fails_on_original = true;
    assert_eq!(generated.set_aside(), ["test_mean_of_two"]);
    let bug = "- **Type**: bug\n  **Location**: `mean()` floors the result\n";
    let style = "- **Type**: style\n  **Location**: `mean()` is long\n";
    let why = generated.intended("test_mean_of_two", Some(bug), None);
    assert_eq!(
        why.as_deref(),
        Some("the plan calls `mean` of stats.py a bug")
    );
    assert_eq!(
        generated.intended("test_mean_of_two", Some(style), None),
        None
    );
    assert_eq!(generated.intended("test_mean_of_two", None, None), None);

    let mut unplanned = generated.clone();
    unplanned.settle("test_mean_of_two", None, None);
    assert!(!unplanned.tests[0].kept);
    assert!(unplanned.tests[0]
        .reason
        .as_deref()
        .unwrap()
        .contains("not known to be intended"));
    let mut still = generated.clone();
    still.settle(
        "test_mean_of_two",
        Some("run 1: assert 1 == 1.5".into()),
        why.clone(),
    );
    assert!(!still.tests[0].kept);
    generated.settle("test_mean_of_two", None, why);
    assert!(generated.tests[0].kept);
    assert_eq!(generated.tests[0].reason, None);
    assert_eq!(failed_at(&generated.tests[0]), None);
    assert!(generated
        .kept_text("stats")
        .unwrap()
        .contains("def test_mean_of_two"));
}
