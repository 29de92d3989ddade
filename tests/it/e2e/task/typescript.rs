//! Refactoring on request in a TypeScript project, judged by its own
//! runner (vitest), tsc and eslint: a function moved to a new module with
//! its old import kept, and renames with and without the old name kept,
//! each in the three reply shapes (see [`super::shapes`]). The export check
//! holds every changed module to the names it exported (through
//! `export { } from` and `export *` too), with the instruction's renames
//! applied; a change that also drops an export no test and no importer
//! uses is refused, naming it.

use std::path::Path;

use super::renames::api_checks;
use super::shapes::{plan, reference_model, Reference, Shape, SHAPES};
use super::{assert_delivered, run_task, statuses, task_prompts, Repo};
use crate::support::node::{self, Deps};
use crate::support::repo::TestRepo;

const MONEY: &str = r#"// Money amounts as integer cents.

export interface Money {
  cents: number;
  currency: string;
}

/** Parses "12.50 EUR" or "3 USD" into cents. */
export function parseMoney(text: string): Money {
  const match = /^(-?\d+)(?:\.(\d{2}))?\s+([A-Z]{3})$/.exec(text.trim());
  if (!match) {
    throw new Error(`not an amount: ${text}`);
  }
  const whole = Number(match[1]);
  const cents = Number(match[2] ?? '0');
  return { cents: whole * 100 + cents, currency: match[3] };
}

/** Formats cents as "12.50 EUR". */
export function formatMoney(money: Money): string {
  const sign = money.cents < 0 ? '-' : '';
  const abs = Math.abs(money.cents);
  const cents = String(abs % 100).padStart(2, '0');
  return `${sign}${Math.floor(abs / 100)}.${cents} ${money.currency}`;
}

/** Adds two amounts of the same currency. */
export function addMoney(a: Money, b: Money): Money {
  if (a.currency !== b.currency) {
    throw new Error(`cannot add ${a.currency} and ${b.currency}`);
  }
  return { cents: a.cents + b.cents, currency: a.currency };
}

/** Subtracts `b` from `a`, of the same currency. */
export function subtractMoney(a: Money, b: Money): Money {
  return addMoney(a, { cents: -b.cents, currency: b.currency });
}
"#;

const CART: &str = r#"import { addMoney, formatMoney, parseMoney, type Money } from './money';

/** One line of a cart: a price as text and how many. */
export interface Line {
  name: string;
  price: string;
  quantity: number;
}

/** The amount of one line. */
export function lineTotal(line: Line): Money {
  const unit = parseMoney(line.price);
  return { cents: unit.cents * line.quantity, currency: unit.currency };
}

/** The cart's total, formatted. */
export function cartTotal(lines: Line[], currency = 'EUR'): string {
  let total: Money = { cents: 0, currency };
  for (const line of lines) {
    total = addMoney(total, lineTotal(line));
  }
  return formatMoney(total);
}
"#;

const RECEIPT: &str = r#"import type { Line } from './cart';
import { formatMoney, parseMoney } from './money';

/** A receipt's lines: "Tea x2 @ 3.50 EUR". */
export function receiptLines(lines: Line[]): string[] {
  return lines.map((l) => `${l.name} x${l.quantity} @ ${formatMoney(parseMoney(l.price))}`);
}
"#;

const INDEX: &str = r#"export * from './money';
export { cartTotal, lineTotal, type Line } from './cart';
export { receiptLines } from './receipt';
"#;

const MONEY_TEST: &str = r#"import { describe, expect, it } from 'vitest';

import { addMoney, formatMoney, parseMoney } from '../src/money';

describe('money', () => {
  it('reads whole amounts', () => {
    expect(parseMoney('3 USD')).toEqual({ cents: 300, currency: 'USD' });
  });

  it('reads cents', () => {
    expect(parseMoney('0.07 EUR').cents).toBe(7);
  });

  it('refuses text that is not an amount', () => {
    expect(() => parseMoney('twelve EUR')).toThrow('not an amount');
  });

  it('formats with two digits of cents', () => {
    expect(formatMoney({ cents: 1205, currency: 'EUR' })).toBe('12.05 EUR');
  });

  it('adds amounts of one currency', () => {
    expect(addMoney(parseMoney('1.00 EUR'), parseMoney('2.25 EUR')).cents).toBe(325);
  });
});
"#;

const CART_TEST: &str = r#"import { describe, expect, it } from 'vitest';

import { cartTotal, receiptLines } from '../src/index';

const lines = [
  { name: 'Tea', price: '3.50 EUR', quantity: 2 },
  { name: 'Cake', price: '2.25 EUR', quantity: 1 },
];

describe('cart', () => {
  it('totals the lines', () => {
    expect(cartTotal(lines)).toBe('9.25 EUR');
  });

  it('writes a receipt', () => {
    expect(receiptLines(lines)).toEqual(['Tea x2 @ 3.50 EUR', 'Cake x1 @ 2.25 EUR']);
  });
});
"#;

/// `parseMoney` as the move leaves it in its own module.
fn parse_module() -> String {
    let body =
        &MONEY[MONEY.find("/** Parses").unwrap_or(0)..MONEY.find("/** Formats").unwrap_or(0)];
    format!(
        "import type {{ Money }} from './money';\n\n{}",
        body.trim_end_matches('\n')
    ) + "\n"
}

const SOURCES: [&str; 4] = [
    "src/money.ts",
    "src/cart.ts",
    "src/receipt.ts",
    "src/index.ts",
];

/// A user's TypeScript shop: the sources and tests above committed on
/// `main` beside vitest and TypeScript installed from the npm registry
/// (the `vitest_ts` fixture's lockfile), `node_modules` ignored.
fn shop() -> Repo {
    let repo = TestRepo::empty();
    node::copy(&node::installed("vitest_ts"), &repo.root, Deps::Linked);
    for stale in ["src", "tests"] {
        std::fs::remove_dir_all(repo.root.join(stale)).expect("remove the fixture's sources");
    }
    repo.write(".gitignore", "node_modules/\n");
    for (path, text) in [
        ("src/money.ts", MONEY),
        ("src/cart.ts", CART),
        ("src/receipt.ts", RECEIPT),
        ("src/index.ts", INDEX),
        ("tests/money.test.ts", MONEY_TEST),
        ("tests/cart.test.ts", CART_TEST),
    ] {
        repo.write(path, text);
    }
    crate::e2e::javascript::committed(repo, "task-typescript", "")
}

/// Runs the project's own `tsc --noEmit` and `vitest run` on the user's
/// checkout; what each printed when it failed.
fn assert_project_checks(root: &Path, shape: Shape) {
    for (tool, args) in [("tsc", vec!["--noEmit"]), ("vitest", vec!["run"])] {
        let out = std::process::Command::new(root.join("node_modules/.bin").join(tool))
            .args(&args)
            .current_dir(root)
            .output()
            .unwrap_or_else(|e| panic!("{tool} runs: {e}"));
        assert!(
            out.status.success(),
            "{shape:?}: {tool} fails on the delivered project:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

const MOVE: &str = "Move parseMoney() out of src/money.ts into a new module src/parse.ts; keep `import { parseMoney } from './money'` working";

/// The move as a person makes it: the new module, its importers, then the
/// old module re-exporting it. With `drop_subtract`, the old module also
/// loses `subtractMoney`, which no test and no module uses.
fn move_reference(drop_subtract: bool) -> Reference {
    let mut money = MONEY.replace(
        &MONEY[MONEY.find("/** Parses").unwrap_or(0)..MONEY.find("/** Formats").unwrap_or(0)],
        "",
    );
    money = money.replace(
        "// Money amounts as integer cents.\n",
        "// Money amounts as integer cents.\n\nexport { parseMoney } from './parse';\n",
    );
    if drop_subtract {
        let at = money.find("\n/** Subtracts").unwrap_or(money.len());
        money.truncate(at);
    }
    let cart = CART.replace(
        "import { addMoney, formatMoney, parseMoney, type Money } from './money';",
        "import { addMoney, formatMoney, type Money } from './money';\nimport { parseMoney } from './parse';",
    );
    let receipt = RECEIPT.replace(
        "import { formatMoney, parseMoney } from './money';",
        "import { formatMoney } from './money';\nimport { parseMoney } from './parse';",
    );
    vec![
        ("src/parse.ts".into(), Some(parse_module())),
        ("src/cart.ts".into(), Some(cart)),
        ("src/receipt.ts".into(), Some(receipt)),
        ("src/money.ts".into(), Some(money)),
    ]
}

fn move_plan() -> String {
    plan(
        "Move parseMoney into src/parse.ts",
        "preserving",
        &["src/money.ts", "src/cart.ts", "src/receipt.ts"],
        &["src/parse.ts"],
        &[],
    )
}

/// The public-name check passed on the change that was delivered.
fn assert_exports_kept(fx: &Repo, shape: Shape) {
    let checks = api_checks(fx);
    let last = checks
        .last()
        .unwrap_or_else(|| panic!("{shape:?}: no export check in the log"));
    assert!(
        last.starts_with("public names: ") && !last.contains(" 0 name(s)"),
        "{shape:?}: {checks:?}"
    );
}

#[test]
fn a_typescript_function_moved_to_a_new_module_keeping_its_old_import_is_delivered_in_every_shape()
{
    for shape in SHAPES {
        let fx = shop();
        let start = fx.repo.head();
        let server = reference_model(&move_plan(), shape, move_reference(false));
        let out = run_task(&fx, &server, MOVE, &["--max-iterations", "10"]);
        let summary = assert_delivered(&fx, &out, &start);
        assert_eq!(statuses(&summary)[0].1, "done", "{shape:?}: {summary}");
        assert!(fx
            .repo
            .read("src/parse.ts")
            .contains("export function parseMoney"));
        let money = fx.repo.read("src/money.ts");
        assert!(!money.contains("function parseMoney"), "{shape:?}");
        assert!(
            money.contains("export { parseMoney } from './parse'"),
            "{shape:?}"
        );
        assert_project_checks(&fx.repo.root, shape);
        assert_exports_kept(&fx, shape);
        if shape == Shape::OneFilePerReply {
            // One reply per file (red in the middle: money.ts still
            // defines what parse.ts now does), then done.
            assert_eq!(task_prompts(&server).len(), 5, "{shape:?}");
        }
    }
}

#[test]
fn a_typescript_move_that_also_drops_an_unused_export_is_refused_naming_it() {
    let fx = shop();
    let start = fx.repo.head();
    let server = reference_model(&move_plan(), Shape::Whole, move_reference(true));
    let out = run_task(&fx, &server, MOVE, &["--max-iterations", "4"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert_eq!(fx.repo.head(), start);
    assert!(fx.repo.read("src/money.ts").contains("subtractMoney"));
    let checks = api_checks(&fx);
    assert!(
        checks
            .iter()
            .any(|c| c.starts_with("public names lost or changed: ")
                && c.contains("src/money.ts: subtractMoney: no longer exported")),
        "{checks:?}"
    );
    // Through `export * from './money'`, the package's entry lost it too.
    assert!(
        checks
            .iter()
            .any(|c| c.contains("src/index.ts: subtractMoney: no longer exported")),
        "{checks:?}"
    );
}

/// `formatMoney` renamed to `formatAmount` in every module, the old name
/// kept as an alias or not; without it the tests' own import breaks, so
/// that case renames `lineTotal`, which no test imports.
fn rename_reference(alias: bool) -> Reference {
    if !alias {
        let rename = |t: &str| t.replace("lineTotal", "lineAmount");
        return vec![
            ("src/cart.ts".into(), Some(rename(CART))),
            ("src/index.ts".into(), Some(rename(INDEX))),
        ];
    }
    let rename = |t: &str| t.replace("formatMoney", "formatAmount");
    let money = rename(MONEY).replace(
        "\n/** Adds two",
        "\n/** The old name of {@link formatAmount}. */\nexport const formatMoney = formatAmount;\n\n/** Adds two",
    );
    vec![
        ("src/money.ts".into(), Some(money)),
        ("src/cart.ts".into(), Some(rename(CART))),
        ("src/receipt.ts".into(), Some(rename(RECEIPT))),
    ]
}

fn rename(shape: Shape, alias: bool) {
    let fx = shop();
    let start = fx.repo.head();
    let (title, instruction, files): (&str, &str, &[&str]) = if alias {
        (
            "Rename formatMoney to formatAmount",
            "Rename formatMoney to formatAmount everywhere in src; keep formatMoney as an alias",
            &SOURCES[..3],
        )
    } else {
        (
            "Rename lineTotal to lineAmount",
            "Rename the function lineTotal to lineAmount everywhere",
            &["src/cart.ts", "src/index.ts"],
        )
    };
    let plan = plan(title, "preserving", files, &[], &[]);
    let server = reference_model(&plan, shape, rename_reference(alias));
    let out = run_task(&fx, &server, instruction, &["--max-iterations", "10"]);
    let summary = assert_delivered(&fx, &out, &start);
    assert_eq!(statuses(&summary)[0].1, "done", "{shape:?}: {summary}");
    let (old, new) = if alias {
        ("formatMoney", "formatAmount")
    } else {
        ("lineTotal", "lineAmount")
    };
    let cart = fx.repo.read("src/cart.ts");
    assert!(
        cart.contains(new) && !cart.contains(old),
        "{shape:?}: {cart}"
    );
    let index = fx.repo.read("src/index.ts");
    assert_eq!(index.contains("lineAmount"), !alias, "{shape:?}: {index}");
    if alias {
        assert!(fx
            .repo
            .read("src/money.ts")
            .contains("export const formatMoney = formatAmount;"));
    }
    assert_project_checks(&fx.repo.root, shape);
    assert_exports_kept(&fx, shape);
}

#[test]
fn a_typescript_rename_keeping_the_old_name_is_delivered_in_every_shape() {
    for shape in SHAPES {
        rename(shape, true);
    }
}

#[test]
fn a_typescript_rename_without_the_old_name_is_delivered_in_every_shape() {
    for shape in SHAPES {
        rename(shape, false);
    }
}

#[test]
fn a_typescript_move_said_done_without_the_change_is_not_done() {
    let fx = shop();
    let start = fx.repo.head();
    let server = super::model(move_plan(), |_, _| "TASK DONE".into());
    let out = run_task(&fx, &server, MOVE, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let summary = crate::e2e::summary_of(&out.stdout);
    assert_ne!(summary["status"], "success", "{summary}");
    assert_eq!(statuses(&summary)[0].1, "skipped", "{summary}");
    assert!(stderr.contains("src/parse.ts does not exist"), "{stderr}");
    assert_eq!(fx.repo.head(), start);
}

#[test]
fn a_typescript_move_left_defined_at_its_old_place_is_not_done() {
    // The new module and its importers, but money.ts still defines
    // parseMoney (no re-export): green, yet not the move asked for.
    let fx = shop();
    let start = fx.repo.head();
    let mut reference = move_reference(false);
    reference.retain(|(path, _)| path != "src/money.ts");
    let server = reference_model(&move_plan(), Shape::Whole, reference);
    let out = run_task(&fx, &server, MOVE, &["--max-iterations", "4"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("src/money.ts still defines parseMoney"),
        "{stderr}"
    );
    assert_eq!(fx.repo.head(), start);
}
