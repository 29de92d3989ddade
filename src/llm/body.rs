//! Explaining a reply body in one line for an error message: the
//! `error.message` of a JSON error, the title and text of an HTML page, or
//! the body itself, bounded and whitespace-collapsed. Pure text work; the
//! caller scrubs keys.

/// Longest excerpt of a body put in an error, in characters.
pub(crate) const EXCERPT_CHARS: usize = 300;

/// Turns a reply body into a one-line explanation of at most
/// [`EXCERPT_CHARS`] characters: the `error.message` of a JSON error, the
/// title and text of an HTML page, or the body itself.
pub(crate) fn explain_body(body: &str) -> String {
    let trimmed = body.trim();
    let text = if trimmed.is_empty() {
        "(empty body)".to_string()
    } else if let Some(message) = json_error_message(trimmed) {
        message
    } else if looks_like_html(trimmed) {
        format!("HTML page instead of JSON: {}", html_text(trimmed))
    } else {
        trimmed.to_string()
    };
    truncate_chars(&collapse_whitespace(&text), EXCERPT_CHARS)
}

/// The message of `{"error": {"message": …}}` (OpenAI, Anthropic, Gemini)
/// or `{"error": "…"}` (Ollama and others), with its type or status.
fn json_error_message(body: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    let error = value.get("error")?;
    if let Some(text) = error.as_str() {
        return Some(text.to_string());
    }
    let message = error.get("message")?.as_str()?;
    let kind = error
        .get("type")
        .or_else(|| error.get("status"))
        .and_then(|kind| kind.as_str());
    Some(match kind {
        Some(kind) => format!("{kind}: {message}"),
        None => message.to_string(),
    })
}

/// Whether a body is an HTML page (proxies, gateways, wrong base URLs).
pub(crate) fn looks_like_html(body: &str) -> bool {
    let head: String = body
        .trim_start()
        .chars()
        .take(100)
        .collect::<String>()
        .to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html") || head.starts_with("<head")
}

/// The title and visible text of an HTML page, tags and scripts removed.
fn html_text(page: &str) -> String {
    let lower = page.to_ascii_lowercase();
    let title = lower.find("<title").and_then(|start| {
        let open_end = start + lower[start..].find('>')? + 1;
        let close = open_end + lower[open_end..].find("</title")?;
        Some(page[open_end..close].trim().to_string())
    });
    let body_start = lower.find("<body").unwrap_or(0);
    let mut text = String::new();
    let mut in_tag = false;
    let mut skip_until: Option<&str> = None;
    let mut index = body_start;
    while index < page.len() {
        let rest = &lower[index..];
        if let Some(end) = skip_until {
            if rest.starts_with(end) {
                skip_until = None;
            }
            index += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        }
        if rest.starts_with("<script") {
            skip_until = Some("</script");
        } else if rest.starts_with("<style") {
            skip_until = Some("</style");
        }
        let ch = page[index..].chars().next().unwrap_or(' ');
        match ch {
            '<' => {
                in_tag = true;
                text.push(' ');
            }
            '>' => in_tag = false,
            _ if !in_tag => text.push(ch),
            _ => {}
        }
        index += ch.len_utf8();
    }
    let text = collapse_whitespace(&text);
    match title {
        Some(title) if !title.is_empty() && !text.starts_with(&title) => {
            format!("{title} — {text}")
        }
        _ => text,
    }
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters of `text`, with `…` when cut.
pub(crate) fn truncate_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_pages_are_explained() {
        let page = "<!DOCTYPE html><html><head><title>502 Bad Gateway</title>\
                    <style>body{color:red}</style></head><body><h1>Bad Gateway</h1>\
                    <script>var x = 1;</script><p>nginx</p></body></html>";
        let text = explain_body(page);
        assert_eq!(
            text,
            "HTML page instead of JSON: 502 Bad Gateway — Bad Gateway nginx"
        );
    }

    #[test]
    fn json_errors_show_their_message() {
        let body = r#"{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}"#;
        assert_eq!(explain_body(body), "rate_limit_error: Rate limit reached");
        assert_eq!(
            explain_body(r#"{"error":"model not found"}"#),
            "model not found"
        );
    }

    #[test]
    fn excerpts_are_bounded() {
        let long = "x".repeat(1000);
        assert_eq!(explain_body(&long).chars().count(), EXCERPT_CHARS);
    }
}
