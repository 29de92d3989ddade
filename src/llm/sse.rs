//! Server-sent events: the line format all three providers stream in.
//!
//! Owns: cutting a byte stream that arrives in arbitrary chunks into events
//! (`event:` and `data:` fields, comments, blank-line dispatch), with lines
//! ended by LF or CRLF. A line is decoded only once it is complete, so a
//! character whose bytes are split across two chunks is read whole; bytes
//! that are not UTF-8 are refused with where they sit, never replaced (as
//! in `utf8`). It knows nothing of any provider's JSON.

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, when the server named the event.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Cuts a stream of chunks into [`SseEvent`]s.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// Bytes of the line not yet ended.
    pending: Vec<u8>,
    /// Bytes of the stream before `pending` (for error offsets).
    consumed: usize,
    event: Option<String>,
    data: Option<String>,
}

impl SseParser {
    /// Feeds one chunk; returns the events it completed. `Err` names the
    /// first byte that is not UTF-8 (offset from the start of the stream).
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, String> {
        self.pending.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(end) = self.pending[start..].iter().position(|b| *b == b'\n') {
            let line_end = start + end;
            let mut line = &self.pending[start..line_end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let text = match std::str::from_utf8(line) {
                Ok(text) => text.to_string(),
                Err(err) => {
                    // Inside a complete line even a cut-off character is an
                    // error: the line end cannot continue it.
                    let at = err.valid_up_to();
                    return Err(format!(
                        "byte 0x{:02x} at offset {} of the stream",
                        line[at],
                        self.consumed + start + at
                    ));
                }
            };
            if let Some(event) = self.line(&text) {
                events.push(event);
            }
            start = line_end + 1;
        }
        self.pending.drain(..start);
        self.consumed += start;
        Ok(events)
    }

    /// Ends the stream: an event whose blank line never came is dispatched
    /// (servers that close right after the last `data:` line).
    pub fn finish(&mut self) -> Result<Option<SseEvent>, String> {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            let mut events = self.feed_line_end(&rest)?;
            if let Some(event) = events.pop() {
                return Ok(Some(event));
            }
        }
        Ok(self.dispatch())
    }

    fn feed_line_end(&mut self, rest: &[u8]) -> Result<Vec<SseEvent>, String> {
        let mut line = rest.to_vec();
        line.push(b'\n');
        self.feed(&line)
    }

    /// Reads one complete line; a blank line dispatches the event.
    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            // `id`, `retry` and unknown fields mean nothing here.
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        let data = self.data.take()?;
        Some(SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn events_are_cut_at_blank_lines() {
        let mut parser = SseParser::default();
        let events = parser
            .feed(b"event: message_start\ndata: {\"a\":1}\n\n: a comment\ndata: x\ndata: y\n\n")
            .expect("text");
        assert_eq!(
            events,
            vec![
                SseEvent {
                    event: Some("message_start".into()),
                    data: "{\"a\":1}".into()
                },
                SseEvent {
                    event: None,
                    data: "x\ny".into()
                },
            ]
        );
    }

    #[test]
    fn an_event_split_across_chunks_is_read_whole() {
        let stream: &[u8] = b"data: {\"text\":\"hello\"}\r\n\r\ndata: [DONE]\r\n\r\n";
        for cut in 0..stream.len() {
            let mut parser = SseParser::default();
            let mut events = parser.feed(&stream[..cut]).expect("text");
            events.extend(parser.feed(&stream[cut..]).expect("text"));
            assert_eq!(
                data(&events),
                vec!["{\"text\":\"hello\"}", "[DONE]"],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_character_split_across_chunks_is_read_whole() {
        let stream = "data: café ✓ 😀\n\n".as_bytes();
        for cut in 0..stream.len() {
            let mut parser = SseParser::default();
            let mut events = parser.feed(&stream[..cut]).expect("a partial line waits");
            events.extend(parser.feed(&stream[cut..]).expect("text"));
            assert_eq!(data(&events), vec!["café ✓ 😀"], "cut at {cut}");
        }
        // Byte by byte, too.
        let mut parser = SseParser::default();
        let mut events = Vec::new();
        for byte in stream {
            events.extend(parser.feed(std::slice::from_ref(byte)).expect("text"));
        }
        assert_eq!(data(&events), vec!["café ✓ 😀"]);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_refused_with_their_offset() {
        let mut parser = SseParser::default();
        parser.feed(b"data: ok\n\n").expect("text");
        let err = parser
            .feed(b"data: caf\xe9\n\n")
            .expect_err("latin-1 is not UTF-8");
        assert_eq!(err, "byte 0xe9 at offset 19 of the stream");
        let mut parser = SseParser::default();
        let err = parser
            .feed(b"data: \xf0\x9f\n")
            .expect_err("a character cut by its line end");
        assert_eq!(err, "byte 0xf0 at offset 6 of the stream");
    }

    #[test]
    fn the_last_event_needs_no_blank_line() {
        let mut parser = SseParser::default();
        assert!(parser.feed(b"data: a\n\ndata: b").expect("text").len() == 1);
        assert_eq!(
            parser.finish().expect("text").map(|e| e.data),
            Some("b".into())
        );
        let mut parser = SseParser::default();
        parser.feed(b"data: c\n").expect("text");
        assert_eq!(
            parser.finish().expect("text").map(|e| e.data),
            Some("c".into())
        );
        assert_eq!(SseParser::default().finish().expect("empty"), None);
    }

    #[test]
    fn fields_without_space_or_value_are_read() {
        let mut parser = SseParser::default();
        let events = parser
            .feed(b"event:delta\ndata:x\nid: 7\nretry: 10\ndata\n\n")
            .expect("text");
        assert_eq!(
            events,
            vec![SseEvent {
                event: Some("delta".into()),
                data: "x\n".into()
            }]
        );
    }
}
