//! A small local HTTP server that plays a model provider: used by `bench runner` and by the
//! tests, scripted by a handler that decides each reply (status, delay, reset, hang).
//!
//! Plain `std::net`, one thread per connection, `Connection: close` on every reply: it is
//! simple enough to fail exactly the way a test asks (a reset, a timeout), which a real HTTP
//! server library would smooth over.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::config::ProviderKind;

use super::wire;

/// One request as the fake server saw it.
#[derive(Debug, Clone)]
pub struct FakeRequest {
    /// 1-based arrival number.
    pub number: u64,
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub at: Instant,
}

impl FakeRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// The wire format, from the path.
    pub fn kind(&self) -> ProviderKind {
        if self.path.ends_with("/messages") {
            ProviderKind::Anthropic
        } else if self.path.contains(":generateContent") {
            ProviderKind::Gemini
        } else {
            ProviderKind::Openai
        }
    }

    /// How many numbered items (`N. text` lines) the last user message lists.
    /// The text of the last user message ("" when there is none).
    pub fn user_message(&self) -> String {
        wire::request_messages(&self.json())
            .into_iter()
            .rev()
            .find(|(role, _)| role == "user")
            .map(|(_, text)| text)
            .unwrap_or_default()
    }

    pub fn item_count(&self) -> usize {
        self.user_message()
            .lines()
            .filter(|l| {
                let digits: String = l.chars().take_while(char::is_ascii_digit).collect();
                !digits.is_empty() && l[digits.len()..].starts_with(". ")
            })
            .count()
    }
}

/// What the fake server does with one request.
#[derive(Debug, Clone)]
pub enum FakeAction {
    Reply {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
        delay: Duration,
    },
    /// Close the connection at once without replying (a reset connection).
    Reset,
    /// Say nothing for this long, then close.
    Hang(Duration),
}

impl FakeAction {
    /// A valid answer to every item (all `score`), in the request's own wire format.
    pub fn answer(req: &FakeRequest, score: i32, delay: Duration) -> Self {
        let text: Vec<String> = (1..=req.item_count())
            .map(|i| format!("{i}. {score}"))
            .collect();
        Self::text(req, &text.join("\n"), delay)
    }

    /// A successful completion with this text.
    pub fn text(req: &FakeRequest, text: &str, delay: Duration) -> Self {
        let input = i64::try_from(req.body.len() / 4).unwrap_or(0);
        let output = i64::try_from(text.len() / 2).unwrap_or(0);
        FakeAction::Reply {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: wire::reply_body(req.kind(), text, input, output).to_string(),
            delay,
        }
    }

    /// An error status with a small JSON body.
    pub fn status(status: u16, headers: &[(&str, &str)]) -> Self {
        FakeAction::Reply {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .chain([("content-type".to_owned(), "application/json".to_owned())])
                .collect(),
            body: format!("{{\"error\":{{\"message\":\"fake status {status}\"}}}}"),
            delay: Duration::ZERO,
        }
    }
}

type Handler = dyn Fn(&FakeRequest) -> FakeAction + Send + Sync;

/// A running fake server; stops when dropped.
pub struct FakeServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<FakeRequest>>>,
}

impl FakeServer {
    /// Starts on 127.0.0.1 with a free port.
    pub fn start(
        handler: impl Fn(&FakeRequest) -> FakeAction + Send + Sync + 'static,
    ) -> std::io::Result<FakeServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let counter = Arc::new(AtomicU64::new(0));
        let (stop2, log2) = (stop.clone(), log.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (handler, log, counter) = (handler.clone(), log2.clone(), counter.clone());
                std::thread::spawn(move || serve(stream, &*handler, &log, &counter));
            }
        });
        Ok(FakeServer { addr, stop, log })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/v1`: the base URL of an OpenAI-style provider.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<FakeRequest> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(stream: TcpStream, handler: &Handler, log: &Mutex<Vec<FakeRequest>>, counter: &AtomicU64) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() || line.is_empty() {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let (k, v) = (k.trim().to_owned(), v.trim().to_owned());
            if k.eq_ignore_ascii_case("content-length") {
                length = v.parse().unwrap_or(0);
            }
            headers.push((k, v));
        }
    }
    let mut body = vec![0u8; length.min(64 * 1024 * 1024)];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let req = FakeRequest {
        number: counter.fetch_add(1, Ordering::SeqCst) + 1,
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        at: Instant::now(),
    };
    if let Ok(mut l) = log.lock() {
        l.push(req.clone());
    }
    let mut stream = stream;
    match handler(&req) {
        FakeAction::Reset => {
            // SO_LINGER 0 would send an RST; closing both halves without a reply is what a
            // client sees as a broken connection either way.
            let _ = stream.shutdown(Shutdown::Both);
        }
        FakeAction::Hang(d) => {
            std::thread::sleep(d);
            let _ = stream.shutdown(Shutdown::Both);
        }
        FakeAction::Reply {
            status,
            headers,
            body,
            delay,
        } => {
            std::thread::sleep(delay);
            let mut out = format!(
                "HTTP/1.1 {status} {}\r\ncontent-length: {}\r\nconnection: close\r\n",
                reason(status),
                body.len()
            );
            for (k, v) in headers {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
            out.push_str("\r\n");
            out.push_str(&body);
            let _ = stream.write_all(out.as_bytes());
            let _ = stream.flush();
            let _ = stream.shutdown(Shutdown::Write);
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}
