//! Turns paths as models write them into target-relative paths. It never
//! rejects anything (`..` and absolute paths pass through, normalized to
//! `/`): the Reviewer decides what is allowed.

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

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(prefix: &str, requested: &[&str]) -> ReplyContext {
        ReplyContext {
            target_prefix: prefix.into(),
            requested: requested.iter().map(|s| s.to_string()).collect(),
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
    fn recognises_paths() {
        let c = ctx("", &[]);
        assert!(looks_like_path("ledger/report.py", &c));
        assert!(!looks_like_path("print(x)", &c));
        assert!(!looks_like_path("the file", &c));
        assert!(!looks_like_path("Here:", &c));
    }
}
