//! The batch endpoints of the fake provider (#17), in front of a handler that answers each
//! line as the synchronous endpoint would: OpenAI's Files and Batch APIs and Anthropic's
//! Message Batches, in the shapes of their references (cited per behaviour). A batch stays
//! `in_progress` while the fake is held ([`BatchFake::hold`]), so a test can kill a worker
//! while the provider still works on its batch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::fake::{FakeAction, FakeRequest};

type Answer = dyn Fn(&FakeRequest) -> FakeAction + Send + Sync;

#[derive(Debug, Clone)]
struct Stored {
    anthropic: bool,
    /// (custom_id, body) of each line, in the order sent.
    lines: Vec<(String, String)>,
    /// The results, made once the batch ends.
    output: Option<String>,
}

#[derive(Default)]
struct State {
    files: HashMap<String, String>,
    batches: HashMap<String, Stored>,
}

/// Batch endpoints over an answering handler; clone it into the server's handler.
#[derive(Clone)]
pub struct BatchFake {
    answer: Arc<Answer>,
    held: Arc<AtomicBool>,
    next: Arc<AtomicU64>,
    state: Arc<Mutex<State>>,
}

impl BatchFake {
    pub fn new(answer: impl Fn(&FakeRequest) -> FakeAction + Send + Sync + 'static) -> Self {
        Self {
            answer: Arc::new(answer),
            held: Arc::new(AtomicBool::new(false)),
            next: Arc::new(AtomicU64::new(0)),
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// While held, every batch reports itself in progress.
    pub fn hold(&self, held: bool) {
        self.held.store(held, Ordering::SeqCst);
    }

    fn id(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.next.fetch_add(1, Ordering::SeqCst) + 1)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The reply to a batch endpoint's request; None for any other path (the synchronous
    /// endpoints, left to the caller's handler).
    pub fn handle(&self, req: &FakeRequest) -> Option<FakeAction> {
        let path = req.path.split('?').next().unwrap_or("");
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let action = match (req.method.as_str(), &parts[..]) {
            ("POST", [_, "files"]) => self.upload(req),
            ("POST", [_, "batches"]) => self.create_openai(req),
            ("GET", [_, "batches", id]) => self.retrieve_openai(id),
            ("GET", [_, "files", id, "content"]) => self.content(id),
            ("POST", [_, "messages", "batches"]) => self.create_anthropic(req),
            ("GET", [_, "messages", "batches", id]) => self.retrieve_anthropic(req, id),
            ("GET", [_, "messages", "batches", id, "results"]) => self.results_anthropic(id),
            _ => return None,
        };
        Some(action)
    }

    /// `POST /v1/files` (multipart: `purpose=batch`, `file`) returns a File object
    /// (<https://platform.openai.com/docs/api-reference/files/create>).
    fn upload(&self, req: &FakeRequest) -> FakeAction {
        let Some(content) = multipart_file(req) else {
            return bad("no file part in the multipart body");
        };
        if !req.body.contains("name=\"purpose\"\r\n\r\nbatch\r\n") {
            return bad("purpose must be batch");
        }
        let id = self.id("file-");
        let bytes = content.len();
        self.state().files.insert(id.clone(), content);
        ok(
            json!({"id": id, "object": "file", "bytes": bytes, "purpose": "batch",
                  "filename": "batch.jsonl"}),
        )
    }

    /// `POST /v1/batches {input_file_id, endpoint, completion_window}`: each line of the input
    /// file is `{custom_id, method, url, body}` (<https://platform.openai.com/docs/guides/batch>).
    fn create_openai(&self, req: &FakeRequest) -> FakeAction {
        let v = req.json();
        let (Some(file), Some("24h")) =
            (v["input_file_id"].as_str(), v["completion_window"].as_str())
        else {
            return bad("input_file_id and completion_window 24h are required");
        };
        let Some(content) = self.state().files.get(file).cloned() else {
            return status(404, "no such file");
        };
        let mut lines = Vec::new();
        for line in content.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(l) = serde_json::from_str::<Value>(line) else {
                return bad("a line is not JSON");
            };
            let (Some(id), Some(url)) = (l["custom_id"].as_str(), l["url"].as_str()) else {
                return bad("a line lacks custom_id or url");
            };
            if Some(url) != v["endpoint"].as_str() || l["method"] != "POST" {
                return bad("a line's url or method differs from the batch's endpoint");
            }
            lines.push((id.to_owned(), l["body"].to_string()));
        }
        let id = self.id("batch_");
        self.state().batches.insert(
            id.clone(),
            Stored {
                anthropic: false,
                lines,
                output: None,
            },
        );
        ok(
            json!({"id": id, "object": "batch", "endpoint": v["endpoint"],
                  "input_file_id": file, "completion_window": "24h", "status": "validating",
                  "output_file_id": null, "error_file_id": null}),
        )
    }

    /// `GET /v1/batches/{id}`: `in_progress` while held, then `completed` with an
    /// `output_file_id`.
    fn retrieve_openai(&self, id: &str) -> FakeAction {
        let Some(done) = self.progress(id) else {
            return status(404, "no such batch");
        };
        let (st, out) = match done {
            Some(file) => ("completed", json!(file)),
            None => ("in_progress", Value::Null),
        };
        ok(
            json!({"id": id, "object": "batch", "status": st, "output_file_id": out,
                  "error_file_id": null}),
        )
    }

    /// `GET /v1/files/{id}/content`: the output file, one `{id, custom_id, response:
    /// {status_code, request_id, body}, error}` per line.
    fn content(&self, id: &str) -> FakeAction {
        match self.state().files.get(id) {
            Some(c) => FakeAction::Reply {
                status: 200,
                headers: vec![("content-type".into(), "application/octet-stream".into())],
                body: c.clone(),
                delay: Duration::ZERO,
            },
            None => status(404, "no such file"),
        }
    }

    /// `POST /v1/messages/batches {requests: [{custom_id, params}]}`
    /// (<https://docs.anthropic.com/en/api/creating-message-batches>).
    fn create_anthropic(&self, req: &FakeRequest) -> FakeAction {
        let v = req.json();
        let Some(requests) = v["requests"].as_array() else {
            return bad("requests is required");
        };
        let mut lines = Vec::new();
        for r in requests {
            let Some(id) = r["custom_id"].as_str() else {
                return bad("a request lacks custom_id");
            };
            lines.push((id.to_owned(), r["params"].to_string()));
        }
        let id = self.id("msgbatch_");
        self.state().batches.insert(
            id.clone(),
            Stored {
                anthropic: true,
                lines,
                output: None,
            },
        );
        ok(
            json!({"id": id, "type": "message_batch", "processing_status": "in_progress",
                  "results_url": null}),
        )
    }

    /// `GET /v1/messages/batches/{id}`: `processing_status` `ended` with a `results_url`
    /// (<https://docs.anthropic.com/en/api/retrieving-message-batches>).
    fn retrieve_anthropic(&self, req: &FakeRequest, id: &str) -> FakeAction {
        let Some(done) = self.progress(id) else {
            return status(404, "no such batch");
        };
        let host = req.header("host").unwrap_or("127.0.0.1");
        let (st, url) = match done {
            Some(_) => (
                "ended",
                json!(format!("http://{host}/v1/messages/batches/{id}/results")),
            ),
            None => ("in_progress", Value::Null),
        };
        ok(
            json!({"id": id, "type": "message_batch", "processing_status": st,
                  "results_url": url}),
        )
    }

    /// The results JSONL: `{custom_id, result: {type: succeeded, message} | {type: errored,
    /// error} | {type: expired}}` (<https://docs.anthropic.com/en/api/retrieving-message-batch-results>).
    fn results_anthropic(&self, id: &str) -> FakeAction {
        // Bound first: a guard in the match would still hold the lock inside `content`.
        let output = self.state().batches.get(id).and_then(|b| b.output.clone());
        match output {
            Some(file) => self.content(&file),
            None => status(404, "the batch has not ended"),
        }
    }

    /// None: no such batch; Some(None): in progress; Some(Some(file)): ended, results there.
    fn progress(&self, id: &str) -> Option<Option<String>> {
        let stored = self.state().batches.get(id).cloned()?;
        if self.held.load(Ordering::SeqCst) {
            return Some(None);
        }
        if let Some(out) = stored.output {
            return Some(Some(out));
        }
        let mut results: Vec<String> = stored
            .lines
            .iter()
            .map(|(custom_id, body)| self.result_line(stored.anthropic, custom_id, body))
            .collect();
        // "The output line order may not match the input line order": results are matched by
        // custom_id (<https://platform.openai.com/docs/guides/batch>), so the fake reverses them.
        results.reverse();
        let file = self.id("file-");
        let mut st = self.state();
        st.files.insert(file.clone(), results.join("\n") + "\n");
        if let Some(b) = st.batches.get_mut(id) {
            b.output = Some(file.clone());
        }
        Some(Some(file))
    }

    fn result_line(&self, anthropic: bool, custom_id: &str, body: &str) -> String {
        let n = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let line = FakeRequest {
            number: n,
            method: "POST".into(),
            path: if anthropic {
                "/v1/messages".into()
            } else {
                "/v1/chat/completions".into()
            },
            headers: Vec::new(),
            body: body.to_owned(),
            at: Instant::now(),
        };
        let reply = match (self.answer)(&line) {
            FakeAction::Reply { status, body, .. } => Some((
                status,
                serde_json::from_str::<Value>(&body).unwrap_or(Value::Null),
            )),
            FakeAction::Reset | FakeAction::Hang(_) => None,
        };
        let v = match (anthropic, reply) {
            (false, Some((status, body))) => json!({"id": format!("batch_req_{n}"),
                "custom_id": custom_id,
                "response": {"status_code": status, "request_id": format!("req_{n}"), "body": body},
                "error": null}),
            (false, None) => json!({"id": format!("batch_req_{n}"), "custom_id": custom_id,
                "response": null,
                "error": {"code": "server_error", "message": "the request was not processed"}}),
            (true, Some((200, body))) => json!({"custom_id": custom_id,
                "result": {"type": "succeeded", "message": body}}),
            (true, Some((_, body))) => json!({"custom_id": custom_id,
                "result": {"type": "errored", "error": body}}),
            (true, None) => json!({"custom_id": custom_id, "result": {"type": "expired"}}),
        };
        v.to_string()
    }
}

/// The `file` part of a multipart/form-data body.
fn multipart_file(req: &FakeRequest) -> Option<String> {
    let ct = req.header("content-type")?;
    let boundary = ct.split("boundary=").nth(1)?.trim_matches('"');
    let start = req.body.find("name=\"file\"")?;
    let rest = &req.body[start..];
    let body_start = rest.find("\r\n\r\n")? + 4;
    let rest = &rest[body_start..];
    let end = rest.find(&format!("\r\n--{boundary}"))?;
    Some(rest[..end].to_owned())
}

fn ok(v: Value) -> FakeAction {
    super::fake::real::json(200, &[], &v)
}

fn status(code: u16, message: &str) -> FakeAction {
    super::fake::real::json(
        code,
        &[],
        &json!({"error": {"message": message, "type": "invalid_request_error"}}),
    )
}

fn bad(message: &str) -> FakeAction {
    status(400, message)
}
