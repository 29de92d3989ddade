//! Recording calls to a cassette and replaying cassettes and experiment
//! logs without network.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use swarm::llm::{
    build, ChatModel, ChatRequest, Finish, LlmError, ProviderConfig, ProviderKind, RecordingModel,
    Usage,
};

use super::{request, Wire};
use crate::support::llm_server::{LlmServer, Reply, REPLY_INPUT_TOKENS, REPLY_OUTPUT_TOKENS};

fn replay_config(path: Option<std::path::PathBuf>) -> ProviderConfig {
    ProviderConfig {
        kind: ProviderKind::Replay,
        model: "replay".into(),
        base_url: None,
        api_key: None,
        timeout: Duration::from_secs(1),
        max_time: Duration::ZERO,
        max_attempts: 1,
        replay_file: path,
    }
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest::single("You repair Python code.", text, 512)
}

#[tokio::test]
async fn recorded_cassette_replays_by_hash_without_network() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("calls.cassette.json");
    let server = LlmServer::start(|request| {
        let body = request.body_text();
        let text = if body.contains("first") {
            "answer one"
        } else {
            "answer two"
        };
        Reply::openai_text(text)
    });
    let recorder = RecordingModel::new(Wire::OPENAI.model(&server), &path).expect("new cassette");
    assert_eq!(recorder.model(), "gpt-test");
    let first = recorder.complete(&ask("first")).await.expect("recorded");
    assert_eq!(first.text, "answer one");
    // The cassette is on disk after every call, not only at the end.
    let after_one: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("written")).expect("JSON");
    assert_eq!(after_one["interactions"].as_array().map(Vec::len), Some(1));
    recorder.complete(&ask("second")).await.expect("recorded");
    assert_eq!(recorder.len(), 2);

    let cassette: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("written")).expect("JSON");
    assert_eq!(cassette["version"], json!(1));
    let first = &cassette["interactions"][0];
    assert_eq!(first["request_hash"], json!(ask("first").hash()));
    assert_eq!(first["model"], json!("gpt-test"));
    assert_eq!(first["request"]["messages"][0]["content"], json!("first"));
    assert_eq!(first["request"]["system"], json!("You repair Python code."));
    assert_eq!(first["response"]["text"], json!("answer one"));
    assert_eq!(first["response"]["finish"], json!("stop"));
    assert_eq!(
        first["response"]["usage"]["output_tokens"],
        json!(REPLY_OUTPUT_TOKENS)
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(Result::ok)
        .map(|entry| entry.file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary files left: {leftovers:?}");

    let http_calls = server.requests().len();
    let replay = build(&replay_config(Some(path))).expect("a cassette replays");
    assert_eq!(replay.kind(), ProviderKind::Replay);
    // Asked in the other order: the hash finds the right answer.
    let second = replay.complete(&ask("second")).await.expect("replayed");
    assert_eq!(second.text, "answer two");
    assert_eq!(
        second.usage,
        Usage {
            input_tokens: REPLY_INPUT_TOKENS,
            output_tokens: REPLY_OUTPUT_TOKENS,
            estimated: false
        }
    );
    assert_eq!(
        replay.complete(&ask("first")).await.expect("replayed").text,
        "answer one"
    );
    assert_eq!(server.requests().len(), http_calls, "replay sends nothing");
    let error = replay.complete(&ask("third")).await.expect_err("exhausted");
    assert!(error.to_string().contains("all 2 recorded"), "{error}");
}

#[tokio::test]
async fn recorder_appends_to_an_existing_cassette_and_skips_failures() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("nested").join("calls.json");
    let server = LlmServer::sequence(vec![
        Reply::openai_text("one"),
        Reply::status(400, "bad"),
        Reply::openai_truncated("two"),
    ]);
    let inner = Wire::OPENAI.model(&server);
    let recorder = RecordingModel::new(Arc::clone(&inner), &path).expect("new");
    recorder.complete(&ask("a")).await.expect("ok");
    recorder
        .complete(&ask("b"))
        .await
        .expect_err("400 is not recorded");
    drop(recorder);
    let recorder = RecordingModel::new(inner, &path).expect("reopen");
    assert_eq!(recorder.len(), 1);
    recorder.complete(&ask("c")).await.expect("ok");
    let cassette: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("written")).expect("JSON");
    let texts: Vec<&str> = cassette["interactions"]
        .as_array()
        .expect("interactions")
        .iter()
        .filter_map(|interaction| interaction["response"]["text"].as_str())
        .collect();
    assert_eq!(texts, ["one", "two"]);
    assert_eq!(
        cassette["interactions"][1]["response"]["finish"],
        json!("length")
    );

    let replay = build(&replay_config(Some(path))).expect("replays");
    replay.complete(&ask("a")).await.expect("one");
    let two = replay.complete(&ask("zzz")).await.expect("order fallback");
    assert_eq!((two.text.as_str(), two.finish), ("two", Finish::Length));
}

/// An experiment log as the lead writes it, plus entries of other kinds and
/// from other tools.
fn experiment_log(known: &ChatRequest, other: &ChatRequest) -> Value {
    json!([
        {"id": "1", "timestamp": "2026-01-01T00:00:00Z", "agent": "Auditor", "model": "gemini-2.5-flash",
         "action": "CODE_ANALYSIS", "status": "SUCCESS",
         "details": {"kind": "tool_run", "input_prompt": "pylint --output-format=json", "output_response": "[]"}},
        {"id": "2", "timestamp": "2026-01-01T00:00:01Z", "agent": "Auditor", "model": "gemini-2.5-flash",
         "action": "CODE_ANALYSIS", "status": "SUCCESS",
         "details": {"kind": "llm_call", "input_prompt": other.transcript(),
                     "output_response": "## Plan\n1. fix average", "request_hash": other.hash(),
                     "usage": {"input_tokens": 100, "output_tokens": 20}}},
        {"id": "3", "timestamp": "2026-01-01T00:00:02Z", "agent": "Fixer", "model": "gemini-2.5-flash",
         "action": "FIX", "status": "FAILURE",
         "details": {"kind": "llm_call", "input_prompt": "x", "output_response": "HTTP 503"}},
        {"id": "4", "timestamp": "2026-01-01T00:00:03Z", "agent": "Fixer", "model": "gemini-2.5-flash",
         "action": "FIX", "status": "SUCCESS",
         "details": {"kind": "llm_call", "input_prompt": known.transcript(),
                     "output_response": "--- a/stats.py\n+++ b/stats.py\n", "request_hash": known.hash(),
                     "finish": "length"}},
        {"id": "5", "timestamp": "2026-01-01T00:00:04Z", "agent": "Judge", "model": "-",
         "action": "DEBUG", "status": "SUCCESS",
         "details": {"input_prompt": "pytest", "output_response": "3 passed"}},
        {"id": "6", "timestamp": "2026-01-01T00:00:05Z", "agent": "Fixer", "model": "other-tool",
         "action": "FIX", "status": "SUCCESS",
         "details": {"input_prompt": "fix it", "output_response": "def average(xs): ..."}}
    ])
}

#[tokio::test]
async fn experiment_log_replays_by_hash_then_in_order() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("experiment_data.json");
    let known = request();
    let plan = ask("write a plan");
    let log = experiment_log(&known, &plan);
    std::fs::write(&path, serde_json::to_string_pretty(&log).expect("JSON")).expect("write log");

    let replay = build(&replay_config(Some(path))).expect("a log replays");
    // Hash match, although it is the second call in the log.
    let fix = replay.complete(&known).await.expect("replayed");
    assert_eq!(fix.text, "--- a/stats.py\n+++ b/stats.py\n");
    assert_eq!(fix.finish, Finish::Length);
    assert!(fix.usage.estimated, "no usage in that entry");
    assert_eq!(fix.attempts, 1);
    // No hash matches: the next unused call in order (the plan).
    let unknown = ask("something never recorded");
    let first_unused = replay.complete(&unknown).await.expect("replayed");
    assert_eq!(first_unused.text, "## Plan\n1. fix average");
    assert_eq!(
        first_unused.usage,
        Usage {
            input_tokens: 100,
            output_tokens: 20,
            estimated: false
        }
    );
    // The entry without `kind` from another tool.
    let last = replay.complete(&plan).await.expect("replayed");
    assert_eq!(last.text, "def average(xs): ...");
    let error = replay.complete(&plan).await.expect_err("exhausted");
    assert!(
        matches!(&error, LlmError::Replay(message) if message.contains("all 3 recorded")),
        "{error}"
    );
}

#[test]
fn replay_needs_a_readable_recording() {
    let missing = build(&replay_config(None)).expect_err("no file");
    assert!(matches!(missing, LlmError::Config { .. }), "{missing:?}");

    let dir = tempfile::tempdir().expect("temp dir");
    let absent = build(&replay_config(Some(dir.path().join("absent.json")))).expect_err("absent");
    assert!(absent.to_string().contains("cannot read"), "{absent}");

    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "<html>").expect("write");
    let error = build(&replay_config(Some(garbage))).expect_err("not JSON");
    assert!(
        error
            .to_string()
            .contains("neither an experiment log nor a cassette"),
        "{error}"
    );

    let no_calls = dir.path().join("tools-only.json");
    std::fs::write(
        &no_calls,
        r#"[{"agent":"Judge","details":{"input_prompt":"pytest","output_response":"ok"}}]"#,
    )
    .expect("write");
    let error = build(&replay_config(Some(no_calls))).expect_err("nothing to replay");
    assert!(
        error.to_string().contains("no recorded model calls"),
        "{error}"
    );
}
