//! The table of rules against what is derived from it or kept beside it:
//! the table in `docs/reviewer.md`, every reason's rule name, the order
//! the kinds run in.

use super::*;
use crate::pipeline::{ReplyProblem, Unusable};
use std::collections::BTreeSet;
use swarm_patch::{MergeConflict, PatchError};

const DOCS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/reviewer.md");
const TABLE_START: &str = "<!-- rules table: from `RULES` in src/stage/reviewer/rules/mod.rs; \
                           SWARM_WRITE_DOCS=1 cargo test --lib rules_table rewrites it -->";
const TABLE_END: &str = "<!-- end of the rules table -->";

/// The docs' table of rules, one row per entry of [`RULES`].
fn table() -> String {
    let mut table = String::from(
        "| rule | runs on | lifted by `--allow-test-edits` | what it refuses |\n|---|---|---|---|\n",
    );
    for rule in RULES {
        let mut when: Vec<&str> = rule.checks.iter().map(Check::when).collect();
        when.dedup();
        let lifted = if rule.lifted_by_test_edits {
            "yes"
        } else {
            "no"
        };
        table.push_str(&format!(
            "| `{}` | {} | {lifted} | {} |\n",
            rule.name,
            when.join(", "),
            rule.doc
        ));
    }
    table
}

#[test]
fn the_rules_table_in_the_docs_is_the_table_of_rules() {
    let docs = std::fs::read_to_string(DOCS).expect("docs/reviewer.md is readable");
    let start = docs
        .find(TABLE_START)
        .map(|at| at + TABLE_START.len() + 1)
        .expect("docs/reviewer.md marks where the rules table starts");
    let end = docs[start..]
        .find(TABLE_END)
        .map(|at| start + at)
        .expect("docs/reviewer.md marks where the rules table ends");
    let expected = table();
    if std::env::var_os("SWARM_WRITE_DOCS").is_some() {
        let written = format!("{}{expected}{}", &docs[..start], &docs[end..]);
        std::fs::write(DOCS, written).expect("docs/reviewer.md is writable");
        return;
    }
    assert!(
        docs[start..end] == expected,
        "the rules table in docs/reviewer.md differs from RULES \
         (SWARM_WRITE_DOCS=1 cargo test --lib rules_table rewrites it); it should read:\n{expected}"
    );
}

#[test]
fn every_rule_has_a_distinct_snake_case_name_a_check_and_a_one_line_doc() {
    let names: BTreeSet<&str> = RULES.iter().map(|r| r.name).collect();
    assert_eq!(names.len(), RULES.len(), "two rules share a name");
    for rule in RULES {
        assert!(
            !rule.name.is_empty()
                && rule
                    .name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_'),
            "{}",
            rule.name
        );
        assert!(!rule.checks.is_empty(), "{} checks nothing", rule.name);
        assert!(
            !rule.doc.is_empty() && !rule.doc.contains(['|', '\n']),
            "the doc of {} is not one table cell",
            rule.name
        );
    }
    // Every entry declared is in the table (an entry left out never runs).
    let declared = include_str!("mod.rs").matches(": Rule = Rule {").count();
    assert_eq!(declared, RULES.len(), "a rule is declared but not in RULES");
}

#[test]
fn the_table_lists_rules_in_the_order_their_kinds_run() {
    let first = |rule: &Rule| rule.checks.iter().map(Check::order).min();
    for pair in RULES.windows(2) {
        assert!(
            first(&pair[0]) <= first(&pair[1]),
            "{} is listed after {} but runs before it",
            pair[1].name,
            pair[0].name
        );
    }
    // Within a rule, checks are listed in the order they run.
    for rule in RULES {
        let orders: Vec<usize> = rule.checks.iter().map(Check::order).collect();
        assert!(orders.windows(2).all(|w| w[0] <= w[1]), "{}", rule.name);
    }
}

/// One reason of every kind (every variant of [`Rejection`]).
fn one_reason_of_each_kind() -> Vec<Rejection> {
    let path = || "p.py".to_string();
    vec![
        Rejection::Unusable(Unusable::from(ReplyProblem::Empty)),
        Rejection::EmptyPath,
        Rejection::AbsolutePath { path: path() },
        Rejection::OutsideTarget { path: path() },
        Rejection::InsideGit { path: path() },
        Rejection::InsideSubmodule {
            path: path(),
            submodule: "s".into(),
        },
        Rejection::SymlinkOut { path: path() },
        Rejection::StartupFile { path: path() },
        Rejection::Dependencies { path: path() },
        Rejection::TestConfig {
            path: path(),
            part: "conftest.py".into(),
            runner: "pytest".into(),
        },
        Rejection::TestFile { path: path() },
        Rejection::DoesNotApply(PatchError::Apply("x".into())),
        Rejection::MergeConflict(MergeConflict {
            path: path(),
            version: "shown in round 1".into(),
            regions: Vec::new(),
        }),
        Rejection::Doctest {
            path: path(),
            line: 3,
        },
        Rejection::TooManyLines {
            path: path(),
            lines: 2,
            limit: 1,
            severity: Severity::High,
        },
        Rejection::TaskTooManyLines {
            lines: 2,
            moved: 0,
            limit: 1,
        },
        Rejection::TooManyBytes {
            path: path(),
            bytes: 2,
            limit: 1,
            severity: Severity::High,
        },
        Rejection::TaskTooManyBytes { bytes: 2, limit: 1 },
        Rejection::SyntaxError {
            path: path(),
            language: "Python",
            line: 1,
            column: 1,
        },
        Rejection::PytestPlugin {
            path: path(),
            line: 1,
            what: "`pytest_plugins`",
        },
        Rejection::DangerousCall {
            path: path(),
            call: "eval".into(),
            line: 1,
        },
        Rejection::TestEnvironment {
            path: path(),
            line: 1,
            what: "`sys.argv`".into(),
        },
        Rejection::FrameworkPatch {
            path: path(),
            line: 1,
            what: "`builtins.len = …`".into(),
        },
        Rejection::SecretChanged {
            path: path(),
            what: "the AWS access key id on line 3".into(),
        },
        Rejection::ShadowsModule {
            path: "json.py".into(),
            name: "json".into(),
        },
        Rejection::NoChange,
        Rejection::WhitespaceOnly,
        Rejection::Repeat,
    ]
}

#[test]
fn every_reason_is_given_by_a_rule_of_the_table_and_every_rule_gives_one() {
    let names: BTreeSet<&str> = RULES.iter().map(|r| r.name).collect();
    let reasons = one_reason_of_each_kind();
    let given: BTreeSet<&str> = reasons.iter().map(Rejection::rule).collect();
    for reason in &reasons {
        assert!(
            names.contains(reason.rule()),
            "{reason:?} names {}, which is no rule of the table",
            reason.rule()
        );
        assert!(!reason.to_string().is_empty());
    }
    assert_eq!(
        given, names,
        "a rule of the table gives no reason listed here"
    );
    // Every variant is listed above (one each).
    let kinds: std::collections::HashSet<_> = reasons.iter().map(std::mem::discriminant).collect();
    assert_eq!(kinds.len(), reasons.len());
    assert_eq!(
        include_str!("rejection.rs")
            .lines()
            .filter(|l| l.trim_start().starts_with("Rejection::") && l.contains("=>"))
            .count(),
        reasons.len(),
        "a variant of Rejection is missing from one_reason_of_each_kind"
    );
}
