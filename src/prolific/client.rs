//! The Prolific API client: blocking (ureq), like the model providers' (`llm::client`), and
//! with their rate-limit handling: a 429 waits out its `Retry-After` (the providers' parser),
//! a 5xx or a broken connection is retried with the providers' exponential backoff with jitter,
//! up to `max_attempts`. "Where an API call hits a rate limit, the endpoint will return a 429
//! Too Many Requests error. Please retry with exponential back-off"
//! (<https://docs.prolific.com/documentation/core-concepts/managing-high-loads>).
//!
//! The token comes from the environment variable `ProlificSettings::token_env` names and is
//! sent as "`Authorization` header with the value `Token <your token>`"
//! (<https://docs.prolific.com/documentation/get-started/api-fundamentals>); no error message
//! and no log line carries it.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::config::{ProlificSettings, Secret};
use crate::domain::prolific::{CompletionCode, RejectionCategory};
use crate::llm::client::header_delay;
use crate::llm::runner::backoff;

/// Why a Prolific request did not succeed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProlificError {
    #[error(
        "no Prolific API token: set the environment variable {0} (create a token under \
         Prolific's API Tokens page)"
    )]
    NoToken(String),
    /// A non-2xx answer after the retries: Prolific's error body's title and detail.
    #[error("Prolific answered {method} {path} with HTTP {status}: {detail}")]
    Http {
        method: &'static str,
        path: String,
        status: u16,
        detail: String,
    },
    /// Prolific asked us to wait longer than we wait in one request.
    #[error(
        "Prolific is rate-limiting {path} and asks to wait {} s: try again later",
        wait.as_secs()
    )]
    WaitTooLong { path: String, wait: Duration },
    #[error("cannot reach Prolific at {base} ({path}): {detail}")]
    Transport {
        base: String,
        path: String,
        detail: String,
    },
    #[error("Prolific's answer to {path} does not read as documented: {detail}")]
    Decode { path: String, detail: String },
}

impl ProlificError {
    pub fn status(&self) -> Option<u16> {
        match self {
            ProlificError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// What a draft sends (create: `POST /api/v1/studies/`, update: `PATCH /api/v1/studies/{id}/`;
/// fields of <https://docs.prolific.com/api-reference/studies/create-study>).
#[derive(Debug, Clone, serde::Serialize)]
pub struct StudyDraft {
    pub name: String,
    pub internal_name: String,
    pub description: String,
    pub external_study_url: String,
    /// `url_parameters`: the participant's id arrives in the URL, not typed in.
    pub prolific_id_option: &'static str,
    pub completion_codes: Vec<CompletionCode>,
    pub total_available_places: i32,
    /// Cents or pence, in the account's currency.
    pub reward: i32,
    /// Minutes.
    pub estimated_completion_time: u32,
}

/// The part of Prolific's study object we keep.
#[derive(Debug, Clone, Deserialize)]
pub struct StudyRef {
    pub id: String,
    #[serde(default)]
    pub status: Option<String>,
}

/// One submission of a study's list (`SubmissionShort` of
/// <https://docs.prolific.com/api-reference/studies/get-study-submissions>).
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct Submission {
    pub id: String,
    pub participant_id: String,
    pub status: String,
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub completed_at: Option<String>,
    #[serde(default)]
    pub study_code: Option<String>,
    #[serde(default)]
    pub return_requested: Option<String>,
}

/// Submissions asked for per list request (the page size Prolific's CLI uses by default).
pub const LIST_PAGE: usize = 200;

/// A ready client (one per process; cheap to share).
#[derive(Debug, Clone)]
pub struct ProlificClient {
    base_url: String,
    token_env: String,
    token: Option<Secret>,
    agent: ureq::Agent,
    max_attempts: u32,
    backoff_base_ms: u64,
    max_retry_after: Duration,
}

impl ProlificClient {
    pub fn new(s: &ProlificSettings) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(s.timeout_seconds.max(1))))
            .user_agent(concat!("emotionbench/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Self {
            base_url: s.base_url.trim_end_matches('/').to_owned(),
            token_env: s.token_env.clone(),
            token: s.token.clone(),
            agent,
            max_attempts: s.max_attempts.max(1),
            backoff_base_ms: s.backoff_base_ms,
            max_retry_after: Duration::from_secs(s.max_retry_after_seconds),
        }
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Creates the draft (201 with the study object).
    pub fn create_study(&self, draft: &StudyDraft) -> Result<StudyRef, ProlificError> {
        let path = "/api/v1/studies/".to_owned();
        let v = self.call("POST", &path, Some(&json!(draft)))?;
        decode(&path, v)
    }

    /// Updates a draft (200 with the study object).
    pub fn update_study(&self, id: &str, draft: &StudyDraft) -> Result<StudyRef, ProlificError> {
        let path = format!("/api/v1/studies/{}/", segment(id));
        let v = self.call("PATCH", &path, Some(&json!(draft)))?;
        decode(&path, v)
    }

    /// Every submission of a study, [`LIST_PAGE`] at a time: `?limit=&offset=` with the total
    /// in `meta.count`, as Prolific's own CLI pages this list (prolific-oss/cli
    /// `client/client.go` `GetSubmissions`, `client/pagination.go`); the reference's example
    /// shows the `results` array. Stops at a short page or once `meta.count` is reached.
    pub fn submissions(&self, study: &str) -> Result<Vec<Submission>, ProlificError> {
        let base = format!("/api/v1/studies/{}/submissions/", segment(study));
        let mut out: Vec<Submission> = Vec::new();
        for _ in 0..100_000 {
            let path = format!("{base}?limit={LIST_PAGE}&offset={}", out.len());
            let v = self.call("GET", &path, None)?;
            let total = v["meta"]["count"].as_u64();
            let page: Vec<Submission> = decode(&path, v["results"].clone())?;
            let n = page.len();
            out.extend(page);
            let done = n < LIST_PAGE || total.is_some_and(|t| out.len() as u64 >= t);
            if done {
                break;
            }
        }
        Ok(out)
    }

    /// One bulk approval of at most `BULK_APPROVE_MAX` submission ids ("Bulk approve in
    /// progress": the approvals happen asynchronously on Prolific's side).
    pub fn bulk_approve(&self, submission_ids: &[String]) -> Result<(), ProlificError> {
        let path = "/api/v1/submissions/bulk-approve/".to_owned();
        self.call(
            "POST",
            &path,
            Some(&json!({ "submission_ids": submission_ids })),
        )?;
        Ok(())
    }

    /// `POST /api/v1/submissions/{id}/transition/` with `action: REJECT`, the category and the
    /// message (checked by the caller: `domain::prolific::check_rejection`).
    pub fn reject(
        &self,
        submission: &str,
        category: RejectionCategory,
        message: &str,
    ) -> Result<String, ProlificError> {
        let path = format!("/api/v1/submissions/{}/transition/", segment(submission));
        let v = self.call(
            "POST",
            &path,
            Some(&json!({
                "action": "REJECT",
                "rejection_category": category.as_str(),
                "message": message,
            })),
        )?;
        Ok(v["status"].as_str().unwrap_or("").to_owned())
    }

    /// `POST /api/v1/submissions/{id}/transition/` with `action: APPROVE`.
    pub fn approve(&self, submission: &str) -> Result<String, ProlificError> {
        let path = format!("/api/v1/submissions/{}/transition/", segment(submission));
        let v = self.call("POST", &path, Some(&json!({ "action": "APPROVE" })))?;
        Ok(v["status"].as_str().unwrap_or("").to_owned())
    }

    /// `POST /api/v1/submissions/{id}/request-return/` with `request_return_reasons`.
    pub fn request_return(
        &self,
        submission: &str,
        reasons: &[String],
    ) -> Result<(), ProlificError> {
        let path = format!(
            "/api/v1/submissions/{}/request-return/",
            segment(submission)
        );
        self.call(
            "POST",
            &path,
            Some(&json!({ "request_return_reasons": reasons })),
        )?;
        Ok(())
    }

    /// One request with its retries; the decoded JSON of a 2xx answer (`null` when empty).
    fn call(
        &self,
        method: &'static str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ProlificError> {
        let Some(token) = &self.token else {
            return Err(ProlificError::NoToken(self.token_env.clone()));
        };
        let url = format!("{}{path}", self.base_url);
        let text = body.map(Value::to_string);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt >= self.max_attempts;
            let auth = format!("Token {}", token.expose());
            let sent = match (method, &text) {
                ("GET", _) => self.agent.get(&url).header("authorization", &auth).call(),
                ("PATCH", Some(t)) => self
                    .agent
                    .patch(&url)
                    .header("authorization", &auth)
                    .header("content-type", "application/json")
                    .send(t.as_str()),
                (_, t) => self
                    .agent
                    .post(&url)
                    .header("authorization", &auth)
                    .header("content-type", "application/json")
                    .send(t.as_deref().unwrap_or("{}")),
            };
            let mut resp = match sent {
                Ok(r) => r,
                Err(e) => {
                    if last {
                        return Err(ProlificError::Transport {
                            base: self.base_url.clone(),
                            path: path.to_owned(),
                            detail: e.to_string(),
                        });
                    }
                    std::thread::sleep(backoff(self.backoff_base_ms, attempt));
                    continue;
                }
            };
            let status = resp.status().as_u16();
            let header = |name: &str| {
                resp.headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            let retry_after =
                header_delay(None, header("retry-after").as_deref(), chrono::Utc::now());
            let reply = resp
                .body_mut()
                .with_config()
                .limit(64 * 1024 * 1024)
                .read_to_string()
                .unwrap_or_default();
            if (200..300).contains(&status) {
                if reply.trim().is_empty() {
                    return Ok(Value::Null);
                }
                return serde_json::from_str(&reply).map_err(|e| ProlificError::Decode {
                    path: path.to_owned(),
                    detail: e.to_string(),
                });
            }
            let retryable = status == 429 || (500..600).contains(&status);
            if retryable && !last {
                let wait = match retry_after {
                    Some(w) if w > self.max_retry_after => {
                        return Err(ProlificError::WaitTooLong {
                            path: path.to_owned(),
                            wait: w,
                        });
                    }
                    Some(w) => w,
                    None => backoff(self.backoff_base_ms, attempt),
                };
                tracing::info!(
                    status,
                    path,
                    wait_ms = wait.as_millis() as u64,
                    "Prolific asked to retry"
                );
                std::thread::sleep(wait);
                continue;
            }
            return Err(ProlificError::Http {
                method,
                path: path.to_owned(),
                status,
                detail: error_detail(&reply),
            });
        }
    }
}

fn decode<T: serde::de::DeserializeOwned>(path: &str, v: Value) -> Result<T, ProlificError> {
    serde_json::from_value(v).map_err(|e| ProlificError::Decode {
        path: path.to_owned(),
        detail: e.to_string(),
    })
}

/// Ids go into paths: anything but letters, digits, `-` and `_` is dropped, so an id can never
/// change which endpoint is called.
fn segment(id: &str) -> String {
    id.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect()
}

/// Prolific's error body: `{"error": {"status", "error_code", "title", "detail", …}}`, where
/// `detail` is a string or an object of field errors, or the flat `{"message", "detail"}`
/// (the two shapes Prolific's own CLI decodes, prolific-oss/cli `client/client.go` `Execute`:
/// `JSONAPIError`, then `SimpleAPIError`). Anything else: the first 300 characters.
pub fn error_detail(body: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return body.chars().take(300).collect();
    };
    let e = if v["error"].is_object() {
        &v["error"]
    } else {
        &v
    };
    let title = e["title"]
        .as_str()
        .or_else(|| e["message"].as_str())
        .unwrap_or("");
    let detail = match &e["detail"] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let text = match (title.is_empty(), detail.is_empty()) {
        (false, false) => format!("{title}: {detail}"),
        (false, true) => title.to_owned(),
        (true, false) => detail,
        (true, true) => body.chars().take(300).collect(),
    };
    text.chars().take(600).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_read_title_and_detail() {
        let b = r#"{"error":{"status":400,"error_code":140100,"title":"Invalid request","detail":{"message":["must be at least 100 chars"]},"additional_information":"/api/v1/errors/140100"}}"#;
        let d = error_detail(b);
        assert!(d.starts_with("Invalid request: "), "{d}");
        assert!(d.contains("100 chars"), "{d}");
        assert_eq!(error_detail("<html>oops</html>"), "<html>oops</html>");
        assert_eq!(
            error_detail(r#"{"message":"Bad request","detail":"No such study."}"#),
            "Bad request: No such study."
        );
    }

    #[test]
    fn ids_cannot_change_the_path() {
        assert_eq!(segment("60f2/../../users"), "60f2users");
    }

    #[test]
    fn a_missing_token_names_the_variable() {
        let s = ProlificSettings {
            token_env: "EB_NO_SUCH_PROLIFIC_TOKEN".into(),
            base_url: "http://127.0.0.1:1".into(),
            ..ProlificSettings::default()
        };
        let e = ProlificClient::new(&s).submissions("x").err();
        assert!(
            matches!(&e, Some(ProlificError::NoToken(v)) if v == "EB_NO_SUCH_PROLIFIC_TOKEN"),
            "{e:?}"
        );
    }
}
