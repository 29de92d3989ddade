//! A log written by an earlier release (`tests/logs/`, see its README) read
//! through the current types: every entry parses, writes back every key
//! with the value it had, and gives the report that release gave; and a
//! fresh run writes every key that release wrote.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use swarm::log::Entry;

use crate::support::fixture::{read_log, swarm_in};

/// `tests/logs/` in the source tree.
fn logs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/logs")
}

fn release_log() -> Vec<Value> {
    read_log(&logs_dir().join("experiment_data.json"))
}

fn details(entry: &Value) -> &Map<String, Value> {
    entry["details"].as_object().expect("details is an object")
}

/// The keys of `details` this version adds to what the release wrote: a
/// run's target and a rejection's reason, which it wrote only as text.
fn added_keys(entry: &Value) -> &'static [&'static str] {
    match entry["details"]["kind"].as_str() {
        Some("run_start") => &["target"],
        Some("review") if entry["details"]["verdict"] == "rejected" => &["reason"],
        // Which form the Fixer asked for and the model wrote (diff or whole
        // file), since the whole-file requests.
        Some("llm_call") if entry["details"].get("reply_form").is_some() => &["reply_form"],
        _ => &[],
    }
}

fn entry_of(value: &Value) -> Entry {
    serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("the entry does not read: {e}\n{value:#}"))
}

#[test]
fn log_fixture_every_entry_reads_and_writes_back_what_it_held() {
    let log = release_log();
    let mut kinds = BTreeSet::new();
    for original in &log {
        let entry = entry_of(original);
        assert!(
            !matches!(
                entry.details.kind,
                swarm::log::Kind::Unknown | swarm::log::Kind::Unnamed(_)
            ),
            "every kind the release wrote is known: {original:#}"
        );
        let mut again = serde_json::to_value(&entry).expect("an entry serializes");
        let written = again["details"].as_object_mut().expect("details");
        for key in added_keys(original) {
            assert!(
                written.remove(*key).is_some_and(|v| v.is_string()),
                "{key} is written: {original:#}"
            );
        }
        assert_eq!(&again, original, "the same keys with the same values");
        kinds.insert(format!(
            "{} {}",
            original["details"]["kind"].as_str().unwrap_or_default(),
            original["details"]["tool"].as_str().unwrap_or_default()
        ));
    }
    // What the fixture holds, so that a kind missing from it is noticed.
    let expected = [
        "commit ",
        "final_check ",
        "llm_call ",
        "plan_selection ",
        "review ",
        "run_end ",
        "run_start ",
        "safety ",
        "tool behaviour_check",
        "tool import_check",
        "tool metrics",
        "tool pylint",
        "tool pytest",
        "tool tester",
    ];
    assert_eq!(
        kinds.iter().map(String::as_str).collect::<Vec<_>>(),
        expected
    );
}

/// The data a report page embeds.
fn embedded_data(page: &str) -> Value {
    let open = "<script type=\"application/json\" id=\"swarm-data\">";
    let start = page.find(open).expect("the page embeds its data") + open.len();
    let end = start + page[start..].find("</script>").expect("the script ends");
    serde_json::from_str(&page[start..end]).expect("the embedded data is JSON")
}

#[test]
fn log_fixture_reports_what_the_release_reported() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("experiment_data.json");
    std::fs::copy(logs_dir().join("experiment_data.json"), &log).unwrap();
    let mut runs = Vec::new();
    for entry in release_log() {
        if entry["details"]["kind"] == "run_start" {
            runs.push(entry["details"]["run_id"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(runs.len(), 3, "{runs:?}");
    let prices = swarm::llm::PriceTable::new();
    for run in &runs {
        let written = swarm::report::write(&log, swarm::report::Which::Named(run), &prices)
            .unwrap_or_else(|e| panic!("{run}: {e}"));
        let page = std::fs::read_to_string(&written.path).unwrap();
        let expected = std::fs::read_to_string(logs_dir().join(format!("reports/{run}.json")))
            .expect("the release's report of the run");
        let expected: Value = serde_json::from_str(&expected).unwrap();
        assert_eq!(embedded_data(&page), expected, "run {run}");
    }
    // The gave-up run: its rejections with their rule and reason.
    let gave_up: Value = serde_json::from_str(
        &std::fs::read_to_string(logs_dir().join(format!("reports/{}.json", runs[2]))).unwrap(),
    )
    .unwrap();
    assert_eq!(gave_up["ending"]["status"], "gave_up");
    let rejected: Vec<&Value> = gave_up["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["verdict"] == "rejected")
        .collect();
    assert_eq!(rejected.len(), 2);
    assert_eq!(rejected[0]["rule"], "test_file");
    assert!(rejected[0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("test_stats.py is a test file"));
}

/// (agent, action, status, kind, tool) and the keys of `details`.
fn shape(entry: &Value) -> (String, BTreeSet<String>) {
    let kind = format!(
        "{} {} {} {} {}",
        entry["agent"],
        entry["action"],
        entry["status"],
        entry["details"]["kind"],
        entry["details"]["tool"]
    );
    let keys = details(entry).keys().cloned().collect();
    (kind, keys)
}

#[test]
fn log_fixture_a_fresh_run_writes_every_key_the_release_wrote() {
    let home = tempfile::tempdir().unwrap();
    let out = swarm_in(
        home.path(),
        home.path(),
        &["demo", "--fixture", "single_module", "--json"],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fresh = read_log(&home.path().join("logs/experiment_data.json"));
    let release = release_log();
    let first_run = &release[0]["details"]["run_id"];
    let old: Vec<&Value> = release
        .iter()
        .filter(|e| &e["details"]["run_id"] == first_run)
        .collect();
    assert_eq!(fresh.len(), old.len());
    for (new, old) in fresh.iter().zip(old) {
        let (new_kind, mut new_keys) = shape(new);
        let (old_kind, old_keys) = shape(old);
        assert_eq!(new_kind, old_kind);
        for key in added_keys(new) {
            assert!(new_keys.remove(*key), "{key} in {new:#}");
        }
        // New since the release: the passing tests of the baseline and the
        // final check.
        if new["details"]["tool"] == "pytest" && new["details"]["attempt"].is_null() {
            assert!(new_keys.remove("passing"), "passing in {new:#}");
        }
        assert_eq!(new_keys, old_keys, "{new_kind}");
        // The values that do not depend on the machine or the moment.
        for key in [
            "kind", "tool", "verdict", "rule", "passed", "total", "score",
        ] {
            assert_eq!(
                new["details"].get(key),
                old["details"].get(key),
                "{key} of {new_kind}"
            );
        }
        if new["details"]["kind"] == "llm_call" {
            assert_eq!(
                new["details"]["output_response"],
                old["details"]["output_response"]
            );
            // The Fixer's request has changed since the release (a small
            // file is asked for whole); every other request is the same.
            if new["details"].get("reply_form").is_none() {
                assert_eq!(
                    new["details"]["request_hash"],
                    old["details"]["request_hash"]
                );
            }
        }
    }
}
