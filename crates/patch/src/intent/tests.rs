//! The reply shapes small models write, read for what they mean — and the
//! readings refused. Each file and reply is shaped like a real one (see
//! `tests/it/patch_real.rs` for replies recorded from a 1.5B model).

use crate::{apply, apply_partial, parse_reply, EditOp, FileEdit, PatchError, ReplyContext};

const WORDFREQ: &str = "\"\"\"Count the words of a text.\"\"\"


def words(text):
    return text.split(\" \")


def count(text):
    counts = {}
    for word in words(text):
        counts[word] = counts.get(word, 0) + 1
    return counts


def top(text, n):
    ranked = sorted(count(text).items(), key=lambda item: item[1])
    return [word for word, _ in ranked[:n]]
";

fn ctx() -> ReplyContext {
    ReplyContext {
        target_prefix: String::new(),
        requested: vec!["wordfreq.py".into()],
        language: crate::CodeLanguage::python(),
    }
}

fn edits(reply: &str) -> Vec<FileEdit> {
    parse_reply(reply, &ctx()).expect("the reply parses")
}

fn applied(file: &str, reply: &str) -> Result<String, PatchError> {
    let read = |p: &str| (p == "wordfreq.py").then(|| file.as_bytes().to_vec());
    let outcomes = apply(&edits(reply), &read)?;
    Ok(String::from_utf8(outcomes[0].after.clone().expect("kept")).expect("utf-8"))
}

#[test]
fn a_context_line_holding_the_new_text_changes_that_line() {
    let reply = "```diff
--- a/wordfreq.py
+++ b/wordfreq.py
@@ -15,3 +15,3 @@
 def top(text, n):
     ranked = sorted(count(text).items(), key=lambda item: item[1], reverse=True)
     return [word for word, _ in ranked[:n]]
```";
    let after = applied(WORDFREQ, reply).expect("read as the region's new text");
    assert_eq!(
        after,
        WORDFREQ.replace(
            "key=lambda item: item[1])",
            "key=lambda item: item[1], reverse=True)"
        )
    );
}

#[test]
fn removed_lines_holding_the_new_text_are_that_text() {
    let reply = "```diff
--- a/wordfreq.py
+++ b/wordfreq.py
@@ -4,2 +4,2 @@
 def words(text):
-    return text.lower().split()
 
 
```";
    let after = applied(WORDFREQ, reply).expect("read as the region's new text");
    assert_eq!(
        after,
        WORDFREQ.replace("text.split(\" \")", "text.lower().split()")
    );
}

#[test]
fn a_hunk_without_markers_is_the_region_s_new_text() {
    let reply = "```diff
--- a/wordfreq.py
+++ b/wordfreq.py
@@ -8,6 +8,6 @@
def count(text):
    counts = {}
    for word in words(text.lower()):
        counts[word] = counts.get(word, 0) + 1
    return counts
```";
    let after = applied(WORDFREQ, reply).expect("read as the region's new text");
    assert_eq!(
        after,
        WORDFREQ.replace("in words(text):", "in words(text.lower()):")
    );
}

#[test]
fn a_whole_file_without_markers_adds_what_it_adds_once() {
    let wanted = WORDFREQ
        .replace(
            "\"\"\"Count the words of a text.\"\"\"\n",
            "\"\"\"Count the words of a text.\"\"\"\nimport string\n",
        )
        .replace(
            "text.split(\" \")",
            "text.lower().translate(str.maketrans(\"\", \"\", string.punctuation)).split()",
        );
    // The model wraps the whole file in one hunk, with the import twice.
    let body: String = wanted
        .replace("import string\n", "import string\nimport string\n")
        .lines()
        .map(|l| format!("{l}\n"))
        .collect();
    let reply =
        format!("```diff\n--- a/wordfreq.py\n+++ b/wordfreq.py\n@@ -1,17 +1,18 @@\n{body}```");
    assert_eq!(applied(WORDFREQ, &reply).expect("read"), wanted);
}

#[test]
fn an_addition_already_there_is_not_made_twice() {
    let file = "import string\n\n\ndef f(s):\n    return s.strip(string.punctuation)\n";
    // The model adds the import the file already has, right above it.
    let reply = "```diff
--- a/wordfreq.py
+++ b/wordfreq.py
@@ -1,3 +1,4 @@
+import string
 import string
 
 
```";
    assert_eq!(applied(file, reply).expect("applies"), file);
}

#[test]
fn an_intended_text_already_there_changes_nothing() {
    let reply = "```diff
--- a/wordfreq.py
+++ b/wordfreq.py
@@ -4,2 +4,2 @@
-def words(txt):
+def words(text):
     return text.split(\" \")
```";
    assert_eq!(applied(WORDFREQ, reply).expect("nothing to do"), WORDFREQ);
}

#[test]
fn a_region_that_fits_two_places_is_refused() {
    let file = "class Square:\n    def area(self):\n        return self.w\n\n\nclass Box:\n    def area(self):\n        return self.w\n";
    let reply = "```diff
--- a/wordfreq.py
+++ b/wordfreq.py
@@ -2,2 +2,2 @@
     def area(self):
         return self.w * self.w
```";
    let error = applied(file, reply).expect_err("two regions fit");
    assert!(error.to_string().contains("2 places"), "{error}");
}

#[test]
fn a_reading_that_would_drop_a_line_the_model_did_not_touch_is_refused() {
    // The model's region skips `counts = {}`: reading it would delete a
    // line the model neither removed nor replaced.
    let reply = "```diff
--- a/wordfreq.py
+++ b/wordfreq.py
@@ -8,5 +8,4 @@
 def count(text):
     for word in words(text.lower()):
         counts[word] = counts.get(word, 0) + 1
     return counts
```";
    assert!(applied(WORDFREQ, reply).is_err());
}

#[test]
fn a_hunk_with_no_line_of_the_file_is_refused() {
    let reply = "```diff
--- a/wordfreq.py
+++ b/wordfreq.py
@@ -1,2 +1,2 @@
 def frequencies(text):
     return collections.Counter(text.split())
```";
    assert!(applied(WORDFREQ, reply).is_err());
}

fn partial(file: &str, reply: &str) -> Result<(String, Vec<String>), PatchError> {
    let read = |p: &str| (p == "wordfreq.py").then(|| file.as_bytes().to_vec());
    let done = apply_partial(&edits(reply), &read)?;
    let after = done.outcomes[0].after.clone().expect("kept");
    Ok((String::from_utf8(after).expect("utf-8"), done.left))
}

#[test]
fn independent_hunks_apply_and_the_failing_one_is_left() {
    let reply = "```diff
--- a/wordfreq.py
+++ b/wordfreq.py
@@ -4,2 +4,2 @@
 def words(text):
-    return text.split(\" \")
+    return text.lower().split()
@@ -20,2 +20,2 @@
 def rank(text, n):
-    ordered = sorted(count(text))
+    ordered = sorted(count(text), reverse=True)
```";
    let (after, left) = partial(WORDFREQ, reply).expect("the first hunk applies");
    assert_eq!(
        after,
        WORDFREQ.replace("text.split(\" \")", "text.lower().split()")
    );
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].contains("hunk 2 of 2"), "{left:?}");
    // All or nothing stays all or nothing.
    assert!(applied(WORDFREQ, reply).is_err());
}

#[test]
fn a_failing_hunk_tied_to_an_applying_one_fails_the_reply() {
    // The first hunk adds `import string`; the failing one uses `string`.
    let reply = "```diff
--- a/wordfreq.py
+++ b/wordfreq.py
@@ -1,1 +1,2 @@
 \"\"\"Count the words of a text.\"\"\"
+import string
@@ -20,2 +20,2 @@
 def rank(text, n):
-    return text.strip(string.punctuation)
+    return text.strip(string.punctuation).lower()
```";
    assert!(partial(WORDFREQ, reply).is_err());
}

#[test]
fn a_whole_file_reply_is_untouched_by_partial_application() {
    let edits = vec![FileEdit {
        path: "wordfreq.py".into(),
        op: EditOp::Replace("x = 1\n".into()),
    }];
    let read = |_: &str| Some(WORDFREQ.as_bytes().to_vec());
    let done = apply_partial(&edits, &read).expect("applies");
    assert_eq!(done.outcomes[0].after.as_deref(), Some(&b"x = 1\n"[..]));
    assert!(done.left.is_empty());
}

#[test]
fn a_stale_replacement_is_not_read_over_the_line_s_current_text() {
    // The removed line was `top(text, n)`'s old text; the file has moved on.
    let file = WORDFREQ.replace("item[1])", "item[1], reverse=True)");
    let reply = "```diff
--- a/wordfreq.py
+++ b/wordfreq.py
@@ -15,3 +15,3 @@
 def top(text, n):
-    ranked = sorted(count(text).items(), key=lambda item: item[1])
+    ranked = sorted(count(text).items(), key=lambda item: -item[1])
     return [word for word, _ in ranked[:n]]
```";
    assert!(applied(&file, reply).is_err());
}
