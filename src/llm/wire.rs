//! The three wire formats: request bodies and endpoints, and reading the text and token counts
//! out of a reply. Pure functions, unit-tested here and against a fake server in tests/api.

use serde_json::{Value, json};

use crate::config::ProviderKind;
use crate::domain::prompt::ChatMessage;
use crate::domain::run::RunParams;

/// The text of a completion and what it cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub text: String,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
}

/// The URL to POST to (no key in it: keys travel in headers).
pub fn endpoint(kind: ProviderKind, base_url: &str, model: &str) -> String {
    let base = base_url.trim_end_matches('/');
    match kind {
        ProviderKind::Openai => format!("{base}/chat/completions"),
        ProviderKind::Anthropic => format!("{base}/messages"),
        ProviderKind::Gemini => format!("{base}/models/{model}:generateContent"),
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

/// The JSON body of one request.
pub fn request_body(
    kind: ProviderKind,
    model: &str,
    messages: &[ChatMessage],
    params: &RunParams,
    seed: u64,
) -> Value {
    let system: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == "system")
        .map(|m| m.content.as_str())
        .collect();
    let turns = messages.iter().filter(|m| m.role != "system");
    match kind {
        ProviderKind::Openai => {
            let mut body = json!({
                "model": model,
                "messages": messages
                    .iter()
                    .map(|m| json!({"role": m.role, "content": m.content}))
                    .collect::<Vec<_>>(),
                "temperature": params.temperature,
                "top_p": params.top_p,
                "max_tokens": params.max_tokens,
            });
            if params.send_seed {
                body["seed"] = json!(wire_seed(seed));
            }
            body
        }
        ProviderKind::Anthropic => {
            let mut body = json!({
                "model": model,
                "max_tokens": params.max_tokens,
                "messages": turns
                    .map(|m| json!({"role": m.role, "content": m.content}))
                    .collect::<Vec<_>>(),
                "temperature": params.temperature,
            });
            // Anthropic rejects temperature and top_p together on newer models; top_p 1 is the
            // default anyway.
            if params.top_p < 1.0 {
                body["top_p"] = json!(params.top_p);
            }
            if !system.is_empty() {
                body["system"] = json!(system.join("\n\n"));
            }
            body
        }
        ProviderKind::Gemini => {
            let mut config = json!({
                "temperature": params.temperature,
                "topP": params.top_p,
                "maxOutputTokens": params.max_tokens,
            });
            if params.send_seed {
                config["seed"] = json!(wire_seed(seed));
            }
            let mut body = json!({
                "contents": turns
                    .map(|m| json!({
                        "role": if m.role == "assistant" { "model" } else { "user" },
                        "parts": [{"text": m.content}],
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

/// Reads a successful (2xx) reply body. Err says what was missing.
pub fn parse_completion(kind: ProviderKind, body: &str) -> Result<Completion, String> {
    let v: Value = serde_json::from_str(body).map_err(|e| format!("the reply is not JSON: {e}"))?;
    let int = |x: &Value| x.as_i64();
    match kind {
        ProviderKind::Openai => {
            let text = v["choices"][0]["message"]["content"]
                .as_str()
                .ok_or("the reply has no choices[0].message.content")?;
            Ok(Completion {
                text: text.to_owned(),
                input_tokens: int(&v["usage"]["prompt_tokens"]),
                output_tokens: int(&v["usage"]["completion_tokens"]),
            })
        }
        ProviderKind::Anthropic => {
            let blocks = v["content"]
                .as_array()
                .ok_or("the reply has no content blocks")?;
            let text: String = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect();
            Ok(Completion {
                text,
                input_tokens: int(&v["usage"]["input_tokens"]),
                output_tokens: int(&v["usage"]["output_tokens"]),
            })
        }
        ProviderKind::Gemini => {
            let parts = v["candidates"][0]["content"]["parts"]
                .as_array()
                .ok_or("the reply has no candidates[0].content.parts")?;
            let text: String = parts.iter().filter_map(|p| p["text"].as_str()).collect();
            Ok(Completion {
                text,
                input_tokens: int(&v["usageMetadata"]["promptTokenCount"]),
                output_tokens: int(&v["usageMetadata"]["candidatesTokenCount"]),
            })
        }
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
        let p = RunParams::default();
        let oa = request_body(ProviderKind::Openai, "m", &messages(), &p, 7);
        assert_eq!(oa["messages"][0]["role"], "system");
        assert_eq!(oa["seed"], 7);
        assert_eq!(oa["temperature"], 0.0);
        let an = request_body(ProviderKind::Anthropic, "m", &messages(), &p, 7);
        assert_eq!(an["system"], "You are a helpful assistant.");
        assert_eq!(an["messages"].as_array().unwrap().len(), 1);
        assert!(an.get("seed").is_none());
        let ge = request_body(ProviderKind::Gemini, "m", &messages(), &p, 7);
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
}
