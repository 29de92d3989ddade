//! pylint as people's repositories meet it: file names that look like
//! options, and a file too large to lint within `--lint-timeout`.

use super::{run_openai, summary_of};
use crate::support::fixture::{good_model, FixtureRepo};
use crate::support::llm_server::LlmServer;

#[test]
fn file_names_that_look_like_options_are_linted_not_obeyed() {
    let fx = FixtureRepo::new("single_module");
    let marker = fx.repo.tmp().join("PWNED");
    // A file whose name, read as pylint's `--init-hook`, writes `marker`
    // (a file name cannot hold '/', so the path is built with chr(47)).
    let parts: Vec<String> = marker
        .iter()
        .skip(1)
        .map(|p| format!("'{}'", p.to_string_lossy()))
        .collect();
    let name = format!(
        "--init-hook=open(chr(47).join(['', {}]),'w').py",
        parts.join(", ")
    );
    fx.repo
        .write(&name, "\"\"\"A module with an odd name.\"\"\"\n");
    fx.repo
        .write("--output=stats.py", "\"\"\"Another one.\"\"\"\n");
    fx.repo.commit_all("modules with names like options");
    let start = fx.repo.head();

    let server = LlmServer::start(good_model("single_module", &fx.target_rel));
    // The sandbox would stop the write too; the command line below is what
    // shows the names are passed as files.
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!marker.exists(), "pylint ran code from a file name");
    assert_ne!(fx.repo.head(), start);
    assert_eq!(
        fx.repo.read("--output=stats.py"),
        "\"\"\"Another one.\"\"\"\n"
    );
    let log = fx.log();
    let pylint = log
        .iter()
        .find(|e| e["details"]["tool"] == "pylint")
        .expect("a pylint entry");
    let command = pylint["details"]["input_prompt"].as_str().unwrap();
    assert!(command.contains("./--init-hook="), "{command}");
    assert!(command.contains("./--output=stats.py"), "{command}");
}

#[test]
fn a_file_too_big_for_pylint_is_skipped_with_a_note_and_the_run_succeeds() {
    let fx = FixtureRepo::new("single_module");
    // About 48,000 lines: pylint needs well over a minute for it here.
    let mut big = String::from("\"\"\"Generated tables.\"\"\"\n");
    for i in 0..8000 {
        big.push_str(&format!(
            "\n\ndef function_{i}(value, other=None):\n    \"\"\"Doc.\"\"\"\n    if value > {i} and other is not None:\n        return [value * k for k in range({})] + [other]\n    return value\n",
            i % 7
        ));
    }
    fx.repo.write("big.py", &big);
    fx.repo.commit_all("a generated module");
    let start = fx.repo.head();

    let server = LlmServer::start(good_model("single_module", &fx.target_rel));
    let out = run_openai(&fx, &server, &["--lint-timeout", "10"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_ne!(fx.repo.head(), start, "the fix was delivered");
    assert!(
        stderr.contains("pylint: skipped the lint of big.py"),
        "{stderr}"
    );
    let summary = summary_of(&out.stdout);
    assert!(summary["pylint_after"].as_f64().is_some(), "{summary}");
    // Every measurement of the run says so in the log.
    let notes = fx
        .log()
        .iter()
        .filter(|e| e["details"]["tool"] == "pylint")
        .filter(|e| {
            e["details"]["output_response"]
                .as_str()
                .is_some_and(|o| o.contains("skipped the lint of big.py"))
        })
        .count();
    assert!(
        notes >= 2,
        "{notes} pylint entries mention the skipped file"
    );
}

#[test]
fn the_judge_lints_only_what_an_attempt_changed_and_reuses_the_rest() {
    let fx = FixtureRepo::new("package");
    let server = LlmServer::start(good_model("package", &fx.target_rel));
    let out = run_openai(&fx, &server, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let log = fx.log();
    let pylint: Vec<&serde_json::Value> = log
        .iter()
        .filter(|e| e["details"]["tool"] == "pylint")
        .collect();
    let baseline = &pylint[0]["details"];
    assert_eq!(pylint[0]["agent"], "Auditor");
    let files = baseline["linted"].as_u64().expect("linted");
    assert!(files >= 6, "{baseline}");
    assert_eq!(baseline["from_cache"], 0);
    assert_eq!(baseline["batches"].as_array().map(Vec::len), Some(1));
    let attempts: Vec<&serde_json::Value> = pylint[1..]
        .iter()
        .map(|e| &e["details"])
        .filter(|d| d["attempt"].is_u64())
        .collect();
    assert!(!attempts.is_empty(), "{log:?}");
    for details in attempts {
        let linted = details["linted"].as_u64().expect("linted");
        let cached = details["from_cache"].as_u64().expect("from_cache");
        assert_eq!(linted + cached, files, "{details}");
        assert!(
            (1..files).contains(&linted),
            "an attempt changes one module: {details}"
        );
        assert!(details["score"].is_f64(), "{details}");
    }
}
