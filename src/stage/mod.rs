//! The pipeline's stages. Each takes typed values and returns typed values;
//! none prints and none calls another — the orchestrator wires them.
//!
//! Where things are:
//! - the audit (files, metrics, the pytest/pylint baseline, severities):
//!   [`auditor`], its cache by tree id [`baseline_cache`];
//! - the plan (evidence ranking, the request, parsing the reply):
//!   [`planner`];
//! - which files a failing test points at: [`reach`]; what a prompt shows
//!   of a file and of the evidence: [`excerpt`], [`prompt`]; the token
//!   allowances: [`budget`];
//! - asking for a fix and reading the reply into edits: [`fixer`];
//! - the Reviewer's rules, one table entry each (`reviewer/rules/`), their
//!   reasons [`reviewer::Rejection`]: [`reviewer`];
//! - applying a proposal to the worktree: [`executor`];
//! - measuring and deciding (tests, pylint, the verdict, the early stop):
//!   [`judge`];
//! - generated tests and their validation chain, and the held-out tests
//!   no Fixer sees: [`tester`];
//! - the reference of a module that does not compile (the smallest repair
//!   that lets it parse): [`repair`];
//! - old dotted paths in strings and configuration, for a task: [`mentions`].

pub mod auditor;
pub mod baseline_cache;
pub mod budget;
pub mod excerpt;
pub mod executor;
pub mod fixer;
pub mod judge;
pub mod mentions;
pub mod planner;
pub mod prompt;
pub mod reach;
pub mod repair;
pub mod reviewer;
pub mod ruff_fixer;
pub mod tester;

/// Whether a target-relative path is a test file of any language swarm
/// knows (pytest's `test_*.py`, `tests/`…; `*.test.ts`, `__tests__/`…).
pub use crate::lang::is_test as is_test_path;

pub use crate::lang::python::files::is_startup_file;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_test_files() {
        for p in [
            "test_a.py",
            "pkg/a_test.py",
            "conftest.py",
            "tests/helpers.py",
            "src/test/x.py",
        ] {
            assert!(is_test_path(p), "{p}");
        }
        for p in ["a.py", "testing.py", "pkg/contest.py", "latest_x.py"] {
            assert!(!is_test_path(p), "{p}");
        }
    }
}

/// One model call and what came of it, for the experiment log.
#[derive(Clone, Debug)]
pub struct ModelCall {
    pub request: crate::llm::ChatRequest,
    pub reply: Result<crate::llm::ChatResponse, String>,
    pub elapsed_ms: u128,
}

/// Calls the model once, timing it; errors become values. Every prompt
/// of the run passes here: when the model withholds the run's secrets, the
/// request is redacted first (see [`crate::llm::withhold`]), so the call
/// logged is the one that left the machine.
pub async fn call_model(
    model: &dyn crate::llm::ChatModel,
    request: crate::llm::ChatRequest,
) -> (
    ModelCall,
    Result<crate::llm::ChatResponse, crate::llm::LlmError>,
) {
    let request = match model.withheld() {
        Some(secrets) => crate::llm::withhold::outgoing(secrets, &request),
        None => request,
    };
    let started = std::time::Instant::now();
    let result = model.complete(&request).await;
    let call = ModelCall {
        request,
        reply: match &result {
            Ok(r) => Ok(r.clone()),
            Err(e) => Err(e.to_string()),
        },
        elapsed_ms: started.elapsed().as_millis(),
    };
    (call, result)
}

/// `reply` with the placeholders of the secrets `model` withholds mapped
/// back to their values (see [`crate::secrets`]): what a reply's edits are
/// read from, so a file keeps its secrets byte for byte.
pub fn restore_secrets(model: &dyn crate::llm::ChatModel, reply: &str) -> String {
    match model.withheld() {
        Some(secrets) => secrets.restore(reply),
        None => reply.to_string(),
    }
}

/// Reads a file of the code under work, `rel` relative to `root`, without
/// ever following a symbolic link: `None` when the path or any folder on
/// the way is a symlink, or it is not a regular file. A committed symlink
/// to `~/.ssh/id_rsa` must never reach a prompt or the log.
pub fn read_source(root: &std::path::Path, rel: &str) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut path = root.to_path_buf();
    for part in rel.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return None;
        }
        path.push(part);
        if std::fs::symlink_metadata(&path)
            .ok()?
            .file_type()
            .is_symlink()
        {
            return None;
        }
    }
    // O_NOFOLLOW closes the gap between the check and the open.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// [`read_source`] as text (lossy UTF-8).
pub fn read_source_text(root: &std::path::Path, rel: &str) -> Option<String> {
    read_source(root, rel).map(|b| String::from_utf8_lossy(&b).into_owned())
}

#[cfg(test)]
mod read_source_tests {
    use super::*;

    #[test]
    fn symlinks_are_never_followed() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("id_rsa"), "PRIVATE KEY").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("pkg")).unwrap();
        std::fs::write(root.path().join("pkg/a.py"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("id_rsa"), root.path().join("leak.py"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("linked")).unwrap();
        std::os::unix::fs::symlink(root.path().join("pkg/a.py"), root.path().join("inner.py"))
            .unwrap();

        assert_eq!(
            read_source(root.path(), "pkg/a.py").as_deref(),
            Some(&b"x = 1\n"[..])
        );
        assert_eq!(read_source(root.path(), "leak.py"), None);
        assert_eq!(read_source(root.path(), "linked/id_rsa"), None);
        // Even a link that stays inside is not followed: one rule, no judgement.
        assert_eq!(read_source(root.path(), "inner.py"), None);
        assert_eq!(read_source(root.path(), "../x.py"), None);
        assert_eq!(read_source(root.path(), "pkg"), None);
    }
}
