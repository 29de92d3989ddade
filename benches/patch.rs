//! `cargo bench --bench patch`: the patch engine's apply rate over the
//! corpus (`tests/patch_corpus/`) and the time to parse and apply a 20-hunk
//! reply to a 5,000-line file.

#[path = "../tests/it/patch_support.rs"]
mod patch_support;

use std::time::{Duration, Instant};

use patch_support::{check, load_cases, Expect};
use similar::TextDiff;
use swarm::patch::{apply, parse_reply, ReplyContext};

/// Lines in the large file.
const FILE_LINES: usize = 5_000;
/// Hunks in the large reply.
const HUNKS: usize = 20;
/// Timed repetitions.
const RUNS: usize = 30;

fn main() {
    corpus_rate();
    large_reply();
}

fn corpus_rate() {
    let cases = load_cases();
    let (mut ok_apply, mut want_apply, mut ok_reject, mut want_reject) = (0, 0, 0, 0);
    let mut failed = Vec::new();
    for case in &cases {
        let passed = check(case).is_none();
        match case.expect {
            Expect::Files(_) => {
                want_apply += 1;
                ok_apply += usize::from(passed);
            }
            Expect::Error(_) => {
                want_reject += 1;
                ok_reject += usize::from(passed);
            }
        }
        if !passed {
            failed.push(case.name.clone());
        }
    }
    let total = cases.len();
    let pct = |a: usize, b: usize| 100.0 * a as f64 / b.max(1) as f64;
    println!(
        "corpus: {total} cases; apply rate {ok_apply}/{want_apply} ({:.1}%) of replies that \
         should apply; {ok_reject}/{want_reject} ({:.1}%) of bad replies rejected with the \
         expected reason; {}/{total} ({:.1}%) overall",
        pct(ok_apply, want_apply),
        pct(ok_reject, want_reject),
        ok_apply + ok_reject,
        pct(ok_apply + ok_reject, total)
    );
    if !failed.is_empty() {
        println!("corpus: failing cases: {}", failed.join(", "));
    }
}

/// A 5,000-line Python-like file, its 20-hunk edit, and the reply.
fn large_case(mangled: bool) -> (String, String, String) {
    let mut lines = Vec::with_capacity(FILE_LINES);
    for i in 0..FILE_LINES {
        let line = match i % 5 {
            0 => format!("def step_{i}(values):"),
            1 => format!("    total_{i} = sum(values)"),
            2 => format!("    if total_{} > {i}:", i - 1),
            3 => format!("        return total_{} * 2", i - 2),
            _ => format!("    return total_{} + {i}", i - 3),
        };
        // Some trailing whitespace, which the mangled reply loses.
        lines.push(if i % 7 == 0 { line + " " } else { line });
    }
    let before = lines.join("\n") + "\n";
    let mut edited = lines.clone();
    for h in (0..HUNKS).rev() {
        let at = h * FILE_LINES / HUNKS + 123;
        edited[at] = format!("{}  # changed {h}", edited[at]);
        edited.insert(at + 1, format!("    log_{h}(values)"));
    }
    let after = edited.join("\n") + "\n";
    let diff = TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header("a/pkg/big.py", "b/pkg/big.py")
        .to_string();
    let diff = if mangled {
        diff.lines()
            .map(|l| {
                if l.starts_with("@@") {
                    "@@ @@"
                } else {
                    l.trim_end()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    } else {
        diff
    };
    let reply = format!("Here are the changes.\n\n```diff\n{diff}```\n");
    (before, after, reply)
}

fn large_reply() {
    let ctx = ReplyContext {
        target_prefix: String::new(),
        requested: vec!["pkg/big.py".into()],
        language: swarm::lang::code_language(&[]),
    };
    for mangled in [false, true] {
        let (before, after, reply) = large_case(mangled);
        let mut times: Vec<Duration> = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            let start = Instant::now();
            let edits = parse_reply(&reply, &ctx).expect("the generated reply parses");
            let read = |_: &str| Some(before.as_bytes().to_vec());
            let outcomes = apply(&edits, &read).expect("the generated reply applies");
            times.push(start.elapsed());
            assert_eq!(
                outcomes[0].after.as_deref(),
                Some(after.as_bytes()),
                "the reply applies to exactly the intended file"
            );
        }
        times.sort();
        println!(
            "large reply ({}): parse + apply {HUNKS} hunks to a {FILE_LINES}-line file: median \
             {:.2} ms, min {:.2} ms over {RUNS} runs",
            if mangled {
                "@@ @@ headers, trailing whitespace lost"
            } else {
                "exact diff"
            },
            times[RUNS / 2].as_secs_f64() * 1e3,
            times[0].as_secs_f64() * 1e3
        );
    }
}
