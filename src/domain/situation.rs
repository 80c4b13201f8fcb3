//! Emotion-evoking situations of EmotionBench and the importers for their three file formats.
//!
//! A situation is identified by a stable key such as `Anger-0_scenario-3` (emotion, 0-based
//! factor position, 0-based scenario position), the scheme used by the upstream result files.
//! The importers are pure: they take the file content and never touch the file system, so the
//! caller adds the file name to an [`ImportError`].

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::ImportError;

/// The eight emotions of EmotionBench, in the paper's order.
pub const EMOTIONS: [&str; 8] = [
    "Anger",
    "Anxiety",
    "Depression",
    "Frustration",
    "Jealousy",
    "Guilt",
    "Fear",
    "Embarrassment",
];

/// Exact name match, case-insensitive, returning the canonical spelling.
pub fn canonical_emotion(name: &str) -> Option<&'static str> {
    EMOTIONS
        .iter()
        .copied()
        .find(|emotion| emotion.eq_ignore_ascii_case(name))
}

/// One situation that participants (human or LLM) imagine before rating their feelings again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Situation {
    /// Stable key, e.g. `"Anger-0_scenario-3"`.
    pub key: String,
    /// Canonical emotion name, one of [`EMOTIONS`].
    pub emotion: String,
    /// 0-based position of the factor within the emotion.
    pub factor_index: u32,
    pub factor_name: String,
    /// 0-based position of the scenario within the factor.
    pub scenario_index: u32,
    pub text: String,
    /// The key of the situation this text rewrites with another valence (#18), `None` for an
    /// original. A variant shares its original's emotion, factor and scenario position.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_of: Option<String>,
    /// The valence the text was written with. EmotionBench's situations are all negative, so
    /// that is what a file without a `valence` column means (and what is left out when
    /// serialised, keeping older study definition files byte for byte).
    #[serde(default, skip_serializing_if = "Valence::is_negative")]
    pub valence: Valence,
}

/// A situation's valence (#18): the paper's situations are negative; the valence control
/// rewrites some of them as neutral or positive to show that a model's change follows the
/// valence and not the mere presence of a story.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Valence {
    #[default]
    Negative,
    Neutral,
    Positive,
}

impl Valence {
    pub const ALL: [Valence; 3] = [Valence::Negative, Valence::Neutral, Valence::Positive];

    /// The stored and written spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Valence::Negative => "negative",
            Valence::Neutral => "neutral",
            Valence::Positive => "positive",
        }
    }

    /// Exact spelling, case-insensitive.
    pub fn parse(s: &str) -> Option<Valence> {
        Valence::ALL
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(s.trim()))
    }

    pub fn is_negative(&self) -> bool {
        *self == Valence::Negative
    }

    /// A comma-separated list (`negative,positive`), for the CLI and the run form.
    pub fn parse_list(s: &str) -> Result<Vec<Valence>, String> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let v = Valence::parse(part).ok_or_else(|| {
                format!("unknown valence {part:?}: use negative, neutral or positive")
            })?;
            if !out.contains(&v) {
                out.push(v);
            }
        }
        if out.is_empty() {
            return Err("the list of valences is empty".to_owned());
        }
        Ok(out)
    }
}

impl std::fmt::Display for Valence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The file formats [`parse_situations`] understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SituationFormat {
    /// Upstream `situations.json`: emotions → factors → scenarios.
    EmotionBenchJson,
    /// Upstream `situations/situations.csv`: one column per factor (`Anger-0`, …).
    EmotionBenchWideCsv,
    /// One row per situation with `key`, `emotion`, `factor`/`factor_name` and `text` columns.
    TidyCsv,
    /// Upstream `doc.csv`, the prompts of the 175 tested situations: one column per trial
    /// (`Anger-0_scenario-3_test-0_order-0`), the prompt in the first row.
    EmotionBenchDocCsv,
}

impl SituationFormat {
    /// Human-readable name, for messages and reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::EmotionBenchJson => "EmotionBench JSON",
            Self::EmotionBenchWideCsv => "EmotionBench wide CSV",
            Self::TidyCsv => "tidy CSV",
            Self::EmotionBenchDocCsv => "EmotionBench doc.csv",
        }
    }
}

impl std::fmt::Display for SituationFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parsed situation file; the order of `situations` is the order of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SituationFile {
    pub format: SituationFormat,
    pub situations: Vec<Situation>,
}

/// Builds the key of a situation: `situation_key("Anger", 0, 3) == "Anger-0_scenario-3"`.
///
/// A known emotion is written in its canonical spelling so that keys stay comparable.
pub fn situation_key(emotion: &str, factor_index: u32, scenario_index: u32) -> String {
    let emotion = canonical_emotion(emotion).unwrap_or(emotion);
    format!("{emotion}-{factor_index}_scenario-{scenario_index}")
}

/// Inverse of [`situation_key`]: `Some((canonical emotion, factor, scenario))` or `None`.
///
/// Strict on purpose (canonical emotion spelling, no sign, no leading zeros): a key is an
/// identifier, so only strings that `situation_key` can produce are accepted.
pub fn parse_key(key: &str) -> Option<(&'static str, u32, u32)> {
    let (head, scenario) = key.split_once("_scenario-")?;
    let (emotion, factor) = head.rsplit_once('-')?;
    let emotion = EMOTIONS.iter().copied().find(|known| *known == emotion)?;
    Some((
        emotion,
        parse_plain_u32(factor)?,
        parse_plain_u32(scenario)?,
    ))
}

/// Parses a situation file, detecting its format from the content (not the file name).
///
/// The first non-whitespace character `{` or `[` means JSON. Otherwise the content is CSV:
/// a header with `key` and `text` columns is tidy, a header whose cells all look like
/// `Emotion-N` is wide. Texts and names are trimmed; everything else is kept as in the file.
pub fn parse_situations(content: &str) -> Result<SituationFile, ImportError> {
    let content = content.strip_prefix('\u{feff}').unwrap_or(content);
    match content.trim_start().chars().next() {
        None => Err(ImportError::new("line 1", "the file is empty")),
        Some('{' | '[') => parse_json(content),
        Some(_) => parse_csv(content),
    }
}

// ---------------------------------------------------------------------------------------------
// Shared helpers

/// Digits only, no leading zeros: the form `situation_key` writes.
fn parse_plain_u32(digits: &str) -> Option<u32> {
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    digits.parse().ok()
}

fn to_u32(index: usize, location: impl Into<String>) -> Result<u32, ImportError> {
    u32::try_from(index).map_err(|_| ImportError::new(location, "too many entries"))
}

fn known_emotions() -> String {
    EMOTIONS.join(", ")
}

// ---------------------------------------------------------------------------------------------
// JSON

#[derive(Deserialize)]
struct JsonRoot {
    emotions: Vec<JsonEmotion>,
}

#[derive(Deserialize)]
struct JsonEmotion {
    name: String,
    factors: Vec<JsonFactor>,
}

#[derive(Deserialize)]
struct JsonFactor {
    name: String,
    scenarios: Vec<String>,
}

fn parse_json(content: &str) -> Result<SituationFile, ImportError> {
    let root: JsonRoot = serde_json::from_str(content).map_err(json_error)?;
    let mut situations = Vec::new();
    let mut seen: Vec<&'static str> = Vec::new();
    for emotion in &root.emotions {
        let name = emotion.name.trim();
        let emotion_location = format!("emotion {name:?}");
        let canonical = canonical_emotion(name).ok_or_else(|| {
            ImportError::new(
                &emotion_location,
                format!("unknown emotion; expected one of {}", known_emotions()),
            )
        })?;
        // A second entry would silently produce the same keys as the first.
        if seen.contains(&canonical) {
            return Err(ImportError::new(
                emotion_location,
                "emotion is listed twice",
            ));
        }
        seen.push(canonical);
        for (f, factor) in emotion.factors.iter().enumerate() {
            let factor_location = format!("emotion {canonical:?}, factor {f}");
            let factor_index = to_u32(f, &factor_location)?;
            let factor_name = factor.name.trim();
            if factor_name.is_empty() {
                return Err(ImportError::new(factor_location, "empty factor name"));
            }
            for (s, text) in factor.scenarios.iter().enumerate() {
                let location = format!("{factor_location}, scenario {s}");
                let scenario_index = to_u32(s, &location)?;
                let text = text.trim();
                if text.is_empty() {
                    return Err(ImportError::new(location, "empty situation text"));
                }
                situations.push(Situation {
                    key: situation_key(canonical, factor_index, scenario_index),
                    emotion: canonical.to_string(),
                    factor_index,
                    factor_name: factor_name.to_string(),
                    scenario_index,
                    text: text.to_string(),
                    variant_of: None,
                    valence: Valence::Negative,
                });
            }
        }
    }
    if situations.is_empty() {
        return Err(ImportError::new(
            "emotions",
            "no situations: every emotion has an empty factor or scenario list",
        ));
    }
    Ok(SituationFile {
        format: SituationFormat::EmotionBenchJson,
        situations,
    })
}

fn json_error(err: serde_json::Error) -> ImportError {
    let message = err.to_string();
    // serde_json appends the position to its message; it goes into `location` instead.
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    let detail = message.strip_suffix(&suffix).unwrap_or(&message);
    let location = if err.line() == 0 {
        "JSON".to_string()
    } else {
        format!("line {}, column {}", err.line(), err.column())
    };
    let reason = match err.classify() {
        serde_json::error::Category::Data => format!(
            "unexpected structure: {detail} (expected {{\"emotions\":[{{\"name\", \"factors\":[{{\"name\", \"scenarios\":[text, ...]}}]}}]}})"
        ),
        _ => format!("invalid JSON: {detail}"),
    };
    ImportError::new(location, reason)
}

// ---------------------------------------------------------------------------------------------
// CSV

type Records<'a> = csv::StringRecordsIntoIter<&'a [u8]>;

fn parse_csv(content: &str) -> Result<SituationFile, ImportError> {
    // Flexible: ragged rows get their own, clearer messages below.
    let mut records = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(content.as_bytes())
        .into_records();
    let header = match records.next() {
        None => return Err(ImportError::new("line 1", "the file is empty")),
        Some(record) => record.map_err(csv_error)?,
    };
    let names: Vec<String> = header.iter().map(|cell| cell.trim().to_string()).collect();
    let has = |wanted: &str| names.iter().any(|name| name.eq_ignore_ascii_case(wanted));

    if has("key") && has("text") {
        return parse_tidy(&names, records, content);
    }
    if is_doc_header(&names) {
        return parse_doc(&names, records);
    }
    if !names.is_empty() && names.iter().all(|name| split_wide_column(name).is_some()) {
        return parse_wide(&names, records, content);
    }
    // Probably a tidy file with a column missing: naming it helps more than "unknown format".
    if ["key", "text", "emotion", "factor", "factor_name"]
        .iter()
        .any(|name| has(name))
    {
        return parse_tidy(&names, records, content);
    }
    Err(ImportError::new(
        "line 1",
        "unrecognised header: expected a tidy CSV (columns key, emotion, factor, text) \
         a wide EmotionBench CSV (columns Anger-0, Anger-1, ...) or an EmotionBench doc.csv \
         (columns question-0, order-0, Anger-0_scenario-0_test-0_order-0, ...)",
    ))
}

/// The line each record starts on, counted from the content. The csv crate's own line is one
/// short for every record after a CRLF (it takes the position before the LF), and spreadsheets
/// on Windows write CRLF. Records are asked for in order, so counting is incremental.
struct Lines<'c> {
    content: &'c [u8],
    byte: usize,
    line: u64,
}

impl<'c> Lines<'c> {
    fn new(content: &'c str) -> Self {
        Lines {
            content: content.as_bytes(),
            byte: 0,
            line: 1,
        }
    }

    fn of(&mut self, record: &csv::StringRecord) -> u64 {
        let Some(pos) = record.position() else {
            return 0;
        };
        let mut start = usize::try_from(pos.byte()).unwrap_or(usize::MAX);
        if self.content.get(start) == Some(&b'\n') {
            start += 1;
        }
        let start = start.min(self.content.len());
        if start >= self.byte {
            let skipped = self.content[self.byte..start]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            self.line += skipped as u64;
            self.byte = start;
        }
        self.line
    }
}

fn csv_error(err: csv::Error) -> ImportError {
    let location = err
        .position()
        .map_or_else(|| "CSV".to_string(), |pos| format!("line {}", pos.line()));
    ImportError::new(location, format!("invalid CSV: {err}"))
}

/// `"Anger-0"` → `Some(("Anger", "0"))`: letters, a dash, digits.
fn split_wide_column(name: &str) -> Option<(&str, &str)> {
    let (emotion, index) = name.rsplit_once('-')?;
    let looks_right = !emotion.is_empty()
        && emotion.chars().all(|c| c.is_ascii_alphabetic())
        && !index.is_empty()
        && index.chars().all(|c| c.is_ascii_digit());
    looks_right.then_some((emotion, index))
}

struct WideColumn<'h> {
    header: &'h str,
    emotion: &'static str,
    factor_index: u32,
    factor_name: String,
    texts: Vec<String>,
    /// Line of the first empty cell: anything below it would be a gap.
    ended_at: Option<u64>,
}

fn parse_wide(
    names: &[String],
    mut records: Records<'_>,
    content: &str,
) -> Result<SituationFile, ImportError> {
    let mut lines = Lines::new(content);
    let mut columns: Vec<WideColumn<'_>> = Vec::with_capacity(names.len());
    for name in names {
        let location = format!("line 1, column {name:?}");
        let (emotion, index) = split_wide_column(name)
            .ok_or_else(|| ImportError::new(&location, "expected a column named Emotion-N"))?;
        let emotion = canonical_emotion(emotion).ok_or_else(|| {
            ImportError::new(
                &location,
                format!(
                    "unknown emotion column; expected one of {}",
                    known_emotions()
                ),
            )
        })?;
        let factor_index: u32 = index
            .parse()
            .map_err(|_| ImportError::new(&location, "factor number is too large"))?;
        if columns
            .iter()
            .any(|c| c.emotion == emotion && c.factor_index == factor_index)
        {
            return Err(ImportError::new(location, "duplicate column"));
        }
        columns.push(WideColumn {
            header: name,
            emotion,
            factor_index,
            factor_name: String::new(),
            texts: Vec::new(),
            ended_at: None,
        });
    }

    let factor_row = match records.next() {
        None => {
            return Err(ImportError::new(
                "line 2",
                "missing the row of factor names below the header",
            ));
        }
        Some(record) => record.map_err(csv_error)?,
    };
    let line = lines.of(&factor_row);
    check_row_width(&factor_row, columns.len(), line)?;
    for (i, column) in columns.iter_mut().enumerate() {
        let factor_name = factor_row.get(i).unwrap_or("").trim();
        if factor_name.is_empty() {
            return Err(ImportError::new(
                format!("line {line}, column {:?}", column.header),
                "empty factor name",
            ));
        }
        column.factor_name = factor_name.to_string();
    }

    for record in records {
        let record = record.map_err(csv_error)?;
        let line = lines.of(&record);
        check_row_width(&record, columns.len(), line)?;
        for (i, column) in columns.iter_mut().enumerate() {
            let text = record.get(i).unwrap_or("").trim();
            match (text.is_empty(), column.ended_at) {
                (true, None) => column.ended_at = Some(line),
                (true, Some(_)) => {}
                (false, Some(empty_line)) => {
                    return Err(ImportError::new(
                        format!("line {line}, column {:?}", column.header),
                        format!(
                            "gap in the column: this cell follows an empty cell at line {empty_line}"
                        ),
                    ));
                }
                (false, None) => column.texts.push(text.to_string()),
            }
        }
    }

    let mut situations = Vec::new();
    for column in columns {
        for (s, text) in column.texts.into_iter().enumerate() {
            let scenario_index = to_u32(s, format!("column {:?}", column.header))?;
            situations.push(Situation {
                key: situation_key(column.emotion, column.factor_index, scenario_index),
                emotion: column.emotion.to_string(),
                factor_index: column.factor_index,
                factor_name: column.factor_name.clone(),
                scenario_index,
                text,
                variant_of: None,
                valence: Valence::Negative,
            });
        }
    }
    if situations.is_empty() {
        return Err(ImportError::new(
            "line 3",
            "no situations below the row of factor names",
        ));
    }
    Ok(SituationFile {
        format: SituationFormat::EmotionBenchWideCsv,
        situations,
    })
}

fn check_row_width(record: &csv::StringRecord, width: usize, line: u64) -> Result<(), ImportError> {
    if record.len() > width {
        return Err(ImportError::new(
            format!("line {line}"),
            format!(
                "row has {} cells but the header has {width} columns (check the quoting of commas)",
                record.len()
            ),
        ));
    }
    Ok(())
}

/// Column positions of a tidy CSV, with the header spellings for error messages.
struct TidyColumns<'h> {
    key: (usize, &'h str),
    emotion: (usize, &'h str),
    factor: (usize, &'h str),
    text: (usize, &'h str),
    factor_index: Option<(usize, &'h str)>,
    scenario_index: Option<(usize, &'h str)>,
    /// The valence control (#18): which original a row rewrites, and with which valence.
    variant_of: Option<(usize, &'h str)>,
    valence: Option<(usize, &'h str)>,
}

fn find_tidy_columns(names: &[String]) -> Result<TidyColumns<'_>, ImportError> {
    let find = |wanted: &str| -> Result<Option<(usize, &str)>, ImportError> {
        let mut found = names
            .iter()
            .enumerate()
            .filter(|(_, name)| name.eq_ignore_ascii_case(wanted));
        let first = found.next();
        if let Some((_, name)) = found.next() {
            return Err(ImportError::new(
                format!("line 1, column {name:?}"),
                "duplicate column",
            ));
        }
        Ok(first.map(|(i, name)| (i, name.as_str())))
    };
    let key = find("key")?;
    let emotion = find("emotion")?;
    // `factor_name` wins because a file may use `factor` for something else, e.g. the index.
    let factor = match find("factor_name")? {
        Some(found) => Some(found),
        None => find("factor")?,
    };
    let text = find("text")?;
    let missing: Vec<&str> = [
        (key.is_none(), "\"key\""),
        (emotion.is_none(), "\"emotion\""),
        (factor.is_none(), "\"factor\" (or \"factor_name\")"),
        (text.is_none(), "\"text\""),
    ]
    .iter()
    .filter(|(absent, _)| *absent)
    .map(|(_, name)| *name)
    .collect();
    match (key, emotion, factor, text) {
        (Some(key), Some(emotion), Some(factor), Some(text)) => Ok(TidyColumns {
            key,
            emotion,
            factor,
            text,
            factor_index: find("factor_index")?,
            scenario_index: find("scenario_index")?,
            variant_of: find("variant_of")?,
            valence: find("valence")?,
        }),
        _ => Err(ImportError::new(
            "line 1",
            format!("missing required column {}", missing.join(", ")),
        )),
    }
}

fn valid_key(key: &str) -> bool {
    (1..=100).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// An index cell: `Ok(None)` when the column is absent or the cell empty.
fn index_cell(
    record: &csv::StringRecord,
    column: Option<(usize, &str)>,
    line: u64,
) -> Result<Option<u32>, ImportError> {
    let Some((i, name)) = column else {
        return Ok(None);
    };
    let cell = record.get(i).unwrap_or("").trim();
    if cell.is_empty() {
        return Ok(None);
    }
    cell.parse().map(Some).map_err(|_| {
        ImportError::new(
            format!("line {line}, column {name:?}"),
            format!("{cell:?} is not a non-negative integer"),
        )
    })
}

fn parse_tidy(
    names: &[String],
    records: Records<'_>,
    content: &str,
) -> Result<SituationFile, ImportError> {
    let mut lines = Lines::new(content);
    let cols = find_tidy_columns(names)?;
    let mut placer = TidyPlacer::default();
    let mut situations = Vec::new();
    let mut variants = Vec::new();
    for record in records {
        let record = record.map_err(csv_error)?;
        let line = lines.of(&record);
        // Spreadsheet exports often end with rows of empty cells.
        if record.iter().all(|cell| cell.trim().is_empty()) {
            continue;
        }
        let row = read_tidy_row(&record, &cols, names.len(), line)?;
        match row.variant_of {
            // A variant takes its original's place, which may come later in the file.
            Some(original) => {
                placer.claim_key(row.key, &cols, line)?;
                variants.push(PendingVariant {
                    at: situations.len(),
                    line,
                    factor: row.explicit_factor.or(row.from_key.map(|(_, f, _)| f)),
                    scenario: row.explicit_scenario.or(row.from_key.map(|(_, _, s)| s)),
                });
                let valence = row.valence.ok_or_else(|| {
                    ImportError::new(
                        tidy_at(line, cols.valence.map_or("valence", |(_, n)| n)),
                        format!(
                            "a variant (variant_of {original:?}) needs its valence: \
                             negative, neutral or positive"
                        ),
                    )
                })?;
                situations.push(Situation {
                    key: row.key.to_string(),
                    emotion: row.emotion.to_string(),
                    factor_index: 0,
                    factor_name: row.factor_name.to_string(),
                    scenario_index: 0,
                    text: row.text.to_string(),
                    variant_of: Some(original.to_string()),
                    valence,
                });
            }
            None => {
                let mut placed = placer.place(&row, &cols, line)?;
                placed.valence = row.valence.unwrap_or_default();
                situations.push(placed);
            }
        }
    }
    resolve_variants(&mut situations, &variants, &cols)?;
    if situations.is_empty() {
        return Err(ImportError::new(
            "line 2",
            "no situations: the file has a header but no rows",
        ));
    }
    Ok(SituationFile {
        format: SituationFormat::TidyCsv,
        situations,
    })
}

fn tidy_at(line: u64, column: &str) -> String {
    format!("line {line}, column {column:?}")
}

/// The cells of one tidy row, each checked on its own and against the key; where the row goes
/// in its set is decided by [`TidyPlacer`].
struct TidyRow<'r> {
    key: &'r str,
    emotion: &'static str,
    factor_name: &'r str,
    text: &'r str,
    /// The emotion, factor and scenario an EmotionBench-style key carries.
    from_key: Option<(&'static str, u32, u32)>,
    explicit_factor: Option<u32>,
    explicit_scenario: Option<u32>,
    /// The original's key, for a valence variant.
    variant_of: Option<&'r str>,
    /// `None` when the column is absent or the cell empty.
    valence: Option<Valence>,
}

/// A variant row read before its original's place is known.
struct PendingVariant {
    /// Index into the file's situations.
    at: usize,
    line: u64,
    /// What the row's index cells or EmotionBench-style key say, to check against the original.
    factor: Option<u32>,
    scenario: Option<u32>,
}

/// Gives each variant its original's place (emotion, factor, scenario position), after
/// checking the link: the original is in the file, is not itself a variant, has the same
/// emotion and factor, another valence, and no other variant of that valence.
fn resolve_variants(
    situations: &mut [Situation],
    pending: &[PendingVariant],
    cols: &TidyColumns<'_>,
) -> Result<(), ImportError> {
    let by_key: HashMap<String, usize> = situations
        .iter()
        .enumerate()
        .map(|(i, s)| (s.key.clone(), i))
        .collect();
    let link_column = cols.variant_of.map_or("variant_of", |(_, n)| n);
    let valence_column = cols.valence.map_or("valence", |(_, n)| n);
    let mut taken: HashMap<(String, Valence), u64> = HashMap::new();
    for p in pending {
        let variant = situations[p.at].clone();
        let target = variant.variant_of.clone().unwrap_or_default();
        let at = |column: &str| tidy_at(p.line, column);
        if target == variant.key {
            return Err(ImportError::new(
                at(link_column),
                format!("{target:?} names the row itself; variant_of is the original's key"),
            ));
        }
        let Some(&t) = by_key.get(&target) else {
            return Err(ImportError::new(
                at(link_column),
                format!("variant_of {target:?} names no situation of this file"),
            ));
        };
        let original = &situations[t];
        if let Some(further) = &original.variant_of {
            return Err(ImportError::new(
                at(link_column),
                format!(
                    "{target:?} is itself a variant (of {further:?}): link every variant to \
                     the original"
                ),
            ));
        }
        if original.emotion != variant.emotion {
            return Err(ImportError::new(
                at(cols.emotion.1),
                format!(
                    "a variant keeps its original's emotion: {target:?} is {}, this row says {}",
                    original.emotion, variant.emotion
                ),
            ));
        }
        if original.factor_name != variant.factor_name {
            return Err(ImportError::new(
                at(cols.factor.1),
                format!(
                    "a variant keeps its original's factor: {target:?} is in {:?}, this row \
                     says {:?}",
                    original.factor_name, variant.factor_name
                ),
            ));
        }
        let (f, s) = (original.factor_index, original.scenario_index);
        if p.factor.is_some_and(|x| x != f) || p.scenario.is_some_and(|x| x != s) {
            return Err(ImportError::new(
                format!("line {}", p.line),
                format!(
                    "a variant takes its original's place: {target:?} is factor {f}, scenario \
                     {s}; this row's key or index columns say otherwise"
                ),
            ));
        }
        if original.valence == variant.valence {
            return Err(ImportError::new(
                at(valence_column),
                format!(
                    "a variant needs another valence than its original ({target:?} is {})",
                    original.valence
                ),
            ));
        }
        if let Some(first) = taken.insert((target.clone(), variant.valence), p.line) {
            return Err(ImportError::new(
                at(valence_column),
                format!(
                    "a second {} variant of {target:?} (the first is at line {first})",
                    variant.valence
                ),
            ));
        }
        let v = &mut situations[p.at];
        v.factor_index = f;
        v.scenario_index = s;
    }
    Ok(())
}

fn read_tidy_row<'r>(
    record: &'r csv::StringRecord,
    cols: &TidyColumns<'_>,
    width: usize,
    line: u64,
) -> Result<TidyRow<'r>, ImportError> {
    if record.len() != width {
        return Err(ImportError::new(
            format!("line {line}"),
            format!(
                "row has {} cells but the header has {width} columns (check the quoting of commas)",
                record.len(),
            ),
        ));
    }
    let cell = |(i, _): (usize, &str)| record.get(i).unwrap_or("").trim();

    let key = cell(cols.key);
    if !valid_key(key) {
        return Err(ImportError::new(
            tidy_at(line, cols.key.1),
            format!("invalid key {key:?}: use 1 to 100 characters among A-Z a-z 0-9 . _ -"),
        ));
    }
    let emotion_cell = cell(cols.emotion);
    let emotion = canonical_emotion(emotion_cell).ok_or_else(|| {
        ImportError::new(
            tidy_at(line, cols.emotion.1),
            format!(
                "unknown emotion {emotion_cell:?}; expected one of {}",
                known_emotions()
            ),
        )
    })?;
    let factor_name = cell(cols.factor);
    if factor_name.is_empty() {
        return Err(ImportError::new(
            tidy_at(line, cols.factor.1),
            "empty factor name",
        ));
    }
    let text = cell(cols.text);
    if text.is_empty() {
        return Err(ImportError::new(
            tidy_at(line, cols.text.1),
            "empty situation text",
        ));
    }
    let from_key = parse_key(key);
    if let Some((key_emotion, _, _)) = from_key
        && key_emotion != emotion
    {
        return Err(ImportError::new(
            tidy_at(line, cols.emotion.1),
            format!("key {key:?} belongs to {key_emotion}, but the row says {emotion}"),
        ));
    }
    let row = TidyRow {
        key,
        emotion,
        factor_name,
        text,
        from_key,
        explicit_factor: index_cell(record, cols.factor_index, line)?,
        explicit_scenario: index_cell(record, cols.scenario_index, line)?,
        variant_of: variant_cell(record, cols.variant_of, line)?,
        valence: valence_cell(record, cols.valence, line)?,
    };
    check_against_key(&row, cols, line)?;
    Ok(row)
}

/// A `variant_of` cell: `Ok(None)` when the column is absent or the cell empty.
fn variant_cell<'r>(
    record: &'r csv::StringRecord,
    column: Option<(usize, &str)>,
    line: u64,
) -> Result<Option<&'r str>, ImportError> {
    let Some((i, name)) = column else {
        return Ok(None);
    };
    let cell = record.get(i).unwrap_or("").trim();
    if cell.is_empty() {
        return Ok(None);
    }
    if !valid_key(cell) {
        return Err(ImportError::new(
            tidy_at(line, name),
            format!("invalid key {cell:?}: use 1 to 100 characters among A-Z a-z 0-9 . _ -"),
        ));
    }
    Ok(Some(cell))
}

/// A `valence` cell: `Ok(None)` when the column is absent or the cell empty.
fn valence_cell(
    record: &csv::StringRecord,
    column: Option<(usize, &str)>,
    line: u64,
) -> Result<Option<Valence>, ImportError> {
    let Some((i, name)) = column else {
        return Ok(None);
    };
    let cell = record.get(i).unwrap_or("").trim();
    if cell.is_empty() {
        return Ok(None);
    }
    Valence::parse(cell).map(Some).ok_or_else(|| {
        ImportError::new(
            tidy_at(line, name),
            format!("unknown valence {cell:?}; expected negative, neutral or positive"),
        )
    })
}

/// An EmotionBench-style key carries the position; it must not contradict the index columns.
fn check_against_key(
    row: &TidyRow<'_>,
    cols: &TidyColumns<'_>,
    line: u64,
) -> Result<(), ImportError> {
    let key = row.key;
    if let (Some((_, f, s)), Some((_, f_name))) = (row.from_key, cols.factor_index)
        && row.explicit_factor.is_some_and(|explicit| explicit != f)
    {
        return Err(ImportError::new(
            tidy_at(line, f_name),
            format!("key {key:?} says factor {f}, scenario {s}; the column disagrees"),
        ));
    }
    if let (Some((_, f, s)), Some((_, s_name))) = (row.from_key, cols.scenario_index)
        && row.explicit_scenario.is_some_and(|explicit| explicit != s)
    {
        return Err(ImportError::new(
            tidy_at(line, s_name),
            format!("key {key:?} says factor {f}, scenario {s}; the column disagrees"),
        ));
    }
    Ok(())
}

/// What the rows read so far have claimed: keys, places, factor names and the next free
/// factor and scenario indices, so a row without explicit indices gets the next ones.
#[derive(Default)]
struct TidyPlacer {
    key_lines: HashMap<String, u64>,
    positions: HashMap<(&'static str, u32, u32), (String, u64)>,
    factor_names: HashMap<(&'static str, u32), (String, u64)>,
    factor_by_name: HashMap<(&'static str, String), u32>,
    next_factor: HashMap<&'static str, u32>,
    running: HashMap<(&'static str, u32), u32>,
}

impl TidyPlacer {
    fn place(
        &mut self,
        row: &TidyRow<'_>,
        cols: &TidyColumns<'_>,
        line: u64,
    ) -> Result<Situation, ImportError> {
        let factor_index = self.factor_index(row, line)?;
        self.name_factor(row, factor_index, cols, line)?;
        let scenario_index = self.scenario_index(row, factor_index);
        self.claim(row, factor_index, scenario_index, cols, line)?;
        Ok(Situation {
            key: row.key.to_string(),
            emotion: row.emotion.to_string(),
            factor_index,
            factor_name: row.factor_name.to_string(),
            scenario_index,
            text: row.text.to_string(),
            variant_of: None,
            valence: Valence::Negative,
        })
    }

    /// Explicit, from the key, the factor's index by name, or the emotion's next free one.
    fn factor_index(&mut self, row: &TidyRow<'_>, line: u64) -> Result<u32, ImportError> {
        let emotion = row.emotion;
        let factor_index = match (row.explicit_factor, row.from_key) {
            (Some(f), _) | (None, Some((_, f, _))) => f,
            (None, None) => match self
                .factor_by_name
                .get(&(emotion, row.factor_name.to_string()))
            {
                Some(&f) => f,
                None => self.next_factor.get(emotion).copied().unwrap_or(0),
            },
        };
        self.factor_by_name
            .entry((emotion, row.factor_name.to_string()))
            .or_insert(factor_index);
        let next = factor_index
            .checked_add(1)
            .ok_or_else(|| ImportError::new(format!("line {line}"), "factor index is too large"))?;
        let slot = self.next_factor.entry(emotion).or_insert(0);
        *slot = (*slot).max(next);
        Ok(factor_index)
    }

    /// One factor has one name throughout the file.
    fn name_factor(
        &mut self,
        row: &TidyRow<'_>,
        factor_index: u32,
        cols: &TidyColumns<'_>,
        line: u64,
    ) -> Result<(), ImportError> {
        let (emotion, factor_name) = (row.emotion, row.factor_name);
        match self.factor_names.get(&(emotion, factor_index)) {
            Some((known, first_line)) if known != factor_name => Err(ImportError::new(
                tidy_at(line, cols.factor.1),
                format!(
                    "factor {factor_index} of {emotion} is named {known:?} at line {first_line} \
                     but {factor_name:?} here"
                ),
            )),
            Some(_) => Ok(()),
            None => {
                self.factor_names
                    .insert((emotion, factor_index), (factor_name.to_string(), line));
                Ok(())
            }
        }
    }

    fn scenario_index(&mut self, row: &TidyRow<'_>, factor_index: u32) -> u32 {
        let seen_in_factor = self.running.entry((row.emotion, factor_index)).or_insert(0);
        let scenario_index = match (row.explicit_scenario, row.from_key) {
            (Some(s), _) | (None, Some((_, _, s))) => s,
            (None, None) => *seen_in_factor,
        };
        *seen_in_factor = seen_in_factor.saturating_add(1);
        scenario_index
    }

    /// A key is used once (a variant's too).
    fn claim_key(
        &mut self,
        key: &str,
        cols: &TidyColumns<'_>,
        line: u64,
    ) -> Result<(), ImportError> {
        if let Some(first_line) = self.key_lines.get(key) {
            return Err(ImportError::new(
                tidy_at(line, cols.key.1),
                format!("duplicate key {key:?} (first at line {first_line})"),
            ));
        }
        self.key_lines.insert(key.to_string(), line);
        Ok(())
    }

    /// A key, and a place, are used once.
    fn claim(
        &mut self,
        row: &TidyRow<'_>,
        factor_index: u32,
        scenario_index: u32,
        cols: &TidyColumns<'_>,
        line: u64,
    ) -> Result<(), ImportError> {
        let (key, emotion) = (row.key, row.emotion);
        self.claim_key(key, cols, line)?;
        // Two rows in the same place would be merged by any per-factor analysis.
        if let Some((other_key, other_line)) =
            self.positions.get(&(emotion, factor_index, scenario_index))
        {
            return Err(ImportError::new(
                format!("line {line}"),
                format!(
                    "emotion {emotion}, factor {factor_index}, scenario {scenario_index} \
                     is already used by key {other_key:?} at line {other_line}"
                ),
            ));
        }
        self.positions.insert(
            (emotion, factor_index, scenario_index),
            (key.to_string(), line),
        );
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The factor catalogue

/// The factors of each emotion, in EmotionBench's order (the paper's Table 1 and the upstream
/// `situations.json`). `doc.csv` names a situation only by emotion and factor position, so the
/// names a set imported from it carries come from here.
pub const FACTORS: [(&str, &[&str]); 8] = [
    (
        "Anger",
        &[
            "Facing Self-Opinioned People",
            "Blaming, Slandering, and Tattling",
            "Bullying, Teasing, Insulting, and Disparaging",
            "Silly and Thoughtless Behaviors",
            "Driving Situations",
        ],
    ),
    (
        "Anxiety",
        &[
            "External Factors",
            "Self-Imposed Pressure",
            "Personal Growth and Relationships",
            "Uncertainty and Unknowns",
        ],
    ),
    (
        "Depression",
        &[
            "Failure of Important Goals",
            "Death of Loved Ones",
            "Romantic Loss",
            "Chronic Stress",
            "Social Isolation",
            "Winter",
        ],
    ),
    (
        "Frustration",
        &[
            "Disappointments and Letdowns",
            "Unforeseen Obstacles and Accidents",
            "Miscommunications and Misunderstanding",
            "Rejection and Interpersonal Issues",
        ],
    ),
    (
        "Jealousy",
        &[
            "Romantic (Opposite Gender)",
            "Romantic (Same Gender)",
            "Material Possession",
            "Experiential",
        ],
    ),
    (
        "Guilt",
        &[
            "Betrayal and Deception",
            "Relationship and Interpersonal",
            "Broken Promises and Responsibilities",
            "Personal and Moral",
        ],
    ),
    (
        "Fear",
        &[
            "Social Fears",
            "Agoraphobia Fears",
            "Injury Fears",
            "Dangerous Environments",
            "Harmless Animals",
        ],
    ),
    (
        "Embarrassment",
        &[
            "Intimate",
            "Stranger",
            "Sticky Scenarios",
            "Centre of Attention",
        ],
    ),
];

/// The catalogue's name of factor `factor_index` (0-based) of `emotion`, if it has one.
pub fn catalogue_factor_name(emotion: &str, factor_index: u32) -> Option<&'static str> {
    let emotion = canonical_emotion(emotion)?;
    let (_, factors) = FACTORS.iter().find(|(name, _)| *name == emotion)?;
    factors.get(usize::try_from(factor_index).ok()?).copied()
}

// ---------------------------------------------------------------------------------------------
// doc.csv

/// The words `doc.csv` puts before each situation's quoted text in its prompt row.
const DOC_PROMPT_PREFIX: &str = "Imagine you are the protagonist in the scenario:";

/// A `doc.csv` header starts with `question-0`, or has a trial column.
fn is_doc_header(names: &[String]) -> bool {
    names.first().is_some_and(|n| n == "question-0")
        || names.iter().any(|n| matches!(doc_column(n), Ok(Some(_))))
}

/// A `doc.csv` column: `Ok(None)` for the prompt and the columns without a situation
/// (`question-N`, `order-N`, `General_test-T_order-O`), `Ok(Some((emotion, factor, scenario,
/// test, order)))` for a trial, `Err(reason)` for anything else.
#[allow(clippy::type_complexity)]
fn doc_column(name: &str) -> Result<Option<(&'static str, u32, u32, u32, u32)>, String> {
    let expected = "expected question-N, order-N, General_test-T_order-O or \
                    Emotion-F_scenario-S_test-T_order-O";
    for meta in ["question-", "order-"] {
        if name
            .strip_prefix(meta)
            .is_some_and(|n| parse_plain_u32(n).is_some())
        {
            return Ok(None);
        }
    }
    let unrecognised = || format!("unrecognised column; {expected}");
    let (head, order) = name.rsplit_once("_order-").ok_or_else(unrecognised)?;
    let (situation, test) = head.rsplit_once("_test-").ok_or_else(unrecognised)?;
    let (Some(test), Some(order)) = (parse_plain_u32(test), parse_plain_u32(order)) else {
        return Err(unrecognised());
    };
    if situation == "General" {
        return Ok(None);
    }
    let (head, scenario) = situation
        .split_once("_scenario-")
        .ok_or_else(unrecognised)?;
    let (emotion, factor) = head.rsplit_once('-').ok_or_else(unrecognised)?;
    let (Some(factor), Some(scenario)) = (parse_plain_u32(factor), parse_plain_u32(scenario))
    else {
        return Err(unrecognised());
    };
    let emotion = canonical_emotion(emotion).ok_or_else(|| {
        format!(
            "unknown emotion {emotion:?}; expected one of {}",
            known_emotions()
        )
    })?;
    Ok(Some((emotion, factor, scenario, test, order)))
}

/// The situation in a prompt cell: `Imagine you are the protagonist in the scenario: "…"`
/// gives the quoted text; a cell without the prefix is taken as the text itself.
fn doc_text(cell: &str) -> &str {
    let cell = cell.trim();
    let rest = cell.strip_prefix(DOC_PROMPT_PREFIX).map_or(cell, str::trim);
    rest.strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .map_or(rest, str::trim)
}

/// Upstream `doc.csv`: the header names one column per trial, the first row holds the
/// prompts. The rows below hold the questionnaire's items (the same for every column) and are
/// not situations, so they are not read. A situation appears once per test; its columns must
/// agree on the text.
fn parse_doc(names: &[String], mut records: Records<'_>) -> Result<SituationFile, ImportError> {
    let at = |line: u64, i: usize| format!("line {line}, column {} {:?}", i + 1, names[i]);
    let mut trials: Vec<(usize, &'static str, u32, u32)> = Vec::new();
    let mut seen: HashMap<(&'static str, u32, u32, u32, u32), usize> = HashMap::new();
    for (i, name) in names.iter().enumerate() {
        let Some((emotion, factor, scenario, test, order)) =
            doc_column(name).map_err(|reason| ImportError::new(at(1, i), reason))?
        else {
            continue;
        };
        if let Some(first) = seen.insert((emotion, factor, scenario, test, order), i) {
            return Err(ImportError::new(
                at(1, i),
                format!("duplicate column (the same as column {})", first + 1),
            ));
        }
        trials.push((i, emotion, factor, scenario));
    }
    if trials.is_empty() {
        return Err(ImportError::new(
            "line 1",
            "no situation columns (Emotion-F_scenario-S_test-T_order-O)",
        ));
    }
    let row = match records.next() {
        None => {
            return Err(ImportError::new(
                "line 2",
                "missing the row of prompts below the header",
            ));
        }
        Some(record) => record.map_err(csv_error)?,
    };
    // The header's cells are all checked names without line breaks: the prompts are line 2.
    let line = 2;
    check_row_width(&row, names.len(), line)?;
    let mut situations: Vec<Situation> = Vec::new();
    let mut by_key: HashMap<String, (usize, usize)> = HashMap::new();
    for (i, emotion, factor_index, scenario_index) in trials {
        let text = doc_text(row.get(i).unwrap_or(""));
        if text.is_empty() {
            return Err(ImportError::new(at(line, i), "empty situation text"));
        }
        let key = situation_key(emotion, factor_index, scenario_index);
        if let Some(&(index, column)) = by_key.get(&key) {
            if situations[index].text != text {
                return Err(ImportError::new(
                    at(line, i),
                    format!(
                        "the text of {key} differs from its text in column {}",
                        column + 1
                    ),
                ));
            }
            continue;
        }
        let factor_name = catalogue_factor_name(emotion, factor_index).ok_or_else(|| {
            ImportError::new(
                at(1, i),
                format!(
                    "{emotion} has no factor {factor_index} in EmotionBench's catalogue, and \
                     doc.csv does not name factors: import situations.json or a tidy CSV \
                     that names them"
                ),
            )
        })?;
        by_key.insert(key.clone(), (situations.len(), i));
        situations.push(Situation {
            key,
            emotion: emotion.to_string(),
            factor_index,
            factor_name: factor_name.to_string(),
            scenario_index,
            text: text.to_string(),
            variant_of: None,
            valence: Valence::Negative,
        });
    }
    Ok(SituationFile {
        format: SituationFormat::EmotionBenchDocCsv,
        situations,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    use super::super::testdata::upstream;

    /// Parses content that must be rejected and checks where the error points.
    fn rejects(content: &str, location: &str, reason: &str) -> ImportError {
        let err = match parse_situations(content) {
            Ok(file) => panic!("accepted {content:?}: {file:?}"),
            Err(err) => err,
        };
        assert!(
            err.location.contains(location),
            "location {:?} lacks {location:?} ({err})",
            err.location
        );
        assert!(
            err.reason.contains(reason),
            "reason {:?} lacks {reason:?}",
            err.reason
        );
        err
    }

    // Valence variants (#18) -----------------------------------------------------------------

    const VARIANTS: &str = "key,emotion,factor,text,variant_of,valence\n\
        Anger-0_scenario-0,Anger,Queues,Someone jumps the queue.,,\n\
        Anger-0_scenario-0-pos,Anger,Queues,Someone lets you go first.,Anger-0_scenario-0,positive\n\
        Anger-0_scenario-1,Anger,Queues,The queue stops moving.,,negative\n\
        Anger-0_scenario-1-neu,Anger,Queues,The queue moves at its pace.,Anger-0_scenario-1,Neutral\n";

    #[test]
    fn tidy_variants_take_their_originals_place_and_valence() {
        let file = parse_situations(VARIANTS).unwrap();
        assert_eq!(file.format, SituationFormat::TidyCsv);
        let s = &file.situations;
        assert_eq!(s.len(), 4);
        assert_eq!(
            (s[0].variant_of.as_deref(), s[0].valence),
            (None, Valence::Negative)
        );
        assert_eq!(
            (s[1].variant_of.as_deref(), s[1].valence),
            (Some("Anger-0_scenario-0"), Valence::Positive)
        );
        assert_eq!((s[1].factor_index, s[1].scenario_index), (0, 0));
        assert_eq!((s[3].factor_index, s[3].scenario_index), (0, 1));
        assert_eq!(s[3].valence, Valence::Neutral);
        // A variant may come before its original.
        let reordered = "key,emotion,factor,text,variant_of,valence\n\
            v,Fear,Spiders,A friendly spider.,o,positive\n\
            o,Fear,Spiders,A spider on the pillow.,,\n";
        let file = parse_situations(reordered).unwrap();
        assert_eq!(file.situations[0].variant_of.as_deref(), Some("o"));
        assert_eq!(
            file.situations[0].scenario_index,
            file.situations[1].scenario_index
        );
    }

    #[test]
    fn tidy_variant_refusals_name_line_column_and_reason() {
        let head = "key,emotion,factor,text,variant_of,valence\no,Anger,Queues,A queue.,,\n";
        rejects(
            &format!("{head}v,Anger,Queues,Nice.,missing,positive\n"),
            "line 3, column \"variant_of\"",
            "names no situation of this file",
        );
        rejects(
            &format!("{head}v,Anger,Queues,Nice.,o,\n"),
            "line 3, column \"valence\"",
            "needs its valence",
        );
        rejects(
            &format!("{head}v,Anger,Queues,Nice.,o,happy\n"),
            "line 3, column \"valence\"",
            "unknown valence \"happy\"",
        );
        rejects(
            &format!("{head}v,Anger,Queues,Nice.,o,negative\n"),
            "line 3, column \"valence\"",
            "another valence than its original",
        );
        rejects(
            &format!("{head}v,Fear,Queues,Nice.,o,positive\n"),
            "line 3, column \"emotion\"",
            "keeps its original's emotion",
        );
        rejects(
            &format!("{head}v,Anger,Roads,Nice.,o,positive\n"),
            "line 3, column \"factor\"",
            "keeps its original's factor",
        );
        rejects(
            &format!("{head}v,Anger,Queues,Nice.,o,positive\nw,Anger,Queues,Fine.,v,neutral\n"),
            "line 4, column \"variant_of\"",
            "is itself a variant",
        );
        rejects(
            &format!("{head}v,Anger,Queues,Nice.,o,positive\nw,Anger,Queues,Fine.,o,positive\n"),
            "line 4, column \"valence\"",
            "a second positive variant of \"o\" (the first is at line 3)",
        );
        rejects(
            &format!("{head}v,Anger,Queues,Nice.,v,positive\n"),
            "line 3, column \"variant_of\"",
            "names the row itself",
        );
        rejects(
            &format!("{head}o,Anger,Queues,Nice.,o,positive\n"),
            "line 3, column \"key\"",
            "duplicate key",
        );
        rejects(
            &format!("{head}v,Anger,Queues,Nice.,bad key,positive\n"),
            "line 3, column \"variant_of\"",
            "invalid key",
        );
    }

    #[test]
    fn valence_lists_parse_and_refuse_unknown_names() {
        assert_eq!(
            Valence::parse_list("Positive, negative,positive").unwrap(),
            vec![Valence::Positive, Valence::Negative]
        );
        assert!(Valence::parse_list("").is_err());
        assert!(Valence::parse_list("negative,joyful").is_err());
        for v in Valence::ALL {
            assert_eq!(Valence::parse(v.as_str()), Some(v));
        }
    }

    #[test]
    fn real_json() {
        let Some(content) = upstream("situations.json") else {
            return;
        };
        let file = parse_situations(&content).unwrap();
        assert_eq!(file.format, SituationFormat::EmotionBenchJson);
        let s = &file.situations;
        assert_eq!(s.len(), 428);
        let emotions: Vec<&str> = s.iter().map(|x| x.emotion.as_str()).collect();
        let mut order = emotions.clone();
        order.dedup();
        assert_eq!(order, EMOTIONS);
        let factors: HashSet<(&str, u32)> = s
            .iter()
            .map(|x| (x.emotion.as_str(), x.factor_index))
            .collect();
        assert_eq!(factors.len(), 36);
        let texts: HashSet<&str> = s.iter().map(|x| x.text.as_str()).collect();
        assert_eq!(texts.len(), 425);
        let keys: HashSet<&str> = s.iter().map(|x| x.key.as_str()).collect();
        assert_eq!(keys.len(), 428);
        assert_eq!(s[0].key, "Anger-0_scenario-0");
        // The first factor's name as the file itself has it (upstream text stays out of the repo).
        let raw: serde_json::Value = serde_json::from_str(&content).unwrap();
        assert_eq!(
            s[0].factor_name,
            raw["emotions"][0]["factors"][0]["name"].as_str().unwrap()
        );
        assert!(s.iter().all(|x| x.text == x.text.trim()));
        for x in s {
            assert_eq!(
                parse_key(&x.key),
                Some((x.emotion.as_str(), x.factor_index, x.scenario_index))
            );
        }
    }

    #[test]
    fn real_wide_csv_equals_json() {
        let (Some(json), Some(csv)) = (
            upstream("situations.json"),
            upstream("situations/situations.csv"),
        ) else {
            return;
        };
        let from_json = parse_situations(&json).unwrap();
        let from_csv = parse_situations(&csv).unwrap();
        assert_eq!(from_csv.format, SituationFormat::EmotionBenchWideCsv);
        assert_eq!(from_csv.situations.len(), 428);
        assert_eq!(from_csv.situations, from_json.situations);
    }

    #[test]
    fn real_tidy_175() {
        let Some(content) = upstream("derived/test_situations_175.csv") else {
            return;
        };
        let file = parse_situations(&content).unwrap();
        assert_eq!(file.format, SituationFormat::TidyCsv);
        assert_eq!(file.situations.len(), 175);
        let mut reader = csv::Reader::from_reader(content.as_bytes());
        let file_keys: Vec<String> = reader
            .records()
            .map(|r| r.unwrap().get(0).unwrap().to_string())
            .collect();
        let keys: Vec<String> = file.situations.iter().map(|s| s.key.clone()).collect();
        assert_eq!(keys, file_keys);
        assert_eq!(keys[0], "Anger-0_scenario-0");
        // The factor_name column of the file's first row (upstream text stays out of the repo).
        let mut r = csv::Reader::from_reader(content.as_bytes());
        let header = r.headers().unwrap().clone();
        let col = header.iter().position(|h| h == "factor_name").unwrap();
        let first = r.records().next().unwrap().unwrap();
        assert_eq!(file.situations[0].factor_name, first.get(col).unwrap());
        // The tested situations sit under the same factors as in the full dataset.
        if let Some(json) = upstream("situations.json") {
            let all = parse_situations(&json).unwrap().situations;
            for s in &file.situations {
                let full = all.iter().find(|x| x.key == s.key).expect(&s.key);
                assert_eq!(full.factor_name, s.factor_name, "{}", s.key);
            }
        }
    }

    #[test]
    fn detects_json() {
        let json = r#"{"emotions":[{"name":"anger","factors":[
            {"name":"Queues","scenarios":["  You wait. ","You wait more."]},
            {"name":"Noise","scenarios":["You hear a drill."]}]},
            {"name":"Fear","factors":[{"name":"Dark","scenarios":["The light goes out."]}]}]}"#;
        let file = parse_situations(&format!("\u{feff}\n {json}")).unwrap();
        assert_eq!(file.format, SituationFormat::EmotionBenchJson);
        let keys: Vec<&str> = file.situations.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "Anger-0_scenario-0",
                "Anger-0_scenario-1",
                "Anger-1_scenario-0",
                "Fear-0_scenario-0"
            ]
        );
        assert_eq!(file.situations[0].text, "You wait.");
        assert_eq!(file.situations[0].emotion, "Anger");
        assert_eq!(file.situations[2].factor_name, "Noise");
    }

    #[test]
    fn detects_wide_csv() {
        let csv = "\u{feff}Anger-0,Fear-0,Anger-1\r\n\
                   Queues,Dark,Noise\r\n\
                   You wait.,\"The light goes out, suddenly.\",You hear a drill.\r\n\
                   You wait more.,,\r\n\
                   ,,\r\n";
        let file = parse_situations(csv).unwrap();
        assert_eq!(file.format, SituationFormat::EmotionBenchWideCsv);
        let got: Vec<(&str, &str, &str)> = file
            .situations
            .iter()
            .map(|s| (s.key.as_str(), s.factor_name.as_str(), s.text.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("Anger-0_scenario-0", "Queues", "You wait."),
                ("Anger-0_scenario-1", "Queues", "You wait more."),
                ("Fear-0_scenario-0", "Dark", "The light goes out, suddenly."),
                ("Anger-1_scenario-0", "Noise", "You hear a drill."),
            ]
        );
        assert_eq!(file.situations[3].factor_index, 1);
    }

    #[test]
    fn detects_tidy_csv_with_derived_indices() {
        let csv = "text,factor,emotion,key,comment\n\
                   You wait.,Queues,anger,a1,x\n\
                   You hear a drill.,Noise,Anger,a2,\n\
                   \"You wait, again.\",Queues,Anger,a3,\n\
                   The light goes out.,Dark,Fear,f1,\n";
        let file = parse_situations(csv).unwrap();
        assert_eq!(file.format, SituationFormat::TidyCsv);
        let got: Vec<(&str, &str, u32, u32, &str)> = file
            .situations
            .iter()
            .map(|s| {
                (
                    s.key.as_str(),
                    s.emotion.as_str(),
                    s.factor_index,
                    s.scenario_index,
                    s.text.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a1", "Anger", 0, 0, "You wait."),
                ("a2", "Anger", 1, 0, "You hear a drill."),
                ("a3", "Anger", 0, 1, "You wait, again."),
                ("f1", "Fear", 0, 0, "The light goes out."),
            ]
        );
    }

    #[test]
    fn tidy_indices_from_columns_and_keys() {
        let csv = "key,emotion,factor_name,factor_index,scenario_index,text\n\
                   Guilt-2_scenario-4,Guilt,Promises,,,You forgot.\n\
                   g-x,Guilt,Promises,2,7,You forgot again.\n\
                   g-y,Guilt,Lies,,,You fibbed.\n";
        let file = parse_situations(csv).unwrap();
        let got: Vec<(u32, u32)> = file
            .situations
            .iter()
            .map(|s| (s.factor_index, s.scenario_index))
            .collect();
        // "Lies" is new in Guilt, so it takes the next free factor position.
        assert_eq!(got, [(2, 4), (2, 7), (3, 0)]);
    }

    #[test]
    fn malformed_json() {
        rejects(
            "{\"emotions\": [\n{\"name\": \"Anger\",,}]}",
            "line 2, column",
            "invalid JSON",
        );
        rejects("{\"emotions\": [", "line 1, column", "invalid JSON");
        rejects("[1, 2]", "line 1", "unexpected structure");
        rejects("{\"emotion\": []}", "line 1", "emotions");
        rejects(
            r#"{"emotions":[{"name":"Angst","factors":[]}]}"#,
            "emotion \"Angst\"",
            "unknown emotion",
        );
        rejects(
            r#"{"emotions":[{"name":"Anger","factors":[{"name":"A","scenarios":["x"]},{"name":"B","scenarios":["y","  ",""]}]}]}"#,
            "emotion \"Anger\", factor 1, scenario 1",
            "empty situation text",
        );
        rejects(
            r#"{"emotions":[{"name":"Fear","factors":[{"name":" ","scenarios":["x"]}]}]}"#,
            "emotion \"Fear\", factor 0",
            "empty factor name",
        );
        rejects(
            r#"{"emotions":[{"name":"Fear","factors":[{"name":"A","scenarios":["x"]}]},{"name":"fear","factors":[]}]}"#,
            "emotion \"fear\"",
            "twice",
        );
        rejects(r#"{"emotions":[]}"#, "emotions", "no situations");
    }

    #[test]
    fn malformed_csv() {
        rejects("", "line 1", "empty");
        rejects(" \n\t\n", "line 1", "empty");
        rejects("\u{feff}", "line 1", "empty");
        rejects("foo,bar\n1,2\n", "line 1", "unrecognised header");
        // Tidy.
        rejects(
            "key,emotion,factor\nk,Anger,F\n",
            "line 1",
            "missing required column \"text\"",
        );
        rejects(
            "key,text\nk,You wait.\n",
            "line 1",
            "\"emotion\", \"factor\" (or \"factor_name\")",
        );
        rejects(
            "key,emotion,factor,text\nk1,Anger,F,ok\nk2,Angst,F,You wait.\n",
            "line 3, column \"emotion\"",
            "unknown emotion \"Angst\"",
        );
        rejects(
            "key,emotion,factor,text\nk1,Anger,F,ok\nk2,Anger,F,\"  \"\n",
            "line 3, column \"text\"",
            "empty situation text",
        );
        rejects(
            "key,emotion,factor,text\nk1,Anger,,ok\n",
            "line 2, column \"factor\"",
            "empty factor name",
        );
        rejects(
            "key,emotion,factor,text\nk1,Anger,F,a\nk2,Anger,F,b\nk1,Fear,G,c\n",
            "line 4, column \"key\"",
            "duplicate key \"k1\" (first at line 2)",
        );
        rejects(
            "key,emotion,factor_name,factor_index,text\nk1,Anger,F,0,a\nk2,Anger,G,0,b\n",
            "line 3, column \"factor_name\"",
            "named \"F\" at line 2 but \"G\"",
        );
        rejects(
            "key,emotion,factor,text\nAnger-0_scenario-0,Anger,F,a\nAnger-0_scenario-1,Anger,G,b\n",
            "line 3",
            "named \"F\"",
        );
        rejects(
            "key,emotion,factor,text\nbad key!,Anger,F,a\n",
            "line 2, column \"key\"",
            "invalid key",
        );
        rejects(
            &format!("key,emotion,factor,text\n{},Anger,F,a\n", "k".repeat(101)),
            "line 2, column \"key\"",
            "invalid key",
        );
        rejects(
            "key,emotion,factor,scenario_index,text\nk,Anger,F,two,a\n",
            "line 2, column \"scenario_index\"",
            "not a non-negative integer",
        );
        rejects(
            "key,emotion,factor,factor_index,text\nk,Anger,F,-1,a\n",
            "line 2, column \"factor_index\"",
            "not a non-negative integer",
        );
        rejects(
            "key,emotion,factor,text\nk,Anger,F,You wait, then leave.\n",
            "line 2",
            "row has 5 cells",
        );
        rejects(
            "key,emotion,factor,text\nFear-0_scenario-0,Anger,F,a\n",
            "line 2, column \"emotion\"",
            "belongs to Fear",
        );
        rejects(
            "key,emotion,factor,factor_index,text\nAnger-1_scenario-0,Anger,F,0,a\n",
            "line 2, column \"factor_index\"",
            "disagrees",
        );
        rejects(
            "key,emotion,factor,factor_index,scenario_index,text\nx,Anger,F,0,0,a\ny,Anger,F,0,0,b\n",
            "line 3",
            "already used by key \"x\" at line 2",
        );
        rejects(
            "key,Key,emotion,factor,text\n",
            "line 1, column \"Key\"",
            "duplicate column",
        );
        rejects("key,emotion,factor,text\n", "line 2", "no situations");
        rejects("key,emotion,factor,text\n,,,\n", "line 2", "no situations");
        // Wide.
        rejects(
            "Anger-0,Angst-0\nF,G\na,b\n",
            "line 1, column \"Angst-0\"",
            "unknown emotion column",
        );
        rejects(
            "Anger-0,Fear-0\nF,G\na,b\n,c\nd,\n",
            "line 5, column \"Anger-0\"",
            "gap in the column: this cell follows an empty cell at line 4",
        );
        rejects(
            "Anger-0,Fear-0\nF,\na,b\n",
            "line 2, column \"Fear-0\"",
            "empty factor name",
        );
        rejects(
            "Anger-0,anger-0\nF,G\na,b\n",
            "column \"anger-0\"",
            "duplicate column",
        );
        rejects("Anger-0,Fear-0\nF,G\na,b,c\n", "line 3", "row has 3 cells");
        rejects("Anger-0,Fear-0\n", "line 2", "factor names");
        rejects("Anger-0,Fear-0\nF,G\n,\n", "line 3", "no situations");
        rejects(
            "Anger-99999999999,Fear-0\nF,G\na,b\n",
            "column \"Anger-99999999999\"",
            "too large",
        );
    }

    #[test]
    fn wide_short_rows_are_empty_cells() {
        let file = parse_situations("Anger-0,Fear-0\nF,G\na,b\nc\n").unwrap();
        let keys: Vec<&str> = file.situations.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "Anger-0_scenario-0",
                "Anger-0_scenario-1",
                "Fear-0_scenario-0"
            ]
        );
    }

    #[test]
    fn garbage_never_panics() {
        let samples = [
            "\"",
            "{",
            "[",
            "]",
            ",",
            "\n\n,",
            "\"a\nb",
            "key,text\n\"unterminated",
            "Anger-0\n\"",
            "key,text,emotion,factor\n\u{0}\u{1},\u{feff},x,y",
            "{\"emotions\":[{\"name\":\"Anger\",\"factors\":[{\"name\":\"x\",\"scenarios\":[1]}]}]}",
        ];
        for sample in samples {
            let _ = parse_situations(sample);
        }
        let deep = "[".repeat(100_000);
        assert!(parse_situations(&deep).is_err());
    }

    #[test]
    fn keys_round_trip() {
        for emotion in EMOTIONS {
            for (f, s) in [(0, 0), (3, 17), (10, 2), (u32::MAX, u32::MAX)] {
                let key = situation_key(emotion, f, s);
                assert_eq!(parse_key(&key), Some((emotion, f, s)));
            }
        }
        assert_eq!(situation_key("anger", 0, 3), "Anger-0_scenario-3");
        for bad in [
            "",
            "Anger",
            "Anger-0",
            "anger-0_scenario-3",
            "Angst-0_scenario-3",
            "Anger-x_scenario-3",
            "Anger-0_scenario-",
            "Anger-01_scenario-3",
            "Anger-0_scenario-+3",
            "Anger-0_scenario-3 ",
            "Anger-0_scenario-4294967296",
            "Anger-0_scenario-3_scenario-4",
        ] {
            assert_eq!(parse_key(bad), None, "{bad:?}");
        }
        assert_eq!(canonical_emotion("anger"), Some("Anger"));
        assert_eq!(canonical_emotion("EMBARRASSMENT"), Some("Embarrassment"));
        assert_eq!(canonical_emotion("Angry"), None);
        assert_eq!(canonical_emotion(" Anger"), None);
        assert_eq!(SituationFormat::TidyCsv.as_str(), "tidy CSV");
    }

    #[test]
    fn crlf_files_report_the_line_of_the_file() {
        rejects(
            "key,emotion,factor,text\r\nA-1,Anger,f,t\r\nA-2,Rage,f,t\r\n",
            "line 3, column",
            "unknown emotion",
        );
        rejects(
            "Anger-0,Fear-0\r\nF1,F2\r\na,\r\n,b\r\n",
            "line 4",
            "gap in the column",
        );
        rejects(
            "key,emotion,factor,text\r\n\"A-1\",Anger,\"two\r\nlines\",t\r\nA-2,Rage,f,t\r\n",
            "line 4, column",
            "unknown emotion",
        );
    }

    // doc.csv ---------------------------------------------------------------------------------

    const DOC_HEAD: &str = "question-0,order-0,General_test-0_order-0,\
                            Anger-0_scenario-0_test-0_order-0,Anger-0_scenario-0_test-1_order-0,\
                            Fear-4_scenario-2_test-0_order-0";

    fn doc(rows: &str) -> String {
        format!("{DOC_HEAD}\n{rows}")
    }

    const DOC_PROMPTS: &str = "\"Prompt: SCENARIO\",x, ,\
        \"Imagine you are the protagonist in the scenario: \"\"You wait.\"\"\",\
        \"Imagine you are the protagonist in the scenario: \"\"You wait.\"\"\",\
        A spider.\n1. Interested,1,,,,\n";

    #[test]
    fn detects_doc_csv_and_names_factors_from_the_catalogue() {
        let file = parse_situations(&doc(DOC_PROMPTS)).unwrap();
        assert_eq!(file.format, SituationFormat::EmotionBenchDocCsv);
        assert_eq!(
            file.situations,
            vec![
                Situation {
                    key: "Anger-0_scenario-0".into(),
                    emotion: "Anger".into(),
                    factor_index: 0,
                    factor_name: "Facing Self-Opinioned People".into(),
                    scenario_index: 0,
                    text: "You wait.".into(),
                    variant_of: None,
                    valence: Valence::Negative,
                },
                Situation {
                    key: "Fear-4_scenario-2".into(),
                    emotion: "Fear".into(),
                    factor_index: 4,
                    factor_name: "Harmless Animals".into(),
                    scenario_index: 2,
                    text: "A spider.".into(),
                    variant_of: None,
                    valence: Valence::Negative,
                },
            ]
        );
    }

    #[test]
    fn doc_csv_refusals_name_line_column_and_reason() {
        rejects(
            "question-0,order-0,Anger-0_scenario-0_test-0,x\nA,B,C,D\n",
            "line 1, column 3 \"Anger-0_scenario-0_test-0\"",
            "unrecognised column",
        );
        rejects(
            "question-0,Rage-0_scenario-0_test-0_order-0\nA,B\n",
            "line 1, column 2",
            "unknown emotion \"Rage\"",
        );
        rejects(
            "question-0,order-0\nA,B\n",
            "line 1",
            "no situation columns",
        );
        rejects(
            "question-0,Anger-0_scenario-0_test-0_order-0,Anger-0_scenario-0_test-0_order-0\nA,B,B\n",
            "line 1, column 3",
            "duplicate column (the same as column 2)",
        );
        rejects(
            &doc("P,x, ,\"Imagine you are the protagonist in the scenario: \"\"\"\"\",a,b\n"),
            "line 2, column 4",
            "empty situation text",
        );
        rejects(
            &doc("P,x, ,one,other,b\n"),
            "line 2, column 5",
            "differs from its text in column 4",
        );
        rejects(
            "question-0,Anger-9_scenario-0_test-0_order-0\nA,B\n",
            "line 1, column 2",
            "Anger has no factor 9",
        );
        rejects(DOC_HEAD, "line 2", "missing the row of prompts");
        rejects(&doc("P,x, ,a,a,b,extra\n"), "line 2", "row has 7 cells");
    }

    #[test]
    fn real_doc_csv_gives_the_tested_175_set() {
        let (Some(doc), Some(tidy)) = (
            upstream("doc.csv"),
            upstream("derived/test_situations_175.csv"),
        ) else {
            return;
        };
        let from_doc = parse_situations(&doc).unwrap();
        assert_eq!(from_doc.format, SituationFormat::EmotionBenchDocCsv);
        assert_eq!(from_doc.situations.len(), 175);
        assert_eq!(
            from_doc.situations,
            parse_situations(&tidy).unwrap().situations
        );
    }

    #[test]
    fn the_catalogue_matches_situations_json() {
        let Some(json) = upstream("situations.json") else {
            return;
        };
        for s in parse_situations(&json).unwrap().situations {
            assert_eq!(
                catalogue_factor_name(&s.emotion, s.factor_index),
                Some(s.factor_name.as_str()),
                "{}",
                s.key
            );
        }
        assert_eq!(catalogue_factor_name("Anger", 5), None);
    }
}

/// Properties of the importer over generated files: the three formats of one situation set
/// parse to the same situations, and no input (valid, mutated or arbitrary) panics.
#[cfg(test)]
mod import_properties {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;

    /// Emotion → factors (name, situation texts), as a researcher would write them.
    type Set = Vec<(&'static str, Vec<(String, Vec<String>)>)>;

    /// Non-empty, already trimmed, with the characters that need CSV quoting.
    fn text() -> impl Strategy<Value = String> {
        "[A-Za-z0-9éüß ,.;:'\"!?()-]{1,30}"
            .prop_map(|s| s.trim().to_owned())
            .prop_filter("non-empty", |s| !s.is_empty())
    }

    fn set() -> impl Strategy<Value = Set> {
        proptest::sample::subsequence(EMOTIONS.to_vec(), 1..=3)
            .prop_flat_map(|emotions| {
                let factors = proptest::collection::vec(
                    proptest::collection::vec(
                        (text(), proptest::collection::vec(text(), 1..=4)),
                        1..=3,
                    ),
                    emotions.len(),
                );
                (Just(emotions), factors)
            })
            .prop_map(|(emotions, factors)| emotions.into_iter().zip(factors).collect())
    }

    fn expected(set: &Set) -> Vec<Situation> {
        let mut out = Vec::new();
        for (emotion, factors) in set {
            for (f, (name, texts)) in factors.iter().enumerate() {
                for (s, text) in texts.iter().enumerate() {
                    let (f, s) = (u32::try_from(f).unwrap(), u32::try_from(s).unwrap());
                    out.push(Situation {
                        key: situation_key(emotion, f, s),
                        emotion: (*emotion).to_owned(),
                        factor_index: f,
                        factor_name: name.clone(),
                        scenario_index: s,
                        text: text.clone(),
                        variant_of: None,
                        valence: Valence::Negative,
                    });
                }
            }
        }
        out
    }

    fn json(set: &Set) -> String {
        let emotions: Vec<serde_json::Value> = set
            .iter()
            .map(|(emotion, factors)| {
                let factors: Vec<serde_json::Value> = factors
                    .iter()
                    .map(|(name, texts)| serde_json::json!({"name": name, "scenarios": texts}))
                    .collect();
                serde_json::json!({"name": emotion, "factors": factors})
            })
            .collect();
        serde_json::json!({ "emotions": emotions }).to_string()
    }

    fn tidy(set: &Set) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(["key", "emotion", "factor", "text"])
            .unwrap();
        for s in expected(set) {
            w.write_record([&s.key, &s.emotion, &s.factor_name, &s.text])
                .unwrap();
        }
        String::from_utf8(w.into_inner().unwrap()).unwrap()
    }

    /// Upstream's wide layout: a column per factor, its name below the header, ragged texts.
    fn wide(set: &Set) -> String {
        let columns: Vec<(String, &String, &Vec<String>)> = set
            .iter()
            .flat_map(|(emotion, factors)| {
                factors
                    .iter()
                    .enumerate()
                    .map(move |(f, (name, texts))| (format!("{emotion}-{f}"), name, texts))
            })
            .collect();
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(columns.iter().map(|c| c.0.as_str()))
            .unwrap();
        w.write_record(columns.iter().map(|c| c.1.as_str()))
            .unwrap();
        let rows = columns.iter().map(|c| c.2.len()).max().unwrap_or(0);
        for r in 0..rows {
            w.write_record(
                columns
                    .iter()
                    .map(|c| c.2.get(r).map_or("", String::as_str)),
            )
            .unwrap();
        }
        String::from_utf8(w.into_inner().unwrap()).unwrap()
    }

    fn sorted(mut v: Vec<Situation>) -> Vec<Situation> {
        v.sort_by(|a, b| a.key.cmp(&b.key));
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn the_three_formats_of_one_set_parse_to_the_same_situations(set in set()) {
            let want = expected(&set);
            let j = parse_situations(&json(&set)).unwrap();
            prop_assert_eq!(j.format, SituationFormat::EmotionBenchJson);
            prop_assert_eq!(&j.situations, &want);
            let t = parse_situations(&tidy(&set)).unwrap();
            prop_assert_eq!(t.format, SituationFormat::TidyCsv);
            prop_assert_eq!(&t.situations, &want);
            let w = parse_situations(&wide(&set)).unwrap();
            prop_assert_eq!(w.format, SituationFormat::EmotionBenchWideCsv);
            prop_assert_eq!(sorted(w.situations), sorted(want));
        }

        #[test]
        fn a_mutated_file_is_parsed_or_refused_without_panicking(
            set in set(),
            format in 0..3usize,
            at in any::<proptest::sample::Index>(),
            junk in "[\\x00-\\x7f\"\\n\\r,{}\\[\\]]{0,8}",
            cut in any::<bool>(),
        ) {
            let file = match format {
                0 => json(&set),
                1 => tidy(&set),
                _ => wide(&set),
            };
            // Insert junk (or truncate) at a char boundary.
            let bounds: Vec<usize> = file.char_indices().map(|(i, _)| i).chain([file.len()]).collect();
            let i = bounds[at.index(bounds.len())];
            let mutated = if cut { file[..i].to_owned() } else { format!("{}{junk}{}", &file[..i], &file[i..]) };
            if let Ok(parsed) = parse_situations(&mutated) {
                // Whatever is accepted is well-formed: keys unique, texts and names trimmed and non-empty.
                let keys: std::collections::HashSet<&str> = parsed.situations.iter().map(|s| s.key.as_str()).collect();
                prop_assert_eq!(keys.len(), parsed.situations.len());
                for s in &parsed.situations {
                    prop_assert!(!s.text.is_empty() && s.text.trim() == s.text);
                    prop_assert!(!s.factor_name.is_empty() && s.factor_name.trim() == s.factor_name);
                }
            }
        }

        #[test]
        fn arbitrary_text_is_parsed_or_refused_without_panicking(s in "\\PC{0,200}") {
            let _ = parse_situations(&s);
        }
    }
}
