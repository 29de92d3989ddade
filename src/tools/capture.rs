//! Capped capture of a process's output: the first and last halves of the
//! cap are kept, the middle is replaced by a `… N bytes cut …` line, so a
//! chatty tool cannot exhaust memory or flood the log.

/// Keeps the first and last `cap / 2` bytes of a stream and counts the rest.
#[derive(Debug)]
pub struct CappedBuffer {
    cap: usize,
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    cut: usize,
}

impl CappedBuffer {
    /// An empty buffer keeping at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            cut: 0,
        }
    }

    /// Appends bytes, dropping the middle once over the cap.
    pub fn push(&mut self, mut bytes: &[u8]) {
        let head_cap = self.cap / 2;
        let tail_cap = self.cap - head_cap;
        let room = head_cap.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if bytes.len() > tail_cap {
            self.cut += self.tail.len() + bytes.len() - tail_cap;
            self.tail.clear();
            bytes = &bytes[bytes.len() - tail_cap..];
        }
        self.tail.extend(bytes);
        let over = self.tail.len().saturating_sub(tail_cap);
        if over > 0 {
            self.tail.drain(..over);
            self.cut += over;
        }
    }

    /// The kept text, with a `… N bytes cut …` line where bytes were dropped.
    pub fn render(&self) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if self.cut == 0 {
            // Decode as one piece so a character split between head and
            // tail survives.
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        format!(
            "{}\n… {} bytes cut …\n{}",
            String::from_utf8_lossy(&self.head),
            self.cut,
            String::from_utf8_lossy(&tail)
        )
    }
}

/// Caps a text the same way the runner caps a stream.
pub fn cap_text(text: &str, cap: usize) -> String {
    let mut buffer = CappedBuffer::new(cap);
    buffer.push(text.as_bytes());
    buffer.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_buffer_keeps_head_and_tail() {
        let mut b = CappedBuffer::new(10);
        b.push(b"abcdefghij");
        b.push(b"klmnopqrstuvwxyz");
        assert_eq!(b.render(), "abcde\n… 16 bytes cut …\nvwxyz");
        let mut small = CappedBuffer::new(10);
        small.push(b"abc");
        small.push(b"def");
        assert_eq!(small.render(), "abcdef");
    }

    #[test]
    fn capped_buffer_byte_by_byte_matches_bulk() {
        let text: Vec<u8> = (0..200u8).map(|i| b'a' + i % 26).collect();
        let mut bulk = CappedBuffer::new(32);
        bulk.push(&text);
        let mut single = CappedBuffer::new(32);
        for b in &text {
            single.push(std::slice::from_ref(b));
        }
        assert_eq!(bulk.render(), single.render());
        assert!(bulk.render().contains("… 168 bytes cut …"));
    }

    proptest::proptest! {
        #[test]
        fn capped_buffer_matches_a_reference(
            chunks in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 0..50), 0..20),
            cap in 2usize..64,
        ) {
            let all: Vec<u8> = chunks.concat();
            let mut buffer = CappedBuffer::new(cap);
            for chunk in &chunks {
                buffer.push(chunk);
            }
            let expected = if all.len() <= cap {
                String::from_utf8_lossy(&all).into_owned()
            } else {
                let head = cap / 2;
                let tail = cap - head;
                format!(
                    "{}\n… {} bytes cut …\n{}",
                    String::from_utf8_lossy(&all[..head]),
                    all.len() - cap,
                    String::from_utf8_lossy(&all[all.len() - tail..])
                )
            };
            proptest::prop_assert_eq!(buffer.render(), expected);
        }
    }
}
