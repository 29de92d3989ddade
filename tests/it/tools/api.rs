//! The public-name check's probe with real Python under the sandbox: a
//! module's public names by Python's rules (`__all__`; else what it defines
//! without a leading underscore, a redundant alias, and in a package's
//! `__init__` what it re-exports — never a plain import in a module),
//! renames applied (the new name where the old one was, the old one only
//! where asked to be kept, values compared with the rename mapped), and
//! the parameters of public callables compared.

use std::collections::BTreeMap;
use std::time::Duration;

use swarm::cancel::Cancel;
use swarm::tools::behaviour::{probe_api, ApiRequest, ApiResult};

use crate::support::*;

/// Checks `file`'s public names: `original` is its best-state text, `tree`
/// the changed project.
fn check(
    tree: &[(&str, &str)],
    file: &str,
    original: &str,
    renames: &[(&str, &str)],
    keep: &[&str],
) -> ApiResult {
    let dir = project(tree);
    let renames: BTreeMap<String, String> = renames
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let keep: Vec<String> = keep.iter().map(|k| k.to_string()).collect();
    let request = ApiRequest {
        file,
        original,
        renames: &renames,
        keep: &keep,
        calls: &[],
        import_timeout: Duration::from_secs(5),
        call_timeout: Duration::from_secs(2),
        max_samples: 5,
        max_calls: 8,
        deadline: Duration::from_secs(30),
    };
    probe_api(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        &request,
        &Cancel::new(),
    )
    .expect("the probe runs")
    .expect("a module")
}

/// `name: status` of every name compared.
fn statuses(result: &ApiResult) -> Vec<String> {
    assert_eq!(result.not_checked, None, "{result:?}");
    result
        .names
        .iter()
        .map(|n| format!("{}: {}", n.name, n.status))
        .collect()
}

const MODELS: &str = "from dataclasses import dataclass\n\n\n@dataclass\nclass StockItem:\n    sku: str\n    quantity: int = 0\n\n\n\
                      def parse_item(line):\n    parts = line.split()\n    return StockItem(parts[0] if parts else '', len(parts))\n";

#[test]
fn a_plain_import_in_a_module_is_not_its_api_but_a_package_reexport_and_an_alias_are() {
    let store = "from inventory.models import StockItem\nfrom inventory.models import parse_item as parse_item\n\n\n\
                 def count(items):\n    return len(items)\n";
    let init = "from inventory.models import StockItem\n";
    let tree = [
        ("inventory/__init__.py", init),
        ("inventory/models.py", MODELS),
        ("inventory/store.py", store),
    ];
    let names = statuses(&check(&tree, "inventory/store.py", store, &[], &[]));
    assert_eq!(names, vec!["parse_item: same", "count: same"]);
    let names = statuses(&check(&tree, "inventory/__init__.py", init, &[], &[]));
    assert_eq!(names, vec!["StockItem: same"]);
}

#[test]
fn a_renamed_class_is_found_under_its_new_name_and_its_values_compare_with_the_rename_mapped() {
    let renamed = MODELS.replace("StockItem", "InventoryItem");
    let tree = [
        ("inventory/__init__.py", ""),
        ("inventory/models.py", renamed.as_str()),
    ];
    let result = check(
        &tree,
        "inventory/models.py",
        MODELS,
        &[("StockItem", "InventoryItem")],
        &[],
    );
    assert_eq!(
        statuses(&result),
        vec!["StockItem: same", "parse_item: same"]
    );
    // Asked to keep the old name, its absence is named.
    let result = check(
        &tree,
        "inventory/models.py",
        MODELS,
        &[("StockItem", "InventoryItem")],
        &["StockItem"],
    );
    assert_eq!(statuses(&result)[0], "StockItem: missing");
    // Without the rename declared, the old name is missing and the value differs.
    let result = check(&tree, "inventory/models.py", MODELS, &[], &[]);
    assert_eq!(
        statuses(&result),
        vec!["StockItem: missing", "parse_item: different"]
    );
}

#[test]
fn a_removed_or_reordered_parameter_of_a_public_function_is_a_change() {
    let before =
        "def total(lines, tax=0.2, discount=0.0):\n    return sum(lines) * (1 + tax) - discount\n";
    let reordered =
        "def total(lines, discount=0.0, tax=0.2):\n    return sum(lines) * (1 + tax) - discount\n";
    let result = check(&[("pricing.py", reordered)], "pricing.py", before, &[], &[]);
    assert_eq!(statuses(&result), vec!["total: different"]);
    assert!(
        result.names[0].detail.starts_with("parameters reordered"),
        "{result:?}"
    );
    let added = "def total(lines, tax=0.2, discount=0.0, currency=\"EUR\"):\n    return sum(lines) * (1 + tax) - discount\n";
    let result = check(&[("pricing.py", added)], "pricing.py", before, &[], &[]);
    assert_eq!(statuses(&result), vec!["total: same"]);
}
