//! The providers' batch APIs (#17): a run's trials sent as one file or one request, collected
//! when the provider says the batch has ended, at the batch price.
//!
//! OpenAI Batch API (<https://platform.openai.com/docs/guides/batch>,
//! <https://platform.openai.com/docs/api-reference/batch>): upload a JSONL file with
//! `purpose=batch` (`POST /v1/files`, multipart), each line `{custom_id, method, url, body}`;
//! `POST /v1/batches {input_file_id, endpoint, completion_window: "24h"}`; poll
//! `GET /v1/batches/{id}` (`status` validating, in_progress, finalizing, completed, failed,
//! expired, cancelling, cancelled); then `GET /v1/files/{output_file_id}/content`, JSONL lines
//! `{id, custom_id, response: {status_code, body}, error}` (and `error_file_id` for the lines
//! that failed). Anthropic Message Batches
//! (<https://docs.anthropic.com/en/docs/build-with-claude/batch-processing>,
//! <https://docs.anthropic.com/en/api/creating-message-batches>):
//! `POST /v1/messages/batches {requests: [{custom_id, params}]}`; poll
//! `GET /v1/messages/batches/{id}` (`processing_status` in_progress, canceling, ended;
//! `results_url` once ended); `GET results_url`, JSONL lines `{custom_id, result: {type:
//! succeeded | errored | canceled | expired, message | error}}`. Neither promises that results
//! come in the order of the requests: lines are matched by `custom_id`.

use serde_json::{Value, json};

use crate::config::ProviderKind;

use super::client::{
    CallError, ErrorClass, Provider, classify_status, classify_transport, read_error_body,
};
use super::wire;

/// Both APIs bill a batch at half the synchronous price: OpenAI "50% cost discount"
/// (<https://platform.openai.com/docs/guides/batch>), Anthropic "50% of standard API prices"
/// (<https://docs.anthropic.com/en/docs/build-with-claude/batch-processing#pricing>).
pub const BATCH_PRICE_FACTOR: f64 = 0.5;

/// A batch the provider accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    pub batch_id: String,
    /// OpenAI: the uploaded input file.
    pub input_file_id: Option<String>,
}

/// Where a batch stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchState {
    /// Still being worked (validating, in progress, finalizing, cancelling).
    Working(String),
    /// Over, with where its results are (file ids for OpenAI, the results URL for Anthropic).
    /// OpenAI's expired and cancelled batches keep the lines that finished in their files.
    Ended(Vec<String>),
    /// The provider refused the whole batch (OpenAI `failed`: the input did not validate).
    Failed(String),
}

/// One line of a batch's results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineResult {
    pub custom_id: String,
    /// The reply's status and body as the synchronous endpoint would have sent them; Err: the
    /// line has no reply (errored, expired, cancelled), with the provider's reason.
    pub reply: Result<(u16, String), String>,
}

/// The `custom_id` of a trial's line (Anthropic allows `^[a-zA-Z0-9_-]{1,64}$`).
pub fn custom_id(trial: i64) -> String {
    format!("trial-{trial}")
}

/// The trial id of a `custom_id` this client wrote.
pub fn trial_of(custom_id: &str) -> Option<i64> {
    custom_id.strip_prefix("trial-")?.parse().ok()
}

/// Whether the provider's wire format has a batch API here.
pub fn supported(kind: ProviderKind) -> bool {
    matches!(kind, ProviderKind::Openai | ProviderKind::Anthropic)
}

impl Provider {
    fn base(&self) -> &str {
        self.config.base_url.trim_end_matches('/')
    }

    /// One HTTP exchange with the batch endpoints: the body on 2xx, else a classified error.
    fn exchange(
        &self,
        method: &str,
        url: &str,
        content_type: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> Result<String, CallError> {
        if let (Some(var), None) = (&self.config.api_key_env, &self.key) {
            return Err(CallError::new(
                ErrorClass::Auth,
                format!(
                    "the environment variable {var} (the API key of provider {}) is not set",
                    self.config.name
                ),
            ));
        }
        let headers = wire::auth_headers(self.config.kind, self.key.as_deref());
        let mut resp = match (method, body) {
            ("POST", Some(b)) => {
                let mut req = self.agent.post(url);
                if let Some(ct) = content_type {
                    req = req.header("content-type", ct);
                }
                for (n, v) in &headers {
                    req = req.header(*n, v);
                }
                req.send(&b[..]).map_err(classify_transport)?
            }
            _ => {
                let mut req = self.agent.get(url);
                for (n, v) in &headers {
                    req = req.header(*n, v);
                }
                req.call().map_err(classify_transport)?
            }
        };
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(512 * 1024 * 1024)
            .read_to_string()
            .map_err(classify_transport)?;
        if (200..300).contains(&status) {
            return Ok(text);
        }
        let parsed = read_error_body(&text);
        let class = classify_status(status, &parsed);
        let detail = parsed
            .message
            .clone()
            .unwrap_or_else(|| text.chars().take(300).collect());
        let mut e = CallError::new(
            class,
            format!(
                "provider {} batch endpoint {url}: HTTP {status}: {detail}",
                self.config.name
            ),
        );
        e.http_status = Some(status);
        e.body = Some(text);
        Err(e)
    }

    fn json_of(&self, text: &str, what: &str) -> Result<Value, CallError> {
        serde_json::from_str(text).map_err(|e| {
            CallError::new(
                ErrorClass::Parse,
                format!("provider {}: {what} is not JSON: {e}", self.config.name),
            )
        })
    }

    /// Sends `lines` (custom_id, request body as the synchronous endpoint takes it) as one
    /// batch.
    pub fn submit_batch(&self, lines: &[(String, &str)]) -> Result<Submitted, CallError> {
        let bodies: Vec<(&str, Value)> = lines
            .iter()
            .map(|(id, body)| Ok((id.as_str(), self.json_of(body, "a request body")?)))
            .collect::<Result<_, CallError>>()?;
        match self.config.kind {
            ProviderKind::Openai => self.submit_openai(&bodies),
            ProviderKind::Anthropic => self.submit_anthropic(&bodies),
            ProviderKind::Gemini => Err(CallError::new(
                ErrorClass::BadRequest,
                "batches are sent to OpenAI-compatible and Anthropic providers only",
            )),
        }
    }

    fn submit_openai(&self, bodies: &[(&str, Value)]) -> Result<Submitted, CallError> {
        // Each line names the endpoint path it stands for (the batch's `endpoint`).
        let jsonl: String = bodies
            .iter()
            .map(|(id, body)| {
                json!({"custom_id": id, "method": "POST", "url": "/v1/chat/completions",
                       "body": body})
                .to_string()
                    + "\n"
            })
            .collect();
        // Files API: multipart/form-data with `purpose` and `file`
        // (<https://platform.openai.com/docs/api-reference/files/create>).
        let boundary = format!("emotionbench-{:016x}", rand::random::<u64>());
        let mut form = Vec::with_capacity(jsonl.len() + 512);
        form.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n\
                 --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"batch.jsonl\"\r\n\
                 Content-Type: application/jsonl\r\n\r\n"
            )
            .as_bytes(),
        );
        form.extend_from_slice(jsonl.as_bytes());
        form.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let file = self.exchange(
            "POST",
            &format!("{}/files", self.base()),
            Some(&format!("multipart/form-data; boundary={boundary}")),
            Some(form),
        )?;
        let file_id = self.json_of(&file, "the uploaded file")?["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| CallError::new(ErrorClass::Parse, "the uploaded file has no id"))?;
        let created = self.exchange(
            "POST",
            &format!("{}/batches", self.base()),
            Some("application/json"),
            Some(
                json!({"input_file_id": file_id, "endpoint": "/v1/chat/completions",
                       "completion_window": "24h"})
                .to_string()
                .into_bytes(),
            ),
        )?;
        let batch_id = self.json_of(&created, "the created batch")?["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| CallError::new(ErrorClass::Parse, "the created batch has no id"))?;
        Ok(Submitted {
            batch_id,
            input_file_id: Some(file_id),
        })
    }

    fn submit_anthropic(&self, bodies: &[(&str, Value)]) -> Result<Submitted, CallError> {
        let requests: Vec<Value> = bodies
            .iter()
            .map(|(id, body)| json!({"custom_id": id, "params": body}))
            .collect();
        let created = self.exchange(
            "POST",
            &format!("{}/messages/batches", self.base()),
            Some("application/json"),
            Some(json!({ "requests": requests }).to_string().into_bytes()),
        )?;
        let batch_id = self.json_of(&created, "the created batch")?["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| CallError::new(ErrorClass::Parse, "the created batch has no id"))?;
        Ok(Submitted {
            batch_id,
            input_file_id: None,
        })
    }

    /// Asks where batch `id` stands.
    pub fn batch_state(&self, id: &str) -> Result<BatchState, CallError> {
        let url = match self.config.kind {
            ProviderKind::Anthropic => format!("{}/messages/batches/{id}", self.base()),
            _ => format!("{}/batches/{id}", self.base()),
        };
        let v = self.json_of(&self.exchange("GET", &url, None, None)?, "the batch")?;
        Ok(read_state(self.config.kind, &v))
    }

    /// Every line of an ended batch's results.
    pub fn batch_results(&self, locations: &[String]) -> Result<Vec<LineResult>, CallError> {
        let mut out = Vec::new();
        for loc in locations {
            let url = match self.config.kind {
                ProviderKind::Anthropic => loc.clone(),
                _ => format!("{}/files/{loc}/content", self.base()),
            };
            let text = self.exchange("GET", &url, None, None)?;
            for (n, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let v = self.json_of(line, &format!("line {} of the batch results", n + 1))?;
                out.push(read_line(self.config.kind, &v).ok_or_else(|| {
                    CallError::new(
                        ErrorClass::Parse,
                        format!("line {} of the batch results has no custom_id", n + 1),
                    )
                })?);
            }
        }
        Ok(out)
    }
}

/// A batch object's state, per API.
pub fn read_state(kind: ProviderKind, v: &Value) -> BatchState {
    let s = |k: &str| v[k].as_str().map(str::to_owned);
    match kind {
        ProviderKind::Anthropic => match (s("processing_status").as_deref(), s("results_url")) {
            (Some("ended"), Some(url)) => BatchState::Ended(vec![url]),
            (Some("ended"), None) => BatchState::Failed("the batch ended without results".into()),
            (other, _) => BatchState::Working(other.unwrap_or("?").to_owned()),
        },
        _ => match s("status").as_deref() {
            Some("completed" | "expired" | "cancelled") => BatchState::Ended(
                [s("output_file_id"), s("error_file_id")]
                    .into_iter()
                    .flatten()
                    .collect(),
            ),
            Some("failed") => {
                let reasons: Vec<String> = v["errors"]["data"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e["message"].as_str().map(str::to_owned))
                    .collect();
                BatchState::Failed(format!("the batch failed: {}", reasons.join("; ")))
            }
            other => BatchState::Working(other.unwrap_or("?").to_owned()),
        },
    }
}

/// One results line, per API; None without a custom_id.
pub fn read_line(kind: ProviderKind, v: &Value) -> Option<LineResult> {
    let custom_id = v["custom_id"].as_str()?.to_owned();
    let reason = |e: &Value| {
        e["message"]
            .as_str()
            .or(e["error"]["message"].as_str())
            .map(str::to_owned)
            .unwrap_or_else(|| e.to_string())
    };
    let reply = match kind {
        ProviderKind::Anthropic => {
            let r = &v["result"];
            match r["type"].as_str() {
                Some("succeeded") => Ok((200, r["message"].to_string())),
                Some("errored") => Err(format!("errored: {}", reason(&r["error"]))),
                Some(t) => Err(format!("{t} before it was processed")),
                None => Err("the line has no result".into()),
            }
        }
        _ => {
            let resp = &v["response"];
            match resp["status_code"].as_u64() {
                Some(code) => Ok((u16::try_from(code).unwrap_or(500), resp["body"].to_string())),
                None => Err(format!("error: {}", reason(&v["error"]))),
            }
        }
    };
    Some(LineResult { custom_id, reply })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn states_and_lines_read_as_the_references_show_them() {
        // Shapes from the API references cited at the top of the module.
        let oa = json!({"id": "batch_abc", "object": "batch", "status": "completed",
                        "output_file_id": "file-out", "error_file_id": null});
        assert_eq!(
            read_state(ProviderKind::Openai, &oa),
            BatchState::Ended(vec!["file-out".into()])
        );
        let running = json!({"status": "finalizing"});
        assert_eq!(
            read_state(ProviderKind::Openai, &running),
            BatchState::Working("finalizing".into())
        );
        let failed = json!({"status": "failed", "errors": {"data": [{"message": "bad line 3"}]}});
        assert!(
            matches!(read_state(ProviderKind::Openai, &failed), BatchState::Failed(m) if m.contains("bad line 3"))
        );
        let an = json!({"id": "msgbatch_01", "processing_status": "ended",
                        "results_url": "https://api.anthropic.com/v1/messages/batches/msgbatch_01/results"});
        assert!(
            matches!(read_state(ProviderKind::Anthropic, &an), BatchState::Ended(u) if u[0].ends_with("/results"))
        );
        let line = json!({"id": "batch_req_1", "custom_id": "trial-7",
                          "response": {"status_code": 200, "request_id": "r", "body": {"id": "x"}},
                          "error": null});
        let r = read_line(ProviderKind::Openai, &line).unwrap();
        assert_eq!(
            (r.custom_id.as_str(), trial_of(&r.custom_id)),
            ("trial-7", Some(7))
        );
        assert_eq!(r.reply, Ok((200, "{\"id\":\"x\"}".into())));
        let expired = json!({"custom_id": "trial-8", "result": {"type": "expired"}});
        assert!(
            read_line(ProviderKind::Anthropic, &expired)
                .unwrap()
                .reply
                .is_err()
        );
        let errored = json!({"custom_id": "trial-9", "result": {"type": "errored",
                             "error": {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}}});
        assert_eq!(
            read_line(ProviderKind::Anthropic, &errored).unwrap().reply,
            Err("errored: bad".into())
        );
    }
}
