//! Parsing pytest's junit XML (`junit_family=xunit1`) into [`TestCase`]s.
//!
//! Ids follow pytest's node ids: `tests/test_x.py::TestClass::test_name[param]`,
//! built from the `file`, `classname` and `name` attributes, all relative to
//! the rootdir, so they are the same in every worktree. Collection errors
//! (`classname=""`, `name="tests.test_bad"`) become a case whose id is the
//! file. When an id appears twice (a test that fails in teardown after
//! passing), the worst outcome wins.

use std::collections::HashMap;
use std::path::Path;

use super::{TestCase, TestOutcome};

/// How many trailing lines of a traceback a case keeps.
pub const DETAIL_LINES: usize = 40;
/// How many bytes of a traceback a case keeps at most.
pub const DETAIL_BYTES: usize = 4 * 1024;

/// Why a junit document could not be read.
#[derive(Debug, thiserror::Error)]
#[error("malformed junit XML: {0}")]
pub struct JunitError(#[from] roxmltree::Error);

/// Parses a junit XML document. `root` (the rootdir) is removed from messages
/// and tracebacks so they read the same in every worktree.
pub fn parse_junit(xml: &str, root: &Path) -> Result<Vec<TestCase>, JunitError> {
    let doc = roxmltree::Document::parse(xml)?;
    let root_prefixes = root_prefixes(root);
    let mut cases: Vec<TestCase> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for node in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
        let id = case_id(
            node.attribute("file"),
            node.attribute("classname").unwrap_or_default(),
            node.attribute("name").unwrap_or_default(),
        );
        let mut case = TestCase {
            id,
            outcome: TestOutcome::Passed,
            message: None,
            details: None,
        };
        for child in node.children().filter(|c| c.is_element()) {
            let outcome = match child.tag_name().name() {
                "failure" => TestOutcome::Failed,
                "error" => TestOutcome::Error,
                "skipped" => TestOutcome::Skipped,
                _ => continue,
            };
            if rank(outcome) < rank(case.outcome) {
                continue;
            }
            case.outcome = outcome;
            case.message = child
                .attribute("message")
                .map(|m| relativize(m, &root_prefixes));
            case.details = child
                .text()
                .map(|t| trim_details(&relativize(t, &root_prefixes)))
                .filter(|t| !t.is_empty());
        }
        match index.get(&case.id) {
            Some(&at) if rank(case.outcome) > rank(cases[at].outcome) => cases[at] = case,
            Some(_) => {}
            None => {
                index.insert(case.id.clone(), cases.len());
                cases.push(case);
            }
        }
    }
    Ok(cases)
}

/// Which outcome wins when a test reports twice.
pub(super) fn rank(outcome: TestOutcome) -> u8 {
    match outcome {
        TestOutcome::NotRun => 0,
        TestOutcome::Passed => 1,
        TestOutcome::Skipped => 2,
        TestOutcome::Failed => 3,
        TestOutcome::Error => 4,
    }
}

/// pytest's node id from xunit1 attributes.
pub fn case_id(file: Option<&str>, classname: &str, name: &str) -> String {
    let file = file.map(|f| f.replace('\\', "/"));
    if classname.is_empty() {
        // A collection error: `name` is the dotted module.
        return file.unwrap_or_else(|| format!("{}.py", name.replace('.', "/")));
    }
    let Some(file) = file else {
        // No file attribute: the best we can do is the dotted classname.
        let mut parts: Vec<&str> = classname.split('.').collect();
        let first_class = parts
            .iter()
            .position(|p| p.starts_with(|c: char| c.is_ascii_uppercase()))
            .unwrap_or(parts.len());
        let classes = parts.split_off(first_class);
        let mut id = format!("{}.py", parts.join("/"));
        for class in classes {
            id.push_str("::");
            id.push_str(class);
        }
        return format!("{id}::{name}");
    };
    let module = file.trim_end_matches(".py").replace('/', ".");
    let classes = classname
        .strip_prefix(&module)
        .map(|rest| rest.trim_start_matches('.'))
        .or_else(|| {
            // The classname may use a shorter module path (rootdir/sys.path
            // differences); classes are the trailing capitalised parts.
            let start = classname
                .split('.')
                .position(|p| p.starts_with(|c: char| c.is_ascii_uppercase()))?;
            let offset: usize = classname.split('.').take(start).map(|p| p.len() + 1).sum();
            Some(&classname[offset..])
        })
        .unwrap_or("");
    let mut id = file;
    for class in classes.split('.').filter(|c| !c.is_empty()) {
        id.push_str("::");
        id.push_str(class);
    }
    id.push_str("::");
    id.push_str(name);
    id
}

/// The spellings of `root` that may appear in messages, longest first, each with a trailing `/`.
pub(super) fn root_prefixes(root: &Path) -> Vec<String> {
    let mut prefixes = vec![format!("{}/", root.display())];
    if let Ok(canonical) = root.canonicalize() {
        prefixes.push(format!("{}/", canonical.display()));
    }
    prefixes.sort_by_key(|p| std::cmp::Reverse(p.len()));
    prefixes.dedup();
    prefixes
}

/// `text` with every spelling of the rootdir in `prefixes` removed.
pub(super) fn relativize(text: &str, prefixes: &[String]) -> String {
    prefixes
        .iter()
        .filter(|p| p.len() > 1)
        .fold(text.to_string(), |t, p| t.replace(p.as_str(), ""))
}

/// The last [`DETAIL_LINES`] lines (and at most [`DETAIL_BYTES`]) of a traceback.
pub fn trim_details(text: &str) -> String {
    let text = text.trim_end();
    let lines: Vec<&str> = text.lines().collect();
    let skipped = lines.len().saturating_sub(DETAIL_LINES);
    let mut kept = lines[skipped..].join("\n");
    let mut cut_bytes = 0;
    if kept.len() > DETAIL_BYTES {
        let mut start = kept.len() - DETAIL_BYTES;
        while !kept.is_char_boundary(start) {
            start += 1;
        }
        cut_bytes = start;
        kept = kept[start..].to_string();
    }
    if skipped > 0 || cut_bytes > 0 {
        format!("… {skipped} lines cut …\n{kept}")
    } else {
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_match_pytest_node_ids() {
        let file = Some("tests/test_calc.py");
        assert_eq!(
            case_id(file, "tests.test_calc", "test_ok"),
            "tests/test_calc.py::test_ok"
        );
        assert_eq!(
            case_id(file, "tests.test_calc.TestK", "test_p[2]"),
            "tests/test_calc.py::TestK::test_p[2]"
        );
        assert_eq!(
            case_id(file, "test_calc.TestK.Inner", "test_a"),
            "tests/test_calc.py::TestK::Inner::test_a"
        );
        assert_eq!(case_id(file, "", "tests.test_calc"), "tests/test_calc.py");
        assert_eq!(case_id(None, "", "tests.test_bad"), "tests/test_bad.py");
        assert_eq!(
            case_id(None, "tests.test_x.TestA", "test_b"),
            "tests/test_x.py::TestA::test_b"
        );
    }

    #[test]
    fn details_keep_the_end() {
        let long: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let trimmed = trim_details(&long);
        assert!(trimmed.starts_with("… 60 lines cut …\nline 60\n"));
        assert!(trimmed.ends_with("line 99"));
        assert_eq!(trim_details("short\n"), "short");
    }

    #[test]
    fn worst_outcome_wins_for_repeated_ids() {
        let xml = r#"<testsuites><testsuite>
<testcase classname="t" name="test_a" file="t.py"/>
<testcase classname="t" name="test_a" file="t.py"><error message="failed on teardown">boom</error></testcase>
<testcase classname="t" name="test_b" file="t.py"><skipped message="later">/r/t.py:3: later</skipped></testcase>
</testsuite></testsuites>"#;
        let cases = parse_junit(xml, Path::new("/r")).expect("valid xml");
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[0].outcome, TestOutcome::Error);
        assert_eq!(cases[0].details.as_deref(), Some("boom"));
        assert_eq!(cases[1].outcome, TestOutcome::Skipped);
        assert_eq!(cases[1].details.as_deref(), Some("t.py:3: later"));
    }
}
