//! Generated Python projects of any size, for the scale benchmark
//! (`benches/scale.rs`, which includes this file by path) and the scale
//! end-to-end test: many small clean modules in a few packages, plus one
//! buggy module whose single bug makes two of its four tests fail, and what
//! a good model answers to swarm's plan and fix requests about them.
//!
//! Only `std` and `similar`: no git, no test support, so the bench can use
//! it as it is. The caller commits the files. The clean modules themselves
//! are written by [`modules`].

#![allow(dead_code)]

mod modules;

use std::fs;
use std::path::Path;

use modules::{mix, title, Module};

/// The package that holds the buggy module and re-exports its functions.
const BUGGY_PACKAGE: &str = "billing";
/// Top-level packages, in the order they are used.
const PACKAGES: &[&str] = &[
    BUGGY_PACKAGE,
    "inventory",
    "shipping",
    "accounts",
    "catalog",
    "reporting",
];
/// Clean modules per subpackage.
const MODULES_PER_SUBPACKAGE: usize = 40;
/// The fewest Python files a project can have: two packages with one
/// subpackage each, one module each, the buggy module and its tests.
pub const MIN_PYTHON_FILES: usize = 8;

const TOPICS: &[&str] = &[
    "rates", "ledgers", "orders", "parcels", "stock", "invoices", "rules", "tables", "routes",
    "quotes",
];
/// The buggy module as committed: `apply_discount` returns the amount taken
/// off instead of the price to pay, and `bulk_price` relies on it.
const BUGGY_TEXT: &str = r#""""Discount rules applied to order totals."""

MAX_PERCENT = 100
BULK_MIN_UNITS = 10
BULK_PERCENT = 10


def apply_discount(price, percent):
    """Return the price to pay after taking `percent` per cent off `price`."""
    if not 0 <= percent <= MAX_PERCENT:
        raise ValueError(f"a discount must be between 0 and {MAX_PERCENT} %, not {percent}")
    return price * percent / MAX_PERCENT


def bulk_price(unit_price, quantity):
    """Return the price of `quantity` units, with a bulk discount from ten units."""
    total = unit_price * quantity
    if quantity >= BULK_MIN_UNITS:
        return apply_discount(total, BULK_PERCENT)
    return total
"#;
/// The line that carries the bug, and its fix.
const BUG_LINE: &str = "    return price * percent / MAX_PERCENT\n";
const FIXED_LINE: &str = "    return price * (MAX_PERCENT - percent) / MAX_PERCENT\n";

const TESTS_TEXT: &str = r#""""Tests for the discount rules, through the package's public names."""

import pytest

from billing import apply_discount, bulk_price


def test_discount_returns_reduced_price():
    """A 25 % discount on 80.00 leaves 60.00 to pay."""
    assert apply_discount(80.0, 25) == pytest.approx(60.0)


def test_discount_rejects_more_than_100_percent():
    """Discounts above 100 % are refused."""
    with pytest.raises(ValueError):
        apply_discount(10.0, 120)


def test_bulk_price_below_threshold_is_full_price():
    """Nine units are charged at the full unit price."""
    assert bulk_price(2.0, 9) == pytest.approx(18.0)


def test_bulk_price_applies_from_ten_units():
    """Ten units or more get 10 % off."""
    assert bulk_price(2.0, 10) == pytest.approx(18.0)
"#;

const PYPROJECT: &str = r#"[project]
name = "trading-desk"
version = "1.4.0"
description = "Billing, stock, shipping and reporting rules of a small trading company."
requires-python = ">=3.9"

[tool.pytest.ini_options]
pythonpath = ["."]
testpaths = ["tests"]
"#;

/// A generated project on disk.
#[derive(Clone, Debug)]
pub struct ScaleProject {
    /// Python files written, `__init__.py` files, the buggy module and its
    /// tests included.
    pub python_files: usize,
    /// The buggy module, relative to the project root.
    pub buggy_path: String,
    /// The test module with the two failing tests, relative to the root.
    pub test_path: String,
    /// The two tests the bug makes fail, as pytest names them.
    pub failing_tests: [String; 2],
}

/// How the model server classifies a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// The Auditor's refactoring plan.
    Plan,
    /// A fix request for the buggy module.
    FixBuggy,
    /// A fix request for any other file.
    FixOther,
    /// The Tester's request for held-out tests (of the buggy module).
    HeldOut,
}

impl ScaleProject {
    /// The buggy module's text as committed.
    pub fn buggy_text(&self) -> &'static str {
        BUGGY_TEXT
    }

    /// The buggy module's text once fixed.
    pub fn fixed_text(&self) -> String {
        BUGGY_TEXT.replacen(BUG_LINE, FIXED_LINE, 1)
    }

    /// What a request with this system prompt and first user message asks for.
    pub fn classify(&self, system: &str, user: &str) -> RequestKind {
        let first_line = user.lines().next().unwrap_or_default();
        if system.contains("Auditor") || first_line.contains("refactoring plan") {
            RequestKind::Plan
        } else if first_line.starts_with("Write held-out pytest tests") {
            RequestKind::HeldOut
        } else if first_line.contains(&format!("`{}`", self.buggy_path)) {
            RequestKind::FixBuggy
        } else {
            RequestKind::FixOther
        }
    }

    /// What a good model answers to the request.
    pub fn reply(&self, system: &str, user: &str) -> String {
        match self.classify(system, user) {
            RequestKind::Plan => self.plan(),
            RequestKind::FixBuggy => self.fix_reply(),
            RequestKind::FixOther => "This file looks fine as it is; no change is needed.".into(),
            RequestKind::HeldOut => "No held-out tests.".into(),
        }
    }

    /// A short plan that names the buggy module and its bug.
    pub fn plan(&self) -> String {
        let line = BUGGY_TEXT
            .lines()
            .position(|l| format!("{l}\n") == BUG_LINE)
            .expect("the buggy text holds the bug line")
            + 1;
        format!(
            "# Refactoring plan\n\n## Summary\n\nTwo tests in `{tests}` fail because \
             `apply_discount()` in `{path}` returns the amount taken off instead of the price to \
             pay; `bulk_price()` relies on it, so its test fails too. The other modules are \
             clean and need no change.\n\n## {path}\n\n- **Type**: bug\n  **Severity**: high\n  \
             **Location**: `apply_discount()`, line {line}\n  **Description**: 25 % off 80.00 \
             gives 20.00 instead of 60.00 (`{first}`), and ten units at 2.00 cost 2.00 instead of \
             18.00 (`{second}`).\n  **Suggested fix**: \
             `return price * (MAX_PERCENT - percent) / MAX_PERCENT`.\n",
            tests = self.test_path,
            path = self.buggy_path,
            first = self.failing_tests[0],
            second = self.failing_tests[1],
        )
    }

    /// The fix of the buggy module as a unified diff in a fenced block.
    pub fn fix_reply(&self) -> String {
        let fixed = self.fixed_text();
        let diff = similar::TextDiff::from_lines(BUGGY_TEXT, &fixed)
            .unified_diff()
            .context_radius(3)
            .header(
                &format!("a/{}", self.buggy_path),
                &format!("b/{}", self.buggy_path),
            )
            .to_string();
        format!(
            "Return the price to pay, not the discount, in `apply_discount`.\n\n```diff\n{diff}```\n"
        )
    }
}

/// Writes a project of exactly `python_files` Python files (at least
/// [`MIN_PYTHON_FILES`]) under `root`, plus `pyproject.toml`. The same
/// count always gives the same files.
pub fn write_project(root: &Path, python_files: usize) -> ScaleProject {
    assert!(
        python_files >= MIN_PYTHON_FILES,
        "a scale project needs at least {MIN_PYTHON_FILES} Python files"
    );
    let layout = Layout::for_files(python_files);
    write(root, "pyproject.toml", PYPROJECT);
    write(root, "tests/test_discounts.py", TESTS_TEXT);
    let buggy_path = format!("{BUGGY_PACKAGE}/discounts.py");
    write(root, &buggy_path, BUGGY_TEXT);
    let mut written = 2;

    // Subpackages are dealt to the packages in turn; clean modules fill
    // the subpackages in turn, so every subpackage gets at least one.
    let subpackages: Vec<String> = (0..layout.subpackages)
        .map(|s| {
            format!(
                "{}/{}_{:02}",
                PACKAGES[s % layout.packages],
                TOPICS[s % TOPICS.len()],
                s / layout.packages
            )
        })
        .collect();
    for (p, package) in PACKAGES.iter().take(layout.packages).enumerate() {
        let init = if p == 0 {
            billing_init()
        } else {
            format!("\"\"\"The {package} rules of the trading desk.\"\"\"\n")
        };
        write(root, &format!("{package}/__init__.py"), &init);
        written += 1;
    }
    for sub in &subpackages {
        let topic = sub.rsplit('/').next().unwrap_or(sub);
        write(
            root,
            &format!("{sub}/__init__.py"),
            &format!(
                "\"\"\"{} of the {}.\"\"\"\n",
                title(topic),
                sub.replace('/', " ")
            ),
        );
        written += 1;
    }
    // The last rate table of each subpackage (import path, function): its
    // function maps a number to a number, so any module can build on it.
    let mut previous: Vec<Option<(String, String)>> = vec![None; subpackages.len()];
    for n in 0..layout.modules {
        let s = n % subpackages.len();
        let sub = &subpackages[s];
        let module = Module::new(n, sub);
        let import = previous[s].as_ref().filter(|_| mix(n as u64, 1) % 3 == 0);
        let text = module.text(import.map(|(m, f)| (m.as_str(), f.as_str())));
        write(root, &format!("{sub}/{}.py", module.stem), &text);
        written += 1;
        if module.is_rate_table() {
            previous[s] = Some((
                format!("{}.{}", sub.replace('/', "."), module.stem),
                module.function.clone(),
            ));
        }
    }
    assert_eq!(written, python_files, "the layout adds up");
    ScaleProject {
        python_files,
        buggy_path,
        test_path: "tests/test_discounts.py".into(),
        failing_tests: [
            "tests/test_discounts.py::test_discount_returns_reduced_price".into(),
            "tests/test_discounts.py::test_bulk_price_applies_from_ten_units".into(),
        ],
    }
}

/// How many packages, subpackages and clean modules make up a project.
struct Layout {
    packages: usize,
    subpackages: usize,
    modules: usize,
}

impl Layout {
    fn for_files(python_files: usize) -> Self {
        let packages = (python_files / 150).clamp(2, PACKAGES.len());
        // Files besides the clean modules: package and subpackage
        // `__init__.py`, the buggy module and the tests.
        let rest = python_files - packages - 2;
        let subpackages = rest
            .div_ceil(MODULES_PER_SUBPACKAGE + 1)
            .max(packages)
            .min(rest / 2);
        Self {
            packages,
            subpackages,
            modules: rest - subpackages,
        }
    }
}

fn billing_init() -> String {
    format!(
        "\"\"\"The billing rules of the trading desk: discounts and charges.\"\"\"\n\n\
         from {BUGGY_PACKAGE}.discounts import apply_discount, bulk_price\n\n\
         __all__ = [\"apply_discount\", \"bulk_price\"]\n"
    )
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("create the project's folders");
    }
    fs::write(&path, text).expect("write a project file");
}
