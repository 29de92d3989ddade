//! The full read of a log whose tail did not pass `tail`'s quick look: a
//! log cut short by a crash, one pretty-printed by an older version, or not
//! a JSON array at all.
//!
//! It streams the file once and holds one element at a time (each element is
//! checked by `serde_json`), finding the longest prefix made of `[` and
//! complete elements. It only reads; what to keep and what to move aside is
//! `store`'s decision.

use std::io::{self, Read};

use super::tail::is_ws;

/// What a scan from the start of the log found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Scan {
    pub shape: Shape,
    /// Complete, valid elements, in order from the start.
    pub entries: usize,
    /// Offset just past the last of them, or past the `[` when there is none.
    pub end_of_entries: u64,
}

/// The shape of the whole file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Nothing but whitespace.
    Empty,
    /// Its first byte that is not whitespace is not `[`.
    NotAnArray,
    /// A well-formed array with nothing but whitespace after it.
    Closed,
    /// An array that is cut short, holds something that is not JSON, or is
    /// followed by something: everything after `end_of_entries` is damage.
    Damaged,
}

/// Where the scan is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the opening `[`.
    Head,
    /// Where an element (or, when `first`, the closing `]`) may start.
    BeforeElement { first: bool },
    /// Inside an element.
    InElement,
    /// After an element: a `,` or the closing `]` must follow.
    AfterElement,
    /// After the closing `]`.
    Closed,
}

/// An element being read.
#[derive(Default)]
struct Element {
    bytes: Vec<u8>,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// A number or literal: it ends at the next delimiter.
    bare: bool,
}

impl Element {
    /// Takes `b`; `true` when it completed the element (a bare element ends
    /// before its delimiter, which is not taken).
    fn take(&mut self, b: u8) -> bool {
        if self.bare {
            if is_ws(b) || b == b',' || b == b']' {
                return true;
            }
            self.bytes.push(b);
            return false;
        }
        self.bytes.push(b);
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                return self.depth == 0;
            }
            return false;
        }
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                return self.depth == 0;
            }
            _ => {}
        }
        false
    }

    fn is_valid(&self) -> bool {
        serde_json::from_slice::<serde::de::IgnoredAny>(&self.bytes).is_ok()
    }
}

/// Reads the whole log from `reader`.
pub(crate) fn scan(mut reader: impl Read) -> io::Result<Scan> {
    let mut scanner = Scanner::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        for &b in &buf[..n] {
            if let Some(early) = scanner.take(b) {
                return Ok(early);
            }
        }
    }
    Ok(scanner.finish())
}

/// The scan so far, one byte at a time.
struct Scanner {
    state: State,
    /// Complete, valid elements so far.
    entries: usize,
    end_of_entries: u64,
    element: Element,
    /// Offset of the next byte.
    offset: u64,
}

impl Default for Scanner {
    fn default() -> Self {
        Self {
            state: State::Head,
            entries: 0,
            end_of_entries: 0,
            element: Element::default(),
            offset: 0,
        }
    }
}

impl Scanner {
    /// What was found so far, in `shape`.
    fn found(&self, shape: Shape) -> Scan {
        Scan {
            shape,
            entries: self.entries,
            end_of_entries: self.end_of_entries,
        }
    }

    /// Takes the next byte; `Some` when the shape is known before the end
    /// (the file is not an array, or damaged here).
    fn take(&mut self, b: u8) -> Option<Scan> {
        // A bare element ends at its delimiter, which is then read again
        // as what follows the element.
        if self.state == State::InElement {
            if !self.element.take(b) {
                self.offset += 1;
                return None;
            }
            if !self.element.is_valid() {
                return Some(self.found(Shape::Damaged));
            }
            self.entries += 1;
            self.state = State::AfterElement;
            if !self.element.bare {
                self.offset += 1;
                self.end_of_entries = self.offset;
                return None;
            }
            self.end_of_entries = self.offset;
        }
        match self.state {
            _ if is_ws(b) => {}
            State::Head if b == b'[' => {
                self.state = State::BeforeElement { first: true };
                self.end_of_entries = self.offset + 1;
            }
            State::Head => return Some(self.found(Shape::NotAnArray)),
            State::BeforeElement { first: true } | State::AfterElement if b == b']' => {
                self.state = State::Closed;
            }
            State::BeforeElement { .. } if b != b',' && b != b']' => {
                self.element = Element {
                    bare: !matches!(b, b'{' | b'[' | b'"'),
                    ..Element::default()
                };
                // A first byte never completes an element.
                self.element.take(b);
                self.state = State::InElement;
            }
            State::AfterElement if b == b',' => self.state = State::BeforeElement { first: false },
            _ => return Some(self.found(Shape::Damaged)),
        }
        self.offset += 1;
        None
    }

    /// The shape of the whole file, once every byte was taken.
    fn finish(&self) -> Scan {
        self.found(match self.state {
            State::Head => Shape::Empty,
            State::Closed => Shape::Closed,
            _ => Shape::Damaged,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_str(text: &str) -> Scan {
        scan(text.as_bytes()).unwrap()
    }

    fn found(shape: Shape, entries: usize, end_of_entries: usize) -> Scan {
        Scan {
            shape,
            entries,
            end_of_entries: end_of_entries as u64,
        }
    }

    #[test]
    fn reads_well_formed_arrays_of_any_layout() {
        let pretty = "[\n  {\n    \"a\": [1, {\"b\": \"]}\\\"\"}]\n  },\n  {}\n]\n";
        assert_eq!(
            scan_str(pretty),
            found(Shape::Closed, 2, pretty.rfind('}').unwrap() + 1)
        );
        assert_eq!(
            scan_str("[1, true ,\"x]\", [2]]"),
            found(Shape::Closed, 4, 19)
        );
        assert_eq!(scan_str("[-1.5e3]"), found(Shape::Closed, 1, 7));
        assert_eq!(scan_str(" [ ] \n"), found(Shape::Closed, 0, 2));
        assert_eq!(scan_str(""), found(Shape::Empty, 0, 0));
        assert_eq!(scan_str(" \n\t"), found(Shape::Empty, 0, 0));
    }

    #[test]
    fn finds_the_end_of_the_last_complete_entry() {
        let text = "[\n{\"a\":1},\n{\"b\":\"x\"},\n{\"c\":\"cut";
        let end = text.find("\"},").unwrap() + 2;
        assert_eq!(scan_str(text), found(Shape::Damaged, 2, end));
        assert_eq!(scan_str("[{\"a\":1},"), found(Shape::Damaged, 1, 8));
        assert_eq!(scan_str("[{\"a\":1},]"), found(Shape::Damaged, 1, 8));
        assert_eq!(scan_str("[{\"a\":1}] x"), found(Shape::Damaged, 1, 8));
        assert_eq!(scan_str("[{\"a\":1}\0\0"), found(Shape::Damaged, 1, 8));
        assert_eq!(
            scan_str("[{\"a\":1}, {\"b\" 2}]"),
            found(Shape::Damaged, 1, 8)
        );
        assert_eq!(scan_str("[{\"a\":1}, tru]"), found(Shape::Damaged, 1, 8));
        assert_eq!(
            scan_str("[1, 23"),
            found(Shape::Damaged, 1, 2),
            "a number may be cut"
        );
        assert_eq!(scan_str("["), found(Shape::Damaged, 0, 1));
        assert_eq!(scan_str("[,"), found(Shape::Damaged, 0, 1));
    }

    #[test]
    fn tells_what_is_not_an_array() {
        assert_eq!(scan_str("{\"a\": 1}").shape, Shape::NotAnArray);
        assert_eq!(scan_str(" not json").shape, Shape::NotAnArray);
    }

    #[test]
    fn reads_across_buffer_boundaries() {
        let long = "y".repeat(200_000);
        let text = format!("[{{\"a\":\"{long}\"}},\n{{\"b\":1}}\n]");
        assert_eq!(scan_str(&text), found(Shape::Closed, 2, text.len() - 2));
    }
}
