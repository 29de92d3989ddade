//! The bench's loopback OpenAI-compatible model: it answers each request as
//! a good model would for the generated project, and records what it was
//! sent. A looping one ([`ModelServer::looping`]) streams its first fix
//! reply as a small local model that falls into a loop does — a good start,
//! then the same span again and again at a steady token rate until the
//! client hangs up — and keeps when the loop began and when it was cut
//! ([`LoopCut`]).

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::scale::{RequestKind, ScaleProject};
use super::Request;

/// What the looping model's first fix reply says again and again.
const LOOP_UNIT: &str = "import test_tokenize_is_case_insensitive; ";
/// The head of a streamed reply.
const HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                    transfer-encoding: chunked\r\nconnection: close\r\n\r\n";
/// Characters of one streamed token.
const TOKEN_CHARS: usize = 4;
/// The loop gives up after this many tokens when nobody cuts it.
const LOOP_TOKENS: usize = 8_192;

/// A loopback OpenAI-compatible model: one thread per connection, one
/// exchange per connection; stops on drop.
pub struct ModelServer {
    address: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
    cut: Arc<Mutex<Option<LoopCut>>>,
}

/// The looping reply as the server saw it.
#[derive(Clone, Copy, Debug)]
pub struct LoopCut {
    /// When its first looping token went out.
    pub began: Instant,
    /// When the client hung up; `None` when it read the loop to its end.
    pub hung_up: Option<Instant>,
    /// Looping tokens written.
    pub tokens: usize,
}

/// How the server answers the first fix request.
#[derive(Clone, Copy)]
struct Behaviour {
    /// Tokens per second of a looping first fix reply; `None`: a good one.
    loop_rate: Option<f64>,
}

impl ModelServer {
    pub fn start(project: ScaleProject) -> Self {
        Self::serving(project, Behaviour { loop_rate: None })
    }

    /// A model whose first fix reply loops, streamed at `tokens_per_second`.
    pub fn looping(project: ScaleProject, tokens_per_second: f64) -> Self {
        Self::serving(
            project,
            Behaviour {
                loop_rate: Some(tokens_per_second),
            },
        )
    }

    /// The looping reply, once it has ended.
    pub fn loop_cut(&self) -> Option<LoopCut> {
        *self.cut.lock().expect("loop lock")
    }

    fn serving(project: ScaleProject, behaviour: Behaviour) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let address = listener
            .local_addr()
            .expect("a bound listener has an address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let cut = Arc::new(Mutex::new(None));
        let project = Arc::new(project);
        let acceptor = {
            let (requests, stop) = (Arc::clone(&requests), Arc::clone(&stop));
            let cut = Arc::clone(&cut);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (requests, project) = (Arc::clone(&requests), Arc::clone(&project));
                    let server = Served {
                        project,
                        requests,
                        cut: Arc::clone(&cut),
                        behaviour,
                    };
                    std::thread::spawn(move || serve(stream, &server));
                }
            })
        };
        Self {
            address,
            requests,
            stop,
            acceptor: Some(acceptor),
            cut,
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("request log lock").clone()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// What one connection's thread shares with the server.
struct Served {
    project: Arc<ScaleProject>,
    requests: Arc<Mutex<Vec<Request>>>,
    cut: Arc<Mutex<Option<LoopCut>>>,
    behaviour: Behaviour,
}

/// Reads one request, records it and answers as a good model would (or,
/// for a looping model's first fix request, with a loop).
fn serve(stream: TcpStream, served: &Served) {
    let (project, requests) = (&*served.project, &*served.requests);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(reader) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(reader);
    let Some((path, body)) = read_request(&mut reader) else {
        return;
    };
    let (status, reply) = if path.ends_with("/chat/completions") {
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let (system, user, chars) = texts(&body);
        let kind = project.classify(&system, &user);
        let fixes_before = {
            let mut requests = requests.lock().expect("request log lock");
            let fixes = requests
                .iter()
                .filter(|r| r.kind != RequestKind::Plan)
                .count();
            requests.push(Request { kind, chars });
            fixes
        };
        if let (Some(rate), RequestKind::FixBuggy, 0) =
            (served.behaviour.loop_rate, kind, fixes_before)
        {
            let cut = stream_loop(stream, rate);
            *served.cut.lock().expect("loop lock") = Some(cut);
            return;
        }
        let text = project.reply(&system, &user);
        (200, completion(&body, &text, chars))
    } else if path.ends_with("/models") {
        // swarm's preflight: the endpoint is there.
        (
            200,
            json!({"object": "list", "data": [{"id": "m", "object": "model"}]}),
        )
    } else {
        (
            404,
            json!({"error": {"message": format!("no route {path}")}}),
        )
    };
    let _ = write_reply(stream, status, &reply.to_string());
}

/// Streams a reply that starts well and falls into a loop, one token of
/// [`TOKEN_CHARS`] characters each `1 / rate` seconds, until the client
/// hangs up (or [`LOOP_TOKENS`] have gone).
fn stream_loop(mut stream: TcpStream, rate: f64) -> LoopCut {
    let pause = Duration::from_secs_f64(1.0 / rate);
    let mut cut_short = stream.write_all(HEAD.as_bytes()).is_err();
    // The client hanging up shows as the end of what it sends.
    let hung_up = Arc::new(Mutex::new(None));
    if let Ok(mut reader) = stream.try_clone() {
        let hung_up = Arc::clone(&hung_up);
        let _ = reader.set_read_timeout(None);
        std::thread::spawn(move || {
            let mut byte = [0u8; 1];
            while let Ok(1) = std::io::Read::read(&mut reader, &mut byte) {}
            *hung_up.lock().expect("hang-up lock") = Some(Instant::now());
        });
    }
    let mut write = |text: &str| -> std::io::Result<()> {
        let event = format!(
            "data: {}\n\n",
            json!({"object": "chat.completion.chunk",
                   "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
        );
        write!(stream, "{:x}\r\n{event}\r\n", event.len())?;
        stream.flush()
    };
    let is_cut = || hung_up.lock().expect("hang-up lock").is_some();
    for piece in pieces("I will fix the discount.\n\n```diff\n+") {
        if cut_short || write(&piece).is_err() {
            cut_short = true;
            break;
        }
        std::thread::sleep(pause);
    }
    let began = Instant::now();
    let looping = LOOP_UNIT.repeat(LOOP_TOKENS * TOKEN_CHARS / LOOP_UNIT.len() + 1);
    let mut tokens = 0;
    for piece in pieces(&looping).into_iter().take(LOOP_TOKENS) {
        if cut_short || is_cut() || write(&piece).is_err() {
            cut_short = true;
            break;
        }
        tokens += 1;
        std::thread::sleep(pause);
    }
    // A write that failed before the reader saw the end is the hang-up.
    let seen = *hung_up.lock().expect("hang-up lock");
    LoopCut {
        began,
        hung_up: seen.or_else(|| cut_short.then(Instant::now)),
        tokens,
    }
}

/// `text` in tokens of [`TOKEN_CHARS`] characters.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(TOKEN_CHARS)
        .map(|c| c.iter().collect())
        .collect()
}

/// The system prompt, the first user message and the characters of every
/// message of an OpenAI chat request.
fn texts(body: &Value) -> (String, String, usize) {
    let mut system = String::new();
    let mut user = None;
    let mut chars = 0;
    for message in body["messages"].as_array().into_iter().flatten() {
        let content = message["content"].as_str().unwrap_or_default();
        chars += content.chars().count();
        match message["role"].as_str() {
            Some("system") => system.push_str(content),
            Some("user") if user.is_none() => user = Some(content.to_string()),
            _ => {}
        }
    }
    (system, user.unwrap_or_default(), chars)
}

/// An OpenAI chat completion carrying `text`, with rough token counts.
fn completion(request: &Value, text: &str, prompt_chars: usize) -> Value {
    let (input, output) = (prompt_chars / 4, text.chars().count() / 4);
    json!({
        "id": "chatcmpl-scale",
        "object": "chat.completion",
        "created": 0,
        "model": request["model"].as_str().unwrap_or("scale-model"),
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
        }],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output},
    })
}

/// The request target and body (Content-Length or chunked).
fn read_request(reader: &mut impl BufRead) -> Option<(String, Vec<u8>)> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let (mut length, mut chunked) = (0, false);
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "transfer-encoding" => chunked = value.contains("chunked"),
            _ => {}
        }
    }
    if !chunked {
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        return Some((path, body));
    }
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).ok()?;
        let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).ok()?;
        if size == 0 {
            return Some((path, body));
        }
        chunk.truncate(size);
        body.extend_from_slice(&chunk);
    }
}

fn write_reply(mut stream: TcpStream, status: u16, body: &str) -> std::io::Result<()> {
    let reason = if status == 200 { "OK" } else { "Not Found" };
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()?;
    let _ = stream.shutdown(std::net::Shutdown::Write);
    Ok(())
}
