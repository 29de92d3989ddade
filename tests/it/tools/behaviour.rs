//! The behaviour probe with real Python under the sandbox: what one module's
//! functions do at the best state and as changed, and the modules and calls
//! it refuses to run (side effects, hangs, imports that cannot be repeated).

use std::time::{Duration, Instant};

use swarm::analysis::{function_pairs, literal_calls};
use swarm::cancel::Cancel;
use swarm::tools::behaviour::{probe, ProbeRequest, ProbeResult, ProbedCall};

use crate::support::*;

/// Probes `stats.py` (written as `changed`) against `original`, with the
/// call sites found in `callers`.
fn probe_stats(original: &str, changed: &str, callers: &[&str]) -> ProbeResult {
    probe_until(original, changed, callers, Duration::from_secs(30))
}

/// [`probe_stats`], starting no call after `deadline`.
fn probe_until(original: &str, changed: &str, callers: &[&str], deadline: Duration) -> ProbeResult {
    let dir = project(&[("stats.py", changed)]);
    let pairs = function_pairs(original, changed);
    let names = pairs
        .iter()
        .flat_map(|p| [p.original.clone(), p.changed.clone()])
        .collect();
    let calls = literal_calls(callers, &names);
    let request = ProbeRequest {
        file: "stats.py",
        original,
        pairs: &pairs,
        calls: &calls,
        import_timeout: Duration::from_secs(3),
        call_timeout: Duration::from_secs(1),
        max_samples: 5,
        max_calls: 10,
        deadline,
    };
    probe(
        &system_env(),
        &sandbox_for(dir.path()),
        dir.path(),
        &request,
        &Cancel::new(),
    )
    .expect("the probe runs")
    .expect("stats.py is a module")
}

fn calls_of<'r>(result: &'r ProbeResult, function: &str) -> &'r [ProbedCall] {
    &result
        .functions
        .iter()
        .find(|f| f.function == function)
        .unwrap_or_else(|| panic!("{function} not probed: {result:?}"))
        .calls
}

const MEAN: &str = "def mean(values):\n    return sum(values) / len(values)\n";

#[test]
fn a_changed_result_shows_on_the_repositorys_own_call_and_on_samples() {
    let changed = "def mean(values):\n    return None\n";
    let result = probe_stats(MEAN, changed, &["print(mean([1, 2, 3]))\n"]);
    assert_eq!(result.not_checked, None);
    let calls = calls_of(&result, "mean");
    let site = &calls[0];
    assert_eq!(site.call, "mean([1, 2, 3])");
    assert_eq!(site.source, "call site");
    assert_eq!((site.before.as_str(), site.after.as_str()), ("2.0", "None"));
    assert!(!site.same);
    // Samples by the parameter's name: lists, the empty one raising before.
    assert!(calls.iter().any(|c| c.source == "sample"), "{calls:?}");
    let empty = calls
        .iter()
        .find(|c| c.call == "mean([])")
        .unwrap_or_else(|| panic!("the empty list: {calls:?}"));
    assert_eq!(empty.before, "raises ZeroDivisionError");
    assert_eq!(empty.after_kind, "value");
}

#[test]
fn a_refactoring_that_keeps_results_is_the_same_on_every_call() {
    let changed = "def mean(values):\n    total = 0.0\n    for v in values:\n        total += v\n    return total / len(values)\n";
    let result = probe_stats(MEAN, changed, &[]);
    let calls = calls_of(&result, "mean");
    assert!(calls.len() >= 4, "{calls:?}");
    assert!(calls.iter().all(|c| c.same), "{calls:?}");
}

#[test]
fn an_original_that_does_not_compile_is_compared_function_by_function() {
    let original = format!("{MEAN}\n\ndef spread(values)\n    return max(values) - min(values)\n");
    let changed = "def mean(values):\n    return None\n\n\ndef spread(values):\n    return max(values) - min(values)\n";
    let result = probe_stats(&original, changed, &[]);
    assert!(result.spliced);
    assert!(calls_of(&result, "mean").iter().any(|c| !c.same));
}

#[test]
fn a_module_whose_import_has_side_effects_is_not_checked() {
    let dir = tempfile::tempdir().expect("temp dir");
    let marker = dir.path().join("written-at-import");
    for (effect, reason) in [
        ("print('hello')\n".to_string(), "prints"),
        (
            format!("open({:?}, 'w').write('x')\n", marker.display().to_string()),
            "writes files",
        ),
        ("import sys\nsys.stdin.read()\n".to_string(), "reads standard input"),
        ("while True:\n    pass\n".to_string(), "takes longer"),
        (
            "import builtins\nif getattr(builtins, 'stats_loaded', False):\n    raise RuntimeError('loaded before')\nbuiltins.stats_loaded = True\n".to_string(),
            "cannot be imported twice",
        ),
    ] {
        let changed = format!("{effect}{MEAN}");
        let started = Instant::now();
        let result = probe_stats(MEAN, &changed, &[]);
        let reason_given = result.not_checked.clone().unwrap_or_default();
        assert!(
            !reason_given.is_empty() && reason_given.contains(reason),
            "{effect}: {result:?}"
        );
        assert!(result.functions.is_empty(), "{effect}: {result:?}");
        assert!(started.elapsed() < Duration::from_secs(20));
    }
    assert!(!marker.exists(), "the import wrote its file");
}

#[test]
fn a_call_with_side_effects_or_a_hang_is_never_counted_as_the_same() {
    let original =
        "def save(path):\n    with open(path, 'w') as f:\n        f.write('x')\n    return 1\n\n\
                    def spin(n):\n    return n\n";
    let changed =
        "def save(path):\n    with open(path, 'w') as f:\n        f.write('x')\n    return 1\n\n\
                   def spin(n):\n    while True:\n        pass\n";
    let result = probe_stats(original, changed, &[]);
    let save = calls_of(&result, "save");
    assert!(!save.is_empty());
    assert!(
        save.iter().all(|c| c.before_kind == "side_effect"),
        "{save:?}"
    );
    let spin = calls_of(&result, "spin");
    assert!(spin
        .iter()
        .all(|c| c.before_kind == "value" && c.after_kind == "timeout" && !c.same));
}

#[test]
fn calls_stop_at_the_deadline_and_the_functions_left_say_so() {
    let original = "def slow(n):\n    import time\n    time.sleep(0.3)\n    return n\n";
    let result = probe_until(original, original, &[], Duration::from_millis(500));
    let slow = &result.functions[0];
    assert_eq!(
        slow.not_checked.as_deref(),
        Some("the check ran out of time (0.5s)"),
        "{result:?}"
    );
    // The calls made before the deadline are kept (each runs both versions).
    assert!(!slow.calls.is_empty() && slow.calls.len() < 5, "{result:?}");
}

#[test]
fn what_a_function_prints_is_part_of_its_result() {
    let original = "def report(values):\n    print('mean', sum(values) / len(values))\n";
    let changed = "def report(values):\n    print('mean', sum(values) // len(values))\n";
    let result = probe_stats(original, changed, &["report([1, 2])"]);
    let site = &calls_of(&result, "report")[0];
    assert_eq!(site.call, "report([1, 2])");
    assert_eq!(site.before, "None and prints 'mean 1.5\\n'");
    assert_eq!(site.after, "None and prints 'mean 1\\n'");
    assert!(!site.same);
    let same = probe_stats(original, original, &["report([1, 2])"]);
    assert!(calls_of(&same, "report").iter().all(|c| c.same));
}
