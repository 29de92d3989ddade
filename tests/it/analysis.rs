//! Static metrics on real Python snippets, with complexities counted by hand.

use swarm::analysis::{analyze, check_syntax, dangerous_calls, Severity, SyntaxIssue};

const SAMPLE: &str = r#"import os

# a comment line


def simple(x):
    """Docstring
    # not a comment: inside the docstring
    """
    return x + 1


def branchy(items, flag):
    total = 0
    for item in items:                      # +1 for
        if item > 0 and flag:               # +1 if, +1 and
            total += item
        elif item < 0 or not flag:          # +1 elif, +1 or
            total -= item
        else:
            continue
    while total > 100:                      # +1 while
        total //= 2
    try:
        check = [i for i in items if i]     # +1 comprehension if
    except ValueError:                      # +1 except
        check = []
    except (TypeError, KeyError):           # +1 except
        check = None
    with open(os.devnull) as handle:        # with: +0
        handle.write("x")
    label = "big" if total > 10 else "small"  # +1 conditional expression
    return total, check, label


class Ledger:
    def add(self, amount):
        match amount:
            case 0:                         # +1
                return None
            case int():                     # +1
                return amount
            case _:                         # +1
                raise TypeError(amount)

    def nested(self):
        def helper(v):
            return v if v else 0            # helper: +1
        return [helper(v) for v in range(3)]
"#;

#[test]
fn counts_lines_functions_and_complexity() {
    let m = analyze("pkg/sample.py", SAMPLE);
    assert_eq!(m.path, "pkg/sample.py");
    let names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "simple",
            "branchy",
            "Ledger.add",
            "Ledger.nested",
            "Ledger.nested.helper"
        ]
    );
    let complexity: Vec<u32> = m.functions.iter().map(|f| f.complexity).collect();
    // branchy: 1 + for + if + and + elif + or + while + comp-if + 2 except + ternary = 11
    assert_eq!(complexity, [1, 11, 4, 1, 2]);

    let simple = &m.functions[0];
    assert_eq!((simple.line, simple.end_line, simple.loc), (6, 10, 5));
    let branchy = &m.functions[1];
    assert_eq!((branchy.line, branchy.end_line), (13, 33));
    assert_eq!(branchy.loc, 21);

    // 52 lines in all; blank: 3,4,5(…) — counted by hand: 43 code lines.
    let blank_or_comment = SAMPLE
        .lines()
        .filter(|l| l.trim().is_empty() || l.trim().starts_with("# a comment"))
        .count();
    assert_eq!(m.loc, SAMPLE.lines().count() - blank_or_comment);
    assert_eq!(m.hotspots, ["branchy"]);
    assert!(m.syntax_errors.is_empty());
    // A hotspot (and complexity 11 ≥ 8) makes it Medium, not High.
    assert_eq!(m.severity, Severity::Medium);
}

#[test]
fn severity_follows_thresholds() {
    let low = analyze("a.py", "def f(x):\n    return x\n");
    assert_eq!(low.severity, Severity::Low);
    assert_eq!(low.loc, 2);

    // complexity 8 (1 + 7 ifs) -> Medium without being a hotspot
    let mut medium = String::from("def f(x):\n");
    for i in 0..7 {
        medium.push_str(&format!("    if x == {i}:\n        return {i}\n"));
    }
    let m = analyze("m.py", &medium);
    assert_eq!(m.functions[0].complexity, 8);
    assert!(m.hotspots.is_empty());
    assert_eq!(m.severity, Severity::Medium);

    // complexity 15 -> High
    let mut high = String::from("def f(x):\n");
    for i in 0..14 {
        high.push_str(&format!("    if x == {i}:\n        return {i}\n"));
    }
    let h = analyze("h.py", &high);
    assert_eq!(h.functions[0].complexity, 15);
    assert_eq!(h.severity, Severity::High);

    // a 60-line function is a hotspot by length
    let mut long = String::from("def long():\n");
    for i in 0..59 {
        long.push_str(&format!("    v{i} = {i}\n"));
    }
    let l = analyze("l.py", &long);
    assert_eq!(l.functions[0].loc, 60);
    assert_eq!(l.hotspots, ["long"]);
    assert_eq!(l.severity, Severity::Medium);

    // over 400 lines of module code -> High
    let big: String = (0..401).map(|i| format!("X{i} = {i}\n")).collect();
    assert_eq!(analyze("big.py", &big).severity, Severity::High);
    let mid: String = (0..151).map(|i| format!("X{i} = {i}\n")).collect();
    assert_eq!(analyze("mid.py", &mid).severity, Severity::Medium);
}

#[test]
fn syntax_errors_are_found_with_lines() {
    let src = "def ok():\n    return 1\n\n\ndef broken(:\n    pass\n";
    let m = analyze("b.py", src);
    assert_eq!(m.syntax_errors, [5]);
    assert_eq!(m.severity, Severity::High);
    assert_eq!(
        check_syntax(src),
        Err(SyntaxIssue {
            line: 5,
            column: 12
        })
    );

    assert_eq!(
        check_syntax("x = (1,\ny = 2\n"),
        Err(SyntaxIssue { line: 1, column: 3 })
    );
    assert_eq!(
        check_syntax("def f():\n    return [1, 2\n"),
        Err(SyntaxIssue { line: 2, column: 5 })
    );
    assert!(
        check_syntax("print 'hello'\n").is_err(),
        "Python 2 print is not Python 3"
    );
    assert!(check_syntax("print('hello')\nx = print\n").is_ok());
    // Valid Python 3 (a tuple expression), though a TypeError at run time.
    assert!(check_syntax("import sys\nprint >> sys.stderr, 'x'\n").is_ok());
    assert!(check_syntax("é = 'ü'\nif é:\n    pass\n").is_ok());
    // Columns count characters, not bytes: 'é' is two bytes.
    assert_eq!(
        check_syntax("s = 'é'; x = = 1\n"),
        Err(SyntaxIssue {
            line: 1,
            column: 14
        })
    );
}

#[test]
fn indentation_errors_tree_sitter_accepts_are_reported() {
    // Missing indented block, reported where the statement should be.
    assert_eq!(
        check_syntax("if x:\n    # only a comment\npass\n"),
        Err(SyntaxIssue { line: 3, column: 1 })
    );
    assert_eq!(analyze("a.py", "def f():\nreturn 1\n").syntax_errors, [2]);
    // Unindent that matches no outer level.
    assert_eq!(
        check_syntax("def f():\n    x = 1\n  y = 2\n"),
        Err(SyntaxIssue { line: 3, column: 3 })
    );
    // Unexpected indent at module level.
    assert_eq!(
        check_syntax("  x = 1\ny = 2\n"),
        Err(SyntaxIssue { line: 1, column: 3 })
    );
    // Valid shapes stay valid.
    let valid = "if x:\n    a = 1\nelse:\n    b = 2\nc = 3; d = 4\nif y: pass\n\nclass A:\n    # c\n    def f(self):\n        return (1 +\n                2)\n\nX = [\n1,\n]\n";
    assert_eq!(check_syntax(valid), Ok(()));
}

#[test]
fn finds_dangerous_calls_with_aliases() {
    let src = r#"import os
import subprocess as sp
import pickle
import re
from os import system as shell, popen
from shutil import *
from mylib import eval


def run(cmd, blob):
    os.system(cmd)
    sp.run(cmd, shell=True)
    shell(cmd)
    popen(cmd)
    rmtree("/tmp/x")
    pickle.loads(blob)
    eval("1 + 1")
    exec("x = 1")
    __import__("json")
    os.execvp("ls", ["ls"])
    re.compile("a+")
    os.path.join("a", "b")
    compile("1", "f", "eval")
    obj.eval()
"#;
    let calls: Vec<(String, usize)> = dangerous_calls(src)
        .into_iter()
        .map(|c| (c.name, c.line))
        .collect();
    let expected = [
        ("os.system", 11),
        ("subprocess.run", 12),
        ("os.system", 13),
        ("os.popen", 14),
        ("shutil.rmtree", 15),
        ("pickle.loads", 16),
        ("exec", 18),
        ("__import__", 19),
        ("os.execvp", 20),
        ("compile", 23),
    ];
    let expected: Vec<(String, usize)> =
        expected.iter().map(|(n, l)| (n.to_string(), *l)).collect();
    assert_eq!(calls, expected);
    assert!(dangerous_calls("def f(x):\n    return x\n").is_empty());
}

proptest::proptest! {
    /// Any text, valid or not, is measured without panicking, and every
    /// reported line exists.
    #[test]
    fn any_text_is_measured(source in "(def |class |if |    |\t|:|\\(|\\)|\\[|'|\"|#|é|\\n|[a-z0-9=+ ]){0,120}") {
        let lines = source.lines().count().max(1);
        let metrics = analyze("p.py", &source);
        for line in &metrics.syntax_errors {
            proptest::prop_assert!(*line >= 1 && *line <= lines + 1, "{line} of {lines}");
        }
        for f in &metrics.functions {
            proptest::prop_assert!(f.line <= f.end_line && f.complexity >= 1);
        }
        match check_syntax(&source) {
            Ok(()) => proptest::prop_assert!(metrics.syntax_errors.is_empty()),
            Err(issue) => proptest::prop_assert_eq!(Some(&issue.line), metrics.syntax_errors.first()),
        }
        let _ = dangerous_calls(&source);
    }
}
