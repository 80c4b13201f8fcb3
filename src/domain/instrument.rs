//! Questionnaires ("instruments"): their definition, validation, scoring, and the
//! importer for EmotionBench's `questionnaires.json`.
//!
//! Scoring follows the instrument authors by default (reverse items, multipliers).
//! The published EmotionBench tables summed raw answers instead, so `Convention::Paper`
//! reproduces that to make our numbers comparable with the paper.

use std::collections::HashSet;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::ImportError;

/// The placeholder of a free-text task's prompt that the target replaces (#18,
/// `domain::freetext`).
pub const FREE_TEXT_TARGET: &str = "TARGET";

/// Checks a free-text task: a key, targets numbered 1..=n with text, a prompt with `TARGET`,
/// no categories.
fn validate_free_text(task: &Instrument) -> Result<(), String> {
    if task.items.is_empty() {
        return Err("a free-text task needs at least one target".to_owned());
    }
    for (position, item) in task.items.iter().enumerate() {
        if usize::try_from(item.number).ok() != Some(position + 1) {
            return Err(format!(
                "target at position {} has number {}; targets are numbered 1..={}",
                position + 1,
                item.number,
                task.items.len()
            ));
        }
        if item.text.trim().is_empty() {
            return Err(format!("target {} is empty", item.number));
        }
    }
    if !task.prompt.contains(FREE_TEXT_TARGET) {
        return Err(format!(
            "the free-text prompt has no {FREE_TEXT_TARGET} placeholder for the target"
        ));
    }
    if !task.categories.is_empty() {
        return Err("a free-text task has no categories".to_owned());
    }
    Ok(())
}

/// A questionnaire: items answered on one integer scale, grouped into scored categories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instrument {
    /// Unique short name, e.g. "PANAS", "DASS-21".
    pub key: String,
    /// Lowest allowed answer.
    pub min: i32,
    /// Highest allowed answer.
    pub max: i32,
    /// Anchor labels ascending by value; may cover only some values (AGQ labels only 1 and 7).
    pub labels: Vec<ScaleLabel>,
    /// Canonical order; numbers are exactly 1..=n.
    pub items: Vec<Item>,
    pub categories: Vec<Category>,
    pub scoring: Scoring,
    /// True where the published EmotionBench tables used raw sums (no reverse scoring, no multiplier)
    /// and these differ from the authors' scoring: i.e. the instrument has reverse items or multiplier != 1.
    pub paper_raw_sum: bool,
    /// LLM user prompt; contains the placeholder `SCENARIO`.
    pub prompt: String,
    /// LLM system prompt.
    pub system_prompt: String,
}

/// The wording attached to one answer value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScaleLabel {
    pub value: i32,
    pub label: String,
}

/// One question. `text` is kept byte for byte as published because prompts embed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    pub number: u32,
    pub text: String,
    pub reverse: bool,
    /// Empty unless the item carries its own answer options (BDI).
    pub options: Vec<ItemOption>,
}

/// An answer option that belongs to a single item (BDI-style statements).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemOption {
    pub value: i32,
    pub text: String,
}

/// A scored subscale: the item numbers that contribute to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Category {
    pub name: String,
    pub items: Vec<u32>,
}

/// How category values are computed. A reversed answer is `reverse_constant - x`,
/// and `reverse_constant == min + max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scoring {
    pub mode: ScoreMode,
    pub multiplier: i32,
    pub reverse_constant: i32,
}

/// Whether a category is the sum or the mean of its (possibly reversed) item answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScoreMode {
    Sum,
    Mean,
    /// A free-text task (#18): its items are the targets the open prompt asks about, its
    /// answers are texts (scored afterwards by `scorer`s), and it has no categories.
    #[serde(rename = "free_text")]
    FreeText,
}

impl ScoreMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            ScoreMode::Sum => "sum",
            ScoreMode::Mean => "mean",
            ScoreMode::FreeText => "free_text",
        }
    }
}

impl FromStr for ScoreMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("sum") {
            Ok(ScoreMode::Sum)
        } else if t.eq_ignore_ascii_case("mean") {
            Ok(ScoreMode::Mean)
        } else if t.eq_ignore_ascii_case("free_text") {
            Ok(ScoreMode::FreeText)
        } else {
            Err(format!(
                "unknown score mode {s:?}: expected \"sum\" or \"mean\""
            ))
        }
    }
}

/// Which scoring rules to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Convention {
    /// The instrument authors' rules: reverse items and multiplier applied.
    Authored,
    /// The EmotionBench paper's tables: if `paper_raw_sum`, a plain sum of raw answers over the
    /// category (no reverse, no multiplier, sum even in mean mode); otherwise same as `Authored`.
    Paper,
}

/// The score of one category.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryScore {
    pub name: String,
    pub value: f64,
}

/// Why a set of answers cannot be scored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScoreError {
    #[error("expected {expected} answers, got {got}")]
    WrongCount { expected: usize, got: usize },
    #[error("item {item}: answer {value} is outside {min}..={max}")]
    OutOfRange {
        item: u32,
        value: i32,
        min: i32,
        max: i32,
    },
}

/// The public PANAS adjectives (Watson, Clark & Tellegen, 1988) in the standard order.
pub const PANAS_ITEMS: [&str; 20] = [
    "Interested",
    "Distressed",
    "Excited",
    "Upset",
    "Strong",
    "Guilty",
    "Scared",
    "Hostile",
    "Enthusiastic",
    "Proud",
    "Irritable",
    "Alert",
    "Ashamed",
    "Inspired",
    "Nervous",
    "Determined",
    "Attentive",
    "Jittery",
    "Active",
    "Afraid",
];
const PANAS_POSITIVE: [u32; 10] = [1, 3, 5, 9, 10, 12, 14, 16, 17, 19];
const PANAS_NEGATIVE: [u32; 10] = [2, 4, 6, 7, 8, 11, 13, 15, 18, 20];
const PANAS_LABELS: [(i32, &str); 5] = [
    (1, "very slightly or not at all"),
    (2, "a little"),
    (3, "moderately"),
    (4, "quite a bit"),
    (5, "extremely"),
];

/// The placeholder that prompts carry where the situation text goes.
const SCENARIO: &str = "SCENARIO";

impl Instrument {
    /// The built-in PANAS, so the product works before any file is imported.
    /// Prompts are our own wording; importing `questionnaires.json` replaces them with upstream's.
    pub fn panas() -> Instrument {
        Instrument {
            key: "PANAS".to_owned(),
            min: 1,
            max: 5,
            labels: PANAS_LABELS
                .iter()
                .map(|&(value, label)| ScaleLabel {
                    value,
                    label: label.to_owned(),
                })
                .collect(),
            items: (1u32..)
                .zip(PANAS_ITEMS)
                .map(|(number, text)| Item {
                    number,
                    text: text.to_owned(),
                    reverse: false,
                    options: Vec::new(),
                })
                .collect(),
            categories: vec![
                Category {
                    name: "Positive Affect".to_owned(),
                    items: PANAS_POSITIVE.to_vec(),
                },
                Category {
                    name: "Negative Affect".to_owned(),
                    items: PANAS_NEGATIVE.to_vec(),
                },
            ],
            scoring: Scoring {
                mode: ScoreMode::Sum,
                multiplier: 1,
                reverse_constant: 6,
            },
            paper_raw_sum: false,
            prompt: "Answer only with whole numbers from 1 to 5. SCENARIO For each feeling or \
                     emotion listed below, rate how strongly you feel it right now, that is, at \
                     the present moment, where 1 means \"very slightly or not at all\", 2 \"a \
                     little\", 3 \"moderately\", 4 \"quite a bit\" and 5 \"extremely\". Give one \
                     number for every item:"
                .to_owned(),
            system_prompt:
                "Answer each item with a single whole number between 1 and 5 and nothing else."
                    .to_owned(),
        }
    }

    /// A free-text task (#18) rather than a rated questionnaire.
    pub fn is_free_text(&self) -> bool {
        self.scoring.mode == ScoreMode::FreeText
    }

    pub fn item_count(&self) -> usize {
        self.items.len()
    }

    /// The emotion this instrument was made for, when it is one of the paper's eight
    /// emotion-specific ("challenging") scales (section 4.3); None for PANAS and others.
    pub fn target_emotion(&self) -> Option<&'static str> {
        target_emotion(&self.key)
    }

    pub fn item(&self, number: u32) -> Option<&Item> {
        self.items.iter().find(|item| item.number == number)
    }

    pub fn category(&self, name: &str) -> Option<&Category> {
        self.categories.iter().find(|c| c.name == name)
    }

    pub fn label_for(&self, value: i32) -> Option<&str> {
        self.labels
            .iter()
            .find(|l| l.value == value)
            .map(|l| l.label.as_str())
    }

    /// Checks every invariant (non-empty key; min < max; items numbered 1..=n, non-empty text;
    /// categories non-empty, names unique, items exist, no duplicates inside a category;
    /// reverse_constant == min + max; multiplier >= 1; labels within range, non-empty, strictly
    /// ascending; item options (if any) cover exactly min..=max in order, non-empty texts).
    pub fn validate(&self) -> Result<(), String> {
        if self.key.trim().is_empty() {
            return Err("instrument key is empty".to_owned());
        }
        if self.is_free_text() {
            return validate_free_text(self);
        }
        if self.min >= self.max {
            return Err(format!(
                "answer range {}..={} needs min < max",
                self.min, self.max
            ));
        }
        if self.items.is_empty() {
            return Err("instrument has no items".to_owned());
        }
        for (position, item) in self.items.iter().enumerate() {
            let expected = position.checked_add(1).and_then(|n| u32::try_from(n).ok());
            if Some(item.number) != expected {
                return Err(format!(
                    "item at position {} has number {}, but items must be numbered 1..={} in order",
                    position + 1,
                    item.number,
                    self.items.len()
                ));
            }
            if item.text.trim().is_empty() {
                return Err(format!("item {} has empty text", item.number));
            }
            self.validate_options(item)?;
        }
        self.validate_categories()?;
        if self.scoring.multiplier < 1 {
            return Err(format!(
                "multiplier {} must be at least 1",
                self.scoring.multiplier
            ));
        }
        let sum = i64::from(self.min) + i64::from(self.max);
        if i64::from(self.scoring.reverse_constant) != sum {
            return Err(format!(
                "reverse constant {} is not min+max ({sum})",
                self.scoring.reverse_constant
            ));
        }
        let mut previous: Option<i32> = None;
        for label in &self.labels {
            if label.value < self.min || label.value > self.max {
                return Err(format!(
                    "label for {} is outside {}..={}",
                    label.value, self.min, self.max
                ));
            }
            if previous.is_some_and(|p| p >= label.value) {
                return Err(format!(
                    "labels must be strictly ascending by value; {} is out of order",
                    label.value
                ));
            }
            if label.label.trim().is_empty() {
                return Err(format!("label for {} is empty", label.value));
            }
            previous = Some(label.value);
        }
        Ok(())
    }

    fn validate_options(&self, item: &Item) -> Result<(), String> {
        if item.options.is_empty() {
            return Ok(());
        }
        // i64 so that extreme ranges cannot overflow the length computation.
        let span = i64::from(self.max) - i64::from(self.min) + 1;
        let count_ok = i64::try_from(item.options.len()).is_ok_and(|n| n == span);
        let values_ok = item
            .options
            .iter()
            .zip(self.min..=self.max)
            .all(|(option, expected)| option.value == expected);
        if !count_ok || !values_ok {
            return Err(format!(
                "item {} options must have values {}..={} in order",
                item.number, self.min, self.max
            ));
        }
        if let Some(option) = item.options.iter().find(|o| o.text.trim().is_empty()) {
            return Err(format!(
                "item {} option {} has empty text",
                item.number, option.value
            ));
        }
        Ok(())
    }

    fn validate_categories(&self) -> Result<(), String> {
        if self.categories.is_empty() {
            return Err("instrument has no categories".to_owned());
        }
        let mut names = HashSet::new();
        for category in &self.categories {
            if category.name.trim().is_empty() {
                return Err("a category has an empty name".to_owned());
            }
            if !names.insert(category.name.as_str()) {
                return Err(format!("category name {:?} is used twice", category.name));
            }
            if category.items.is_empty() {
                return Err(format!("category {:?} has no items", category.name));
            }
            let mut seen = HashSet::new();
            for &number in &category.items {
                if self.item(number).is_none() {
                    return Err(format!(
                        "category {:?} refers to item {number}, which does not exist",
                        category.name
                    ));
                }
                if !seen.insert(number) {
                    return Err(format!(
                        "category {:?} lists item {number} twice",
                        category.name
                    ));
                }
            }
        }
        Ok(())
    }

    /// How this instrument is scored under `convention`, and how the other convention differs,
    /// in one or two sentences for a report's header.
    pub fn scoring_note(&self, convention: Convention) -> String {
        let reversed: Vec<String> = self
            .items
            .iter()
            .filter(|i| i.reverse)
            .map(|i| i.number.to_string())
            .collect();
        let how = match self.scoring.mode {
            ScoreMode::Sum => "the sum",
            ScoreMode::Mean => "the mean",
            ScoreMode::FreeText => {
                return format!(
                    "{} is a free-text task: its answers are texts, scored by the named scorer.",
                    self.key
                );
            }
        };
        let mut authored = format!("{how} of the answers over each category's items");
        if !reversed.is_empty() {
            authored.push_str(&format!(
                ", items {} reversed ({} − x)",
                reversed.join(", "),
                self.scoring.reverse_constant
            ));
        }
        if self.scoring.multiplier != 1 {
            authored.push_str(&format!(", times {}", self.scoring.multiplier));
        }
        let n = self.items.len();
        let total = if self
            .categories
            .iter()
            .any(|c| c.name == "Overall" && c.items.len() == n)
        {
            format!(" Overall is the total over all {n} items.")
        } else {
            String::new()
        };
        let key = &self.key;
        if !self.paper_raw_sum {
            return format!(
                "{key} is scored as {authored}; the paper's tables and the instrument's authors \
                 agree on it.{total}"
            );
        }
        let raw = "raw sums of the answers over each category's items, without reverse scoring \
                   or multiplier";
        match convention {
            Convention::Paper => format!(
                "{key} is scored as the paper's tables (Table 5) did: {raw}. Its authors define \
                 it as {authored}; the default mode scores it that way.{total}"
            ),
            Convention::Authored => format!(
                "{key} is scored as its authors define it: {authored}. The paper's tables \
                 (Table 5) used {raw} instead; --mode paper reproduces them.{total}"
            ),
        }
    }

    /// answers: one per item in canonical order (answers[i] answers item i+1). Reverse items
    /// scored as reverse_constant - x; category value = sum (or mean) of its items times multiplier.
    ///
    /// Assumes `validate()` passed; on an invalid instrument it still never panics (category
    /// entries naming missing items are skipped).
    pub fn score(
        &self,
        answers: &[i32],
        convention: Convention,
    ) -> Result<Vec<CategoryScore>, ScoreError> {
        if answers.len() != self.items.len() {
            return Err(ScoreError::WrongCount {
                expected: self.items.len(),
                got: answers.len(),
            });
        }
        for (item, &value) in self.items.iter().zip(answers) {
            if value < self.min || value > self.max {
                return Err(ScoreError::OutOfRange {
                    item: item.number,
                    value,
                    min: self.min,
                    max: self.max,
                });
            }
        }
        let raw = convention == Convention::Paper && self.paper_raw_sum;
        Ok(self
            .categories
            .iter()
            .map(|category| CategoryScore {
                name: category.name.clone(),
                value: self.category_value(category, answers, raw),
            })
            .collect())
    }

    fn category_value(&self, category: &Category, answers: &[i32], raw: bool) -> f64 {
        let mut sum: i64 = 0;
        let mut count: i64 = 0;
        for &number in &category.items {
            let Some(index) = usize::try_from(number).ok().and_then(|n| n.checked_sub(1)) else {
                continue;
            };
            let (Some(&answer), Some(item)) = (answers.get(index), self.items.get(index)) else {
                continue;
            };
            let value = if !raw && item.reverse {
                i64::from(self.scoring.reverse_constant) - i64::from(answer)
            } else {
                i64::from(answer)
            };
            sum = sum.saturating_add(value);
            count += 1;
        }
        if raw {
            return sum as f64;
        }
        let multiplier = f64::from(self.scoring.multiplier);
        match self.scoring.mode {
            ScoreMode::Sum => sum as f64 * multiplier,
            // A free-text task has no categories, so nothing reaches here for it.
            ScoreMode::Mean | ScoreMode::FreeText if count == 0 => 0.0,
            ScoreMode::FreeText => sum as f64 / count as f64 * multiplier,
            ScoreMode::Mean => sum as f64 / count as f64 * multiplier,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Import of EmotionBench `questionnaires.json`
// ---------------------------------------------------------------------------------------------

/// Parse the EmotionBench `questionnaires.json` format (a JSON array of scale objects with fields
/// name, questions {"1": text, ...}, compute_mode ("SUM" | "SUM*2"; also "SUM*k" for integer
/// k>=1 and "MEAN"/"AVG" -> Mean), prompt, inner_setting, scale (reverse constant),
/// reverse ([ids]), categories [{cat_name, cat_questions:[ids]}]).
///
/// Every returned instrument passes `validate()`. The prompt must contain `SCENARIO` exactly
/// once, since that is where the situation is inserted.
/// The paper's eight emotion-specific scales (upstream keys) and the emotion each measures.
pub const SCALE_EMOTIONS: [(&str, &str); 8] = [
    ("AGQ", "Anger"),
    ("DASS-21", "Anxiety"),
    ("BDI", "Depression"),
    ("FDS", "Frustration"),
    ("MJS", "Jealousy"),
    ("GASP", "Guilt"),
    ("FSS", "Fear"),
    ("BFNE", "Embarrassment"),
];

/// The emotion of an emotion-specific scale, by instrument key (case-insensitive).
pub fn target_emotion(key: &str) -> Option<&'static str> {
    SCALE_EMOTIONS
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key.trim()))
        .map(|(_, e)| *e)
}

pub fn parse_questionnaires_json(text: &str) -> Result<Vec<Instrument>, ImportError> {
    // Editors on Windows like to prepend a BOM, which serde_json rejects.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let doc: Json = serde_json::from_str(text).map_err(|e| ImportError::json(&e, "JSON"))?;
    let Json::Arr(records) = doc else {
        return Err(ImportError::new(
            "top level",
            format!(
                "expected a JSON array of questionnaires, found {}",
                doc.kind()
            ),
        ));
    };
    if records.is_empty() {
        return Err(ImportError::new(
            "top level",
            "the array holds no questionnaires",
        ));
    }
    let mut instruments: Vec<Instrument> = Vec::with_capacity(records.len());
    for (index, record) in records.iter().enumerate() {
        let number = index + 1;
        let instrument = parse_record(number, record)?;
        if let Some(first) = instruments.iter().position(|i| i.key == instrument.key) {
            return Err(ImportError::new(
                format!("record {number} ({}), field \"name\"", instrument.key),
                format!(
                    "duplicate questionnaire name {:?} (already used by record {})",
                    instrument.key,
                    first + 1
                ),
            ));
        }
        instruments.push(instrument);
    }
    Ok(instruments)
}

/// Where in the file a record is, for error locations.
struct Ctx {
    number: usize,
    name: String,
}

impl Ctx {
    fn record(&self) -> String {
        format!("record {} ({})", self.number, self.name)
    }

    fn field(&self, field: &str) -> String {
        format!("record {} ({}), field \"{field}\"", self.number, self.name)
    }

    fn err(&self, field: &str, reason: impl Into<String>) -> ImportError {
        ImportError::new(self.field(field), reason)
    }
}

fn parse_record(number: usize, record: &Json) -> Result<Instrument, ImportError> {
    let Json::Obj(fields) = record else {
        return Err(ImportError::new(
            format!("record {number}"),
            format!("expected an object, found {}", record.kind()),
        ));
    };
    // The name comes first so that every later error can mention it.
    let key = match get(fields, "name") {
        Some(Json::Str(s)) if !s.trim().is_empty() => s.trim().to_owned(),
        Some(Json::Str(_)) => {
            return Err(ImportError::new(
                format!("record {number}, field \"name\""),
                "name is empty",
            ));
        }
        Some(other) => {
            return Err(ImportError::new(
                format!("record {number}, field \"name\""),
                format!("expected a string, found {}", other.kind()),
            ));
        }
        None => {
            return Err(ImportError::new(
                format!("record {number}"),
                "missing field \"name\"",
            ));
        }
    };
    let ctx = Ctx { number, name: key };
    if let Some(dup) = duplicate_key(fields) {
        return Err(ImportError::new(
            ctx.record(),
            format!("field {dup:?} appears more than once"),
        ));
    }

    let mut items = parse_questions(&ctx, required(&ctx, fields, "questions")?)?;
    let n = items.len();
    let (mode, multiplier) = parse_compute_mode(string_field(&ctx, fields, "compute_mode")?)
        .map_err(|reason| ctx.err("compute_mode", reason))?;
    let prompt = string_field(&ctx, fields, "prompt")?;
    let system_prompt = string_field(&ctx, fields, "inner_setting")?;
    let (min, max) = response_range(&ctx, system_prompt, prompt)?;
    if prompt.matches(SCENARIO).count() != 1 {
        return Err(ctx.err(
            "prompt",
            format!("the prompt must contain the placeholder {SCENARIO} exactly once"),
        ));
    }

    let scale = match required(&ctx, fields, "scale")? {
        Json::Int(v) => {
            i32::try_from(*v).map_err(|_| ctx.err("scale", format!("scale {v} is out of range")))?
        }
        other => {
            return Err(ctx.err(
                "scale",
                format!("expected a whole number, found {}", other.kind()),
            ));
        }
    };
    let expected_scale = i64::from(min) + i64::from(max);
    if i64::from(scale) != expected_scale {
        return Err(ctx.err(
            "scale",
            format!("invalid scale definition: scale {scale} is not min+max ({expected_scale})"),
        ));
    }

    let reverse = id_list(required(&ctx, fields, "reverse")?, n)
        .map_err(|reason| ctx.err("reverse", reason))?;
    for item in &mut items {
        item.reverse = reverse.contains(&item.number);
        item.options = parse_options(&item.text, min, max);
    }
    let mut categories = parse_categories(&ctx, required(&ctx, fields, "categories")?, n)?;
    // The paper reports a total for each of the eight emotion-specific scales (Table 5: sums
    // over all items); upstream defines it as a category for six of them but not for GASP and
    // MJS. Add it where it is missing so every scale has its Table-5 number.
    let covers_all = |c: &Category| c.items.len() == n;
    if target_emotion(&ctx.name).is_some() && !categories.iter().any(covers_all) {
        let name = if categories.iter().any(|c| c.name == "Overall") {
            "Total".to_owned()
        } else {
            "Overall".to_owned()
        };
        categories.push(Category {
            name,
            items: (1..=u32::try_from(n).unwrap_or(u32::MAX)).collect(),
        });
    }

    let instrument = Instrument {
        key: ctx.name.clone(),
        min,
        max,
        labels: parse_labels(prompt, min, max),
        paper_raw_sum: !reverse.is_empty() || multiplier != 1,
        items,
        categories,
        scoring: Scoring {
            mode,
            multiplier,
            reverse_constant: scale,
        },
        prompt: prompt.to_owned(),
        system_prompt: system_prompt.to_owned(),
    };
    // The checks above give precise locations; this is the safety net for the rest.
    instrument
        .validate()
        .map_err(|reason| ImportError::new(ctx.record(), reason))?;
    Ok(instrument)
}

fn required<'a>(
    ctx: &Ctx,
    fields: &'a [(String, Json)],
    name: &str,
) -> Result<&'a Json, ImportError> {
    get(fields, name)
        .ok_or_else(|| ImportError::new(ctx.record(), format!("missing field \"{name}\"")))
}

fn string_field<'a>(
    ctx: &Ctx,
    fields: &'a [(String, Json)],
    name: &str,
) -> Result<&'a str, ImportError> {
    match required(ctx, fields, name)? {
        Json::Str(s) => Ok(s),
        other => Err(ctx.err(name, format!("expected a string, found {}", other.kind()))),
    }
}

fn parse_questions(ctx: &Ctx, value: &Json) -> Result<Vec<Item>, ImportError> {
    let Json::Obj(entries) = value else {
        return Err(ctx.err(
            "questions",
            format!(
                "expected an object mapping \"1\", \"2\", ... to item texts, found {}",
                value.kind()
            ),
        ));
    };
    if entries.is_empty() {
        return Err(ctx.err("questions", "there are no questions"));
    }
    if let Some(dup) = duplicate_key(entries) {
        return Err(ctx.err("questions", format!("key {dup:?} appears more than once")));
    }
    let count = entries.len();
    let mut items = Vec::with_capacity(count);
    for (key, text) in entries {
        let location = format!("{}, key {key:?}", ctx.field("questions"));
        // Only canonical keys: "01" or " 1" would make the numbering ambiguous.
        let number = key
            .parse::<u32>()
            .ok()
            .filter(|n| *n >= 1 && n.to_string() == *key)
            .filter(|n| usize::try_from(*n).is_ok_and(|n| n <= count))
            .ok_or_else(|| {
                ImportError::new(
                    location.clone(),
                    format!("keys must be exactly \"1\"..\"{count}\", found {key:?}"),
                )
            })?;
        let Json::Str(text) = text else {
            return Err(ImportError::new(
                location,
                format!("expected the item text as a string, found {}", text.kind()),
            ));
        };
        if text.trim().is_empty() {
            return Err(ImportError::new(location, "empty item text"));
        }
        items.push(Item {
            number,
            text: text.clone(),
            reverse: false,
            options: Vec::new(),
        });
    }
    // Keys are distinct and within 1..=count, so after sorting they are exactly 1..=count.
    items.sort_by_key(|item| item.number);
    Ok(items)
}

fn parse_categories(ctx: &Ctx, value: &Json, n: usize) -> Result<Vec<Category>, ImportError> {
    let Json::Arr(entries) = value else {
        return Err(ctx.err(
            "categories",
            format!("expected an array of categories, found {}", value.kind()),
        ));
    };
    if entries.is_empty() {
        return Err(ctx.err("categories", "there are no categories"));
    }
    let mut categories: Vec<Category> = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let mut location = format!("{}, entry {}", ctx.field("categories"), index + 1);
        let Json::Obj(fields) = entry else {
            return Err(ImportError::new(
                location,
                format!("expected an object, found {}", entry.kind()),
            ));
        };
        if let Some(dup) = duplicate_key(fields) {
            return Err(ImportError::new(
                location,
                format!("field {dup:?} appears more than once"),
            ));
        }
        let name = match get(fields, "cat_name") {
            Some(Json::Str(s)) if !s.trim().is_empty() => s.clone(),
            Some(Json::Str(_)) => return Err(ImportError::new(location, "cat_name is empty")),
            Some(other) => {
                return Err(ImportError::new(
                    location,
                    format!(
                        "field \"cat_name\": expected a string, found {}",
                        other.kind()
                    ),
                ));
            }
            None => return Err(ImportError::new(location, "missing field \"cat_name\"")),
        };
        location.push_str(&format!(" ({name:?})"));
        if categories.iter().any(|c| c.name == name) {
            return Err(ImportError::new(
                location,
                format!("category name {name:?} is used twice"),
            ));
        }
        let Some(ids) = get(fields, "cat_questions") else {
            return Err(ImportError::new(
                location,
                "missing field \"cat_questions\"",
            ));
        };
        let items = id_list(ids, n).map_err(|reason| {
            ImportError::new(
                location.clone(),
                format!("field \"cat_questions\": {reason}"),
            )
        })?;
        if items.is_empty() {
            return Err(ImportError::new(
                location,
                "field \"cat_questions\": the category has no items",
            ));
        }
        categories.push(Category { name, items });
    }
    Ok(categories)
}

/// A list of item ids, each naming one of the `n` items, without repeats.
fn id_list(value: &Json, n: usize) -> Result<Vec<u32>, String> {
    let Json::Arr(values) = value else {
        return Err(format!(
            "expected an array of item ids, found {}",
            value.kind()
        ));
    };
    let mut ids = Vec::with_capacity(values.len());
    for v in values {
        let Json::Int(id) = v else {
            return Err(format!(
                "expected whole-number item ids, found {}",
                v.kind()
            ));
        };
        let valid = u32::try_from(*id)
            .ok()
            .filter(|id| *id >= 1 && usize::try_from(*id).is_ok_and(|id| id <= n));
        let Some(id) = valid else {
            return Err(format!(
                "item id {id} does not name an item (items are 1..={n})"
            ));
        };
        if ids.contains(&id) {
            return Err(format!("item id {id} is listed twice"));
        }
        ids.push(id);
    }
    Ok(ids)
}

fn parse_compute_mode(text: &str) -> Result<(ScoreMode, i32), String> {
    let upper = text.trim().to_ascii_uppercase();
    let unknown = || {
        format!(
            "unknown compute_mode {text:?}: expected \"SUM\", \"SUM*k\" (k a whole number >= 1), \"MEAN\" or \"AVG\""
        )
    };
    match upper.as_str() {
        "SUM" => return Ok((ScoreMode::Sum, 1)),
        "MEAN" | "AVG" => return Ok((ScoreMode::Mean, 1)),
        _ => {}
    }
    let factor = upper
        .strip_prefix("SUM")
        .map(str::trim_start)
        .and_then(|rest| rest.strip_prefix('*'))
        .map(str::trim)
        .ok_or_else(unknown)?;
    match factor.parse::<i32>() {
        Ok(k) if k >= 1 && factor.bytes().all(|b| b.is_ascii_digit()) => Ok((ScoreMode::Sum, k)),
        _ => Err(unknown()),
    }
}

/// The answer range from "from A to B", preferring the system prompt, which states it plainly.
fn response_range(ctx: &Ctx, inner: &str, prompt: &str) -> Result<(i32, i32), ImportError> {
    let from_inner = single_range(inner).map_err(|reason| ctx.err("inner_setting", reason))?;
    let from_prompt = single_range(prompt).map_err(|reason| ctx.err("prompt", reason))?;
    let (min, max, field) = match (from_inner, from_prompt) {
        (Some(a), Some(b)) if a != b => {
            return Err(ctx.err(
                "inner_setting",
                format!(
                    "response range from {} to {} disagrees with the prompt's from {} to {}",
                    a.0, a.1, b.0, b.1
                ),
            ));
        }
        (Some((min, max)), _) => (min, max, "inner_setting"),
        (None, Some((min, max))) => (min, max, "prompt"),
        (None, None) => {
            return Err(ctx.err(
                "prompt",
                "no response range found: expected \"from A to B\" (whole numbers) in inner_setting or prompt",
            ));
        }
    };
    match (i32::try_from(min), i32::try_from(max)) {
        (Ok(lo), Ok(hi)) if lo < hi => Ok((lo, hi)),
        _ => Err(ctx.err(field, format!("invalid response range from {min} to {max}"))),
    }
}

/// The one range a text states; several different ones are ambiguous.
fn single_range(text: &str) -> Result<Option<(i64, i64)>, String> {
    let ranges = find_ranges(text);
    match ranges.split_first() {
        None => Ok(None),
        Some((first, rest)) => match rest.iter().find(|r| *r != first) {
            Some(other) => Err(format!(
                "conflicting response ranges: from {} to {} and from {} to {}",
                first.0, first.1, other.0, other.1
            )),
            None => Ok(Some(*first)),
        },
    }
}

/// Every "from A to B" with whole numbers A and B (case-insensitive words, any whitespace).
fn find_ranges(text: &str) -> Vec<(i64, i64)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for start in 0..bytes.len() {
        if start > 0 && is_word_byte(bytes[start - 1]) {
            continue;
        }
        let mut pos = start;
        if let Some(range) = range_at(bytes, &mut pos) {
            found.push(range);
        }
    }
    found
}

/// "from A to B" starting exactly at `pos`.
fn range_at(bytes: &[u8], pos: &mut usize) -> Option<(i64, i64)> {
    if !(keyword(bytes, pos, b"from") && whitespace(bytes, pos)) {
        return None;
    }
    let a = integer(bytes, pos)?;
    if !(whitespace(bytes, pos) && keyword(bytes, pos, b"to") && whitespace(bytes, pos)) {
        return None;
    }
    let b = integer(bytes, pos)?;
    if bytes.get(*pos).is_some_and(|&c| is_word_byte(c)) {
        return None;
    }
    Some((a, b))
}

/// Labels written as `N denotes "label"` or `N = "label"` in the prompt; the first per value wins
/// because later mentions (MJS) describe alternative anchors for a subset of items.
fn parse_labels(prompt: &str, min: i32, max: i32) -> Vec<ScaleLabel> {
    let bytes = prompt.as_bytes();
    let mut labels: Vec<ScaleLabel> = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let at_number_start = (bytes[start].is_ascii_digit() || bytes[start] == b'-')
            && (start == 0 || !is_word_byte(bytes[start - 1]) && bytes[start - 1] != b'-');
        if !at_number_start {
            start += 1;
            continue;
        }
        let mut pos = start;
        let Some(value) = integer(bytes, &mut pos) else {
            start += 1;
            continue;
        };
        skip_whitespace(bytes, &mut pos);
        let linked = if bytes.get(pos) == Some(&b'=') {
            pos += 1;
            true
        } else {
            keyword(bytes, &mut pos, b"denotes")
        };
        skip_whitespace(bytes, &mut pos);
        let quoted = linked && bytes.get(pos) == Some(&b'"');
        let close = if quoted {
            bytes
                .get(pos + 1..)
                .and_then(|rest| rest.iter().position(|&b| b == b'"'))
                .map(|offset| pos + 1 + offset)
        } else {
            None
        };
        let Some(close) = close else {
            start = pos.max(start + 1);
            continue;
        };
        let label = prompt.get(pos + 1..close).map(str::trim).unwrap_or("");
        let in_range = value >= i64::from(min) && value <= i64::from(max);
        let new_value = i32::try_from(value)
            .ok()
            .filter(|v| in_range && !label.is_empty() && !labels.iter().any(|l| l.value == *v));
        if let Some(value) = new_value {
            labels.push(ScaleLabel {
                value,
                label: label.to_owned(),
            });
        }
        // Resume after the closing quote so digits inside a label are not read as values.
        start = close + 1;
    }
    labels.sort_by_key(|l| l.value);
    labels
}

/// Options embedded in an item text ("0. ... 1. ... 2. ... 3. ..."), one per value in
/// min..=max; anything else means the item has no options of its own.
fn parse_options(text: &str, min: i32, max: i32) -> Vec<ItemOption> {
    let text = text.trim();
    let Some(mut body_start) = marker_end(text, 0, min) else {
        return Vec::new();
    };
    let mut options = Vec::new();
    let mut value = min;
    while value < max {
        let next = value + 1;
        let Some(marker) = find_marker(text, body_start, next) else {
            return Vec::new();
        };
        let Some(body) = text.get(body_start..marker) else {
            return Vec::new();
        };
        options.push(ItemOption {
            value,
            text: body.trim().to_owned(),
        });
        let Some(end) = marker_end(text, marker, next) else {
            return Vec::new();
        };
        body_start = end;
        value = next;
    }
    let Some(last) = text.get(body_start..) else {
        return Vec::new();
    };
    options.push(ItemOption {
        value: max,
        text: last.trim().to_owned(),
    });
    if options.iter().any(|o| o.text.is_empty()) {
        return Vec::new();
    }
    options
}

/// If `text[at..]` starts with the marker "{value}." followed by whitespace, the byte index
/// just after the dot.
fn marker_end(text: &str, at: usize, value: i32) -> Option<usize> {
    let marker = format!("{value}.");
    let rest = text.get(at..)?;
    let after = rest.strip_prefix(marker.as_str())?;
    after
        .starts_with(char::is_whitespace)
        .then_some(at + marker.len())
}

/// The first marker "{value}. " at or after `from` that is preceded by whitespace.
fn find_marker(text: &str, from: usize, value: i32) -> Option<usize> {
    let marker = format!("{value}.");
    let rest = text.get(from..)?;
    rest.match_indices(marker.as_str())
        .map(|(offset, _)| from + offset)
        .find(|&pos| {
            text.get(..pos)
                .is_some_and(|before| before.ends_with(char::is_whitespace))
                && marker_end(text, pos, value).is_some()
        })
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn keyword(bytes: &[u8], pos: &mut usize, word: &[u8]) -> bool {
    let end = pos.saturating_add(word.len());
    match bytes.get(*pos..end) {
        Some(found) if found.eq_ignore_ascii_case(word) => {
            *pos = end;
            true
        }
        _ => false,
    }
}

/// Skips at least one whitespace byte; false if there is none.
fn whitespace(bytes: &[u8], pos: &mut usize) -> bool {
    let start = *pos;
    skip_whitespace(bytes, pos);
    *pos > start
}

fn skip_whitespace(bytes: &[u8], pos: &mut usize) {
    while bytes.get(*pos).is_some_and(u8::is_ascii_whitespace) {
        *pos += 1;
    }
}

/// An optionally negative decimal integer; None if absent or too large for i64.
fn integer(bytes: &[u8], pos: &mut usize) -> Option<i64> {
    let mut p = *pos;
    let negative = bytes.get(p) == Some(&b'-');
    if negative {
        p += 1;
    }
    let digits_start = p;
    let mut value: i64 = 0;
    while let Some(&b) = bytes.get(p).filter(|b| b.is_ascii_digit()) {
        value = value.checked_mul(10)?.checked_add(i64::from(b - b'0'))?;
        p += 1;
    }
    if p == digits_start {
        return None;
    }
    *pos = p;
    Some(if negative { -value } else { value })
}

fn get<'a>(fields: &'a [(String, Json)], name: &str) -> Option<&'a Json> {
    fields.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

fn duplicate_key(fields: &[(String, Json)]) -> Option<&str> {
    let mut seen = HashSet::new();
    fields
        .iter()
        .map(|(k, _)| k.as_str())
        .find(|k| !seen.insert(*k))
}

/// A JSON tree that keeps object entries in order and keeps duplicates, so that a repeated key
/// (which `serde_json::Value` would silently overwrite) can be reported instead of losing an item.
enum Json {
    Null,
    Bool,
    Int(i128),
    Float,
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool => "a boolean",
            Json::Int(_) => "a whole number",
            Json::Float => "a fractional number",
            Json::Str(_) => "a string",
            Json::Arr(_) => "an array",
            Json::Obj(_) => "an object",
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> serde::de::Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Json, E> {
        Ok(Json::Bool)
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Int(i128::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Int(i128::from(v)))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Json, E> {
        Ok(Json::Float)
    }

    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut values = Vec::new();
        while let Some(value) = seq.next_element()? {
            values.push(value);
        }
        Ok(Json::Arr(values))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            entries.push((key, value));
        }
        Ok(Json::Obj(entries))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A small valid file in our own words; malformed variants are derived from it.
    fn fixture() -> Value {
        json!([{
            "name": "MOOD",
            "questions": {"1": "Cheerful", "2": "Gloomy", "3": "Calm"},
            "compute_mode": "SUM",
            "prompt": "Reply with numbers from 1 to 5 only. SCENARIO Rate each word; 1 denotes \"not at all\", 5 = \"a lot\":",
            "inner_setting": "Reply with numbers from 1 to 5.",
            "scale": 6,
            "reverse": [2],
            "categories": [{"cat_name": "Overall", "cat_questions": [1, 2, 3]}]
        }])
    }

    fn parse_value(v: &Value) -> Result<Vec<Instrument>, ImportError> {
        parse_questionnaires_json(&v.to_string())
    }

    fn broken(edit: impl FnOnce(&mut Value)) -> ImportError {
        let mut v = fixture();
        edit(&mut v);
        let err = parse_value(&v).expect_err("malformed input must be rejected");
        println!("{err}");
        err
    }

    fn values(scores: &[CategoryScore]) -> Vec<(String, f64)> {
        scores.iter().map(|s| (s.name.clone(), s.value)).collect()
    }

    /// Seven items on 1..=7, items 2 and 5 reversed, one category of all items plus one subset.
    fn reversed_scale() -> Instrument {
        Instrument {
            key: "REV".into(),
            min: 1,
            max: 7,
            labels: vec![
                ScaleLabel {
                    value: 1,
                    label: "never".into(),
                },
                ScaleLabel {
                    value: 7,
                    label: "always".into(),
                },
            ],
            items: (1..=7)
                .map(|n| Item {
                    number: n,
                    text: format!("statement {n}"),
                    reverse: n == 2 || n == 5,
                    options: vec![],
                })
                .collect(),
            categories: vec![
                Category {
                    name: "All".into(),
                    items: (1..=7).collect(),
                },
                Category {
                    name: "Some".into(),
                    items: vec![2, 3],
                },
            ],
            scoring: Scoring {
                mode: ScoreMode::Sum,
                multiplier: 1,
                reverse_constant: 8,
            },
            paper_raw_sum: true,
            prompt: "SCENARIO".into(),
            system_prompt: String::new(),
        }
    }

    /// DASS-like: six items on 0..=3, two subscales, doubled sums.
    fn doubled_scale() -> Instrument {
        Instrument {
            key: "DBL".into(),
            min: 0,
            max: 3,
            labels: vec![],
            items: (1..=6)
                .map(|n| Item {
                    number: n,
                    text: format!("statement {n}"),
                    reverse: false,
                    options: vec![],
                })
                .collect(),
            categories: vec![
                Category {
                    name: "A".into(),
                    items: vec![1, 3, 5],
                },
                Category {
                    name: "B".into(),
                    items: vec![2, 4, 6],
                },
            ],
            scoring: Scoring {
                mode: ScoreMode::Sum,
                multiplier: 2,
                reverse_constant: 3,
            },
            paper_raw_sum: true,
            prompt: "SCENARIO".into(),
            system_prompt: String::new(),
        }
    }

    #[test]
    fn instrument_panas_builtin() {
        let p = Instrument::panas();
        p.validate().unwrap();
        assert_eq!(p.key, "PANAS");
        assert_eq!(p.item_count(), 20);
        let words: Vec<&str> = p.items.iter().map(|i| i.text.as_str()).collect();
        assert_eq!(
            words,
            [
                "Interested",
                "Distressed",
                "Excited",
                "Upset",
                "Strong",
                "Guilty",
                "Scared",
                "Hostile",
                "Enthusiastic",
                "Proud",
                "Irritable",
                "Alert",
                "Ashamed",
                "Inspired",
                "Nervous",
                "Determined",
                "Attentive",
                "Jittery",
                "Active",
                "Afraid"
            ]
        );
        assert!(p.items.iter().all(|i| !i.reverse && i.options.is_empty()));
        let names: Vec<&str> = p.categories.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Positive Affect", "Negative Affect"]);
        assert_eq!(
            p.category("Positive Affect").unwrap().items,
            [1, 3, 5, 9, 10, 12, 14, 16, 17, 19]
        );
        assert_eq!(
            p.category("Negative Affect").unwrap().items,
            [2, 4, 6, 7, 8, 11, 13, 15, 18, 20]
        );
        assert_eq!((p.min, p.max), (1, 5));
        assert_eq!(p.label_for(1), Some("very slightly or not at all"));
        assert_eq!(p.label_for(2), Some("a little"));
        assert_eq!(p.label_for(3), Some("moderately"));
        assert_eq!(p.label_for(4), Some("quite a bit"));
        assert_eq!(p.label_for(5), Some("extremely"));
        assert_eq!(p.label_for(6), None);
        assert_eq!(
            p.scoring,
            Scoring {
                mode: ScoreMode::Sum,
                multiplier: 1,
                reverse_constant: 6
            }
        );
        assert!(!p.paper_raw_sum);
        assert_eq!(p.prompt.matches("SCENARIO").count(), 1);
        assert!(!p.system_prompt.contains("SCENARIO"));
        // Our own prompt states the range the same way upstream's do.
        assert_eq!(find_ranges(&p.prompt), [(1, 5)]);
        assert_eq!(p.item(20).unwrap().text, "Afraid");
        assert!(p.item(0).is_none() && p.item(21).is_none());
        assert!(p.category("Overall").is_none());
    }

    #[test]
    fn instrument_panas_scoring_by_hand() {
        let p = Instrument::panas();
        // answers[i] = (i % 5) + 1: items 1..20 answer 1,2,3,4,5,1,2,3,4,5,1,2,3,4,5,1,2,3,4,5.
        let answers: Vec<i32> = (0..20).map(|i| i % 5 + 1).collect();
        // PA items 1,3,5,9,10,12,14,16,17,19 -> 1+3+5+4+5+2+4+1+2+4 = 31
        // NA items 2,4,6,7,8,11,13,15,18,20 -> 2+4+1+2+3+1+3+5+3+5 = 29
        let expected = vec![
            ("Positive Affect".to_owned(), 31.0),
            ("Negative Affect".to_owned(), 29.0),
        ];
        assert_eq!(
            values(&p.score(&answers, Convention::Authored).unwrap()),
            expected
        );
        // No reverse items and multiplier 1: the paper convention is identical.
        assert_eq!(
            values(&p.score(&answers, Convention::Paper).unwrap()),
            expected
        );
        let all_fives = [5; 20];
        assert_eq!(
            values(&p.score(&all_fives, Convention::Authored).unwrap()),
            vec![
                ("Positive Affect".to_owned(), 50.0),
                ("Negative Affect".to_owned(), 50.0)
            ]
        );
    }

    #[test]
    fn instrument_reverse_items_authored_and_paper() {
        let s = reversed_scale();
        s.validate().unwrap();
        let answers = [1, 2, 3, 4, 5, 6, 7];
        // Authored: item 2 -> 8-2 = 6, item 5 -> 8-5 = 3.
        // All = 1+6+3+4+3+6+7 = 30; Some (2,3) = 6+3 = 9.
        assert_eq!(
            values(&s.score(&answers, Convention::Authored).unwrap()),
            vec![("All".to_owned(), 30.0), ("Some".to_owned(), 9.0)]
        );
        // Paper: raw 1+..+7 = 28; Some = 2+3 = 5.
        assert_eq!(
            values(&s.score(&answers, Convention::Paper).unwrap()),
            vec![("All".to_owned(), 28.0), ("Some".to_owned(), 5.0)]
        );
        // Without paper_raw_sum the paper convention falls back to the authors' scoring.
        let mut not_paper = s.clone();
        not_paper.paper_raw_sum = false;
        assert_eq!(
            values(&not_paper.score(&answers, Convention::Paper).unwrap()),
            vec![("All".to_owned(), 30.0), ("Some".to_owned(), 9.0)]
        );
    }

    #[test]
    fn instrument_multiplier_and_mean() {
        let d = doubled_scale();
        d.validate().unwrap();
        let answers = [3, 0, 2, 1, 1, 3];
        // A = items 1,3,5 = 3+2+1 = 6 -> 12; B = items 2,4,6 = 0+1+3 = 4 -> 8.
        assert_eq!(
            values(&d.score(&answers, Convention::Authored).unwrap()),
            vec![("A".to_owned(), 12.0), ("B".to_owned(), 8.0)]
        );
        assert_eq!(
            values(&d.score(&answers, Convention::Paper).unwrap()),
            vec![("A".to_owned(), 6.0), ("B".to_owned(), 4.0)]
        );

        // Mean mode on the reversed 1..7 scale: Some = (6+3)/2 = 4.5, All = 30/7.
        let mut m = reversed_scale();
        m.scoring.mode = ScoreMode::Mean;
        let answers = [1, 2, 3, 4, 5, 6, 7];
        let scores = m.score(&answers, Convention::Authored).unwrap();
        assert!((scores[0].value - 30.0 / 7.0).abs() < 1e-12);
        assert_eq!(scores[1].value, 4.5);
        // Paper with paper_raw_sum sums raw answers even in mean mode: 2+3 = 5.
        assert_eq!(m.score(&answers, Convention::Paper).unwrap()[1].value, 5.0);
        // Mean times multiplier: 4.5 * 2 = 9.
        m.scoring.multiplier = 2;
        assert_eq!(
            m.score(&answers, Convention::Authored).unwrap()[1].value,
            9.0
        );
    }

    #[test]
    fn instrument_score_errors() {
        let p = Instrument::panas();
        assert_eq!(
            p.score(&[3; 19], Convention::Authored),
            Err(ScoreError::WrongCount {
                expected: 20,
                got: 19
            })
        );
        assert_eq!(
            p.score(&[], Convention::Paper),
            Err(ScoreError::WrongCount {
                expected: 20,
                got: 0
            })
        );
        let mut answers = [3; 20];
        answers[6] = 6;
        let err = p.score(&answers, Convention::Authored).unwrap_err();
        assert_eq!(
            err,
            ScoreError::OutOfRange {
                item: 7,
                value: 6,
                min: 1,
                max: 5
            }
        );
        assert_eq!(err.to_string(), "item 7: answer 6 is outside 1..=5");
        answers[6] = 0;
        assert!(matches!(
            p.score(&answers, Convention::Paper),
            Err(ScoreError::OutOfRange {
                item: 7,
                value: 0,
                ..
            })
        ));
    }

    #[test]
    fn instrument_score_never_panics_on_invalid_instrument() {
        let mut p = Instrument::panas();
        p.categories[0].items = vec![0, 21, u32::MAX, 1];
        p.categories[1].items = vec![];
        p.scoring.mode = ScoreMode::Mean;
        let scores = p.score(&[2; 20], Convention::Authored).unwrap();
        assert_eq!(scores[0].value, 2.0);
        assert_eq!(scores[1].value, 0.0);
    }

    #[test]
    fn instrument_validate_rejects_each_broken_invariant() {
        type Edit = fn(&mut Instrument);
        let cases: Vec<(&str, Edit)> = vec![
            ("key", |i| i.key = " ".into()),
            ("min < max", |i| i.min = 5),
            ("no items", |i| {
                i.items.clear();
            }),
            ("numbering", |i| i.items[3].number = 9),
            ("numbering order", |i| i.items.swap(0, 1)),
            ("empty text", |i| i.items[0].text = "  ".into()),
            ("no categories", |i| i.categories.clear()),
            ("empty category", |i| i.categories[0].items.clear()),
            ("duplicate category", |i| {
                i.categories[1].name = "Positive Affect".into()
            }),
            ("missing item", |i| i.categories[0].items.push(21)),
            ("item 0", |i| i.categories[0].items.push(0)),
            ("duplicate in category", |i| i.categories[0].items.push(1)),
            ("reverse constant", |i| i.scoring.reverse_constant = 5),
            ("multiplier", |i| i.scoring.multiplier = 0),
            ("label range", |i| i.labels[4].value = 6),
            ("label order", |i| i.labels.swap(1, 2)),
            ("label duplicate", |i| i.labels[1].value = 1),
            ("options count", |i| {
                i.items[0].options = vec![ItemOption {
                    value: 1,
                    text: "x".into(),
                }]
            }),
            ("options values", |i| {
                i.items[0].options = (0..5)
                    .map(|v| ItemOption {
                        value: v,
                        text: "x".into(),
                    })
                    .collect()
            }),
        ];
        for (what, edit) in cases {
            let mut p = Instrument::panas();
            edit(&mut p);
            let err = p.validate();
            assert!(err.is_err(), "{what} must be rejected");
            println!("{what}: {}", err.unwrap_err());
        }
        let mut ok = Instrument::panas();
        ok.items[0].options = (1..=5)
            .map(|v| ItemOption {
                value: v,
                text: format!("option {v}"),
            })
            .collect();
        ok.validate().unwrap();
    }

    #[test]
    fn instrument_score_mode_strings_and_serde() {
        assert_eq!(ScoreMode::Sum.as_str(), "sum");
        assert_eq!(ScoreMode::Mean.as_str(), "mean");
        assert_eq!("sum".parse::<ScoreMode>(), Ok(ScoreMode::Sum));
        assert_eq!("MEAN".parse::<ScoreMode>(), Ok(ScoreMode::Mean));
        assert!("median".parse::<ScoreMode>().is_err());
        let p = Instrument::panas();
        let text = serde_json::to_string(&p).unwrap();
        assert!(text.contains("\"mode\":\"sum\""));
        let back: Instrument = serde_json::from_str(&text).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn instrument_import_fixture() {
        let list = parse_value(&fixture()).unwrap();
        assert_eq!(list.len(), 1);
        let m = &list[0];
        assert_eq!(m.key, "MOOD");
        assert_eq!((m.min, m.max), (1, 5));
        assert_eq!(m.scoring.reverse_constant, 6);
        assert_eq!(m.scoring.multiplier, 1);
        assert_eq!(m.scoring.mode, ScoreMode::Sum);
        assert!(m.paper_raw_sum);
        assert_eq!(
            m.items.iter().map(|i| i.reverse).collect::<Vec<_>>(),
            [false, true, false]
        );
        assert_eq!(m.label_for(1), Some("not at all"));
        assert_eq!(m.label_for(5), Some("a lot"));
        assert_eq!(m.labels.len(), 2);
        assert_eq!(m.system_prompt, "Reply with numbers from 1 to 5.");
        // Keys in any order in the object; items still come out sorted.
        let mut v = fixture();
        v[0]["questions"] = json!({"3": "Calm", "1": "Cheerful", "2": "Gloomy"});
        let sorted = parse_value(&v).unwrap();
        assert_eq!(sorted[0].items, m.items);
        // Unknown extra fields are ignored; a leading BOM is tolerated.
        let mut v = fixture();
        v[0]["comment"] = json!({"anything": [1, 2]});
        let text = format!("\u{feff}{v}");
        assert_eq!(parse_questionnaires_json(&text).unwrap(), list);
    }

    #[test]
    fn instrument_import_compute_modes() {
        assert_eq!(parse_compute_mode("SUM"), Ok((ScoreMode::Sum, 1)));
        assert_eq!(parse_compute_mode("SUM*2"), Ok((ScoreMode::Sum, 2)));
        assert_eq!(parse_compute_mode(" sum * 3 "), Ok((ScoreMode::Sum, 3)));
        assert_eq!(parse_compute_mode("MEAN"), Ok((ScoreMode::Mean, 1)));
        assert_eq!(parse_compute_mode("AVG"), Ok((ScoreMode::Mean, 1)));
        for bad in [
            "SUM*0", "SUM*-1", "SUM*+2", "SUM*", "SUM*1.5", "SUM2", "", "WEIRD",
        ] {
            assert!(parse_compute_mode(bad).is_err(), "{bad:?}");
        }
        let mut v = fixture();
        v[0]["compute_mode"] = json!("SUM*2");
        v[0]["reverse"] = json!([]);
        let i = &parse_value(&v).unwrap()[0];
        assert_eq!(i.scoring.multiplier, 2);
        assert!(i.paper_raw_sum);
        v[0]["compute_mode"] = json!("SUM");
        assert!(!parse_value(&v).unwrap()[0].paper_raw_sum);
        v[0]["compute_mode"] = json!("MEAN");
        assert_eq!(parse_value(&v).unwrap()[0].scoring.mode, ScoreMode::Mean);
    }

    #[test]
    fn instrument_label_parsing() {
        let l = parse_labels(
            "1 denotes \"not at all\", 2 = \"a little\",3 denotes  \"a fair amount\", 4 denotes \"much\",5 denotes \"very much\".",
            1,
            5,
        );
        let pairs: Vec<(i32, &str)> = l.iter().map(|l| (l.value, l.label.as_str())).collect();
        assert_eq!(
            pairs,
            [
                (1, "not at all"),
                (2, "a little"),
                (3, "a fair amount"),
                (4, "much"),
                (5, "very much")
            ]
        );
        // First label per value wins; out-of-range values and unquoted text are ignored;
        // output is sorted even if the prompt is not.
        let l = parse_labels(
            "7 denotes \"top\" and 1 denotes \"bottom\"; later 1 denotes \"other\", 9 = \"no\", 3 denotes nothing, 4 denotes \"",
            1,
            7,
        );
        let pairs: Vec<(i32, &str)> = l.iter().map(|l| (l.value, l.label.as_str())).collect();
        assert_eq!(pairs, [(1, "bottom"), (7, "top")]);
        // Digits inside a label are not mistaken for values; negative values work.
        let l = parse_labels("-1 = \"below 0 = \"x\" \", 0 = \"zero\"", -1, 1);
        let pairs: Vec<(i32, &str)> = l.iter().map(|l| (l.value, l.label.as_str())).collect();
        assert_eq!(pairs, [(-1, "below 0 ="), (0, "zero")]);
        assert!(parse_labels("no labels here", 1, 5).is_empty());
    }

    #[test]
    fn instrument_range_parsing() {
        assert_eq!(find_ranges("reply numbers from 1 to 5."), [(1, 5)]);
        assert_eq!(find_ranges("From\t0  TO 3"), [(0, 3)]);
        assert!(find_ranges("question 1 to 8, scale of 1 to 7").is_empty());
        assert!(find_ranges("wherefrom 1 to 5").is_empty());
        assert!(find_ranges("from 1 to 5th").is_empty());
        assert!(find_ranges("from 99999999999999999999 to 3").is_empty());
        assert_eq!(
            single_range("from 1 to 5, again from 1 to 5"),
            Ok(Some((1, 5)))
        );
        assert!(single_range("from 1 to 5, or from 1 to 7").is_err());
        assert_eq!(single_range("nothing"), Ok(None));
    }

    #[test]
    fn instrument_option_parsing() {
        let text = "0. Fine. 1. A bit off. 2. Woke 1-2 hours early. 3. Rather bad.";
        let o = parse_options(text, 0, 3);
        let pairs: Vec<(i32, &str)> = o.iter().map(|o| (o.value, o.text.as_str())).collect();
        assert_eq!(
            pairs,
            [
                (0, "Fine."),
                (1, "A bit off."),
                (2, "Woke 1-2 hours early."),
                (3, "Rather bad.")
            ]
        );
        // A missing or misplaced marker means no options.
        assert!(parse_options("0. Fine. 1. Off. 3. Bad.", 0, 3).is_empty());
        assert!(parse_options("Fine. 1. Off. 2. x 3. Bad.", 0, 3).is_empty());
        assert!(parse_options("0. Fine. 2. x 1. Off. 3. Bad.", 0, 3).is_empty());
        assert!(parse_options("0. Fine.1. Off. 2. x 3. Bad.", 0, 3).is_empty());
        assert!(parse_options("0. Fine. 1. 2. x 3. Bad.", 0, 3).is_empty());
        assert!(parse_options("Cheerful", 1, 5).is_empty());
        assert!(parse_options("", 0, 3).is_empty());
    }

    #[test]
    fn instrument_import_malformed_inputs() {
        // Bad JSON: trailing comma on line 3.
        let err = parse_questionnaires_json(
            "[\n  {\"name\": \"X\",\n   \"questions\": {\"1\": \"a\",}\n  }\n]",
        )
        .unwrap_err();
        println!("{err}");
        assert_eq!(err.location, "line 3, column 27");
        assert!(err.reason.contains("trailing comma"), "{}", err.reason);
        let err = parse_questionnaires_json("[{\"name\": \"X\"").unwrap_err();
        assert!(
            err.location.starts_with("line 1, column"),
            "{}",
            err.location
        );

        let err = broken(|v| {
            v[0].as_object_mut().unwrap().remove("questions");
        });
        assert_eq!(err.location, "record 1 (MOOD)");
        assert!(err.reason.contains("missing field \"questions\""));

        let err = broken(|v| v[0]["reverse"] = json!([2, 99]));
        assert_eq!(err.location, "record 1 (MOOD), field \"reverse\"");
        assert!(err.reason.contains("99"), "{}", err.reason);

        let err = broken(|v| v[0]["categories"][0]["cat_questions"] = json!([0, 1]));
        assert_eq!(
            err.location,
            "record 1 (MOOD), field \"categories\", entry 1 (\"Overall\")"
        );
        assert!(err.reason.contains("item id 0"), "{}", err.reason);

        let err = broken(|v| v[0]["scale"] = json!(7));
        assert_eq!(err.location, "record 1 (MOOD), field \"scale\"");
        assert_eq!(
            err.reason,
            "invalid scale definition: scale 7 is not min+max (6)"
        );

        let err = broken(|v| {
            v[0]["prompt"] = json!("SCENARIO Rate each word.");
            v[0]["inner_setting"] = json!("Be brief.");
        });
        assert_eq!(err.location, "record 1 (MOOD), field \"prompt\"");
        assert!(err.reason.contains("no response range"), "{}", err.reason);

        let err = broken(|v| v[0]["questions"]["2"] = json!("   "));
        assert_eq!(
            err.location,
            "record 1 (MOOD), field \"questions\", key \"2\""
        );
        assert_eq!(err.reason, "empty item text");

        let err = broken(|v| {
            let first = v[0].clone();
            v.as_array_mut().unwrap().push(first);
        });
        assert_eq!(err.location, "record 2 (MOOD), field \"name\"");
        assert!(err.reason.contains("duplicate"), "{}", err.reason);

        let err = broken(|v| v[0]["compute_mode"] = json!("WEIRD"));
        assert_eq!(err.location, "record 1 (MOOD), field \"compute_mode\"");
        assert!(err.reason.contains("WEIRD"), "{}", err.reason);
    }

    #[test]
    fn instrument_import_more_malformed_inputs() {
        type Edit = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(&str, Edit, &str)> = vec![
            (
                "not an array",
                Box::new(|v| *v = json!({"a": 1})),
                "top level",
            ),
            ("empty array", Box::new(|v| *v = json!([])), "top level"),
            (
                "record not object",
                Box::new(|v| v[0] = json!(3)),
                "record 1",
            ),
            (
                "missing name",
                Box::new(|v| {
                    v[0].as_object_mut().unwrap().remove("name");
                }),
                "record 1",
            ),
            (
                "name number",
                Box::new(|v| v[0]["name"] = json!(5)),
                "record 1, field \"name\"",
            ),
            (
                "empty name",
                Box::new(|v| v[0]["name"] = json!(" ")),
                "record 1, field \"name\"",
            ),
            (
                "scale string",
                Box::new(|v| v[0]["scale"] = json!("6")),
                "record 1 (MOOD), field \"scale\"",
            ),
            (
                "scale fraction",
                Box::new(|v| v[0]["scale"] = json!(6.0)),
                "record 1 (MOOD), field \"scale\"",
            ),
            (
                "questions array",
                Box::new(|v| v[0]["questions"] = json!(["a"])),
                "record 1 (MOOD), field \"questions\"",
            ),
            (
                "questions empty",
                Box::new(|v| v[0]["questions"] = json!({})),
                "record 1 (MOOD), field \"questions\"",
            ),
            (
                "question gap",
                Box::new(|v| v[0]["questions"] = json!({"1": "a", "2": "b", "4": "c"})),
                "record 1 (MOOD), field \"questions\", key \"4\"",
            ),
            (
                "question zero-padded",
                Box::new(|v| v[0]["questions"] = json!({"1": "a", "02": "b", "3": "c"})),
                "record 1 (MOOD), field \"questions\", key \"02\"",
            ),
            (
                "question zero",
                Box::new(|v| v[0]["questions"] = json!({"0": "a", "1": "b", "2": "c"})),
                "record 1 (MOOD), field \"questions\", key \"0\"",
            ),
            (
                "question text number",
                Box::new(|v| v[0]["questions"]["1"] = json!(1)),
                "record 1 (MOOD), field \"questions\", key \"1\"",
            ),
            (
                "compute_mode missing",
                Box::new(|v| {
                    v[0].as_object_mut().unwrap().remove("compute_mode");
                }),
                "record 1 (MOOD)",
            ),
            (
                "prompt number",
                Box::new(|v| v[0]["prompt"] = json!(1)),
                "record 1 (MOOD), field \"prompt\"",
            ),
            (
                "no placeholder",
                Box::new(|v| v[0]["prompt"] = json!("Reply from 1 to 5.")),
                "record 1 (MOOD), field \"prompt\"",
            ),
            (
                "two placeholders",
                Box::new(|v| v[0]["prompt"] = json!("SCENARIO from 1 to 5 SCENARIO")),
                "record 1 (MOOD), field \"prompt\"",
            ),
            (
                "ranges disagree",
                Box::new(|v| v[0]["inner_setting"] = json!("numbers from 1 to 7")),
                "record 1 (MOOD), field \"inner_setting\"",
            ),
            (
                "inverted range",
                Box::new(|v| {
                    v[0]["inner_setting"] = json!("numbers from 5 to 1");
                    v[0]["prompt"] = json!("SCENARIO from 5 to 1");
                }),
                "record 1 (MOOD), field \"inner_setting\"",
            ),
            (
                "reverse not array",
                Box::new(|v| v[0]["reverse"] = json!(2)),
                "record 1 (MOOD), field \"reverse\"",
            ),
            (
                "reverse duplicate",
                Box::new(|v| v[0]["reverse"] = json!([2, 2])),
                "record 1 (MOOD), field \"reverse\"",
            ),
            (
                "reverse string id",
                Box::new(|v| v[0]["reverse"] = json!(["2"])),
                "record 1 (MOOD), field \"reverse\"",
            ),
            (
                "categories missing",
                Box::new(|v| {
                    v[0].as_object_mut().unwrap().remove("categories");
                }),
                "record 1 (MOOD)",
            ),
            (
                "categories empty",
                Box::new(|v| v[0]["categories"] = json!([])),
                "record 1 (MOOD), field \"categories\"",
            ),
            (
                "category without items",
                Box::new(|v| v[0]["categories"][0]["cat_questions"] = json!([])),
                "record 1 (MOOD), field \"categories\", entry 1 (\"Overall\")",
            ),
            (
                "category duplicate item",
                Box::new(|v| v[0]["categories"][0]["cat_questions"] = json!([1, 1])),
                "record 1 (MOOD), field \"categories\", entry 1 (\"Overall\")",
            ),
            (
                "category name missing",
                Box::new(|v| v[0]["categories"] = json!([{"cat_questions": [1]}])),
                "record 1 (MOOD), field \"categories\", entry 1",
            ),
            (
                "category names repeat",
                Box::new(|v| {
                    v[0]["categories"] = json!([
                        {"cat_name": "A", "cat_questions": [1]},
                        {"cat_name": "A", "cat_questions": [2]}
                    ])
                }),
                "record 1 (MOOD), field \"categories\", entry 2 (\"A\")",
            ),
        ];
        for (what, edit, location) in cases {
            let mut v = fixture();
            edit(&mut v);
            let err = parse_value(&v).expect_err(what);
            println!("{what}: {err}");
            assert_eq!(err.location, location, "{what}");
        }
        // Duplicate keys cannot be expressed through serde_json::Value; write them out.
        let text = fixture().to_string().replace(
            "\"1\":\"Cheerful\"",
            "\"1\":\"Cheerful\",\"2\":\"Shadowed\"",
        );
        let err = parse_questionnaires_json(&text).unwrap_err();
        assert_eq!(err.location, "record 1 (MOOD), field \"questions\"");
        let text = fixture()
            .to_string()
            .replace("\"scale\":6", "\"scale\":6,\"scale\":6");
        let err = parse_questionnaires_json(&text).unwrap_err();
        assert_eq!(err.location, "record 1 (MOOD)");
        assert!(err.reason.contains("\"scale\""));
    }

    #[test]
    fn instrument_import_never_panics_on_truncated_or_mangled_input() {
        let text = fixture().to_string();
        for end in 0..=text.len() {
            if let Some(prefix) = text.get(..end) {
                let _ = parse_questionnaires_json(prefix);
            }
        }
        let replacements = [
            "",
            "0",
            "-1",
            "\"",
            "{}",
            "[]",
            "null",
            "1e400",
            "18446744073709551616",
        ];
        let bytes: Vec<(usize, char)> = text.char_indices().collect();
        for (i, _) in bytes.iter().step_by(3) {
            for r in replacements {
                let mut mangled = text.clone();
                mangled.replace_range(*i..*i + 1, r);
                let _ = parse_questionnaires_json(&mangled);
            }
        }
        let deep = "[".repeat(100_000);
        assert!(parse_questionnaires_json(&deep).is_err());
        for odd in [
            "SCENARIO from -2147483648 to 2147483647",
            "SCENARIO from 2147483647 to 2147483648",
            "SCENARIO from -9223372036854775808 to 0",
        ] {
            let mut v = fixture();
            v[0]["prompt"] = json!(odd);
            v[0]["inner_setting"] = json!("");
            let _ = parse_value(&v);
        }
    }

    #[test]
    fn instrument_import_real_file() {
        let Some(text) = super::super::testdata::upstream("questionnaires.json") else {
            return;
        };
        let list = parse_questionnaires_json(&text).unwrap();
        let names: Vec<&str> = list.iter().map(|i| i.key.as_str()).collect();
        assert_eq!(
            names,
            [
                "PANAS", "BFNE", "FSS", "AGQ", "FDS", "BDI", "DASS-21", "GASP", "MJS"
            ]
        );
        let by = |key: &str| list.iter().find(|i| i.key == key).unwrap();
        for i in &list {
            i.validate().unwrap();
            assert_eq!(i.prompt.matches("SCENARIO").count(), 1);
            let expected = match i.key.as_str() {
                "AGQ" | "GASP" | "MJS" => (1, 7),
                "BDI" | "DASS-21" => (0, 3),
                _ => (1, 5),
            };
            assert_eq!((i.min, i.max), expected, "{}", i.key);
            assert_eq!(i.scoring.reverse_constant, i.min + i.max);
            let raw = matches!(i.key.as_str(), "AGQ" | "BFNE" | "DASS-21");
            assert_eq!(i.paper_raw_sum, raw, "{}", i.key);
            let expected_multiplier = if i.key == "DASS-21" { 2 } else { 1 };
            assert_eq!(i.scoring.multiplier, expected_multiplier, "{}", i.key);
            assert_eq!(i.scoring.mode, ScoreMode::Sum);
            if i.key != "BDI" {
                assert!(i.items.iter().all(|it| it.options.is_empty()), "{}", i.key);
            }
        }

        let panas = by("PANAS");
        let builtin = Instrument::panas();
        assert_eq!(panas.items, builtin.items);
        assert_eq!(panas.categories, builtin.categories);
        assert_eq!(panas.labels, builtin.labels);
        assert_eq!(panas.scoring, builtin.scoring);

        let reversed = |key: &str| -> Vec<u32> {
            by(key)
                .items
                .iter()
                .filter(|it| it.reverse)
                .map(|it| it.number)
                .collect()
        };
        assert_eq!(reversed("AGQ"), [7, 18]);
        assert_eq!(reversed("BFNE"), [2, 4, 7, 10]);
        for key in ["PANAS", "FSS", "FDS", "BDI", "DASS-21", "GASP", "MJS"] {
            assert!(reversed(key).is_empty(), "{key}");
        }

        // Every emotion-specific scale has a total over all its items (added for GASP and MJS,
        // which upstream leaves without one); PANAS has none.
        for (key, _) in SCALE_EMOTIONS {
            let inst = by(key);
            let totals: Vec<&Category> = inst
                .categories
                .iter()
                .filter(|c| c.items.len() == inst.item_count())
                .collect();
            assert_eq!(totals.len(), 1, "{key}");
            assert_eq!(totals[0].name, "Overall", "{key}");
        }
        assert_eq!(by("GASP").categories.len(), 5);
        assert_eq!(by("MJS").categories.len(), 4);
        assert!(by("PANAS").category("Overall").is_none());

        // The report header's scoring notes name the convention and the difference.
        let note = by("AGQ").scoring_note(Convention::Paper);
        assert!(
            note.contains("raw sums") && note.contains("items 7, 18 reversed (8 − x)"),
            "{note}"
        );
        let note = by("DASS-21").scoring_note(Convention::Authored);
        assert!(
            note.contains("times 2") && note.contains("--mode paper"),
            "{note}"
        );
        let note = by("PANAS").scoring_note(Convention::Paper);
        assert!(note.contains("agree"), "{note}");
        // One space between words: the notes are written over several source lines (#16).
        for i in &list {
            for c in [Convention::Paper, Convention::Authored] {
                let note = i.scoring_note(c);
                assert!(!note.contains("  "), "{}: {note}", i.key);
            }
        }

        let agq = by("AGQ");
        assert_eq!(
            agq.labels.iter().map(|l| l.value).collect::<Vec<_>>(),
            [1, 7]
        );
        // MJS restates anchors for a subset of items later; the first mention wins.
        assert_eq!(
            by("MJS").labels.iter().map(|l| l.value).collect::<Vec<_>>(),
            [1, 7]
        );
        assert_eq!(by("BFNE").labels.len(), 5);
        assert_eq!(by("DASS-21").labels.len(), 4);

        let bdi = by("BDI");
        assert_eq!(bdi.item_count(), 21);
        for item in &bdi.items {
            let values: Vec<i32> = item.options.iter().map(|o| o.value).collect();
            assert_eq!(values, [0, 1, 2, 3], "BDI item {}", item.number);
            assert!(item.options.iter().all(|o| !o.text.is_empty()));
        }

        // Item texts and prompts are kept byte for byte.
        let raw: Value = serde_json::from_str(&text).unwrap();
        for (record, inst) in raw.as_array().unwrap().iter().zip(&list) {
            assert_eq!(record["prompt"].as_str().unwrap(), inst.prompt);
            assert_eq!(
                record["inner_setting"].as_str().unwrap(),
                inst.system_prompt
            );
            for item in &inst.items {
                let original = record["questions"][item.number.to_string()]
                    .as_str()
                    .unwrap();
                assert_eq!(original, item.text);
            }
        }

        // Scoring the real AGQ: all answers 1 -> authored sum reverses items 7 and 18 to 7.
        let ones = vec![1; agq.item_count()];
        let authored = agq.score(&ones, Convention::Authored).unwrap();
        let paper = agq.score(&ones, Convention::Paper).unwrap();
        let overall = |s: &[CategoryScore]| s.iter().find(|c| c.name == "Overall").unwrap().value;
        assert_eq!(overall(&paper), 29.0);
        assert_eq!(overall(&authored), 27.0 + 14.0);
    }
}

/// Properties of the `questionnaires.json` importer over generated scales: what is written is
/// what is read and scored, and no input (mutated or arbitrary) panics.
#[cfg(test)]
mod import_properties {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    struct Scale {
        key: String,
        items: Vec<String>,
        range: (i32, i32),
        compute: (&'static str, ScoreMode, i32),
        reverse: Vec<u32>,
        categories: Vec<(String, Vec<u32>)>,
    }

    fn item_text() -> impl Strategy<Value = String> {
        // Letters only: digits followed by ". " would make item-specific options (BDI style).
        "[A-Za-zé ,'-]{1,30}"
            .prop_map(|s| s.trim().to_owned())
            .prop_filter("non-empty", |s| !s.is_empty())
    }

    fn ids(n: usize, min: usize) -> impl Strategy<Value = Vec<u32>> {
        proptest::sample::subsequence((1..=u32::try_from(n).unwrap()).collect::<Vec<_>>(), min..=n)
    }

    fn scale() -> impl Strategy<Value = Scale> {
        (1..=12usize)
            .prop_flat_map(|n| {
                (
                    "[A-Z]{2,5}-[0-9]"
                        .prop_filter("not one of the eight", |k| target_emotion(k).is_none()),
                    proptest::collection::vec(item_text(), n),
                    proptest::sample::select(vec![(1, 5), (0, 3), (1, 7)]),
                    proptest::sample::select(vec![
                        ("SUM", ScoreMode::Sum, 1),
                        ("SUM*2", ScoreMode::Sum, 2),
                        ("MEAN", ScoreMode::Mean, 1),
                    ]),
                    ids(n, 0),
                    proptest::collection::vec(ids(n, 1), 1..=3),
                )
            })
            .prop_map(|(key, items, range, compute, reverse, cats)| Scale {
                key,
                items,
                range,
                compute,
                reverse,
                categories: cats
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| (format!("Category {i}"), c))
                    .collect(),
            })
    }

    fn questionnaires_json(scales: &[Scale]) -> String {
        let records: Vec<serde_json::Value> = scales
            .iter()
            .map(|s| {
                let questions: serde_json::Map<String, serde_json::Value> = s
                    .items
                    .iter()
                    .enumerate()
                    .map(|(i, t)| ((i + 1).to_string(), serde_json::Value::from(t.clone())))
                    .collect();
                serde_json::json!({
                    "name": s.key,
                    "questions": questions,
                    "compute_mode": s.compute.0,
                    "prompt": "Rate each statement. SCENARIO\nHere are the statements:",
                    "inner_setting": format!(
                        "You can only reply numbers from {} to {} in the following statements.",
                        s.range.0, s.range.1
                    ),
                    "scale": s.range.0 + s.range.1,
                    "reverse": s.reverse,
                    "categories": s.categories.iter().map(|(name, items)| {
                        serde_json::json!({"cat_name": name, "cat_questions": items})
                    }).collect::<Vec<_>>(),
                })
            })
            .collect();
        serde_json::Value::from(records).to_string()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn a_written_scale_reads_back_and_scores_by_its_rules(
            s in scale(),
            answers in proptest::collection::vec(0..1000i32, 12),
        ) {
            let parsed = parse_questionnaires_json(&questionnaires_json(std::slice::from_ref(&s))).unwrap();
            prop_assert_eq!(parsed.len(), 1);
            let inst = &parsed[0];
            prop_assert_eq!(&inst.key, &s.key);
            prop_assert_eq!((inst.min, inst.max), s.range);
            prop_assert_eq!((inst.scoring.mode, inst.scoring.multiplier), (s.compute.1, s.compute.2));
            prop_assert_eq!(inst.scoring.reverse_constant, s.range.0 + s.range.1);
            prop_assert_eq!(inst.items.iter().map(|i| i.text.clone()).collect::<Vec<_>>(), s.items.clone());
            for item in &inst.items {
                prop_assert_eq!(item.reverse, s.reverse.contains(&item.number));
                prop_assert!(item.options.is_empty());
            }
            let cats: Vec<(String, Vec<u32>)> = inst.categories.iter().map(|c| (c.name.clone(), c.items.clone())).collect();
            prop_assert_eq!(&cats, &s.categories);
            prop_assert_eq!(inst.paper_raw_sum, !s.reverse.is_empty() || s.compute.2 != 1);
            // Scoring: answers mapped into the range, then each category by hand.
            let (lo, hi) = s.range;
            let a: Vec<i32> = answers.iter().take(s.items.len()).map(|x| lo + x % (hi - lo + 1)).collect();
            let authored = inst.score(&a, Convention::Authored).unwrap();
            let paper = inst.score(&a, Convention::Paper).unwrap();
            for ((name, items), (au, pa)) in s.categories.iter().zip(authored.iter().zip(&paper)) {
                prop_assert_eq!(&au.name, name);
                let value = |n: &u32| {
                    let x = a[*n as usize - 1];
                    if s.reverse.contains(n) { lo + hi - x } else { x }
                };
                let sum: i32 = items.iter().map(value).sum();
                let want = match s.compute.1 {
                    ScoreMode::Sum => f64::from(sum * s.compute.2),
                    ScoreMode::Mean => f64::from(sum) / items.len() as f64,
                    ScoreMode::FreeText => unreachable!("the generator makes sum and mean only"),
                };
                prop_assert!((au.value - want).abs() < 1e-9, "{} vs {}", au.value, want);
                let raw: i32 = items.iter().map(|n| a[*n as usize - 1]).sum();
                let want_paper = if inst.paper_raw_sum { f64::from(raw) } else { want };
                prop_assert!((pa.value - want_paper).abs() < 1e-9);
            }
            // Out-of-range answers and a wrong count are refused, never scored.
            let mut bad = a.clone();
            bad[0] = hi + 1;
            prop_assert!(inst.score(&bad, Convention::Authored).is_err());
            prop_assert!(inst.score(&a[1..], Convention::Authored).is_err());
        }

        #[test]
        fn a_mutated_file_is_parsed_or_refused_without_panicking(
            scales in proptest::collection::vec(scale(), 1..=2),
            at in any::<proptest::sample::Index>(),
            junk in "[\\x00-\\x7f\"\\n,{}\\[\\]0-9]{0,8}",
            cut in any::<bool>(),
        ) {
            let file = questionnaires_json(&scales);
            let bounds: Vec<usize> = file.char_indices().map(|(i, _)| i).chain([file.len()]).collect();
            let i = bounds[at.index(bounds.len())];
            let mutated = if cut { file[..i].to_owned() } else { format!("{}{junk}{}", &file[..i], &file[i..]) };
            if let Ok(list) = parse_questionnaires_json(&mutated) {
                for inst in &list {
                    prop_assert!(inst.validate().is_ok());
                }
            }
        }

        #[test]
        fn arbitrary_text_is_parsed_or_refused_without_panicking(s in "\\PC{0,200}") {
            let _ = parse_questionnaires_json(&s);
        }
    }
}
