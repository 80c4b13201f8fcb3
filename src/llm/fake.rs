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

/// Replies as the real providers send them, for tests that must fail the way a real provider
/// would. Each body is copied from the provider's published reference or from error bodies
/// quoted in public issue threads (cited next to each); where a detail could not be confirmed
/// the comment says so.
pub mod real {
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::{FakeAction, FakeRequest};

    /// Any JSON reply.
    pub fn json(status: u16, headers: &[(&str, &str)], body: &Value) -> FakeAction {
        FakeAction::Reply {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .chain([("content-type".to_owned(), "application/json".to_owned())])
                .collect(),
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    /// The OpenAI error object (openapi.yaml `ErrorResponse`: message, type, param, code).
    pub fn openai_error(
        status: u16,
        message: &str,
        kind: &str,
        param: Option<&str>,
        code: &str,
    ) -> FakeAction {
        json(
            status,
            &[],
            &json!({"error": {"message": message, "type": kind, "param": param, "code": code}}),
        )
    }

    /// An OpenAI reasoning model (o-series, GPT-5): 400 on `max_tokens`, on `top_p`, and on a
    /// temperature other than 1, as the API answers (messages quoted in public threads, e.g.
    /// "Unsupported parameter: 'max_tokens' is not supported with this model. Use
    /// 'max_completion_tokens' instead.", code `unsupported_parameter`). Else `answer`.
    pub fn openai_reasoning(req: &FakeRequest, answer: FakeAction) -> FakeAction {
        let body = req.json();
        if body.get("max_tokens").is_some() {
            return openai_error(
                400,
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
                "invalid_request_error",
                Some("max_tokens"),
                "unsupported_parameter",
            );
        }
        if body.get("top_p").is_some() {
            return openai_error(
                400,
                "Unsupported parameter: 'top_p' is not supported with this model.",
                "invalid_request_error",
                Some("top_p"),
                "unsupported_parameter",
            );
        }
        if body.get("temperature").is_some_and(|t| t != 1.0) {
            return openai_error(
                400,
                "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.",
                "invalid_request_error",
                Some("temperature"),
                "unsupported_value",
            );
        }
        answer
    }

    /// The Anthropic error object (SDK `ErrorResponse`: `{"type": "error", "error": {"type",
    /// "message"}, "request_id"}`).
    pub fn anthropic_error(status: u16, kind: &str, message: &str) -> FakeAction {
        json(
            status,
            &[],
            &json!({"type": "error", "error": {"type": kind, "message": message},
                    "request_id": "req_fake"}),
        )
    }

    /// Claude's sampling rules: Opus 4.7 and later refuse `temperature` ("`temperature` is
    /// deprecated for this model."), Claude 4.5 and later refuse temperature with top_p
    /// ("`temperature` and `top_p` cannot both be specified for this model. Please use only
    /// one."); both 400 invalid_request_error (BerriAI/litellm#15097,
    /// RooCodeInc/Roo-Code#12162).
    pub fn anthropic_sampling(req: &FakeRequest, model: &str, answer: FakeAction) -> FakeAction {
        let body = req.json();
        let t = body.get("temperature").is_some();
        if model.starts_with("claude-opus-4-7") && t {
            return anthropic_error(
                400,
                "invalid_request_error",
                "`temperature` is deprecated for this model.",
            );
        }
        if t && body.get("top_p").is_some() {
            return anthropic_error(
                400,
                "invalid_request_error",
                "`temperature` and `top_p` cannot both be specified for this model. Please use only one.",
            );
        }
        answer
    }

    /// A thinking Gemini model: thought tokens count against `maxOutputTokens`; when the
    /// thinking (`thinking` tokens) leaves no room the candidate has `finishReason:
    /// "MAX_TOKENS"` and a content with no `parts` (reply quoted in google/adk-python#1357).
    /// Else the text, with `thoughtsTokenCount` in `usageMetadata`.
    pub fn gemini_thinking(req: &FakeRequest, text: &str, thinking: i64) -> FakeAction {
        let cap = req.json()["generationConfig"]["maxOutputTokens"]
            .as_i64()
            .unwrap_or(0);
        let input = i64::try_from(req.body.len() / 4).unwrap_or(0);
        if cap <= thinking {
            return json(
                200,
                &[],
                &json!({
                    "candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS"}],
                    "modelVersion": "gemini-2.5-flash",
                    "usageMetadata": {"promptTokenCount": input, "thoughtsTokenCount": cap,
                                      "totalTokenCount": input + cap},
                }),
            );
        }
        let output = i64::try_from(text.len() / 2).unwrap_or(0);
        json(
            200,
            &[],
            &json!({
                "candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                "finishReason": "STOP"}],
                "modelVersion": "gemini-2.5-flash",
                "usageMetadata": {"promptTokenCount": input, "candidatesTokenCount": output,
                                  "thoughtsTokenCount": thinking,
                                  "totalTokenCount": input + output + thinking},
            }),
        )
    }

    /// The Google error object (`google.rpc.Status`: code, message, status, details).
    pub fn google_error(code: u16, status: &str, message: &str, details: Value) -> FakeAction {
        json(
            code,
            &[],
            &json!({"error": {"code": code, "message": message, "status": status,
                              "details": details}}),
        )
    }

    /// Gemini's 400 for a bad key (googleapis/python-genai and continuedev/continue#9330).
    pub fn gemini_invalid_key() -> FakeAction {
        google_error(
            400,
            "INVALID_ARGUMENT",
            "API key not valid. Please pass a valid API key.",
            json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID", "domain": "googleapis.com",
                    "metadata": {"service": "generativelanguage.googleapis.com"}}]),
        )
    }

    /// Gemini's 429 with its quota and delay in the body (googleapis/python-genai#2044,
    /// RooCodeInc/Roo-Code#3883): a per-day quota id says waiting will not help today.
    pub fn gemini_resource_exhausted(quota_id: &str, retry_delay: &str) -> FakeAction {
        google_error(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details.",
            json!([
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                 "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                                 "quotaId": quota_id}]},
                {"@type": "type.googleapis.com/google.rpc.Help",
                 "links": [{"description": "Learn more about Gemini API quotas",
                            "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay},
            ]),
        )
    }

    /// Gemini's prompt block: no candidates, `promptFeedback.blockReason` (v1beta
    /// `BlockReason`: SAFETY, OTHER, BLOCKLIST, PROHIBITED_CONTENT, IMAGE_SAFETY).
    pub fn gemini_prompt_blocked(reason: &str) -> FakeAction {
        json(
            200,
            &[],
            &json!({"promptFeedback": {"blockReason": reason},
                    "usageMetadata": {"promptTokenCount": 120, "totalTokenCount": 120},
                    "modelVersion": "gemini-2.5-flash"}),
        )
    }

    /// Anthropic's refusal: `stop_reason: "refusal"` (Messages API stop reasons).
    pub fn anthropic_refusal() -> FakeAction {
        json(
            200,
            &[],
            &json!({"id": "msg_fake", "type": "message", "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929", "content": [],
                    "stop_reason": "refusal", "stop_sequence": null,
                    "usage": {"input_tokens": 120, "output_tokens": 0}}),
        )
    }

    /// OpenAI's refusal: `message.refusal` set and `content` null (openapi.yaml
    /// `ChatCompletionResponseMessage`).
    pub fn openai_refusal() -> FakeAction {
        json(
            200,
            &[],
            &json!({"id": "chatcmpl-fake", "object": "chat.completion", "model": "gpt-4o-2024-08-06",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": null,
                                             "refusal": "I'm sorry, I can't help with that."}}],
                    "usage": {"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129}}),
        )
    }

    /// OpenAI's 429 for a used-up account (body quoted in ChatGPTNextWeb/NextChat#3123).
    pub fn openai_insufficient_quota() -> FakeAction {
        openai_error(
            429,
            "You exceeded your current quota, please check your plan and billing details.",
            "insufficient_quota",
            None,
            "insufficient_quota",
        )
    }

    /// OpenAI's 404 for an unknown model (code `model_not_found`).
    pub fn openai_unknown_model(model: &str) -> FakeAction {
        openai_error(
            404,
            &format!("The model `{model}` does not exist or you do not have access to it."),
            "invalid_request_error",
            None,
            "model_not_found",
        )
    }
}
