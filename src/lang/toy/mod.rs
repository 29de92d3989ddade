//! A toy language, registered in test builds only: the proof that a
//! language is one folder and one line in [`crate::lang::LANGUAGES`], for
//! judging too. Its sources (`*.toy`) hold `name = 2 + 3` lines; its test
//! files (`*.test.toy`) hold `case: name == 4` lines, each a test that
//! passes when the sources give `name` that value. Its suite
//! ([`suite::ToySuite`]) runs them in-process, spawning nothing, and its
//! linter flags `TODO` comments. The tests at the end run swarm on a toy
//! repository end to end.

use std::path::Path;

use super::suite::FoundSuite;
use super::Language;
use crate::pipeline::TargetDir;

pub mod suite;

/// The toy language: `.toy` files.
pub struct Toy;

/// A source line: `name = 2 + 3` as the name and its value; `None` for a
/// line that is not one.
pub fn assignment(line: &str) -> Option<(&str, i64)> {
    let (name, expr) = line.split_once('=')?;
    let name = name.trim();
    let named = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    named.then_some(())?;
    Some((name, value(expr)?))
}

/// The value of `2 + 3 - 1`.
fn value(expr: &str) -> Option<i64> {
    let mut total = 0;
    let mut sign = 1;
    for (i, token) in expr.split_whitespace().enumerate() {
        match (i % 2, token) {
            (1, "+") => sign = 1,
            (1, "-") => sign = -1,
            (0, number) => total += sign * number.parse::<i64>().ok()?,
            _ => return None,
        }
    }
    Some(total)
}

/// A test line: `case: name == 4` as the case, the name and the value.
pub fn expectation(line: &str) -> Option<(&str, &str, i64)> {
    let (case, rest) = line.split_once(':')?;
    let (name, expected) = rest.split_once("==")?;
    Some((case.trim(), name.trim(), expected.trim().parse().ok()?))
}

/// Whether a line is blank or a comment.
fn is_blank(line: &str) -> bool {
    let line = line.trim();
    line.is_empty() || line.starts_with('#')
}

impl Language for Toy {
    fn name(&self) -> &'static str {
        "Toy"
    }
    fn extensions(&self) -> &'static str {
        ".toy"
    }
    fn test_runner(&self) -> &'static str {
        "toy-test"
    }
    fn linter(&self) -> &'static str {
        "toy-lint"
    }
    fn fence(&self) -> &'static str {
        "toy"
    }
    fn fences(&self) -> &'static [&'static str] {
        &["toy"]
    }
    fn is_source(&self, rel: &str) -> bool {
        rel.ends_with(".toy")
    }
    fn sources(&self, tracked: &[String], target: &TargetDir) -> Vec<String> {
        let mut files: Vec<String> = tracked
            .iter()
            .filter_map(|p| target.relative(p))
            .filter(|rel| self.is_source(rel))
            .map(str::to_string)
            .collect();
        files.sort();
        files
    }
    /// Its suite, when the target has toy files.
    fn find_suites(
        &self,
        _target: &Path,
        _checkout: &Path,
        files: &[String],
    ) -> Result<Vec<Box<dyn FoundSuite>>, String> {
        let any = files.iter().any(|f| self.is_source(f));
        Ok(match any {
            true => vec![Box::new(suite::Found)],
            false => Vec::new(),
        })
    }
    fn is_test(&self, rel: &str) -> bool {
        rel.ends_with(".test.toy")
    }
    fn is_test_harness(&self, rel: &str) -> bool {
        self.is_test(rel)
    }
    fn configures_runner(&self, _rel: &str) -> bool {
        false
    }
    fn is_lint_configuration(&self, _rel: &str) -> bool {
        false
    }
    fn module_name(&self, rel: &str) -> String {
        rel.trim_end_matches(".toy").replace('/', ".")
    }
    fn project_files(&self) -> &'static [&'static str] {
        &[]
    }
    fn runner_config_file(&self, _rel: &str) -> Option<String> {
        None
    }
    fn runner_config_change(&self, _rel: &str, _before: &str, _after: &str) -> Option<String> {
        None
    }
    fn runner_code(&self, _before: &str, _after: &str) -> Option<(&'static str, usize)> {
        None
    }
    fn doc_examples(&self, _text: &str) -> Vec<(usize, String)> {
        Vec::new()
    }
    fn test_probes(&self, _rel: &str, _text: &str) -> Vec<swarm_analysis::TestProbe> {
        Vec::new()
    }
    /// Every line is blank, a comment, an assignment (a test: an
    /// expectation).
    fn check_syntax(&self, rel: &str, text: &str) -> Result<(), swarm_analysis::SyntaxIssue> {
        let parses = |line: &str| match self.is_test(rel) {
            true => expectation(line).is_some(),
            false => assignment(line).is_some(),
        };
        match text
            .lines()
            .position(|line| !is_blank(line) && !parses(line))
        {
            Some(i) => Err(swarm_analysis::SyntaxIssue {
                line: i + 1,
                column: 1,
            }),
            None => Ok(()),
        }
    }
    fn dangerous_calls(&self, _rel: &str, _text: &str) -> Vec<swarm_analysis::DangerousCall> {
        Vec::new()
    }
    fn metrics(&self, rel: &str, text: &str) -> swarm_analysis::FileMetrics {
        let syntax_errors = self
            .check_syntax(rel, text)
            .err()
            .map(|issue| vec![issue.line])
            .unwrap_or_default();
        swarm_analysis::FileMetrics {
            path: rel.to_string(),
            loc: text.lines().filter(|l| !is_blank(l)).count(),
            functions: Vec::new(),
            hotspots: Vec::new(),
            syntax_errors,
            severity: swarm_analysis::Severity::Low,
            imported_names: Vec::new(),
            chars: text.trim_end_matches('\n').chars().count(),
        }
    }
}

#[cfg(test)]
mod tests {
    //! swarm on a repository of toy files, end to end: the registry finds
    //! the toy suite, the Judge runs it (and nothing of Python's), and a
    //! fix the model proposes is judged, committed and delivered.

    use std::path::Path;
    use std::process::Command;
    use std::sync::Arc;

    use crate::cancel::Cancel;
    use crate::llm::{ChatModel, ChatRequest, ChatResponse, Finish, LlmError, ProviderKind, Usage};
    use crate::log::events::Collect;
    use crate::log::Event;
    use crate::orchestrator::{run, ProposalSource, RunConfig, StopReason};

    const SOURCE: &str = "# TODO: one too many\ntotal = 2 + 3\n";
    const TESTS: &str = "total_is_four: total == 4\n";
    const FIXED: &str = "total = 2 + 2\n";
    const REPLY: &str = "Make the total four.\n```diff\n--- a/calc.toy\n+++ b/calc.toy\n@@ -1,2 +1 @@\n-# TODO: one too many\n-total = 2 + 3\n+total = 2 + 2\n```\n";

    /// Answers every request with the fix of `calc.toy`.
    struct Fixing;

    #[async_trait::async_trait]
    impl ChatModel for Fixing {
        fn kind(&self) -> ProviderKind {
            ProviderKind::Replay
        }
        fn model(&self) -> &str {
            "toy-fixer"
        }
        async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
            Ok(ChatResponse {
                text: REPLY.into(),
                finish: Finish::Stop,
                usage: Usage::default(),
                attempts: 1,
            })
        }
    }

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args([
                "-c",
                "commit.gpgsign=false",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn config(target: &Path, dir: &Path) -> RunConfig {
        let mut sandbox = crate::tools::SandboxPolicy::for_worktree(target);
        sandbox.isolate = false;
        RunConfig {
            target: target.to_path_buf(),
            max_iterations: 2,
            limits: crate::stage::judge::Limits {
                tests: std::time::Duration::from_secs(60),
                test_case: None,
                lint: std::time::Duration::from_secs(60),
            },
            log_file: dir.join("log.json"),
            dry_run: false,
            allow_test_edits: false,
            generate_tests: false,
            allow_secrets: false,
            size_limits: Default::default(),
            bootstrap: false,
            install_deps: false,
            jobs: 1,
            max_tokens_total: None,
            max_cost: None,
            secrets: Vec::new(),
            prices: Default::default(),
            cache_dir: Some(dir.join("cache")),
            lock_timeout: std::time::Duration::from_secs(5),
            sandbox,
            budget: Default::default(),
            preflight: None,
            proposals: ProposalSource::Model,
            task: None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_toy_repository_is_judged_by_its_own_suite_and_fixed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).expect("repo dir");
        std::fs::write(repo.join("calc.toy"), SOURCE).expect("write");
        std::fs::write(repo.join("calc.test.toy"), TESTS).expect("write");
        git(&repo, &["init", "-q"]);
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-qm", "toy"]);

        let events = Collect::default();
        let model: Arc<dyn ChatModel> = Arc::new(Fixing);
        let config = config(&repo, dir.path());
        let summary = run(&config, model, &events, &Cancel::new())
            .await
            .expect("the run ends");

        assert_eq!(summary.stop_reason, StopReason::Green, "{summary:?}");
        assert_eq!(summary.accepted, 1, "{summary:?}");
        assert_eq!(summary.linter, "toy-lint");
        // No behaviour check or Tester for toy files: the summary says so.
        let verified = summary.verification.get("calc.toy").map(|v| v.to_string());
        assert_eq!(
            verified.as_deref(),
            Some(
                "its suite only: the behaviour check and generated tests are not available for Toy"
            ),
            "{summary:?}"
        );
        let on_disk = std::fs::read_to_string(repo.join("calc.toy")).expect("read");
        assert_eq!(on_disk, FIXED);
        let log = git(&repo, &["log", "--format=%s", "main"]);
        assert_eq!(log.lines().count(), 2, "{log}");
        // The Judge asked the toy suite, and nothing of Python's ran.
        let steps: Vec<String> = events
            .events()
            .into_iter()
            .filter_map(|e| match e {
                Event::StepStarted { what, .. } => Some(what),
                _ => None,
            })
            .collect();
        assert!(steps.iter().any(|s| s == "audit: toy-test"), "{steps:?}");
        assert!(
            steps.iter().any(|s| s.ends_with("(calc.toy): toy-lint")),
            "{steps:?}"
        );
        assert!(
            !steps
                .iter()
                .any(|s| s.contains("pytest") || s.contains("pylint")),
            "{steps:?}"
        );
    }

    /// The code of a source file before its tests, without comments,
    /// lowercased.
    fn code_of(text: &str) -> String {
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        code.lines()
            .map(|line| line.split("//").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
            .to_lowercase()
    }

    #[test]
    fn the_judge_names_no_language() {
        let judge = [
            ("stage/judge.rs", include_str!("../../stage/judge.rs")),
            (
                "stage/judge/early.rs",
                include_str!("../../stage/judge/early.rs"),
            ),
        ];
        for language in crate::lang::LANGUAGES {
            let mut names: Vec<String> =
                language.name().split('/').map(str::to_lowercase).collect();
            names.push(language.test_runner().to_lowercase());
            names.push(language.linter().to_lowercase());
            for (file, text) in judge {
                let code = code_of(text);
                for name in &names {
                    assert!(!code.contains(name.as_str()), "{file} names {name}");
                }
            }
        }
    }
}
