//! The guard on replies that loop and on replies that repeat for a reason.

use super::*;

/// Feeds `text` in pieces of `piece` bytes (at char boundaries); the
/// repetition found, if any.
fn streamed(text: &str, piece: usize) -> Option<Repetition> {
    let mut guard = RepetitionGuard::default();
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = piece.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        if let Some(found) = guard.feed(&rest[..end]) {
            return Some(found.clone());
        }
        rest = &rest[end..];
    }
    guard.settle().cloned()
}

/// Neither fed in small pieces, nor in large ones, nor whole is it cut.
fn assert_never_cut(text: &str) {
    for piece in [1, 7, 64, 500, text.len().max(1)] {
        assert_eq!(streamed(text, piece), None, "cut in pieces of {piece}");
    }
    assert_eq!(RepetitionGuard::find_in(text), None);
}

const PREAMBLE: &str =
    "I will fix the tokenizer.\n\n```diff\n--- a/tok.py\n+++ b/tok.py\n@@ -1,3 +1,4 @@\n";

#[test]
fn the_same_span_on_one_line_is_cut_soon_after_the_loop_starts() {
    let unit = "import test_tokenize_is_case_insensitive; ";
    let text = format!("{PREAMBLE}+{}", unit.repeat(400));
    let found = streamed(&text, 5).expect("a loop");
    assert_eq!(found.start, PREAMBLE.len() + 1, "{found:?}");
    assert_eq!(found.unit, unit);
    // Found within a few checks of the span it needs, not at the end.
    let looped = found.seen - found.start;
    assert!(
        (WORDS_SPAN..WORDS_SPAN + 2 * unit.len() + 64).contains(&looped),
        "{looped} bytes of the loop read"
    );
}

#[test]
fn a_repeated_line_and_a_repeated_block_are_cut() {
    let line = "+    return tokens.lower()\n";
    let found = streamed(&format!("{PREAMBLE}{}", line.repeat(200)), 11).expect("a loop");
    assert_eq!(found.unit, "+    return tokens.lower()");
    assert!(found.seen - found.start < 2 * WORDS_SPAN, "{found:?}");

    let block = "+def helper():\n+    \"\"\"Help.\"\"\"\n+    return helper()\n+\n";
    let found = streamed(&format!("{PREAMBLE}{}", block.repeat(100)), 13).expect("a loop");
    assert!(found.start.abs_diff(PREAMBLE.len()) <= 1, "{found:?}");
    assert!(found.seen - found.start < 2 * WORDS_SPAN, "{found:?}");
}

#[test]
fn lines_that_keep_coming_back_in_no_fixed_order_are_cut() {
    // Two lines, not periodic, never making progress.
    let (a, b) = ("+import os.path as p\n", "+from os import path\n");
    let mut text = PREAMBLE.to_string();
    for k in 0..300u32 {
        text.push_str(if k.count_ones() % 2 == 0 { a } else { b });
    }
    let found = streamed(&text, 17).expect("a loop");
    assert!(found.seen - found.start < 2 * WORDS_SPAN, "{found:?}");
}

#[test]
fn endless_blank_lines_are_cut_later_than_words() {
    let text = format!("{PREAMBLE}+x = 1\n{}", "\n".repeat(10_000));
    let found = streamed(&text, 64).expect("a loop");
    let looped = found.seen - found.start;
    assert!(
        (FILLER_SPAN..FILLER_SPAN + 200).contains(&looped),
        "{looped}"
    );
    let spaces = format!("{PREAMBLE}+x = 1{}", " ".repeat(10_000));
    assert!(streamed(&spaces, 3).is_some());
}

#[test]
fn a_table_of_similar_lines_is_not_cut() {
    let mut text = PREAMBLE.to_string();
    for k in 0..400 {
        text.push_str(&format!("+    ({k}, {}, \"row {k}\"),\n", k * k));
    }
    text.push_str("```\n");
    assert_never_cut(&text);
}

#[test]
fn test_names_with_different_numbers_are_not_cut() {
    let mut text = PREAMBLE.to_string();
    for k in 0..150 {
        text.push_str(&format!(
            "+def test_tokenize_case_{k}():\n+    assert tokenize(\"Word{k}\") == [\"word{k}\"]\n+\n+\n"
        ));
    }
    assert_never_cut(&text);
}

#[test]
fn a_long_run_of_blank_ish_lines_in_a_fixture_is_not_cut() {
    let mut text = PREAMBLE.to_string();
    text.push_str("+DATA = \"\"\"\n");
    for k in 0..300 {
        text.push_str(match k % 7 {
            0 => "+#\n",
            3 => "+    \n",
            _ => "+\n",
        });
    }
    text.push_str("+\"\"\"\n");
    // A matrix of zeros, rows alike: no letter in them.
    for _ in 0..60 {
        text.push_str("+    [0, 0, 0, 0, 0, 0, 0, 0],\n");
    }
    text.push_str("```\n");
    assert_never_cut(&text);
}

#[test]
fn a_few_identical_lines_and_a_diff_said_twice_are_not_cut() {
    let mut text = PREAMBLE.to_string();
    text.push_str(&"+    self.assertTrue(ok)\n".repeat(12));
    let diff = "-    return a+b\n+    return a + b\n";
    text.push_str(&format!("{diff}\nThe same diff again:\n{diff}"));
    assert_never_cut(&text);
}

#[test]
fn only_the_end_of_a_long_reply_is_kept() {
    let mut guard = RepetitionGuard::default();
    for k in 0..5_000 {
        assert!(guard
            .feed(&format!("+    value_{k} = compute({k})\n"))
            .is_none());
    }
    assert!(guard.tail.len() <= 2 * KEEP + 64, "{}", guard.tail.len());
    let found = guard
        .feed(&"+    value = compute(0)\n".repeat(100))
        .cloned()
        .expect("a loop after a long reply");
    assert!(found.start > 5_000 * 20, "offsets count what was dropped");
}

#[test]
fn multibyte_text_is_read_at_char_boundaries() {
    let text = format!("{PREAMBLE}+# é{}", "日本語のテキスト。".repeat(200));
    let found = streamed(&text, 1).expect("a loop");
    assert!(text.is_char_boundary(found.start));
    assert_eq!(found.unit, "日本語のテキスト。");
}
