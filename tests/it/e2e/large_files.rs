//! Large files in pieces, end to end: a 5,000-line module is fixed from a
//! prompt that shows the broken function with its line numbers, not the
//! file; and with a small declared context window no request the model
//! server receives is larger than the window.

use regex::Regex;
use serde_json::Value;

use super::{summary_of, FAKE_KEY};
use crate::support::fixture::{prompt_of, read_log, swarm_in};
use crate::support::llm_server::{LlmServer, RecordedRequest, Reply};
use crate::support::repo::TestRepo;

const BUG: &str = "    return readings[len(readings)]";
const FIX: &str = "    return readings[-1]";

/// `readings.py`: `helpers` small functions, the broken `last_reading`
/// after `bug_after` of them, and a test module with one failing and two
/// passing tests. Returns the module's text and the line of the bug.
fn big_project(helpers: usize, bug_after: usize) -> (String, usize, String) {
    let mut text = String::from("\"\"\"Scaled readings of many sensors.\"\"\"\n\nimport math\n");
    let mut bug_line = 0;
    for i in 0..helpers {
        if i == bug_after {
            text.push_str(
                "\n\ndef last_reading(readings):\n    \"\"\"Return the most recent reading.\"\"\"\n",
            );
            bug_line = text.lines().count() + 1;
            text.push_str(BUG);
            text.push('\n');
        }
        text.push_str(&format!(
            "\n\ndef scale_{i:04}(value):\n    \"\"\"Return value scaled for sensor {i}.\"\"\"\n    return value * {i} + math.floor({i} / 7)\n"
        ));
    }
    let tests = "\"\"\"Tests of readings.\"\"\"\n\nfrom readings import last_reading, scale_0003, scale_0010\n\n\n\
def test_last_reading_is_the_latest():\n    assert last_reading([4, 5, 6]) == 6\n\n\n\
def test_scale_0003():\n    assert scale_0003(2) == 6\n\n\n\
def test_scale_0010():\n    assert scale_0010(1) == 11\n"
        .to_string();
    (text, bug_line, tests)
}

const PLAN: &str = "# Refactoring plan\n\n## Summary\n\nOne bug in `readings.py`.\n\n## readings.py\n\n\
- **Type**: bug\n  **Severity**: high\n  **Location**: `last_reading()`\n  **Description**: indexes one \
past the end of the list.\n  **Suggested fix**: return `readings[-1]`.\n";

/// The excerpts (or the whole file) a fix prompt shows: (first line, lines).
fn shown_blocks(prompt: &str) -> Vec<(usize, Vec<String>)> {
    let excerpt = Regex::new(r"(?m)^### lines (\d+)-\d+ of \d+ \(.*\)\n```python\n").unwrap();
    let whole = Regex::new(r"(?m)^## Current text of `[^`]+`\n```python\n").unwrap();
    let mut blocks = Vec::new();
    let mut add = |first: usize, body_start: usize| {
        let body_end = body_start + prompt[body_start..].find("```\n").unwrap_or(0);
        let lines = prompt[body_start..body_end]
            .lines()
            .map(String::from)
            .collect();
        blocks.push((first, lines));
    };
    for c in excerpt.captures_iter(prompt) {
        add(c[1].parse().unwrap(), c.get(0).unwrap().end());
    }
    for m in whole.find_iter(prompt) {
        add(1, m.end());
    }
    blocks
}

/// What a model that reads the prompt writes: a hunk replacing [`BUG`] by
/// [`FIX`] with three lines of context copied from the excerpt that shows
/// it, numbered by the excerpt's header. `None` when no excerpt shows it.
fn diff_from_prompt(prompt: &str) -> Option<String> {
    for (first, lines) in shown_blocks(prompt) {
        let Some(i) = lines.iter().position(|l| l == BUG) else {
            continue;
        };
        let before = &lines[i.saturating_sub(3)..i];
        let after = &lines[i + 1..(i + 4).min(lines.len())];
        let start = first + i - before.len();
        let count = before.len() + 1 + after.len();
        let mut hunk = format!(
            "--- a/readings.py\n+++ b/readings.py\n@@ -{start},{count} +{start},{count} @@\n"
        );
        for l in before {
            hunk.push_str(&format!(" {l}\n"));
        }
        hunk.push_str(&format!("-{BUG}\n+{FIX}\n"));
        for l in after {
            hunk.push_str(&format!(" {l}\n"));
        }
        return Some(format!(
            "`last_reading` indexes one past the end; return the last item.\n\n```diff\n{hunk}```\n"
        ));
    }
    None
}

/// Plans, then fixes from what each fix prompt shows.
fn reading_model(request: &RecordedRequest) -> Reply {
    let prompt = prompt_of(request);
    if prompt.starts_with("Write a refactoring plan") {
        return Reply::text_for(request, PLAN);
    }
    match diff_from_prompt(&prompt) {
        Some(reply) => Reply::text_for(request, &reply),
        None => Reply::text_for(request, "`readings.py` needs no further change."),
    }
}

/// Runs swarm on `repo` (target: its root) against `server`.
fn run(repo: &TestRepo, server: &LlmServer, extra: &[&str]) -> std::process::Output {
    let cwd = repo.tmp().join("cwd");
    std::fs::create_dir_all(&cwd).expect("cwd");
    let base = format!("{}/v1", server.base_url());
    let target = repo.root.to_string_lossy().into_owned();
    let mut args = vec!["--target_dir", target.as_str(), "--json"];
    args.extend_from_slice(extra);
    swarm_in(
        &cwd,
        &repo.home,
        &args,
        &[("OPENAI_API_KEY", FAKE_KEY), ("OPENAI_BASE_URL", &base)],
    )
}

fn fixer_calls(repo: &TestRepo) -> Vec<Value> {
    read_log(&repo.tmp().join("cwd/logs/experiment_data.json"))
        .into_iter()
        .filter(|e| e["agent"] == "Fixer" && e["details"]["kind"] == "llm_call")
        .collect()
}

/// Asserts the run ended green with the fix delivered to `main`.
fn assert_fixed(repo: &TestRepo, out: &std::process::Output, start: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let summary = summary_of(&out.stdout);
    assert_eq!(summary["status"], "success", "{summary}");
    assert_ne!(repo.head(), start, "HEAD did not move");
    assert_eq!(repo.git(&["rev-parse", "--abbrev-ref", "HEAD"]), "main");
    assert!(repo.git(&["status", "--porcelain"]).is_empty());
    let fixed = repo.read("readings.py");
    assert!(fixed.contains(&format!("{FIX}\n")), "not fixed on disk");
    assert!(!fixed.contains(BUG));
}

#[test]
fn a_5000_line_module_is_fixed_from_a_prompt_showing_the_function_not_the_file() {
    let (module, bug_line, tests) = big_project(1_000, 460);
    assert!(
        module.lines().count() >= 5_000,
        "{}",
        module.lines().count()
    );
    let repo = TestRepo::with_files(&[("readings.py", &module), ("test_readings.py", &tests)]);
    let start = repo.head();
    let server = LlmServer::start(reading_model);
    let out = run(&repo, &server, &[]);
    assert_fixed(&repo, &out, &start);
    // Only the one line changed.
    let changed = repo.git(&["diff", "--numstat", &start, "HEAD"]);
    assert_eq!(changed, "1\t1\treadings.py");

    let calls = fixer_calls(&repo);
    let first = calls.first().expect("a fix request in the log");
    let prompt = first["details"]["input_prompt"].as_str().unwrap();
    // The function, under a header with its line numbers in the file.
    let def_line = bug_line - 2;
    let header =
        Regex::new(r"(?m)^### lines (\d+)-(\d+) of (\d+) \(.*`last_reading`.*\)$").unwrap();
    let c = header
        .captures(prompt)
        .unwrap_or_else(|| panic!("no header for last_reading:\n{prompt}"));
    let (from, to): (usize, usize) = (c[1].parse().unwrap(), c[2].parse().unwrap());
    assert!(from <= def_line && bug_line <= to, "lines {from}-{to}");
    assert_eq!(c[3].parse::<usize>().unwrap(), module.lines().count());
    assert!(prompt.contains(&format!(
        "def last_reading(readings):\n    \"\"\"Return the most recent reading.\"\"\"\n{BUG}\n"
    )));
    // Not the file: a far function's body is absent, the prompt is small.
    assert!(!prompt.contains("return value * 900 + math.floor(900 / 7)"));
    assert!(!prompt.contains("## Current text of"));
    assert!(
        prompt.len() * 4 < module.len(),
        "{} of {}",
        prompt.len(),
        module.len()
    );
    assert!(prompt.contains("the full file"));
    // The log says which ranges were shown and why.
    let excerpts = first["details"]["excerpts"]
        .as_array()
        .expect("details.excerpts");
    assert!(
        excerpts.iter().any(|e| {
            e["start"].as_u64().unwrap() as usize <= bug_line
                && bug_line <= e["end"].as_u64().unwrap() as usize
                && e["why"].as_str().unwrap().contains("last_reading")
        }),
        "{excerpts:?}"
    );
}

/// A model that rambles (no diff) on its first answer to a fix request,
/// as long as a reply limit's worth of real tokens (more by swarm's
/// estimate), and answers like [`reading_model`] otherwise.
fn rambling_model() -> LlmServer {
    // Varied sentences, not one said again and again: a reply that loops
    // is cut and not shown again, and this one must be shown again.
    let rambling = crate::support::prose::sentences(
        "I looked at the readings module closely.",
        "I looked at the readings module closely. ".len() * 290,
    );
    LlmServer::start(move |request| {
        let prompt = prompt_of(request);
        let asked_again = request.body_json()["messages"]
            .as_array()
            .is_some_and(|m| m.len() > 3);
        if !prompt.starts_with("Write a refactoring plan") && !asked_again {
            return Reply::text_for(request, &rambling);
        }
        reading_model(request)
    })
}

/// Runs swarm with `--context-window window` on a module of `helpers`
/// functions against [`rambling_model`]; asserts the fix is delivered and
/// no request the server received was larger than the window (its
/// messages by swarm's generous estimate, plus its reply limit). Returns
/// the Fixer's log entries.
fn fixed_within(window: u64, helpers: usize) -> Vec<Value> {
    let (module, _, tests) = big_project(helpers, helpers / 2);
    let repo = TestRepo::with_files(&[("readings.py", &module), ("test_readings.py", &tests)]);
    let start = repo.head();
    let server = rambling_model();
    let out = run(&repo, &server, &["--context-window", &window.to_string()]);
    assert_fixed(&repo, &out, &start);

    let requests = server.requests();
    let mut asked_again = false;
    for request in &requests {
        let body = request.body_json();
        let messages = body["messages"].as_array().expect("chat messages");
        asked_again |= messages.len() > 3;
        let text: u64 = messages
            .iter()
            .map(|m| swarm::llm::budget_tokens(m["content"].as_str().unwrap_or_default()))
            .sum();
        let reply = body["max_tokens"]
            .as_u64()
            .or_else(|| body["max_completion_tokens"].as_u64())
            .expect("a reply limit");
        assert!(
            text + reply <= window,
            "request {} takes {text} + {reply} tokens",
            request.index
        );
        assert!(request.body.len() as u64 <= 3 * window + 2_000);
    }
    assert!(asked_again, "the long reply was never asked about again");
    fixer_calls(&repo)
}

// The windows are small enough that the module cannot be sent whole with a
// reply, and large enough for the plan request, whose prompt is another
// part's business.
const WINDOW: u64 = 12_000;

#[test]
fn with_a_small_context_window_no_request_is_larger_than_the_window() {
    // About 46,000 characters: whole, the fix prompt alone passes the window.
    let (module, _, _) = big_project(400, 200);
    assert!(swarm::llm::budget_tokens(&module) > WINDOW);
    let calls = fixed_within(WINDOW, 400);
    assert!(calls.iter().any(|c| c["details"]["excerpts"].is_array()));
}

#[test]
fn a_reask_after_a_reply_at_the_limit_still_fits_the_window() {
    // A module shown whole, its prompt a few hundred tokens short of the
    // fix allowance: the re-ask adds the long reply, which must be shown
    // cut to fit (whole, it would pass the window).
    let calls = fixed_within(WINDOW, 125);
    assert!(calls[0]["details"].get("excerpts").is_none(), "shown whole");
    let reask = calls[1]["details"]["input_prompt"].as_str().unwrap();
    assert!(reask.contains("I looked at the readings module closely."));
    assert!(reask.contains("(the rest of this reply is not shown)"));
}
