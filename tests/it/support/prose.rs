//! Long text that does not repeat itself: what a model writes at length
//! without falling into a loop (swarm cuts a reply that loops, so a test of
//! a long reply must not loop).

/// A deterministic pseudo-random number for `n` and `salt` (splitmix64).
fn mix(n: u64, salt: u64) -> u64 {
    let mut z = n
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(salt.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const WORDS: [&str; 32] = [
    "reading", "value", "module", "function", "average", "median", "sensor", "window", "the", "a",
    "each", "every", "returns", "skips", "rounds", "sorts", "list", "index", "first", "last",
    "middle", "empty", "count", "total", "noted", "checked", "again", "closely", "before", "after",
    "with", "without",
];

/// About `chars` characters of sentences made of varied words, starting
/// with `opening`.
pub fn sentences(opening: &str, chars: usize) -> String {
    let mut text = String::from(opening);
    let mut n = 0u64;
    while text.len() < chars {
        let words = 6 + (mix(n, 1) % 7) as usize;
        for _ in 0..words {
            n += 1;
            let word = WORDS[(mix(n, 2) % WORDS.len() as u64) as usize];
            text.push(' ');
            text.push_str(word);
        }
        text.push('.');
    }
    text
}

/// `len` lower-case letters that never settle into a repeating pattern.
pub fn letters(len: usize) -> String {
    (0..len as u64)
        .map(|n| char::from(b'a' + (mix(n, 3) % 26) as u8))
        .collect()
}
