//! The experiment log on disk: real processes appending to one file at once,
//! a log cut short at every byte offset, a log written by the older
//! pretty-printing version, and two real runs sharing one log.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use swarm::log::{Action, Agent, Entry, ExperimentLog, Kind, ModelCall, Repair};

use crate::support::fixture::{read_log, swarm_in};

/// Processes appending at once, and entries each.
const WRITERS: usize = 6;
const PER_WRITER: usize = 120;

/// An entry of `writer` numbered `n` (a model call about file `writer` in
/// round `n`), with text that looks like the log's own structure.
fn entry(writer: &str, n: usize) -> Entry {
    Entry::new(
        Agent::Fixer,
        "m",
        Action::Fix,
        format!(
            "prompt {n} of {writer}: \"}}\n]\" ,\n{{ [é→✓] \\ {}",
            "x".repeat(n % 7 * 40)
        ),
        "reply [{}]\n]\n",
        Kind::LlmCall(ModelCall {
            file: Some(writer.to_string()),
            iteration: Some(u32::try_from(n).expect("a small number")),
            ..ModelCall::default()
        }),
    )
}

/// The entries of an old log, written as the version before in-place appends
/// wrote them: the whole array pretty-printed, then a newline.
fn old_pretty_log(count: usize) -> (String, Vec<Value>) {
    let entries: Vec<Value> = (0..count)
        .map(|n| {
            json!({
                "id": format!("old-{n}"),
                "timestamp": "2026-01-02T03:04:05.000+00:00",
                "agent": "Auditor",
                "model": "m",
                "action": "CODE_ANALYSIS",
                "details": {"input_prompt": format!("old prompt {n} \"}}\n]"), "output_response": "[1, 2]"},
                "status": "SUCCESS",
            })
        })
        .collect();
    let text = serde_json::to_string_pretty(&entries).expect("serialize") + "\n";
    (text, entries)
}

/// Files next to the log other than the log itself.
fn siblings(log: &Path) -> Vec<PathBuf> {
    let dir = log.parent().expect("the log has a folder");
    let name = log
        .file_name()
        .expect("the log has a name")
        .to_string_lossy();
    // The log's own files (`<name>.cutoff-…`, `<name>.corrupt-…`), not the
    // runs' reports beside it.
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .expect("read the log's folder")
        .map(|e| e.expect("folder entry").path())
        .filter(|p| p != log)
        .filter(|p| {
            p.file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with(&*name))
        })
        .collect();
    found.sort();
    found
}

fn spawn_writer(log: &Path, go: &Path, writer: usize) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "log::child_appends",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SWARM_IT_LOG", log)
        .env("SWARM_IT_GO", go)
        .env("SWARM_IT_WRITER", format!("w{writer}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a writer")
}

#[test]
fn processes_appending_at_once_keep_every_entry() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("logs/experiment_data.json");
    fs::create_dir_all(log.parent().unwrap()).unwrap();
    // An old log, so that the first appends also meet a tail they must scan.
    let (old, old_entries) = old_pretty_log(3);
    fs::write(&log, &old).unwrap();
    let go = dir.path().join("go");
    let children: Vec<Child> = (0..WRITERS).map(|w| spawn_writer(&log, &go, w)).collect();
    fs::write(&go, "").unwrap();
    for (w, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().expect("wait for a writer");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "writer {w} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let entries = read_log(&log);
    assert_eq!(
        &entries[..3],
        &old_entries[..],
        "the old entries stay first"
    );
    let mut seen: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut order = Vec::new();
    for e in &entries[3..] {
        let writer = e["details"]["file"].as_str().unwrap().to_string();
        seen.entry(writer.clone())
            .or_default()
            .push(e["details"]["iteration"].as_u64().unwrap());
        assert_eq!(e["details"]["output_response"], "reply [{}]\n]\n");
        order.push(writer);
    }
    let want: Vec<u64> = (0..PER_WRITER as u64).collect();
    assert_eq!(seen.len(), WRITERS, "every writer is in the log");
    for (writer, ns) in &seen {
        assert_eq!(ns, &want, "{writer}: every entry once, in its order");
    }
    let switches = order.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(
        switches >= WRITERS,
        "the writers ran at the same time ({switches} switches between writers)"
    );
    assert_eq!(
        siblings(&log),
        Vec::<PathBuf>::new(),
        "nothing was repaired"
    );
}

#[test]
#[ignore = "run by processes_appending_at_once_keep_every_entry"]
fn child_appends() {
    let (Some(log), Some(go), Some(writer)) = (
        std::env::var_os("SWARM_IT_LOG"),
        std::env::var_os("SWARM_IT_GO"),
        std::env::var("SWARM_IT_WRITER").ok(),
    ) else {
        return;
    };
    let started = Instant::now();
    while !Path::new(&go).exists() {
        assert!(started.elapsed() < Duration::from_secs(60), "no go");
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut log = ExperimentLog::open(Path::new(&log)).expect("open");
    for n in 0..PER_WRITER {
        log.record(entry(&writer, n)).expect("record");
    }
    assert!(log.repairs().is_empty(), "{:?}", log.repairs());
}

/// The number of elements of the array `prefix]`, if that parses.
fn elements_if_closed(prefix: &[u8]) -> Option<usize> {
    let mut closed = prefix.to_vec();
    closed.extend_from_slice(b"]");
    match serde_json::from_slice::<Value>(&closed) {
        Ok(Value::Array(items)) => Some(items.len()),
        _ => None,
    }
}

#[test]
fn a_log_cut_at_any_byte_keeps_every_complete_entry_and_sets_the_rest_aside() {
    // An old pretty-printed log followed by entries of this version.
    let dir = tempfile::tempdir().unwrap();
    let full_path = dir.path().join("full.json");
    let (old, _) = old_pretty_log(2);
    fs::write(&full_path, old).unwrap();
    let mut log = ExperimentLog::open(&full_path).unwrap();
    for n in 0..2 {
        log.record(entry("w", n)).unwrap();
    }
    let full = fs::read(&full_path).unwrap();
    let originals = read_log(&full_path);
    assert_eq!(originals.len(), 4);

    // The oracle: the complete entries of a prefix are those of the longest
    // shorter prefix that is a valid array once closed.
    let mut complete = Vec::with_capacity(full.len() + 1);
    let mut last = 0;
    for k in 0..=full.len() {
        if let Some(n) = elements_if_closed(&full[..k]) {
            last = n;
        }
        complete.push(last);
    }

    // Every offset, on a few threads: each case syncs the disk several times.
    let offsets: Vec<usize> = (0..=full.len()).collect();
    std::thread::scope(|scope| {
        for chunk in offsets.chunks(offsets.len().div_ceil(4)) {
            let (full, originals, complete) = (&full, &originals, &complete);
            scope.spawn(move || {
                for &k in chunk {
                    check_cut(full, k, originals, complete[k]);
                }
            });
        }
    });
}

/// Cuts `full` at `k`, appends, and checks that the `kept` complete entries
/// stayed and the rest was set aside.
fn check_cut(full: &[u8], k: usize, originals: &[Value], kept: usize) {
    let case = tempfile::tempdir().unwrap();
    let path = case.path().join("experiment_data.json");
    let cut = &full[..k];
    fs::write(&path, cut).unwrap();
    let mut log = ExperimentLog::open(&path).unwrap();
    log.record(entry("new", k)).unwrap();

    let entries = read_log(&path);
    assert_eq!(entries.len(), kept + 1, "cut at {k}");
    assert_eq!(&entries[..kept], &originals[..kept], "cut at {k}");
    assert_eq!(entries[kept]["details"]["file"], "new", "cut at {k}");

    let asides = siblings(&path);
    let intact = k == 0 || serde_json::from_slice::<Value>(cut).is_ok();
    match log.repairs() {
        [] => {
            assert!(intact, "cut at {k}: a damaged log was not repaired");
            assert!(asides.is_empty(), "cut at {k}: {asides:?}");
        }
        [repair] => {
            assert!(!intact, "cut at {k}: an intact log was repaired");
            assert_eq!(asides, vec![repair.aside().to_path_buf()], "cut at {k}");
            let moved = fs::read(repair.aside()).unwrap();
            let stays = &cut[..k - moved.len()];
            assert_eq!(
                [stays, &moved[..]].concat(),
                cut,
                "cut at {k}: nothing lost"
            );
            let Repair::CutShort {
                kept: said, bytes, ..
            } = repair
            else {
                panic!("cut at {k}: {repair:?}")
            };
            assert_eq!((*said, *bytes), (kept, moved.len() as u64), "cut at {k}");
            if kept > 0 {
                assert_eq!(elements_if_closed(stays), Some(kept), "cut at {k}");
                let text = fs::read(&path).unwrap();
                assert!(text.starts_with(stays), "cut at {k}: kept bytes in place");
            } else {
                assert!(
                    stays.is_empty(),
                    "cut at {k}: a log with no entry moves whole"
                );
            }
        }
        many => panic!("cut at {k}: {many:?}"),
    }
}

#[test]
fn a_pretty_printed_log_of_the_older_version_is_appended_to() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("experiment_data.json");
    let (old, old_entries) = old_pretty_log(4);
    fs::write(&path, &old).unwrap();
    let mut log = ExperimentLog::open(&path).unwrap();
    assert!(log.repairs().is_empty());
    let old_body = &old[..old.rfind('}').unwrap() + 1];
    for n in 0..3 {
        log.record(entry("new", n)).unwrap();
        // Valid JSON after every append, the old bytes untouched.
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(old_body), "{text}");
        let entries = read_log(&path);
        assert_eq!(entries.len(), 4 + n + 1);
        assert_eq!(&entries[..4], &old_entries[..]);
        assert_eq!(entries[4 + n]["details"]["iteration"], n);
        assert_eq!(entries[4 + n]["agent"], "Fixer");
        assert!(entries[4 + n]["id"].as_str().unwrap().len() == 36);
    }
    assert!(log.repairs().is_empty());
    assert_eq!(siblings(&path), Vec::<PathBuf>::new());
    // From the first append on, one entry per line.
    let text = fs::read_to_string(&path).unwrap();
    let tail = &text[old_body.len()..];
    assert!(tail.starts_with(",\n"), "{tail}");
    let tail: Vec<&str> = tail[2..].lines().collect();
    assert_eq!(tail.len(), 4, "{tail:?}");
    assert_eq!(tail[3], "]");
}

#[test]
fn two_runs_sharing_a_damaged_log_mend_it_once_and_keep_both_runs() {
    let cwd = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let log = cwd.path().join("logs/experiment_data.json");
    fs::create_dir_all(log.parent().unwrap()).unwrap();
    // An old log whose third entry a crash cut short.
    let (old, old_entries) = old_pretty_log(3);
    let cut_at = old.find("old prompt 2").unwrap();
    fs::write(&log, &old[..cut_at]).unwrap();

    let runs: Vec<_> = (0..2)
        .map(|_| {
            let (cwd, home) = (cwd.path().to_path_buf(), home.path().to_path_buf());
            std::thread::spawn(move || {
                swarm_in(
                    &cwd,
                    &home,
                    &["demo", "--fixture", "single_module", "--json"],
                    &[],
                )
            })
        })
        .collect();
    let mut notices = 0;
    for run in runs {
        let out = run.join().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}\n{stdout}");
        notices += stderr.matches("ended in an incomplete entry").count();
    }
    assert_eq!(notices, 1, "the run that mended the log says so");

    let entries = read_log(&log);
    assert_eq!(
        &entries[..2],
        &old_entries[..2],
        "complete old entries kept"
    );
    let asides = siblings(&log);
    assert_eq!(asides.len(), 1, "{asides:?}");
    let moved = fs::read_to_string(&asides[0]).unwrap();
    let kept_end = old[..cut_at].rfind('}').unwrap() + 1;
    assert_eq!(
        moved,
        old[kept_end..cut_at],
        "the cut-off bytes are set aside"
    );

    let mut run_ids: Vec<&str> = Vec::new();
    for e in &entries[2..] {
        let id = e["details"]["run_id"]
            .as_str()
            .expect("every entry names its run");
        if !run_ids.contains(&id) {
            run_ids.push(id);
        }
    }
    assert_eq!(run_ids.len(), 2, "both runs are in the log: {run_ids:?}");
    let of_run = |id: &str| -> Vec<&Value> {
        entries[2..]
            .iter()
            .filter(|e| e["details"]["run_id"] == id)
            .collect()
    };
    let (a, b) = (of_run(run_ids[0]), of_run(run_ids[1]));
    assert_eq!(
        a.len(),
        b.len(),
        "the same replayed run logs the same entries"
    );
    for run in [&a, &b] {
        assert_eq!(run.first().unwrap()["details"]["kind"], "run_start");
        assert_eq!(run.last().unwrap()["details"]["kind"], "run_end");
    }
}
