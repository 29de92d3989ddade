//! A loopback HTTP/1.1 server that plays an LLM API in tests.
//!
//! [`LlmServer::start`] listens on `127.0.0.1:<free port>` in a background
//! thread, records every request ([`RecordedRequest`]: method, path, headers,
//! body, arrival index) and answers each one with the [`Reply`] a handler
//! closure returns. Replies can be a success body in a provider's wire format
//! (OpenAI chat completions, Gemini generateContent, Anthropic Messages),
//! any status with body and headers (429 + `Retry-After`, 5xx, HTML pages),
//! malformed JSON, a hang-up, and any of these after a delay (to exceed a
//! client timeout). Streamed replies ([`Reply::openai_stream`],
//! [`Reply::gemini_stream`], [`Reply::anthropic_stream`],
//! [`Reply::stream_for`]) are server-sent events written chunk by chunk
//! (`Transfer-Encoding: chunked`) with a pause before each; one made to
//! [`Reply::stall_after`] some chunks keeps the connection open and silent
//! until the client gives up. Each connection is served by its own thread and closed
//! after one exchange (`Connection: close`), so a slow reply never blocks a
//! retry. The server stops when dropped.
//!
//! ```ignore
//! let server = LlmServer::start(|request| match request.index {
//!     0 => Reply::status(503, "busy"),
//!     _ => Reply::openai_text("--- a/x.py\n+++ b/x.py\n"),
//! });
//! let base = format!("{}/v1", server.base_url()); // OPENAI_BASE_URL
//! ```
// Shared by every test area; not every area uses every helper.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub use super::llm_stream::is_streaming;

/// Input tokens reported by the canned success replies.
pub const REPLY_INPUT_TOKENS: u64 = 12;
/// Output tokens reported by the canned success replies.
pub const REPLY_OUTPUT_TOKENS: u64 = 34;

/// One request the server received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedRequest {
    /// 0 for the first request the server received, then 1, 2, …
    pub index: usize,
    /// `POST`, `GET`, …
    pub method: String,
    /// The request target as sent, e.g. `/v1/chat/completions` (with any
    /// query string).
    pub path: String,
    /// Header names lowercased, values as sent, in order.
    pub headers: Vec<(String, String)>,
    /// The body bytes (chunked bodies are decoded).
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The body as text (lossy UTF-8).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; `Value::Null` when it is not JSON.
    pub fn body_json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// What the server answers.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// Extra headers (`Content-Length` and `Connection` are added).
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
    /// Wait this long before answering.
    pub delay: Duration,
    /// Close the connection without answering.
    pub hang_up: bool,
    /// When not empty, the body is sent in these pieces instead of `body`
    /// (chunked transfer encoding), each after its pause.
    pub chunks: Vec<Chunk>,
    /// After the chunks, keep the connection open and send nothing more.
    pub stall: bool,
}

/// One piece of a streamed body, written `pause` after the one before.
#[derive(Clone, Debug, PartialEq)]
pub struct Chunk {
    pub pause: Duration,
    pub bytes: Vec<u8>,
}

impl Reply {
    /// `status` with a JSON body.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::status(status, &body.to_string()).with_header("content-type", "application/json")
    }

    /// `status` with a plain-text body.
    pub fn status(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
            delay: Duration::ZERO,
            hang_up: false,
            chunks: Vec::new(),
            stall: false,
        }
    }

    /// `status` with an HTML error page titled `title`, as proxies and
    /// gateways send.
    pub fn html(status: u16, title: &str) -> Self {
        let page = format!(
            "<!DOCTYPE html>\n<html><head><title>{title}</title></head>\
             <body><center><h1>{title}</h1></center><hr><center>nginx</center></body></html>\n"
        );
        Self::status(status, &page).with_header("content-type", "text/html")
    }

    /// 200 with a body that is not valid JSON.
    pub fn malformed_json() -> Self {
        Self::status(200, r#"{"choices": [{"message": {"content": "unterminated"#)
            .with_header("content-type", "application/json")
    }

    /// Closes the connection without a reply (a connection error).
    pub fn hang_up() -> Self {
        Self {
            hang_up: true,
            ..Self::status(200, "")
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Answers only after `delay`.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// An OpenAI chat completion with `text` and `finish_reason`.
    pub fn openai_with_finish(text: &str, finish_reason: &str) -> Self {
        Self::json(
            200,
            &json!({
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": 0,
                "model": "test-model",
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish_reason,
                }],
                "usage": {
                    "prompt_tokens": REPLY_INPUT_TOKENS,
                    "completion_tokens": REPLY_OUTPUT_TOKENS,
                    "total_tokens": REPLY_INPUT_TOKENS + REPLY_OUTPUT_TOKENS,
                },
            }),
        )
    }

    /// An OpenAI chat completion that ends normally.
    pub fn openai_text(text: &str) -> Self {
        Self::openai_with_finish(text, "stop")
    }

    /// An OpenAI chat completion cut off by the token limit.
    pub fn openai_truncated(text: &str) -> Self {
        Self::openai_with_finish(text, "length")
    }

    /// A Gemini generateContent reply with `text` and `finishReason`.
    pub fn gemini_with_finish(text: &str, finish_reason: &str) -> Self {
        Self::json(
            200,
            &json!({
                "candidates": [{
                    "content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": finish_reason,
                    "index": 0,
                }],
                "usageMetadata": {
                    "promptTokenCount": REPLY_INPUT_TOKENS,
                    "candidatesTokenCount": REPLY_OUTPUT_TOKENS,
                    "totalTokenCount": REPLY_INPUT_TOKENS + REPLY_OUTPUT_TOKENS,
                },
                "modelVersion": "gemini-test",
            }),
        )
    }

    /// A Gemini reply that ends normally.
    pub fn gemini_text(text: &str) -> Self {
        Self::gemini_with_finish(text, "STOP")
    }

    /// A Gemini reply cut off by the token limit.
    pub fn gemini_truncated(text: &str) -> Self {
        Self::gemini_with_finish(text, "MAX_TOKENS")
    }

    /// An Anthropic Messages reply with `text` and `stop_reason`.
    pub fn anthropic_with_stop(text: &str, stop_reason: &str) -> Self {
        Self::json(
            200,
            &json!({
                "id": "msg_test",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [{"type": "text", "text": text}],
                "stop_reason": stop_reason,
                "stop_sequence": null,
                "usage": {
                    "input_tokens": REPLY_INPUT_TOKENS,
                    "output_tokens": REPLY_OUTPUT_TOKENS,
                },
            }),
        )
    }

    /// An Anthropic reply that ends normally.
    pub fn anthropic_text(text: &str) -> Self {
        Self::anthropic_with_stop(text, "end_turn")
    }

    /// An Anthropic reply cut off by the token limit.
    pub fn anthropic_truncated(text: &str) -> Self {
        Self::anthropic_with_stop(text, "max_tokens")
    }

    /// A success reply with `text` in the wire format `request` was sent in,
    /// told by its path (`…/chat/completions`, `…:generateContent`,
    /// `…/v1/messages`); 404 for any other path. Handy for end-to-end tests
    /// that do not care which provider is used.
    pub fn text_for(request: &RecordedRequest, text: &str) -> Self {
        let path = request.path.split('?').next().unwrap_or_default();
        if path.ends_with("/chat/completions") {
            Self::openai_text(text)
        } else if path.ends_with(":generateContent") || path.ends_with(":streamGenerateContent") {
            Self::gemini_text(text)
        } else if path.ends_with("/v1/messages") {
            Self::anthropic_text(text)
        } else {
            Self::json(
                404,
                &json!({"error": {"message": format!("no route {path}")}}),
            )
        }
    }
}

/// The handler type: decides the reply to each request.
type Handler = dyn Fn(&RecordedRequest) -> Reply + Send + Sync;

/// A running fake LLM API; stops on drop.
pub struct LlmServer {
    address: SocketAddr,
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
    /// The preflight's `GET …/models` requests, kept apart from the calls.
    preflights: Arc<Mutex<Vec<RecordedRequest>>>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl LlmServer {
    /// Starts a server on `127.0.0.1` at a free port, answering every
    /// request with `handler(request)` — except swarm's preflight (`GET
    /// …/models`), answered with a list of one model as the real APIs do,
    /// and kept apart ([`LlmServer::preflights`]).
    pub fn start(handler: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static) -> Self {
        let models =
            serde_json::json!({"object": "list", "data": [{"id": "m", "object": "model"}]});
        Self::start_with_models(Reply::json(200, &models), handler)
    }

    /// Like [`LlmServer::start`], answering the preflight with `models`.
    pub fn start_with_models(
        models: Reply,
        handler: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let address = listener
            .local_addr()
            .expect("a bound listener has an address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let preflights = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let models = Arc::new(models);
        let acceptor = {
            let requests = Arc::clone(&requests);
            let preflights = Arc::clone(&preflights);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let log = Log {
                        requests: Arc::clone(&requests),
                        preflights: Arc::clone(&preflights),
                        models: Arc::clone(&models),
                    };
                    let stop = Arc::clone(&stop);
                    let handler = Arc::clone(&handler);
                    std::thread::spawn(move || serve(stream, &log, &stop, &*handler));
                }
            })
        };
        Self {
            address,
            requests,
            preflights,
            stop,
            acceptor: Some(acceptor),
        }
    }

    /// Starts a server answering the n-th request with `replies[n]`, and
    /// every later one with the last reply.
    pub fn sequence(replies: Vec<Reply>) -> Self {
        assert!(!replies.is_empty(), "a sequence needs at least one reply");
        Self::start(move |request| {
            let index = request.index.min(replies.len() - 1);
            replies[index].clone()
        })
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash (add `/v1` for an
    /// OpenAI-compatible base URL).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Every request received so far, in arrival order (not the preflight).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests.lock().expect("request log lock").clone()
    }

    /// The preflight requests (`GET …/models`) received so far.
    pub fn preflights(&self) -> Vec<RecordedRequest> {
        self.preflights.lock().expect("preflight log lock").clone()
    }
}

/// Where one connection's request goes, and the preflight's answer.
struct Log {
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
    preflights: Arc<Mutex<Vec<RecordedRequest>>>,
    models: Arc<Reply>,
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the acceptor so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// Serves one connection: one request, one reply, then close.
fn serve(stream: TcpStream, log: &Log, stop: &AtomicBool, handler: &Handler) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Ok(reader_stream) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(reader_stream);
    let Some(mut request) = read_request(&mut reader) else {
        return;
    };
    let path = request.path.split('?').next().unwrap_or_default();
    if request.method == "GET" && path.ends_with("/models") {
        log.preflights
            .lock()
            .expect("preflight log lock")
            .push(request);
        let _ = write_reply(stream, &log.models);
        return;
    }
    {
        let mut requests = log.requests.lock().expect("request log lock");
        request.index = requests.len();
        requests.push(request.clone());
    }
    let reply = handler(&request);
    let deadline = Instant::now() + reply.delay;
    while Instant::now() < deadline {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if reply.hang_up {
        let _ = stream.shutdown(std::net::Shutdown::Both);
        return;
    }
    if reply.chunks.is_empty() && !reply.stall {
        let _ = write_reply(stream, &reply);
    } else {
        let _ = write_chunked(stream, &reply, stop);
    }
}

/// Waits `pause`, or less when the server stops; false when it stopped.
fn pause_unless_stopped(pause: Duration, stop: &AtomicBool) -> bool {
    let deadline = Instant::now() + pause;
    while Instant::now() < deadline {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5).min(pause));
    }
    !stop.load(Ordering::SeqCst)
}

/// Writes a streamed reply chunk by chunk; a stalling one then stays silent
/// until the client hangs up (noticed by a read) or the server stops.
fn write_chunked(mut stream: TcpStream, reply: &Reply, stop: &AtomicBool) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    stream.write_all(head.as_bytes())?;
    stream.flush()?;
    for chunk in &reply.chunks {
        if !pause_unless_stopped(chunk.pause, stop) {
            return Ok(());
        }
        stream.write_all(format!("{:x}\r\n", chunk.bytes.len()).as_bytes())?;
        stream.write_all(&chunk.bytes)?;
        stream.write_all(b"\r\n")?;
        stream.flush()?;
    }
    if reply.stall {
        // Silent until the client closes the connection or the server stops.
        stream.set_read_timeout(Some(Duration::from_millis(50)))?;
        let mut byte = [0u8; 1];
        while !stop.load(Ordering::SeqCst) {
            match std::io::Read::read(&mut stream, &mut byte) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(err)
                    if matches!(
                        err.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return Ok(()),
            }
        }
        return Ok(());
    }
    stream.write_all(b"0\r\n\r\n")?;
    stream.flush()?;
    let _ = stream.shutdown(std::net::Shutdown::Write);
    Ok(())
}

/// Reads a request head and its body (Content-Length or chunked).
fn read_request(reader: &mut impl BufRead) -> Option<RecordedRequest> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    };
    let body = if find("transfer-encoding").is_some_and(|value| value.contains("chunked")) {
        read_chunked(reader)?
    } else {
        let length: usize = find("content-length")
            .and_then(|value| value.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        body
    };
    Some(RecordedRequest {
        index: 0,
        method,
        path,
        headers,
        body,
    })
}

/// Decodes a chunked body.
fn read_chunked(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size_line = String::new();
        reader.read_line(&mut size_line).ok()?;
        let size_hex = size_line.trim().split(';').next()?;
        let size = usize::from_str_radix(size_hex, 16).ok()?;
        if size == 0 {
            // Skip trailers up to the blank line.
            loop {
                let mut trailer = String::new();
                if reader.read_line(&mut trailer).ok()? == 0 || trailer.trim().is_empty() {
                    return Some(body);
                }
            }
        }
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).ok()?;
        chunk.truncate(size);
        body.extend_from_slice(&chunk);
    }
}

fn write_reply(mut stream: TcpStream, reply: &Reply) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        reply.body.len()
    ));
    stream.write_all(head.as_bytes())?;
    stream.write_all(&reply.body)?;
    stream.flush()?;
    let _ = stream.shutdown(std::net::Shutdown::Write);
    Ok(())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}
