//! A function moved to a new module with its old import kept, and a
//! behaviour change that rewrites a test, each in the three reply shapes
//! (see [`super::shapes`]). The move is delivered with the public-name
//! check passing; a move that also drops a public helper is refused,
//! naming it. The behaviour change is delivered with `--allow-test-edits`
//! (the test change in the commit) and stops without it, naming the test
//! and the flag.

use super::projects::*;
use super::renames::api_checks;
use super::shapes::{plan, reference_model, Reference, Shape, SHAPES};
use super::{assert_delivered, python, run_task, statuses, task_prompts};
use crate::e2e::summary_of;

const SLUG: &str = r#""""Slugs: text made safe for a URL."""
import re
import unicodedata

_NON_WORD = re.compile(r"[^a-z0-9]+")


def slugify(text, separator="-"):
    """A URL-safe slug of `text`: 'Hello, World!' gives 'hello-world'."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return _NON_WORD.sub(separator, ascii_text.lower()).strip(separator)
"#;

const TEXT_UTILS_AFTER: &str = r#""""Small helpers for text."""
from slug import slugify

__all__ = ["initials", "slugify", "truncate", "word_count"]


def word_count(text):
    """How many words `text` has."""
    return len(text.split())


def truncate(text, width=40, suffix="..."):
    """`text` cut to `width` characters, ending in `suffix` when cut."""
    if len(text) <= width:
        return text
    return text[: width - len(suffix)].rstrip() + suffix


def initials(name):
    """The initials of a name: 'Ada Lovelace' gives 'AL'."""
    return "".join(part[0].upper() for part in name.split() if part)
"#;

const MOVE: &str = "move slugify() out of text_utils.py into a new module slug.py; keep `from text_utils import slugify` working";

fn move_reference(drop_initials: bool) -> Reference {
    let mut text_utils = TEXT_UTILS_AFTER.to_string();
    let blog = BLOG.replace(
        "from text_utils import slugify, truncate, word_count",
        "from slug import slugify\nfrom text_utils import truncate, word_count",
    );
    if drop_initials {
        // No test and no module uses it: only the public-name check can
        // see it go.
        let at = text_utils
            .find("\n\ndef initials")
            .unwrap_or(text_utils.len());
        text_utils.truncate(at + 1);
        text_utils = text_utils.replace("\"initials\", ", "");
    }
    // The new module first, then its users, then the old module: a
    // person's order, and the one that is red in the middle.
    vec![
        ("slug.py".into(), Some(SLUG.to_string())),
        ("text_utils.py".into(), Some(text_utils)),
        ("blog.py".into(), Some(blog)),
    ]
}

fn move_plan() -> String {
    plan(
        "Move slugify into slug.py",
        "preserving",
        &["text_utils.py", "blog.py"],
        &["slug.py"],
        &[],
    )
}

#[test]
fn a_function_moved_to_a_new_module_keeping_its_old_import_is_delivered_in_every_shape() {
    for shape in SHAPES {
        let fx = text_utils();
        let start = fx.repo.head();
        let server = reference_model(&move_plan(), shape, move_reference(false));
        let out = run_task(&fx, &server, MOVE, &[]);
        let summary = assert_delivered(&fx, &out, &start);
        assert_eq!(statuses(&summary)[0].1, "done", "{shape:?}");
        assert!(fx.repo.read("slug.py").contains("def slugify"));
        assert!(!fx.repo.read("text_utils.py").contains("def slugify"));
        let same = python(&fx, "import slug, text_utils; print(slug.slugify is text_utils.slugify, text_utils.slugify('A b'))");
        assert_eq!(same, "True a-b", "{shape:?}");
        let checks = api_checks(&fx);
        assert!(
            checks
                .last()
                .is_some_and(|c| c.starts_with("public names: ")),
            "{shape:?}: {checks:?}"
        );
    }
}

#[test]
fn a_move_that_also_drops_a_public_helper_is_refused_naming_it() {
    let fx = text_utils();
    let start = fx.repo.head();
    let server = reference_model(&move_plan(), Shape::Whole, move_reference(true));
    let out = run_task(&fx, &server, MOVE, &["--max-iterations", "4"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert_eq!(fx.repo.head(), start);
    let checks = api_checks(&fx);
    assert!(
        checks
            .iter()
            .any(|c| c.starts_with("public names lost or changed: text_utils.initials: missing")),
        "{checks:?}"
    );
}

#[test]
fn said_done_without_the_change_is_not_done_and_nothing_changed_is_not_success() {
    let fx = text_utils();
    let start = fx.repo.head();
    let two = "```json\n{\"tasks\": [{\"title\": \"Create slug.py with slugify\", \"kind\": \"preserving\", \
               \"create\": [\"slug.py\"]}, {\"title\": \"Import slugify from slug in text_utils\", \
               \"kind\": \"preserving\", \"change\": [\"text_utils.py\"], \"depends_on\": [1]}]}\n```\n";
    let server = super::model(two.into(), |_, _| "TASK DONE".into());
    let out = run_task(&fx, &server, MOVE, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_ne!(summary["status"], "success", "{summary}");
    assert_eq!(statuses(&summary)[0].1, "skipped", "{summary}");
    assert!(stderr.contains("slug.py does not exist"), "{stderr}");
    assert!(!fx.repo.root.join("slug.py").exists());
    assert_eq!(fx.repo.head(), start);
}

const EMPTY_ZERO: &str =
    "Make average() return 0.0 for an empty list instead of raising ValueError";

fn stats_reference() -> Reference {
    let stats = STATS
        .replace(
            "\"\"\"The arithmetic mean of `values`; ValueError when there are none.\"\"\"\n    if not values:\n        raise ValueError(\"average() of an empty list\")",
            "\"\"\"The arithmetic mean of `values`; 0.0 when there are none.\"\"\"\n    if not values:\n        return 0.0",
        );
    let tests = STATS_TESTS
        .replace(
            "def test_average_of_empty_raises():\n    with pytest.raises(ValueError):\n        average([])",
            "def test_average_of_empty_is_zero():\n    assert average([]) == 0.0",
        )
        .replace("import pytest\n\n", "");
    vec![
        ("stats.py".into(), Some(stats)),
        ("tests/test_stats.py".into(), Some(tests)),
    ]
}

/// The scripted model edits the test whether or not the prompt shows it
/// (the plan drops it without the flag): what a model does.
fn stats_model(shape: Shape) -> crate::support::llm_server::LlmServer {
    let plan = plan(
        "Return 0.0 for an empty list",
        "change",
        &["stats.py", "tests/test_stats.py"],
        &[],
        &[],
    );
    let reference = stats_reference();
    super::model(plan, move |_, prompt| {
        let mut prompt = prompt.to_string();
        if !prompt.contains("### `tests/test_stats.py`") {
            prompt.push_str(&format!(
                "### `tests/test_stats.py`\n```python\n{STATS_TESTS}```\n"
            ));
        }
        super::shapes::reply(shape, &reference, &prompt)
    })
}

#[test]
fn a_behaviour_change_rewriting_a_test_is_delivered_with_the_flag_in_every_shape() {
    for shape in SHAPES {
        let fx = stats();
        let start = fx.repo.head();
        let server = stats_model(shape);
        let out = run_task(&fx, &server, EMPTY_ZERO, &["--allow-test-edits"]);
        let summary = assert_delivered(&fx, &out, &start);
        let task = &summary["tasks"]["tasks"][0];
        assert_eq!(task["status"], "done", "{shape:?}: {summary}");
        assert_eq!(
            task["tests_changed"],
            serde_json::json!(["tests/test_stats.py"])
        );
        let listed = "tests/test_stats.py (removed test_average_of_empty_raises; added test_average_of_empty_is_zero)";
        assert_eq!(
            task["test_changes"],
            serde_json::json!([listed]),
            "{shape:?}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("tests changed: {listed}")),
            "{shape:?}: {stderr}"
        );
        // The test the task replaced is neither missing nor counted: four
        // tests before, four after, all passing.
        assert_eq!(
            summary["tests_after"],
            serde_json::json!({"passed": 4, "total": 4}),
            "{shape:?}: {summary}"
        );
        assert!(
            !stderr.contains("missing, deselected"),
            "{shape:?}: {stderr}"
        );
        assert!(fx
            .repo
            .read("tests/test_stats.py")
            .contains("test_average_of_empty_is_zero"));
        assert_eq!(python(&fx, "import stats; print(stats.average([]))"), "0.0");
        let changed = fx.repo.git(&[
            "log",
            "--name-only",
            "--format=%B",
            &format!("{start}..HEAD"),
        ]);
        assert!(
            changed.contains("tests/test_stats.py"),
            "{shape:?}: {changed}"
        );
        assert!(
            changed.contains("Swarm-Tests-Changed: tests/test_stats.py (removed test_average_of_empty_raises; added test_average_of_empty_is_zero)"),
            "{shape:?}: {changed}"
        );
        let _ = task_prompts(&server);
    }
}

#[test]
fn a_behaviour_change_rewriting_a_test_stops_without_the_flag_naming_the_test_in_every_shape() {
    for shape in SHAPES {
        let fx = stats();
        let start = fx.repo.head();
        let before = fx.repo.snapshot();
        let server = stats_model(shape);
        let out = run_task(&fx, &server, EMPTY_ZERO, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{shape:?}: {stderr}");
        let line = stderr
            .lines()
            .find(|l| l.contains("changes behaviour that tests expect"))
            .unwrap_or_else(|| panic!("{shape:?}: no conflict line:\n{stderr}"));
        assert!(
            line.contains("tests/test_stats.py::test_average_of_empty_raises ("),
            "{line}"
        );
        assert!(line.contains("DID NOT RAISE"), "{line}");
        assert!(line.contains("--allow-test-edits"), "{line}");
        assert_eq!(summary_of(&out.stdout)["stop_reason"], "test_conflict");
        assert_eq!(fx.repo.head(), start);
        assert_eq!(fx.repo.snapshot(), before);
    }
}

#[test]
fn a_run_where_every_task_says_done_without_a_change_is_not_success() {
    let fx = stats();
    let start = fx.repo.head();
    let plan = plan(
        "Add type hints to stats",
        "preserving",
        &["stats.py"],
        &[],
        &[],
    );
    let server = super::model(plan, |_, _| {
        "TASK DONE: the module is fine as it is.".into()
    });
    let out = run_task(&fx, &server, "add type hints to stats.py", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "gave_up", "{summary}");
    assert_eq!(summary["stop_reason"], "nothing_changed", "{summary}");
    assert!(stderr.contains("no task changed anything"), "{stderr}");
    assert_eq!(fx.repo.head(), start);
}

/// `text_utils.py` split in two: the slug helpers and the rest, the old
/// module a package re-exporting both.
fn split_reference() -> Reference {
    let words = TEXT_UTILS_AFTER
        .replace("from slug import slugify\n\n__all__ = [\"initials\", \"slugify\", \"truncate\", \"word_count\"]\n", "")
        .replace("\"\"\"Small helpers for text.\"\"\"\n", "\"\"\"Helpers for words.\"\"\"\n");
    let init = "\"\"\"Small helpers for text.\"\"\"\nfrom text_utils.slugs import slugify\n\
                from text_utils.words import initials, truncate, word_count\n\n\
                __all__ = [\"initials\", \"slugify\", \"truncate\", \"word_count\"]\n";
    vec![
        ("text_utils/slugs.py".into(), Some(SLUG.to_string())),
        ("text_utils/words.py".into(), Some(words)),
        ("text_utils/__init__.py".into(), Some(init.to_string())),
        ("text_utils.py".into(), None),
    ]
}

#[test]
fn a_module_split_into_a_package_keeps_its_public_names_in_every_shape() {
    let files = [
        "text_utils/slugs.py",
        "text_utils/words.py",
        "text_utils/__init__.py",
    ];
    for shape in SHAPES {
        let fx = text_utils();
        let start = fx.repo.head();
        let plan = plan(
            "Split text_utils into a package",
            "preserving",
            &[],
            &files,
            &["text_utils.py"],
        );
        let server = reference_model(&plan, shape, split_reference());
        let instruction = "split text_utils.py into a package text_utils with a module for slugs and one for words";
        let out = run_task(&fx, &server, instruction, &["--max-iterations", "10"]);
        let summary = assert_delivered(&fx, &out, &start);
        assert_eq!(statuses(&summary)[0].1, "done", "{shape:?}");
        assert!(!fx.repo.root.join("text_utils.py").exists(), "{shape:?}");
        let names = python(&fx, "import text_utils as t; print(t.slugify('A b'), t.initials('ada lovelace'), t.__file__.endswith('__init__.py'))");
        assert_eq!(names, "a-b AL True", "{shape:?}");
        let checks = api_checks(&fx);
        assert!(
            checks
                .last()
                .is_some_and(|c| c.starts_with("public names: ")),
            "{shape:?}: {checks:?}"
        );
    }
}
