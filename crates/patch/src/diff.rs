//! Reads unified diffs out of reply lines, tolerating what models get wrong:
//! wrong or missing hunk numbers and counts, `@@ @@` and `@@ ... @@`
//! headers, hunks without any header, context lines that lost their leading
//! space, git extended headers and `\ No newline at end of file`.

use super::numbers;
use super::{Hunk, HunkLine};

/// A path as written in a diff header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RawPath {
    /// `/dev/null`: the file does not exist on this side.
    DevNull,
    /// A path with `a/`/`b/` stripped, otherwise as written.
    Path(String),
}

/// The change to one file as read from the reply, paths not yet resolved.
#[derive(Clone, Debug, Default)]
pub(crate) struct RawFileDiff {
    pub(crate) old: Option<RawPath>,
    pub(crate) new: Option<RawPath>,
    pub(crate) git_new: bool,
    pub(crate) git_deleted: bool,
    /// `rename from <path>` of git's extended header.
    pub(crate) rename_from: Option<String>,
    /// `rename to <path>` of git's extended header.
    pub(crate) rename_to: Option<String>,
    pub(crate) hunks: Vec<Hunk>,
    /// The rest of a `diff --git` line whose paths could not be read: it
    /// names something, so its hunks never fall back to the requested file.
    pub(crate) unread_git_header: Option<String>,
    /// True once `---`/`+++` lines were seen (not only `diff --git`).
    has_plain_header: bool,
}

/// How the lines were found in the reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Prose: a diff ends at the first line that cannot belong to it.
    Bare,
    /// A fenced block of unknown language: the fence delimits it.
    Fenced,
    /// A block labelled `diff`/`patch`: bare `+`/`-` lines form a hunk.
    DiffBlock,
}

/// True when the lines hold something this module can read as a diff.
pub(crate) fn looks_like_diff(lines: &[&str]) -> bool {
    lines.iter().enumerate().any(|(i, l)| {
        l.starts_with("@@") || l.starts_with("diff --git ") || is_file_header(lines, i)
    })
}

/// True when line `i` is `--- x` directly followed by `+++ y`.
fn is_file_header(lines: &[&str], i: usize) -> bool {
    lines[i].starts_with("--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "))
}

/// Lines of git's extended header, ignored except new/deleted file modes.
const GIT_EXTENDED: &[&str] = &[
    "index ",
    "old mode ",
    "new mode ",
    "similarity index ",
    "dissimilarity index ",
    "rename from ",
    "rename to ",
    "copy from ",
    "copy to ",
    "Binary files ",
];

/// Every file diff in `lines`.
pub(crate) fn parse_diffs(lines: &[&str], origin: Origin) -> Vec<RawFileDiff> {
    let mut files: Vec<RawFileDiff> = Vec::new();
    let mut current: Option<RawFileDiff> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(rest) = line.strip_prefix("diff --git ") {
            files.extend(current.take());
            current = Some(git_header(rest));
            i += 1;
            continue;
        }
        if let Some(file) = current.as_mut().filter(|f| f.hunks.is_empty()) {
            if git_extended(file, line) {
                i += 1;
                continue;
            }
        }
        if is_file_header(lines, i) {
            let reuse = current
                .as_ref()
                .is_some_and(|f| f.hunks.is_empty() && !f.has_plain_header);
            if !reuse {
                files.extend(current.take());
            }
            let file = current.get_or_insert_with(RawFileDiff::default);
            file.old = Some(header_path(&line[4..], "a/"));
            file.new = Some(header_path(&lines[i + 1][4..], "b/"));
            file.has_plain_header = true;
            i += 2;
            continue;
        }
        let hunk_header = line.starts_with("@@").then_some(line);
        let headerless_start = match &current {
            Some(f) => f.hunks.is_empty() && f.has_plain_header && is_body_line(line),
            None => origin == Origin::DiffBlock && (line.starts_with('+') || line.starts_with('-')),
        };
        if hunk_header.is_some() || headerless_start {
            let body = if hunk_header.is_some() { i + 1 } else { i };
            let (hunk, next) = parse_hunk(lines, body, hunk_header, origin);
            current
                .get_or_insert_with(RawFileDiff::default)
                .hunks
                .push(hunk);
            i = next;
            continue;
        }
        i += 1;
    }
    files.extend(current);
    files
}

/// The file diff a `diff --git <rest>` line starts.
fn git_header(rest: &str) -> RawFileDiff {
    let (old, new) = git_paths(rest);
    let unread = (old.is_none() && new.is_none() && !rest.trim().is_empty())
        .then(|| rest.trim().to_string());
    RawFileDiff {
        old,
        new,
        unread_git_header: unread,
        ..RawFileDiff::default()
    }
}

/// Reads a line of git's extended header into `file` (new and deleted
/// file modes, renames; the others are skipped): whether it was one.
fn git_extended(file: &mut RawFileDiff, line: &str) -> bool {
    if line.starts_with("new file mode") {
        file.git_new = true;
    } else if line.starts_with("deleted file mode") {
        file.git_deleted = true;
    } else if let Some(from) = line.strip_prefix("rename from ") {
        file.rename_from = Some(from.trim().to_string());
    } else if let Some(to) = line.strip_prefix("rename to ") {
        file.rename_to = Some(to.trim().to_string());
    } else {
        return GIT_EXTENDED.iter().any(|p| line.starts_with(p));
    }
    true
}

/// True for a line that starts with a diff body marker.
fn is_body_line(line: &str) -> bool {
    line.starts_with([' ', '+', '-', '\\'])
}

/// Old and new paths of a `diff --git a/x b/x` line (or `x y` without the
/// prefixes, when it is exactly two words).
fn git_paths(rest: &str) -> (Option<RawPath>, Option<RawPath>) {
    let rest = rest.trim();
    if let Some(split) = rest.rfind(" b/") {
        return (
            Some(header_path(&rest[..split], "a/")),
            Some(header_path(&rest[split + 1..], "b/")),
        );
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    match words.as_slice() {
        [old, new] => (Some(header_path(old, "a/")), Some(header_path(new, "b/"))),
        _ => (None, None),
    }
}

/// The path of a `---`/`+++` header line's remainder.
fn header_path(rest: &str, side_prefix: &str) -> RawPath {
    let mut path = rest.split('\t').next().unwrap_or("").trim();
    if let Some(cut) = path.find("  ") {
        path = &path[..cut];
    }
    let path = path
        .trim_matches(|c| c == '`' || c == '"' || c == '\'' || c == '*')
        .replace('\\', "/");
    if path == "/dev/null" || path == "dev/null" {
        return RawPath::DevNull;
    }
    let path = path.strip_prefix(side_prefix).unwrap_or(&path);
    RawPath::Path(path.to_string())
}

/// Numbers of a hunk header; any of them may be missing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct HeaderNumbers {
    old_start: Option<usize>,
    old_count: Option<usize>,
    new_count: Option<usize>,
}

/// Reads `-a,b` and `+c,d` from a header; a missing count means 1.
fn header_numbers(header: &str) -> HeaderNumbers {
    let inner = header.trim_start_matches('@');
    let inner = inner.split("@@").next().unwrap_or("");
    let mut numbers = HeaderNumbers::default();
    for token in inner.split_whitespace() {
        let (sign, range) = token.split_at(token.chars().next().map_or(0, char::len_utf8));
        let mut parts = range.splitn(2, ',');
        let start = parts.next().and_then(|s| s.parse::<usize>().ok());
        let count = match parts.next() {
            Some(c) => c.parse::<usize>().ok(),
            None => start.map(|_| 1),
        };
        match (sign, start) {
            ("-", Some(s)) => {
                numbers.old_start = Some(s);
                numbers.old_count = count;
            }
            ("+", Some(_)) => numbers.new_count = count,
            _ => {}
        }
    }
    numbers
}

/// True when line `j` starts something that ends the current hunk.
fn ends_hunk(lines: &[&str], j: usize) -> bool {
    let line = lines[j];
    line.starts_with("@@") || line.starts_with("diff --git ") || is_file_header(lines, j)
}

/// Reads one hunk body from `start`; returns it and the next line index.
/// A hunk none of whose lines has a `+` or `-` marker and some of whose
/// lines start with code (no marker space): its lines were written with no
/// markers at all, so a leading space is indentation, not a marker.
fn unmark(body: &mut [HunkLine], raw: &[&str]) {
    let marked = body.iter().any(|l| !matches!(l, HunkLine::Context(_)));
    let code_first = |l: &&&str| {
        l.chars()
            .next()
            .is_some_and(|c| !c.is_whitespace() && c != '\\')
    };
    if marked || !raw.iter().any(|l| code_first(&l)) {
        return;
    }
    let texts = raw.iter().filter(|l| !l.starts_with('\\'));
    for (line, text) in body.iter_mut().zip(texts) {
        *line = HunkLine::Context(text.to_string());
    }
}

fn parse_hunk(lines: &[&str], start: usize, header: Option<&str>, origin: Origin) -> (Hunk, usize) {
    let numbers = header.map(header_numbers).unwrap_or_default();
    let counts = numbers.old_count.zip(numbers.new_count);
    let mut body: Vec<HunkLine> = Vec::new();
    let (mut old_no_eol, mut new_no_eol) = (false, false);
    let (mut old_seen, mut new_seen) = (0usize, 0usize);
    let mut j = start;
    while j < lines.len() {
        if ends_hunk(lines, j) {
            break;
        }
        let line = lines[j];
        if origin == Origin::Bare {
            let satisfied = counts.is_some_and(|(o, n)| old_seen >= o && new_seen >= n);
            let blank = line.trim().is_empty();
            let prose = || {
                next_is_prose(lines, j)
                    && !counts.is_some_and(|c| counts_fit(lines, j, (old_seen, new_seen), c))
            };
            if (blank && (satisfied || prose()))
                || (!blank && !is_body_line(line) && (counts.is_none() || satisfied))
            {
                break;
            }
        }
        let item = match line.chars().next() {
            Some('\\') => {
                match body.last() {
                    Some(HunkLine::Context(_)) => {
                        old_no_eol = true;
                        new_no_eol = true;
                    }
                    Some(HunkLine::Remove(_)) => old_no_eol = true,
                    Some(HunkLine::Add(_)) => new_no_eol = true,
                    None => {}
                }
                None
            }
            Some(' ') => Some(HunkLine::Context(line[1..].to_string())),
            Some('+') => Some(HunkLine::Add(line[1..].to_string())),
            Some('-') => Some(HunkLine::Remove(line[1..].to_string())),
            _ => Some(HunkLine::Context(line.to_string())),
        };
        if let Some(item) = item {
            match item {
                HunkLine::Context(_) => {
                    old_seen += 1;
                    new_seen += 1;
                }
                HunkLine::Remove(_) => old_seen += 1,
                HunkLine::Add(_) => new_seen += 1,
            }
            body.push(item);
        }
        j += 1;
    }
    unmark(&mut body, &lines[start..j]);
    while matches!(body.last(), Some(HunkLine::Context(t)) if t.trim().is_empty()) {
        body.pop();
    }
    numbers::strip_from_hunk(&mut body);
    let old_len = body
        .iter()
        .filter(|l| !matches!(l, HunkLine::Add(_)))
        .count();
    let new_len = body
        .iter()
        .filter(|l| !matches!(l, HunkLine::Remove(_)))
        .count();
    let credible = counts.is_some_and(|(o, n)| o == old_len && n == new_len);
    let hunk = Hunk {
        header: header.map(|h| h.trim_end().to_string()),
        old_start: numbers.old_start.filter(|_| credible),
        lines: body,
        old_no_eol,
        new_no_eol,
    };
    (hunk, j)
}

/// Whether reading `lines` from `j` as hunk body (a line without a marker
/// as context, as a model that dropped context markers writes it) reaches
/// the header's counts `(old, new)` exactly, from `seen` lines so far,
/// before anything that ends a hunk and with a line that changes
/// something: then a blank line at `j` is the hunk's, not the end of it.
fn counts_fit(lines: &[&str], j: usize, seen: (usize, usize), (old, new): (usize, usize)) -> bool {
    let (mut o, mut n) = seen;
    let mut changes = false;
    for (k, line) in lines.iter().enumerate().skip(j) {
        if ends_hunk(lines, k) {
            return false;
        }
        match line.chars().next() {
            Some('\\') => continue,
            Some('+') => {
                n += 1;
                changes = true;
            }
            Some('-') => {
                o += 1;
                changes = true;
            }
            _ => {
                o += 1;
                n += 1;
            }
        }
        if o == old && n == new {
            return changes;
        }
        if o > old || n > new {
            return false;
        }
    }
    false
}

/// In prose, true when the paragraph after the blank line `j` is not diff
/// body: it has no line with a diff marker other than markdown bullets.
fn next_is_prose(lines: &[&str], j: usize) -> bool {
    let mut paragraph = lines[j + 1..]
        .iter()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty());
    !paragraph.any(|line| is_body_line(line) && !is_bullet(line))
}

/// A markdown bullet such as `- Fixed the bug` or `- `x` is now checked`.
fn is_bullet(line: &str) -> bool {
    line.strip_prefix("- ")
        .or_else(|| line.strip_prefix("+ "))
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c.is_uppercase() || matches!(c, '`' | '*' | '['))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<&str> {
        text.lines().collect()
    }

    #[test]
    fn reads_numbers_from_every_header_shape() {
        let n = header_numbers("@@ -3,4 +3,5 @@ def f():");
        assert_eq!(
            n,
            HeaderNumbers {
                old_start: Some(3),
                old_count: Some(4),
                new_count: Some(5)
            }
        );
        assert_eq!(header_numbers("@@ @@"), HeaderNumbers::default());
        assert_eq!(header_numbers("@@ ... @@"), HeaderNumbers::default());
        assert_eq!(header_numbers("@@ -7 +7 @@").old_count, Some(1));
    }

    #[test]
    fn git_header_paths_and_modes() {
        let text = "diff --git a/pkg/x.py b/pkg/x.py\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/pkg/x.py\n@@ -0,0 +1 @@\n+a\n";
        let files = parse_diffs(&lines(text), Origin::Fenced);
        assert_eq!(files.len(), 1);
        assert!(files[0].git_new);
        assert_eq!(files[0].old, Some(RawPath::DevNull));
        assert_eq!(files[0].new, Some(RawPath::Path("pkg/x.py".into())));
        assert_eq!(files[0].hunks[0].lines, vec![HunkLine::Add("a".into())]);
    }

    #[test]
    fn git_headers_without_prefixes_still_name_their_paths() {
        let text = "diff --git .git/hooks/post-merge .git/hooks/post-merge\n@@ @@\n-a\n+b\n";
        let files = parse_diffs(&lines(text), Origin::Fenced);
        assert_eq!(
            files[0].new,
            Some(RawPath::Path(".git/hooks/post-merge".into()))
        );
        let text = "diff --git one two three\n@@ @@\n-a\n+b\n";
        let files = parse_diffs(&lines(text), Origin::Fenced);
        assert_eq!(files[0].old, None);
        assert_eq!(files[0].unread_git_header.as_deref(), Some("one two three"));
    }

    #[test]
    fn bare_diff_stops_at_prose_after_blank_line() {
        let text = "--- x.py\n+++ x.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\n- Fixed the bug\n";
        let files = parse_diffs(&lines(text), Origin::Bare);
        assert_eq!(files[0].hunks.len(), 1);
        assert_eq!(files[0].hunks[0].lines.len(), 3);
    }

    #[test]
    fn bare_hunk_without_context_markers_is_read_to_its_counts() {
        // Context lines lost their leading space, the first one is blank.
        let text = "The bug is below.\n\n--- a/pkg/app.py\n+++ b/pkg/app.py\n@@ -23,6 +23,7 @@\n\nx22 = compute(22)\n\n+y_1 = fresh(1)\nx23 = compute(23)\nx24 = compute(24)\n\nThat is all.\n";
        let files = parse_diffs(&lines(text), Origin::Bare);
        assert_eq!(files.len(), 1);
        let hunk = &files[0].hunks[0];
        assert!(hunk.lines.contains(&HunkLine::Add("y_1 = fresh(1)".into())));
        assert!(hunk
            .lines
            .contains(&HunkLine::Context("x24 = compute(24)".into())));
    }

    #[test]
    fn removed_line_starting_with_dashes_is_not_a_header() {
        let text = "@@ @@\n--- old comment\n+++ new comment\n";
        // `--- x` directly followed by `+++ y` starts the next file.
        let files = parse_diffs(&lines(text), Origin::Fenced);
        assert_eq!(files.len(), 2);
        let text = "@@ @@\n--- old comment\n+new\n";
        let files = parse_diffs(&lines(text), Origin::Fenced);
        assert_eq!(
            files[0].hunks[0].lines,
            vec![
                HunkLine::Remove("-- old comment".into()),
                HunkLine::Add("new".into())
            ]
        );
    }
}
