//! Runs every case of `tests/patch_corpus/` and reports each failing case
//! by name.

use super::patch_support::{check, load_cases, Expect};

#[test]
fn every_corpus_case_passes() {
    let cases = load_cases();
    assert!(
        cases.len() >= 60,
        "the corpus has only {} cases",
        cases.len()
    );
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| check(case).map(|why| format!("== {}\n{why}", case.name)))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} corpus cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn the_corpus_covers_both_outcomes() {
    let cases = load_cases();
    let errors = cases
        .iter()
        .filter(|c| matches!(c.expect, Expect::Error(_)))
        .count();
    assert!(errors >= 15, "only {errors} error cases");
    assert!(
        cases.len() - errors >= 40,
        "only {} success cases",
        cases.len() - errors
    );
}
