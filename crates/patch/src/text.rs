//! A file's text as lines that remember their own line ending, plus its
//! UTF-8 BOM and final-newline state, so that patched files are written back
//! byte for byte the way they came in except where a hunk changed them.

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One line of a file: its text and the ending it had (`""` on a last line
/// without a final newline).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Line {
    pub(crate) text: String,
    pub(crate) eol: &'static str,
}

/// A decoded file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Document {
    pub(crate) bom: bool,
    pub(crate) lines: Vec<Line>,
    /// The ending used for new lines: the most frequent one in the file.
    pub(crate) eol: &'static str,
    /// Whether the last line ends with a newline (true for an empty file).
    pub(crate) final_newline: bool,
}

impl Document {
    /// Decodes bytes; `None` when they are not UTF-8.
    pub(crate) fn decode(bytes: &[u8]) -> Option<Document> {
        let (bom, body) = match bytes.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, bytes),
        };
        let text = std::str::from_utf8(body).ok()?;
        Some(Document::from_text(bom, text))
    }

    /// Splits text (without BOM) into lines.
    pub(crate) fn from_text(bom: bool, text: &str) -> Document {
        let mut lines = Vec::new();
        let (mut crlf, mut lf) = (0usize, 0usize);
        for piece in text.split_inclusive('\n') {
            let line = if let Some(body) = piece.strip_suffix("\r\n") {
                crlf += 1;
                Line {
                    text: body.to_string(),
                    eol: "\r\n",
                }
            } else if let Some(body) = piece.strip_suffix('\n') {
                lf += 1;
                Line {
                    text: body.to_string(),
                    eol: "\n",
                }
            } else {
                Line {
                    text: piece.to_string(),
                    eol: "",
                }
            };
            lines.push(line);
        }
        let final_newline = lines.last().is_none_or(|l| !l.eol.is_empty());
        Document {
            bom,
            lines,
            eol: if crlf > lf { "\r\n" } else { "\n" },
            final_newline,
        }
    }

    /// The line texts, without endings.
    pub(crate) fn texts(&self) -> Vec<&str> {
        self.lines.iter().map(|l| l.text.as_str()).collect()
    }

    /// Gives every line but the last an ending and the last one the ending
    /// `final_newline` asks for.
    pub(crate) fn settle_endings(&mut self, final_newline: bool) {
        let eol = self.eol;
        let count = self.lines.len();
        for (i, line) in self.lines.iter_mut().enumerate() {
            let last = i + 1 == count;
            if !last || final_newline {
                if line.eol.is_empty() {
                    line.eol = eol;
                }
            } else {
                line.eol = "";
            }
        }
        self.final_newline = final_newline;
    }

    /// The file's bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let size: usize = self.lines.iter().map(|l| l.text.len() + 2).sum();
        let mut out = Vec::with_capacity(size + BOM.len());
        if self.bom {
            out.extend_from_slice(BOM);
        }
        for line in &self.lines {
            out.extend_from_slice(line.text.as_bytes());
            out.extend_from_slice(line.eol.as_bytes());
        }
        out
    }

    /// The file as a string without BOM (for diffs and statistics).
    pub(crate) fn to_text(&self) -> String {
        let mut out = String::new();
        for line in &self.lines {
            out.push_str(&line.text);
            out.push_str(line.eol);
        }
        out
    }
}

/// Rewrites `new_text` (LF endings, as the model sent it) in the style of
/// `like`: its BOM, dominant line ending and final-newline state.
pub(crate) fn restyle(new_text: &str, like: &Document) -> Document {
    let body = new_text.strip_prefix('\u{feff}').unwrap_or(new_text);
    let mut doc = Document::from_text(like.bom, body);
    doc.eol = like.eol;
    for line in &mut doc.lines {
        line.eol = "";
    }
    doc.settle_endings(like.final_newline);
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_mixed_endings_bom_and_no_final_newline() {
        let bytes = b"\xEF\xBB\xBFa\r\nb\nc\r\nd";
        let doc = Document::decode(bytes).expect("utf-8");
        assert!(doc.bom);
        assert_eq!(doc.eol, "\r\n");
        assert!(!doc.final_newline);
        assert_eq!(doc.texts(), vec!["a", "b", "c", "d"]);
        assert_eq!(doc.encode(), bytes.to_vec());
    }

    #[test]
    fn empty_file_counts_as_having_a_final_newline() {
        let doc = Document::decode(b"").expect("utf-8");
        assert!(doc.lines.is_empty());
        assert!(doc.final_newline);
        assert!(doc.encode().is_empty());
    }

    #[test]
    fn restyle_applies_crlf_bom_and_missing_final_newline() {
        let like = Document::decode(b"\xEF\xBB\xBFx\r\ny").expect("utf-8");
        let doc = restyle("p\nq\n", &like);
        assert_eq!(doc.encode(), b"\xEF\xBB\xBFp\r\nq".to_vec());
    }

    #[test]
    fn rejects_invalid_utf8() {
        assert!(Document::decode(b"\xff\xfe").is_none());
    }
}
