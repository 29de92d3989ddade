//! Replies recorded from a real small model (Qwen2.5-Coder-1.5B-Instruct,
//! Q4_K_M, served by llama.cpp) to swarm's Fixer, kept verbatim under
//! `tests/real/`, applied to the files they were written for.

use swarm_patch::{apply, apply_partial, parse_reply, CodeLanguage, ReplyContext};

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/real/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn ctx(file: &str) -> ReplyContext {
    ReplyContext {
        target_prefix: String::new(),
        requested: vec![file.to_string()],
        language: CodeLanguage {
            name: "Python".into(),
            fences: ["", "python", "py"].iter().map(|s| s.to_string()).collect(),
        },
    }
}

#[test]
fn an_invented_docstring_around_a_line_rewritten_as_itself_changes_nothing() {
    // The model's context starts with a module docstring the file does not
    // have and its one change writes `if b == 0:` as itself.
    let file = fixture("gcd.py");
    let edits = parse_reply(&fixture("gcd.reply.md"), &ctx("gcd.py")).expect("parses");
    let read = |p: &str| (p == "gcd.py").then(|| file.as_bytes().to_vec());
    let outcomes = apply(&edits, &read).expect("the hunk is found past the invented lines");
    assert_eq!(outcomes[0].after.as_deref(), Some(file.as_bytes()));
}

#[test]
fn an_addition_the_file_already_has_is_not_made_again() {
    // Hunk 2 adds `depth += 1` where the file already has it (with the
    // model's indentation off by a level); hunks 1 and 3 hold lines the
    // file does not have (an invented docstring, code from the model's own
    // plan) and cannot be placed.
    let file = fixture("parens.py");
    let edits = parse_reply(
        &fixture("parens-1.reply.md"),
        &ctx("is_valid_parenthesization.py"),
    )
    .expect("parses");
    let read = |p: &str| (p == "is_valid_parenthesization.py").then(|| file.as_bytes().to_vec());
    let error = apply(&edits, &read).expect_err("two hunks fit nowhere");
    assert!(error.to_string().contains("2 problems"), "{error}");
    assert_eq!(file.matches("depth += 1").count(), 1);
    if let Ok(partial) = apply_partial(&edits, &read) {
        let after =
            String::from_utf8(partial.outcomes[0].after.clone().expect("kept")).expect("utf-8");
        assert_eq!(after.matches("depth += 1").count(), 1, "{after}");
    }
}

#[test]
fn an_addition_below_an_invented_docstring_is_applied_once_where_it_was_written() {
    let file = fixture("parens.py");
    let edits = parse_reply(
        &fixture("parens-2.reply.md"),
        &ctx("is_valid_parenthesization.py"),
    )
    .expect("parses");
    let read = |p: &str| (p == "is_valid_parenthesization.py").then(|| file.as_bytes().to_vec());
    let partial = apply_partial(&edits, &read).expect("the first hunk applies");
    let after = String::from_utf8(partial.outcomes[0].after.clone().expect("kept")).expect("utf-8");
    assert!(
        after.starts_with(
            "def is_valid_parenthesization(parens):\n    if parens.endswith(')'):\n        return True\n    depth = 0\n"
        ),
        "{after}"
    );
    assert_eq!(after.matches("endswith").count(), 1, "{after}");
}

#[test]
fn a_diff_whose_one_change_rewrites_a_line_as_itself_changes_nothing() {
    // Asked for a diff after sending `to_base.py` back whole and unchanged,
    // the model wrote a hunk (with `diff --git` and `index` lines, an old
    // start one line off) whose only change is `def to_base(num, b):` as
    // itself: nothing to apply, and nothing applied.
    let file = fixture("to_base.py");
    let edits = parse_reply(&fixture("to_base-noop-diff.reply.md"), &ctx("to_base.py"));
    let read = |p: &str| (p == "to_base.py").then(|| file.as_bytes().to_vec());
    let unchanged = match edits {
        Err(_) => true,
        Ok(edits) => match apply(&edits, &read) {
            Ok(outcomes) => outcomes
                .iter()
                .all(|o| o.after.as_deref() == Some(file.as_bytes())),
            Err(_) => true,
        },
    };
    assert!(unchanged, "a line rewritten as itself must change nothing");
}

#[test]
fn a_whole_file_sent_back_as_it_was_reads_as_the_same_text() {
    // The reply swarm's Fixer catches as a copy (and asks again for a diff):
    // the file whole, every line as it was.
    let file = fixture("to_base.py");
    let edits = parse_reply(&fixture("to_base-copy.reply.md"), &ctx("to_base.py")).expect("parses");
    match &edits[..] {
        [edit] => match &edit.op {
            swarm_patch::EditOp::Replace(text) => assert_eq!(text.trim_end(), file.trim_end()),
            other => panic!("a whole file, not {other:?}"),
        },
        _ => panic!("one edit: {edits:?}"),
    }
}
