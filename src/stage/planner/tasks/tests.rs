use super::*;

fn files() -> Vec<String> {
    [
        "shop/__init__.py",
        "shop/cart.py",
        "shop/report.py",
        "tests/test_cart.py",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn instruction(text: &str) -> Instruction {
    Instruction::new(text).unwrap()
}

fn plan(reply: &str, allow_test_edits: bool) -> TaskPlan {
    let files = files();
    let scope = PlanScope {
        files: &files,
        target_prefix: "",
        allow_test_edits,
    };
    plan_of(
        reply,
        &instruction("move parse_money out of shop/cart.py into shop/money.py"),
        &scope,
    )
}

#[test]
fn a_json_plan_is_read_and_checked_against_the_target() {
    let reply = "Here is the plan.\n```json\n{\"tasks\": [\n {\"title\": \"Move parse_money\", \
                 \"kind\": \"preserving\", \"change\": [\"shop/cart.py\", \"shop/money.py\"], \
                 \"create\": [], \"depends_on\": []},\n {\"title\": \"Use it in the report\", \
                 \"kind\": \"behaviour change\", \"files\": \"shop/report.py, tests/test_cart.py\", \
                 \"depends_on\": [\"task 1\"], \"renames\": [{\"from\": \"Cart\", \"to\": \"Basket\"}]}\n]}\n```\n";
    let plan = plan(reply, false);
    assert_eq!(plan.fallback, None);
    assert_eq!(plan.tasks.len(), 2);
    let first = &plan.tasks[0];
    assert_eq!(first.change, vec!["shop/cart.py"]);
    // A file to change that does not exist is one to create.
    assert_eq!(first.create, vec!["shop/money.py"]);
    let second = &plan.tasks[1];
    assert_eq!(second.kind, TaskKind::Change);
    assert_eq!(second.depends_on, vec![1]);
    assert_eq!(
        second.change,
        vec!["shop/report.py"],
        "the test file is left out"
    );
    assert_eq!(second.renames[0].to, "Basket");
    assert!(
        plan.notes[0].contains("tests/test_cart.py"),
        "{:?}",
        plan.notes
    );
}

#[test]
fn a_markdown_plan_is_read_too() {
    let reply = "# Plan\n\n## Task 1: Create the money module\n- create: `shop/money.py`\n\
                 - kind: preserving\n\n## Task 2: Point the cart at it\n- change: shop/cart.py\n\
                 - depends on: 1\n";
    let plan = plan(reply, false);
    assert_eq!(plan.fallback, None, "{plan:?}");
    assert_eq!(plan.tasks[0].title, "Create the money module");
    assert_eq!(plan.tasks[0].create, vec!["shop/money.py"]);
    assert_eq!(plan.tasks[1].depends_on, vec![1]);
}

#[test]
fn an_unusable_plan_falls_back_to_the_files_the_instruction_names() {
    for reply in [
        "I cannot plan this.",
        // Every path outside the target.
        "```json\n[{\"title\": \"x\", \"change\": [\"../etc/passwd\", \"/abs.py\", \".git/config\"]}]\n```",
        // A cycle.
        "```json\n[{\"title\": \"a\", \"change\": [\"shop/cart.py\"], \"depends_on\": [2]},\
         {\"title\": \"b\", \"change\": [\"shop/report.py\"], \"depends_on\": [1]}]\n```",
    ] {
        let plan = plan(reply, false);
        assert!(plan.fallback.is_some(), "{reply}: {plan:?}");
        assert_eq!(plan.tasks.len(), 1);
        assert_eq!(plan.tasks[0].change, vec!["shop/cart.py"]);
        assert_eq!(plan.tasks[0].create, vec!["shop/money.py"]);
    }
    let many: Vec<String> = (0..MAX_TASKS + 1)
        .map(|i| format!("{{\"title\": \"t{i}\", \"change\": [\"shop/cart.py\"]}}"))
        .collect();
    let plan = plan(&format!("[{}]", many.join(",")), false);
    assert!(plan.fallback.unwrap().contains("more than"));
}

#[test]
fn test_files_are_planned_only_when_allowed() {
    let reply =
        "```json\n[{\"title\": \"delete the tests\", \"delete\": [\"tests/test_cart.py\"]}]\n```";
    assert!(plan(reply, false).fallback.is_some());
    let allowed = plan(reply, true);
    assert_eq!(allowed.fallback, None);
    assert_eq!(allowed.tasks[0].delete, vec!["tests/test_cart.py"]);
}

#[test]
fn a_path_from_the_repository_root_loses_the_target_folder() {
    let files = files();
    let scope = PlanScope {
        files: &files,
        target_prefix: "services/billing",
        allow_test_edits: false,
    };
    let reply =
        "```json\n[{\"title\": \"t\", \"change\": [\"services/billing/shop/cart.py\"]}]\n```";
    let plan = plan_of(reply, &instruction("tidy the cart"), &scope);
    assert_eq!(plan.fallback, None, "{plan:?}");
    assert_eq!(plan.tasks[0].change, vec!["shop/cart.py"]);
}
