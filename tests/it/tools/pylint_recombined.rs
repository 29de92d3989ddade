//! pylint's score as swarm recombines it, file by file and from its cache,
//! against one plain pylint run over the same files with the same options
//! and configuration, on every bundled fixture and on a generated scale
//! project: on the tree as committed, from the cache alone, and with one
//! file changed after the cache was warmed.
//!
//! The scores must be equal as numbers (so also to the two decimals pylint
//! prints).

use std::path::{Path, PathBuf};
use std::time::Duration;

use swarm::cancel::Cancel;
use swarm::tools::*;

use super::pylint::plain_pylint;
use crate::support::fixture::{copy_tree, fixture_dir, fixture_target};
use crate::support::*;

/// Every fixture under `fixtures/`, by name.
fn fixture_names() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .expect("fixtures folder")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.join("fixture.toml").is_file())
        .map(|p| {
            p.file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// The Python files under `root`, relative, sorted (what swarm lints).
fn python_files(root: &Path) -> Vec<String> {
    list_files(root)
        .into_iter()
        .filter(|f| f.ends_with(".py"))
        .collect()
}

/// swarm's lint of `files` in `root` with its cache in `cache_dir`.
fn swarm_lint(root: &Path, files: &[String], cache_dir: &Path, per_file: bool) -> LintReport {
    let mut settings = LintSettings::new(Duration::from_secs(120));
    if per_file {
        settings.batch_files = 1;
    }
    run_pylint(
        &system_env(),
        &sandbox_for(root),
        root,
        files,
        &settings,
        &LintCache::new(Some(cache_dir)),
        &Cancel::new(),
    )
    .expect("pylint runs")
}

/// Asserts swarm's score equals the plain run's, as numbers and as pylint
/// prints them.
fn assert_same_score(case: &str, swarm: &LintReport, root: &Path, files: &[String]) {
    let plain = plain_pylint(root, files);
    let printed = |s: Option<f64>| s.map(|s| format!("{s:.2}/10"));
    assert_eq!(
        printed(swarm.score),
        printed(plain.score),
        "{case}: printed score"
    );
    assert_eq!(swarm.score, plain.score, "{case}: score");
    assert!(swarm.score.is_some(), "{case}: no score at all");
}

/// Lints `files` in `root` file by file into a fresh cache, then again from
/// the cache alone, checking both against a plain run; returns the cache.
fn warm_and_check(case: &str, root: &Path, files: &[String], per_file: bool) -> tempfile::TempDir {
    let cache = tempfile::tempdir().expect("cache dir");
    let first = swarm_lint(root, files, cache.path(), per_file);
    assert_eq!((first.linted, first.from_cache), (files.len(), 0), "{case}");
    if per_file {
        assert_eq!(
            first.batches.len(),
            files.len(),
            "{case}: one process per file"
        );
    }
    assert_same_score(case, &first, root, files);

    let cached = swarm_lint(root, files, cache.path(), per_file);
    assert_eq!(
        (cached.linted, cached.from_cache),
        (0, files.len()),
        "{case}: all from the cache"
    );
    assert_eq!(cached.score, first.score, "{case}: from the cache");
    cache
}

/// Changes `path` (relative to `root`) to `text` and checks the lint that
/// reuses the warmed cache against a plain run on the changed tree; returns
/// how many files came from the cache (the changed file and its importers
/// are linted again).
fn change_and_check(
    case: &str,
    root: &Path,
    files: &[String],
    cache: &Path,
    path: &str,
    text: &str,
) -> usize {
    let before = std::fs::read_to_string(root.join(path)).expect("the file to change");
    assert_ne!(before, text, "{case}: {path} must change");
    write(root, path, text);
    let changed = swarm_lint(root, files, cache, true);
    assert!(
        changed.linted >= 1 && (changed.linted < files.len() || files.len() <= 2),
        "{case}: {path} re-linted, the rest from the cache: {} linted, {} cached",
        changed.linted,
        changed.from_cache
    );
    assert_eq!(changed.linted + changed.from_cache, files.len(), "{case}");
    assert_same_score(&format!("{case}, {path} changed"), &changed, root, files);
    changed.from_cache
}

#[test]
fn the_recombined_score_equals_a_full_run_on_every_fixture() {
    let names = fixture_names();
    assert!(names.len() >= 4, "{names:?}");
    let mut from_cache = 0;
    for name in names {
        let dir = tempfile::tempdir().expect("temp dir");
        copy_tree(&fixture_dir(&name).join("project"), dir.path());
        let target = fixture_target(&name);
        let root: PathBuf = dir.path().join(&target);
        let files = python_files(&root);
        assert!(!files.is_empty(), "{name}: no Python files");
        let cache = warm_and_check(&name, &root, &files, true);

        // One file changed: the first of the fixture's fixed files.
        let fixed_root = fixture_dir(&name).join("fixed");
        let fixed = list_files(&fixed_root)
            .into_iter()
            .find(|f| f.ends_with(".py"))
            .unwrap_or_else(|| panic!("{name}: a fixed file"));
        let in_target = match target.as_str() {
            "." => fixed.clone(),
            folder => Path::new(&fixed)
                .strip_prefix(folder)
                .expect("fixed files are in the target")
                .to_string_lossy()
                .into_owned(),
        };
        let text = std::fs::read_to_string(fixed_root.join(&fixed)).expect("fixed file");
        from_cache += change_and_check(&name, &root, &files, cache.path(), &in_target, &text);
    }
    assert!(from_cache > 0, "no changed tree reused a cached result");
}

#[test]
fn the_recombined_score_equals_a_full_run_on_a_generated_project() {
    let dir = tempfile::tempdir().expect("temp dir");
    let project = scale::write_project(dir.path(), 30);
    let files = python_files(dir.path());
    assert_eq!(files.len(), project.python_files);
    let cache = warm_and_check("scale project", dir.path(), &files, false);
    let from_cache = change_and_check(
        "scale project",
        dir.path(),
        &files,
        cache.path(),
        &project.buggy_path,
        &project.fixed_text(),
    );
    assert!(
        from_cache >= files.len() / 2,
        "{from_cache} of {}",
        files.len()
    );
}
