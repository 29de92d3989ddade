//! Turns paths as models write them into target-relative paths. It never
//! rejects anything (`..` and absolute paths pass through, normalized to
//! `/`): the Reviewer decides what is allowed. What it must never do is
//! drop a path the reply names in favour of another one: where a reply
//! names a path that [`is_unsafe`], the parser keeps that path, so the
//! Reviewer refuses the reply naming it (never a silent fallback to the
//! requested file).

use super::ReplyContext;

/// Resolves a path from the reply against what the prompt asked about.
pub(crate) fn resolve(raw: &str, ctx: &ReplyContext) -> String {
    let mut path = raw
        .trim()
        .trim_matches(|c| c == '`' || c == '"' || c == '\'' || c == '*')
        .replace('\\', "/");
    while let Some(rest) = path.strip_prefix("./") {
        path = rest.to_string();
    }
    if ctx.requested.contains(&path) {
        return path;
    }
    let prefix = ctx.target_prefix.trim_matches('/').replace('\\', "/");
    if !prefix.is_empty() {
        if let Some(rest) = path.strip_prefix(&format!("{prefix}/")) {
            path = rest.to_string();
            if ctx.requested.contains(&path) {
                return path;
            }
        }
    }
    if !path.contains('/') {
        let mut same_name = ctx
            .requested
            .iter()
            .filter(|r| r.rsplit('/').next() == Some(path.as_str()));
        if let (Some(only), None) = (same_name.next(), same_name.next()) {
            return only.clone();
        }
    }
    path
}

/// True when `candidate` reads as a file path (no spaces, has a file name
/// with an extension or names a requested file).
pub(crate) fn looks_like_path(candidate: &str, ctx: &ReplyContext) -> bool {
    let c = candidate.trim();
    if c.is_empty() || c.contains(char::is_whitespace) || c.ends_with('/') {
        return false;
    }
    if ctx
        .requested
        .iter()
        .any(|r| r == c || r.ends_with(&format!("/{c}")))
    {
        return true;
    }
    let name = c.rsplit(['/', '\\']).next().unwrap_or(c);
    match name.rsplit_once('.') {
        Some((stem, ext)) => {
            !ext.is_empty()
                && ext.len() <= 5
                && ext.chars().all(|ch| ch.is_ascii_alphanumeric())
                && !stem.is_empty()
                && !stem.contains('(')
        }
        None => false,
    }
}

/// True when `candidate` names a place even if it is no ordinary file
/// name: a path with a folder (`.git/hooks/post-merge`, `/etc/passwd`), a
/// dot-file or `..`. A label such as `FILE: x` followed by one of these
/// names that place; it is never taken for the requested file.
pub(crate) fn looks_like_location(candidate: &str, ctx: &ReplyContext) -> bool {
    let c = candidate.trim();
    if c.is_empty() || c.contains(char::is_whitespace) {
        return false;
    }
    let only_dots = c.chars().all(|ch| ch == '.');
    looks_like_path(c, ctx)
        || c.contains(['/', '\\'])
        || c == ".."
        || (c.starts_with('.') && !only_dots)
}

/// True when a resolved path can never be a file of the project: empty,
/// absolute (`/x`, `C:/x`, `~/x`), leaving through `..`, or inside a `.git`
/// folder (any case). The Reviewer has the final word; the parser uses this
/// to keep such a path rather than fall back to another one.
pub(crate) fn is_unsafe(path: &str) -> bool {
    let bytes = path.as_bytes();
    path.is_empty()
        || path.starts_with('/')
        || path.starts_with('~')
        || (bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic())
        || path
            .split('/')
            .any(|part| part == ".." || part.eq_ignore_ascii_case(".git"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(prefix: &str, requested: &[&str]) -> ReplyContext {
        ReplyContext {
            target_prefix: prefix.into(),
            requested: requested.iter().map(|s| s.to_string()).collect(),
            language: crate::CodeLanguage::python(),
        }
    }

    #[test]
    fn strips_target_prefix_and_dot_slash() {
        let c = ctx("proj", &["ledger/report.py"]);
        assert_eq!(resolve("proj/ledger/report.py", &c), "ledger/report.py");
        assert_eq!(resolve("./ledger/report.py", &c), "ledger/report.py");
        assert_eq!(resolve("`ledger\\report.py`", &c), "ledger/report.py");
    }

    #[test]
    fn bare_name_resolves_to_the_only_file_with_that_name() {
        let c = ctx("", &["ledger/report.py", "ledger/util.py"]);
        assert_eq!(resolve("report.py", &c), "ledger/report.py");
        let c = ctx("", &["a/x.py", "b/x.py"]);
        assert_eq!(resolve("x.py", &c), "x.py");
    }

    #[test]
    fn passes_dotdot_and_absolute_paths_through() {
        let c = ctx("proj", &["x.py"]);
        assert_eq!(resolve("../etc/passwd", &c), "../etc/passwd");
        assert_eq!(resolve("/etc/passwd", &c), "/etc/passwd");
        assert_eq!(resolve("C:\\x\\y.py", &c), "C:/x/y.py");
    }

    #[test]
    fn keeps_a_requested_path_that_starts_like_the_prefix() {
        let c = ctx("pkg", &["pkg/x.py"]);
        assert_eq!(resolve("pkg/x.py", &c), "pkg/x.py");
    }

    #[test]
    fn locations_include_folders_dot_files_and_dotdot() {
        let c = ctx("", &["stats.py"]);
        for yes in [
            ".git/hooks/post-merge",
            "/etc/passwd",
            "..",
            ".env",
            "a\\b",
            "stats.py",
        ] {
            assert!(looks_like_location(yes, &c), "{yes}");
        }
        for no in ["post-merge", "the", "...", "", "two words/x"] {
            assert!(!looks_like_location(no, &c), "{no}");
        }
    }

    #[test]
    fn unsafe_paths() {
        for yes in [
            "",
            "/etc/passwd",
            "C:/x.py",
            "~/x.py",
            "../x.py",
            "a/../../x.py",
            ".git/hooks/post-merge",
            "sub/.GIT/config",
        ] {
            assert!(is_unsafe(yes), "{yes}");
        }
        for no in ["stats.py", "pkg/.gitignore", "a..b.py", "x/.github/ci.yml"] {
            assert!(!is_unsafe(no), "{no}");
        }
    }

    #[test]
    fn recognises_paths() {
        let c = ctx("", &[]);
        assert!(looks_like_path("ledger/report.py", &c));
        assert!(!looks_like_path("print(x)", &c));
        assert!(!looks_like_path("the file", &c));
        assert!(!looks_like_path("Here:", &c));
    }
}
