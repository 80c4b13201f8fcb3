//! The three wire formats: request bodies and endpoints, and reading the text and token counts
//! out of a reply. Pure functions, unit-tested here and against a fake server in tests/api.

use serde_json::{Value, json};

use crate::config::ProviderKind;
use crate::domain::distribution::TokenLogprob;
use crate::domain::prompt::ChatMessage;

use super::profiles::{SentParams, model_id};

/// The text of a completion, what it cost, who answered and why it stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub text: String,
    /// None: the reply did not say (stored as unknown, not 0).
    pub input_tokens: Option<i64>,
    /// Includes thinking tokens (they are billed as output).
    pub output_tokens: Option<i64>,
    /// The snapshot that answered (`model`, with OpenAI's `system_fingerprint`; Gemini's
    /// `modelVersion`).
    pub model_version: Option<String>,
    /// The provider's own word for why it stopped (`stop`, `end_turn`, `STOP`, `length`, …).
    pub finish_reason: Option<String>,
    /// It stopped at the token cap.
    pub truncated: bool,
    /// The content's tokens with their log-probabilities, when asked and given.
    pub logprobs: Option<Vec<TokenLogprob>>,
}

/// Why a 2xx reply holds no answer to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoAnswer {
    /// Not a completion of this wire format.
    Unreadable,
    /// Cut off at the token cap before any text (thinking used it up).
    Truncated,
    /// The model declined (OpenAI `refusal`, Anthropic `stop_reason: "refusal"`).
    Refused,
    /// The provider's safety system withheld the prompt or the reply.
    Blocked,
}

/// A 2xx reply that is not an answer: which kind, and the provider's reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyProblem {
    pub kind: NoAnswer,
    pub message: String,
    pub model_version: Option<String>,
    pub finish_reason: Option<String>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
}

/// The URL to POST to (no key in it: keys travel in headers).
pub fn endpoint(kind: ProviderKind, base_url: &str, model: &str) -> String {
    let base = base_url.trim_end_matches('/');
    match kind {
        ProviderKind::Openai => format!("{base}/chat/completions"),
        ProviderKind::Anthropic => format!("{base}/messages"),
        ProviderKind::Gemini => format!("{base}/models/{}:generateContent", model_id(model)),
    }
}

/// The headers that carry the key (and the API version for Anthropic).
pub fn auth_headers(kind: ProviderKind, key: Option<&str>) -> Vec<(&'static str, String)> {
    let mut headers = Vec::new();
    match kind {
        ProviderKind::Openai => {
            if let Some(k) = key {
                headers.push(("authorization", format!("Bearer {k}")));
            }
        }
        ProviderKind::Anthropic => {
            if let Some(k) = key {
                headers.push(("x-api-key", k.to_owned()));
            }
            headers.push(("anthropic-version", "2023-06-01".to_owned()));
        }
        ProviderKind::Gemini => {
            if let Some(k) = key {
                headers.push(("x-goog-api-key", k.to_owned()));
            }
        }
    }
    headers
}

/// A seed that every provider accepts as a JSON integer (some reject values above 2^31).
fn wire_seed(seed: u64) -> u64 {
    seed & 0x7fff_ffff
}

/// The JSON body of one request, with exactly the parameters `sent` names.
pub fn request_body(
    kind: ProviderKind,
    model: &str,
    messages: &[ChatMessage],
    sent: &SentParams,
    seed: u64,
) -> Value {
    let mut system: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == "system")
        .map(|m| m.content.as_str())
        .collect();
    let mut turns: Vec<(String, String)> = messages
        .iter()
        .filter(|m| m.role != "system")
        .map(|m| (m.role.clone(), m.content.clone()))
        .collect();
    if !sent.system_message && !system.is_empty() {
        // A model without a system role reads the instructions at the head of the first turn.
        let head = system.join("\n\n");
        match turns.iter_mut().find(|(role, _)| role == "user") {
            Some((_, text)) => *text = format!("{head}\n\n{text}"),
            None => turns.insert(0, ("user".to_owned(), head)),
        }
        system.clear();
    }
    let put = |body: &mut Value, key: &str, v: Option<Value>| {
        if let Some(v) = v {
            body[key] = v;
        }
    };
    let seed_value = sent
        .seed_field
        .as_ref()
        .map(|f| (f.clone(), json!(wire_seed(seed))));
    match kind {
        ProviderKind::Openai => {
            // The messages in their own order; folded when the model takes no system role.
            let all: Vec<Value> = if sent.system_message {
                messages
                    .iter()
                    .map(|m| json!({"role": m.role, "content": m.content}))
                    .collect()
            } else {
                turns
                    .iter()
                    .map(|(r, c)| json!({"role": r, "content": c}))
                    .collect()
            };
            let mut body = json!({"model": model, "messages": all});
            put(&mut body, "temperature", sent.temperature.map(|t| json!(t)));
            put(&mut body, "top_p", sent.top_p.map(|t| json!(t)));
            body[sent.token_field.as_str()] = json!(sent.max_tokens);
            if let Some((field, v)) = seed_value {
                body[field.as_str()] = v;
            }
            if let Some(n) = sent.top_logprobs {
                // CreateChatCompletionRequest: `logprobs` (boolean) and `top_logprobs` (0..=20,
                // needs `logprobs: true`), https://platform.openai.com/docs/api-reference/chat/create.
                body["logprobs"] = json!(true);
                body["top_logprobs"] = json!(n);
            }
            body
        }
        ProviderKind::Anthropic => {
            let mut body = json!({
                "model": model,
                "max_tokens": sent.max_tokens,
                "messages": turns
                    .iter()
                    .map(|(r, c)| json!({"role": r, "content": c}))
                    .collect::<Vec<_>>(),
            });
            put(&mut body, "temperature", sent.temperature.map(|t| json!(t)));
            put(&mut body, "top_p", sent.top_p.map(|t| json!(t)));
            if !system.is_empty() {
                body["system"] = json!(system.join("\n\n"));
            }
            body
        }
        ProviderKind::Gemini => {
            let mut config = json!({"maxOutputTokens": sent.max_tokens});
            put(
                &mut config,
                "temperature",
                sent.temperature.map(|t| json!(t)),
            );
            put(&mut config, "topP", sent.top_p.map(|t| json!(t)));
            if let Some((field, v)) = seed_value {
                config[field.as_str()] = v;
            }
            let mut body = json!({
                "contents": turns
                    .iter()
                    .map(|(r, c)| json!({
                        "role": if r == "assistant" { "model" } else { "user" },
                        "parts": [{"text": c}],
                    }))
                    .collect::<Vec<_>>(),
                "generationConfig": config,
            });
            if !system.is_empty() {
                body["systemInstruction"] = json!({"parts": [{"text": system.join("\n\n")}]});
            }
            body
        }
    }
}

/// Drops inline reasoning (`<think>…</think>`, as DeepSeek-R1 and Qwen3 servers send it in
/// `content`); an unclosed tag means the whole text was reasoning.
pub fn strip_think(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("<think>") {
        out.push_str(&rest[..start]);
        match rest[start..].find("</think>") {
            Some(end) => rest = &rest[start + end + "</think>".len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    // A server that puts the opening tag in the template sends only the closing one.
    if let Some(end) = out.find("</think>") {
        out = out[end + "</think>".len()..].to_owned();
    }
    if out.len() == text.len() {
        out
    } else {
        out.trim_start().to_owned()
    }
}

/// The text of an OpenAI-style `content`: a string, or a list of chunks (Mistral's Magistral
/// answers `[{"type":"thinking","thinking":[…]},{"type":"text","text":"…"}]`) of which only the
/// `text` chunks are the answer.
fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(chunks) => Some(
            chunks
                .iter()
                .filter(|c| c["type"] == "text")
                .filter_map(|c| c["text"].as_str())
                .collect(),
        ),
        _ => None,
    }
}

fn sum(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    }
}

/// What one wire format's reader found: the text, a reason there is no answer, the metadata.
type Read = (String, Option<(NoAnswer, String)>, Completion);

fn unreadable(message: String) -> ReplyProblem {
    ReplyProblem {
        kind: NoAnswer::Unreadable,
        message,
        model_version: None,
        finish_reason: None,
        input_tokens: None,
        output_tokens: None,
    }
}

fn string(x: &Value) -> Option<String> {
    x.as_str().map(str::to_owned)
}

fn read_openai(v: &Value) -> Result<Read, ReplyProblem> {
    // openapi.yaml CreateChatCompletionResponse: choices[].message.{content, refusal},
    // choices[].finish_reason in stop | length | tool_calls | content_filter | function_call;
    // model; system_fingerprint; usage.completion_tokens includes the reasoning tokens
    // (completion_tokens_details.reasoning_tokens).
    let choice = &v["choices"][0];
    let snapshot = match (string(&v["model"]), v["system_fingerprint"].as_str()) {
        (Some(m), Some(fp)) => Some(format!("{m} ({fp})")),
        (m, _) => m,
    };
    let finish = string(&choice["finish_reason"]);
    let c = Completion {
        text: String::new(),
        input_tokens: v["usage"]["prompt_tokens"].as_i64(),
        output_tokens: v["usage"]["completion_tokens"].as_i64(),
        model_version: snapshot,
        truncated: finish.as_deref() == Some("length"),
        finish_reason: finish,
        logprobs: token_logprobs(&choice["logprobs"]),
    };
    let problem = if let Some(r) = choice["message"]["refusal"].as_str() {
        Some((NoAnswer::Refused, format!("the model refused: {r}")))
    } else if c.finish_reason.as_deref() == Some("content_filter") {
        Some((
            NoAnswer::Blocked,
            "the reply was withheld by the content filter (finish_reason content_filter)".into(),
        ))
    } else {
        None
    };
    let text = content_text(&choice["message"]["content"]);
    if text.is_none() && problem.is_none() && !c.truncated {
        return Err(unreadable(
            "the reply has no choices[0].message.content".into(),
        ));
    }
    Ok((text.unwrap_or_default(), problem, c))
}

/// `choices[].logprobs.content[]` (openapi.yaml `ChatCompletionTokenLogprob`: `token`,
/// `logprob`, `bytes`, `top_logprobs[]` of `{token, logprob, bytes}`; llama.cpp's server sends
/// the same, each with its token `id` besides). None when absent or not of that shape: a
/// malformed list is no distribution, never a made-up one.
fn token_logprobs(logprobs: &Value) -> Option<Vec<TokenLogprob>> {
    let content = logprobs["content"].as_array()?;
    content
        .iter()
        .map(|t| {
            Some(TokenLogprob {
                token: t["token"].as_str()?.to_owned(),
                logprob: t["logprob"].as_f64()?,
                top: t["top_logprobs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| Some((a["token"].as_str()?.to_owned(), a["logprob"].as_f64()?)))
                    .collect::<Option<Vec<_>>>()?,
            })
        })
        .collect()
}

fn read_anthropic(v: &Value) -> Result<Read, ReplyProblem> {
    // Messages API: content blocks (only `text` blocks are the answer; `thinking` blocks are
    // not), stop_reason in end_turn | max_tokens | stop_sequence | tool_use | pause_turn |
    // refusal; model; usage.{input_tokens, output_tokens}.
    let blocks = v["content"]
        .as_array()
        .ok_or_else(|| unreadable("the reply has no content blocks".into()))?;
    let text: String = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    let finish = string(&v["stop_reason"]);
    let c = Completion {
        text: String::new(),
        input_tokens: v["usage"]["input_tokens"].as_i64(),
        output_tokens: v["usage"]["output_tokens"].as_i64(),
        model_version: string(&v["model"]),
        truncated: finish.as_deref() == Some("max_tokens"),
        finish_reason: finish,
        logprobs: None,
    };
    let problem = (c.finish_reason.as_deref() == Some("refusal")).then(|| {
        (
            NoAnswer::Refused,
            "the model refused (stop_reason refusal)".into(),
        )
    });
    Ok((text, problem, c))
}

/// Gemini FinishReason values that mean the reply was withheld.
const GEMINI_BLOCKED: [&str; 6] = [
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
];

fn read_gemini(v: &Value) -> Result<Read, ReplyProblem> {
    // v1beta GenerateContentResponse: candidates[].content.parts[] (parts with `thought: true`
    // are thinking), candidates[].finishReason (FinishReason), promptFeedback.blockReason
    // (BlockReason) with no candidates when the prompt is blocked,
    // usageMetadata.{promptTokenCount, candidatesTokenCount, thoughtsTokenCount} (thinking is
    // billed as output), modelVersion.
    let usage = &v["usageMetadata"];
    let candidate = &v["candidates"][0];
    let finish = string(&candidate["finishReason"]);
    let c = Completion {
        text: String::new(),
        input_tokens: usage["promptTokenCount"].as_i64(),
        output_tokens: sum(
            usage["candidatesTokenCount"].as_i64(),
            usage["thoughtsTokenCount"].as_i64(),
        ),
        model_version: string(&v["modelVersion"]),
        truncated: finish.as_deref() == Some("MAX_TOKENS"),
        finish_reason: finish,
        logprobs: None,
    };
    let problem = if let Some(reason) = v["promptFeedback"]["blockReason"].as_str() {
        Some((
            NoAnswer::Blocked,
            format!("the prompt was blocked (promptFeedback.blockReason {reason})"),
        ))
    } else {
        c.finish_reason
            .as_deref()
            .filter(|r| GEMINI_BLOCKED.contains(r))
            .map(|r| {
                (
                    NoAnswer::Blocked,
                    format!("the reply was blocked (finishReason {r})"),
                )
            })
    };
    let parts = candidate["content"]["parts"].as_array();
    if parts.is_none() && problem.is_none() && !c.truncated {
        return Err(unreadable(
            "the reply has no candidates[0].content.parts".into(),
        ));
    }
    let text: String = parts
        .into_iter()
        .flatten()
        .filter(|p| p["thought"] != true)
        .filter_map(|p| p["text"].as_str())
        .collect();
    Ok((text, problem, c))
}

/// Reads a successful (2xx) reply body: the answer, or why there is none.
pub fn parse_completion(kind: ProviderKind, body: &str) -> Result<Completion, ReplyProblem> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| unreadable(format!("the reply is not JSON: {e}")))?;
    let (text, problem, c) = match kind {
        ProviderKind::Openai => read_openai(&v)?,
        ProviderKind::Anthropic => read_anthropic(&v)?,
        ProviderKind::Gemini => read_gemini(&v)?,
    };
    let text = strip_think(&text);
    let problem = problem.or_else(|| {
        (c.truncated && text.trim().is_empty()).then(|| {
            (
                NoAnswer::Truncated,
                format!(
                    "the reply stopped at the token cap before any answer (finish reason {}); \
                     a thinking model may need a larger cap",
                    c.finish_reason.as_deref().unwrap_or("?")
                ),
            )
        })
    });
    match problem {
        Some((kind, message)) => Err(ReplyProblem {
            kind,
            message,
            model_version: c.model_version,
            finish_reason: c.finish_reason,
            input_tokens: c.input_tokens,
            output_tokens: c.output_tokens,
        }),
        None => Ok(Completion { text, ..c }),
    }
}

/// The messages of a request body, back as (role, content) pairs; used by fake servers to read
/// what was asked, whatever the wire format.
pub fn request_messages(body: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(s) = body["system"].as_str() {
        out.push(("system".to_owned(), s.to_owned()));
    }
    if let Some(parts) = body["systemInstruction"]["parts"].as_array() {
        let text: String = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        out.push(("system".to_owned(), text));
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        out.push((
            m["role"].as_str().unwrap_or("").to_owned(),
            m["content"].as_str().unwrap_or("").to_owned(),
        ));
    }
    for c in body["contents"].as_array().into_iter().flatten() {
        let text: String = c["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["text"].as_str())
            .collect();
        out.push((c["role"].as_str().unwrap_or("").to_owned(), text));
    }
    out
}

/// A successful reply in the given wire format (fake servers and tests).
pub fn reply_body(kind: ProviderKind, text: &str, input: i64, output: i64) -> Value {
    match kind {
        ProviderKind::Openai => json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": input, "completion_tokens": output,
                      "total_tokens": input + output},
        }),
        ProviderKind::Anthropic => json!({
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": input, "output_tokens": output},
        }),
        ProviderKind::Gemini => json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                            "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": input, "candidatesTokenCount": output,
                              "totalTokenCount": input + output},
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::config::ProviderConfig;
    use crate::domain::run::RunParams;
    use crate::llm::profiles;

    /// What a default run sends to `model` on a provider of this kind.
    fn sent(kind: ProviderKind, model: &str) -> SentParams {
        let p = ProviderConfig::new("p", kind, "http://127.0.0.1:1");
        profiles::plan(&p, model, &RunParams::default()).unwrap()
    }

    fn messages() -> Vec<ChatMessage> {
        vec![
            ChatMessage {
                role: "system".into(),
                content: "You are a helpful assistant.".into(),
            },
            ChatMessage {
                role: "user".into(),
                content: "Prompt: rate".into(),
            },
        ]
    }

    #[test]
    fn each_kind_puts_the_system_message_where_its_api_wants_it() {
        let oa = request_body(
            ProviderKind::Openai,
            "m",
            &messages(),
            &sent(ProviderKind::Openai, "m"),
            7,
        );
        assert_eq!(oa["messages"][0]["role"], "system");
        assert_eq!(oa["seed"], 7);
        assert_eq!(oa["temperature"], 0.0);
        let an = request_body(
            ProviderKind::Anthropic,
            "m",
            &messages(),
            &sent(ProviderKind::Anthropic, "m"),
            7,
        );
        assert_eq!(an["system"], "You are a helpful assistant.");
        assert_eq!(an["messages"].as_array().unwrap().len(), 1);
        assert!(an.get("seed").is_none());
        let ge = request_body(
            ProviderKind::Gemini,
            "m",
            &messages(),
            &sent(ProviderKind::Gemini, "m"),
            7,
        );
        assert_eq!(
            ge["systemInstruction"]["parts"][0]["text"],
            "You are a helpful assistant."
        );
        assert_eq!(ge["contents"][0]["parts"][0]["text"], "Prompt: rate");
        assert_eq!(ge["generationConfig"]["maxOutputTokens"], 512);
        for body in [&oa, &an, &ge] {
            assert_eq!(request_messages(body).len(), 2);
        }
    }

    #[test]
    fn replies_are_read_back_with_their_token_counts() {
        for kind in [
            ProviderKind::Openai,
            ProviderKind::Anthropic,
            ProviderKind::Gemini,
        ] {
            let body = reply_body(kind, "1. 3", 120, 40).to_string();
            let c = parse_completion(kind, &body).unwrap();
            assert_eq!(c.text, "1. 3");
            assert_eq!(c.input_tokens, Some(120));
            assert_eq!(c.output_tokens, Some(40));
        }
        assert!(parse_completion(ProviderKind::Openai, "{}").is_err());
        assert!(parse_completion(ProviderKind::Gemini, "<html>").is_err());
    }

    #[test]
    fn endpoints_and_headers_carry_no_key_in_the_url() {
        assert_eq!(
            endpoint(
                ProviderKind::Gemini,
                "https://g/v1beta/",
                "gemini-2.0-flash"
            ),
            "https://g/v1beta/models/gemini-2.0-flash:generateContent"
        );
        assert_eq!(
            endpoint(ProviderKind::Openai, "http://127.0.0.1:1/v1", "x"),
            "http://127.0.0.1:1/v1/chat/completions"
        );
        let h = auth_headers(ProviderKind::Anthropic, Some("k"));
        assert!(h.contains(&("x-api-key", "k".to_owned())));
        assert!(h.iter().any(|(n, _)| *n == "anthropic-version"));
    }

    // Finding 10 of issue #22.

    #[test]
    fn mistral_models_get_their_seed_as_random_seed() {
        let body = request_body(
            ProviderKind::Openai,
            "mistral-large-latest",
            &messages(),
            &sent(ProviderKind::Openai, "mistral-large-latest"),
            7,
        );
        assert_eq!(body["random_seed"], 7);
        assert!(body.get("seed").is_none());
    }

    #[test]
    fn content_as_a_chunk_list_keeps_only_the_text_chunks() {
        // Magistral's reply shape (Mistral API ThinkChunk/TextChunk).
        let body = json!({"model": "magistral-medium-2509", "choices": [{"index": 0,
            "finish_reason": "stop", "message": {"role": "assistant", "content": [
                {"type": "thinking", "thinking": [{"type": "text", "text": "Let me rate."}]},
                {"type": "text", "text": "1. 3"}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 30}});
        let c = parse_completion(ProviderKind::Openai, &body.to_string()).unwrap();
        assert_eq!(c.text, "1. 3");
    }

    #[test]
    fn inline_think_tags_are_skipped() {
        assert_eq!(strip_think("<think>hmm\n1. 5?</think>\n1. 3"), "1. 3");
        assert_eq!(strip_think("reasoning only</think>1. 2"), "1. 2");
        assert_eq!(strip_think("<think>never closed"), "");
        assert_eq!(strip_think("1. 3"), "1. 3");
        let body = reply_body(ProviderKind::Openai, "<think>x</think>1. 4", 1, 1);
        let c = parse_completion(ProviderKind::Openai, &body.to_string()).unwrap();
        assert_eq!(c.text, "1. 4");
    }

    #[test]
    fn gemma_gets_no_system_instruction() {
        let body = request_body(
            ProviderKind::Gemini,
            "gemma-3-27b-it",
            &messages(),
            &sent(ProviderKind::Gemini, "gemma-3-27b-it"),
            7,
        );
        assert!(body.get("systemInstruction").is_none());
        let first = body["contents"][0]["parts"][0]["text"].as_str().unwrap();
        assert!(
            first.starts_with("You are a helpful assistant.\n\nPrompt: rate"),
            "{first}"
        );
    }

    #[test]
    fn a_models_prefix_is_not_doubled() {
        assert_eq!(
            endpoint(
                ProviderKind::Gemini,
                "https://g/v1beta",
                "models/gemini-2.5-pro"
            ),
            "https://g/v1beta/models/gemini-2.5-pro:generateContent"
        );
    }

    #[test]
    fn gemini_3_records_a_run_that_leaves_its_default_temperature() {
        let s = sent(ProviderKind::Gemini, "gemini-3-pro-preview");
        assert_eq!(s.temperature, Some(0.0));
        assert!(
            s.notes.iter().any(|n| n.contains("default temperature 1")),
            "{:?}",
            s.notes
        );
    }

    #[test]
    fn missing_usage_is_unknown_and_thinking_is_output() {
        let body = json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "1. 3"}}]});
        let c = parse_completion(ProviderKind::Openai, &body.to_string()).unwrap();
        assert_eq!((c.input_tokens, c.output_tokens), (None, None));
        let body = json!({"candidates": [{"content": {"role": "model", "parts": [
                {"text": "weighing it", "thought": true}, {"text": "1. 3"}]},
                "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 4,
                              "thoughtsTokenCount": 96},
            "modelVersion": "gemini-2.5-flash"});
        let c = parse_completion(ProviderKind::Gemini, &body.to_string()).unwrap();
        assert_eq!(c.text, "1. 3");
        assert_eq!(c.output_tokens, Some(100));
        assert_eq!(c.model_version.as_deref(), Some("gemini-2.5-flash"));
    }

    #[test]
    fn a_max_tokens_candidate_without_parts_is_truncated_not_unreadable() {
        let body = json!({"candidates": [{"content": {"role": "model"},
            "finishReason": "MAX_TOKENS"}],
            "usageMetadata": {"promptTokenCount": 1706, "thoughtsTokenCount": 2999}});
        let e = parse_completion(ProviderKind::Gemini, &body.to_string()).unwrap_err();
        assert_eq!(e.kind, NoAnswer::Truncated);
        assert_eq!(e.output_tokens, Some(2999));
    }

    /// The answer distributions of a fixture reply read against a two-item spec
    /// (Interested, Excited; shown in that order) on a 1..5 scale.
    fn fixture_distributions(file: &str) -> (Vec<i32>, crate::domain::distribution::Distributions) {
        use crate::domain::distribution::answer_distributions;
        use crate::domain::parse::{ParseSpec, parse_reply};
        let path = format!(
            "{}/tests/fixtures/logprobs/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let body = std::fs::read_to_string(path).unwrap();
        let c = parse_completion(ProviderKind::Openai, &body).unwrap();
        let texts = ["Interested", "Excited"];
        let spec = ParseSpec {
            display_order: &[1, 2],
            item_texts: &texts,
            min: 1,
            max: 5,
        };
        let scores = parse_reply(&c.text, &spec).unwrap().scores;
        let tokens = c.logprobs.expect("the reply carries logprobs");
        let d = answer_distributions(&tokens, &scores, &spec, &strip_think).unwrap();
        (scores, d)
    }

    fn assert_close(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-9, "{got:?} vs {want:?}");
        }
    }

    // Pinned from tools/stats_reference.py (logprob_distributions), numpy over the same files.

    #[test]
    fn a_recorded_llama_cpp_reply_gives_each_item_its_distribution() {
        let (scores, d) = fixture_distributions("llamacpp_smollm2.json");
        assert_eq!(scores, vec![3, 3]);
        assert!(d.complete());
        let items: Vec<_> = d.items.iter().flatten().collect();
        for item in &items {
            assert!((item.probs.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
        assert_close(
            &items[0].probs,
            &[
                0.07766633329683803,
                0.1535868898708319,
                0.6360295791872044,
                0.08705768685321354,
                0.04565951079191215,
            ],
        );
        assert!((items[0].expected - 2.8694571519725303).abs() < 1e-9);
        assert_close(
            &items[1].probs,
            &[
                0.09563174635406226,
                0.2595151101573238,
                0.3023617269400455,
                0.2641353651265451,
                0.07835605142202345,
            ],
        );
        assert!((items[1].expected - 2.9700688651051443).abs() < 1e-9);
    }

    #[test]
    fn an_openai_reply_in_the_reference_shape_gives_each_item_its_distribution() {
        let (scores, d) = fixture_distributions("openai_reference_shape.json");
        assert_eq!(scores, vec![4, 2]);
        assert!(d.complete());
        let items: Vec<_> = d.items.iter().flatten().collect();
        assert_close(
            &items[0].probs,
            &[
                0.0,
                0.014349895063819408,
                0.2392354538555989,
                0.6698592994782757,
                0.07655535160230592,
            ],
        );
        assert!((items[0].expected - 3.808620107619068).abs() < 1e-9);
        assert_close(
            &items[1].probs,
            &[
                0.33085634643283923,
                0.5514272309495176,
                0.11028544756120384,
                0.007430975056439182,
                0.0,
            ],
        );
        assert!((items[1].expected - 1.7942910512412427).abs() < 1e-9);
    }

    #[test]
    fn logprobs_are_asked_only_when_the_run_asks_and_the_wire_format_has_them() {
        let p = ProviderConfig::new("p", ProviderKind::Openai, "http://127.0.0.1:1");
        let params = RunParams {
            logprobs: true,
            ..RunParams::default()
        };
        let s = profiles::plan(&p, "m", &params).unwrap();
        let body = request_body(ProviderKind::Openai, "m", &messages(), &s, 7);
        assert_eq!(
            (body["logprobs"].clone(), body["top_logprobs"].clone()),
            (json!(true), json!(20))
        );
        let plain = request_body(
            ProviderKind::Openai,
            "m",
            &messages(),
            &sent(ProviderKind::Openai, "m"),
            7,
        );
        assert!(plain.get("logprobs").is_none() && plain.get("top_logprobs").is_none());
        let a = ProviderConfig::new("a", ProviderKind::Anthropic, "http://127.0.0.1:1");
        let s = profiles::plan(&a, "claude-sonnet-4-5", &params).unwrap();
        assert_eq!(s.top_logprobs, None);
        assert!(
            s.notes
                .iter()
                .any(|n| n.contains("no token log-probabilities")),
            "{:?}",
            s.notes
        );
    }

    #[test]
    fn a_malformed_logprobs_list_is_no_distribution() {
        let body = json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "1. 3"},
            "logprobs": {"content": [{"token": "1", "logprob": "high"}]}}]});
        let c = parse_completion(ProviderKind::Openai, &body.to_string()).unwrap();
        assert_eq!(c.text, "1. 3");
        assert_eq!(c.logprobs, None);
    }
}
