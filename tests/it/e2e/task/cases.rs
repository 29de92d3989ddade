//! Moves and their checks: a function moved into a new module with the old
//! import kept; a move that leaves a caller importing a removed name; an
//! intended behaviour change meeting the tests; an injected instruction.

use super::{
    assert_delivered, diff, model, python, repo, run_task, statuses, task_prompts, task_trailers,
};
use crate::e2e::summary_of;
use crate::support::fixture::FixtureRepo;

pub(super) const INIT: &str = "\"\"\"A small shop.\"\"\"\n";

/// `shop/cart.py` with `parse_money` and the total that uses it.
pub(super) const CART: &str = r#""""The cart."""


def parse_money(text):
    """The cents of a price such as '$1,234.50'."""
    cleaned = text.strip().lstrip("$").replace(",", "")
    whole, _, cents = cleaned.partition(".")
    return int(whole) * 100 + int((cents + "00")[:2])


def total(prices):
    """The sum of the prices, in cents."""
    return sum(parse_money(p) for p in prices)
"#;

/// `CART` with `parse_money` moved out and imported back.
pub(super) const CART_AFTER: &str = r#""""The cart."""
from shop.money import parse_money

__all__ = ["parse_money", "total"]


def total(prices):
    """The sum of the prices, in cents."""
    return sum(parse_money(p) for p in prices)
"#;

pub(super) const MONEY: &str = r#""""Money amounts."""


def parse_money(text):
    """The cents of a price such as '$1,234.50'."""
    cleaned = text.strip().lstrip("$").replace(",", "")
    whole, _, cents = cleaned.partition(".")
    return int(whole) * 100 + int((cents + "00")[:2])
"#;

/// A module no test reaches that imports `parse_money` from the cart.
pub(super) const REPORT: &str = r#""""Report lines."""
from shop.cart import parse_money


def line(label, price):
    """`label: cents`."""
    return f"{label}: {parse_money(price)}"
"#;

pub(super) const TESTS: &str = r#"from shop.cart import parse_money, total


def test_parse():
    assert parse_money("$1,234.50") == 123450


def test_total():
    assert total(["$1.00", "2.5"]) == 350
"#;

pub(super) const INSTRUCTION: &str =
    "move parse_money out of shop/cart.py into a new module shop/money.py; keep the old import working";

pub(super) const MOVE_PLAN: &str =
    "```json\n{\"tasks\": [{\"title\": \"Move parse_money into shop/money.py\", \
     \"kind\": \"preserving\", \"change\": [\"shop/cart.py\"], \"create\": [\"shop/money.py\"], \
     \"depends_on\": []}]}\n```\n";

pub(super) fn shop() -> FixtureRepo {
    repo(&[
        ("shop/__init__.py", INIT),
        ("shop/cart.py", CART),
        ("shop/report.py", REPORT),
        ("shop/settings.py", SETTINGS),
        ("tests/test_cart.py", TESTS),
    ])
}

/// Names the cart's function by its dotted path, in a string.
const SETTINGS: &str = "\"\"\"Settings.\"\"\"\nPRICE_PARSER = \"shop.cart.parse_money\"\n";

#[test]
fn a_function_moved_into_a_new_module_keeps_its_old_import() {
    let fx = shop();
    let start = fx.repo.head();
    let server = model(MOVE_PLAN.into(), |_, prompt| {
        if prompt.contains("`shop/money.py` does not exist yet") {
            format!(
                "Move it.\n{}{}",
                diff("shop/money.py", None, Some(MONEY)),
                diff("shop/cart.py", Some(CART), Some(CART_AFTER))
            )
        } else {
            "TASK DONE: parse_money lives in shop/money.py and shop.cart re-exports it.".into()
        }
    });
    let out = run_task(&fx, &server, INSTRUCTION, &[]);
    let summary = assert_delivered(&fx, &out, &start);
    assert_eq!(
        statuses(&summary),
        vec![(
            "Move parse_money into shop/money.py".to_string(),
            "done".to_string()
        )]
    );
    assert_eq!(fx.repo.read("shop/money.py"), MONEY);
    // The old import path gives the very same function as the new one.
    assert_eq!(
        python(
            &fx,
            "import shop.cart, shop.money; print(shop.cart.parse_money is shop.money.parse_money, \
             shop.cart.parse_money('$2.05'))"
        ),
        "True 205"
    );
    assert_eq!(
        task_trailers(&fx, &start),
        vec!["1/1 Move parse_money into shop/money.py"]
    );
    // Asked again after the accepted change, and only then done.
    let prompts = task_prompts(&server);
    assert_eq!(prompts.len(), 2);
    // The old dotted path in a string was shown to the model and listed.
    let mention = "shop/settings.py:2: PRICE_PARSER = \"shop.cart.parse_money\"";
    assert!(prompts[0].1.contains(mention), "{}", prompts[0].1);
    assert_eq!(summary["tasks"]["tasks"][0]["mentions"][0], mention);
    let log = fx.log();
    assert!(log.iter().any(|e| e["details"]["kind"] == "task_plan"));
    let settled: Vec<_> = log
        .iter()
        .filter(|e| e["details"]["kind"] == "task")
        .collect();
    assert_eq!(
        settled.len(),
        1,
        "{}",
        serde_json::to_string_pretty(&log).unwrap()
    );
    assert_eq!(settled[0]["details"]["status"], "done");
    // The public names were compared at their old path.
    let checks: Vec<String> = log
        .iter()
        .filter(|e| {
            e["agent"] == "Judge"
                && e["details"]["input_prompt"]
                    .as_str()
                    .is_some_and(|p| p.starts_with("public-name check"))
        })
        .map(|e| {
            e["details"]["output_response"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(
        checks.len(),
        1,
        "{checks:?}\n{}",
        serde_json::to_string_pretty(&log).unwrap()
    );
    assert!(
        checks[0].starts_with("public names: 2 name(s)"),
        "{checks:?}"
    );
}

#[test]
fn a_move_that_leaves_a_caller_importing_a_removed_name_is_refused() {
    let fx = shop();
    let start = fx.repo.head();
    let before = fx.repo.snapshot();
    // The cart stops offering parse_money; the report, which no test
    // reaches, still imports it from there. The tests pass either way.
    let cart_without = CART_AFTER
        .replace(
            "from shop.money import parse_money\n",
            "from shop import money\n",
        )
        .replace(
            "__all__ = [\"parse_money\", \"total\"]\n",
            "__all__ = [\"total\"]\n",
        )
        .replace("parse_money(p)", "money.parse_money(p)");
    let server = model(MOVE_PLAN.into(), move |_, prompt| {
        if prompt.contains("`shop/money.py` does not exist yet") {
            format!(
                "Move it.\n{}{}",
                diff("shop/money.py", None, Some(MONEY)),
                diff("shop/cart.py", Some(CART), Some(&cart_without))
            )
        } else {
            "TASK DONE".into()
        }
    });
    let out = run_task(&fx, &server, INSTRUCTION, &["--max-iterations", "5"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "stderr:\n{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "gave_up", "{summary}");
    assert_eq!(fx.repo.head(), start);
    assert_eq!(fx.repo.snapshot(), before);
    let (_, status) = &statuses(&summary)[0];
    assert_eq!(status, "skipped", "{summary}");
    // The model was told why: the report's import, by pylint.
    let prompts = task_prompts(&server);
    assert!(prompts.len() >= 2, "{prompts:?}");
    let second = &prompts[1].1;
    assert!(
        second.contains("shop/report.py") && second.contains("no-name-in-module"),
        "{second}"
    );
}
