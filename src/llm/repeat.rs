//! Telling a reply that loops from one that repeats for a reason: a
//! [`RepetitionGuard`] is fed a reply's text as it arrives and says when it
//! has degenerated, so that the reading can stop there instead of at the
//! output cap.
//!
//! Two signs, each needing a long stretch of text before it counts:
//!
//! - the text ends in one span said again and again, word for word (the
//!   same line, a block of lines, `import x; import x; …` on one line):
//!   at least [`MIN_REPEATS`] times and [`WORDS_SPAN`] bytes when the span
//!   holds a letter, [`FILLER_SPAN`] bytes when it holds none (blank lines,
//!   spaces, `+`, `0,`, `=`: a fixture may hold long runs of those);
//! - the text has stopped making progress: its last lines are drawn from at
//!   most [`MAX_DISTINCT`] different lines, and the ones with a letter that
//!   come back [`MIN_REPEATS`] times or more add up to [`WORDS_SPAN`]
//!   bytes (or the run of lines to [`FILLER_SPAN`] bytes).
//!
//! Lines that are alike but not equal — a table of similar rows, test
//! names with different numbers — are neither. Pure: no clocks, no I/O; it
//! keeps only the end of the text it needs. Where replies are read, and
//! what a cut reply becomes, is `stream`'s and `http`'s.

/// A span must be said this many times in a row before it counts.
pub(crate) const MIN_REPEATS: usize = 4;
/// Bytes a repetition with letters in it must cover before it counts.
pub(crate) const WORDS_SPAN: usize = 1024;
/// Bytes a repetition without a letter must cover before it counts.
pub(crate) const FILLER_SPAN: usize = 4096;
/// A run of lines drawn from at most this many different ones has stopped
/// making progress.
pub(crate) const MAX_DISTINCT: usize = 3;
/// The longest span looked for, in bytes.
const MAX_PERIOD: usize = 2048;
/// Such a run needs at least this many lines.
const MIN_LINES: usize = 8;
/// The text is looked at again after this many new bytes.
const CHECK_EVERY: usize = 64;
/// Bytes of the text's end kept (enough for the longest span's repeats).
const KEEP: usize = 16 * 1024;

/// A reply found repeating itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Repetition {
    /// Where the repetition began, in bytes from the start of the text.
    pub start: usize,
    /// The bytes fed when it was found.
    pub seen: usize,
    /// What is repeated (its first line, at most 80 characters).
    pub unit: String,
}

/// Watches a reply's text as it arrives (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct RepetitionGuard {
    /// The end of the text fed so far.
    tail: String,
    /// Bytes of the text before `tail`.
    dropped: usize,
    /// Bytes fed since the text was last looked at.
    unchecked: usize,
    /// Whether a line was completed since the last look: the lines at the
    /// end cannot have stopped making progress without one (and a reply
    /// of one long line is not searched for lines at every look).
    new_line: bool,
    found: Option<Repetition>,
}

impl RepetitionGuard {
    /// Feeds the next piece of the text; the repetition once the text has
    /// degenerated (and from then on).
    pub fn feed(&mut self, delta: &str) -> Option<&Repetition> {
        if self.found.is_none() && !delta.is_empty() {
            self.tail.push_str(delta);
            self.unchecked += delta.len();
            self.new_line |= delta.contains('\n');
            if self.unchecked >= CHECK_EVERY {
                self.unchecked = 0;
                self.found = self.look();
                self.trim();
            }
        }
        self.found.as_ref()
    }

    /// Looks at the text fed so far now, however little came since the
    /// last look.
    pub fn settle(&mut self) -> Option<&Repetition> {
        if self.found.is_none() && self.unchecked > 0 {
            self.unchecked = 0;
            self.found = self.look();
        }
        self.found.as_ref()
    }

    /// The first repetition in a whole `text`, looked for as if it had
    /// streamed.
    pub fn find_in(text: &str) -> Option<Repetition> {
        let mut guard = Self::default();
        let mut rest = text;
        while !rest.is_empty() {
            let mut end = CHECK_EVERY.min(rest.len());
            while !rest.is_char_boundary(end) {
                end += 1;
            }
            if guard.feed(&rest[..end]).is_some() {
                break;
            }
            rest = &rest[end..];
        }
        guard.settle().cloned()
    }

    fn look(&mut self) -> Option<Repetition> {
        let new_line = std::mem::take(&mut self.new_line);
        let (start, unit) = periodic_end(&self.tail)
            .or_else(|| new_line.then(|| stuck_lines(&self.tail)).flatten())?;
        Some(Repetition {
            start: self.dropped + start,
            seen: self.dropped + self.tail.len(),
            unit: first_line(unit),
        })
    }

    /// Drops the front of the text once it is twice what is kept.
    fn trim(&mut self) {
        if self.tail.len() <= 2 * KEEP {
            return;
        }
        let mut cut = self.tail.len() - KEEP;
        while !self.tail.is_char_boundary(cut) {
            cut += 1;
        }
        self.tail.drain(..cut);
        self.dropped += cut;
    }
}

/// Whether `text` holds a letter (of any script).
fn has_letter(text: &str) -> bool {
    text.chars().any(char::is_alphabetic)
}

/// The bytes a repetition must cover before it counts, told by a stretch
/// of it.
fn span_needed(stretch: &[u8]) -> usize {
    if String::from_utf8_lossy(stretch)
        .chars()
        .any(char::is_alphabetic)
    {
        WORDS_SPAN
    } else {
        FILLER_SPAN
    }
}

/// When `text` ends in one span repeated (see the module doc): where the
/// repetition starts, and the span.
fn periodic_end(text: &str) -> Option<(usize, &str)> {
    let bytes = text.as_bytes();
    let n = bytes.len();
    // Periods that repeat but not for long enough: a multiple of one
    // covers the same stretch and is not tried.
    let mut short: Vec<usize> = Vec::new();
    for period in 1..=MAX_PERIOD.min(n / MIN_REPEATS) {
        if short.iter().any(|q| period % q == 0) {
            continue;
        }
        // How far back the text is the same `period` bytes earlier.
        let limit = n - period;
        let enough = FILLER_SPAN.max(MIN_REPEATS * period);
        let run = (0..limit)
            .take_while(|back| bytes[n - 1 - back] == bytes[n - 1 - back - period])
            .take(enough)
            .count();
        let covered = run + period;
        let long_enough = covered / period >= MIN_REPEATS
            && covered >= WORDS_SPAN
            && covered >= span_needed(&bytes[n - covered..]);
        if !long_enough {
            if run >= period && short.len() < 64 {
                short.push(period);
            }
            continue;
        }
        // Where the repetition began: the run followed to its start.
        let run = (0..limit)
            .take_while(|back| bytes[n - 1 - back] == bytes[n - 1 - back - period])
            .count();
        let mut start = n - run - period;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        let mut end = start + period;
        while !text.is_char_boundary(end) {
            end += 1;
        }
        return Some((start, &text[start..end]));
    }
    None
}

/// When the complete lines at the end of `text` have stopped making
/// progress (see the module doc): where the run of lines starts, and its
/// most repeated line.
fn stuck_lines(text: &str) -> Option<(usize, &str)> {
    let complete = &text[..text.rfind('\n')? + 1];
    let mut distinct: Vec<Seen<'_>> = Vec::new();
    let (mut lines, mut bytes, mut start) = (0, 0, complete.len());
    for line in complete.split_inclusive('\n').rev() {
        let key = line.trim_end();
        let seen = match distinct.iter_mut().position(|seen| seen.line == key) {
            Some(at) => &mut distinct[at],
            None if distinct.len() == MAX_DISTINCT => break,
            None => {
                distinct.push(Seen {
                    line: key,
                    times: 0,
                    bytes: 0,
                    words: has_letter(key),
                });
                distinct.last_mut().expect("just pushed")
            }
        };
        seen.times += 1;
        seen.bytes += line.len();
        lines += 1;
        bytes += line.len();
        start -= line.len();
        if lines < MIN_LINES {
            continue;
        }
        let repeated_words: usize = distinct
            .iter()
            .filter(|seen| seen.words && seen.times >= MIN_REPEATS)
            .map(|seen| seen.bytes)
            .sum();
        if repeated_words >= WORDS_SPAN || bytes >= FILLER_SPAN {
            let unit = distinct
                .iter()
                .max_by_key(|seen| (seen.words, seen.times))
                .map_or("", |seen| seen.line);
            return Some((start, unit));
        }
    }
    None
}

/// One of the different lines of a run, as counted so far.
struct Seen<'a> {
    line: &'a str,
    times: usize,
    /// Bytes of all its occurrences, line ends included.
    bytes: usize,
    /// Whether it holds a letter.
    words: bool,
}

/// The first line of `unit`, at most 80 characters.
fn first_line(unit: &str) -> String {
    let line = unit
        .split('\n')
        .find(|l| !l.trim().is_empty())
        .unwrap_or(unit);
    line.chars().take(80).collect()
}

#[cfg(test)]
mod tests;
