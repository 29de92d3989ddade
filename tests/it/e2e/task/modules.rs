//! A module renamed whole (`rename text_utils.py to textkit.py`): with its
//! importers and (with `--allow-test-edits`) its tests updated and the old
//! file gone, delivered in every reply shape, the public-name check
//! mapping each old name to the new module; with the old path kept as a
//! re-exporting shim that forgets a name the old module gave, refused,
//! naming it.

use super::projects::*;
use super::renames::api_checks;
use super::shapes::{plan, reference_model, Reference, Shape, SHAPES};
use super::{assert_delivered, python, run_task, statuses};

const RENAME: &str =
    "Rename the module text_utils.py to textkit.py and update blog.py; keep the old imports working";

const RENAME_ALL: &str =
    "Rename the module text_utils.py to textkit.py and update every import, the tests' too";

/// The rename as a person makes it without a shim: the new module, its
/// importers and the tests, and the old file deleted.
fn reference_without_shim() -> Reference {
    vec![
        ("textkit.py".into(), Some(TEXT_UTILS.to_string())),
        (
            "blog.py".into(),
            Some(BLOG.replace("from text_utils import", "from textkit import")),
        ),
        (
            "tests/test_text_utils.py".into(),
            Some(TEXT_TESTS.replace("from text_utils import", "from textkit import")),
        ),
        ("text_utils.py".into(), None),
    ]
}

fn reference(forget_initials: bool) -> Reference {
    let names = if forget_initials {
        "slugify, truncate, word_count"
    } else {
        "initials, slugify, truncate, word_count"
    };
    let quoted: Vec<String> = names.split(", ").map(|n| format!("\"{n}\"")).collect();
    let shim = format!(
        "\"\"\"The old name of textkit, kept so existing imports work.\"\"\"\nfrom textkit import {names}\n\n__all__ = [{}]\n",
        quoted.join(", ")
    );
    vec![
        ("textkit.py".into(), Some(TEXT_UTILS.to_string())),
        (
            "blog.py".into(),
            Some(BLOG.replace("from text_utils import", "from textkit import")),
        ),
        ("text_utils.py".into(), Some(shim)),
    ]
}

fn rename_plan() -> String {
    plan(
        "Rename text_utils to textkit",
        "preserving",
        &["text_utils.py", "blog.py"],
        &["textkit.py"],
        &[],
    )
}

#[test]
fn a_module_renamed_with_its_importers_and_tests_is_delivered_in_every_shape() {
    for shape in SHAPES {
        let fx = text_utils();
        let start = fx.repo.head();
        let plan = plan(
            "Rename text_utils to textkit",
            "preserving",
            &["blog.py", "tests/test_text_utils.py"],
            &["textkit.py"],
            &["text_utils.py"],
        );
        let server = reference_model(&plan, shape, reference_without_shim());
        let out = run_task(
            &fx,
            &server,
            RENAME_ALL,
            &["--max-iterations", "10", "--allow-test-edits"],
        );
        let summary = assert_delivered(&fx, &out, &start);
        assert_eq!(statuses(&summary)[0].1, "done", "{shape:?}: {summary}");
        assert!(!fx.repo.root.join("text_utils.py").exists(), "{shape:?}");
        let moved = python(&fx, "import textkit, blog; print(textkit.initials('Ada Lovelace'), blog.Post('A b', '').slug)");
        assert_eq!(moved, "AL a-b", "{shape:?}");
        // The old module's names were compared at the new one.
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
fn a_module_rename_whose_shim_forgets_a_name_is_refused_naming_it() {
    let fx = text_utils();
    let start = fx.repo.head();
    let server = reference_model(&rename_plan(), Shape::Whole, reference(true));
    let out = run_task(&fx, &server, RENAME, &["--max-iterations", "4"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert_eq!(fx.repo.head(), start);
    let checks = api_checks(&fx);
    assert!(
        checks
            .iter()
            .any(|c| c.starts_with("public names lost or changed: ")
                && c.contains("text_utils.initials")),
        "{checks:?}"
    );
}
