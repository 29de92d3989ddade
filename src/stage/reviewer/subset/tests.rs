//! Oversized proposals that no split can carry: the hunks the evidence
//! points at are kept, the others are named with why.

use std::collections::{BTreeMap, HashSet};

use super::super::{
    review, split, Proposal, ReplyProblem, Review, ReviewContext, ShownVersions, SizeLimits,
    TargetDir,
};
use super::*;
use swarm_analysis::Severity;
use swarm_patch::{self as patch, ReplyContext};

/// QuixBugs' `bitcount`, with its bug (`^=` for `&=`).
const BITCOUNT: &str = "def bitcount(n):\n    count = 0\n    while n:\n        n ^= n - 1\n        count += 1\n    return count\n";
const FIXED: &str = "def bitcount(n):\n    count = 0\n    while n:\n        n &= n - 1\n        count += 1\n    return count\n";

/// Alternative implementations in a trailing string: `lines` lines.
fn trailing_string(lines: usize) -> String {
    let mut text = String::from("\n\n\"\"\"\nAlternative implementations:\n");
    for k in 0..lines {
        text.push_str(&format!(
            "    def bitcount_{k}(n): return bin(n).count('1')  # {k}\n"
        ));
    }
    text.push_str("\"\"\"\n");
    text
}

/// A target folder holding `bitcount.py` (severity low: 40 changed lines).
struct Fixture {
    dir: tempfile::TempDir,
    severities: BTreeMap<String, Severity>,
    seen: HashSet<String>,
    shown: ShownVersions,
    target: TargetDir,
    tests: crate::tools::TestFiles,
}

impl Fixture {
    fn new(text: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bitcount.py"), text).unwrap();
        Self {
            dir,
            severities: [("bitcount.py".to_string(), Severity::Low)]
                .into_iter()
                .collect(),
            seen: HashSet::new(),
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
            limits: SizeLimits::default(),
            allow_test_edits: false,
            seen: &self.seen,
            base: "abc",
            submodules: &[],
            shown: &self.shown,
            task: None,
            tests: &self.tests,
        }
    }
}

/// A proposal of the diff from `before` to `after`.
fn proposal(before: &str, after: &str) -> Proposal {
    let body = similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header("a/bitcount.py", "b/bitcount.py")
        .to_string();
    let reply = format!("```diff\n{body}```\n");
    let ctx = ReplyContext {
        target_prefix: String::new(),
        requested: vec!["bitcount.py".into()],
        language: crate::lang::code_language(&[]),
    };
    Proposal {
        file: "bitcount.py".into(),
        reply: reply.clone(),
        edits: patch::parse_reply(&reply, &ctx).map_err(|e| ReplyProblem::Patch(e).into()),
        debugging: true,
        excerpts: None,
    }
}

/// The traceback of the failing test points at `bitcount`.
fn focus() -> Focus {
    let mut focus = Focus::default();
    focus.add(
        "bitcount.py",
        Pointer {
            definition: Some("bitcount".into()),
            start: 1,
            end: 6,
            why: "`bitcount`: line 4 in the traceback of test_bitcount[127]".into(),
        },
    );
    focus
}

fn written(subset: &Subset) -> String {
    let bytes = subset.change.writes[0].content.clone().unwrap();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn the_small_fixing_hunk_is_kept_and_the_oversized_unrelated_one_left_out() {
    let fx = Fixture::new(BITCOUNT);
    let padded = format!("{FIXED}{}", trailing_string(60));
    let oversized = proposal(BITCOUNT, &padded);
    let Review::Rejected(rejection) = review(&oversized, &fx.ctx()) else {
        panic!("a 66-line change passed a 40-line limit");
    };
    assert!(rejection.is_size(), "{rejection}");
    assert!(
        split(&oversized, &fx.ctx()).is_err(),
        "one hunk alone is too big"
    );

    let subset = subset(&oversized, &fx.ctx(), &focus()).expect("a subset");
    assert_eq!(written(&subset), FIXED);
    assert_eq!(subset.change.changed_lines, 2);
    assert_eq!(subset.kept.len(), 1);
    assert_eq!(
        subset.kept[0].hunk.to_string(),
        "hunk 1 of 2 (bitcount.py line 4: 1 removed, 1 added)"
    );
    assert_eq!(
        subset.kept[0].why,
        "`bitcount`: line 4 in the traceback of test_bitcount[127]"
    );
    assert_eq!(subset.left_out.len(), 1);
    assert_eq!(
        subset.left_out[0].to_string(),
        "hunk 2 of 2 (bitcount.py after line 6: 0 removed, 65 added): it touches nothing \
         the failing tests, what they call or the plan point at"
    );
}

#[test]
fn a_line_added_at_the_end_of_the_function_touches_it_and_imports_come_along() {
    let before = "import os\n\n\ndef bitcount(n):\n    count = 0\n    while n:\n        n ^= n - 1\n        count += 1\n";
    let after = format!(
        "import os\nimport math\n\n\ndef bitcount(n):\n    count = 0\n    while n:\n        n &= n - 1\n        count += 1\n    return math.floor(count)\n{}",
        trailing_string(60)
    );
    let fx = Fixture::new(before);
    let mut focus = Focus::default();
    focus.add(
        "bitcount.py",
        Pointer {
            definition: Some("bitcount".into()),
            start: 4,
            end: 8,
            why: "`bitcount`: called by test_bitcount".into(),
        },
    );
    let subset = subset(&proposal(before, &after), &fx.ctx(), &focus).expect("a subset");
    let kept: Vec<String> = subset.kept.iter().map(|k| k.hunk.to_string()).collect();
    assert_eq!(
        kept,
        [
            "hunk 1 of 4 (bitcount.py after line 1: 0 removed, 1 added)",
            "hunk 2 of 4 (bitcount.py line 7: 1 removed, 1 added)",
            // The `return` added at the end of the function, cut from the
            // block added after it.
            "hunk 3 of 4 (bitcount.py after line 8: 0 removed, 1 added)",
        ]
    );
    assert!(subset.kept[0].why.contains("imports"), "{:?}", subset.kept);
    assert_eq!(
        subset.left_out[0].hunk.to_string(),
        "hunk 4 of 4 (bitcount.py after line 8: 0 removed, 65 added)"
    );
    let text = written(&subset);
    assert!(text.contains("import math\n") && text.contains("return math.floor(count)\n"));
    assert!(!text.contains("Alternative"), "{text}");
}

#[test]
fn without_evidence_or_with_only_oversized_evidence_nothing_is_tried() {
    let fx = Fixture::new(BITCOUNT);
    let padded = format!("{FIXED}{}", trailing_string(60));
    assert_eq!(
        subset(&proposal(BITCOUNT, &padded), &fx.ctx(), &Focus::default()).unwrap_err(),
        SubsetFailure::NothingPointedAt
    );
    // The hunk the evidence points at is itself past the limit.
    let rewritten = format!(
        "def bitcount(n):\n{}    return bin(n).count('1')\n",
        "    # counting bits, one line of a long comment\n".repeat(50)
    );
    let failure = subset(&proposal(BITCOUNT, &rewritten), &fx.ctx(), &focus()).unwrap_err();
    let SubsetFailure::NoneFits(rejection) = &failure else {
        panic!("{failure:?}");
    };
    assert!(rejection.is_size(), "{rejection}");
    assert!(failure
        .to_string()
        .starts_with("no hunk the evidence points at passes review ("));
}

#[test]
fn loose_lines_are_touched_by_changes_and_insertions_inside_them() {
    let pointers = [Pointer {
        definition: None,
        start: 3,
        end: 7,
        why: "line 5 in an import problem".into(),
    }];
    let outlines = (Outline::default(), Outline::default());
    let touch = |old: std::ops::Range<usize>| {
        let lines = HunkLines {
            old: old.clone(),
            new: old.start..old.start + 1,
        };
        touched(&pointers, &outlines, &lines).is_some()
    };
    assert!(touch(4..5), "line 5 changed");
    assert!(touch(0..3), "lines 1-3 changed");
    assert!(!touch(0..2), "lines 1-2 changed");
    assert!(touch(5..5), "inserted after line 5");
    assert!(!touch(7..7), "inserted after the last line pointed at");
    assert!(
        !touch(2..2) || pointers[0].start <= 2,
        "inserted before line 3"
    );
}
