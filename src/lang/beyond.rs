//! What swarm checks of a language's code beyond the language's own suite:
//! the behaviour check (the changed module's functions run at the best
//! state and as changed, compared) and the Tester (generated and held-out
//! tests). A language gives them through [`Language::beyond_suite`];
//! Python is the first that does (its probe and pytest tests run through
//! `tools`). For a language without them the answer is an honest
//! "not available", which the summary states per file
//! ([`not_available`]), never a silent pass.

use super::Language;

/// The checks beyond the suite for one language's files.
pub trait Beyond: Sync {
    /// Whether `rel` (target-relative) is a module these checks can load
    /// and run: for Python an importable module (not a test, a conftest,
    /// `setup.py` or `__main__.py`).
    fn is_module(&self, rel: &str) -> bool;
}

/// Whether the behaviour check and the Tester reach `rel`: its language
/// has them and `rel` is a module they can load.
pub fn checks(rel: &str) -> bool {
    super::of(rel)
        .and_then(|l| l.beyond_suite())
        .is_some_and(|b| b.is_module(rel))
}

/// The language of `rel` when swarm has no behaviour check or Tester for
/// it (`None` for a file of a language that has them, or of none).
pub fn not_available(rel: &str) -> Option<&'static dyn Language> {
    super::of(rel).filter(|l| l.beyond_suite().is_none())
}
