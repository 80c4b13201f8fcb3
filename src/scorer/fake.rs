//! Replies of the scoring services as their references publish them, for tests' fake servers
//! (`llm::fake::FakeServer`, which logs every request so a test can check its shape).

use serde_json::{Value, json};

use crate::llm::fake::FakeAction;
use crate::llm::fake::real;

/// Perspective's AnalyzeCommentResponse with a TOXICITY summary score (and one span), as
/// https://developers.perspectiveapi.com/s/about-the-api-methods shows it:
/// `{"attributeScores": {"TOXICITY": {"spanScores": [{"begin", "end", "score": {"value",
/// "type": "PROBABILITY"}}], "summaryScore": {"value", "type": "PROBABILITY"}}},
/// "languages": ["en"], "detectedLanguages": ["en"]}`.
pub fn perspective(text: &str, value: f64) -> FakeAction {
    let score = json!({ "value": value, "type": "PROBABILITY" });
    real::json(
        200,
        &[],
        &json!({
            "attributeScores": { "TOXICITY": {
                "spanScores": [{ "begin": 0, "end": text.chars().count(), "score": score }],
                "summaryScore": score,
            }},
            "languages": ["en"],
            "detectedLanguages": ["en"],
        }),
    )
}

/// A Google API error (`{"error": {"code", "message", "status"}}`, https://cloud.google.com/apis/design/errors),
/// as Perspective answers a spent quota (429 RESOURCE_EXHAUSTED) or a bad key (400
/// INVALID_ARGUMENT with reason API_KEY_INVALID).
pub fn google_error(
    code: u16,
    headers: &[(&str, &str)],
    status: &str,
    message: &str,
    reason: Option<&str>,
) -> FakeAction {
    let details: Vec<Value> = reason
        .map(|r| {
            vec![json!({
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": r,
                "domain": "googleapis.com",
            })]
        })
        .unwrap_or_default();
    real::json(
        code,
        headers,
        &json!({ "error": { "code": code, "message": message, "status": status, "details": details }}),
    )
}

/// OpenAI's moderation object (https://platform.openai.com/docs/api-reference/moderations/object;
/// openai-python `types/moderation_create_response.py`: `id`, `model`, `results[]` with
/// `flagged`, `categories`, `category_scores`, `category_applied_input_types`), with
/// `harassment` at `harassment` and every other category at 0.001.
pub fn moderation(model: &str, harassment: f64) -> FakeAction {
    const CATEGORIES: [&str; 13] = [
        "harassment",
        "harassment/threatening",
        "hate",
        "hate/threatening",
        "illicit",
        "illicit/violent",
        "self-harm",
        "self-harm/intent",
        "self-harm/instructions",
        "sexual",
        "sexual/minors",
        "violence",
        "violence/graphic",
    ];
    let mut categories = serde_json::Map::new();
    let mut scores = serde_json::Map::new();
    let mut types = serde_json::Map::new();
    for c in CATEGORIES {
        let s = if c == "harassment" { harassment } else { 0.001 };
        categories.insert(c.into(), json!(s >= 0.5));
        scores.insert(c.into(), json!(s));
        types.insert(c.into(), json!(["text"]));
    }
    real::json(
        200,
        &[],
        &json!({
            "id": "modr-0123456789",
            "model": model,
            "results": [{
                "flagged": harassment >= 0.5,
                "categories": categories,
                "category_scores": scores,
                "category_applied_input_types": types,
            }],
        }),
    )
}

/// `scripts/local_scorer.py`'s reply.
pub fn local(scores: &[f64]) -> FakeAction {
    real::json(
        200,
        &[],
        &json!({ "model": "alt-profanity-check", "version": "1.9.1", "scores": scores }),
    )
}
