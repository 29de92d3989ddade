//! The language boundary: what swarm knows of each language it handles, one
//! folder per language behind one interface ([`Language`]), and the
//! registry ([`LANGUAGES`]) the stages and the loop ask through.
//!
//! A language says which files are its sources, tests and test
//! configuration, what its tools are called, and how its paths read as
//! module names; the loop asks the registry ("is this a source file of a
//! language swarm knows", "the sources of this target") and never names a
//! language itself. Adding a language is one folder here and one line in
//! [`LANGUAGES`].
//!
//! Python and JavaScript/TypeScript are registered. Each language gives
//! the [`Suite`]s that judge its files in a run (Python: pytest and
//! pylint; JavaScript: its runner, eslint and tsc): found before any model
//! call ([`FoundSuites::find`]), prepared in the run's worktree, and asked
//! by the Judge for every state it measures, every suite green for
//! success; the Judge names no language. Nothing here drives a stage or
//! the loop, and processes run only through `tools`.

use std::path::Path;

use crate::pipeline::TargetDir;

pub mod beyond;
pub mod javascript;
pub mod names;
pub mod python;
pub mod suite;
pub mod targets;

pub use suite::Suite;

/// The interpreter every run has, found once per run: Python's, with its
/// pytest and pylint. The sandbox is made around it; Python's suite, the
/// behaviour check and the Tester run with it.
pub type Toolchain = crate::tools::PythonEnv;

/// The interpreter and the tools of a [`Toolchain`], each with its version
/// (or path), for a user to read.
pub fn toolchain_versions(env: &Toolchain) -> Vec<(String, String)> {
    python::tool_versions(env)
}

/// One language swarm handles: its files, its tools' names, its prompt
/// wording. Path questions take target-relative paths with `/`.
pub trait Language: Sync {
    /// The language's name in prose ("3 Python files").
    fn name(&self) -> &'static str;
    /// Its source files' extensions as a user would name them (".py").
    fn extensions(&self) -> &'static str;
    /// The test runner's name, as the log and messages give it.
    fn test_runner(&self) -> &'static str;
    /// The linter's name, as the log and messages give it.
    fn linter(&self) -> &'static str;
    /// The tag of a fenced code block of this language.
    fn fence(&self) -> &'static str;
    /// The fence tags a model's block of this language may carry (`""`:
    /// no tag), so a block without a file name counts as the file asked
    /// about.
    fn fences(&self) -> &'static [&'static str];
    /// Whether a path is a source file of this language by its name alone
    /// (tests included).
    fn is_source(&self, rel: &str) -> bool;
    /// The target's source files (target-relative, sorted) among `tracked`
    /// (repository-relative): committed, by name, outside environments,
    /// build output and caches.
    fn sources(&self, tracked: &[String], target: &TargetDir) -> Vec<String>;
    /// The suites that judge this language's files in the target `target`
    /// (canonical, in the checkout rooted at `checkout`), found before any
    /// model call from `files` (target-relative sources of every
    /// language); none when nothing here says how they are tested. `Err`
    /// is one line saying what to do (install node, the dependencies).
    fn find_suites(
        &self,
        target: &Path,
        checkout: &Path,
        files: &[String],
    ) -> Result<Vec<Box<dyn suite::FoundSuite>>, String>;
    /// The behaviour check and the Tester for this language's files (see
    /// [`beyond`]); `None`: not available for this language yet, which
    /// the summary states.
    fn beyond_suite(&self) -> Option<&'static dyn beyond::Beyond> {
        None
    }
    /// What this language's modules define and export (see [`names`]);
    /// `None`: not read for this language.
    fn names(&self) -> Option<&'static dyn names::Names> {
        None
    }
    /// Why a target whose sources are of this language alone cannot be
    /// judged when no suite was found for them: one line saying what to do.
    fn no_suite(&self, target: &Path) -> String {
        format!(
            "no {} found for the {} files under {}",
            self.test_runner(),
            self.name(),
            target.display()
        )
    }
    /// The files whose folder is a package of this language of its own
    /// (`pyproject.toml`, `package.json`), for listing a repository's
    /// independent targets ([`targets`]); none: only the root is one.
    fn package_files(&self) -> &'static [&'static str] {
        &[]
    }
    /// The test runner that would judge the package at `package` (in the
    /// checkout `root`), read from its files alone (nothing installed or
    /// run); `None` when nothing says.
    fn package_runner(&self, _package: &Path, _root: &Path) -> Option<String> {
        None
    }
    /// Whether a path is a test file of this language.
    fn is_test(&self, rel: &str) -> bool;
    /// Whether a path is the project's installed dependencies or their
    /// lockfile, which no change may touch.
    fn is_dependency(&self, _rel: &str) -> bool {
        false
    }
    /// Whether a path belongs to the test harness: tests, the runner's
    /// configuration, anything that decides which tests run and how.
    fn is_test_harness(&self, rel: &str) -> bool;
    /// Whether a harness file configures the runner rather than holds tests.
    fn configures_runner(&self, rel: &str) -> bool;
    /// Whether a path configures the linter (its score is measured with the
    /// base commit's).
    fn is_lint_configuration(&self, rel: &str) -> bool;
    /// The module a source file is imported as (`pkg/mod.py` → `pkg.mod`).
    fn module_name(&self, rel: &str) -> String;
    /// Project files outside the sources that may name a module by its
    /// path (packaging, runner configuration).
    fn project_files(&self) -> &'static [&'static str];
    /// A whole file that configures the test runner wherever it is, named
    /// for a sentence (`conftest.py`); `None` for any other file.
    fn runner_config_file(&self, rel: &str) -> Option<String>;
    /// The part of the test runner's configuration a change to a shared
    /// file alters (`the [tool:pytest] section`), or `None`.
    fn runner_config_change(&self, rel: &str, before: &str, after: &str) -> Option<String>;
    /// Code new in an ordinary source file that changes how the runner runs
    /// (a plugin or hook), and its line.
    fn runner_code(&self, before: &str, after: &str) -> Option<(&'static str, usize)>;
    /// The examples in a source file's documentation that the runner runs
    /// as tests when asked to, with their lines.
    fn doc_examples(&self, text: &str) -> Vec<(usize, String)>;
    /// What in a source file's text looks at how it is being run or
    /// patches the test framework (see `swarm_analysis::test_probes`);
    /// the Reviewer refuses a change to code under test that adds one.
    fn test_probes(&self, rel: &str, text: &str) -> Vec<swarm_analysis::TestProbe>;
    /// Whether a source file's text parses; the Reviewer refuses a
    /// proposal that leaves one that does not.
    fn check_syntax(&self, rel: &str, text: &str) -> Result<(), swarm_analysis::SyntaxIssue>;
    /// The dangerous calls and dynamic accesses in a source file's text
    /// (running programs, evaluating code, the network...); the Reviewer
    /// refuses a proposal that adds one.
    fn dangerous_calls(&self, rel: &str, text: &str) -> Vec<swarm_analysis::DangerousCall>;
    /// A source file's metrics (lines of code, functions, complexity,
    /// severity) from its text.
    fn metrics(&self, rel: &str, text: &str) -> swarm_analysis::FileMetrics;
}

/// The language a file belongs to by its name, if swarm knows one.
pub fn of(rel: &str) -> Option<&'static dyn Language> {
    LANGUAGES.iter().copied().find(|l| l.is_source(rel))
}

/// Whether a path is a source file of a language swarm knows.
pub fn is_source(rel: &str) -> bool {
    of(rel).is_some()
}

/// A file's metrics, by its language (Python's reading for a file of none).
pub fn metrics(rel: &str, text: &str) -> swarm_analysis::FileMetrics {
    of(rel).unwrap_or(LANGUAGES[0]).metrics(rel, text)
}

/// The suites of a target's languages, found before any model call and
/// prepared once the run's worktree exists.
#[derive(Default)]
pub struct FoundSuites {
    found: Vec<Box<dyn suite::FoundSuite>>,
}

impl FoundSuites {
    /// The suites `files` (target-relative sources) of the target `target`
    /// in the checkout rooted at `checkout` need, every language asked in
    /// registry order; `Err` is one line saying what to do (install node,
    /// install the dependencies). A target none of whose files is of a
    /// language with a suite is refused the same way (see
    /// [`Language::no_suite`]): nothing could tell a fix from a break.
    pub fn find(target: &Path, checkout: &Path, files: &[String]) -> Result<Self, String> {
        let mut found = Vec::new();
        for language in LANGUAGES {
            found.extend(language.find_suites(target, checkout, files)?);
        }
        let judged = files
            .iter()
            .any(|f| found.iter().any(|s| s.language().is_source(f)));
        if !judged {
            let language = present(files)[0];
            return Err(language.no_suite(target));
        }
        Ok(Self { found })
    }

    /// The suites, prepared in the run's worktree, in the order found.
    pub fn prepare(
        self,
        setup: &suite::SuiteSetup<'_>,
    ) -> Result<Vec<Box<dyn Suite>>, crate::tools::ToolError> {
        self.found.into_iter().map(|f| f.prepare(setup)).collect()
    }
}

/// What the environment lacks when the baseline's suites could not run at
/// all (see [`Suite::cannot_run`]), asked of the suite when one alone
/// judges `files` (the baseline's run holds no other runner's cases);
/// `None` when they ran.
pub fn suite_cannot_run(
    suites: &[Box<dyn Suite>],
    root: &Path,
    worktree: &Path,
    baseline: &crate::pipeline::Measurement,
    files: &[String],
    tests: &crate::tools::TestFiles,
) -> Option<crate::tools::suite::CannotRun> {
    match suite::judging(suites, files).as_slice() {
        [(suite, _)] => suite.cannot_run(root, worktree, baseline, files, tests),
        _ => None,
    }
}

/// Whether every suite's baseline may be reused by a later run on the
/// same tree (see [`Suite::baseline_reusable`]).
pub fn baselines_reusable(suites: &[Box<dyn Suite>]) -> bool {
    suites.iter().all(|s| s.baseline_reusable())
}

/// Whether a file's text parses, by its language (a file of no language
/// swarm knows has nothing to parse).
pub fn check_syntax(rel: &str, text: &str) -> Result<(), swarm_analysis::SyntaxIssue> {
    of(rel).map_or(Ok(()), |l| l.check_syntax(rel, text))
}

/// Whether any language counts the path as a test file.
pub fn is_test(rel: &str) -> bool {
    LANGUAGES.iter().any(|l| l.is_test(rel))
}

/// Whether any language counts the path as installed dependencies or a
/// lockfile.
pub fn is_dependency(rel: &str) -> bool {
    LANGUAGES.iter().any(|l| l.is_dependency(rel))
}

/// Whether any language counts the path as part of its test harness.
pub fn is_test_harness(rel: &str) -> bool {
    LANGUAGES.iter().any(|l| l.is_test_harness(rel))
}

/// Whether a harness file configures a runner rather than holding tests:
/// its language says so, and a file of no language always does.
pub fn configures_runner(rel: &str) -> bool {
    of(rel).is_none_or(|l| l.configures_runner(rel))
}

/// The whole-file runner configuration `rel` is, by any language, with
/// the runner it configures.
pub fn runner_config_file(rel: &str) -> Option<(String, &'static str)> {
    LANGUAGES.iter().find_map(|l| {
        l.runner_config_file(rel)
            .map(|part| (part, l.test_runner()))
    })
}

/// The part of a runner's configuration a change to `rel` alters, by any
/// language, with the runner it configures.
pub fn runner_config_change(
    rel: &str,
    before: &str,
    after: &str,
) -> Option<(String, &'static str)> {
    LANGUAGES.iter().find_map(|l| {
        l.runner_config_change(rel, before, after)
            .map(|part| (part, l.test_runner()))
    })
}

/// Whether any language counts the path as its linter's configuration.
pub fn is_lint_configuration(rel: &str) -> bool {
    LANGUAGES.iter().any(|l| l.is_lint_configuration(rel))
}

/// The module a file is imported as, by its language (the path itself for
/// a file of no language).
pub fn module_name(rel: &str) -> String {
    of(rel).map_or_else(|| rel.to_string(), |l| l.module_name(rel))
}

/// The project files of every language that may name a module by its path.
pub fn project_files() -> Vec<&'static str> {
    LANGUAGES
        .iter()
        .flat_map(|l| l.project_files().iter().copied())
        .collect()
}

/// The language of `requested` as a model's reply names it: the fence
/// tags of their languages (of every registered language when none is
/// known), for reading the reply.
pub fn code_language(requested: &[String]) -> swarm_patch::CodeLanguage {
    let mut languages: Vec<&dyn Language> = LANGUAGES
        .iter()
        .copied()
        .filter(|l| requested.iter().any(|f| l.is_source(f)))
        .collect();
    if languages.is_empty() {
        languages = LANGUAGES.to_vec();
    }
    let mut fences: Vec<String> = Vec::new();
    for fence in languages.iter().flat_map(|l| l.fences().iter()) {
        if !fences.iter().any(|f| f == fence) {
            fences.push(fence.to_string());
        }
    }
    swarm_patch::CodeLanguage {
        name: languages
            .iter()
            .map(|l| l.name())
            .collect::<Vec<_>>()
            .join(" or "),
        fences,
    }
}

/// The target's source files of every language swarm knows, sorted.
pub fn sources(tracked: &[String], target: &TargetDir) -> Vec<String> {
    let mut files: Vec<String> = LANGUAGES
        .iter()
        .flat_map(|l| l.sources(tracked, target))
        .collect();
    files.sort();
    files.dedup();
    files
}

/// Why a target has nothing to work on: no committed source file of any
/// language swarm knows, naming them and their extensions.
pub fn no_sources(target: &std::path::Path) -> String {
    let names: Vec<&str> = LANGUAGES.iter().map(|l| l.name()).collect();
    let extensions: Vec<&str> = LANGUAGES.iter().map(|l| l.extensions()).collect();
    format!(
        "no committed {} files under {}: point --target_dir at a folder with {} files tracked by git",
        names.join(" or "),
        target.display(),
        extensions.join(" or ")
    )
}

/// The names of the languages of `files`, in registry order ("Python",
/// "Python and TypeScript"); the registered languages' when none matches.
pub fn names_of(files: &[String]) -> String {
    let present: Vec<&str> = LANGUAGES
        .iter()
        .filter(|l| files.iter().any(|f| l.is_source(f)))
        .map(|l| l.name())
        .collect();
    if present.is_empty() {
        LANGUAGES
            .iter()
            .map(|l| l.name())
            .collect::<Vec<_>>()
            .join(" or ")
    } else {
        present.join(" and ")
    }
}

/// The fence tag of a file's code blocks in a prompt: its language's (the
/// first registered language's for a file of none).
pub fn fence_of(rel: &str) -> &'static str {
    of(rel).unwrap_or(LANGUAGES[0]).fence()
}

/// `text` with `{language}` replaced by the names of the languages of
/// `files` (see [`names_of`]): how a prompt names what it is about.
pub fn worded<S: AsRef<str>>(text: &str, files: &[S]) -> String {
    let files: Vec<String> = files.iter().map(|f| f.as_ref().to_string()).collect();
    text.replace("{language}", &names_of(&files))
}

/// Every language's test runner and linter, joined by `sep` ("pytest,
/// pylint, node test runner, eslint").
pub fn tools(sep: &str) -> String {
    LANGUAGES
        .iter()
        .flat_map(|l| [l.test_runner(), l.linter()])
        .collect::<Vec<_>>()
        .join(sep)
}

/// The languages of `files`, in registry order; the first registered when
/// none matches.
fn present(files: &[String]) -> Vec<&'static dyn Language> {
    let found: Vec<&'static dyn Language> = LANGUAGES
        .iter()
        .copied()
        .filter(|l| files.iter().any(|f| l.is_source(f)))
        .collect();
    if found.is_empty() {
        vec![LANGUAGES[0]]
    } else {
        found
    }
}

/// The test runners and linters of the languages of `files`, joined by
/// `sep` ("pytest and pylint").
pub fn tools_of(files: &[String], sep: &str) -> String {
    present(files)
        .iter()
        .flat_map(|l| [l.test_runner(), l.linter()])
        .collect::<Vec<_>>()
        .join(sep)
}

/// The linters of the languages of `files`, joined by `sep` ("pylint").
pub fn linters_of(files: &[String], sep: &str) -> String {
    present(files)
        .iter()
        .map(|l| l.linter())
        .collect::<Vec<_>>()
        .join(sep)
}

/// The languages swarm knows, in the order they are tried. Adding one is a
/// folder beside [`python`] and a line here (a test build registers a toy
/// language too, run end to end by its tests).
pub static LANGUAGES: &[&dyn Language] = &[
    &python::Python,
    &javascript::JavaScript,
    #[cfg(test)]
    &toy::Toy,
];

#[cfg(test)]
pub mod toy;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_go_to_their_language_and_others_to_none() {
        assert_eq!(of("pkg/mod.py").map(|l| l.name()), Some("Python"));
        assert!(of("README.md").is_none());
        assert!(configures_runner("pytest.ini"));
        assert!(configures_runner("tests/conftest.py"));
        assert!(!configures_runner("tests/test_a.py"));
        assert_eq!(module_name("pkg/mod.py"), "pkg.mod");
    }

    #[test]
    fn typescript_is_measured_with_its_own_grammar() {
        let text = "export function cents(text: string): number {\n  if (text.includes('.')) {\n    return 1;\n  }\n  return 2;\n}\n";
        let metrics = metrics("src/money.ts", text);
        assert!(metrics.syntax_errors.is_empty(), "{metrics:?}");
        let names: Vec<&str> = metrics.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["cents"]);
        assert_eq!(metrics.functions[0].complexity, 2);
    }

    #[test]
    fn every_language_finds_its_suites_and_a_target_none_judges_is_refused() {
        let (target, checkout) = (Path::new("/nowhere/t"), Path::new("/nowhere"));
        let found = FoundSuites::find(target, checkout, &["calc.toy".to_string()])
            .expect("the toy suite judges it");
        let languages: Vec<&str> = found.found.iter().map(|f| f.language().name()).collect();
        // Python's tools are found for every target: a Python file an
        // accepted change adds is judged by them.
        assert_eq!(languages, ["Python", "Toy"]);
        let refused = FoundSuites::find(target, checkout, &["web/a.ts".to_string()]);
        let Err(message) = refused else {
            panic!("a TypeScript file no runner tests is judged by nothing");
        };
        assert!(
            message.starts_with(
                "no test runner found for the JavaScript/TypeScript files under /nowhere/t"
            ),
            "{message}"
        );
    }

    #[test]
    fn the_suites_that_judge_the_files_run_and_every_suite_when_none_does() {
        let suites: Vec<Box<dyn Suite>> = vec![Box::new(toy::suite::ToySuite)];
        let files = ["a.py".to_string(), "calc.toy".to_string()];
        let judging = suite::judging(&suites, &files);
        assert_eq!(judging.len(), 1);
        assert_eq!(judging[0].1, ["calc.toy"]);
        let none = suite::judging(&suites, &["a.py".to_string()]);
        assert_eq!(none.len(), 1, "a run always measures something");
        assert!(none[0].1.is_empty());
        assert!(beyond::checks("pkg/money.py"));
        assert!(!beyond::checks("tests/test_money.py"));
        assert!(!beyond::checks("calc.toy"));
        assert_eq!(
            beyond::not_available("calc.toy").map(|l| l.name()),
            Some("Toy")
        );
        assert!(beyond::not_available("pkg/money.py").is_none());
    }

    #[test]
    fn messages_name_every_registered_language() {
        // A test build registers the toy language too (see [`toy`]).
        assert_eq!(
            no_sources(std::path::Path::new("/p")),
            "no committed Python or JavaScript/TypeScript or Toy files under /p: point --target_dir at a folder with .py or .js/.ts or .toy files tracked by git"
        );
        assert_eq!(names_of(&["a.py".to_string()]), "Python");
        assert_eq!(tools_of(&["a.py".to_string()], ", "), "pytest, pylint");
        assert_eq!(linters_of(&["a.py".to_string()], " and "), "pylint");
        let mixed = ["a.py".to_string(), "web/b.ts".to_string()];
        assert_eq!(linters_of(&mixed, " and "), "pylint and eslint");
        assert_eq!(names_of(&mixed), "Python and JavaScript/TypeScript");
    }
}
