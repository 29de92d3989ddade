//! The preflight: one cheap request before the audit, so that a server that
//! is down, a wrong base URL or a rejected key ends the run within seconds
//! instead of after pytest and pylint. It lists the models (`GET …/models`),
//! which the three APIs and the usual local servers (Ollama, llama.cpp,
//! vLLM, LM Studio) answer without spending a token.
//!
//! Only a clear sign that the real calls cannot work fails it: no
//! connection (refused, unknown host, nothing answering within
//! [`CONNECT_TIMEOUT`]), a rejected key (401, 403), no such API at that URL
//! (another 4xx, or a reply that is not JSON, such as a web page). A busy or
//! failing server (429, 5xx) or one slow to answer passes with a note: the
//! real calls have their own retries. It is not a model call, so it is not
//! in the experiment log.

use std::time::Duration;

use super::address::is_loopback;
use super::error::LlmError;
use super::settings::ProviderConfig;

/// How long the preflight waits for a connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long it waits for the whole answer once connected.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(4);

/// What the preflight found when the run may go on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Preflight {
    /// The endpoint answered as the provider's API.
    Ready,
    /// Nothing to check (recorded replies).
    Skipped,
    /// It answered, but not cleanly (busy, failing, slow): say so and go on.
    Doubtful(String),
}

/// The request that lists the provider's models: its URL and headers
/// (`None` when there is nothing to ask).
fn models_request(config: &ProviderConfig) -> Option<(String, Vec<(&'static str, String)>)> {
    let provider = config.kind.provider();
    let path = provider.models_path?;
    let key = config
        .api_key
        .as_ref()
        .map(|k| k.expose().trim())
        .filter(|k| !k.is_empty());
    let url = format!("{}{path}", provider.base_url_of(config));
    Some((url, (provider.headers)(key)))
}

/// Checks that the endpoint of `config` is there and speaks its API.
/// `Err(LlmError::Unreachable)` says what failed.
pub async fn preflight(config: &ProviderConfig) -> Result<Preflight, LlmError> {
    let Some((url, headers)) = models_request(config) else {
        return Ok(Preflight::Skipped);
    };
    let provider = config.kind.name();
    let unreachable = |what: String, source: Option<reqwest::Error>| LlmError::Unreachable {
        provider: provider.to_string(),
        url: url.clone(),
        what,
        source,
    };
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("swarm/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(ANSWER_TIMEOUT);
    if is_loopback(&url) {
        builder = builder.no_proxy();
    }
    let client = builder.build().map_err(|source| LlmError::Client {
        provider: provider.to_string(),
        source,
    })?;
    let mut request = client.get(&url);
    for (name, value) in &headers {
        request = request.header(*name, value);
    }
    let response = match request.send().await {
        Ok(response) => response,
        Err(err) if err.is_connect() => return Err(unreachable(connect_failure(&err), Some(err))),
        Err(err) if err.is_timeout() => {
            return Ok(Preflight::Doubtful(format!(
                "{provider}: {url} did not answer within {} s; going on",
                ANSWER_TIMEOUT.as_secs()
            )))
        }
        Err(err) => {
            let what = format!("the request failed: {}", error_chain(&err));
            return Err(unreachable(what, Some(err)));
        }
    };
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let body = match response.bytes().await {
        Ok(body) => body,
        Err(err) if err.is_timeout() => {
            return Ok(Preflight::Doubtful(format!(
                "{provider}: {url} was slow to answer; going on"
            )))
        }
        Err(err) => {
            let what = format!("the reply broke off: {}", error_chain(&err));
            return Err(unreachable(what, Some(err)));
        }
    };
    judge(status, &content_type, &body).map_err(|what| unreachable(what, None))
}

/// Whether a reply of `status` with `body` shows the API is there.
fn judge(status: u16, content_type: &str, body: &[u8]) -> Result<Preflight, String> {
    match status {
        200..=299 if serde_json::from_slice::<serde_json::Value>(body).is_ok() => {
            Ok(Preflight::Ready)
        }
        200..=299 if content_type.contains("html") || looks_like_html(body) => {
            Err("it answers with a web page, not the API".to_string())
        }
        200..=299 => Err("its answer is not JSON, so it is not the API".to_string()),
        401 | 403 => Err(format!("the key was rejected (HTTP {status})")),
        408 | 429 | 500..=599 => Ok(Preflight::Doubtful(format!(
            "the model server answered HTTP {status} to the preflight; going on"
        ))),
        _ => Err(format!("there is no API at this address (HTTP {status})")),
    }
}

fn looks_like_html(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(256)]).to_ascii_lowercase();
    let head = head.trim_start();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

/// Why a connection could not be made, in the words a user searches for.
fn connect_failure(err: &reqwest::Error) -> String {
    let chain = error_chain(err).to_ascii_lowercase();
    if chain.contains("refused") {
        "connection refused (is the server running?)".to_string()
    } else if chain.contains("dns") || chain.contains("resolve") || chain.contains("lookup") {
        "the host name does not resolve".to_string()
    } else if err.is_timeout() || chain.contains("timed out") {
        format!("nothing answered within {} s", CONNECT_TIMEOUT.as_secs())
    } else {
        format!("cannot connect: {}", error_chain(err))
    }
}

/// An error with its sources, `a: b: c`.
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ProviderKind;

    #[test]
    fn a_json_list_is_ready_and_a_web_page_or_a_rejected_key_is_not() {
        assert_eq!(
            judge(200, "application/json", br#"{"object":"list","data":[]}"#),
            Ok(Preflight::Ready)
        );
        let page = judge(
            200,
            "text/html",
            b"<!DOCTYPE html><html><title>Router</title>",
        );
        assert!(page.is_err_and(|e| e.contains("web page")));
        let page = judge(200, "", b"  <html><body>hi</body></html>");
        assert!(page.is_err_and(|e| e.contains("web page")));
        assert!(judge(200, "text/plain", b"hello").is_err_and(|e| e.contains("not JSON")));
        assert!(judge(401, "application/json", b"{}").is_err_and(|e| e.contains("rejected")));
        assert!(judge(404, "text/html", b"<html>").is_err_and(|e| e.contains("no API")));
    }

    #[test]
    fn a_busy_or_failing_server_passes_with_a_note() {
        for status in [429, 500, 503] {
            assert!(matches!(
                judge(status, "application/json", b"{}"),
                Ok(Preflight::Doubtful(_))
            ));
        }
    }

    #[test]
    fn each_provider_lists_its_models_where_its_api_lives() {
        let config = |kind, base: Option<&str>| ProviderConfig {
            kind,
            model: "m".into(),
            base_url: base.map(str::to_string),
            api_key: Some(crate::llm::Secret::new("k")),
            timeout: Duration::from_secs(1),
            max_attempts: 1,
            max_time: Duration::ZERO,
            replay_file: None,
        };
        let url = |kind, base| models_request(&config(kind, base)).map(|(u, _)| u);
        assert_eq!(
            url(ProviderKind::OpenAi, Some("http://127.0.0.1:8080/v1/")).as_deref(),
            Some("http://127.0.0.1:8080/v1/models")
        );
        assert_eq!(
            url(ProviderKind::Anthropic, Some("http://h/v1")).as_deref(),
            Some("http://h/v1/models")
        );
        assert_eq!(
            url(ProviderKind::Gemini, None).as_deref(),
            Some("https://generativelanguage.googleapis.com/v1beta/models")
        );
        assert_eq!(url(ProviderKind::Replay, None), None);
    }
}
