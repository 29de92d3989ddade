use super::*;
use crate::pipeline::TestOutcome;
use regex::Regex;

/// A module of `n` small functions `f_0000 … ` (5 lines each after a
/// 4-line head), so function `i` starts at line `5 + 5 * i`.
fn module(n: usize) -> String {
    let mut text = String::from("\"\"\"Many helpers.\"\"\"\nimport math\nimport os\n\n");
    for i in 0..n {
        text.push_str(&format!(
            "def f_{i:04}(value):\n    \"\"\"Scale by {i}.\"\"\"\n    base = math.floor(value)\n    return base * {i}\n\n"
        ));
    }
    text
}

/// The line where `f_{i}` starts in [`module`].
fn def_line(i: usize) -> usize {
    5 + 5 * i
}

fn failing(id: &str, message: &str, details: &str) -> TestCase {
    TestCase {
        id: id.into(),
        outcome: TestOutcome::Failed,
        message: Some(message.into()),
        details: Some(details.into()),
    }
}

fn lint(line: u32, kind: &str, symbol: &str) -> LintMessage {
    LintMessage {
        path: "pkg/big.py".into(),
        line,
        column: 0,
        kind: kind.into(),
        symbol: symbol.into(),
        message_id: "X0000".into(),
        message: "something".into(),
    }
}

fn evidence<'a>(
    failing: &'a [&'a TestCase],
    lint: &'a [&'a LintMessage],
    plan: Option<&'a str>,
) -> Evidence<'a> {
    Evidence {
        failing,
        problems: &[],
        lint,
        plan_items: plan,
    }
}

/// Every excerpt block of a rendered section: (first line, last line,
/// total, the lines shown), checked against its header.
fn blocks(section: &str) -> Vec<(usize, usize, usize, Vec<String>)> {
    let re = Regex::new(r"(?m)^### lines (\d+)-(\d+) of (\d+) \(.*\)\n```python\n").unwrap();
    re.captures_iter(section)
        .map(|c| {
            let body_start = c.get(0).unwrap().end();
            let body_end = body_start + section[body_start..].find("```\n").unwrap();
            let lines: Vec<String> = section[body_start..body_end]
                .lines()
                .map(String::from)
                .collect();
            (
                c[1].parse().unwrap(),
                c[2].parse().unwrap(),
                c[3].parse().unwrap(),
                lines,
            )
        })
        .collect()
}

/// Asserts every block shows exactly the file's lines at its numbers;
/// returns the shown line numbers.
fn assert_exact(text: &str, section: &str) -> Vec<usize> {
    let file: Vec<&str> = text.lines().collect();
    let mut shown = Vec::new();
    for (start, end, total, lines) in blocks(section) {
        assert_eq!(total, file.len());
        assert_eq!(lines.len(), end - start + 1, "lines {start}-{end}");
        for (offset, line) in lines.iter().enumerate() {
            assert_eq!(line, file[start - 1 + offset], "line {}", start + offset);
            shown.push(start + offset);
        }
    }
    shown
}

#[test]
fn a_traceback_frame_shows_its_whole_function_with_context_and_the_imports() {
    let text = module(1000);
    let bug = def_line(460) + 3;
    let case = failing(
        "tests/test_big.py::test_scale",
        "ZeroDivisionError: division by zero",
        &format!(
            "def test_scale():\n>       assert f_0460(2) == 920\n\ntests/test_big.py:4: \n\
             _ _ _\npkg/big.py:{bug}: ZeroDivisionError"
        ),
    );
    let shown = excerpts("pkg/big.py", &text, &evidence(&[&case], &[], None), 3_000);
    let lines = assert_exact(&text, &shown.text);
    let f = def_line(460);
    for line in f - CONTEXT..=f + 3 + CONTEXT {
        assert!(lines.contains(&line), "line {line} missing");
    }
    assert!(lines.contains(&2) && lines.contains(&3), "imports missing");
    assert!(
        !shown.text.contains("return base * 10\n"),
        "a far function's body is shown"
    );
    assert!(shown.text.contains(&format!("### lines {}-", f - CONTEXT)));
    assert!(shown.text.contains("Your diff applies to the full file"));
    let why = &shown
        .excerpts
        .iter()
        .find(|e| e.start <= bug && bug <= e.end)
        .expect("an excerpt holds the frame line")
        .why;
    assert!(
        why.contains("`f_0460`: line")
            && why.contains("traceback of tests/test_big.py::test_scale"),
        "{why}"
    );
    assert!(budget_tokens(&shown.text) <= 3_000);
}

#[test]
fn a_method_comes_with_its_class_header_and_not_its_siblings() {
    let text = "import json\n\n\nclass Ledger(Base):\n    \"\"\"Entries.\"\"\"\n\n    def add(self, x):\n        self.items.append(x)\n\n    def total(self):\n        return sum(self.items) / 0\n\n    def other(self):\n        x = 1\n        y = 2\n        return 'sibling body'\n\n\n".to_string()
        + &module(200)[48..];
    let case = failing(
        "tests/test_l.py::test_total",
        "ZeroDivisionError",
        "pkg/big.py:11: in total\n    return sum(self.items) / 0",
    );
    let shown = excerpts("pkg/big.py", &text, &evidence(&[&case], &[], None), 700);
    let lines = assert_exact(&text, &shown.text);
    assert!(lines.contains(&4), "class header missing: {}", shown.text);
    assert!(lines.contains(&10) && lines.contains(&11));
    assert!(lines.contains(&14), "three lines of context after");
    assert!(
        !lines.contains(&16),
        "a sibling method's body: {}",
        shown.text
    );
    assert!(shown
        .excerpts
        .iter()
        .any(|e| e.why.contains("class `Ledger`")));
}

#[test]
fn names_a_failing_test_calls_are_found_without_a_frame() {
    let text = module(300);
    let case = failing(
        "tests/test_big.py::test_f",
        "assert 3 == 4",
        "def test_f():\n>       assert f_0123(2) == 4\nE       assert 3 == 4\n\ntests/test_big.py:5: AssertionError",
    );
    let shown = excerpts("pkg/big.py", &text, &evidence(&[&case], &[], None), 1_500);
    let lines = assert_exact(&text, &shown.text);
    assert!(lines.contains(&(def_line(123) + 3)));
    assert!(shown
        .excerpts
        .iter()
        .any(|e| e.why.contains("called by tests/test_big.py::test_f")));
}

#[test]
fn evidence_is_ranked_frames_then_calls_then_lint_then_plan() {
    let text = module(400);
    let frame = failing(
        "t.py::a",
        "boom",
        &format!("pkg/big.py:{}: ValueError", def_line(300) + 3),
    );
    let call = failing("t.py::b", "no", ">   assert f_0200(1) == 2");
    let warning = lint(def_line(100) as u32 + 2, "convention", "bad-name");
    let error = lint(def_line(150) as u32 + 2, "error", "no-member");
    let plan = "- **Location**: `f_0050`, line 255";
    let failing_cases = [&frame, &call];
    let lints = [&warning, &error];
    let ev = evidence(&failing_cases, &lints, Some(plan));
    let order = targets("pkg/big.py", &analysis::outline(&text), &ev);
    let names: Vec<&str> = order
        .iter()
        .map(|t| t.why.split('`').nth(1).unwrap_or(""))
        .collect();
    assert_eq!(names, ["f_0300", "f_0200", "f_0150", "f_0100", "f_0050"]);
    // The smallest room that shows the frame's function shows none of the others.
    let tight = (100..3_000)
        .step_by(10)
        .map(|room| excerpts("pkg/big.py", &text, &ev, room))
        .find(|s| assert_exact(&text, &s.text).contains(&(def_line(300) + 3)))
        .expect("some room shows the frame");
    let lines = assert_exact(&text, &tight.text);
    for i in [200, 150, 100, 50] {
        assert!(!lines.contains(&(def_line(i) + 2)), "f_{i}: {}", tight.text);
    }
    // More room adds them in rank order.
    let roomy = excerpts("pkg/big.py", &text, &ev, 3_000);
    let lines = assert_exact(&text, &roomy.text);
    for i in [300, 200, 150, 100, 50] {
        assert!(lines.contains(&(def_line(i) + 3)), "f_{i}: {}", roomy.text);
    }
}

#[test]
fn the_outline_lists_the_rest_and_counts_what_does_not_fit() {
    let text = module(1000);
    let case = failing(
        "t.py::a",
        "x",
        &format!("pkg/big.py:{}: E", def_line(500) + 1),
    );
    let cases = [&case];
    let ev = evidence(&cases, &[], None);
    let small = failing(
        "t.py::a",
        "x",
        &format!("pkg/big.py:{}: E", def_line(3) + 1),
    );
    let small_cases = [&small];
    let roomy = excerpts(
        "pkg/big.py",
        &module(20),
        &evidence(&small_cases, &[], None),
        20_000,
    );
    assert!(roomy
        .text
        .contains("### Outline of the rest of `pkg/big.py`"));
    assert!(roomy.text.contains(&format!(
        "- lines {}-{}: def f_0007\n",
        def_line(7),
        def_line(7) + 3
    )));
    let tight = excerpts("pkg/big.py", &text, &ev, 2_000);
    assert!(
        tight.text.contains("### Outline of the rest"),
        "{}",
        tight.text
    );
    // The neighbours are listed, the far ones counted.
    assert!(tight.text.contains("def f_0501\n"), "{}", tight.text);
    assert!(!tight.text.contains("def f_0250\n"));
    assert!(
        Regex::new(r"- lines \d+-\d+: \d+ more definitions \(f_0\d+ … f_0\d+\)")
            .unwrap()
            .is_match(&tight.text),
        "{}",
        tight.text
    );
}

#[test]
fn a_function_larger_than_the_room_shows_its_signature_and_the_implicated_lines() {
    let mut text = String::from("import math\n\n\ndef huge(values):\n    total = 0\n");
    for i in 0..3_000 {
        text.push_str(&format!("    total += values[{i}] * {i}\n"));
    }
    text.push_str("    return total\n");
    let bug = 1_800;
    let case = failing(
        "t.py::a",
        "IndexError",
        &format!("pkg/big.py:{bug}: IndexError"),
    );
    let cases = [&case];
    let ev = evidence(&cases, &[], None);
    let shown = excerpts("pkg/big.py", &text, &ev, 1_200);
    assert!(budget_tokens(&shown.text) <= 1_200);
    let lines = assert_exact(&text, &shown.text);
    assert!(lines.contains(&4), "signature missing");
    assert!(lines.contains(&1), "imports missing");
    // As much context as fits, centred on the frame line.
    let around: Vec<usize> = lines.iter().copied().filter(|l| *l > 10).collect();
    assert!(around.contains(&bug));
    let (low, high) = (around[0], *around.last().unwrap());
    assert!(bug - low >= 20 && high - bug >= 20, "{low}-{high}");
    assert!((bug - low).abs_diff(high - bug) <= 1);
    assert!(shown.excerpts.iter().any(|e| e.why.contains("(in part)")));
}

#[test]
fn without_evidence_the_start_of_the_file_is_shown() {
    let text = module(500);
    let shown = excerpts("pkg/big.py", &text, &evidence(&[], &[], None), 800);
    let lines = assert_exact(&text, &shown.text);
    assert!(lines.contains(&1) && lines.contains(&20));
    assert!(shown.excerpts[0].why.contains("start of the file"));
}

#[test]
fn a_room_smaller_than_the_notice_shows_nothing() {
    let shown = excerpts("pkg/big.py", &module(10), &evidence(&[], &[], None), 20);
    assert_eq!(shown.text, "");
    assert!(shown.excerpts.is_empty());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    #[test]
    fn the_section_always_fits_its_room_and_shows_exact_lines(
        functions in 1usize..600,
        frames in proptest::collection::vec(1usize..4_000, 0..4),
        lint_lines in proptest::collection::vec(1u32..4_000, 0..6),
        room in 0u64..6_000,
        huge in proptest::bool::ANY,
    ) {
        let mut text = module(functions);
        if huge {
            text.push_str("class Big:\n    def run(self):\n");
            for i in 0..800 {
                text.push_str(&format!("        self.x{i} = {i}\n"));
            }
        }
        let details: String = frames.iter().map(|l| format!("pkg/big.py:{l}: in f\n")).collect();
        let case = failing("t.py::a", "boom f_0003()", &details);
        let lints: Vec<LintMessage> = lint_lines.iter().map(|l| lint(*l, "warning", "w")).collect();
        let lint_refs: Vec<&LintMessage> = lints.iter().collect();
        let cases = [&case];
        let ev = evidence(&cases, &lint_refs, Some("fix `f_0001` at line 12"));
        let shown = excerpts("pkg/big.py", &text, &ev, room);
        proptest::prop_assert!(budget_tokens(&shown.text) <= room);
        assert_exact(&text, &shown.text);
        for e in &shown.excerpts {
            proptest::prop_assert!(e.start >= 1 && e.start <= e.end);
        }
    }
}
