//! Whether a run's results can be believed: the code under test runs in
//! pytest's own process, so it could rewrite the junit XML or the plugin's
//! results stream after the tests (an `atexit` handler, a thread, a
//! finalizer). The plugin ends the process right after the session and
//! writes an `end` event holding the XML's sha256 as the stream's last
//! line (see `swarm_plugin.py`); results are not trusted when the XML
//! differs from that digest, when anything follows the `end` event, when
//! an XML exists without one, or when the XML says a test passed that the
//! stream reported otherwise.

use std::collections::HashMap;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::super::{TestCase, TestOutcome};

/// The stream's last event.
#[derive(Debug, Deserialize)]
struct End {
    event: String,
    #[serde(default)]
    junit_sha256: Option<String>,
}

/// One phase of one test, as the stream reported it.
#[derive(Debug, Deserialize)]
struct Report {
    event: String,
    id: String,
    outcome: String,
}

/// Why the junit XML (`xml`, with the `cases` read from it) cannot be
/// believed given the plugin's `results` stream; `None` when it can.
pub(super) fn distrust(xml: &[u8], cases: &[TestCase], results: Option<&str>) -> Option<String> {
    let Some(results) = results else {
        return Some("pytest wrote no results stream beside its junit XML".to_string());
    };
    let lines: Vec<&str> = results.lines().filter(|l| !l.trim().is_empty()).collect();
    let end_at = lines
        .iter()
        .rposition(|line| serde_json::from_str::<End>(line).is_ok_and(|e| e.event == "end"));
    let Some(end_at) = end_at else {
        return Some("a junit XML exists but pytest never finished its session".to_string());
    };
    if end_at + 1 != lines.len() {
        return Some("something was written to the results after pytest finished".to_string());
    }
    let end: End = serde_json::from_str(lines[end_at]).expect("parsed above");
    let digest = hex::encode(Sha256::digest(xml));
    if end.junit_sha256.as_deref() != Some(digest.as_str()) {
        return Some("the junit XML was changed after pytest wrote it".to_string());
    }
    let mut reported: HashMap<String, bool> = HashMap::new();
    let reports = lines[..end_at]
        .iter()
        .filter_map(|line| serde_json::from_str::<Report>(line).ok())
        .filter(|r| r.event == "report");
    for report in reports {
        let failed = report.outcome == "failed";
        *reported.entry(report.id).or_insert(false) |= failed;
    }
    let contradicted = cases.iter().find(|case| {
        case.outcome == TestOutcome::Passed && reported.get(case.id.as_str()) == Some(&true)
    });
    contradicted.map(|case| {
        format!(
            "the junit XML says {} passed, the results stream says it failed",
            case.id
        )
    })
}

/// Every case as an error that says why the run's results are not trusted.
pub(super) fn refuse(cases: &mut [TestCase], why: &str) {
    for case in cases {
        case.outcome = TestOutcome::Error;
        case.message = Some(format!("[swarm] {why}: the results are not trusted"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(id: &str, outcome: TestOutcome) -> TestCase {
        TestCase {
            id: id.into(),
            outcome,
            message: None,
            details: None,
        }
    }

    fn stream(xml: &[u8], extra: &str) -> String {
        format!(
            "{{\"event\": \"collected\", \"ids\": [\"t.py::test_a\"]}}\n\
             {{\"event\": \"report\", \"id\": \"t.py::test_a\", \"when\": \"call\", \"outcome\": \"passed\"}}\n\
             {{\"event\": \"end\", \"exitstatus\": 0, \"junit_sha256\": \"{}\"}}\n{extra}",
            hex::encode(Sha256::digest(xml))
        )
    }

    #[test]
    fn results_as_pytest_left_them_are_trusted() {
        let xml = b"<testsuite/>";
        let cases = [case("t.py::test_a", TestOutcome::Passed)];
        assert_eq!(distrust(xml, &cases, Some(&stream(xml, ""))), None);
    }

    #[test]
    fn a_rewritten_xml_or_a_stream_written_after_the_end_is_not() {
        let xml = b"<testsuite/>";
        let cases = [case("t.py::test_a", TestOutcome::Passed)];
        let forged = b"<testsuite tests=\"1\"/>";
        assert_eq!(
            distrust(forged, &cases, Some(&stream(xml, ""))).as_deref(),
            Some("the junit XML was changed after pytest wrote it")
        );
        let appended = stream(
            xml,
            "{\"event\": \"report\", \"id\": \"x\", \"when\": \"call\", \"outcome\": \"passed\"}\n",
        );
        assert!(distrust(xml, &cases, Some(&appended)).is_some());
        assert!(distrust(xml, &cases, None).is_some());
        assert!(distrust(
            xml,
            &cases,
            Some("{\"event\": \"collected\", \"ids\": []}\n")
        )
        .is_some());
    }

    #[test]
    fn an_xml_that_contradicts_the_stream_is_not() {
        let xml = b"<testsuite/>";
        let failed = stream(xml, "").replace("\"outcome\": \"passed\"", "\"outcome\": \"failed\"");
        let cases = [case("t.py::test_a", TestOutcome::Passed)];
        assert_eq!(
            distrust(xml, &cases, Some(&failed)).as_deref(),
            Some("the junit XML says t.py::test_a passed, the results stream says it failed")
        );
        let mut cases = cases;
        refuse(&mut cases, "x");
        assert_eq!(cases[0].outcome, TestOutcome::Error);
    }
}
