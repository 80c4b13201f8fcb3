//! A fake Prolific API for tests: the endpoints the loop uses, with the paths, bodies, status
//! codes and error bodies of Prolific's public reference (cited next to each), on the same
//! small HTTP server as the fake model provider (`llm::fake::FakeServer`: port 0, every request
//! recorded). Tests seed submissions, queue scripted replies (a 429 with Retry-After, a 503)
//! ahead of the real handling, and read what was sent.
//!
//! What the reference does not say is kept simple and said so: the list is paged by `limit`
//! and `offset` with `meta.count` (as Prolific's own CLI reads it; without `limit`, a page of
//! [`DEFAULT_LIMIT`]), and request-return leaves the status as it was (the participant returns it later, which a
//! test plays with [`FakeProlific::set_status`] and a webhook).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};

use crate::domain::prolific::{REJECT_MESSAGE_MIN_CHARS, RejectionCategory};
use crate::llm::fake::{FakeAction, FakeRequest, FakeServer};

use super::signature;

/// Submissions per page of the fake's list when no `limit` is asked for.
pub const DEFAULT_LIMIT: usize = 20;

/// A submission as the fake holds it.
#[derive(Debug, Clone)]
pub struct FakeSubmission {
    pub id: String,
    pub study_id: String,
    pub participant_id: String,
    pub status: String,
    pub study_code: Option<String>,
    pub return_requested: bool,
    pub rejection: Option<(String, String)>,
}

#[derive(Debug, Default)]
struct State {
    studies: BTreeMap<String, Value>,
    submissions: Vec<FakeSubmission>,
    scripted: VecDeque<FakeAction>,
    next_id: u64,
}

/// A running fake; stops when dropped.
pub struct FakeProlific {
    server: FakeServer,
    state: Arc<Mutex<State>>,
    token: String,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Prolific's error body (the shape its CLI decodes, prolific-oss/cli `client/client.go`):
/// `{"error": {"status", "error_code", "title", "detail", "additional_information"}}`.
pub fn error_reply(status: u16, title: &str, detail: Value) -> FakeAction {
    crate::llm::fake::real::json(
        status,
        &[],
        &json!({"error": {
            "status": status,
            "error_code": 140_000 + u32::from(status),
            "title": title,
            "detail": detail,
            "additional_information": "/api/v1/errors/",
        }}),
    )
}

fn ok(status: u16, body: &Value) -> FakeAction {
    crate::llm::fake::real::json(status, &[], body)
}

impl FakeProlific {
    /// Starts a fake that accepts `Authorization: Token <token>` only.
    pub fn start(token: &str) -> std::io::Result<FakeProlific> {
        let state = Arc::new(Mutex::new(State::default()));
        let (s2, t2) = (state.clone(), format!("Token {token}"));
        let server = FakeServer::start(move |req| {
            let mut st = lock(&s2);
            if let Some(a) = st.scripted.pop_front() {
                return a;
            }
            // "In your requests add `Authorization` header with the value `Token <your
            // token>`"; 401: "No valid token was provided"
            // (https://docs.prolific.com/documentation/get-started/api-fundamentals).
            if req.header("authorization") != Some(t2.as_str()) {
                return error_reply(401, "Unauthorized", json!("No valid token was provided."));
            }
            handle(&mut st, req)
        })?;
        Ok(FakeProlific {
            server,
            state,
            token: token.to_owned(),
        })
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<FakeRequest> {
        self.server.requests()
    }

    /// Replies sent, in order, before anything is handled (one per request).
    pub fn script(&self, action: FakeAction) {
        lock(&self.state).scripted.push_back(action);
    }

    /// A 429 as Prolific sends it ("429 Too many requests",
    /// https://docs.prolific.com/documentation/get-started/api-fundamentals), with this
    /// Retry-After in seconds.
    pub fn too_many_requests(retry_after_seconds: u64) -> FakeAction {
        let FakeAction::Reply { body, .. } =
            error_reply(429, "Too many requests", json!("Request was throttled."))
        else {
            unreachable!("error_reply is a reply")
        };
        FakeAction::Reply {
            status: 429,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("Retry-After".into(), retry_after_seconds.to_string()),
            ],
            body,
            delay: Duration::ZERO,
        }
    }

    /// Adds a submission to a study (the study need not have been created through the fake).
    pub fn add_submission(&self, study: &str, id: &str, participant: &str, status: &str) {
        lock(&self.state).submissions.push(FakeSubmission {
            id: id.to_owned(),
            study_id: study.to_owned(),
            participant_id: participant.to_owned(),
            status: status.to_owned(),
            study_code: None,
            return_requested: false,
            rejection: None,
        });
    }

    pub fn set_status(&self, submission: &str, status: &str) {
        for s in &mut lock(&self.state).submissions {
            if s.id == submission {
                s.status = status.to_owned();
            }
        }
    }

    pub fn submission(&self, id: &str) -> Option<FakeSubmission> {
        lock(&self.state)
            .submissions
            .iter()
            .find(|s| s.id == id)
            .cloned()
    }

    /// The study as the fake holds it (what was created, then patched).
    pub fn study(&self, id: &str) -> Option<Value> {
        lock(&self.state).studies.get(id).cloned()
    }

    /// The headers of a signed webhook call for this body.
    pub fn webhook_headers(
        secret: &str,
        event_id: &str,
        timestamp: &str,
        body: &str,
    ) -> Vec<(String, String)> {
        vec![
            (
                signature::SIGNATURE_HEADER.to_owned(),
                signature::sign(secret, timestamp, body.as_bytes()),
            ),
            (signature::TIMESTAMP_HEADER.to_owned(), timestamp.to_owned()),
            (signature::EVENT_ID_HEADER.to_owned(), event_id.to_owned()),
            ("content-type".to_owned(), "application/json".to_owned()),
        ]
    }
}

fn handle(st: &mut State, req: &FakeRequest) -> FakeAction {
    let path = req.path.split('?').next().unwrap_or("");
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let body = req.json();
    match (req.method.as_str(), parts.as_slice()) {
        ("POST", ["api", "v1", "studies"]) => create_study(st, &body),
        ("PATCH", ["api", "v1", "studies", id]) => update_study(st, id, &body),
        ("GET", ["api", "v1", "studies", id, "submissions"]) => list(st, id, req),
        ("POST", ["api", "v1", "submissions", "bulk-approve"]) => bulk_approve(st, &body),
        ("POST", ["api", "v1", "submissions", id, "transition"]) => transition(st, id, &body),
        ("POST", ["api", "v1", "submissions", id, "request-return"]) => {
            request_return(st, id, &body)
        }
        _ => error_reply(404, "Not found", json!("Not found.")),
    }
}

/// The fields a draft must have (`CreateStudy`'s required fields in
/// https://docs.prolific.com/api-reference/studies/create-study), with 400 and field errors
/// when missing.
fn study_errors(body: &Value, partial: bool) -> BTreeMap<String, Vec<String>> {
    let mut errors = BTreeMap::new();
    let mut need = |field: &str, ok: bool| {
        if !ok && (!partial || !body[field].is_null()) {
            errors.insert(field.to_owned(), vec!["This field is required.".to_owned()]);
        }
    };
    for f in ["name", "description", "external_study_url"] {
        need(f, body[f].as_str().is_some_and(|s| !s.trim().is_empty()));
    }
    for f in [
        "total_available_places",
        "reward",
        "estimated_completion_time",
    ] {
        need(f, body[f].as_i64().is_some_and(|n| n > 0));
    }
    let codes_ok = body["completion_codes"].as_array().is_some_and(|codes| {
        !codes.is_empty()
            && codes.iter().all(|c| {
                c["code"].as_str().is_some_and(|s| !s.is_empty())
                    && c["code_type"].as_str().is_some()
                    && c["actions"].as_array().is_some_and(|a| {
                        a.iter().all(|x| {
                            matches!(
                                x["action"].as_str(),
                                Some(
                                    "AUTOMATICALLY_APPROVE"
                                        | "MANUALLY_REVIEW"
                                        | "REQUEST_RETURN"
                                        | "ADD_TO_PARTICIPANT_GROUP"
                                        | "REMOVE_FROM_PARTICIPANT_GROUP"
                                        | "DYNAMIC_PAYMENT"
                                        | "FIXED_SCREEN_OUT_PAYMENT"
                                )
                            )
                        })
                    })
            })
    });
    need("completion_codes", codes_ok);
    errors
}

fn create_study(st: &mut State, body: &Value) -> FakeAction {
    let errors = study_errors(body, false);
    if !errors.is_empty() {
        return error_reply(400, "Invalid request", json!(errors));
    }
    st.next_id += 1;
    let id = format!("{:024x}", 0x60f2_5f79_9fbd_u64 * 1000 + st.next_id);
    let mut study = body.clone();
    study["id"] = json!(id);
    // "UNPUBLISHED - When a study is created, it is in a draft format"
    // (https://docs.prolific.com/api-reference/studies/the-study-object).
    study["status"] = json!("UNPUBLISHED");
    st.studies.insert(id, study.clone());
    // 201 Created with the study (create-study reference).
    ok(201, &study)
}

fn update_study(st: &mut State, id: &str, body: &Value) -> FakeAction {
    let errors = study_errors(body, true);
    if !errors.is_empty() {
        return error_reply(400, "Invalid request", json!(errors));
    }
    let Some(study) = st.studies.get_mut(id) else {
        return error_reply(404, "Not found", json!("Not found."));
    };
    if let (Some(s), Some(b)) = (study.as_object_mut(), body.as_object()) {
        for (k, v) in b {
            s.insert(k.clone(), v.clone());
        }
    }
    ok(200, study)
}

fn short(s: &FakeSubmission) -> Value {
    // `SubmissionShort` (https://docs.prolific.com/api-reference/studies/get-study-submissions).
    json!({
        "id": s.id,
        "participant_id": s.participant_id,
        "status": s.status,
        "started_at": "2026-12-01T10:00:00.000000Z",
        "completed_at": null,
        "has_siblings": false,
        "study_code": s.study_code,
        "return_requested": if s.return_requested { json!("2026-12-01T11:00:00Z") } else { Value::Null },
    })
}

fn list(st: &State, study: &str, req: &FakeRequest) -> FakeAction {
    let query = req.path.split_once('?').map_or("", |(_, q)| q);
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| v.parse::<usize>().ok())
    };
    let (limit, offset) = (
        param("limit").unwrap_or(DEFAULT_LIMIT),
        param("offset").unwrap_or(0),
    );
    let all: Vec<&FakeSubmission> = st
        .submissions
        .iter()
        .filter(|s| s.study_id == study)
        .collect();
    let results: Vec<Value> = all
        .iter()
        .skip(offset)
        .take(limit)
        .map(|s| short(s))
        .collect();
    ok(
        200,
        &json!({"results": results, "meta": {"count": all.len()}}),
    )
}

/// `{"submission_ids": [...]}` (or `study_id` + `participant_ids`), 200 with a JSON string
/// (https://docs.prolific.com/api-reference/submissions/bulk-approve-submissions). Unknown
/// ids are a 400 here; the reference does not say what Prolific does with them.
fn bulk_approve(st: &mut State, body: &Value) -> FakeAction {
    let Some(ids) = body["submission_ids"].as_array() else {
        return error_reply(
            400,
            "Invalid request",
            json!({"submission_ids": ["This field is required."]}),
        );
    };
    let ids: Vec<&str> = ids.iter().filter_map(Value::as_str).collect();
    let unknown: Vec<&str> = ids
        .iter()
        .copied()
        .filter(|id| !st.submissions.iter().any(|s| s.id == *id))
        .collect();
    if !unknown.is_empty() {
        return error_reply(400, "Invalid request", json!({"submission_ids": unknown}));
    }
    for s in &mut st.submissions {
        if ids.contains(&s.id.as_str()) && s.status == "AWAITING REVIEW" {
            s.status = "APPROVED".into();
        }
    }
    ok(
        200,
        &json!("The request to bulk approve has been made successfully."),
    )
}

/// `{"action": "APPROVE" | "REJECT", "message", "rejection_category"}`: a REJECT needs a
/// category and "a message … at least 100 chars long"; "Once the status is changed, it can not
/// be restored"; the same request twice is ignored (idempotent)
/// (https://docs.prolific.com/api-reference/submissions/transition-submission).
fn transition(st: &mut State, id: &str, body: &Value) -> FakeAction {
    let Some(s) = st.submissions.iter_mut().find(|s| s.id == id) else {
        return error_reply(404, "Not found", json!("Not found."));
    };
    let action = body["action"].as_str().unwrap_or("");
    let target = match action {
        "APPROVE" => "APPROVED",
        "REJECT" => {
            let message = body["message"].as_str().unwrap_or("");
            let category = body["rejection_category"].as_str().unwrap_or("");
            let mut errors = BTreeMap::new();
            if message.chars().count() < REJECT_MESSAGE_MIN_CHARS {
                errors.insert(
                    "message",
                    vec![format!(
                        "Ensure this field has at least {REJECT_MESSAGE_MIN_CHARS} characters."
                    )],
                );
            }
            if RejectionCategory::parse(category).is_none() {
                errors.insert(
                    "rejection_category",
                    vec![format!("\"{category}\" is not a valid choice.")],
                );
            }
            if !errors.is_empty() {
                return error_reply(400, "Invalid request", json!(errors));
            }
            s.rejection = Some((category.to_owned(), message.to_owned()));
            "REJECTED"
        }
        _ => {
            return error_reply(
                400,
                "Invalid request",
                json!({"action": [format!("\"{action}\" is not a valid choice.")]}),
            );
        }
    };
    if s.status != target {
        if s.status != "AWAITING REVIEW" {
            return error_reply(
                400,
                "Invalid request",
                json!(format!(
                    "A submission in status {} cannot be changed.",
                    s.status
                )),
            );
        }
        s.status = target.to_owned();
    }
    ok(
        200,
        &json!({"id": s.id, "status": s.status, "study_id": s.study_id, "participant": s.participant_id}),
    )
}

/// `{"request_return_reasons": [..]}` → 200 `{"id", "status", "participant",
/// "return_requested"}` (https://docs.prolific.com/api-reference/submissions/request-submission-return).
fn request_return(st: &mut State, id: &str, body: &Value) -> FakeAction {
    let Some(s) = st.submissions.iter_mut().find(|s| s.id == id) else {
        return error_reply(404, "Not found", json!("Not found."));
    };
    let reasons_ok = body["request_return_reasons"]
        .as_array()
        .is_some_and(|r| !r.is_empty() && r.iter().all(Value::is_string));
    if !reasons_ok {
        return error_reply(
            400,
            "Invalid request",
            json!({"request_return_reasons": ["This field is required."]}),
        );
    }
    s.return_requested = true;
    ok(
        200,
        &json!({"id": s.id, "status": s.status, "participant": s.participant_id,
                "return_requested": "2026-12-01T11:00:00Z"}),
    )
}
