//! The run's HTML report: written at the end of a real run, opened in a
//! real headless Chromium (it renders, throws nothing, logs no error, and
//! shows every attempt and every rejection), and `swarm report`.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::e2e::{run_openai, summary_of};
use crate::support::chromium::Chromium;
use crate::support::fixture::{good_model_reply, plan_then, prompt_of, FixtureRepo};
use crate::support::llm_server::{LlmServer, Reply};

/// A proposal the Reviewer rejects (it edits the tests), holding markup
/// that would run if the report did not escape it.
const TEST_EDIT: &str = "Relax the tests.\n```diff\n--- a/test_stats.py\n+++ b/test_stats.py\n@@ -1 +1 @@\n-\"\"\"Tests for the stats helpers.\"\"\"\n+\"\"\"Tests </script><img src=x onerror=\"document.title='pwned'\">.\"\"\"\n```\n";

/// The current text of the file a fix prompt shows.
fn current_text(prompt: &str) -> String {
    let marker = "## Current text of `stats.py`\n```python\n";
    let start = prompt.rfind(marker).expect("the prompt shows stats.py") + marker.len();
    let end = start + prompt[start..].find("\n```\n").expect("the block ends");
    format!("{}\n", &prompt[start..end])
}

/// A diff that makes `mean` return 0: a passing test then fails.
fn breaking_reply(prompt: &str) -> String {
    let current = current_text(prompt);
    let broken = current.replace("return runningTotal / len(data)", "return 0");
    assert_ne!(broken, current, "mean() is where the fixture has it");
    let diff = similar::TextDiff::from_lines(&current, &broken)
        .unified_diff()
        .header("a/stats.py", "b/stats.py")
        .to_string();
    format!("Simplify mean().\n\n```diff\n{diff}```\n")
}

/// single_module's plan, then: a rejected proposal, a regressing one, the fix.
fn three_attempt_model() -> LlmServer {
    let fixes = AtomicUsize::new(0);
    LlmServer::start(move |req| {
        let prompt = prompt_of(req);
        if prompt.starts_with("Write a refactoring plan") {
            return Reply::text_for(req, &good_model_reply("single_module", "", &prompt));
        }
        if prompt.starts_with("Write held-out pytest tests") {
            return Reply::text_for(req, "No held-out tests.");
        }
        let reply = match fixes.fetch_add(1, Ordering::SeqCst) {
            0 => TEST_EDIT.to_string(),
            1 => breaking_reply(&prompt),
            _ => good_model_reply("single_module", "", &prompt),
        };
        Reply::text_for(req, &reply)
    })
}

fn of_run<'a>(log: &'a [Value], run_id: &str, kind: &str) -> Vec<&'a Value> {
    log.iter()
        .filter(|e| e["details"]["run_id"] == run_id && e["details"]["kind"] == kind)
        .collect()
}

#[test]
fn a_run_with_three_attempts_renders_in_chromium_showing_every_attempt() {
    let fx = FixtureRepo::new("single_module");
    let server = three_attempt_model();
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let run_id = summary_of(&out.stdout)["run_id"]
        .as_str()
        .expect("run id")
        .to_string();
    let logs = fx.repo.tmp().join("cwd/logs");
    let page = logs.join(format!("report-{run_id}.html"));
    assert!(
        stderr.contains(&format!("report: logs/report-{run_id}.html")),
        "{stderr}"
    );
    let html = std::fs::read_to_string(&page).expect("the run wrote its report");
    assert_eq!(
        std::fs::read_to_string(logs.join("report.html")).expect("the latest report"),
        html
    );
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no network"
    );

    // What the log says happened.
    let log = fx.log();
    let reviews = of_run(&log, &run_id, "review");
    let commits = of_run(&log, &run_id, "commit");
    let verdicts: Vec<&str> = reviews
        .iter()
        .map(|r| r["details"]["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["rejected", "accepted", "accepted"]);
    let judged: Vec<&str> = commits
        .iter()
        .map(|c| c["details"]["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(judged.len(), 2, "{judged:?}");
    assert!(
        ["regressed", "not-improved"].contains(&judged[0]),
        "the breaking attempt failed: {judged:?}"
    );
    assert!(["improved", "green"].contains(&judged[1]), "{judged:?}");
    let reasons: Vec<String> = reviews
        .iter()
        .filter(|r| r["details"]["verdict"] == "rejected")
        .map(|r| {
            let output = r["details"]["output_response"].as_str().unwrap();
            let first = output.lines().next().unwrap();
            first.strip_prefix("rejected: ").unwrap().to_string()
        })
        .collect();
    assert!(reasons[0].contains("test file"), "{reasons:?}");

    // What the browser shows.
    let mut browser = Chromium::start();
    browser.open(&page);
    let seen = browser.eval(
        "({
            title: document.title,
            attempts: document.querySelectorAll('.attempt').length,
            verdicts: Array.from(document.querySelectorAll('.attempt'), a => a.dataset.verdict),
            diffs: Array.from(document.querySelectorAll('.attempt pre.diff'), p => p.textContent),
            text: document.body.innerText,
            images: document.images.length,
            scripts: document.scripts.length,
            dots: document.querySelectorAll('.chart svg circle').length,
            calls: document.querySelectorAll('tr.call').length,
            scriptRan: document.body.dataset.attempts,
        })",
    );
    let errors = browser.errors();
    drop(browser);
    assert!(errors.is_empty(), "the page logged errors: {errors:#?}");
    assert_eq!(seen["title"], format!("swarm run {run_id}"), "{seen}");
    assert_eq!(seen["attempts"], reviews.len(), "{seen}");
    assert_eq!(
        seen["verdicts"],
        serde_json::json!(["rejected", judged[0], judged[1]])
    );
    assert_eq!(seen["scriptRan"], reviews.len().to_string());
    let text = seen["text"].as_str().unwrap();
    for reason in &reasons {
        assert!(
            text.contains(reason.as_str()),
            "{reason:?} not shown:\n{text}"
        );
    }
    // The rejected proposal's markup is text, not elements.
    assert_eq!(seen["images"], 0);
    assert_eq!(seen["scripts"], 2, "only the page's own scripts");
    assert!(seen["diffs"][0]
        .as_str()
        .unwrap()
        .contains("</script><img src=x onerror="));
    // The committed attempts show their diffs.
    assert!(seen["diffs"][1].as_str().unwrap().contains("+    return 0"));
    assert!(seen["diffs"][2]
        .as_str()
        .unwrap()
        .contains("+++ b/stats.py"));
    // Baseline and two judged attempts, in each of the two charts.
    assert_eq!(seen["dots"], 6, "{seen}");
    let llm_calls = of_run(&log, &run_id, "llm_call").len();
    assert_eq!(seen["calls"], llm_calls);
}

#[test]
fn swarm_report_prints_rewrites_opens_and_refuses_unknown_runs() {
    let fx = FixtureRepo::new("single_module");
    let server = plan_then(TEST_EDIT);
    let out = run_openai(&fx, &server, &["--max-iterations", "1"]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run_id = summary_of(&out.stdout)["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let cwd = fx.repo.tmp().join("cwd");
    let page = cwd.join(format!("logs/report-{run_id}.html"));
    // A run that gave up has its report too; `swarm report` writes it again.
    std::fs::remove_file(&page).expect("the run wrote its report");
    let out = fx.swarm(&["report"], &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("logs/report-{run_id}.html")
    );
    let html = std::fs::read_to_string(&page).expect("written again");
    assert!(html.contains("is a test file"));
    assert!(html.contains("class=\"badge v-gave_up\">gave_up"), "{html}");

    // By a unique start of its id.
    let out = fx.swarm(&["report", &run_id[..15]], &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");

    // --open hands the page to $BROWSER.
    let opened = fx.repo.tmp().join("opened.txt");
    let browser = fx.repo.tmp().join("browser.sh");
    std::fs::write(
        &browser,
        format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > {}.tmp && mv {0}.tmp {0}\n",
            opened.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &browser,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let out = fx.swarm(
        &["report", "--open"],
        &[("BROWSER", browser.to_str().unwrap())],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        crate::support::procs::wait_until(std::time::Duration::from_secs(30), || opened.exists()),
        "the browser was not started"
    );
    assert_eq!(
        std::fs::read_to_string(&opened).unwrap(),
        page.canonicalize().unwrap().to_str().unwrap(),
        "the browser gets the full path"
    );

    // An unknown run: one line saying how to list the runs, exit 1.
    let out = fx.swarm(&["report", "19990101-000000-dead"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("swarm log"), "{stderr}");
    // No log at all.
    let elsewhere = fx.swarm(&["report", "--log-file", "nowhere/log.json"], &[]);
    assert_eq!(elsewhere.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&elsewhere.stderr);
    // Said once, on one line.
    assert_eq!(stderr.matches("no experiment log").count(), 1, "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}
