//! Changes across a package: a class renamed in a four-file package over
//! several replies (a half-done rename keeps the tests green, and is asked
//! for again until the model says it is finished), and a 300-line module
//! split into a package of three with the same public API.

use super::{
    assert_delivered, diff, model, python, repo, run_task, statuses, task_prompts, task_trailers,
};

const INIT: &str =
    "\"\"\"An inventory.\"\"\"\nfrom inventory.models import Item\n\n__all__ = [\"Item\"]\n";

const MODELS: &str = r#""""What the inventory holds."""
from dataclasses import dataclass


@dataclass
class Item:
    """One thing in stock."""

    name: str
    price: float
    count: int = 1

    def value(self):
        """What the stock of this thing is worth."""
        return self.price * self.count
"#;

const STORE: &str = r#""""Stock keeping."""
from inventory.models import Item


def add_item(items, name, price):
    """`items` with one more thing in stock."""
    return items + [Item(name, price)]


def total_value(items):
    """What the whole stock is worth."""
    return sum(item.value() for item in items)
"#;

const REPORT: &str = r#""""Stock reports."""
from inventory.models import Item


def describe(item: Item) -> str:
    """One line about an item."""
    return f"{item.name}: {item.count} x {item.price:.2f}"
"#;

const TESTS: &str = r#"from inventory.store import add_item, total_value


def test_total():
    items = add_item(add_item([], "pen", 1.5), "ink", 2.0)
    assert total_value(items) == 3.5
"#;

fn inventory() -> super::Repo {
    repo(&[
        ("inventory/__init__.py", INIT),
        ("inventory/models.py", MODELS),
        ("inventory/store.py", STORE),
        ("inventory/report.py", REPORT),
        ("tests/test_store.py", TESTS),
    ])
}

const RENAME_PLAN: &str = "```json\n{\"tasks\": [{\"title\": \"Rename Item to Product\", \
     \"kind\": \"preserving\", \"change\": [\"inventory/__init__.py\", \"inventory/models.py\", \
     \"inventory/store.py\", \"inventory/report.py\"], \"renames\": [{\"from\": \"Item\", \
     \"to\": \"Product\"}]}]}\n```\n";

/// The text of `path` as the prompt shows it.
fn shown<'p>(prompt: &'p str, path: &str) -> &'p str {
    let head = format!("### `{path}`\n```python\n");
    let start = prompt.find(&head).map(|i| i + head.len()).unwrap_or(0);
    let end = prompt[start..]
        .find("\n```")
        .map_or(prompt.len(), |e| start + e + 1);
    &prompt[start..end]
}

#[test]
fn a_class_renamed_across_a_four_file_package_is_asked_for_until_finished() {
    let fx = inventory();
    let start = fx.repo.head();
    // First reply: the class is renamed with an alias left behind (the
    // tests stay green, the rename is half done). Second: every caller and
    // the package's export use the new name, the alias goes. Third: done.
    let server = model(RENAME_PLAN.into(), |_, prompt| {
        let models = shown(prompt, "inventory/models.py");
        if models.contains("class Item") {
            let renamed = MODELS.replace("class Item", "class Product") + "\n\nItem = Product\n";
            return format!(
                "Rename the class first.\n{}",
                diff("inventory/models.py", Some(models), Some(&renamed))
            );
        }
        if models.contains("Item = Product") {
            let mut reply = String::from("Now the callers.\n");
            let models_after = models.replace("\n\nItem = Product\n", "");
            reply.push_str(&diff(
                "inventory/models.py",
                Some(models),
                Some(&models_after),
            ));
            for path in [
                "inventory/__init__.py",
                "inventory/store.py",
                "inventory/report.py",
            ] {
                let text = shown(prompt, path);
                reply.push_str(&diff(
                    path,
                    Some(text),
                    Some(&text.replace("Item", "Product")),
                ));
            }
            return reply;
        }
        "TASK DONE: no file names Item any more.".into()
    });
    let out = run_task(
        &fx,
        &server,
        "rename the class Item to Product across the inventory package",
        &[],
    );
    let summary = assert_delivered(&fx, &out, &start);
    assert_eq!(statuses(&summary)[0].1, "done");
    assert_eq!(
        task_prompts(&server).len(),
        3,
        "asked again after each accepted change"
    );
    for path in [
        "inventory/__init__.py",
        "inventory/models.py",
        "inventory/store.py",
        "inventory/report.py",
    ] {
        assert!(
            !fx.repo.read(path).contains("Item"),
            "{path}:\n{}",
            fx.repo.read(path)
        );
    }
    assert_eq!(
        python(&fx, "from inventory import Product; from inventory.store import add_item, total_value; print(total_value(add_item([], 'a', 2.5)))"),
        "2.5"
    );
    assert_eq!(
        task_trailers(&fx, &start),
        vec!["1/1 Rename Item to Product", "1/1 Rename Item to Product"]
    );
}

/// A module of about 300 lines: thirty small functions of three kinds.
fn textkit() -> (String, Vec<(String, String)>) {
    let mut parts: Vec<(String, String)> = Vec::new();
    for (group, body) in [
        ("clean", "return text.strip().lower() + \"{i}\""),
        ("count", "return len(text.split()) * {i}"),
        ("shape", "return text.center({i} + len(text), \"*\")"),
    ] {
        let mut text = String::new();
        for i in 0..10 {
            text.push_str(&format!(
                "\n\ndef {group}_{i}(text):\n    \"\"\"{group} number {i}.\n\n    Kept short on purpose:\n    \
                 each helper does one thing.\n    \"\"\"\n    if not isinstance(text, str):\n        \
                 raise TypeError(\"text must be a str\")\n    {}\n",
                body.replace("{i}", &i.to_string())
            ));
        }
        parts.push((group.to_string(), text));
    }
    let module = format!(
        "\"\"\"Text helpers.\"\"\"\n{}",
        parts.iter().map(|(_, t)| t.as_str()).collect::<String>()
    );
    (module, parts)
}

#[test]
fn a_300_line_module_split_into_a_package_of_three_keeps_its_public_api() {
    let (module, parts) = textkit();
    assert!(module.lines().count() >= 300, "{}", module.lines().count());
    let tests = "from textkit import clean_3, count_2, shape_1\n\n\ndef test_helpers():\n    \
                 assert clean_3(' A ') == 'a3'\n    assert count_2('a b') == 4\n    \
                 assert shape_1('x') == 'x*'\n";
    let fx = repo(&[("textkit.py", &module), ("tests/test_textkit.py", tests)]);
    let start = fx.repo.head();
    let plan = "```json\n{\"tasks\": [{\"title\": \"Split textkit into a package\", \"kind\": \
                \"preserving\", \"delete\": [\"textkit.py\"], \"create\": [\"textkit/__init__.py\", \
                \"textkit/clean.py\", \"textkit/count.py\", \"textkit/shape.py\"]}]}\n```\n";
    let reply = {
        let mut reply = String::from("Split it.\n");
        reply.push_str(&diff("textkit.py", Some(&module), None));
        let mut init = String::from("\"\"\"Text helpers.\"\"\"\n");
        let mut names = Vec::new();
        for (group, text) in &parts {
            let file = format!("\"\"\"Text helpers: {group}.\"\"\"\n{text}");
            reply.push_str(&diff(&format!("textkit/{group}.py"), None, Some(&file)));
            let group_names: Vec<String> = (0..10).map(|i| format!("{group}_{i}")).collect();
            init.push_str(&format!(
                "from textkit.{group} import {}\n",
                group_names.join(", ")
            ));
            names.extend(group_names);
        }
        let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
        init.push_str(&format!("\n__all__ = [{}]\n", quoted.join(", ")));
        reply.push_str(&diff("textkit/__init__.py", None, Some(&init)));
        reply
    };
    let server = model(plan.into(), move |_, prompt| {
        if prompt.contains("`textkit/__init__.py` does not exist yet") {
            reply.clone()
        } else {
            "TASK DONE".into()
        }
    });
    let out = run_task(
        &fx,
        &server,
        "split textkit.py into a package textkit with one module per kind of helper",
        &[],
    );
    let summary = assert_delivered(&fx, &out, &start);
    assert_eq!(statuses(&summary)[0].1, "done");
    assert!(!fx.repo.root.join("textkit.py").exists());
    for group in ["clean", "count", "shape"] {
        assert!(fx.repo.root.join(format!("textkit/{group}.py")).is_file());
    }
    // Every public name of the old module is importable from the same
    // path and behaves the same.
    assert_eq!(
        python(&fx, "import textkit; print(len(textkit.__all__), textkit.clean_9(' B '), textkit.shape_0('y'))"),
        "30 b9 y"
    );
    let checks: Vec<String> = fx
        .log()
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
        .collect();
    assert!(
        checks[0].starts_with("public names: 30 name(s)"),
        "{checks:?}"
    );
}
