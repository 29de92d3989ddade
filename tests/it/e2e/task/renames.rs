//! Renames as real refactorings go, each in the three reply shapes (see
//! [`super::shapes`]): a class renamed across a package with and without
//! the old name kept as an alias, and a function renamed with its callers
//! and an alias. The public-name check follows Python's rules (a plain
//! import in a module is not its API) and maps the rename in values, so
//! each is delivered; a rename that also reorders a public function's
//! parameters is refused, naming the function.

use super::projects::*;
use super::shapes::{plan, reference_model, Reference, Shape, SHAPES};
use super::{assert_delivered, python, run_task, statuses, task_prompts};
use crate::e2e::summary_of;

/// The public-name checks the log holds, as their one-line outcome.
pub fn api_checks(fx: &super::Repo) -> Vec<String> {
    fx.log()
        .iter()
        .filter(|e| {
            e["details"]["input_prompt"]
                .as_str()
                .is_some_and(|p| p.starts_with("public-name check"))
        })
        .map(|e| {
            e["details"]["output_response"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

fn inventory_reference(alias: bool) -> Reference {
    let renamed = |text: &str| text.replace("StockItem", "InventoryItem");
    let mut models = renamed(INVENTORY_MODELS);
    let mut init = renamed(INVENTORY_INIT);
    if alias {
        models.push_str(
            "\n\n# The old name, so existing imports keep working.\nStockItem = InventoryItem\n",
        );
        init = init.replace("import InventoryItem,", "import InventoryItem, StockItem,");
    }
    vec![
        ("inventory/models.py".into(), Some(models)),
        ("inventory/store.py".into(), Some(renamed(INVENTORY_STORE))),
        (
            "inventory/report.py".into(),
            Some(renamed(INVENTORY_REPORT)),
        ),
        ("inventory/__init__.py".into(), Some(init)),
    ]
}

const INVENTORY_FILES: [&str; 4] = [
    "inventory/__init__.py",
    "inventory/models.py",
    "inventory/store.py",
    "inventory/report.py",
];

fn rename_class(shape: Shape, alias: bool) {
    let fx = inventory();
    let start = fx.repo.head();
    let plan = plan(
        "Rename StockItem to InventoryItem",
        "preserving",
        &INVENTORY_FILES,
        &[],
        &[],
    );
    let server = reference_model(&plan, shape, inventory_reference(alias));
    let instruction = if alias {
        "Rename the class StockItem to InventoryItem everywhere in the inventory package; keep StockItem as an alias"
    } else {
        "Rename the class StockItem to InventoryItem everywhere in the inventory package"
    };
    let out = run_task(&fx, &server, instruction, &["--max-iterations", "10"]);
    let summary = assert_delivered(&fx, &out, &start);
    assert_eq!(statuses(&summary)[0].1, "done", "{shape:?}: {summary}");
    for path in ["inventory/store.py", "inventory/report.py"] {
        assert!(
            !fx.repo.read(path).contains("StockItem"),
            "{shape:?} {path}"
        );
    }
    let check = "from inventory import InventoryItem, Store; from inventory.models import parse_item; \
                 print(type(parse_item('D4, Dice, 1, 2.0')).__name__, Store().load(['D4, Dice, 1, 2.0']).total_value())";
    assert_eq!(python(&fx, check), "InventoryItem 2.0", "{shape:?}");
    let kept = python(
        &fx,
        "import inventory.models as m; print(hasattr(m, 'StockItem'))",
    );
    assert_eq!(kept, if alias { "True" } else { "False" }, "{shape:?}");
    // The public-name check passed on the change that was delivered.
    let checks = api_checks(&fx);
    let last = checks
        .last()
        .unwrap_or_else(|| panic!("{shape:?}: no public-name check"));
    assert!(last.starts_with("public names: "), "{shape:?}: {checks:?}");
    if shape == Shape::OneFilePerReply {
        // One reply per file, then done: the red steps in between built on
        // each other rather than starting over.
        assert_eq!(task_prompts(&server).len(), 5, "{shape:?}");
    }
}

#[test]
fn a_class_renamed_across_a_package_keeping_the_old_name_is_delivered_in_every_shape() {
    for shape in SHAPES {
        rename_class(shape, true);
    }
}

#[test]
fn a_class_renamed_across_a_package_without_the_old_name_is_delivered_in_every_shape() {
    for shape in SHAPES {
        rename_class(shape, false);
    }
}

fn invoice_reference(reorder: bool) -> Reference {
    let mut pricing = PRICING.replace("def calc_total(", "def compute_total(")
        + "\n\n# The old name, for callers not yet updated.\ncalc_total = compute_total\n";
    if reorder {
        pricing = pricing.replace(
            "compute_total(lines, tax_rate=TAX_RATE, discount=0.0)",
            "compute_total(lines, discount=0.0, tax_rate=TAX_RATE)",
        );
    }
    vec![
        ("pricing.py".into(), Some(pricing)),
        (
            "invoice.py".into(),
            Some(INVOICE.replace("calc_total", "compute_total")),
        ),
        (
            "checkout.py".into(),
            Some(CHECKOUT.replace("calc_total", "compute_total")),
        ),
    ]
}

const RENAME_FUNCTION: &str =
    "Rename calc_total() to compute_total() and update its callers; keep calc_total as an alias";

#[test]
fn a_function_renamed_with_its_callers_and_an_alias_is_delivered_in_every_shape() {
    for shape in SHAPES {
        let fx = invoice();
        let start = fx.repo.head();
        let plan = plan(
            "Rename calc_total",
            "preserving",
            &["pricing.py", "invoice.py", "checkout.py"],
            &[],
            &[],
        );
        let server = reference_model(&plan, shape, invoice_reference(false));
        let out = run_task(&fx, &server, RENAME_FUNCTION, &[]);
        let summary = assert_delivered(&fx, &out, &start);
        assert_eq!(statuses(&summary)[0].1, "done", "{shape:?}");
        assert!(fx
            .repo
            .read("invoice.py")
            .contains("from pricing import compute_total"));
        assert!(fx.repo.read("checkout.py").contains("compute_total(basket"));
        let same = python(
            &fx,
            "import pricing; print(pricing.calc_total is pricing.compute_total)",
        );
        assert_eq!(same, "True", "{shape:?}");
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
fn a_rename_that_also_reorders_parameters_is_refused_naming_the_function() {
    let fx = invoice();
    let start = fx.repo.head();
    let before = fx.repo.snapshot();
    let plan = plan(
        "Rename calc_total",
        "preserving",
        &["pricing.py", "invoice.py", "checkout.py"],
        &[],
        &[],
    );
    let server = reference_model(&plan, Shape::Whole, invoice_reference(true));
    let out = run_task(&fx, &server, RENAME_FUNCTION, &["--max-iterations", "4"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert_eq!(summary_of(&out.stdout)["status"], "gave_up");
    assert_eq!(fx.repo.head(), start);
    assert_eq!(fx.repo.snapshot(), before);
    let checks = api_checks(&fx);
    let refused = checks
        .iter()
        .find(|c| c.starts_with("public names lost or changed"))
        .unwrap_or_else(|| panic!("no refusal: {checks:?}"));
    assert!(
        refused.contains("pricing.calc_total (as compute_total): different (parameters reordered"),
        "{refused}"
    );
}
