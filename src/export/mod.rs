//! Streaming CSV exports of a study: `long` (participant × phase × item), `wide` (one row per
//! participant) and the `codebook` describing every column of both.
//!
//! Each writer pages through the study's participants by id (keyset pagination, [`PAGE`] at a
//! time) and writes rows as it goes, so memory stays bounded whatever the study size and no
//! read transaction is held across pages: participants keep answering while an export runs.
//! The output is RFC 4180 CSV (the `csv` crate), UTF-8, with a header row; times are ISO 8601
//! UTC (`2026-01-31T12:00:00Z`); booleans `true`/`false`; missing values empty. The writers
//! take any [`std::io::Write`], so the web layer can stream them into a response body.
//! Text cells a spreadsheet would run as a formula are neutralised unless the caller asks for
//! raw cells ([`cells`]); the codebook says which columns are text and how they were written.

pub mod alignment;
pub mod by_language;
pub mod cells;
pub mod charts;
pub mod finetune;
pub mod freetext;
pub mod groups;
pub mod picks;
pub mod psychometrics;
pub mod report;
pub mod table;
pub mod valence;

use std::collections::HashMap;
use std::io::Write;

use chrono::{NaiveDateTime, SecondsFormat};

pub use cells::Cells;

use crate::domain::evidence::{Signal, StudyEvidence};
use crate::domain::instrument::{Convention, Instrument};
use crate::domain::measure::Measure;
use crate::store::cohorts::{self, ExportParticipant, Selection};
use crate::store::studies::Study;
use crate::store::{self, DbConnection, ParticipantId, SituationId, StoreError, StudyId};

/// Participants per page.
pub const PAGE: i64 = 500;

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("no study with id {0}")]
    NoStudy(StudyId),
    #[error(transparent)]
    Store(#[from] StoreError),
    // The cause is the source: callers print the chain (`{:#}`) or log it.
    #[error("writing CSV")]
    Csv(#[from] csv::Error),
    #[error("writing")]
    Io(#[from] std::io::Error),
}

impl From<diesel::result::Error> for ExportError {
    fn from(e: diesel::result::Error) -> Self {
        ExportError::Store(StoreError::Query(e))
    }
}

/// What a writer wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ExportStats {
    pub participants: usize,
    /// Data rows, without the header.
    pub rows: usize,
}

/// One column as the codebook describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub label: String,
    /// `string`, `integer`, `boolean`, `datetime` (ISO 8601 UTC) or `number`.
    pub kind: &'static str,
    pub allowed: String,
    pub meaning: String,
}

fn col(name: &str, label: &str, kind: &'static str, allowed: &str, meaning: &str) -> Column {
    Column {
        name: name.to_owned(),
        label: label.to_owned(),
        kind,
        allowed: allowed.to_owned(),
        meaning: meaning.to_owned(),
    }
}

/// Everything about a study that every row needs, loaded once.
struct Context {
    study: Study,
    instrument: Instrument,
    /// situation id -> (key, emotion, factor index, factor name).
    situations: HashMap<SituationId, (String, String, i32, String)>,
    demographics: Vec<String>,
}

fn context(conn: &mut DbConnection, study_id: StudyId) -> Result<Context, ExportError> {
    use crate::store::schema::studies;
    use diesel::prelude::*;
    let study = studies::table
        .find(study_id.0)
        .select(Study::as_select())
        .first(conn)
        .optional()?
        .ok_or(ExportError::NoStudy(study_id))?;
    let instrument = store::instruments::get(conn, study.instrument_id)?;
    let situations = match study.situation_set_id {
        Some(set) => store::situations::list(conn, set)?
            .into_iter()
            .map(|s| {
                let s2 = s.situation;
                (
                    s.id,
                    (
                        s2.key,
                        s2.emotion,
                        i32::try_from(s2.factor_index).unwrap_or(i32::MAX),
                        s2.factor_name,
                    ),
                )
            })
            .collect(),
        None => HashMap::new(),
    };
    let demographics = study.demographic_fields();
    Ok(Context {
        study,
        instrument,
        situations,
        demographics,
    })
}

fn time(t: NaiveDateTime) -> String {
    t.and_utc().to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn opt_time(t: Option<NaiveDateTime>) -> String {
    t.map(time).unwrap_or_default()
}

fn boolean(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

/// `Positive Affect` -> `positive_affect`: category names as column-name stems.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_owned()
}

fn identity_columns() -> Vec<Column> {
    vec![
        col("study", "Study", "string", "", "The study's slug."),
        col(
            "participant",
            "Participant id",
            "string",
            "",
            "Random anonymous id of the participant in this database: not the Prolific id, and not the survey session's secret (it cannot resume or withdraw the participant).",
        ),
        col(
            "source_ref",
            "Source reference",
            "string",
            "",
            "For imported participants, where they came from (crowd-N = participant N of the published EmotionBench crowd.xlsx); empty for live participants.",
        ),
        col(
            "imported",
            "Imported",
            "boolean",
            "true, false",
            "true when the participant was imported from published data rather than taking the survey here.",
        ),
        col(
            "pilot",
            "Pilot",
            "boolean",
            "true, false",
            "true when the participant came through the study's pilot link (a test by the research team, never counted); pilots are exported only when asked for.",
        ),
        col(
            "language",
            "Language",
            "string",
            "",
            "The language tag the participant took the study in (one of the study's languages, e.g. en, de, zh-CN), chosen from the link's lang=, the browser's languages or the study's default; empty for imported participants and for those who took part before studies had languages (they saw English).",
        ),
        col(
            "prolific_pid",
            "Prolific participant id",
            "string",
            "",
            "PROLIFIC_PID (or the study's configured parameter) from the entry link; empty when absent.",
        ),
        col(
            "prolific_study_id",
            "Prolific study id",
            "string",
            "",
            "STUDY_ID from the entry link; empty when absent.",
        ),
        col(
            "prolific_session_id",
            "Prolific session id",
            "string",
            "",
            "SESSION_ID from the entry link; empty when absent.",
        ),
        col(
            "status",
            "Status",
            "string",
            "active, completed, withdrawn, no_consent, failed_check, screened_out",
            "Where the participant ended (active = still in progress).",
        ),
    ]
}

fn situation_columns() -> Vec<Column> {
    vec![
        col(
            "situation_key",
            "Situation",
            "string",
            "",
            "Key of the situation the participant imagined, e.g. Anger-0_scenario-0 (emotion, 0-based factor, 0-based scenario).",
        ),
        col(
            "emotion",
            "Emotion",
            "string",
            "Anger, Anxiety, Depression, Frustration, Jealousy, Guilt, Fear, Embarrassment",
            "The negative emotion the situation is meant to evoke.",
        ),
        col(
            "factor_index",
            "Factor index",
            "integer",
            "0 and above",
            "0-based index of the factor within the emotion.",
        ),
        col(
            "factor",
            "Factor",
            "string",
            "",
            "Name of the factor (the kind of situation) within the emotion.",
        ),
    ]
}

fn allowed_values(instrument: &Instrument) -> String {
    let labels: Vec<String> = instrument
        .labels
        .iter()
        .map(|l| format!("{} = {}", l.value, l.label))
        .collect();
    if labels.is_empty() {
        format!("{}..{}", instrument.min, instrument.max)
    } else {
        format!(
            "{}..{} ({})",
            instrument.min,
            instrument.max,
            labels.join("; ")
        )
    }
}

/// The columns of the long file, in order.
fn long_columns(ctx: &Context) -> Vec<Column> {
    let mut c = identity_columns();
    c.extend(situation_columns());
    c.extend([
        col(
            "phase",
            "Measure",
            "string",
            "default, evoked",
            "default = the questionnaire answered before the situation (current feelings); evoked = answered after imagining the situation.",
        ),
        col(
            "item_number",
            "Item number",
            "integer",
            &format!("1..{}", ctx.instrument.items.len()),
            &format!("Canonical number of the {} item.", ctx.instrument.key),
        ),
        col(
            "item",
            "Item",
            "string",
            "",
            "The item's wording.",
        ),
        col(
            "value",
            "Answer",
            "integer",
            &allowed_values(&ctx.instrument),
            "The answer given, unscored (no reverse scoring applied).",
        ),
        col(
            "display_position",
            "Display position",
            "integer",
            &format!("1..{}", ctx.instrument.items.len()),
            "Position at which the item was shown (items may be shuffled per participant).",
        ),
        col(
            "answered_at",
            "Answered at",
            "datetime",
            "ISO 8601 UTC",
            "When the page holding this answer was submitted (for imported participants: the import time).",
        ),
        col(
            "completed_at",
            "Completed at",
            "datetime",
            "ISO 8601 UTC",
            "When the participant finished; empty when unknown (imported) or not finished.",
        ),
    ]);
    c
}

/// The columns of the wide file, in order.
fn wide_columns(ctx: &Context) -> Vec<Column> {
    let mut c = identity_columns();
    c.extend([
        col(
            "started_at",
            "Started at",
            "datetime",
            "ISO 8601 UTC",
            "When the participant arrived (for imported participants: the import time).",
        ),
        col(
            "completed_at",
            "Completed at",
            "datetime",
            "ISO 8601 UTC",
            "When the participant finished; empty when unknown (imported) or not finished.",
        ),
    ]);
    for d in &ctx.demographics {
        c.push(col(
            d,
            &d.replace('_', " "),
            "string",
            "",
            "Demographic answer as given.",
        ));
    }
    c.extend(situation_columns());
    let allowed = allowed_values(&ctx.instrument);
    for (phase, when) in [
        ("before", "before the situation (default measure)"),
        ("after", "after imagining the situation (evoked measure)"),
    ] {
        for item in &ctx.instrument.items {
            c.push(col(
                &format!("{phase}_{}_{}", item.number, slug(&item.text)),
                &format!("{} ({phase})", item.text),
                "integer",
                &allowed,
                &format!(
                    "Answer to {} item {} {when}; unscored.",
                    ctx.instrument.key, item.number
                ),
            ));
        }
    }
    let how = match ctx.instrument.scoring.mode {
        crate::domain::instrument::ScoreMode::Sum => "sum",
        crate::domain::instrument::ScoreMode::Mean => "mean",
        crate::domain::instrument::ScoreMode::FreeText => "free text",
    };
    for cat in &ctx.instrument.categories {
        let s = slug(&cat.name);
        let items: Vec<String> = cat.items.iter().map(u32::to_string).collect();
        let rule = format!(
            "{how} of items {} (reverse items reversed, multiplier {})",
            items.join(","),
            ctx.instrument.scoring.multiplier
        );
        c.push(col(
            &format!("{s}_before"),
            &format!("{} before", cat.name),
            "number",
            "",
            &format!("{} score before the situation: {rule}.", cat.name),
        ));
        c.push(col(
            &format!("{s}_after"),
            &format!("{} after", cat.name),
            "number",
            "",
            &format!("{} score after imagining the situation: {rule}.", cat.name),
        ));
        c.push(col(
            &format!("{s}_diff"),
            &format!("{} change", cat.name),
            "number",
            "",
            &format!("{s}_after minus {s}_before."),
        ));
    }
    c.extend([
        col(
            "flag_straightline",
            "Straight-lining",
            "boolean",
            "true, false",
            Signal::Straightline.meaning(),
        ),
        col(
            "flag_fast",
            "Too fast on the situation",
            "boolean",
            "true, false",
            Signal::Fast.meaning(),
        ),
        col(
            "flag_failed_check",
            "Failed attention check",
            "boolean",
            "true, false",
            "Answered the attention check wrongly.",
        ),
        col(
            "duration_seconds",
            "Duration (s)",
            "integer",
            "0 and above",
            "Seconds from arrival to completion; empty when unknown.",
        ),
        col(
            "situation_seconds",
            "Time on the situation (s)",
            "integer",
            "0 and above",
            "Seconds between showing and submitting the situation page; empty when unknown.",
        ),
    ]);
    c.extend(evidence_columns());
    c.extend(free_text_columns(ctx));
    c
}

/// The wide file's free-text columns (#18): the prompt a participant answered and the answer,
/// last so that the columns before them keep their places. Only here: the long file is one row
/// per rated item, which a text is not.
fn free_text_columns(ctx: &Context) -> [Column; 2] {
    let task = match &ctx.study.free_text.0 {
        Some(f) => format!(
            "This study asks the prompt of the free-text task {} ({}, at most {} characters).",
            f.task,
            if f.required { "required" } else { "optional" },
            f.max_chars
        ),
        None => "This study has no free-text field.".to_owned(),
    };
    [
        col(
            "free_text_prompt",
            "Free-text prompt",
            "string",
            "",
            &format!(
                "The prompt shown above the situation page's text field, as it was when the participant answered (the study's setting may have changed since); empty when there is no answer. {task}"
            ),
        ),
        col(
            "free_text",
            "Free-text answer",
            "string",
            "",
            "The participant's answer in the situation page's text field, as typed: spaces around it trimmed, line breaks as LF, never shortened (a longer one is refused on the page). Empty when the study has no such field, the participant left it empty or has not reached it, or withdrew (withdrawal deletes it). Imported participants have none.",
        ),
    ]
}

/// The evidence signals not stored as the survey's own three flags above, in
/// [`Signal::ALL`]'s order.
const NEW_SIGNALS: [Signal; 6] = [
    Signal::Honeypot,
    Signal::ReadingFloor,
    Signal::Speed,
    Signal::Inconsistent,
    Signal::Duplicate,
    Signal::ModelLike,
];

/// The wide file's evidence columns (`domain::evidence`): a `flag_` column per signal, the
/// relative speed index, the model-likeness, the reasons, and the study's exclusion rules
/// applied.
fn evidence_columns() -> Vec<Column> {
    let mut c: Vec<Column> = NEW_SIGNALS
        .iter()
        .map(|s| {
            col(
                &format!("flag_{}", s.as_str()),
                s.label(),
                "boolean",
                "true, false",
                &format!(
                    "{} Evidence, never a verdict; empty for participants not assessed (pilots, \
                     withdrawn, declined, screened out).",
                    s.meaning()
                ),
            )
        })
        .collect();
    c.extend([
        col(
            "time_rsi",
            "Relative speed index",
            "number",
            "above 0",
            "SoSci Survey's TIME_RSI: mean over pages of the page's median time divided by the \
             participant's; 2 = twice as fast as the typical participant. Empty with fewer than \
             10 timed participants per page, and for imported participants (no timings).",
        ),
        col(
            "model_log10_lr",
            "Model-likeness (log10 LR)",
            "number",
            "",
            "log10 of the likelihood ratio of the answers under the most similar model's runs \
             of the study vs under the other humans (per-item distributions, smoothed); above 2 \
             is flag_model_like. Empty without model runs or with fewer than 10 other humans.",
        ),
        col(
            "model_like_model",
            "Most similar model",
            "string",
            "",
            "The model model_log10_lr compares with.",
        ),
        col(
            "evidence",
            "Evidence",
            "string",
            "",
            "Every signal with its reason, \"signal: reason\" separated by \"; \"; empty when \
             none.",
        ),
        col(
            "excluded",
            "Excluded from analysis",
            "boolean",
            "true, false",
            "Whether the study's exclusion rules (set before launch) leave this participant out \
             of the analysis, as the report does; the row is kept.",
        ),
        col(
            "excluded_by",
            "Excluded by",
            "string",
            "",
            "The signals of the study's exclusion rules this participant carries, separated by \
             \", \"; empty when included.",
        ),
    ]);
    c
}

/// The evidence cells of one participant, in [`evidence_columns`]'s order.
fn evidence_cells(evidence: &StudyEvidence, p: &ExportParticipant) -> Vec<String> {
    let Some(a) = evidence.of(p.id.0) else {
        // Not assessed (a pilot, withdrawn, declined, screened out): what the survey stored.
        let mut row = vec![String::new(); NEW_SIGNALS.len() + 6];
        row[0] = boolean(p.flag_honeypot).to_owned();
        row[NEW_SIGNALS.len() + 4] = "false".to_owned();
        return row;
    };
    let mut row: Vec<String> = NEW_SIGNALS
        .iter()
        .map(|s| boolean(a.has(*s)).to_owned())
        .collect();
    row.push(a.rsi.map(|r| format!("{r:.3}")).unwrap_or_default());
    row.push(
        a.model_lr
            .as_ref()
            .map(|(_, l)| format!("{l:.3}"))
            .unwrap_or_default(),
    );
    row.push(
        a.model_lr
            .as_ref()
            .map(|(m, _)| m.clone())
            .unwrap_or_default(),
    );
    row.push(a.reasons());
    let by = evidence.excluded_by(p.id.0);
    row.push(boolean(!by.is_empty()).to_owned());
    row.push(by.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "));
    row
}

/// Which columns hold text (neutralised unless raw); numbers, booleans and times never are.
fn text_columns(cols: &[Column]) -> Vec<bool> {
    cols.iter().map(|c| c.kind == "string").collect()
}

/// The header row: names come from the study's configuration (demographic fields), so they are
/// text cells like any other.
fn write_header<W: Write>(
    w: &mut csv::Writer<W>,
    cols: &[Column],
    cells: Cells,
) -> Result<(), ExportError> {
    cells::write_record(w, cells, &[], cols.iter().map(|c| c.name.as_str()))?;
    Ok(())
}

fn identity(ctx: &Context, p: &ExportParticipant) -> Vec<String> {
    vec![
        ctx.study.slug.clone(),
        p.export_id.clone(),
        p.source_ref.clone().unwrap_or_default(),
        boolean(p.imported).to_owned(),
        boolean(p.pilot).to_owned(),
        p.language.clone().unwrap_or_default(),
        p.prolific_pid.clone().unwrap_or_default(),
        p.prolific_study_id.clone().unwrap_or_default(),
        p.prolific_session_id.clone().unwrap_or_default(),
        p.status.as_str().to_owned(),
    ]
}

fn situation(ctx: &Context, p: &ExportParticipant) -> [String; 4] {
    match p.situation_id.and_then(|s| ctx.situations.get(&s)) {
        Some((key, emotion, fi, factor)) => {
            [key.clone(), emotion.clone(), fi.to_string(), factor.clone()]
        }
        None => Default::default(),
    }
}

/// Pages through the study, calling `f` with each page and its answers.
fn for_each_page(
    conn: &mut DbConnection,
    study: StudyId,
    filter: Selection,
    mut f: impl FnMut(
        &mut DbConnection,
        &[ExportParticipant],
        &[cohorts::Answer],
    ) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let mut after = ParticipantId(0);
    loop {
        let page = cohorts::page(conn, study, &filter, after, PAGE)?;
        let Some(last) = page.last() else {
            return Ok(());
        };
        after = last.id;
        let ids: Vec<ParticipantId> = page.iter().map(|p| p.id).collect();
        let answers = cohorts::answers_of(conn, &ids)?;
        f(conn, &page, &answers)?;
    }
}

/// Writes the long file: one row per participant × phase × item answered.
pub fn write_long<W: Write>(
    conn: &mut DbConnection,
    study: StudyId,
    filter: Selection,
    cells: Cells,
    out: W,
) -> Result<ExportStats, ExportError> {
    let ctx = context(conn, study)?;
    let mut w = csv::Writer::from_writer(std::io::BufWriter::with_capacity(1 << 16, out));
    let columns = long_columns(&ctx);
    write_header(&mut w, &columns, cells)?;
    let text = text_columns(&columns);
    let mut stats = ExportStats::default();
    let items: HashMap<i32, &str> = ctx
        .instrument
        .items
        .iter()
        .map(|i| (i32::try_from(i.number).unwrap_or(i32::MAX), i.text.as_str()))
        .collect();
    for_each_page(conn, study, filter, |_, page, answers| {
        let by_id: HashMap<ParticipantId, &ExportParticipant> =
            page.iter().map(|p| (p.id, p)).collect();
        let mut current: Option<(ParticipantId, Vec<String>, [String; 4], String)> = None;
        for a in answers {
            if current.as_ref().is_none_or(|c| c.0 != a.participant_id) {
                let Some(p) = by_id.get(&a.participant_id) else {
                    continue;
                };
                current = Some((
                    p.id,
                    identity(&ctx, p),
                    situation(&ctx, p),
                    opt_time(p.completed_at),
                ));
            }
            let Some((_, ident, sit, completed)) = &current else {
                continue;
            };
            let number = a.item_number.to_string();
            let value = a.value.to_string();
            let position = a.display_position.to_string();
            let answered = time(a.created_at);
            let item = items.get(&a.item_number).copied().unwrap_or("");
            let record = ident
                .iter()
                .map(String::as_str)
                .chain(sit.iter().map(String::as_str))
                .chain([
                    a.phase.as_str(),
                    number.as_str(),
                    item,
                    value.as_str(),
                    position.as_str(),
                    answered.as_str(),
                    completed.as_str(),
                ]);
            cells::write_record(&mut w, cells, &text, record)?;
            stats.rows += 1;
        }
        stats.participants += page.len();
        Ok(())
    })?;
    w.flush()?;
    Ok(stats)
}

/// Writes the wide file: one row per participant, with the evidence about them (`evidence`,
/// computed once for the study by `app::evidence`).
pub fn write_wide<W: Write>(
    conn: &mut DbConnection,
    study: StudyId,
    filter: Selection,
    cells: Cells,
    evidence: &StudyEvidence,
    out: W,
) -> Result<ExportStats, ExportError> {
    let ctx = context(conn, study)?;
    let mut w = csv::Writer::from_writer(std::io::BufWriter::with_capacity(1 << 16, out));
    let columns = wide_columns(&ctx);
    write_header(&mut w, &columns, cells)?;
    let text = text_columns(&columns);
    let n = ctx.instrument.items.len();
    let mut stats = ExportStats::default();
    for_each_page(conn, study, filter, |conn, page, answers| {
        let ids: Vec<ParticipantId> = page.iter().map(|p| p.id).collect();
        let seconds = cohorts::situation_seconds(conn, &ids)?;
        let mut texts = cohorts::texts_of(conn, &ids)?;
        let mut by_participant: HashMap<ParticipantId, [Vec<Option<i32>>; 2]> = HashMap::new();
        for a in answers {
            let slot = by_participant
                .entry(a.participant_id)
                .or_insert_with(|| [vec![None; n], vec![None; n]]);
            let phase = usize::from(a.phase == Measure::Evoked);
            if let Some(v) = usize::try_from(a.item_number)
                .ok()
                .and_then(|i| i.checked_sub(1))
                .and_then(|i| slot[phase].get_mut(i))
            {
                *v = Some(a.value);
            }
        }
        for p in page {
            let mut row = identity(&ctx, p);
            row.push(time(p.created_at));
            row.push(opt_time(p.completed_at));
            // Decoded with the row: stored answers that are not a JSON object are `Corrupt`.
            let demo = p.demographics.as_ref().map(|d| &d.0);
            for d in &ctx.demographics {
                row.push(match demo.and_then(|m| m.get(d)) {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(serde_json::Value::Null) | None => String::new(),
                    Some(v) => v.to_string(),
                });
            }
            row.extend(situation(&ctx, p));
            let empty = [vec![None; n], vec![None; n]];
            let phases = by_participant.get(&p.id).unwrap_or(&empty);
            for phase in phases {
                row.extend(
                    phase
                        .iter()
                        .map(|v| v.map(|v| v.to_string()).unwrap_or_default()),
                );
            }
            let score = |answers: &Vec<Option<i32>>| {
                let full: Option<Vec<i32>> = answers.iter().copied().collect();
                full.and_then(|a| ctx.instrument.score(&a, Convention::Authored).ok())
            };
            let (before, after) = (score(&phases[0]), score(&phases[1]));
            for (i, _) in ctx.instrument.categories.iter().enumerate() {
                let b = before.as_ref().and_then(|s| s.get(i)).map(|s| s.value);
                let a = after.as_ref().and_then(|s| s.get(i)).map(|s| s.value);
                let num = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
                row.push(num(b));
                row.push(num(a));
                row.push(num(b.zip(a).map(|(b, a)| a - b)));
            }
            row.push(boolean(p.flag_straightline).to_owned());
            row.push(boolean(p.flag_fast).to_owned());
            row.push(boolean(p.flag_failed_check).to_owned());
            row.push(
                p.completed_at
                    .filter(|_| !p.imported)
                    .map(|c| (c - p.created_at).num_seconds().to_string())
                    .unwrap_or_default(),
            );
            row.push(seconds.get(&p.id).map(i64::to_string).unwrap_or_default());
            row.extend(evidence_cells(evidence, p));
            let (prompt, answer) = texts.remove(&p.id).unwrap_or_default();
            row.push(prompt);
            row.push(answer);
            cells::write_record(&mut w, cells, &text, row.iter().map(String::as_str))?;
            stats.rows += 1;
        }
        stats.participants += page.len();
        Ok(())
    })?;
    w.flush()?;
    Ok(stats)
}

/// Writes the codebook: one row per column of the long and the wide file. The meaning of every
/// text column says how its cells were written (`cells`: neutralised or raw), so the codebook
/// should come from the same setting as the files it describes. Its own cells are all text
/// (item wordings, category names) and are written the same way.
pub fn write_codebook<W: Write>(
    conn: &mut DbConnection,
    study: StudyId,
    cells: Cells,
    out: W,
) -> Result<ExportStats, ExportError> {
    let ctx = context(conn, study)?;
    let mut w = csv::Writer::from_writer(out);
    w.write_record([
        "file",
        "column",
        "label",
        "type",
        "allowed_values",
        "meaning",
    ])?;
    let mut stats = ExportStats::default();
    for (file, cols) in [("long", long_columns(&ctx)), ("wide", wide_columns(&ctx))] {
        for c in cols {
            let meaning = if c.kind == "string" {
                format!("{} {}", c.meaning, cells.note())
            } else {
                c.meaning.clone()
            };
            cells::write_record(
                &mut w,
                cells,
                &[],
                [file, &c.name, &c.label, c.kind, &c.allowed, &meaning],
            )?;
            stats.rows += 1;
        }
    }
    w.flush()?;
    Ok(stats)
}

/// The number of columns of each file for a study: (long, wide).
pub fn column_counts(
    conn: &mut DbConnection,
    study: StudyId,
) -> Result<(usize, usize), ExportError> {
    let ctx = context(conn, study)?;
    Ok((long_columns(&ctx).len(), wide_columns(&ctx).len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn category_names_become_column_stems() {
        assert_eq!(slug("Positive Affect"), "positive_affect");
        assert_eq!(
            slug("  Fear of Negative Evaluation! "),
            "fear_of_negative_evaluation"
        );
        assert_eq!(slug("DASS-21 Stress"), "dass_21_stress");
    }
}
