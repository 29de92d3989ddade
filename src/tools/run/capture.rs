//! Capped capture of a process's output: the first and last halves of the
//! cap are kept, the middle is replaced by a `… N bytes cut …` line, so a
//! chatty tool cannot exhaust memory or flood the log. Each stream is read
//! on its own thread while the process runs (no pipe deadlock).
//!
//! It reads what a child writes; starting, waiting for and killing the
//! child is the runner's business ([`super::process`]).

use std::io::Read;
use std::process::Child;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// How long to wait for the output readers once the process group is gone.
/// A daemon that left the group (setsid) may hold a pipe open forever.
const READER_GRACE: Duration = Duration::from_secs(2);

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

/// The child's stdout and stderr, read on threads while it runs.
pub(super) struct Streams {
    done: mpsc::Receiver<(usize, String)>,
    /// How many readers were started.
    readers: usize,
}

impl Streams {
    /// Starts a reader on each of the child's streams, keeping `cap` bytes
    /// of each.
    pub(super) fn read(child: &mut Child, cap: usize) -> Self {
        let (tx, done) = mpsc::channel();
        let readers = [
            child
                .stdout
                .take()
                .map(|s| spawn_reader(s, 0, cap, tx.clone())),
            child
                .stderr
                .take()
                .map(|s| spawn_reader(s, 1, cap, tx.clone())),
        ];
        Self {
            done,
            readers: readers.iter().filter(|r| r.is_some()).count(),
        }
    }

    /// stdout and stderr as read once the process group is gone, waiting at
    /// most [`READER_GRACE`] for them. Readers still blocked then belong to
    /// a pipe held by an escaped daemon: they are detached and end when it
    /// closes.
    pub(super) fn collect(self) -> [String; 2] {
        let mut streams = [String::new(), String::new()];
        let deadline = Instant::now() + READER_GRACE;
        let mut pending = self.readers;
        while pending > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.done.recv_timeout(left) {
                Ok((index, text)) => {
                    streams[index] = text;
                    pending -= 1;
                }
                Err(_) => break,
            }
        }
        streams
    }
}

/// Reads a stream to its end on a thread, keeping a capped copy, and sends
/// `(index, text)` when done.
fn spawn_reader<R: Read + Send + 'static>(
    mut stream: R,
    index: usize,
    cap: usize,
    done: mpsc::Sender<(usize, String)>,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let mut kept = CappedBuffer::new(cap);
        let mut chunk = [0u8; 8192];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => kept.push(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = done.send((index, kept.render()));
    })
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
