//! Splits a model reply into prose and fenced code blocks (```` ``` ```` or
//! `~~~`, any info string, unclosed fences running to the end).

/// A run of consecutive reply lines.
#[derive(Clone, Debug)]
pub(crate) struct Segment<'a> {
    /// `None` for prose; the fence's info string (maybe empty) for a block.
    pub(crate) info: Option<String>,
    /// The lines inside (fences excluded).
    pub(crate) lines: &'a [&'a str],
}

impl Segment<'_> {
    /// True for a fenced block.
    pub(crate) fn is_fenced(&self) -> bool {
        self.info.is_some()
    }

    /// The first word of the info string, lowercased (`"diff"`, `"python"`).
    pub(crate) fn language(&self) -> String {
        self.info
            .as_deref()
            .and_then(|i| {
                i.split(|c: char| c.is_whitespace() || c == ':' || c == '{')
                    .next()
            })
            .unwrap_or("")
            .to_ascii_lowercase()
    }
}

/// An opening fence: its character, length and info string.
fn opener(line: &str) -> Option<(char, usize, String)> {
    let body = line.trim_start();
    let ch = body.chars().next()?;
    if ch != '`' && ch != '~' {
        return None;
    }
    let len = body.chars().take_while(|&c| c == ch).count();
    if len < 3 {
        return None;
    }
    let info = body[len..].trim();
    if ch == '`' && info.contains('`') {
        return None;
    }
    Some((ch, len, info.to_string()))
}

/// True when `line` closes a fence opened with `len` times `ch`.
fn closes(line: &str, ch: char, len: usize) -> bool {
    let body = line.trim();
    body.chars().count() >= len && body.chars().all(|c| c == ch)
}

/// Splits `lines` into alternating prose and fenced segments, in order.
pub(crate) fn segments<'a>(lines: &'a [&'a str]) -> Vec<Segment<'a>> {
    let mut out = Vec::new();
    let mut prose_start = 0;
    let mut i = 0;
    while i < lines.len() {
        let Some((ch, len, info)) = opener(lines[i]) else {
            i += 1;
            continue;
        };
        if prose_start < i {
            out.push(Segment {
                info: None,
                lines: &lines[prose_start..i],
            });
        }
        let body_start = i + 1;
        let mut end = body_start;
        while end < lines.len() && !closes(lines[end], ch, len) {
            end += 1;
        }
        out.push(Segment {
            info: Some(info),
            lines: &lines[body_start..end],
        });
        i = end + 1;
        prose_start = i;
    }
    if prose_start < lines.len() {
        out.push(Segment {
            info: None,
            lines: &lines[prose_start..],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_prose_and_fences_including_unclosed_and_tilde() {
        let text = "intro\n```diff\n-a\n+b\n```\nmiddle\n~~~\nx\n~~~\n````py\ny";
        let lines: Vec<&str> = text.lines().collect();
        let segs = segments(&lines);
        let kinds: Vec<(Option<String>, Vec<&str>)> = segs
            .iter()
            .map(|s| (s.info.clone(), s.lines.to_vec()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (None, vec!["intro"]),
                (Some("diff".into()), vec!["-a", "+b"]),
                (None, vec!["middle"]),
                (Some(String::new()), vec!["x"]),
                (Some("py".into()), vec!["y"]),
            ]
        );
    }

    #[test]
    fn inline_triple_backticks_are_not_fences() {
        let lines = vec!["use ```x``` here", "text"];
        let segs = segments(&lines);
        assert_eq!(segs.len(), 1);
        assert!(!segs[0].is_fenced());
    }
}
