//! `cargo bench --bench log`: what one experiment-log entry costs with 10,
//! 10,000 and 100,000 entries already in the file — it should not grow.
//!
//! For each size it times `ExperimentLog::open` (lock, check head and tail),
//! `record` (lock, check, append in place) and `sync` (the `fdatasync` a run
//! does once, at its end), and the first
//! append to a log of that size pretty-printed by the older version, which
//! scans the whole file once. For scale, it also times what the older
//! version did for every entry: read and parse the whole array, write it
//! all again pretty-printed, sync and rename.
//!
//! Then the report a run writes at its end, with the log holding that many
//! entries of earlier runs before it: read back from the log's end to the
//! run's start, against one pass over the whole log (what `swarm report
//! <run>` does, and what the run's own report did before).

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use swarm::log::{Action, Agent, Entry, ExperimentLog, Kind, RunEnd, RunStart, TestsRun, ToolRun};

const SIZES: &[usize] = &[10, 10_000, 100_000];
/// Timed appends per size.
const RUNS: usize = 100;

/// A typical entry: a tool call with its command line and trimmed output.
fn entry(n: usize) -> Entry {
    Entry::new(
        Agent::Judge,
        "gemini-2.5-flash",
        Action::CodeAnalysis,
        format!("python3 -m pytest -q --junitxml=report.xml tests/ # run {n}"),
        "tests/test_stats.py::test_mean PASSED\n".repeat(12),
        Kind::Tool(ToolRun::Tests(TestsRun {
            attempt: Some(u32::try_from(n % 10).expect("below 10")),
            passed: 12,
            total: 12,
            ..TestsRun::default()
        })),
    )
    .in_run("20261122-101500-7f3a")
}

/// The same entry as JSON, as it sits in the file.
fn value(n: usize) -> Value {
    json!({
        "id": format!("00000000-0000-4000-8000-{n:012}"),
        "timestamp": "2026-11-22T10:15:00.000+00:00",
        "agent": "Judge",
        "model": "gemini-2.5-flash",
        "action": "CODE_ANALYSIS",
        "details": {
            "input_prompt": format!("python3 -m pytest -q --junitxml=report.xml tests/ # run {n}"),
            "output_response": "tests/test_stats.py::test_mean PASSED\n".repeat(12),
            "kind": "tool", "tool": "pytest", "run_id": "20261122-101500-7f3a", "iteration": n % 10,
        },
        "status": "SUCCESS",
    })
}

/// Writes a log of `count` entries, one per line as this version writes them.
fn write_lines(path: &Path, count: usize) {
    let mut out = BufWriter::new(fs::File::create(path).expect("create the log"));
    out.write_all(b"[\n").expect("write");
    for n in 0..count {
        if n > 0 {
            out.write_all(b",\n").expect("write");
        }
        serde_json::to_writer(&mut out, &value(n)).expect("write");
    }
    out.write_all(b"\n]\n").expect("write");
    settle(out);
}

/// Flushes and syncs a seeded log, so that its bytes are not written back
/// during a timed append.
fn settle(out: BufWriter<fs::File>) {
    let file = out.into_inner().expect("flush the log");
    file.sync_all().expect("sync the log");
}

/// Writes a log of `count` entries as the older version did.
fn write_pretty(path: &Path, count: usize) {
    let entries: Vec<Value> = (0..count).map(value).collect();
    let mut out = BufWriter::new(fs::File::create(path).expect("create the log"));
    serde_json::to_writer_pretty(&mut out, &entries).expect("write");
    out.write_all(b"\n").expect("write");
    settle(out);
}

/// The older version's append: the whole file read, parsed and rewritten.
fn rewrite_whole(path: &Path, n: usize) {
    let mut entries: Vec<Value> =
        serde_json::from_slice(&fs::read(path).expect("read")).expect("parse");
    entries.push(value(n));
    let dir = path.parent().expect("a folder");
    let mut tmp = tempfile::NamedTempFile::new_in(dir).expect("temp file");
    let text = serde_json::to_string_pretty(&entries).expect("serialize");
    tmp.write_all(text.as_bytes()).expect("write");
    tmp.write_all(b"\n").expect("write");
    tmp.as_file().sync_all().expect("sync");
    tmp.persist(path).expect("rename");
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Median and slowest.
fn spread(mut times: Vec<Duration>) -> (f64, f64) {
    times.sort();
    (ms(times[times.len() / 2]), ms(times[times.len() - 1]))
}

/// Times the report of a run of 20 entries appended after `size` entries of
/// an earlier run: (at the run's end, one whole pass), median of 5 each.
fn report_times(dir: &Path, size: usize) -> (Duration, Duration) {
    use swarm::report::{self, Which};
    let path = dir.join(format!("report-{size}.json"));
    write_lines(&path, size);
    let run = "20261123-090000-0b1c";
    let mut log = ExperimentLog::open(&path).expect("open");
    for n in 0..20 {
        let mut e = entry(n).in_run(run);
        match n {
            0 => e.details.kind = Kind::RunStart(RunStart::default()),
            19 => e.details.kind = Kind::RunEnd(RunEnd::default()),
            _ => {}
        }
        log.record(e).expect("record");
    }
    log.sync().expect("sync");
    let prices = swarm::llm::PriceTable::new();
    let time = |which: Which<'_>| {
        let mut times: Vec<Duration> = (0..5)
            .map(|_| {
                let started = Instant::now();
                let written = report::write(&path, which, &prices).expect("report");
                let took = started.elapsed();
                assert_eq!(written.run_id, run);
                took
            })
            .collect();
        times.sort();
        times[times.len() / 2]
    };
    let at_end = time(Which::Ended(run));
    let whole = time(Which::Named(run));
    fs::remove_file(&path).expect("remove");
    (at_end, whole)
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    println!(
        "entries  file      open: lock + head/tail     record: append             \
         sync (once a run)  old pretty log: open, 1st record, 2nd   older version's rewrite"
    );
    for &size in SIZES {
        let path = dir.path().join(format!("lines-{size}.json"));
        write_lines(&path, size);
        let bytes = fs::metadata(&path).expect("size").len();
        let mut opens = Vec::with_capacity(RUNS);
        let mut records = Vec::with_capacity(RUNS);
        let mut syncs = Vec::with_capacity(RUNS);
        for n in 0..RUNS {
            let started = Instant::now();
            let mut log = ExperimentLog::open(&path).expect("open");
            opens.push(started.elapsed());
            let started = Instant::now();
            log.record(entry(size + n)).expect("record");
            records.push(started.elapsed());
            let started = Instant::now();
            log.sync().expect("sync");
            syncs.push(started.elapsed());
            assert!(log.repairs().is_empty(), "{:?}", log.repairs());
        }
        let entries: Vec<Value> =
            serde_json::from_slice(&fs::read(&path).expect("read")).expect("the log parses");
        assert_eq!(entries.len(), size + RUNS, "every entry is in the log");
        fs::remove_file(&path).expect("remove");

        let pretty = dir.path().join(format!("pretty-{size}.json"));
        write_pretty(&pretty, size);
        let started = Instant::now();
        let mut log = ExperimentLog::open(&pretty).expect("open");
        let scan_open = started.elapsed();
        let started = Instant::now();
        log.record(entry(size)).expect("record");
        let first = started.elapsed();
        let started = Instant::now();
        log.record(entry(size + 1)).expect("record");
        let second = started.elapsed();

        let mut rewrites = Vec::with_capacity(3);
        for n in 0..3 {
            let started = Instant::now();
            rewrite_whole(&pretty, size + 2 + n);
            rewrites.push(started.elapsed());
        }
        fs::remove_file(&pretty).expect("remove");

        let (open_med, open_max) = spread(opens);
        let (rec_med, rec_max) = spread(records);
        let (sync_med, _) = spread(syncs);
        let (rw_med, _) = spread(rewrites);
        println!(
            "{size:>7}  {:>5.1} MB  median {open_med:.3}, max {open_max:.3} ms  \
             median {rec_med:.3}, max {rec_max:.2} ms  median {sync_med:.2} ms    \
             {:>7.1}, {:>7.1}, {:>5.2} ms            median {rw_med:.1} ms",
            bytes as f64 / 1e6,
            ms(scan_open),
            ms(first),
            ms(second),
        );
    }
    println!(
        "\nentries  a run's report: at its end (from the log's end)   one pass over the whole log"
    );
    for &size in SIZES {
        let (at_end, whole) = report_times(dir.path(), size);
        println!(
            "{size:>7}  median {:>7.2} ms                                median {:>8.2} ms",
            ms(at_end),
            ms(whole)
        );
    }
}
