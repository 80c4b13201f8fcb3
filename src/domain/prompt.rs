//! The chat messages sent to an LLM for one trial: a system message and a user message that
//! carries the instrument's instructions, the situation to imagine (evoked measure only) and the
//! numbered items in display order. Also the seeded item orders and per-trial seeds.
//!
//! # What upstream sends (template `eb-code`)
//!
//! Read from CUHK-ARISE/EmotionBench (`utils.py` at 559f0572, `example_generator.py` at ec0976e4;
//! the files did not change in the parts used here) and checked against the upstream artifact
//! `doc.csv` / `results/PANAS Test/*-testing.csv`:
//!
//! - `utils.py`, `generate_testfile`: the column `question-k` holds
//!   `f'Prompt: {questionnaire["prompt"]}'` followed by one cell per item,
//!   `f'{index}. {text}'` with `index` from `enumerate(question_indices, 1)`: numbering restarts
//!   at 1 in display order. Order 0 is the canonical order; orders 1.. are `random.shuffle`
//!   (unseeded) of the question keys, one permutation per order index shared by every trial.
//!   The situation cell of a default trial is a single space `' '`; that of an evoked trial is
//!   `f'Imagine you are the protagonist in the scenario: "{scenario}"'` (straight double quotes,
//!   no escaping, nothing after the closing quote).
//! - `example_generator.py`, `example_generator`: the user message is
//!   `'\n'.join(question column).replace('SCENARIO', situation cell)`: the prompt line and the
//!   item lines are joined by single `\n`, with no trailing newline, and every `SCENARIO` in that
//!   text is replaced in one pass. Since the prompt reads `"... 1 to 5. SCENARIO Please ..."`,
//!   the default measure yields three spaces there. The system message is the questionnaire's
//!   `inner_setting`. (Upstream's davinci-003 path sends the user text alone, without a system
//!   message; every chat model gets both, as here.)
//!
//! Upstream passes each situation through pandas CSV round trips without trimming; our situation
//! importer trims texts, which only matters for the few upstream situations with trailing spaces.
//!
//! # The paper's templates (`paper`, `stability`)
//!
//! Wording from the NeurIPS 2024 paper (arXiv 2308.03656): `paper` is the "Example Prompt" box of
//! §3.2, `stability` the "Prompt with Stability Requirement" box of appendix E. The printed boxes
//! leave some details open; our choices, marked "ours" below:
//! - the items (`STATEMENTS` in the paper) are the numbered lines `k. text`, one per line, on the
//!   lines after "Here are the statements:"; the anchor sentence starts on the next line (ours);
//! - the printed boxes are for a 1–5 scale; for a 1–5 instrument the printed anchors are used,
//!   for any other range the instrument's own labels, and `1`/`5` become the instrument's
//!   min/max (ours);
//! - the default measure omits the "Imagine ..." line, as the paper's "(For Evoked Emotion Measure
//!   Only)" says; appendix E prints only the evoked form, and its default form is the same text
//!   without that line (ours).

use std::collections::HashSet;

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

use super::ImportError;
use super::instrument::Instrument;

pub use super::measure::Measure;

/// How the messages are worded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Template {
    /// Exactly what the upstream EmotionBench code sends (see the module documentation).
    EbCode,
    /// The example prompt printed in the paper (§3.2).
    Paper,
    /// The paper's prompt with the stability requirement (appendix E).
    Stability,
    /// A researcher's own wording.
    Custom(CustomTemplate),
}

const EB_CODE_NAME: &str = "eb-code";
const PAPER_NAME: &str = "paper";
const STABILITY_NAME: &str = "stability";

impl Template {
    /// The names of the built-in templates, as accepted by [`Template::builtin`].
    pub const BUILTIN_NAMES: [&'static str; 3] = [EB_CODE_NAME, PAPER_NAME, STABILITY_NAME];

    /// `"eb-code"`, `"paper"`, `"stability"`, or the custom template's name.
    pub fn name(&self) -> String {
        match self {
            Template::EbCode => EB_CODE_NAME.to_owned(),
            Template::Paper => PAPER_NAME.to_owned(),
            Template::Stability => STABILITY_NAME.to_owned(),
            Template::Custom(custom) => custom.name.clone(),
        }
    }

    /// The built-in template of that name (ASCII case and surrounding whitespace ignored).
    pub fn builtin(name: &str) -> Option<Template> {
        let name = name.trim();
        if name.eq_ignore_ascii_case(EB_CODE_NAME) {
            Some(Template::EbCode)
        } else if name.eq_ignore_ascii_case(PAPER_NAME) {
            Some(Template::Paper)
        } else if name.eq_ignore_ascii_case(STABILITY_NAME) {
            Some(Template::Stability)
        } else {
            None
        }
    }
}

/// A researcher-defined wording; see [`parse_custom_template`] for the placeholders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomTemplate {
    pub name: String,
    pub system: String,
    pub user: String,
}

/// One chat message; `role` is `"system"` or `"user"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: &str, content: String) -> Self {
        Self {
            role: role.to_owned(),
            content,
        }
    }
}

/// Why the messages of a trial cannot be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    #[error("the evoked measure needs a situation")]
    MissingSituation,
    #[error("display order is not a permutation of the items")]
    BadOrder,
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

/// Upstream's placeholder in the instrument prompt.
const SCENARIO: &str = "SCENARIO";
/// Upstream prefix of the user message.
const EB_CODE_PREFIX: &str = "Prompt: ";
/// Upstream's situation cell for the default measure.
const EB_CODE_DEFAULT_FILL: &str = " ";

/// Upstream's situation cell for the evoked measure.
fn eb_code_imagine(text: &str) -> String {
    format!("Imagine you are the protagonist in the scenario: \"{text}\"")
}

/// The anchors printed in the paper's prompt boxes (a 1–5 scale).
const PAPER_ANCHORS: [(i32, &str); 5] = [
    (1, "Not at all"),
    (2, "A little"),
    (3, "A fair amount"),
    (4, "Much"),
    (5, "Very much"),
];

/// Renders the messages for one trial. `display_order`: item numbers (1-based, canonical) in the
/// order shown; numbering in the prompt is by display position 1..=n.
/// `situation_text` must be Some for Evoked and is ignored for Default; a blank text counts as
/// missing.
///
/// A [`CustomTemplate`] is expected to have passed [`parse_custom_template`]; should it contain
/// anything that is not a known placeholder, that part is sent literally.
pub fn render(
    instrument: &Instrument,
    template: &Template,
    measure: Measure,
    situation_text: Option<&str>,
    display_order: &[u32],
) -> Result<Vec<ChatMessage>, PromptError> {
    let situation = match measure {
        Measure::Default => None,
        Measure::Evoked => match situation_text {
            Some(text) if !text.trim().is_empty() => Some(text),
            _ => return Err(PromptError::MissingSituation),
        },
    };
    let items = item_lines(instrument, display_order)?;
    let (system, user) = match template {
        Template::EbCode => (
            instrument.system_prompt.clone(),
            eb_code_user(instrument, situation, &items),
        ),
        Template::Paper => (
            paper_system(instrument),
            paper_user(instrument, situation, &items, false),
        ),
        Template::Stability => (
            paper_system(instrument),
            paper_user(instrument, situation, &items, true),
        ),
        Template::Custom(custom) => custom_messages(custom, instrument, situation, &items),
    };
    Ok(vec![
        ChatMessage::new("system", system),
        ChatMessage::new("user", user),
    ])
}

/// `"1. text\n2. text..."` in display order, or `BadOrder` unless the order is a permutation of
/// the instrument's item numbers.
fn item_lines(instrument: &Instrument, display_order: &[u32]) -> Result<String, PromptError> {
    check_order(instrument, display_order)?;
    let mut lines = Vec::with_capacity(display_order.len());
    for (position, &number) in (1u64..).zip(display_order) {
        let item = instrument.item(number).ok_or(PromptError::BadOrder)?;
        lines.push(format!("{position}. {}", item.text));
    }
    Ok(lines.join("\n"))
}

/// `BadOrder` unless the order is a permutation of the instrument's item numbers.
pub(crate) fn check_order(
    instrument: &Instrument,
    display_order: &[u32],
) -> Result<(), PromptError> {
    if display_order.len() != instrument.items.len() {
        return Err(PromptError::BadOrder);
    }
    let mut seen = HashSet::with_capacity(display_order.len());
    for &number in display_order {
        if !seen.insert(number) || instrument.item(number).is_none() {
            return Err(PromptError::BadOrder);
        }
    }
    Ok(())
}

/// The situation filled into upstream's `SCENARIO` placeholder.
fn eb_code_fill(situation: Option<&str>) -> String {
    match situation {
        Some(text) => eb_code_imagine(text),
        None => EB_CODE_DEFAULT_FILL.to_owned(),
    }
}

fn eb_code_user(instrument: &Instrument, situation: Option<&str>, items: &str) -> String {
    // Upstream joins first and replaces afterwards, over the whole text, in one pass.
    let joined = format!("{EB_CODE_PREFIX}{}\n{items}", instrument.prompt);
    joined.replace(SCENARIO, &eb_code_fill(situation))
}

fn paper_system(instrument: &Instrument) -> String {
    format!(
        "You can only reply to numbers from {} to {}.",
        instrument.min, instrument.max
    )
}

/// `1 denotes “Not at all”, 2 denotes ...`, or `None` where the instrument has no labels.
fn anchor_sentence(instrument: &Instrument) -> Option<String> {
    let parts: Vec<String> = if instrument.min == 1 && instrument.max == 5 {
        PAPER_ANCHORS
            .iter()
            .map(|(value, label)| format!("{value} denotes \u{201c}{label}\u{201d}"))
            .collect()
    } else {
        instrument
            .labels
            .iter()
            .map(|l| format!("{} denotes \u{201c}{}\u{201d}", l.value, l.label))
            .collect()
    };
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn paper_user(
    instrument: &Instrument,
    situation: Option<&str>,
    items: &str,
    stability: bool,
) -> String {
    let (min, max) = (instrument.min, instrument.max);
    let mut text = String::new();
    if let Some(situation) = situation {
        text.push_str("Imagine you are the protagonist in the situation: ");
        text.push_str(situation);
        text.push('\n');
    }
    if stability {
        text.push_str(&format!(
            "Please keep your emotions stable and indicate the extent of your feeling in all the \
             following statements on a scale of {min} to {max}. Here are the statements:\n"
        ));
    } else {
        text.push_str(
            "Please indicate your degree of agreement regarding each statement.\n\
             Here are the statements:\n",
        );
    }
    text.push_str(items);
    text.push('\n');
    if let Some(anchors) = anchor_sentence(instrument) {
        text.push_str(&anchors);
        text.push_str(". ");
    }
    text.push_str(&format!(
        "Please score each statement one by one on a scale of {min} to {max}:"
    ));
    text
}

// ---------------------------------------------------------------------------------------------
// Custom templates
// ---------------------------------------------------------------------------------------------

const USER_PLACEHOLDERS: [&str; 5] = ["instrument_prompt", "scenario", "items", "min", "max"];
const SYSTEM_PLACEHOLDERS: [&str; 3] = ["system_prompt", "min", "max"];

/// The placeholder values for one trial:
/// - `{instrument_prompt}`: the instrument prompt with `SCENARIO` filled exactly as upstream does
///   (so `"Prompt: {instrument_prompt}\n{items}"` reproduces `eb-code`);
/// - `{scenario}`: `Imagine you are the protagonist in the scenario: "<text>"` for the evoked
///   measure, empty for the default measure;
/// - `{items}`: the numbered item lines; `{min}`, `{max}`: the answer range;
/// - `{system_prompt}`: the instrument's system prompt.
fn custom_messages(
    custom: &CustomTemplate,
    instrument: &Instrument,
    situation: Option<&str>,
    items: &str,
) -> (String, String) {
    let min = instrument.min.to_string();
    let max = instrument.max.to_string();
    let system = substitute(&custom.system, |name| match name {
        "system_prompt" => Some(instrument.system_prompt.clone()),
        "min" => Some(min.clone()),
        "max" => Some(max.clone()),
        _ => None,
    });
    let user = substitute(&custom.user, |name| match name {
        "instrument_prompt" => Some(
            instrument
                .prompt
                .replace(SCENARIO, &eb_code_fill(situation)),
        ),
        "scenario" => Some(situation.map(eb_code_imagine).unwrap_or_default()),
        "items" => Some(items.to_owned()),
        "min" => Some(min.clone()),
        "max" => Some(max.clone()),
        _ => None,
    });
    (system, user)
}

/// A piece of a template: literal text or a `{name}` placeholder.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Placeholder(&'a str),
}

/// Splits a template into pieces. `{{` and `}}` are literal braces; `{name}` is a placeholder.
/// `Err` describes a stray brace or an unclosed placeholder.
fn pieces(template: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        let Some(at) = rest.find(['{', '}']) else {
            out.push(Piece::Text(rest));
            break;
        };
        if at > 0 {
            out.push(Piece::Text(&rest[..at]));
        }
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push(Piece::Text("{"));
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push(Piece::Text("}"));
            rest = after;
        } else if let Some(after) = tail.strip_prefix('{') {
            match after.find(['{', '}']) {
                Some(end) if after[end..].starts_with('}') => {
                    out.push(Piece::Placeholder(&after[..end]));
                    rest = &after[end + 1..];
                }
                _ => {
                    let shown: String = tail.chars().take(30).collect();
                    return Err(format!(
                        "unclosed placeholder at {shown:?} (write {{{{ for a literal brace)"
                    ));
                }
            }
        } else {
            let shown: String = tail.chars().take(30).collect();
            return Err(format!(
                "stray }} at {shown:?} (write }}}} for a literal brace)"
            ));
        }
    }
    Ok(out)
}

/// Checks the placeholders of one template field; returns the names used.
fn check_field<'a>(template: &'a str, allowed: &[&str]) -> Result<Vec<&'a str>, String> {
    let mut used = Vec::new();
    for piece in pieces(template)? {
        if let Piece::Placeholder(name) = piece {
            if !allowed.contains(&name) {
                let list: Vec<String> = allowed.iter().map(|a| format!("{{{a}}}")).collect();
                return Err(format!(
                    "unknown placeholder {{{name}}}: allowed here are {}",
                    list.join(" ")
                ));
            }
            used.push(name);
        }
    }
    Ok(used)
}

/// Fills the placeholders in one pass (values are never scanned again). Anything that does not
/// parse, or names no known placeholder, is kept literally.
fn substitute(template: &str, value: impl Fn(&str) -> Option<String>) -> String {
    let Ok(pieces) = pieces(template) else {
        return template.to_owned();
    };
    let mut out = String::with_capacity(template.len());
    for piece in pieces {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Placeholder(name) => match value(name) {
                Some(v) => out.push_str(&v),
                None => {
                    out.push('{');
                    out.push_str(name);
                    out.push('}');
                }
            },
        }
    }
    out
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCustomTemplate {
    name: String,
    system: String,
    user: String,
}

/// Parses a custom template file: a JSON object `{"name", "system", "user"}` (no other fields).
///
/// `user` may contain the placeholders `{instrument_prompt}` `{scenario}` `{items}` `{min}`
/// `{max}`, and must contain `{items}` and at least one of `{scenario}` / `{instrument_prompt}`
/// (otherwise the situation would never reach the model). `system` may contain
/// `{system_prompt}` `{min}` `{max}`. `{{` and `}}` are literal braces. Unknown placeholders,
/// stray braces, blank fields and the names of the built-in templates are errors.
pub fn parse_custom_template(text: &str) -> Result<CustomTemplate, ImportError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let raw: RawCustomTemplate =
        serde_json::from_str(text).map_err(|e| ImportError::json(&e, "custom template"))?;

    let name = raw.name.trim();
    if name.is_empty() {
        return Err(ImportError::new("field \"name\"", "the name is empty"));
    }
    if Template::builtin(name).is_some() {
        return Err(ImportError::new(
            "field \"name\"",
            format!("{name:?} is the name of a built-in template; choose another"),
        ));
    }
    if raw.system.trim().is_empty() {
        return Err(ImportError::new(
            "field \"system\"",
            "the system message is empty",
        ));
    }
    check_field(&raw.system, &SYSTEM_PLACEHOLDERS)
        .map_err(|reason| ImportError::new("field \"system\"", reason))?;
    let used = check_field(&raw.user, &USER_PLACEHOLDERS)
        .map_err(|reason| ImportError::new("field \"user\"", reason))?;
    if !used.contains(&"items") {
        return Err(ImportError::new(
            "field \"user\"",
            "the user message must contain {items}, or the model sees no questions",
        ));
    }
    if !used.contains(&"scenario") && !used.contains(&"instrument_prompt") {
        return Err(ImportError::new(
            "field \"user\"",
            "the user message must contain {scenario} or {instrument_prompt}, or the evoked \
             measure never shows the situation",
        ));
    }
    Ok(CustomTemplate {
        name: name.to_owned(),
        system: raw.system,
        user: raw.user,
    })
}

// ---------------------------------------------------------------------------------------------
// Orders and seeds
// ---------------------------------------------------------------------------------------------

const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// One step of splitmix64 (Steele, Lea & Flood 2014): advances `state`, returns the output.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(GOLDEN_GAMMA);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The identity order 1..=n.
pub fn canonical_order(n: usize) -> Vec<u32> {
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    (1..=n).collect()
}

/// A seeded permutation of 1..=n (ChaCha8 from `seed`), deterministic across platforms and runs.
///
/// Everything is spelled out here rather than left to library defaults that may change between
/// versions: the 32-byte ChaCha8 key is four splitmix64 outputs of `seed` (little-endian), the
/// shuffle is Fisher–Yates from the last position down, and each index is drawn without bias
/// from `next_u64` by Lemire's multiply-and-reject method.
pub fn shuffled_order(n: usize, seed: u64) -> Vec<u32> {
    let mut order = canonical_order(n);
    let mut key = [0u8; 32];
    let mut state = seed;
    for chunk in key.chunks_exact_mut(8) {
        chunk.copy_from_slice(&splitmix64(&mut state).to_le_bytes());
    }
    let mut rng = ChaCha8Rng::from_seed(key);
    for i in (1..order.len()).rev() {
        let bound = u64::try_from(i).unwrap_or(u64::MAX).saturating_add(1);
        let j = usize::try_from(below(&mut rng, bound)).unwrap_or(0);
        order.swap(i, j);
    }
    order
}

/// Uniform in `0..bound` (`bound >= 1`), Lemire's nearly divisionless method.
fn below(rng: &mut impl RngCore, bound: u64) -> u64 {
    let threshold = bound.wrapping_neg() % bound;
    loop {
        let product = u128::from(rng.next_u64()) * u128::from(bound);
        // Truncation intended: the low 64 bits decide rejection, the high 64 bits are the draw.
        let low = product as u64;
        if low >= threshold {
            return (product >> 64) as u64;
        }
    }
}

/// Absorbs one word into a running hash (splitmix64's bijective finalizer after a xor).
fn absorb(hash: u64, word: u64) -> u64 {
    let mut state = hash ^ word;
    splitmix64(&mut state)
}

/// Derives a seed for one named part of a seeded procedure (e.g. one stratum of a split):
/// splitmix64 absorption of a domain tag, the seed, the key's length and bytes (8 at a time,
/// little-endian, zero-padded). Stable across platforms and releases; do not change it.
pub fn keyed_seed(tag: [u8; 8], seed: u64, key: &str) -> u64 {
    let mut hash = absorb(u64::from_le_bytes(tag), seed);
    let bytes = key.as_bytes();
    hash = absorb(hash, u64::try_from(bytes.len()).unwrap_or(u64::MAX));
    for chunk in bytes.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        hash = absorb(hash, u64::from_le_bytes(word));
    }
    hash
}

/// Derives a per-trial seed from a run seed and the trial identity: splitmix64 absorption of the
/// run seed, the measure, the key's length and bytes (8 at a time, little-endian, zero-padded)
/// and the repeat. Stable across platforms, releases and runs; do not change it, since recorded
/// runs are reproduced from it.
pub fn trial_seed(run_seed: u64, measure: Measure, situation_key: &str, repeat: u32) -> u64 {
    // "EBTRIAL1" as a domain tag, so that these seeds differ from seeds used elsewhere.
    let mut hash = absorb(u64::from_le_bytes(*b"EBTRIAL1"), run_seed);
    hash = absorb(
        hash,
        match measure {
            Measure::Default => 1,
            Measure::Evoked => 2,
        },
    );
    let bytes = situation_key.as_bytes();
    hash = absorb(hash, u64::try_from(bytes.len()).unwrap_or(u64::MAX));
    for chunk in bytes.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        hash = absorb(hash, u64::from_le_bytes(word));
    }
    absorb(hash, u64::from(repeat))
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::HashSet;

    use super::super::instrument::{ScaleLabel, parse_questionnaires_json};
    use super::super::situation::parse_situations;
    use super::*;

    use super::super::testdata::upstream;

    use super::super::instrument::PANAS_ITEMS as PANAS_WORDS;

    /// The item block of the canonical PANAS, written out by hand.
    const PANAS_CANONICAL_LINES: &str = "1. Interested\n2. Distressed\n3. Excited\n4. Upset\n\
        5. Strong\n6. Guilty\n7. Scared\n8. Hostile\n9. Enthusiastic\n10. Proud\n11. Irritable\n\
        12. Alert\n13. Ashamed\n14. Inspired\n15. Nervous\n16. Determined\n17. Attentive\n\
        18. Jittery\n19. Active\n20. Afraid";

    /// The raw upstream PANAS record (read with serde_json, independent of our importer) and the
    /// imported instrument.
    fn upstream_panas() -> Option<(serde_json::Value, Instrument)> {
        let text = upstream("questionnaires.json")?;
        let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
        let record = raw
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "PANAS")
            .unwrap()
            .clone();
        let instrument = parse_questionnaires_json(&text)
            .unwrap()
            .into_iter()
            .find(|i| i.key == "PANAS")
            .unwrap();
        Some((record, instrument))
    }

    fn messages(
        instrument: &Instrument,
        template: &Template,
        measure: Measure,
        situation: Option<&str>,
        order: &[u32],
    ) -> (String, String) {
        let m = render(instrument, template, measure, situation, order).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].role, "system");
        assert_eq!(m[1].role, "user");
        (m[0].content.clone(), m[1].content.clone())
    }

    // --- eb-code -----------------------------------------------------------------------------

    #[test]
    fn eb_code_default_builtin_panas_is_prefix_prompt_space_and_items() {
        let panas = Instrument::panas();
        let (system, user) = messages(
            &panas,
            &Template::EbCode,
            Measure::Default,
            None,
            &canonical_order(20),
        );
        assert_eq!(system, panas.system_prompt);
        let (before, after) = panas.prompt.split_once("SCENARIO").unwrap();
        let expected = format!("Prompt: {before} {after}\n{PANAS_CANONICAL_LINES}");
        assert_eq!(user, expected);
        assert!(!user.contains("SCENARIO"));
        assert!(!user.ends_with('\n'));
    }

    #[test]
    fn eb_code_default_upstream_panas_exact() {
        let Some((record, panas)) = upstream_panas() else {
            return;
        };
        let (system, user) = messages(
            &panas,
            &Template::EbCode,
            Measure::Default,
            None,
            &canonical_order(20),
        );
        assert_eq!(system, record["inner_setting"].as_str().unwrap());
        let prompt = record["prompt"].as_str().unwrap();
        let (before, after) = prompt.split_once("SCENARIO").unwrap();
        // Upstream: "…5. " + " " + " Please…": three spaces where the situation would go.
        assert!(before.ends_with(". ") && after.starts_with(' '));
        let expected = format!("Prompt: {before} {after}\n{PANAS_CANONICAL_LINES}");
        assert_eq!(user, expected);
        assert_eq!(user.matches("   ").count(), 1);
    }

    #[test]
    fn eb_code_evoked_first_anger_situation_byte_for_byte() {
        let Some((record, panas)) = upstream_panas() else {
            return;
        };
        let Some(situations) = upstream("situations.json") else {
            return;
        };
        // The text from the raw JSON (emotions[0] = Anger, factor 0, scenario 0) ...
        let raw: serde_json::Value = serde_json::from_str(&situations).unwrap();
        assert_eq!(raw["emotions"][0]["name"], "Anger");
        let raw_text = raw["emotions"][0]["factors"][0]["scenarios"][0]
            .as_str()
            .unwrap();
        // ... is the text our importer gives for the key.
        let file = parse_situations(&situations).unwrap();
        let situation = file
            .situations
            .iter()
            .find(|s| s.key == "Anger-0_scenario-0")
            .unwrap();
        assert_eq!(situation.text, raw_text);

        let (system, user) = messages(
            &panas,
            &Template::EbCode,
            Measure::Evoked,
            Some(&situation.text),
            &canonical_order(20),
        );
        assert_eq!(system, record["inner_setting"].as_str().unwrap());
        let (before, after) = record["prompt"]
            .as_str()
            .unwrap()
            .split_once("SCENARIO")
            .unwrap();
        let mut expected = String::from("Prompt: ");
        expected.push_str(before);
        expected.push_str("Imagine you are the protagonist in the scenario: \"");
        expected.push_str(raw_text);
        expected.push('"');
        expected.push_str(after);
        expected.push('\n');
        expected.push_str(PANAS_CANONICAL_LINES);
        assert_eq!(user, expected);
    }

    /// Reassembles what upstream's `example_generator` sends from the upstream artifact doc.csv
    /// (`'\n'.join(question-0).replace('SCENARIO', cell)`) and compares it with ours for the
    /// default column and every evoked situation in the file.
    #[test]
    fn eb_code_matches_upstream_doc_csv_for_all_175_situations() {
        let Some((_, panas)) = upstream_panas() else {
            return;
        };
        let Some(doc) = upstream("doc.csv") else {
            return;
        };
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(doc.as_bytes());
        let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
        let header = &rows[0];
        let column = |i: usize| -> Vec<&str> { rows[1..].iter().map(|r| &r[i]).collect() };
        let question = column(0);
        assert_eq!(question.len(), 21);
        let joined = question.join("\n");

        let prefix = "Imagine you are the protagonist in the scenario: \"";
        let mut evoked = 0;
        for (i, name) in header.iter().enumerate() {
            let cell = rows[1][i].to_owned();
            let (measure, situation) = if name == "General_test-0_order-0" {
                assert_eq!(cell, " ");
                (Measure::Default, None)
            } else if name.ends_with("_test-0_order-0") {
                let text = cell
                    .strip_prefix(prefix)
                    .and_then(|t| t.strip_suffix('"'))
                    .unwrap()
                    .to_owned();
                evoked += 1;
                (Measure::Evoked, Some(text))
            } else {
                continue;
            };
            let (_, user) = messages(
                &panas,
                &Template::EbCode,
                measure,
                situation.as_deref(),
                &canonical_order(20),
            );
            assert_eq!(user, joined.replace("SCENARIO", &cell), "column {name}");
        }
        assert_eq!(evoked, 175);
    }

    #[test]
    fn eb_code_upstream_doc_csv_cell_equals_our_insertion_for_anger_0_0() {
        let Some(situations) = upstream("situations.json") else {
            return;
        };
        let Some(doc) = upstream("doc.csv") else {
            return;
        };
        let file = parse_situations(&situations).unwrap();
        let text = &file
            .situations
            .iter()
            .find(|s| s.key == "Anger-0_scenario-0")
            .unwrap()
            .text;
        let mut reader = csv::Reader::from_reader(doc.as_bytes());
        let headers = reader.headers().unwrap().clone();
        let index = headers
            .iter()
            .position(|h| h == "Anger-0_scenario-0_test-0_order-0")
            .unwrap();
        let first = reader.records().next().unwrap().unwrap();
        assert_eq!(eb_code_fill(Some(text)), &first[index]);
    }

    #[test]
    fn eb_code_bdi_items_keep_their_options_verbatim() {
        let Some(text) = upstream("questionnaires.json") else {
            return;
        };
        let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
        let record = raw
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "BDI")
            .unwrap();
        let bdi = parse_questionnaires_json(&text)
            .unwrap()
            .into_iter()
            .find(|i| i.key == "BDI")
            .unwrap();
        let n = bdi.item_count();
        let order: Vec<u32> = canonical_order(n).into_iter().rev().collect();
        let (_, user) = messages(&bdi, &Template::EbCode, Measure::Default, None, &order);
        let questions = record["questions"].as_object().unwrap();
        let lines: Vec<String> = order
            .iter()
            .enumerate()
            .map(|(p, k)| format!("{}. {}", p + 1, questions[&k.to_string()].as_str().unwrap()))
            .collect();
        assert!(user.ends_with(&format!("\n{}", lines.join("\n"))));
    }

    #[test]
    fn shuffled_order_is_shown_in_that_order_numbered_by_position() {
        let panas = Instrument::panas();
        let order = shuffled_order(20, trial_seed(7, Measure::Default, "", 3));
        assert_ne!(order, canonical_order(20));
        let (_, user) = messages(&panas, &Template::EbCode, Measure::Default, None, &order);
        let lines: Vec<&str> = user.lines().skip(1).collect();
        assert_eq!(lines.len(), 20);
        for (position, (line, number)) in lines.iter().zip(&order).enumerate() {
            let word = PANAS_WORDS[*number as usize - 1];
            assert_eq!(*line, format!("{}. {word}", position + 1));
        }
    }

    // --- orders and seeds -------------------------------------------------------------------

    #[test]
    fn canonical_order_is_identity() {
        assert_eq!(canonical_order(0), Vec::<u32>::new());
        assert_eq!(canonical_order(3), vec![1, 2, 3]);
    }

    #[test]
    fn same_seed_same_order_and_repeats_differ() {
        let seed = trial_seed(42, Measure::Evoked, "Anger-0_scenario-0", 0);
        assert_eq!(
            seed,
            trial_seed(42, Measure::Evoked, "Anger-0_scenario-0", 0)
        );
        assert_eq!(shuffled_order(20, seed), shuffled_order(20, seed));

        let orders: HashSet<Vec<u32>> = (0..10)
            .map(|r| shuffled_order(20, trial_seed(42, Measure::Evoked, "Anger-0_scenario-0", r)))
            .collect();
        assert_eq!(orders.len(), 10, "every repeat gets its own order");

        let seeds: HashSet<u64> = [
            trial_seed(42, Measure::Evoked, "Anger-0_scenario-0", 0),
            trial_seed(42, Measure::Default, "Anger-0_scenario-0", 0),
            trial_seed(42, Measure::Evoked, "Anger-0_scenario-1", 0),
            trial_seed(43, Measure::Evoked, "Anger-0_scenario-0", 0),
            trial_seed(42, Measure::Evoked, "Anger-0_scenario-0", 1),
            // Same bytes up to zero padding must still differ (the length is absorbed).
            trial_seed(42, Measure::Evoked, "Anger-0_scenario-0\0", 0),
        ]
        .into_iter()
        .collect();
        assert_eq!(seeds.len(), 6);
    }

    #[test]
    fn shuffled_order_is_a_permutation_for_many_seeds() {
        for n in [0usize, 1, 2, 3, 20, 52] {
            for seed in 0..300u64 {
                let seed = seed.wrapping_mul(0x0123_4567_89AB_CDEF);
                let mut order = shuffled_order(n, seed);
                assert_eq!(order.len(), n);
                order.sort_unstable();
                assert_eq!(order, canonical_order(n), "n={n} seed={seed}");
            }
        }
    }

    /// Catches biased shuffles (e.g. Sattolo's, which never leaves an item in place, or an
    /// off-by-one in the index range): every item lands in every position about equally often.
    #[test]
    fn shuffled_order_is_roughly_uniform() {
        let n = 5;
        let trials = 20_000u64;
        let mut counts = [[0u32; 5]; 5];
        for seed in 0..trials {
            for (position, item) in shuffled_order(n, seed).iter().enumerate() {
                counts[position][*item as usize - 1] += 1;
            }
        }
        let expected = trials as f64 / n as f64;
        for row in counts {
            for count in row {
                let deviation = (f64::from(count) - expected).abs() / expected;
                assert!(deviation < 0.06, "counts {counts:?}");
            }
        }
    }

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // First outputs of the reference splitmix64 seeded with 0 (Vigna's splitmix64.c).
        let mut state = 0u64;
        assert_eq!(splitmix64(&mut state), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64(&mut state), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(splitmix64(&mut state), 0x06C4_5D18_8009_454F);
    }

    /// Regression pins: recorded runs are reproduced from these functions, so their values must
    /// never change (computed once with this implementation).
    #[test]
    fn seeds_and_orders_are_pinned() {
        assert_eq!(
            trial_seed(0, Measure::Default, "", 0),
            PINNED_TRIAL_SEED_DEFAULT
        );
        assert_eq!(
            trial_seed(42, Measure::Evoked, "Anger-0_scenario-0", 3),
            PINNED_TRIAL_SEED_EVOKED
        );
        assert_eq!(shuffled_order(20, 0), PINNED_ORDER_SEED_0.to_vec());
        assert_eq!(shuffled_order(20, 42), PINNED_ORDER_SEED_42.to_vec());
    }

    // Cross-checked against an independent Python implementation (RFC 7539 ChaCha block
    // function with 8 rounds, 64-bit block counter, zero stream; the same splitmix64 key
    // expansion, Fisher–Yates and Lemire draw).
    const PINNED_TRIAL_SEED_DEFAULT: u64 = 13_749_684_756_320_566_257;
    const PINNED_TRIAL_SEED_EVOKED: u64 = 11_244_709_117_499_737_235;
    const PINNED_ORDER_SEED_0: [u32; 20] = [
        3, 4, 13, 17, 14, 18, 10, 12, 11, 9, 7, 20, 8, 16, 1, 6, 2, 19, 5, 15,
    ];
    const PINNED_ORDER_SEED_42: [u32; 20] = [
        7, 10, 16, 3, 14, 5, 17, 8, 6, 15, 19, 12, 9, 11, 20, 1, 13, 18, 2, 4,
    ];

    // --- paper and stability ---------------------------------------------------------------

    #[test]
    fn paper_template_default_and_evoked() {
        let panas = Instrument::panas();
        let order = canonical_order(20);
        let (system, user) = messages(&panas, &Template::Paper, Measure::Default, None, &order);
        assert_eq!(system, "You can only reply to numbers from 1 to 5.");
        let tail = format!(
            "Please indicate your degree of agreement regarding each statement.\n\
             Here are the statements:\n{PANAS_CANONICAL_LINES}\n\
             1 denotes “Not at all”, 2 denotes “A little”, 3 denotes “A fair amount”, \
             4 denotes “Much”, 5 denotes “Very much”. \
             Please score each statement one by one on a scale of 1 to 5:"
        );
        assert_eq!(user, tail);

        let (_, user) = messages(
            &panas,
            &Template::Paper,
            Measure::Evoked,
            Some("You lost your keys."),
            &order,
        );
        assert_eq!(
            user,
            format!(
                "Imagine you are the protagonist in the situation: You lost your keys.\n{tail}"
            )
        );
    }

    #[test]
    fn stability_template_evoked() {
        let panas = Instrument::panas();
        let order = canonical_order(20);
        let (system, user) = messages(
            &panas,
            &Template::Stability,
            Measure::Evoked,
            Some("You lost your keys."),
            &order,
        );
        assert_eq!(system, "You can only reply to numbers from 1 to 5.");
        let expected = format!(
            "Imagine you are the protagonist in the situation: You lost your keys.\n\
             Please keep your emotions stable and indicate the extent of your feeling in all the \
             following statements on a scale of 1 to 5. Here are the statements:\n\
             {PANAS_CANONICAL_LINES}\n\
             1 denotes “Not at all”, 2 denotes “A little”, 3 denotes “A fair amount”, \
             4 denotes “Much”, 5 denotes “Very much”. \
             Please score each statement one by one on a scale of 1 to 5:"
        );
        assert_eq!(user, expected);

        let (_, default_user) =
            messages(&panas, &Template::Stability, Measure::Default, None, &order);
        assert_eq!(
            default_user,
            expected
                .split_once('\n')
                .map(|(_, rest)| rest.to_owned())
                .unwrap()
        );
    }

    #[test]
    fn paper_template_uses_instrument_range_and_labels_off_the_printed_scale() {
        let mut seven = Instrument::panas();
        seven.min = 1;
        seven.max = 7;
        seven.labels = vec![
            ScaleLabel {
                value: 1,
                label: "never".to_owned(),
            },
            ScaleLabel {
                value: 7,
                label: "always".to_owned(),
            },
        ];
        let (system, user) = messages(
            &seven,
            &Template::Paper,
            Measure::Default,
            None,
            &canonical_order(20),
        );
        assert_eq!(system, "You can only reply to numbers from 1 to 7.");
        assert!(user.ends_with(
            "20. Afraid\n1 denotes “never”, 7 denotes “always”. \
             Please score each statement one by one on a scale of 1 to 7:"
        ));

        seven.labels.clear();
        let (_, user) = messages(
            &seven,
            &Template::Stability,
            Measure::Default,
            None,
            &canonical_order(20),
        );
        assert!(
            user.ends_with(
                "20. Afraid\nPlease score each statement one by one on a scale of 1 to 7:"
            )
        );
    }

    // --- custom templates ------------------------------------------------------------------

    fn custom(system: &str, user: &str) -> String {
        serde_json::json!({"name": "mine", "system": system, "user": user}).to_string()
    }

    #[test]
    fn custom_template_substitutes_every_placeholder() {
        let template = parse_custom_template(&custom(
            "[{system_prompt}] {min}-{max} {{literal}}",
            "A {scenario}|B {instrument_prompt}|C {min}..{max}\n{items}",
        ))
        .unwrap();
        assert_eq!(template.name, "mine");
        let panas = Instrument::panas();
        let order = [
            2, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
        ];
        let (system, user) = messages(
            &panas,
            &Template::Custom(template.clone()),
            Measure::Evoked,
            Some("You lost {items} SCENARIO."),
            &order,
        );
        assert_eq!(system, format!("[{}] 1-5 {{literal}}", panas.system_prompt));
        let imagine = "Imagine you are the protagonist in the scenario: \
                       \"You lost {items} SCENARIO.\"";
        let (before, after) = panas.prompt.split_once("SCENARIO").unwrap();
        assert!(user.starts_with(&format!(
            "A {imagine}|B {before}{imagine}{after}|C 1..5\n1. Distressed\n2. Interested\n3. Excited\n"
        )));
        assert!(user.ends_with("\n20. Afraid"));

        // Default: {scenario} is empty, {instrument_prompt} gets upstream's single space.
        let (_, user) = messages(
            &panas,
            &Template::Custom(template),
            Measure::Default,
            None,
            &order,
        );
        assert!(user.starts_with(&format!("A |B {before} {after}|C 1..5\n1. Distressed\n")));
    }

    #[test]
    fn custom_template_can_reproduce_eb_code() {
        let template = parse_custom_template(&custom(
            "{system_prompt}",
            "Prompt: {instrument_prompt}\n{items}",
        ))
        .unwrap();
        let panas = Instrument::panas();
        let order = shuffled_order(20, 5);
        for (measure, situation) in [
            (Measure::Default, None),
            (Measure::Evoked, Some("You lost your keys.")),
        ] {
            assert_eq!(
                render(
                    &panas,
                    &Template::Custom(template.clone()),
                    measure,
                    situation,
                    &order
                ),
                render(&panas, &Template::EbCode, measure, situation, &order)
            );
        }
    }

    #[test]
    fn custom_template_errors() {
        let err = |text: &str| parse_custom_template(text).unwrap_err();

        let e = err(&custom("{system_prompt}", "{scenario} {items} {situation}"));
        assert_eq!(e.location, "field \"user\"");
        assert!(e.reason.contains("unknown placeholder {situation}"), "{e}");

        let e = err(&custom("{items}", "{scenario} {items}"));
        assert_eq!(e.location, "field \"system\"");
        assert!(e.reason.contains("unknown placeholder {items}"), "{e}");

        let e = err(&custom("s", "{scenario} {items"));
        assert!(e.reason.contains("unclosed placeholder"), "{e}");
        let e = err(&custom("s", "{scenario} items}"));
        assert!(e.reason.contains("stray }"), "{e}");

        let e = err(&custom("s", "{scenario}"));
        assert!(e.reason.contains("{items}"), "{e}");
        let e = err(&custom("s", "{items}"));
        assert!(
            e.reason.contains("{scenario} or {instrument_prompt}"),
            "{e}"
        );
        let e = err(&custom("  ", "{scenario} {items}"));
        assert_eq!(e.location, "field \"system\"");

        let e = err(r#"{"name": " Paper ", "system": "s", "user": "{scenario} {items}"}"#);
        assert_eq!(e.location, "field \"name\"");
        let e = err(r#"{"name": "", "system": "s", "user": "{scenario} {items}"}"#);
        assert_eq!(e.location, "field \"name\"");

        let e = err(r#"{"name": "x", "system": "s", "user": "{items} {scenario}", "extra": 1}"#);
        assert!(e.reason.contains("unknown field"), "{e}");
        let e = err(r#"{"name": "x", "system": "s"}"#);
        assert!(e.reason.contains("missing field"), "{e}");
        let e = err("{\"name\": \"x\",\n \"system\": }");
        assert_eq!(e.location, "line 2, column 12");
        let e = err("[1]");
        assert!(e.reason.contains("invalid custom template"), "{e}");
    }

    #[test]
    fn custom_template_with_bom_and_braces_parses() {
        let text = format!("\u{feff}{}", custom("{{x}}", "{{{scenario}}} {items}"));
        let template = parse_custom_template(&text).unwrap();
        let panas = Instrument::panas();
        let (system, user) = messages(
            &panas,
            &Template::Custom(template),
            Measure::Default,
            None,
            &canonical_order(20),
        );
        assert_eq!(system, "{x}");
        assert!(user.starts_with("{} 1. Interested\n"));
    }

    // --- errors and names ------------------------------------------------------------------

    #[test]
    fn evoked_without_situation_is_an_error() {
        let panas = Instrument::panas();
        let order = canonical_order(20);
        for template in [Template::EbCode, Template::Paper, Template::Stability] {
            for situation in [None, Some(""), Some("  \n")] {
                assert_eq!(
                    render(&panas, &template, Measure::Evoked, situation, &order),
                    Err(PromptError::MissingSituation)
                );
            }
        }
        // Default ignores any situation it is given.
        assert_eq!(
            render(
                &panas,
                &Template::EbCode,
                Measure::Default,
                Some("x"),
                &order
            ),
            render(&panas, &Template::EbCode, Measure::Default, None, &order)
        );
    }

    #[test]
    fn bad_orders_are_errors() {
        let panas = Instrument::panas();
        let mut duplicate = canonical_order(20);
        duplicate[19] = 1;
        let mut zero = canonical_order(20);
        zero[0] = 0;
        let mut beyond = canonical_order(20);
        beyond[0] = 21;
        for order in [
            Vec::new(),
            canonical_order(19),
            canonical_order(21),
            duplicate,
            zero,
            beyond,
        ] {
            assert_eq!(
                render(&panas, &Template::EbCode, Measure::Default, None, &order),
                Err(PromptError::BadOrder),
                "{order:?}"
            );
        }
    }

    #[test]
    fn measure_and_template_names() {
        assert_eq!("evoked".parse::<Measure>(), Ok(Measure::Evoked));
        assert_eq!(" Default ".parse::<Measure>(), Ok(Measure::Default));
        assert!("baseline".parse::<Measure>().is_err());
        assert_eq!(Measure::Evoked.as_str(), "evoked");
        assert_eq!(Measure::Default.to_string(), "default");
        assert_eq!(
            serde_json::to_string(&Measure::Evoked).unwrap(),
            "\"evoked\""
        );
        assert_eq!(
            serde_json::from_str::<Measure>("\"default\"").unwrap(),
            Measure::Default
        );

        for name in Template::BUILTIN_NAMES {
            assert_eq!(Template::builtin(name).unwrap().name(), name);
        }
        assert_eq!(Template::builtin("EB-CODE"), Some(Template::EbCode));
        assert_eq!(Template::builtin("mine"), None);
        let custom = Template::Custom(CustomTemplate {
            name: "mine".to_owned(),
            system: String::new(),
            user: String::new(),
        });
        assert_eq!(custom.name(), "mine");
    }
}
