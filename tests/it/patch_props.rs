//! Property tests of the patch engine: diffs made with `similar` and then
//! mangled the way models mangle them apply back to exactly the intended
//! file; on files full of repeated lines a diff applies to the right place
//! or not at all; the parser never panics on arbitrary input.

use proptest::prelude::*;
use similar::TextDiff;
use swarm::patch::{apply, parse_reply, EditOp, PatchError, ReplyContext};

/// One generated source line.
#[derive(Clone, Debug)]
struct Src {
    indent: usize,
    template: usize,
    blank_after: bool,
    trailing_ws: bool,
}

/// Python-like lines; with `unique`, every non-blank line is distinct.
fn render(src: &[Src], unique: bool) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, s) in src.iter().enumerate() {
        let n = if unique { i } else { s.template % 2 };
        let body = match s.template {
            0 => format!("x{n} = compute({n})"),
            1 => format!("if x{n} > {n}:"),
            2 => format!("return total_{n}"),
            3 => format!("def step_{n}(a, b):"),
            4 => format!("for item_{n} in items:"),
            _ => format!("log(\"é{n} ✓\")"),
        };
        let ws = if s.trailing_ws { "  " } else { "" };
        lines.push(format!("{}{body}{ws}", "    ".repeat(s.indent)));
        if s.blank_after && unique {
            lines.push(String::new());
        }
    }
    lines
}

fn src_line(templates: usize) -> impl Strategy<Value = Src> {
    (
        0..3usize,
        0..templates,
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(indent, template, blank_after, trailing_ws)| Src {
            indent,
            template,
            blank_after,
            trailing_ws,
        })
}

/// One edit: at a relative position, remove some lines, insert some.
#[derive(Clone, Debug)]
struct Edit {
    at: f64,
    remove: usize,
    insert: usize,
}

fn edit() -> impl Strategy<Value = Edit> {
    (0.0..1.0f64, 0..3usize, 0..3usize)
        .prop_filter("changes something", |(_, r, i)| r + i > 0)
        .prop_map(|(at, remove, insert)| Edit { at, remove, insert })
}

/// Applies the edits to non-blank lines; new lines are unique.
fn edited(lines: &[String], edits: &[Edit]) -> Vec<String> {
    let mut out = lines.to_vec();
    let mut positions: Vec<(usize, &Edit)> = edits
        .iter()
        .map(|e| ((e.at * lines.len() as f64) as usize, e))
        .collect();
    positions.sort_by_key(|(p, _)| std::cmp::Reverse(*p));
    let mut fresh = 0;
    let mut last_start = usize::MAX;
    for (pos, e) in positions {
        let pos = pos.min(out.len());
        let end = (pos + e.remove).min(out.len()).min(last_start);
        if pos > end || out[pos..end].iter().any(|l| l.trim().is_empty()) {
            continue;
        }
        let indent = out
            .get(pos)
            .map(|l| l.len() - l.trim_start().len())
            .unwrap_or(0);
        let new: Vec<String> = (0..e.insert)
            .map(|_| {
                fresh += 1;
                format!("{}y_{fresh}_{pos} = fresh({fresh})", " ".repeat(indent))
            })
            .collect();
        out.splice(pos..end, new);
        last_start = pos;
    }
    out
}

/// Joins lines with LF, with or without a final newline.
fn join(lines: &[String], final_newline: bool) -> String {
    let mut text = lines.join("\n");
    if final_newline && !lines.is_empty() {
        text.push('\n');
    }
    text
}

/// The ways a model mangles a diff.
#[derive(Clone, Copy, Debug)]
enum Mangle {
    None,
    NoHeaderNumbers,
    WrongNumbers,
    WrongCounts,
    ContextLosesTrailingWs,
    ContextGainsTrailingWs,
    ContextLosesMarker,
    BlankContextWithoutSpace,
    Reindented,
    WrongFirstContext,
}

const MANGLES: [Mangle; 10] = [
    Mangle::None,
    Mangle::NoHeaderNumbers,
    Mangle::WrongNumbers,
    Mangle::WrongCounts,
    Mangle::ContextLosesTrailingWs,
    Mangle::ContextGainsTrailingWs,
    Mangle::ContextLosesMarker,
    Mangle::BlankContextWithoutSpace,
    Mangle::Reindented,
    Mangle::WrongFirstContext,
];

/// Rewrites a hunk header's numbers.
fn header(line: &str, mangle: Mangle) -> String {
    let nums: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect();
    match (mangle, nums.as_slice()) {
        (Mangle::NoHeaderNumbers, _) => "@@ @@".to_string(),
        (Mangle::WrongNumbers, [a, b, c, d]) => format!("@@ -{},{b} +{},{d} @@", a + 17, c + 23),
        (Mangle::WrongCounts, [a, b, c, d]) => format!("@@ -{a},{} +{c},{} @@", b + 2, d + 5),
        _ => line.to_string(),
    }
}

/// Mangles the body lines of a unified diff.
fn mangle(diff: &str, how: Mangle, pick: &[bool]) -> String {
    let mut out = Vec::new();
    let mut first_context_done = false;
    for (i, line) in diff.lines().enumerate() {
        let chosen = pick.get(i % pick.len().max(1)).copied().unwrap_or(true);
        if line.starts_with("---") || line.starts_with("+++") {
            out.push(line.to_string());
            continue;
        }
        if line.starts_with("@@") {
            first_context_done = false;
            out.push(header(line, how));
            continue;
        }
        let is_context = line.starts_with(' ');
        let body = line.get(1..).unwrap_or("");
        let marker = &line[..line.len().min(1)];
        let new = match how {
            Mangle::ContextLosesTrailingWs if is_context => line.trim_end().to_string(),
            Mangle::ContextGainsTrailingWs if is_context && chosen => format!("{line} \t"),
            Mangle::ContextLosesMarker if is_context && chosen => body.to_string(),
            Mangle::BlankContextWithoutSpace if is_context && body.trim().is_empty() => {
                String::new()
            }
            Mangle::Reindented if !line.starts_with('\\') && !body.trim().is_empty() => {
                format!("{marker}    {body}")
            }
            Mangle::WrongFirstContext if is_context && !first_context_done => {
                first_context_done = true;
                format!(" # hallucinated context {i}")
            }
            _ => line.to_string(),
        };
        if !is_context && !line.starts_with('\\') {
            first_context_done = true;
        }
        out.push(new);
    }
    out.join("\n") + "\n"
}

/// Wraps a diff the way replies do.
fn wrap(diff: &str, style: usize) -> String {
    match style {
        0 => format!("Here is the fix.\n\n```diff\n{diff}```\n\nDone."),
        1 => format!("The bug is below.\n\n{diff}\nThat is all.\n"),
        2 => format!("~~~\n{diff}~~~\n"),
        _ => format!("```\n{diff}```\n"),
    }
}

fn ctx() -> ReplyContext {
    ReplyContext {
        target_prefix: "proj".into(),
        requested: vec!["pkg/app.py".into()],
        language: swarm::lang::code_language(&["pkg/app.py".to_string()]),
    }
}

/// Parses and applies `reply` to `file` (stored as `pkg/app.py`).
fn run(reply: &str, file: &[u8]) -> Result<Vec<u8>, PatchError> {
    let edits = parse_reply(reply, &ctx())?;
    let read = |p: &str| (p == "pkg/app.py").then(|| file.to_vec());
    let outcomes = apply(&edits, &read)?;
    assert_eq!(outcomes.len(), 1, "one file changed");
    Ok(outcomes[0].after.clone().expect("the file is kept"))
}

/// The diff of `before` → `after` with headers in one of three styles.
fn make_diff(before: &str, after: &str, context: usize, paths: usize) -> String {
    let (a, b) = match paths {
        0 => ("a/pkg/app.py".to_string(), "b/pkg/app.py".to_string()),
        1 => ("pkg/app.py".to_string(), "pkg/app.py".to_string()),
        _ => (
            "a/proj/pkg/app.py".to_string(),
            "b/proj/pkg/app.py".to_string(),
        ),
    };
    TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(context)
        .header(&a, &b)
        .to_string()
}

/// Whether a mangle can be applied to this diff at all without making it
/// a different request (the trimmed-context case needs spare context).
fn mangle_fits(diff: &str, how: Mangle, context: usize) -> bool {
    match how {
        Mangle::WrongFirstContext => context == 3 && !diff.contains("\n \n"),
        _ => true,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Unique-line files: every mangled diff applies to exactly the intended
    /// bytes (CRLF, final newline and trailing whitespace kept).
    #[test]
    fn mangled_diffs_apply_to_exactly_the_intended_file(
        src in prop::collection::vec(src_line(6), 6..40),
        edits in prop::collection::vec(edit(), 1..4),
        context in 1..4usize,
        how in 0..MANGLES.len(),
        pick in prop::collection::vec(any::<bool>(), 1..6),
        style in 0..4usize,
        paths in 0..3usize,
        crlf in any::<bool>(),
        final_newline in any::<bool>(),
    ) {
        let how = MANGLES[how];
        let before_lines = render(&src, true);
        let after_lines = edited(&before_lines, &edits);
        prop_assume!(before_lines != after_lines);
        let before = join(&before_lines, final_newline);
        let after = join(&after_lines, final_newline);
        let diff = make_diff(&before, &after, context, paths);
        prop_assume!(mangle_fits(&diff, how, context));
        let reply = wrap(&mangle(&diff, how, &pick), style);
        let eol = |t: &str| if crlf { t.replace('\n', "\r\n") } else { t.to_string() };
        let got = run(&reply, eol(&before).as_bytes());
        match got {
            Ok(bytes) => prop_assert_eq!(
                String::from_utf8_lossy(&bytes).into_owned(),
                eol(&after),
                "mangle {:?}, reply:\n{}", how, reply
            ),
            Err(e) => prop_assert!(false, "mangle {:?} failed: {}\nreply:\n{}", how, e, reply),
        }
    }

    /// Files made of a few repeated lines: a diff applies exactly where it
    /// was made, or is rejected — it never lands somewhere else. (Mangles
    /// that turn it into a different valid diff, such as re-indenting it
    /// onto another existing line, are left out: no engine can tell.)
    #[test]
    fn diffs_on_repetitive_files_never_apply_to_the_wrong_place(
        src in prop::collection::vec(src_line(3), 4..30),
        edits in prop::collection::vec(edit(), 1..3),
        context in 0..4usize,
        how in prop::sample::select(vec![0usize, 1, 4, 6]),
        pick in prop::collection::vec(any::<bool>(), 1..6),
        style in 0..4usize,
    ) {
        let how = MANGLES[how];
        let before_lines = render(&src, false);
        let after_lines = edited(&before_lines, &edits);
        prop_assume!(before_lines != after_lines);
        let before = join(&before_lines, true);
        let after = join(&after_lines, true);
        let diff = make_diff(&before, &after, context, 0);
        let reply = wrap(&mangle(&diff, how, &pick), style);
        if let Ok(bytes) = run(&reply, before.as_bytes()) {
            prop_assert_eq!(
                String::from_utf8_lossy(&bytes).into_owned(),
                after,
                "applied to the wrong place; mangle {:?}, reply:\n{}", how, reply
            );
        }
    }

    /// The parser never panics, on arbitrary text or on text built from
    /// diff-like fragments; applying what it returns never panics either.
    #[test]
    fn parser_and_applier_never_panic(
        noise in prop::collection::vec(
            prop_oneof![
                Just("```diff".to_string()), Just("```".to_string()), Just("~~~".to_string()),
                Just("--- a/pkg/app.py".to_string()), Just("+++ b/pkg/app.py".to_string()),
                Just("--- /dev/null".to_string()), Just("+++ /dev/null".to_string()),
                Just("diff --git a/x b/x".to_string()), Just("new file mode 100644".to_string()),
                Just("@@ -1,2 +1,2 @@".to_string()), Just("@@ @@".to_string()), Just("@@".to_string()),
                Just("\\ No newline at end of file".to_string()), Just("FILE: app.py".to_string()),
                Just("```python".to_string()), Just("1 | x = 1".to_string()), Just(String::new()),
                "[ +\\-]?[ -~]{0,12}", "\\PC{0,16}",
            ],
            0..30,
        ),
        file in "\\PC{0,60}",
        crlf in any::<bool>(),
    ) {
        let reply = noise.join(if crlf { "\r\n" } else { "\n" });
        if let Ok(edits) = parse_reply(&reply, &ctx()) {
            let read = |_: &str| Some(file.as_bytes().to_vec());
            let _ = apply(&edits, &read);
            for edit in &edits {
                if let EditOp::Patch(hunks) = &edit.op {
                    // A hunk without markers may be a region's new text: kept
                    // when it holds something besides blank lines.
                    prop_assert!(!hunks.is_empty());
                }
            }
        }
    }

    /// Arbitrary Unicode strings never make the parser panic.
    #[test]
    fn parser_survives_arbitrary_strings(reply in "\\PC*") {
        let _ = parse_reply(&reply, &ctx());
    }
}

/// The corpus replies and files, loaded once.
fn corpus() -> &'static [super::patch_support::Case] {
    static CASES: std::sync::OnceLock<Vec<super::patch_support::Case>> = std::sync::OnceLock::new();
    CASES.get_or_init(super::patch_support::load_cases)
}

/// A random change to a reply: delete, duplicate or splice in a fragment.
#[derive(Clone, Debug)]
enum Mutation {
    Delete(usize, usize),
    Duplicate(usize, usize),
    Insert(usize, String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0..40usize).prop_map(|(a, n)| Mutation::Delete(a, n)),
        (any::<usize>(), 0..80usize).prop_map(|(a, n)| Mutation::Duplicate(a, n)),
        (
            any::<usize>(),
            prop_oneof![
                Just("\n".to_string()),
                Just("\n```\n".to_string()),
                Just("\n@@ @@\n".to_string()),
                Just("\n--- a/x.py\n+++ b/x.py\n".to_string()),
                Just("\\ No newline at end of file\n".to_string()),
                Just("\r\n".to_string()),
                Just("\u{feff}".to_string()),
                "\\PC{0,8}",
            ]
        )
            .prop_map(|(a, s)| Mutation::Insert(a, s)),
    ]
}

/// Applies mutations at char boundaries.
fn mutate(text: &str, mutations: &[Mutation]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for m in mutations {
        let len = chars.len();
        match m {
            Mutation::Delete(at, n) if len > 0 => {
                let at = at % len;
                let end = (at + n).min(len);
                chars.drain(at..end);
            }
            Mutation::Duplicate(at, n) if len > 0 => {
                let at = at % len;
                let end = (at + n).min(len);
                let piece: Vec<char> = chars[at..end].to_vec();
                chars.splice(at..at, piece);
            }
            Mutation::Insert(at, s) => {
                let at = if len == 0 { 0 } else { at % (len + 1) };
                chars.splice(at..at, s.chars());
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Corpus replies with random deletions, duplications and insertions
    /// never make the parser or the applier panic (the mutation-fuzzing
    /// twin of `fuzz/fuzz_targets/parse_reply.rs`).
    #[test]
    fn mutated_corpus_replies_never_panic(
        index in any::<usize>(),
        mutations in prop::collection::vec(mutation(), 1..8),
    ) {
        let cases = corpus();
        let case = &cases[index % cases.len()];
        let reply = mutate(&case.reply, &mutations);
        if let Ok(edits) = parse_reply(&reply, &case.ctx) {
            let read = |p: &str| case.files.get(p).cloned();
            let _ = apply(&edits, &read);
        }
    }
}
