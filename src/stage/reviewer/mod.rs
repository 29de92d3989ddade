//! The Reviewer: rules, no model. A proposal is accepted only when its paths
//! stay inside the target, it leaves tests alone, it applies cleanly, its
//! size fits the file's severity, the Python still parses, it adds no
//! dangerous call, it is not whitespace-only and it was not tried before.

use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path};

use sha2::{Digest, Sha256};

use super::fixer::Proposal;
use super::{is_test_path, repo_path};
use crate::analysis::{self, Severity};
use crate::git::FileWrite;
use crate::patch::{self, FileEdit};

/// Changed-line limits per severity (defaults from the multi-agent
/// refactoring paper: low 40, medium 100, high 180).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SizeLimits {
    pub low: usize,
    pub medium: usize,
    pub high: usize,
}

impl Default for SizeLimits {
    fn default() -> Self {
        Self {
            low: 40,
            medium: 100,
            high: 180,
        }
    }
}

impl SizeLimits {
    /// The limit for a file of this severity.
    pub fn for_severity(&self, severity: Severity) -> usize {
        match severity {
            Severity::Low => self.low,
            Severity::Medium => self.medium,
            Severity::High => self.high,
        }
    }
}

/// What the Reviewer needs to know.
pub struct ReviewContext<'a> {
    /// The target folder inside the run's worktree (files as in the best state).
    pub root: &'a Path,
    /// The target folder relative to the repository root.
    pub target_rel: &'a str,
    pub severities: &'a BTreeMap<String, Severity>,
    pub limits: SizeLimits,
    pub allow_test_edits: bool,
    /// Hashes of every change tried so far in the run.
    pub seen: &'a HashSet<String>,
    /// The commit the change applies to: the same change on a new best
    /// state is a new attempt.
    pub base: &'a str,
}

/// An accepted change, ready for the Executor.
#[derive(Clone, Debug)]
pub struct Change {
    /// Repo-relative writes.
    pub writes: Vec<FileWrite>,
    /// Target-relative paths touched.
    pub files: Vec<String>,
    pub changed_lines: usize,
    /// The change as a unified diff (for logs and later prompts).
    pub diff: String,
    /// Identifies the resulting content, to refuse repeats.
    pub hash: String,
}

/// The Reviewer's answer.
#[derive(Clone, Debug)]
pub enum Review {
    Accepted(Change),
    Rejected(String),
}

/// Reviews a proposal.
pub fn review(proposal: &Proposal, ctx: &ReviewContext<'_>) -> Review {
    match check(proposal, ctx) {
        Ok(change) => Review::Accepted(change),
        Err(reason) => Review::Rejected(reason),
    }
}

fn check(proposal: &Proposal, ctx: &ReviewContext<'_>) -> Result<Change, String> {
    let edits = proposal.edits.as_ref().map_err(Clone::clone)?;
    if edits.is_empty() {
        return Err(patch::PatchError::NoChange.to_string());
    }
    for edit in edits {
        check_path(edit, ctx)?;
    }
    let read = |p: &str| std::fs::read(ctx.root.join(p)).ok();
    let outcomes = patch::apply(edits, &read).map_err(|e| e.to_string())?;
    let mut writes = Vec::new();
    let mut files = Vec::new();
    let mut diff = String::new();
    let mut total = 0;
    let mut hasher = Sha256::new();
    hasher.update(ctx.base.as_bytes());
    hasher.update([0]);
    let mut meaningful = false;
    for outcome in &outcomes {
        let before = outcome.before.as_deref().map(String::from_utf8_lossy);
        let after = outcome.after.as_deref().map(String::from_utf8_lossy);
        let (b, a) = (
            before.as_deref().unwrap_or(""),
            after.as_deref().unwrap_or(""),
        );
        if outcome.before == outcome.after {
            continue;
        }
        if squeeze(b) != squeeze(a) || outcome.before.is_none() || outcome.after.is_none() {
            meaningful = true;
        }
        let lines = patch::changed_lines(b, a);
        let severity = ctx
            .severities
            .get(&outcome.path)
            .copied()
            .unwrap_or(Severity::Medium);
        let limit = ctx.limits.for_severity(severity);
        if lines > limit {
            return Err(format!(
                "the change to {} has {lines} changed lines; the limit for a {}-severity file is {limit}: \
                 make a smaller change",
                outcome.path,
                severity_name(severity)
            ));
        }
        total += lines;
        if outcome.path.ends_with(".py") {
            if let Some(text) = after.as_deref() {
                if let Err(issue) = analysis::check_syntax(text) {
                    return Err(format!(
                        "after the change {} does not parse as Python (syntax error at line {}, column {})",
                        outcome.path, issue.line, issue.column
                    ));
                }
                let old = analysis::dangerous_calls(b);
                let new = analysis::dangerous_calls(text);
                for call in &new {
                    let count = |calls: &[analysis::DangerousCall]| {
                        calls.iter().filter(|c| c.name == call.name).count()
                    };
                    if count(&new) > count(&old) {
                        return Err(format!(
                            "the change adds a call to {} in {} (line {}); dangerous calls are not allowed",
                            call.name, outcome.path, call.line
                        ));
                    }
                }
            }
        }
        hasher.update(outcome.path.as_bytes());
        hasher.update([0]);
        hasher.update(outcome.after.as_deref().unwrap_or(b"\x00deleted"));
        hasher.update([0]);
        diff.push_str(&patch::unified_diff(&outcome.path, b, a));
        writes.push(FileWrite {
            path: repo_path(ctx.target_rel, &outcome.path),
            content: outcome.after.clone(),
        });
        files.push(outcome.path.clone());
    }
    if writes.is_empty() {
        return Err("the change leaves every file exactly as it is".into());
    }
    if !meaningful {
        return Err("the change only touches whitespace; fix the problems listed instead".into());
    }
    let hash = hex::encode(hasher.finalize());
    if ctx.seen.contains(&hash) {
        return Err(
            "this exact change was already tried on this state of the code; take a different approach"
                .into(),
        );
    }
    Ok(Change {
        writes,
        files,
        changed_lines: total,
        diff,
        hash,
    })
}

/// Every path must be relative, free of `..`, outside `.git`, not a test
/// (unless allowed), and must not lead out of the target through a symlink.
fn check_path(edit: &FileEdit, ctx: &ReviewContext<'_>) -> Result<(), String> {
    let path = edit.path.as_str();
    let p = Path::new(path);
    if path.is_empty() {
        return Err("a file change has an empty path".into());
    }
    if p.is_absolute()
        || path.starts_with('/')
        || path.contains(':') && path.chars().nth(1) == Some(':')
    {
        return Err(format!(
            "{path} is an absolute path; use paths relative to the project folder"
        ));
    }
    if p.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(format!(
            "{path} leaves the project folder (`..`); only files inside it may change"
        ));
    }
    if p.components().any(|c| c.as_os_str() == ".git") {
        return Err(format!(
            "{path} is inside .git; only project files may change"
        ));
    }
    if !ctx.allow_test_edits && is_test_path(path) {
        return Err(format!(
            "{path} is a test file; tests must not be changed — fix the code under test instead"
        ));
    }
    let mut current = ctx.root.to_path_buf();
    let root = ctx
        .root
        .canonicalize()
        .unwrap_or_else(|_| ctx.root.to_path_buf());
    for component in p.components() {
        current.push(component);
        if let Ok(meta) = std::fs::symlink_metadata(&current) {
            if meta.file_type().is_symlink() {
                let resolved = current.canonicalize().ok();
                if !resolved.is_some_and(|r| r.starts_with(&root)) {
                    return Err(format!(
                        "{path} goes through a symlink that leads out of the project folder"
                    ));
                }
            }
        }
    }
    Ok(())
}

fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Low => "low",
        Severity::Medium => "medium",
        Severity::High => "high",
    }
}

/// Text without any whitespace, to spot whitespace-only changes.
fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::ReplyContext;

    const STATS: &str = "def mean(xs):\n    return sum(xs) / len(xs)\n";

    struct Fixture {
        dir: tempfile::TempDir,
        severities: BTreeMap<String, Severity>,
        seen: HashSet<String>,
    }

    impl Fixture {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("stats.py"), STATS).unwrap();
            std::fs::create_dir(dir.path().join("tests")).unwrap();
            std::fs::write(
                dir.path().join("tests/test_stats.py"),
                "def test_x():\n    assert True\n",
            )
            .unwrap();
            let severities = [("stats.py".to_string(), Severity::Low)]
                .into_iter()
                .collect();
            Self {
                dir,
                severities,
                seen: HashSet::new(),
            }
        }

        fn review(&self, reply: &str, allow_tests: bool) -> Review {
            let ctx = ReplyContext {
                target_prefix: "svc".into(),
                requested: vec!["stats.py".into()],
            };
            let proposal = Proposal {
                file: "stats.py".into(),
                reply: reply.into(),
                edits: patch::parse_reply(reply, &ctx).map_err(|e| e.to_string()),
                debugging: true,
            };
            review(
                &proposal,
                &ReviewContext {
                    root: self.dir.path(),
                    target_rel: "svc",
                    severities: &self.severities,
                    limits: SizeLimits::default(),
                    allow_test_edits: allow_tests,
                    seen: &self.seen,
                    base: "abc",
                },
            )
        }
    }

    fn diff(path: &str, before: &str, after: &str) -> String {
        format!("```diff\n{}```\n", patch::unified_diff(path, before, after))
    }

    fn rejected(review: Review) -> String {
        match review {
            Review::Rejected(reason) => reason,
            Review::Accepted(c) => panic!("accepted {:?}", c.files),
        }
    }

    const FIXED: &str = "def mean(xs):\n    \"\"\"The mean; 0.0 for no values.\"\"\"\n    return sum(xs) / len(xs) if xs else 0.0\n";

    #[test]
    fn accepts_a_good_change_with_repo_relative_writes() {
        let fx = Fixture::new();
        let Review::Accepted(change) = fx.review(&diff("stats.py", STATS, FIXED), false) else {
            panic!("rejected")
        };
        assert_eq!(change.files, vec!["stats.py"]);
        assert_eq!(change.writes[0].path, "svc/stats.py");
        assert_eq!(change.writes[0].content.as_deref(), Some(FIXED.as_bytes()));
        assert_eq!(change.changed_lines, 3);
        assert!(change.diff.contains("+    \"\"\"The mean"));
    }

    #[test]
    fn paths_must_stay_inside_the_target() {
        let fx = Fixture::new();
        let escape =
            "```diff\n--- a/../outside.py\n+++ b/../outside.py\n@@ -0,0 +1 @@\n+x = 1\n```\n";
        assert!(rejected(fx.review(escape, false)).contains("leaves the project folder"));
        let absolute = "```diff\n--- /etc/passwd\n+++ /etc/passwd\n@@ -0,0 +1 @@\n+x = 1\n```\n";
        assert!(rejected(fx.review(absolute, false)).contains("absolute path"));
        let git = "```diff\n--- a/.git/config\n+++ b/.git/config\n@@ -0,0 +1 @@\n+x = 1\n```\n";
        assert!(rejected(fx.review(git, false)).contains(".git"));
    }

    #[test]
    fn symlinks_leading_out_are_refused() {
        let fx = Fixture::new();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.py"), "a = 1\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), fx.dir.path().join("link")).unwrap();
        let reply = diff("link/x.py", "a = 1\n", "a = 2\n");
        assert!(rejected(fx.review(&reply, false)).contains("symlink"));
        assert_eq!(
            std::fs::read_to_string(outside.path().join("x.py")).unwrap(),
            "a = 1\n"
        );
    }

    #[test]
    fn tests_are_left_alone_unless_allowed() {
        let fx = Fixture::new();
        let before = "def test_x():\n    assert True\n";
        let reply = diff(
            "tests/test_stats.py",
            before,
            "def test_x():\n    assert 1\n",
        );
        assert!(rejected(fx.review(&reply, false)).contains("is a test file"));
        assert!(matches!(fx.review(&reply, true), Review::Accepted(_)));
    }

    #[test]
    fn size_syntax_danger_whitespace_and_repeats() {
        let mut fx = Fixture::new();
        let big: String = (0..50).map(|i| format!("X{i} = {i}\n")).collect();
        let reason = rejected(fx.review(&diff("stats.py", STATS, &format!("{STATS}{big}")), false));
        assert!(
            reason.contains("50 changed lines")
                && reason.contains("low-severity")
                && reason.contains("40"),
            "{reason}"
        );

        let broken = "def mean(xs)\n    return sum(xs) / len(xs)\n";
        assert!(
            rejected(fx.review(&diff("stats.py", STATS, broken), false)).contains("does not parse")
        );

        let evil =
            "import os\n\ndef mean(xs):\n    os.system('rm -rf /')\n    return sum(xs) / len(xs)\n";
        assert!(rejected(fx.review(&diff("stats.py", STATS, evil), false)).contains("os.system"));

        let spaced = "def mean(xs):\n    return sum(xs)  /  len(xs)\n";
        assert!(rejected(fx.review(&diff("stats.py", STATS, spaced), false)).contains("whitespace"));

        let good = diff("stats.py", STATS, FIXED);
        let Review::Accepted(change) = fx.review(&good, false) else {
            panic!()
        };
        fx.seen.insert(change.hash);
        assert!(rejected(fx.review(&good, false)).contains("already tried"));
    }

    #[test]
    fn unusable_replies_and_bad_hunks_carry_their_reason() {
        let fx = Fixture::new();
        assert!(rejected(fx.review("Looks fine to me.", false)).contains("no unified diff"));
        let wrong = "```diff\n--- a/stats.py\n+++ b/stats.py\n@@ -1,2 +1,2 @@\n-def median(xs):\n-    pass\n+def median(xs):\n+    return 1\n```\n";
        let reason = rejected(fx.review(wrong, false));
        assert!(reason.contains("stats.py"), "{reason}");
        assert_eq!(
            std::fs::read_to_string(fx.dir.path().join("stats.py")).unwrap(),
            STATS
        );
    }
}
