//! A pull request's title and body, from a run's summary (`swarm --json`'s
//! last line): what a reviewer needs to decide, in Markdown.

use serde_json::Value;

/// The longest title, in characters (GitHub shows about this much).
const TITLE_CHARS: usize = 72;

/// What the body is made of besides the summary.
pub struct Context<'a> {
    /// The target, repository-relative (`.` for the root).
    pub target: &'a str,
    /// The key that finds this pull request again, in a hidden comment.
    pub key: &'a str,
    /// Where the job's artifacts are (the CI run's page), if known.
    pub run_url: Option<&'a str>,
    /// The base branch.
    pub base: &'a str,
}

/// The instruction of a `--task` run.
pub fn instruction(summary: &Value) -> Option<&str> {
    summary["tasks"]["instruction"]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// The title: the instruction, or what the repair achieved.
pub fn title(summary: &Value, target: &str) -> String {
    let place = if target == "." {
        String::new()
    } else {
        format!(" in {target}")
    };
    let text = match instruction(summary) {
        Some(instruction) => {
            let first = instruction.lines().next().unwrap_or(instruction);
            format!("swarm: {first}")
        }
        None => {
            let (before, after) = (
                count(&summary["tests_before"]),
                count(&summary["tests_after"]),
            );
            if after.0 > before.0 {
                format!(
                    "swarm: {}/{} tests pass{place} (were {}/{})",
                    after.0, after.1, before.0, before.1
                )
            } else {
                format!(
                    "swarm: {} {}{place}",
                    linter(summary),
                    score_change(summary)
                )
            }
        }
    };
    shorten(&text, TITLE_CHARS)
}

/// The body.
pub fn body(summary: &Value, cx: &Context<'_>) -> String {
    let mut out = vec![format!("<!-- swarm-pull-request: {} -->", cx.key)];
    let run = summary["run_id"].as_str().unwrap_or_default();
    match instruction(summary) {
        Some(instruction) => {
            out.push(format!(
                "swarm carried out this instruction on `{}` (run `{run}`):",
                cx.target
            ));
            out.push(String::new());
            out.extend(instruction.lines().map(|l| format!("> {l}")));
        }
        None => out.push(format!(
            "swarm repaired what the tests and linters pointed at in `{}` (run `{run}`).",
            cx.target
        )),
    }
    out.push(String::new());
    out.extend(measures(summary));
    out.extend(verification(summary));
    out.extend(tasks(summary));
    out.extend(cautions(summary));
    out.extend(withheld(summary));
    out.extend(commits(summary));
    out.extend(artifacts(summary, cx));
    out.extend(undo(cx));
    out.join("\n") + "\n"
}

fn count(value: &Value) -> (u64, u64) {
    (
        value["passed"].as_u64().unwrap_or(0),
        value["total"].as_u64().unwrap_or(0),
    )
}

fn linter(summary: &Value) -> &str {
    summary["linter"]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or("lint")
}

fn score(value: &Value) -> String {
    value.as_f64().map_or("n/a".into(), |v| format!("{v:.2}"))
}

fn score_change(summary: &Value) -> String {
    format!(
        "{} → {}",
        score(&summary["pylint_before"]),
        score(&summary["pylint_after"])
    )
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max - 1).collect();
    format!("{}…", kept.trim_end())
}

fn heading(title: &str) -> Vec<String> {
    vec![String::new(), format!("### {title}"), String::new()]
}

fn measures(summary: &Value) -> Vec<String> {
    let (before, after) = (
        count(&summary["tests_before"]),
        count(&summary["tests_after"]),
    );
    vec![
        "| | before | after |".into(),
        "|---|---|---|".into(),
        format!(
            "| tests passing | {}/{} | {}/{} |",
            before.0, before.1, after.0, after.1
        ),
        format!(
            "| {} score | {} | {} |",
            linter(summary),
            score(&summary["pylint_before"]),
            score(&summary["pylint_after"])
        ),
        String::new(),
        format!(
            "{} attempt(s) committed, {} accepted, in {} round(s).",
            summary["attempts"].as_u64().unwrap_or(0),
            summary["accepted"].as_u64().unwrap_or(0),
            summary["iterations"].as_u64().unwrap_or(0)
        ),
    ]
}

/// One line per changed file: what verified it.
fn verification(summary: &Value) -> Vec<String> {
    let Some(files) = summary["verification"]
        .as_object()
        .filter(|f| !f.is_empty())
    else {
        return Vec::new();
    };
    let mut out = heading("What verified each changed file");
    for (file, how) in files {
        out.push(format!("- `{file}`: {}", verified_by(how)));
    }
    out
}

fn verified_by(how: &Value) -> String {
    let n = |key: &str| how[key].as_u64().unwrap_or(0);
    match how["by"].as_str().unwrap_or_default() {
        "existing_tests" => "the project's tests".into(),
        "generated_tests" => format!("{} generated test(s), committed with the change", n("kept")),
        "behaviour_check" => format!(
            "the behaviour check: {} call(s) of {} function(s) gave the same results",
            n("calls"),
            n("functions")
        ),
        "compiles_and_imports_only" => format!(
            "only that it compiles and imports ({})",
            how["reason"].as_str().unwrap_or_default()
        ),
        "language_tools" => how["tools"].as_str().unwrap_or_default().to_string(),
        "not_available" => format!(
            "its suite only (no behaviour check for {} yet)",
            how["language"].as_str().unwrap_or_default()
        ),
        other => other.replace('_', " "),
    }
}

/// The tasks with their status, and the tests they changed.
fn tasks(summary: &Value) -> Vec<String> {
    let Some(tasks) = summary["tasks"]["tasks"]
        .as_array()
        .filter(|t| !t.is_empty())
    else {
        return Vec::new();
    };
    let mut out = heading("Tasks");
    out.push("| task | status |".into());
    out.push("|---|---|".into());
    let mut tests_changed = Vec::new();
    for task in tasks {
        let why = task["reason"]
            .as_str()
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        out.push(format!(
            "| {}. {} | {}{why} |",
            task["number"].as_u64().unwrap_or(0),
            task["title"]
                .as_str()
                .unwrap_or_default()
                .replace('|', "\\|"),
            task["status"]
                .as_str()
                .unwrap_or_default()
                .replace('_', " "),
        ));
        // What the task did to each test file (`tests/t.py (removed
        // test_a; added test_b)`), else the files alone.
        let described = task["test_changes"].as_array().filter(|c| !c.is_empty());
        let listed = described.or(task["tests_changed"].as_array());
        for test in listed.into_iter().flatten() {
            if let Some(test) = test.as_str() {
                tests_changed.push(test.to_string());
            }
        }
    }
    if !tests_changed.is_empty() {
        out.extend(heading("Tests the tasks changed (--allow-test-edits)"));
        out.extend(tests_changed.iter().map(|t| format!("- {t}")));
    }
    out
}

/// What a reviewer should look at twice.
fn cautions(summary: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    for module in summary["no_reference"].as_array().into_iter().flatten() {
        if let Some(module) = module.as_str() {
            lines.push(format!(
                "- `{module}` did not compile before: checked only in that it compiles and imports"
            ));
        }
    }
    for hunk in summary["left_out"].as_array().into_iter().flatten() {
        lines.push(format!(
            "- left out of attempt {}: {} ({})",
            hunk["attempt"].as_u64().unwrap_or(0),
            hunk["hunk"].as_str().unwrap_or_default(),
            hunk["why"].as_str().unwrap_or_default()
        ));
    }
    if lines.is_empty() {
        return lines;
    }
    let mut out = heading("Look twice");
    out.extend(lines);
    out
}

fn withheld(summary: &Value) -> Vec<String> {
    let secrets = &summary["secrets"];
    let mut out = heading("What was withheld from the model");
    if secrets["allowed"].as_bool() == Some(true) {
        out.push(
            "Nothing: the run had `--allow-secrets`, so secrets were sent as they are.".into(),
        );
        return out;
    }
    let places: Vec<&str> = secrets["places"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match secrets["withheld"].as_u64().unwrap_or(0) {
        0 => out.push("No secret was found in what the model was shown.".into()),
        n => {
            out.push(format!(
                "{n} secret(s), replaced by placeholders in every prompt and in the log:"
            ));
            out.extend(places.iter().map(|p| format!("- {p}")));
        }
    }
    out
}

fn commits(summary: &Value) -> Vec<String> {
    let list: Vec<&str> = summary["commits"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if list.is_empty() {
        return Vec::new();
    }
    let mut out = heading("Commits");
    out.push(
        "One commit per accepted attempt, each with `Swarm-*` trailers (`git log --format=%B`):"
            .into(),
    );
    out.extend(list.iter().map(|c| format!("- {c}")));
    out
}

fn artifacts(summary: &Value, cx: &Context<'_>) -> Vec<String> {
    let mut out = heading("The run's log and report");
    let log = summary["log_file"].as_str().unwrap_or_default();
    let name = log.rsplit('/').next().unwrap_or(log);
    match cx.run_url {
        Some(url) => out.push(format!(
            "Every model call with its prompt and reply (`{name}`) and the HTML report (`report.html`) are artifacts of [the CI run]({url})."
        )),
        None => out.push(format!(
            "Every model call with its prompt and reply is in `{name}`; `swarm report` renders it as HTML."
        )),
    }
    out
}

fn undo(cx: &Context<'_>) -> Vec<String> {
    let mut out = heading("How to undo");
    out.push(format!(
        "Close this pull request: `{}` is untouched until it is merged. After a merge, `git revert` the merge commit.",
        cx.base
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_repair_is_titled_by_its_tests_and_a_long_instruction_is_shortened() {
        let repair = json!({"tests_before": {"passed": 4, "total": 8},
            "tests_after": {"passed": 8, "total": 8}});
        assert_eq!(title(&repair, "."), "swarm: 8/8 tests pass (were 4/8)");
        assert_eq!(
            title(&repair, "pkg"),
            "swarm: 8/8 tests pass in pkg (were 4/8)"
        );
        let task =
            json!({"tasks": {"instruction": format!("rename {}\nsecond line", "x".repeat(100))}});
        let t = title(&task, ".");
        assert_eq!(t.chars().count(), TITLE_CHARS);
        assert!(
            t.starts_with("swarm: rename xxx") && t.ends_with('…'),
            "{t}"
        );
    }

    #[test]
    fn a_task_body_names_the_instruction_tasks_test_changes_and_what_was_withheld() {
        let summary = json!({
            "run_id": "20261127-1", "status": "success", "linter": "pylint",
            "tests_before": {"passed": 4, "total": 4}, "tests_after": {"passed": 4, "total": 4},
            "pylint_before": 8.5, "pylint_after": 9.0, "attempts": 2, "accepted": 2, "iterations": 2,
            "verification": {"stats.py": {"by": "existing_tests"},
                "fmt.py": {"by": "compiles_and_imports_only", "reason": "no test reaches it"}},
            "tasks": {"instruction": "Make average() return 0.0 for an empty list",
                "tasks": [{"number": 1, "title": "change average", "status": "done",
                    "commits": ["abc1234"], "tests_changed": ["tests/test_stats.py"],
                    "test_changes": ["tests/test_stats.py (removed test_average_of_empty_raises; added test_average_of_empty_is_zero)"]}]},
            "secrets": {"withheld": 1, "places": ["settings.py:4 (AWS access key id)"], "allowed": false},
            "commits": ["abc1234 swarm: task 1"],
            "log_file": "logs/experiment_data.json",
        });
        let text = body(
            &summary,
            &Context {
                target: ".",
                key: "k1",
                run_url: None,
                base: "main",
            },
        );
        for part in [
            "> Make average() return 0.0 for an empty list",
            "| pylint score | 8.50 | 9.00 |",
            "- `fmt.py`: only that it compiles and imports (no test reaches it)",
            "| 1. change average | done |",
            "- tests/test_stats.py (removed test_average_of_empty_raises; added test_average_of_empty_is_zero)",
            "1 secret(s), replaced by placeholders",
            "- settings.py:4 (AWS access key id)",
            "`swarm report` renders it as HTML",
            "Close this pull request: `main` is untouched",
        ] {
            assert!(text.contains(part), "{part:?} not in:\n{text}");
        }
        assert_eq!(
            title(&summary, "."),
            "swarm: Make average() return 0.0 for an empty list"
        );
    }
}
