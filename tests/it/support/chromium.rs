//! A real headless Chromium driven over the DevTools protocol: open a page,
//! collect its console errors and uncaught exceptions, read its DOM.
//!
//! The browser runs in its own process group with a private profile and no
//! network; [`Chromium`]'s `Drop` kills the whole group, whatever the test
//! did. A missing browser fails the test with the line that installs it.

#![allow(dead_code)]

use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// Debian's Chromium.
pub const CHROMIUM: &str = "/usr/bin/chromium";
/// How long any one step may take on a loaded machine.
const STEP: Duration = Duration::from_secs(60);

/// A running headless Chromium with one page attached.
pub struct Chromium {
    child: Child,
    _profile: tempfile::TempDir,
    socket: WebSocket<MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
    /// Every event received so far, in order.
    pub events: Vec<Value>,
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let _ = self.socket.close(None);
        // The wrapper script and every browser process share the group.
        // SAFETY: kill(2) on a process group this test created.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Chromium {
    /// Starts Chromium and attaches to a blank page with the runtime, log
    /// and page domains enabled.
    pub fn start() -> Self {
        assert!(
            Path::new(CHROMIUM).exists(),
            "{CHROMIUM} is missing: install it with `DEBIAN_FRONTEND=noninteractive apt-get install -y chromium`"
        );
        let profile = tempfile::tempdir().expect("profile folder");
        let child = Command::new(CHROMIUM)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {CHROMIUM}: {e}"));
        let port_file = profile.path().join("DevToolsActivePort");
        let started = Instant::now();
        let active = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                if text.lines().count() >= 2 {
                    break text;
                }
            }
            assert!(
                started.elapsed() < STEP,
                "Chromium wrote no DevToolsActivePort in {STEP:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        let mut lines = active.lines();
        let port = lines.next().expect("port line").trim().to_string();
        let path = lines.next().expect("path line").trim().to_string();
        let url = format!("ws://127.0.0.1:{port}{path}");
        let (socket, _) = tungstenite::connect(url.as_str())
            .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"));
        if let MaybeTlsStream::Plain(stream) = socket.get_ref() {
            stream
                .set_read_timeout(Some(Duration::from_millis(500)))
                .expect("read timeout");
        }
        let mut browser = Chromium {
            child,
            _profile: profile,
            socket,
            session: String::new(),
            next_id: 0,
            events: Vec::new(),
        };
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].as_str().expect("target id").to_string();
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .expect("session id")
            .to_string();
        for domain in ["Runtime.enable", "Log.enable", "Page.enable"] {
            browser.call(domain, json!({}));
        }
        browser
    }

    /// Sends a command (to the page once attached) and waits for its result.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .unwrap_or_else(|e| panic!("send {method}: {e}"));
        let started = Instant::now();
        loop {
            assert!(
                started.elapsed() < STEP,
                "no answer to {method} in {STEP:?}"
            );
            let Some(value) = self.read() else { continue };
            if value["id"] == id {
                assert!(
                    value.get("error").is_none(),
                    "{method} failed: {}",
                    value["error"]
                );
                return value["result"].clone();
            }
            if value.get("method").is_some() {
                self.events.push(value);
            }
        }
    }

    /// One message, or `None` when none came within the read timeout.
    fn read(&mut self) -> Option<Value> {
        match self.socket.read() {
            Ok(Message::Text(text)) => {
                Some(serde_json::from_str(text.as_str()).expect("DevTools sends JSON"))
            }
            Ok(_) => None,
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                None
            }
            Err(e) => panic!("DevTools connection failed: {e}"),
        }
    }

    /// Waits until an event named `method` has arrived.
    pub fn wait_for(&mut self, method: &str) {
        let started = Instant::now();
        while !self.events.iter().any(|e| e["method"] == method) {
            assert!(started.elapsed() < STEP, "no {method} in {STEP:?}");
            if let Some(value) = self.read() {
                if value.get("method").is_some() {
                    self.events.push(value);
                }
            }
        }
    }

    /// Opens `file` and waits for its load event.
    pub fn open(&mut self, file: &Path) {
        let url = format!("file://{}", file.display());
        let navigated = self.call("Page.navigate", json!({"url": url}));
        assert!(
            navigated.get("errorText").is_none(),
            "cannot open {url}: {navigated}"
        );
        self.wait_for("Page.loadEventFired");
    }

    /// Evaluates `expression` in the page; its value (by value).
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression} threw: {}",
            result["exceptionDetails"]
        );
        result["result"]["value"].clone()
    }

    /// Uncaught exceptions, console errors and error log entries so far.
    pub fn errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| {
                let p = &e["params"];
                match e["method"].as_str()? {
                    "Runtime.exceptionThrown" => {
                        Some(format!("exception: {}", p["exceptionDetails"]))
                    }
                    "Runtime.consoleAPICalled" if p["type"] == "error" || p["type"] == "assert" => {
                        Some(format!("console.{}: {}", p["type"], p["args"]))
                    }
                    "Log.entryAdded" if p["entry"]["level"] == "error" => {
                        Some(format!("log: {}", p["entry"]))
                    }
                    _ => None,
                }
            })
            .collect()
    }
}
