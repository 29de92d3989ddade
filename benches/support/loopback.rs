//! A loopback model for the benches: OpenAI chat completions on a loopback
//! port, answered by a function of the request's first user message, with
//! the requests and prompt characters counted.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// What the loopback model saw.
#[derive(Default)]
pub struct Seen {
    pub requests: AtomicUsize,
    pub prompt_chars: AtomicUsize,
}

impl Seen {
    /// (requests, prompt characters) so far.
    pub fn counts(&self) -> (usize, usize) {
        (
            self.requests.load(Ordering::SeqCst),
            self.prompt_chars.load(Ordering::SeqCst),
        )
    }
}

/// Serves until the process ends; the base URL (`http://127.0.0.1:N/v1`).
pub fn serve(answer: impl Fn(&str) -> String + Send + 'static, seen: Arc<Seen>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let address = listener.local_addr().expect("a bound address");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let mut chars = 0;
            let mut first_user = String::new();
            for m in request["messages"].as_array().into_iter().flatten() {
                let text = m["content"].as_str().unwrap_or_default();
                chars += text.chars().count();
                if m["role"] == "user" && first_user.is_empty() {
                    first_user = text.to_string();
                }
            }
            seen.requests.fetch_add(1, Ordering::SeqCst);
            seen.prompt_chars.fetch_add(chars, Ordering::SeqCst);
            let text = answer(&first_user);
            let reply = serde_json::json!({
                "id": "bench", "object": "chat.completion", "created": 0, "model": "bench",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": chars / 4, "completion_tokens": text.len() / 4,
                          "total_tokens": (chars + text.len()) / 4},
            })
            .to_string();
            let mut stream = reader.into_inner();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    format!("http://{address}/v1")
}

/// Runs git in `dir` with `home` as HOME; panics when it fails.
pub fn git(dir: &std::path::Path, home: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?} failed");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// swarm in `repo` with `home` as HOME and its cache there, asking the
/// loopback model at `base` (no other provider's key reaches it).
pub fn swarm(repo: &std::path::Path, home: &std::path::Path, base: &str) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_swarm"));
    command
        .current_dir(repo)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("SWARM_CACHE_DIR", home.join(".cache/swarm"))
        .env("OPENAI_API_KEY", "sk-bench")
        .env("OPENAI_BASE_URL", base)
        .env_remove("GEMINI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY");
    command
}
