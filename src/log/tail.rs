//! The quick look at a log before an append: its head and its tail, never
//! the middle, so an append costs the same at ten entries as at a million.
//!
//! The log is written one entry per line:
//!
//! ```text
//! [
//! {"action":"FIX",...},
//! {"action":"FIX",...}
//! ]
//! ```
//!
//! A JSON string never holds a raw newline, so a `]` that begins a line is
//! structure, not text. The tail is accepted when it is such a `]` after a
//! line holding one complete entry (a JSON object with `details`), itself
//! after a `,` or the array's opening `[`, or when the array is empty. Any prefix of such a file (a log
//! cut short by a crash) fails this test, and so does the tail of a log
//! pretty-printed by an older version; both are left to `scan`, which reads
//! the whole file. This module only reads.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// The first window read from the end; it doubles until the last line fits.
const FIRST_WINDOW: u64 = 4 * 1024;
/// How much of the head is read to find the opening `[`.
const HEAD: u64 = 1024;

/// Where the next entry goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Nothing but whitespace, or nothing at all: the log starts at offset 0.
    Empty,
    /// A JSON array: the next entry is written at `at`, replacing everything
    /// after it; after a comma when `after_entry`.
    Array { at: u64, after_entry: bool },
}

/// Reads the head and the tail of the `size`-byte `file`; `None` when they
/// do not show a well-formed log (the caller then scans the whole file).
pub(crate) fn inspect(file: &File, size: u64) -> io::Result<Option<Layout>> {
    let mut len = FIRST_WINDOW.min(size);
    loop {
        let base = size - len;
        let window = read_at(file, base, len)?;
        match read_window(&window, base) {
            Window::Wider if len < size => len = (len * 2).min(size),
            Window::Wider | Window::Broken => return Ok(None),
            Window::Found(layout, Head::Checked) => return Ok(Some(layout)),
            Window::Found(layout, Head::Unchecked) => {
                let head = read_at(file, 0, HEAD.min(size))?;
                let opens = head.iter().find(|b| !is_ws(**b)) == Some(&b'[');
                return Ok(opens.then_some(layout));
            }
        }
    }
}

/// Whether the opening `[` still has to be checked.
#[derive(Debug, PartialEq, Eq)]
enum Head {
    Checked,
    Unchecked,
}

/// What a window at the end of the file shows.
#[derive(Debug, PartialEq, Eq)]
enum Window {
    Found(Layout, Head),
    /// The window starts in the middle of what must be seen.
    Wider,
    /// Not a well-formed tail.
    Broken,
}

/// What the line before the closing `]` must hold: an object with the
/// `details` every entry has. A pretty-printer puts every non-empty object
/// on several lines, so such a line is never an object nested in an entry.
#[derive(serde::Deserialize)]
struct EntryShape {
    #[allow(dead_code)]
    details: serde::de::IgnoredAny,
}

/// Reads the window `bytes`, the file's bytes from offset `base` to its end.
fn read_window(bytes: &[u8], base: u64) -> Window {
    let whole = base == 0;
    let wider_or_broken = if whole { Window::Broken } else { Window::Wider };
    let Some(close) = bytes.iter().rposition(|b| !is_ws(*b)) else {
        return if whole {
            Window::Found(Layout::Empty, Head::Checked)
        } else {
            Window::Wider
        };
    };
    if bytes[close] != b']' {
        return Window::Broken;
    }
    // The `]` must begin its line.
    let Some(newline) = bytes[..close].iter().rposition(|b| !is_blank(*b)) else {
        return wider_or_broken;
    };
    if bytes[newline] != b'\n' {
        return Window::Broken;
    }
    let line_start = match bytes[..newline].iter().rposition(|b| *b == b'\n') {
        Some(i) => i + 1,
        None if whole => 0,
        None => return Window::Wider,
    };
    let line = &bytes[line_start..newline];
    let Some(first) = line.iter().position(|b| !is_ws(*b)) else {
        return Window::Broken;
    };
    let last = line
        .iter()
        .rposition(|b| !is_ws(*b))
        .expect("the line has a byte that is not whitespace");
    let (value_start, value_end) = (line_start + first, line_start + last + 1);
    let value = &bytes[value_start..value_end];
    let before = &bytes[..value_start];
    if value == b"[" {
        // An empty array, if this `[` is the file's first byte that counts.
        return match before.iter().any(|b| !is_ws(*b)) {
            true => Window::Broken,
            false if whole => Window::Found(
                Layout::Array {
                    at: base + value_end as u64,
                    after_entry: false,
                },
                Head::Checked,
            ),
            false => Window::Wider,
        };
    }
    if serde_json::from_slice::<EntryShape>(value).is_err() {
        return Window::Broken;
    }
    let layout = Layout::Array {
        at: base + value_end as u64,
        after_entry: true,
    };
    match before.iter().rposition(|b| !is_ws(*b)) {
        Some(i) if before[i] == b',' => Window::Found(layout, Head::Unchecked),
        Some(i) if before[i] == b'[' => match before[..i].iter().any(|b| !is_ws(*b)) {
            true => Window::Broken,
            false if whole => Window::Found(layout, Head::Checked),
            false => Window::Wider,
        },
        Some(_) => Window::Broken,
        None => wider_or_broken,
    }
}

/// JSON whitespace.
pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// JSON whitespace other than a newline.
fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r')
}

/// Reads `len` bytes at `offset`.
fn read_at(file: &File, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    let len = usize::try_from(len).map_err(io::Error::other)?;
    let mut bytes = vec![0; len];
    file.read_exact_at(&mut bytes, offset)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(text: &str) -> Window {
        read_window(text.as_bytes(), 0)
    }

    fn at(text: &str, needle: &str) -> u64 {
        (text.rfind(needle).unwrap() + needle.len()) as u64
    }

    #[test]
    fn accepts_the_logs_it_writes() {
        let one = "[\n{\"details\":1}\n]\n";
        assert_eq!(
            whole(one),
            Window::Found(
                Layout::Array {
                    at: at(one, "}"),
                    after_entry: true
                },
                Head::Checked
            )
        );
        let two = "[\n{\"a\":1},\n{\"details\":\"}\\n]\"}\n]\n";
        assert_eq!(
            whole(two),
            Window::Found(
                Layout::Array {
                    at: at(two, "}"),
                    after_entry: true
                },
                Head::Unchecked
            )
        );
        let empty = "  [ \n ]";
        assert_eq!(
            whole(empty),
            Window::Found(
                Layout::Array {
                    at: 3,
                    after_entry: false
                },
                Head::Checked
            )
        );
        assert_eq!(whole(""), Window::Found(Layout::Empty, Head::Checked));
        assert_eq!(whole(" \n "), Window::Found(Layout::Empty, Head::Checked));
    }

    #[test]
    fn leaves_other_shapes_to_the_scan() {
        for text in [
            "[{\"a\":1}]",                            // one line
            "[\n  {\n    \"a\": 1\n  }\n]\n",         // pretty-printed
            "[\n{\"a\":1},\n{\"details\":2}",         // cut short
            "[\n{\"a\":1},\n{\"details\":2},\n]",     // trailing comma
            "[\n{\"a\":1},\n{\"details\":\n]",        // incomplete last entry
            "[\n{\"a\":1},\n{\"details\":2}\n]\nxyz", // trailing garbage
            "x\n[\n]",                                // not the head
            "[\n{\"a\":[\n{}\n]",                     // a nested `[` before the line
            "\n]",                                    // no `[`
            "{\"details\":1}\n]",                     // no `[`
            "[\n{\n\"n\": [\n1,\n{}\n]",              // indent=0, cut after a nested `]`
            "[\n{\"x\":[\n1,\n{\"y\":1}\n]",          // a nested object is not an entry
        ] {
            assert_eq!(whole(text), Window::Broken, "{text:?}");
        }
    }

    #[test]
    fn widens_a_window_that_starts_inside_the_last_line() {
        let text = "[\n{\"a\":1},\n{\"details\":2}\n]\n";
        let cut = text.len() - 5;
        assert_eq!(
            read_window(&text.as_bytes()[cut..], cut as u64),
            Window::Wider
        );
        let cut = text.rfind('{').unwrap();
        assert_eq!(
            read_window(&text.as_bytes()[cut..], cut as u64),
            Window::Wider,
            "the `,` before the line is not in the window"
        );
    }

    #[test]
    fn inspects_a_file_whose_last_line_is_longer_than_the_first_window() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.json");
        let long = "x".repeat(3 * FIRST_WINDOW as usize);
        let text = format!("[\n{{\"a\":1}},\n{{\"details\":\"{long}\"}}\n]\n");
        std::fs::write(&path, &text).unwrap();
        let file = File::open(&path).unwrap();
        assert_eq!(
            inspect(&file, text.len() as u64).unwrap(),
            Some(Layout::Array {
                at: at(&text, "}"),
                after_entry: true
            })
        );
        std::fs::write(&path, format!("{{{text}")).unwrap();
        let file = File::open(&path).unwrap();
        assert_eq!(
            inspect(&file, text.len() as u64 + 1).unwrap(),
            None,
            "no `[` at the head"
        );
    }
}
