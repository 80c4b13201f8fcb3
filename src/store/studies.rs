//! Studies.

use diesel::prelude::*;

use super::columns::{Json, corrupt_row};
use super::schema::{situations, studies};
use super::{DbConnection, InstrumentId, SituationSetId, StoreError, StudyId, now};
use crate::domain::language::Lang;
use crate::domain::situation::Valence;
use crate::domain::study::{FreeTextField, StudyConfig, StudyStatus, StudyTexts, text_in};

/// A study's consent and debrief texts in its other languages, by language (#20).
pub type Translations = std::collections::BTreeMap<Lang, StudyTexts>;

/// A study as listed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StudySummary {
    pub id: StudyId,
    pub slug: String,
    pub title: String,
    pub status: StudyStatus,
    pub situations: i64,
}

/// What a study runs on besides its configuration: the instrument, the situation set, and the
/// date after which its participant data is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sources {
    pub instrument: InstrumentId,
    pub set: Option<SituationSetId>,
    pub retention_until: Option<chrono::NaiveDateTime>,
}

impl Sources {
    /// No retention date.
    pub fn new(instrument: InstrumentId, set: Option<SituationSetId>) -> Sources {
        Sources {
            instrument,
            set,
            retention_until: None,
        }
    }
}

/// The settings columns, written alike by `create` and `update` (`None` writes NULL).
#[derive(Insertable, AsChangeset)]
#[diesel(table_name = studies, treat_none_as_null = true)]
struct Settings<'a> {
    title: &'a str,
    instrument_id: InstrumentId,
    situation_set_id: Option<SituationSetId>,
    consent_text: &'a str,
    debrief_text: &'a str,
    target_per_situation: i32,
    item_order: &'a str,
    attention_check: &'a str,
    demographics: String,
    pid_param: &'a str,
    study_id_param: &'a str,
    session_id_param: &'a str,
    code_completed: Option<&'a str>,
    code_no_consent: Option<&'a str>,
    code_failed_check: Option<&'a str>,
    code_screened_out: Option<&'a str>,
    min_situation_seconds: i32,
    reservation_minutes: i32,
    retention_until: Option<chrono::NaiveDateTime>,
    languages: Json<Vec<Lang>>,
    valences: Json<Vec<Valence>>,
    free_text: Json<Option<FreeTextField>>,
    translations: Json<Translations>,
    updated_at: chrono::NaiveDateTime,
}

/// Validates the configuration and maps it, with its sources, to the settings columns.
fn settings<'a>(config: &'a StudyConfig, sources: Sources) -> Result<Settings<'a>, StoreError> {
    config.validate().map_err(StoreError::Conflict)?;
    Ok(Settings {
        title: &config.title,
        instrument_id: sources.instrument,
        situation_set_id: sources.set,
        consent_text: &config.consent_text,
        debrief_text: &config.debrief_text,
        target_per_situation: config.target_per_situation,
        item_order: if config.shuffle_items {
            "shuffled"
        } else {
            "fixed"
        },
        attention_check: if config.attention_check_ends {
            "end"
        } else {
            "flag"
        },
        demographics: serde_json::to_string(&config.demographics)
            .map_err(|e| StoreError::Inconsistent(e.to_string()))?,
        pid_param: &config.pid_param,
        study_id_param: &config.study_id_param,
        session_id_param: &config.session_id_param,
        code_completed: config.code_completed.as_deref(),
        code_no_consent: config.code_no_consent.as_deref(),
        code_failed_check: config.code_failed_check.as_deref(),
        code_screened_out: config.code_screened_out.as_deref(),
        min_situation_seconds: config.min_situation_seconds,
        reservation_minutes: config.reservation_minutes,
        retention_until: sources.retention_until,
        languages: Json(config.languages.clone()),
        valences: Json(config.valences.clone()),
        free_text: Json(config.free_text.clone()),
        translations: Json(config.translations.clone()),
        updated_at: now(),
    })
}

/// Creates a study. The seed for its random draws is fixed now and stored.
pub fn create(
    conn: &mut DbConnection,
    config: &StudyConfig,
    status: StudyStatus,
    sources: Sources,
    seed: i64,
) -> Result<StudyId, StoreError> {
    let row = settings(config, sources)?;
    if find(conn, &config.slug)?.is_some() {
        return Err(StoreError::Conflict(format!(
            "a study {} exists already",
            config.slug
        )));
    }
    let t = row.updated_at;
    let id = diesel::insert_into(studies::table)
        .values((
            row,
            studies::slug.eq(&config.slug),
            studies::status.eq(status),
            studies::seed.eq(seed),
            studies::created_at.eq(t),
            studies::opened_at.eq((status == StudyStatus::Open).then_some(t)),
        ))
        .returning(studies::id)
        .get_result::<StudyId>(conn)?;
    Ok(id)
}

/// Which studies to summarise.
enum Which<'a> {
    Slug(&'a str),
    Open,
    All,
}

/// Study summaries, newest first, with their situation counts: two queries, however many
/// studies there are.
fn summaries(conn: &mut DbConnection, which: Which<'_>) -> QueryResult<Vec<StudySummary>> {
    let mut query = studies::table
        .order(studies::id.desc())
        .select((
            studies::id,
            studies::slug,
            studies::title,
            studies::status,
            studies::situation_set_id,
        ))
        .into_boxed();
    query = match which {
        Which::Slug(slug) => query.filter(studies::slug.eq(slug)),
        Which::Open => query.filter(studies::status.eq(StudyStatus::Open)),
        Which::All => query,
    };
    let rows: Vec<(StudyId, String, String, StudyStatus, Option<SituationSetId>)> =
        match query.load(conn) {
            Err(e @ diesel::result::Error::DeserializationError(_)) => {
                return Err(corrupt_row("studies", bad_status_row(conn))(e));
            }
            other => other?,
        };
    let sets: Vec<SituationSetId> = rows.iter().filter_map(|r| r.4).collect();
    let counts: std::collections::HashMap<SituationSetId, i64> = if sets.is_empty() {
        Default::default()
    } else {
        situations::table
            .filter(situations::set_id.eq_any(&sets))
            .group_by(situations::set_id)
            .select((situations::set_id, diesel::dsl::count_star()))
            .load::<(SituationSetId, i64)>(conn)?
            .into_iter()
            .collect()
    };
    Ok(rows
        .into_iter()
        .map(|(id, slug, title, status, set)| StudySummary {
            id,
            slug,
            title,
            status,
            situations: set.and_then(|s| counts.get(&s).copied()).unwrap_or(0),
        })
        .collect())
}

/// The id of a study whose stored status does not decode (to name it in the error).
fn bad_status_row(conn: &mut DbConnection) -> String {
    let rows: QueryResult<Vec<(i64, String)>> = studies::table
        .select((studies::id, studies::status))
        .load(conn);
    rows.ok()
        .and_then(|rows| {
            rows.into_iter()
                .find(|(_, status)| StudyStatus::parse(status).is_none())
        })
        .map_or_else(|| "?".to_owned(), |(id, _)| id.to_string())
}

pub fn find(conn: &mut DbConnection, slug: &str) -> QueryResult<Option<StudySummary>> {
    Ok(summaries(conn, Which::Slug(slug))?.pop())
}

/// Studies open to participants, newest first.
pub fn list_open(conn: &mut DbConnection) -> QueryResult<Vec<StudySummary>> {
    summaries(conn, Which::Open)
}

/// A study row with everything the survey and the admin pages need.
#[derive(Debug, Clone, Queryable, Selectable, serde::Serialize)]
#[diesel(table_name = studies)]
pub struct Study {
    pub id: StudyId,
    pub slug: String,
    pub title: String,
    pub status: StudyStatus,
    pub instrument_id: InstrumentId,
    pub situation_set_id: Option<SituationSetId>,
    pub consent_text: String,
    pub debrief_text: String,
    pub target_per_situation: i32,
    pub item_order: String,
    pub attention_check: String,
    pub demographics: Json<Vec<String>>,
    pub pid_param: String,
    pub study_id_param: String,
    pub session_id_param: String,
    pub code_completed: Option<String>,
    pub code_no_consent: Option<String>,
    pub code_failed_check: Option<String>,
    pub code_screened_out: Option<String>,
    pub min_situation_seconds: i32,
    pub reservation_minutes: i32,
    pub seed: i64,
    pub retention_until: Option<chrono::NaiveDateTime>,
    pub created_at: chrono::NaiveDateTime,
    pub updated_at: chrono::NaiveDateTime,
    pub opened_at: Option<chrono::NaiveDateTime>,
    pub closed_at: Option<chrono::NaiveDateTime>,
    /// The languages participants may take it in; the first is the default (#20).
    pub languages: Json<Vec<Lang>>,
    /// The valences of the situations participants are assigned; empty for all (#18).
    pub valences: Json<Vec<Valence>>,
    /// The situation page's free-text field, if the study has one (#18).
    pub free_text: Json<Option<FreeTextField>>,
    /// The consent and debrief in its other languages (#20).
    pub translations: Json<Translations>,
}

impl Study {
    pub fn status(&self) -> StudyStatus {
        self.status
    }

    pub fn shuffles_items(&self) -> bool {
        self.item_order == "shuffled"
    }

    pub fn check_failure_ends(&self) -> bool {
        self.attention_check == "end"
    }

    /// The study's languages (never empty: the configuration refuses that), the default first.
    pub fn languages(&self) -> &[Lang] {
        &self.languages.0
    }

    /// The demographic fields asked, in order.
    pub fn demographic_fields(&self) -> Vec<String> {
        self.demographics.0.clone()
    }

    /// The study's settings as a configuration (the form, duplicates and archives use it).
    pub fn config(&self) -> StudyConfig {
        let mut c = StudyConfig::new(&self.slug, &self.title);
        c.consent_text = self.consent_text.clone();
        c.debrief_text = self.debrief_text.clone();
        c.target_per_situation = self.target_per_situation;
        c.shuffle_items = self.shuffles_items();
        c.attention_check_ends = self.check_failure_ends();
        c.demographics = self.demographic_fields();
        c.pid_param = self.pid_param.clone();
        c.study_id_param = self.study_id_param.clone();
        c.session_id_param = self.session_id_param.clone();
        c.code_completed = self.code_completed.clone();
        c.code_no_consent = self.code_no_consent.clone();
        c.code_failed_check = self.code_failed_check.clone();
        c.code_screened_out = self.code_screened_out.clone();
        c.min_situation_seconds = self.min_situation_seconds;
        c.reservation_minutes = self.reservation_minutes;
        c.languages = self.languages.0.clone();
        c.valences = self.valences.0.clone();
        c.free_text = self.free_text.0.clone();
        c.translations = self.translations.0.clone();
        c
    }

    /// The consent text participants in `lang` read.
    pub fn consent_in(&self, lang: &Lang) -> &str {
        text_in(&self.translations.0, lang, &self.consent_text, |t| {
            &t.consent
        })
    }

    /// The debrief text participants in `lang` read.
    pub fn debrief_in(&self, lang: &Lang) -> &str {
        text_in(&self.translations.0, lang, &self.debrief_text, |t| {
            &t.debrief
        })
    }

    /// The title participants in `lang` see.
    pub fn title_in(&self, lang: &Lang) -> &str {
        text_in(&self.translations.0, lang, &self.title, |t| &t.title)
    }

    /// The day after which participant data is deleted (stored as that day's midnight).
    pub fn retention_date(&self) -> Option<chrono::NaiveDate> {
        self.retention_until.map(|t| t.date())
    }

    /// The launch checklist of the study as stored, checked on `today`.
    pub fn launch_checklist(
        &self,
        today: chrono::NaiveDate,
    ) -> Vec<crate::domain::study::CheckItem> {
        crate::domain::study::launch_checklist(&self.config(), self.retention_date(), today)
    }

    /// The completion code configured for an outcome, if any.
    pub fn code_for(&self, outcome: crate::domain::survey::Outcome) -> Option<&str> {
        use crate::domain::survey::Outcome;
        match outcome {
            Outcome::Completed => self.code_completed.as_deref(),
            Outcome::NoConsent => self.code_no_consent.as_deref(),
            Outcome::FailedAttentionCheck => self.code_failed_check.as_deref(),
            Outcome::ScreenedOut => self.code_screened_out.as_deref(),
        }
        .filter(|c| !c.is_empty())
    }
}

/// Loads a study by its slug.
pub fn load(conn: &mut DbConnection, slug: &str) -> QueryResult<Option<Study>> {
    studies::table
        .filter(studies::slug.eq(slug))
        .select(Study::as_select())
        // Not `first`: its bound LIMIT makes SQLite re-prepare the statement on every run
        // (see store::participants). The slug is unique.
        .get_result(conn)
        .optional()
        .map_err(corrupt_row("studies", format!("slug {slug}")))
}

/// The languages of study `id` (the first its default), `None` when there is no such study.
pub fn languages_of(conn: &mut DbConnection, id: StudyId) -> QueryResult<Option<Vec<Lang>>> {
    studies::table
        .find(id)
        .select(studies::languages)
        .get_result::<Json<Vec<Lang>>>(conn)
        .optional()
        .map(|l| l.map(|l| l.0))
        .map_err(corrupt_row("studies", id))
}

/// Every study, newest first (for the researchers' list).
pub fn list_all(conn: &mut DbConnection) -> QueryResult<Vec<StudySummary>> {
    summaries(conn, Which::All)
}

/// Changes the settings of a study (its slug stays: links have been shared).
pub fn update(
    conn: &mut DbConnection,
    id: StudyId,
    config: &StudyConfig,
    sources: Sources,
) -> Result<(), StoreError> {
    diesel::update(studies::table.find(id))
        .set(settings(config, sources)?)
        .execute(conn)?;
    Ok(())
}

/// Moves a study through its lifecycle (participants in progress may finish after closing).
pub fn set_status(conn: &mut DbConnection, id: StudyId, status: StudyStatus) -> QueryResult<()> {
    let t = now();
    let q = diesel::update(studies::table.find(id));
    match status {
        StudyStatus::Open => q
            .set((
                studies::status.eq(status),
                studies::opened_at.eq(Some(t)),
                studies::updated_at.eq(t),
            ))
            .execute(conn)?,
        StudyStatus::Closed => q
            .set((
                studies::status.eq(status),
                studies::closed_at.eq(Some(t)),
                studies::updated_at.eq(t),
            ))
            .execute(conn)?,
        StudyStatus::Draft => q
            .set((studies::status.eq(status), studies::updated_at.eq(t)))
            .execute(conn)?,
    };
    Ok(())
}

/// Deletes a study and, by cascade, its participants, answers and model runs.
pub fn delete(conn: &mut DbConnection, id: StudyId) -> QueryResult<usize> {
    diesel::delete(studies::table.find(id)).execute(conn)
}

/// Deletes the participant data of studies whose retention date has passed; the studies
/// themselves stay (closed) so their settings remain on record. Returns (study, participants).
pub fn apply_retention(conn: &mut DbConnection) -> QueryResult<Vec<(String, usize)>> {
    use super::schema::participants;
    let t = now();
    let due: Vec<(StudyId, String)> = studies::table
        .filter(studies::retention_until.le(t))
        .select((studies::id, studies::slug))
        .load(conn)?;
    let mut out = Vec::new();
    for (id, slug) in due {
        let n = conn.write_transaction(|conn| {
            let n = diesel::delete(participants::table.filter(participants::study_id.eq(id)))
                .execute(conn)?;
            set_status(conn, id, StudyStatus::Closed)?;
            Ok::<_, diesel::result::Error>(n)
        })?;
        out.push((slug, n));
    }
    Ok(out)
}
