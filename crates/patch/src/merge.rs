//! Rebases a diff written against an earlier version of a file onto the
//! file's current text: the diff is applied to the earlier version (which
//! it must fit exactly as [`super::apply`] would), and the result is merged
//! three ways with diffy — base the earlier version, ours the current text,
//! theirs the earlier version with the diff. A merge that does not settle
//! is a list of [`ConflictRegion`]s, never text with conflict markers.
//!
//! Which earlier versions exist (what the model was shown in this run) is
//! the caller's memory; this module only merges.

use super::apply::patch_document;
use super::text::{self, Document};
use super::Hunk;

/// Conflicting lines shown for one region, per side.
const MAX_SHOWN: usize = 4;
/// Regions named in a conflict's sentence.
const MAX_REGIONS: usize = 3;

/// What rebasing a file's hunks onto its current text gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rebase {
    /// The merged text, in the current file's style (line endings, BOM,
    /// final newline).
    Merged(Vec<u8>),
    /// The diff fits the earlier version, but its change and the changes
    /// made since touch the same lines.
    Conflicts(Vec<ConflictRegion>),
    /// The diff does not fit the earlier version either (or a text is not UTF-8).
    NotApplicable,
}

/// Lines that both the current text and the rebased change alter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConflictRegion {
    /// 1-based line of the current text where the region starts.
    pub line: usize,
    /// The current text's lines there.
    pub current: Vec<String>,
    /// What the change puts there instead.
    pub proposed: Vec<String>,
}

/// A diff that fits an earlier version of a file but conflicts with the
/// changes made to it since. `Display` is the reason sent to the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeConflict {
    /// Target-relative path.
    pub path: String,
    /// Which version the diff was written against (`shown in round 1`).
    pub version: String,
    pub regions: Vec<ConflictRegion>,
}

impl std::fmt::Display for MergeConflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}`: your diff fits the version of the file {}, not its current text, and \
             merged onto the current text it conflicts with changes made since:",
            self.path, self.version
        )?;
        for region in self.regions.iter().take(MAX_REGIONS) {
            write!(f, "\n    line {}: the current file has ", region.line)?;
            quote(f, &region.current)?;
            write!(f, " where your change has ")?;
            quote(f, &region.proposed)?;
        }
        if self.regions.len() > MAX_REGIONS {
            write!(f, "\n    … and {} more", self.regions.len() - MAX_REGIONS)?;
        }
        write!(
            f,
            "\nWrite the diff against the current text shown above, keeping the changes \
             already made there."
        )
    }
}

/// `` `a` / `b` `` or `nothing`.
fn quote(f: &mut std::fmt::Formatter<'_>, lines: &[String]) -> std::fmt::Result {
    if lines.is_empty() {
        return write!(f, "nothing");
    }
    let shown: Vec<String> = lines
        .iter()
        .take(MAX_SHOWN)
        .map(|l| format!("`{l}`"))
        .collect();
    write!(f, "{}", shown.join(" / "))?;
    if lines.len() > MAX_SHOWN {
        write!(f, " (and {} more lines)", lines.len() - MAX_SHOWN)?;
    }
    Ok(())
}

/// Rebases `hunks` of `path`, written against `earlier`, onto `current`.
pub(crate) fn rebase(path: &str, hunks: &[Hunk], earlier: &[u8], current: &[u8]) -> Rebase {
    let (Some(base), Some(ours)) = (Document::decode(earlier), Document::decode(current)) else {
        return Rebase::NotApplicable;
    };
    let Ok(theirs) = patch_document(path, &base, hunks) else {
        return Rebase::NotApplicable;
    };
    match three_way(&lf_text(&base), &lf_text(&ours), &lf_text(&theirs)) {
        Ok(merged) => Rebase::Merged(text::restyle(&merged, &ours).encode()),
        Err(regions) => Rebase::Conflicts(regions),
    }
}

/// The lines of a document, each ended by `\n`.
fn lf_text(doc: &Document) -> String {
    let mut out = String::new();
    for line in &doc.lines {
        out.push_str(&line.text);
        out.push('\n');
    }
    out
}

/// The three-way merge of LF texts: the merged text, or where it conflicts.
pub(crate) fn three_way(
    base: &str,
    ours: &str,
    theirs: &str,
) -> Result<String, Vec<ConflictRegion>> {
    let marker = marker_length(&[base, ours, theirs]);
    let mut options = diffy::MergeOptions::new();
    options
        .set_conflict_style(diffy::ConflictStyle::Diff3)
        .set_conflict_marker_length(marker);
    match options.merge(base, ours, theirs) {
        Ok(merged) => Ok(merged),
        Err(marked) => Err(regions(&marked, marker)),
    }
}

/// A marker length no line of the inputs could be mistaken for.
fn marker_length(texts: &[&str]) -> usize {
    let longest = texts
        .iter()
        .flat_map(|t| t.lines())
        .map(|line| {
            let first = line.chars().next().unwrap_or(' ');
            if ['<', '|', '=', '>'].contains(&first) {
                line.chars().take_while(|c| *c == first).count()
            } else {
                0
            }
        })
        .max()
        .unwrap_or(0);
    longest.max(6) + 1
}

/// Where each conflict of diffy's diff3-style output is, in the current
/// text (ours), with both sides.
fn regions(marked: &str, marker: usize) -> Vec<ConflictRegion> {
    let is = |line: &str, c: char| {
        line.len() >= marker
            && line.chars().take(marker).all(|x| x == c)
            && line.chars().nth(marker).is_none_or(|x| x == ' ')
    };
    enum Side {
        Outside,
        Ours,
        Base,
        Theirs,
    }
    let mut side = Side::Outside;
    let mut line_in_ours = 0;
    let mut out: Vec<ConflictRegion> = Vec::new();
    for line in marked.lines() {
        match side {
            Side::Outside if is(line, '<') => {
                side = Side::Ours;
                out.push(ConflictRegion {
                    line: line_in_ours + 1,
                    current: Vec::new(),
                    proposed: Vec::new(),
                });
            }
            Side::Outside => line_in_ours += 1,
            Side::Ours if is(line, '|') => side = Side::Base,
            Side::Ours if is(line, '=') => side = Side::Theirs,
            Side::Ours => {
                line_in_ours += 1;
                if let Some(region) = out.last_mut() {
                    region.current.push(line.to_string());
                }
            }
            Side::Base if is(line, '=') => side = Side::Theirs,
            Side::Base => {}
            Side::Theirs if is(line, '>') => side = Side::Outside,
            Side::Theirs => {
                if let Some(region) = out.last_mut() {
                    region.proposed.push(line.to_string());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_reply, EditOp, ReplyContext};

    const ORIGINAL: &str = "\"\"\"Money.\"\"\"\n\n\ndef to_cents(amount):\n    return round(amount * 10)\n\n\ndef apply_discount(price, percent):\n    return price * percent / 100\n";

    /// The hunks of a diff from `before` to `after` (one hunk: radius 10).
    fn hunks(before: &str, after: &str) -> Vec<Hunk> {
        let diff = similar::TextDiff::from_lines(before, after)
            .unified_diff()
            .context_radius(10)
            .header("a/m.py", "b/m.py")
            .to_string();
        let ctx = ReplyContext {
            target_prefix: String::new(),
            requested: vec!["m.py".into()],
            language: crate::CodeLanguage::python(),
        };
        match parse_reply(&diff, &ctx).unwrap().remove(0).op {
            EditOp::Patch(hunks) => hunks,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_clean_merge_keeps_the_changes_made_since() {
        let current = ORIGINAL.replace("amount * 10)", "amount * 100)");
        let theirs = ORIGINAL
            .replace("\"\"\"Money.\"\"\"", "\"\"\"Money helpers.\"\"\"")
            .replace("price * percent", "price * (100 - percent)");
        let hunks = hunks(ORIGINAL, &theirs);
        // The diff does not fit the current text…
        assert!(crate::apply(
            &[crate::FileEdit {
                path: "m.py".into(),
                op: EditOp::Patch(hunks.clone())
            }],
            &|_| Some(current.as_bytes().to_vec())
        )
        .is_err());
        // …but merges onto it.
        let merged = rebase("m.py", &hunks, ORIGINAL.as_bytes(), current.as_bytes());
        let want = current
            .replace("\"\"\"Money.\"\"\"", "\"\"\"Money helpers.\"\"\"")
            .replace("price * percent", "price * (100 - percent)");
        assert_eq!(merged, Rebase::Merged(want.into_bytes()));
    }

    #[test]
    fn a_conflict_names_the_lines_of_both_sides() {
        let current = ORIGINAL.replace("amount * 10)", "amount * 100)");
        let theirs = ORIGINAL.replace("round(amount * 10)", "int(amount * 100)");
        let hunks = hunks(ORIGINAL, &theirs);
        let Rebase::Conflicts(regions) =
            rebase("m.py", &hunks, ORIGINAL.as_bytes(), current.as_bytes())
        else {
            panic!("no conflict");
        };
        assert_eq!(
            regions,
            vec![ConflictRegion {
                line: 5,
                current: vec!["    return round(amount * 100)".into()],
                proposed: vec!["    return int(amount * 100)".into()],
            }]
        );
        let reason = MergeConflict {
            path: "m.py".into(),
            version: "shown in round 1".into(),
            regions,
        }
        .to_string();
        assert!(
            reason.starts_with("`m.py`: your diff fits the version of the file shown in round 1"),
            "{reason}"
        );
        assert!(
            reason.contains("line 5: the current file has `    return round(amount * 100)` where your change has `    return int(amount * 100)`"),
            "{reason}"
        );
    }

    #[test]
    fn the_same_change_on_both_sides_merges_to_it() {
        let current = ORIGINAL.replace("amount * 10)", "amount * 100)");
        let hunks = hunks(ORIGINAL, &current);
        assert_eq!(
            rebase("m.py", &hunks, ORIGINAL.as_bytes(), current.as_bytes()),
            Rebase::Merged(current.clone().into_bytes())
        );
        assert_eq!(
            three_way(ORIGINAL, ORIGINAL, ORIGINAL),
            Ok(ORIGINAL.to_string())
        );
    }

    #[test]
    fn a_diff_that_fits_no_version_is_not_applicable() {
        let other = "def unrelated():\n    return 1\n";
        let hunks = hunks(other, "def unrelated():\n    return 2\n");
        assert_eq!(
            rebase("m.py", &hunks, ORIGINAL.as_bytes(), ORIGINAL.as_bytes()),
            Rebase::NotApplicable
        );
    }

    #[test]
    fn crlf_files_stay_crlf_and_marker_lookalikes_are_not_markers() {
        let original = "a = 1\r\n=======\r\nb = 2\r\n\r\nc = 3\r\n";
        let current = original.replace("a = 1", "a = 10");
        let theirs = original.replace("c = 3", "c = 30");
        let hunks = hunks(
            &original.replace("\r\n", "\n"),
            &theirs.replace("\r\n", "\n"),
        );
        let want = current.replace("c = 3", "c = 30");
        assert_eq!(
            rebase("m.py", &hunks, original.as_bytes(), current.as_bytes()),
            Rebase::Merged(want.into_bytes())
        );
        let both = three_way("x\n=======\ny\n", "x\n=======\nY\n", "x\n=======\nZ\n").unwrap_err();
        assert_eq!(both.len(), 1);
        assert_eq!(both[0].line, 3);
    }

    proptest::proptest! {
        /// Changes to different lines, with an unchanged line between them,
        /// always merge, into the base with both changes; the same change
        /// on both sides merges to it.
        #[test]
        fn separate_changes_always_merge(
            len in 3usize..40,
            ours_at in 0usize..40,
            gap in 2usize..40,
            same in proptest::bool::ANY,
        ) {
            let ours_at = ours_at % len;
            let theirs_at = (ours_at + gap) % len;
            let base: Vec<String> = (0..len).map(|k| format!("line {k}\n")).collect();
            let with = |at: usize, text: &str| {
                let mut lines = base.clone();
                lines[at] = format!("{text}\n");
                lines
            };
            let ours = with(ours_at, "ours");
            let theirs = if same { ours.clone() } else { with(theirs_at, "theirs") };
            let merged = three_way(&base.concat(), &ours.concat(), &theirs.concat());
            let apart = ours_at.abs_diff(theirs_at) >= 2;
            if same {
                proptest::prop_assert_eq!(merged, Ok(ours.concat()));
            } else if apart {
                let mut want = ours.clone();
                want[theirs_at] = "theirs\n".to_string();
                proptest::prop_assert_eq!(merged, Ok(want.concat()));
            } else if ours_at == theirs_at {
                let regions = merged.unwrap_err();
                proptest::prop_assert_eq!(regions.len(), 1);
                proptest::prop_assert_eq!(regions[0].line, ours_at + 1);
            }
        }
    }
}
