//! Per-model parameter capabilities: which sampling parameters a model takes, which field
//! carries its token cap, where its seed and system message go. Built-in profiles are chosen
//! by model-id patterns; a provider's `[[providers.models]]` tables override them. A run
//! records what it asked for and what is actually sent (`RunManifest`), and says before it
//! starts when the model cannot honour the protocol's parameters.
//!
//! Each profile cites what the provider publishes; docs/models.md's "Model families" table lists them.

use crate::config::{ModelOverride, ProviderConfig, ProviderKind, TokenField};
use crate::domain::run::RunParams;

/// What one model takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Capabilities {
    /// The profile's name, recorded with the run.
    pub profile: &'static str,
    pub temperature: bool,
    pub top_p: bool,
    /// Temperature and top_p may not both be sent (Claude 4.5 and later).
    pub one_of_temperature_top_p: bool,
    pub max_temperature: f64,
    pub token_field: TokenField,
    pub min_output_tokens: u32,
    /// "" sends no seed.
    pub seed_field: String,
    pub system_message: bool,
    /// The temperature the provider's guide recommends keeping (recorded when a run differs).
    pub recommended_temperature: Option<f64>,
}

impl Capabilities {
    fn base(profile: &'static str, max_temperature: f64) -> Self {
        Self {
            profile,
            temperature: true,
            top_p: true,
            one_of_temperature_top_p: false,
            max_temperature,
            token_field: TokenField::MaxTokens,
            min_output_tokens: 0,
            seed_field: "seed".into(),
            system_message: true,
            recommended_temperature: None,
        }
    }
}

pub use crate::domain::run::{RunManifest, SentParams};

/// The alternatives asked per token when a run asks for log-probabilities.
pub const TOP_LOGPROBS: u32 = 20;

/// The id the APIs know: Gemini model names are often copied as `models/x` from its model
/// list, which would double the path segment (`…/models/models/x:generateContent`).
pub fn model_id(model: &str) -> &str {
    let m = model.trim();
    m.strip_prefix("models/").unwrap_or(m)
}

/// `*` matches any run of characters; case-insensitive.
pub fn matches(pattern: &str, model: &str) -> bool {
    fn go(p: &[u8], m: &[u8]) -> bool {
        match p.split_first() {
            None => m.is_empty(),
            Some((b'*', rest)) => (0..=m.len()).any(|i| go(rest, &m[i..])),
            Some((c, rest)) => m
                .split_first()
                .is_some_and(|(d, mr)| c.eq_ignore_ascii_case(d) && go(rest, mr)),
        }
    }
    go(pattern.as_bytes(), model.as_bytes())
}

/// `claude-opus-4-7-20260101` -> ("opus", 4, 7); `claude-sonnet-4-20250514` -> ("sonnet", 4, 0).
/// Older ids put the version first (`claude-3-5-sonnet`) and give None.
fn claude_version(model: &str) -> Option<(&str, u32, u32)> {
    let mut parts = model.strip_prefix("claude-")?.split('-');
    let family = parts.next()?;
    if family.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let major: u32 = parts.next()?.parse().ok()?;
    // A date suffix (8 digits) is not a minor version.
    let minor = parts
        .next()
        .filter(|p| p.len() <= 2)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    Some((family, major, minor))
}

/// The built-in profile of a model.
pub fn builtin(kind: ProviderKind, model: &str) -> Capabilities {
    let m = model_id(model).to_ascii_lowercase();
    let any = |patterns: &[&str]| patterns.iter().any(|p| matches(p, &m));
    match kind {
        ProviderKind::Openai => {
            // OpenAI's openapi.yaml marks `max_tokens` deprecated and "not compatible with
            // o-series models"; reasoning models answer 400 "Unsupported parameter:
            // 'max_tokens' is not supported with this model. Use 'max_completion_tokens'
            // instead." and refuse temperature/top_p other than their default. The reasoning
            // tokens count against max_completion_tokens, hence the larger cap. gpt-5-chat is
            // the non-reasoning variant and takes temperature.
            if any(&["o1*", "o3*", "o4*", "gpt-5*"]) && !m.contains("-chat") {
                return Capabilities {
                    temperature: false,
                    top_p: false,
                    token_field: TokenField::MaxCompletionTokens,
                    min_output_tokens: 8192,
                    ..Capabilities::base("openai-reasoning", 2.0)
                };
            }
            // Mistral's chat API names its seed `random_seed` (an unknown `seed` is a 422).
            if any(&[
                "mistral*",
                "open-mistral*",
                "open-mixtral*",
                "magistral*",
                "ministral*",
                "codestral*",
                "devstral*",
                "pixtral*",
            ]) {
                return Capabilities {
                    seed_field: "random_seed".into(),
                    ..Capabilities::base("mistral", 2.0)
                };
            }
            Capabilities::base("openai-compatible", 2.0)
        }
        ProviderKind::Anthropic => {
            // Messages API: temperature is 0–1. Claude 4.5 and later answer 400 "`temperature`
            // and `top_p` cannot both be specified for this model. Please use only one.";
            // Opus 4.7 and later answer 400 "`temperature` is deprecated for this model."
            // (public issue threads, e.g. BerriAI/litellm#15097, RooCodeInc/Roo-Code#12162).
            // That Opus 4.7 also refuses top_p is not confirmed by a quoted error; it is left
            // out as well, since it cannot be sent alone in place of a temperature either
            // without changing the protocol (a `[[providers.models]]` table can turn it on).
            let base = Capabilities {
                seed_field: String::new(),
                ..Capabilities::base("anthropic", 1.0)
            };
            match claude_version(&m) {
                Some(("opus", major, minor)) if (major, minor) >= (4, 7) => Capabilities {
                    profile: "claude-no-sampling",
                    temperature: false,
                    top_p: false,
                    ..base
                },
                Some((_, major, minor)) if (major, minor) >= (4, 5) => Capabilities {
                    profile: "claude-4.5",
                    one_of_temperature_top_p: true,
                    ..base
                },
                _ => base,
            }
        }
        ProviderKind::Gemini => {
            // Gemma through the Gemini API answers 400 "Developer instruction is not enabled
            // for models/gemma-3-27b-it" to a systemInstruction.
            if any(&["gemma*"]) {
                return Capabilities {
                    system_message: false,
                    ..Capabilities::base("gemma", 2.0)
                };
            }
            // Gemini 2.5 and 3 think by default and thought tokens count against
            // maxOutputTokens: at 512 the candidate comes back `finishReason: MAX_TOKENS`
            // with no parts. Gemini 3's guide recommends keeping its default temperature 1.0.
            if any(&["gemini-3*", "gemini-4*"]) {
                return Capabilities {
                    min_output_tokens: 8192,
                    recommended_temperature: Some(1.0),
                    ..Capabilities::base("gemini-thinking", 2.0)
                };
            }
            if any(&["gemini-2.5*"]) {
                return Capabilities {
                    min_output_tokens: 8192,
                    ..Capabilities::base("gemini-thinking", 2.0)
                };
            }
            Capabilities::base("gemini", 2.0)
        }
    }
}

fn apply(mut c: Capabilities, o: &ModelOverride) -> Capabilities {
    c.profile = "configured";
    if let Some(v) = o.temperature {
        c.temperature = v;
    }
    if let Some(v) = o.top_p {
        c.top_p = v;
    }
    if let Some(v) = o.max_temperature {
        c.max_temperature = v;
    }
    if let Some(v) = o.token_field {
        c.token_field = v;
    }
    if let Some(v) = o.min_output_tokens {
        c.min_output_tokens = v;
    }
    if let Some(v) = &o.seed_field {
        c.seed_field = v.trim().to_owned();
    }
    if let Some(v) = o.system_message {
        c.system_message = v;
    }
    c
}

/// The capabilities of `model` on this provider: the first matching `[[providers.models]]`
/// table over the built-in profile.
pub fn capabilities(provider: &ProviderConfig, model: &str) -> Capabilities {
    let base = builtin(provider.kind, model);
    let id = model_id(model);
    match provider.models.iter().find(|o| matches(&o.pattern, id)) {
        Some(o) => apply(base, o),
        None => base,
    }
}

/// What a run with these parameters sends to `model`. Err: the run cannot be made as asked
/// (a temperature outside the API's range).
pub fn plan(
    provider: &ProviderConfig,
    model: &str,
    params: &RunParams,
) -> Result<SentParams, String> {
    let c = capabilities(provider, model);
    let model = model_id(model);
    let mut notes = Vec::new();
    if c.temperature && params.temperature > c.max_temperature {
        return Err(format!(
            "provider {} ({}) takes a temperature from 0 to {}; {} was asked",
            provider.name,
            provider.kind.as_str(),
            c.max_temperature,
            params.temperature
        ));
    }
    let temperature = if c.temperature {
        Some(params.temperature)
    } else {
        notes.push(format!(
            "{model} does not take a temperature ({} profile): the asked temperature {} is \
             not sent and the model samples at its own default",
            c.profile, params.temperature
        ));
        None
    };
    let mut top_p = (c.top_p && params.top_p < 1.0).then_some(params.top_p);
    if params.top_p < 1.0 && !c.top_p {
        notes.push(format!(
            "{model} does not take top_p: the asked top_p {} is not sent",
            params.top_p
        ));
    }
    if c.one_of_temperature_top_p && temperature.is_some() && top_p.is_some() {
        notes.push(format!(
            "{model} takes temperature or top_p, not both: only the temperature is sent"
        ));
        top_p = None;
    }
    // OpenAI-compatible servers have always been sent top_p (1 by default); keep it so that a
    // run's request is what it was. Anthropic and Gemini get it only when it narrows sampling.
    if provider.kind == ProviderKind::Openai && c.top_p && !c.one_of_temperature_top_p {
        top_p = Some(params.top_p);
    }
    if provider.kind == ProviderKind::Gemini && c.top_p {
        top_p = Some(params.top_p);
    }
    if let (Some(rec), Some(t)) = (c.recommended_temperature, temperature) {
        if (rec - t).abs() > f64::EPSILON {
            notes.push(format!(
                "{model}'s guide recommends its default temperature {rec}; this run sends {t}"
            ));
        }
    }
    let max_tokens = params.max_tokens.max(c.min_output_tokens);
    if max_tokens != params.max_tokens {
        notes.push(format!(
            "{model} counts its thinking against the token cap: {} is raised to {max_tokens}",
            params.max_tokens
        ));
    }
    let seed_field = (params.send_seed && !c.seed_field.is_empty()).then(|| c.seed_field.clone());
    if !c.system_message {
        notes.push(format!(
            "{model} takes no system message: it is sent before the first user turn"
        ));
    }
    let top_logprobs = if !params.logprobs {
        None
    } else if provider.kind == ProviderKind::Openai {
        // 20 is the most the Chat Completions API takes (`top_logprobs`, "an integer between
        // 0 and 20", https://platform.openai.com/docs/api-reference/chat/create); llama.cpp's
        // server takes the same field.
        Some(TOP_LOGPROBS)
    } else {
        notes.push(format!(
            "{} replies carry no token log-probabilities: the answers are parsed from the text",
            provider.kind.as_str()
        ));
        None
    };
    Ok(SentParams {
        profile: c.profile.to_owned(),
        temperature,
        top_p,
        token_field: c.token_field,
        max_tokens,
        seed_field,
        system_message: c.system_message,
        top_logprobs,
        notes,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn provider(kind: ProviderKind) -> ProviderConfig {
        ProviderConfig::new("p", kind, "http://127.0.0.1:1")
    }

    #[test]
    fn patterns_match_with_stars_and_ignore_case() {
        assert!(matches("o3*", "o3-mini"));
        assert!(matches("*-thinking", "qwen3-thinking"));
        assert!(matches("GPT-5*", "gpt-5-nano"));
        assert!(!matches("o3*", "gpt-4o"));
        assert_eq!(model_id("models/gemini-2.5-flash"), "gemini-2.5-flash");
    }

    #[test]
    fn reasoning_models_get_max_completion_tokens_and_no_sampling() {
        let p = provider(ProviderKind::Openai);
        let s = plan(&p, "o3-mini", &RunParams::default()).unwrap();
        assert_eq!(s.token_field, TokenField::MaxCompletionTokens);
        assert_eq!((s.temperature, s.top_p), (None, None));
        assert_eq!(s.max_tokens, 8192);
        assert!(
            s.notes
                .iter()
                .any(|n| n.contains("does not take a temperature"))
        );
        let s = plan(&p, "gpt-4o", &RunParams::default()).unwrap();
        assert_eq!(s.token_field, TokenField::MaxTokens);
        assert_eq!((s.temperature, s.top_p), (Some(0.0), Some(1.0)));
        assert!(s.notes.is_empty());
        assert_eq!(
            builtin(ProviderKind::Openai, "gpt-5-chat-latest").profile,
            "openai-compatible"
        );
    }

    #[test]
    fn claude_versions_choose_their_rules() {
        let p = provider(ProviderKind::Anthropic);
        let narrow = RunParams {
            top_p: 0.9,
            ..RunParams::default()
        };
        let s = plan(&p, "claude-opus-4-7", &narrow).unwrap();
        assert_eq!((s.temperature, s.top_p), (None, None));
        assert_eq!(s.notes.len(), 2, "{:?}", s.notes);
        let s = plan(&p, "claude-sonnet-4-5-20250929", &narrow).unwrap();
        assert_eq!((s.temperature, s.top_p), (Some(0.0), None));
        let s = plan(&p, "claude-3-5-sonnet-20241022", &narrow).unwrap();
        assert_eq!((s.temperature, s.top_p), (Some(0.0), Some(0.9)));
        assert_eq!(
            claude_version("claude-sonnet-4-20250514"),
            Some(("sonnet", 4, 0))
        );
        let hot = RunParams {
            temperature: 1.5,
            ..RunParams::default()
        };
        let e = plan(&p, "claude-sonnet-4-5", &hot).unwrap_err();
        assert!(e.contains("from 0 to 1"), "{e}");
    }

    #[test]
    fn overrides_replace_the_builtin_profile() {
        let mut p = provider(ProviderKind::Openai);
        p.models.push(ModelOverride {
            pattern: "my-reasoner*".into(),
            temperature: Some(false),
            top_p: None,
            max_temperature: None,
            token_field: Some(TokenField::MaxCompletionTokens),
            min_output_tokens: Some(2048),
            seed_field: Some(String::new()),
            system_message: None,
        });
        let s = plan(&p, "my-reasoner-v2", &RunParams::default()).unwrap();
        assert_eq!(s.profile, "configured");
        assert_eq!(s.temperature, None);
        assert_eq!(s.token_field, TokenField::MaxCompletionTokens);
        assert_eq!(s.max_tokens, 2048);
        assert_eq!(s.seed_field, None);
    }
}
