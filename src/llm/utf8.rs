//! Telling whether a reply's bytes are text: where the first byte that is
//! not UTF-8 sits, and JSON `\u` escapes of lone surrogates (valid JSON
//! that no UTF-8 string can hold). Replies are never decoded lossily; these
//! explain why one was refused ([`super::LlmError::NotUtf8`]).

/// Where and what the first bad byte of a body is.
pub(crate) fn describe_error(err: std::str::Utf8Error, bytes: &[u8]) -> String {
    let at = err.valid_up_to();
    match (err.error_len(), bytes.get(at)) {
        (Some(_), Some(byte)) => format!("byte 0x{byte:02x} at offset {at} of the body"),
        _ => format!("the body ends inside a character at offset {at}"),
    }
}

/// The first `\uXXXX` escape in a JSON text that encodes half of a
/// surrogate pair without its other half (no UTF-8 text can hold it).
pub(crate) fn lone_surrogate(body: &str) -> Option<String> {
    let bytes = body.as_bytes();
    let unit_at = |i: usize| -> Option<u16> {
        let hex = body.get(i + 2..i + 6)?;
        (bytes.get(i) == Some(&b'\\') && bytes.get(i + 1) == Some(&b'u'))
            .then(|| u16::from_str_radix(hex, 16).ok())
            .flatten()
    };
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(unit) = unit_at(i) else {
            // Any other escape: skip the backslash and the escaped character.
            i += 2;
            continue;
        };
        let escape = body[i..i + 6].to_string();
        match unit {
            0xD800..=0xDBFF => match unit_at(i + 6) {
                Some(0xDC00..=0xDFFF) => i += 12,
                _ => return Some(escape),
            },
            0xDC00..=0xDFFF => return Some(escape),
            _ => i += 6,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_are_found_and_pairs_are_not() {
        assert_eq!(
            lone_surrogate(r#"{"a":"x\udc80y"}"#).as_deref(),
            Some("\\udc80")
        );
        assert_eq!(
            lone_surrogate(r#"{"a":"x\ud800y"}"#).as_deref(),
            Some("\\ud800")
        );
        assert_eq!(lone_surrogate(r#"{"a":"\ud83d\ude00 \u00e9"}"#), None);
        assert_eq!(
            lone_surrogate(r#"{"a":"\\udc80"}"#),
            None,
            "an escaped backslash"
        );
    }

    #[test]
    fn utf8_errors_name_the_byte_and_offset() {
        let bytes = vec![b'a', b'b', 0xff, b'c'];
        let err = std::str::from_utf8(&bytes).unwrap_err();
        assert_eq!(
            describe_error(err, &bytes),
            "byte 0xff at offset 2 of the body"
        );
        let bytes = vec![b'a', b'b', 0xe2, 0x82];
        let err = std::str::from_utf8(&bytes).unwrap_err();
        assert!(describe_error(err, &bytes).contains("ends inside"));
    }
}
