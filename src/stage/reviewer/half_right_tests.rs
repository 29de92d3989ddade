//! Replies that are half right: diffs against an earlier shown version are
//! rebased (or refused as a merge conflict), oversized proposals are split
//! into steps that each pass every rule.

use super::*;
use crate::pipeline::Rebased;
use swarm_patch::{EditOp, FileEdit, ReplyContext};

const ORIGINAL: &str = "\"\"\"Money.\"\"\"\n\n\ndef to_cents(amount):\n    return round(amount * 10)\n\n\ndef apply_discount(price, percent):\n    return price * percent / 100\n";

/// A target folder holding `m.py` with `text`, and what the Reviewer needs.
struct Fixture {
    dir: tempfile::TempDir,
    severities: BTreeMap<String, Severity>,
    seen: HashSet<String>,
    limits: SizeLimits,
    shown: ShownVersions,
    target: TargetDir,
    tests: crate::tools::TestFiles,
}

impl Fixture {
    fn new(text: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("m.py"), text).unwrap();
        Self {
            dir,
            severities: [("m.py".to_string(), Severity::Low)].into_iter().collect(),
            seen: HashSet::new(),
            limits: SizeLimits::default(),
            shown: ShownVersions::default(),
            target: TargetDir::default(),
            tests: crate::tools::TestFiles::default(),
        }
    }

    fn ctx(&self) -> ReviewContext<'_> {
        ReviewContext {
            root: self.dir.path(),
            target: &self.target,
            severities: &self.severities,
            limits: self.limits,
            allow_test_edits: false,
            seen: &self.seen,
            base: "abc",
            submodules: &[],
            shown: &self.shown,
            task: None,
            tests: &self.tests,
        }
    }

    fn proposal(reply: &str) -> Proposal {
        let ctx = ReplyContext {
            target_prefix: String::new(),
            requested: vec!["m.py".into()],
            language: crate::lang::code_language(&[]),
        };
        Proposal {
            file: "m.py".into(),
            reply: reply.into(),
            edits: patch::parse_reply(reply, &ctx).map_err(|e| ReplyProblem::Patch(e).into()),
            debugging: true,
            excerpts: None,
        }
    }
}

/// A fenced diff of `m.py` with `radius` lines of context.
fn diff(before: &str, after: &str, radius: usize) -> String {
    let body = similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(radius)
        .header("a/m.py", "b/m.py")
        .to_string();
    format!("```diff\n{body}```\n")
}

#[test]
fn a_diff_against_a_shown_version_is_rebased_onto_the_current_text() {
    let current = ORIGINAL.replace("amount * 10)", "amount * 100)");
    let mut fx = Fixture::new(&current);
    let theirs = ORIGINAL
        .replace("\"\"\"Money.\"\"\"", "\"\"\"Money helpers.\"\"\"")
        .replace("price * percent", "price * (100 - percent)");
    let reply = diff(ORIGINAL, &theirs, 10);
    // Without memory of the original, the diff does not apply.
    let Review::Rejected(rejection) = review(&Fixture::proposal(&reply), &fx.ctx()) else {
        panic!("accepted without memory");
    };
    assert_eq!(rejection.rule(), "does_not_apply");
    fx.shown.remember("m.py", 1, ORIGINAL);
    fx.shown.remember("m.py", 2, &current);
    let Review::Accepted(change) = review(&Fixture::proposal(&reply), &fx.ctx()) else {
        panic!("not rebased");
    };
    assert_eq!(
        change.rebased,
        vec![Rebased {
            file: "m.py".into(),
            shown_in_round: 1
        }]
    );
    let want = current
        .replace("\"\"\"Money.\"\"\"", "\"\"\"Money helpers.\"\"\"")
        .replace("price * percent", "price * (100 - percent)");
    assert_eq!(change.writes[0].content.as_deref(), Some(want.as_bytes()));
    assert_eq!(change.changed_lines, 4);
}

#[test]
fn a_rebase_that_conflicts_is_refused_with_the_lines_named() {
    let current = ORIGINAL.replace("amount * 10)", "amount * 100)");
    let mut fx = Fixture::new(&current);
    fx.shown.remember("m.py", 1, ORIGINAL);
    let theirs = ORIGINAL.replace("round(amount * 10)", "int(amount * 100)");
    let Review::Rejected(rejection) =
        review(&Fixture::proposal(&diff(ORIGINAL, &theirs, 3)), &fx.ctx())
    else {
        panic!("accepted a conflict");
    };
    assert_eq!(rejection.rule(), "merge_conflict");
    let Rejection::MergeConflict(conflict) = &rejection else {
        panic!("{rejection:?}");
    };
    assert_eq!(conflict.path, "m.py");
    assert_eq!(conflict.regions[0].line, 5);
    let reason = rejection.to_string();
    assert!(reason.contains("shown in round 1"), "{reason}");
    assert!(
        reason.contains("`    return int(amount * 100)`"),
        "{reason}"
    );
}

/// `count` helpers of six changed lines each when tidied.
fn helpers(count: usize, tidy: bool) -> String {
    (0..count)
        .map(|i| {
            if tidy {
                format!("\n\ndef helper_{i}(x):\n    \"\"\"Return x.\"\"\"\n    return x\n")
            } else {
                format!("\n\ndef helper_{i}(x):\n    y = x\n    y = y + 1\n    y = y - 1\n    return y\n")
            }
        })
        .collect()
}

#[test]
fn an_oversized_proposal_is_split_into_steps_that_each_pass_review() {
    let before = format!("{ORIGINAL}{}", helpers(5, false));
    let after = format!("{ORIGINAL}{}", helpers(5, true));
    let mut fx = Fixture::new(&before);
    fx.limits.low = 13;
    let proposal = Fixture::proposal(&diff(&before, &after, 1));
    let Review::Rejected(rejection) = review(&proposal, &fx.ctx()) else {
        panic!("30 lines passed a limit of 13");
    };
    assert!(rejection.is_size(), "{rejection}");
    let steps = split(&proposal, &fx.ctx()).unwrap();
    assert_eq!(
        steps.iter().map(|s| s.changed_lines).collect::<Vec<_>>(),
        vec![12, 12, 6]
    );
    // Applied in order, the steps give the whole proposal, and each passes
    // review on the state the step before left.
    for (k, step) in steps.iter().enumerate() {
        let step_proposal = Proposal {
            edits: Ok(step.edits.clone()),
            ..proposal.clone()
        };
        let Review::Accepted(change) = review(&step_proposal, &fx.ctx()) else {
            panic!("step {k} refused");
        };
        let write = &change.writes[0];
        std::fs::write(
            fx.dir.path().join(&write.path),
            write.content.as_ref().unwrap(),
        )
        .unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(fx.dir.path().join("m.py")).unwrap(),
        after
    );
}

#[test]
fn a_hunk_that_does_not_parse_alone_is_grouped_with_its_neighbour() {
    // Opening a bracket in one hunk and closing it in the next, far apart:
    // neither hunk parses alone, both together do.
    let before = format!("VALUES = (\n    1,\n{}    2,\n)\n", "    0,\n".repeat(6));
    let after = format!("VALUES = [\n    1,\n{}    2,\n]\n", "    0,\n".repeat(6));
    let before = format!("{before}{}", helpers(2, false));
    let after = format!("{after}{}", helpers(2, true));
    let mut fx = Fixture::new(&before);
    fx.limits.low = 6;
    let proposal = Fixture::proposal(&diff(&before, &after, 1));
    let steps = split(&proposal, &fx.ctx()).unwrap();
    assert_eq!(
        steps.iter().map(|s| s.changed_lines).collect::<Vec<_>>(),
        vec![4, 6, 6]
    );
    // With a limit the two bracket hunks cannot fit together, the split fails.
    fx.limits.low = 3;
    let failure = split(&proposal, &fx.ctx()).unwrap_err();
    assert!(
        matches!(&failure, SplitFailure::NoStep { hunk: 1, rejection, .. } if rejection.is_size()),
        "{failure:?}"
    );
}

#[test]
fn a_proposal_that_does_not_apply_is_not_split() {
    let fx = Fixture::new(ORIGINAL);
    let proposal = Proposal {
        edits: Ok(vec![FileEdit {
            path: "m.py".into(),
            op: EditOp::Delete,
        }]),
        ..Fixture::proposal("")
    };
    let gone = Fixture::proposal(&diff("x = 1\ny = 2\n", "x = 1\ny = 3\n", 3));
    assert!(matches!(
        split(&gone, &fx.ctx()),
        Err(SplitFailure::Unreviewable(r)) if r.rule() == "does_not_apply"
    ));
    // A deletion is one unit: it cannot be cut, and alone it passes.
    assert_eq!(split(&proposal, &fx.ctx()).unwrap().len(), 1);
}

#[test]
fn the_hunks_that_apply_are_accepted_and_an_independent_one_that_does_not_is_left_out() {
    let mut fx = Fixture::new(ORIGINAL);
    fx.shown.remember("m.py", 1, ORIGINAL);
    let good = diff(
        ORIGINAL,
        &ORIGINAL.replace("amount * 10)", "amount * 100)"),
        3,
    );
    let stale = "@@ -90,2 +90,2 @@\n def never_there(x):\n-    return x\n+    return -x\n```";
    let reply = format!("{}{stale}", good.trim_end().trim_end_matches("```"));
    let Review::Accepted(change) = review(&Fixture::proposal(&reply), &fx.ctx()) else {
        panic!("refused a reply whose independent hunk applies: {reply}");
    };
    assert_eq!(change.unplaced.len(), 1, "{:?}", change.unplaced);
    assert!(
        change.unplaced[0].contains("hunk 2 of 2"),
        "{:?}",
        change.unplaced
    );
    let want = ORIGINAL.replace("amount * 10)", "amount * 100)");
    assert_eq!(change.writes[0].content.as_deref(), Some(want.as_bytes()));
}
