//! The bench's loopback OpenAI-compatible model: it answers each request as
//! a good model would for the generated project, and records what it was
//! sent.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

use super::scale::ScaleProject;
use super::Request;

/// A loopback OpenAI-compatible model: one thread per connection, one
/// exchange per connection; stops on drop.
pub struct ModelServer {
    address: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl ModelServer {
    pub fn start(project: ScaleProject) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let address = listener
            .local_addr()
            .expect("a bound listener has an address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let project = Arc::new(project);
        let acceptor = {
            let (requests, stop) = (Arc::clone(&requests), Arc::clone(&stop));
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (requests, project) = (Arc::clone(&requests), Arc::clone(&project));
                    std::thread::spawn(move || serve(stream, &project, &requests));
                }
            })
        };
        Self {
            address,
            requests,
            stop,
            acceptor: Some(acceptor),
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

/// Reads one request, records it and answers as a good model would.
fn serve(stream: TcpStream, project: &ScaleProject, requests: &Mutex<Vec<Request>>) {
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
        requests
            .lock()
            .expect("request log lock")
            .push(Request { kind, chars });
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
