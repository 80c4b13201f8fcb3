//! Whole cohorts of completed participants written at once: the published human data, and
//! generated studies for tests and benchmarks. Multi-row INSERTs in chunks keep a 10,000-person
//! cohort to a few dozen statements.

use std::collections::{HashMap, HashSet};

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::columns::corrupt_row;
use super::schema::{participants, responses};
use super::{
    DbConnection, DemographicAnswers, ParticipantId, SituationId, StoreError, StudyId, now,
};
use crate::domain::measure::Measure;
use crate::domain::split::Side;
use crate::domain::survey::{Page, PageEvent, ParticipantStatus};

/// A participant who finished, with both measures in canonical item order.
#[derive(Debug, Clone)]
pub struct NewCompleted {
    pub public_id: String,
    pub prolific_pid: Option<String>,
    pub source_ref: Option<String>,
    pub imported: bool,
    pub situation_id: Option<SituationId>,
    pub demographics: Option<DemographicAnswers>,
    pub default_answers: Vec<i32>,
    pub evoked_answers: Vec<i32>,
    pub created_at: NaiveDateTime,
    pub completed_at: Option<NaiveDateTime>,
}

/// Participants per INSERT: 500 × 11 parameters stays far below both backends' limits.
const PARTICIPANT_CHUNK: usize = 500;
/// Response rows per INSERT: 2,000 × 6 parameters.
const RESPONSE_CHUNK: usize = 2000;

/// Inserts completed participants and their answers. Call inside a transaction.
pub fn insert_completed(
    conn: &mut DbConnection,
    study_id: StudyId,
    people: &[NewCompleted],
) -> Result<usize, StoreError> {
    let t = now();
    for chunk in people.chunks(PARTICIPANT_CHUNK) {
        let rows: Vec<_> = chunk
            .iter()
            .map(|p| {
                (
                    (
                        participants::study_id.eq(study_id),
                        participants::public_id.eq(&p.public_id),
                        participants::export_id.eq(crate::auth::password::random_secret(24)),
                        participants::prolific_pid.eq(&p.prolific_pid),
                        participants::status.eq(ParticipantStatus::Completed),
                        participants::page.eq(Page::Ended),
                        participants::situation_id.eq(p.situation_id),
                    ),
                    (
                        participants::demographics.eq(&p.demographics),
                        participants::imported.eq(p.imported),
                        participants::source_ref.eq(&p.source_ref),
                        participants::created_at.eq(p.created_at),
                        participants::updated_at.eq(t),
                        participants::completed_at.eq(p.completed_at),
                    ),
                )
            })
            .collect();
        let insert = diesel::insert_into(participants::table).values(rows);
        match conn {
            DbConnection::Postgresql(c) => insert.execute(c)?,
            DbConnection::Sqlite(c) => insert.execute(c)?,
        };
        let ids: HashMap<String, ParticipantId> = participants::table
            .filter(participants::study_id.eq(study_id))
            .filter(participants::public_id.eq_any(chunk.iter().map(|p| p.public_id.as_str())))
            .select((participants::public_id, participants::id))
            .load::<(String, ParticipantId)>(conn)?
            .into_iter()
            .collect();
        let mut answers = Vec::with_capacity(chunk.len() * 40);
        for p in chunk {
            let id = *ids
                .get(&p.public_id)
                .ok_or_else(|| StoreError::Inconsistent(format!("{} vanished", p.public_id)))?;
            for (phase, values) in [
                (Measure::Default, &p.default_answers),
                (Measure::Evoked, &p.evoked_answers),
            ] {
                for (i, v) in values.iter().enumerate() {
                    let item = i32::try_from(i + 1).unwrap_or(i32::MAX);
                    answers.push((
                        responses::participant_id.eq(id),
                        responses::phase.eq(phase),
                        responses::item_number.eq(item),
                        responses::value.eq(*v),
                        responses::display_position.eq(item),
                        responses::created_at.eq(p.completed_at.unwrap_or(p.created_at)),
                    ));
                }
            }
        }
        for rows in answers.chunks(RESPONSE_CHUNK) {
            let insert = diesel::insert_into(responses::table).values(rows.to_vec());
            match conn {
                DbConnection::Postgresql(c) => insert.execute(c)?,
                DbConnection::Sqlite(c) => insert.execute(c)?,
            };
        }
    }
    Ok(people.len())
}

/// The `source_ref`s of a study's imported participants.
pub fn imported_refs(conn: &mut DbConnection, study_id: StudyId) -> QueryResult<HashSet<String>> {
    Ok(participants::table
        .filter(participants::study_id.eq(study_id))
        .filter(participants::imported.eq(true))
        .select(participants::source_ref)
        .load::<Option<String>>(conn)?
        .into_iter()
        .flatten()
        .collect())
}

/// Which participants an export includes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusFilter {
    Completed,
    All,
}

/// Which participants an export includes: by status, whether pilot participants (the
/// study's preview link, issue #13 point 4) are in (they are not unless asked for), and
/// optionally only those who took it in one language (#20).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub status: StatusFilter,
    pub pilots: bool,
    pub language: Option<LanguageFilter>,
}

/// Only the participants who took the study in `tag`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LanguageFilter {
    pub tag: crate::domain::language::Lang,
    /// `tag` is the study's default: the participants without a recorded language (imported,
    /// or from before languages) saw its texts and are in too.
    pub with_unrecorded: bool,
}

impl From<StatusFilter> for Selection {
    fn from(status: StatusFilter) -> Self {
        Selection {
            status,
            pilots: false,
            language: None,
        }
    }
}

/// A participant as exported.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = participants)]
pub struct ExportParticipant {
    pub id: ParticipantId,
    /// What exports call the participant (never the survey cookie's secret).
    pub export_id: String,
    pub prolific_pid: Option<String>,
    pub prolific_study_id: Option<String>,
    pub prolific_session_id: Option<String>,
    pub status: ParticipantStatus,
    pub situation_id: Option<SituationId>,
    pub demographics: Option<DemographicAnswers>,
    pub flag_straightline: bool,
    pub flag_fast: bool,
    pub flag_failed_check: bool,
    /// The situation page's hidden field came back filled (`domain::evidence`).
    pub flag_honeypot: bool,
    pub imported: bool,
    /// A pilot participant (the study's pilot link); exported only when asked for.
    pub pilot: bool,
    /// The language the participant took the study in (#20).
    pub language: Option<String>,
    pub source_ref: Option<String>,
    pub created_at: NaiveDateTime,
    pub completed_at: Option<NaiveDateTime>,
}

/// The next `limit` participants of a study after id `after`, by id: keyset pagination, so a
/// long export holds one page in memory and never a long-running read transaction.
pub fn page(
    conn: &mut DbConnection,
    study_id: StudyId,
    filter: &Selection,
    after: ParticipantId,
    limit: i64,
) -> QueryResult<Vec<ExportParticipant>> {
    let mut q = participants::table
        .filter(participants::study_id.eq(study_id))
        .filter(participants::id.gt(after))
        .into_boxed();
    if filter.status == StatusFilter::Completed {
        q = q.filter(participants::status.eq(ParticipantStatus::Completed));
    }
    if !filter.pilots {
        q = q.filter(participants::pilot.eq(false));
    }
    match &filter.language {
        None => {}
        Some(l) if l.with_unrecorded => {
            q = q.filter(
                participants::language
                    .eq(l.tag.as_str())
                    .or(participants::language.is_null()),
            );
        }
        Some(l) => q = q.filter(participants::language.eq(l.tag.as_str())),
    }
    q.order(participants::id)
        .limit(limit)
        .select(ExportParticipant::as_select())
        .load(conn)
        .map_err(corrupt_row(
            "participants",
            format!("of study {study_id} after id {after}"),
        ))
}

/// One stored answer.
#[derive(Debug, Clone, Queryable)]
pub struct Answer {
    pub participant_id: ParticipantId,
    pub phase: Measure,
    pub item_number: i32,
    pub value: i32,
    pub display_position: i32,
    pub created_at: NaiveDateTime,
}

/// The answers of some participants, by participant, phase and item.
pub fn answers_of(conn: &mut DbConnection, ids: &[ParticipantId]) -> QueryResult<Vec<Answer>> {
    responses::table
        .filter(responses::participant_id.eq_any(ids))
        .order((
            responses::participant_id,
            responses::phase,
            responses::item_number,
        ))
        .select((
            responses::participant_id,
            responses::phase,
            responses::item_number,
            responses::value,
            responses::display_position,
            responses::created_at,
        ))
        .load(conn)
        .map_err(corrupt_row(
            "responses",
            format!("of participants {:?}", ids.first()..ids.last()),
        ))
}

/// The free-text answers of some participants (#18): participant -> (prompt, text).
pub fn texts_of(
    conn: &mut DbConnection,
    ids: &[ParticipantId],
) -> QueryResult<HashMap<ParticipantId, (String, String)>> {
    use super::schema::participant_texts;
    let rows: Vec<(ParticipantId, String, String)> = participant_texts::table
        .filter(participant_texts::participant_id.eq_any(ids))
        .select((
            participant_texts::participant_id,
            participant_texts::prompt,
            participant_texts::body,
        ))
        .load(conn)?;
    Ok(rows.into_iter().map(|(p, a, b)| (p, (a, b))).collect())
}

/// Seconds between first showing and first submitting the situation page, per participant.
pub fn situation_seconds(
    conn: &mut DbConnection,
    ids: &[ParticipantId],
) -> QueryResult<HashMap<ParticipantId, i64>> {
    use super::schema::page_events;
    let rows: Vec<(ParticipantId, PageEvent, NaiveDateTime)> = page_events::table
        .filter(page_events::participant_id.eq_any(ids))
        .filter(page_events::page.eq(Page::Situation))
        .order((page_events::participant_id, page_events::at))
        .select((
            page_events::participant_id,
            page_events::event,
            page_events::at,
        ))
        .load(conn)?;
    let mut shown: HashMap<ParticipantId, NaiveDateTime> = HashMap::new();
    let mut out = HashMap::new();
    for (p, event, at) in rows {
        match event {
            PageEvent::Shown => {
                shown.entry(p).or_insert(at);
            }
            PageEvent::Submitted => {
                if let Some(s) = shown.get(&p) {
                    out.entry(p).or_insert((at - *s).num_seconds());
                }
            }
        }
    }
    Ok(out)
}

/// Completed participants of a study with their situation key (the split's strata), by id.
pub fn completed_strata(
    conn: &mut DbConnection,
    study_id: StudyId,
) -> QueryResult<Vec<(ParticipantId, Option<String>)>> {
    use super::schema::situations;
    participants::table
        .left_join(situations::table)
        .filter(participants::study_id.eq(study_id))
        .filter(participants::status.eq(ParticipantStatus::Completed))
        .filter(participants::pilot.eq(false))
        .order(participants::id)
        .select((participants::id, situations::key.nullable()))
        .load(conn)
}

/// Records a split: clears the study's `split` column, then sets `train`/`test` per
/// participant. Call inside a transaction.
pub fn record_split(
    conn: &mut DbConnection,
    study_id: StudyId,
    assignment: &[(ParticipantId, Side)],
) -> QueryResult<()> {
    diesel::update(participants::table.filter(participants::study_id.eq(study_id)))
        .set(participants::split.eq(None::<Side>))
        .execute(conn)?;
    for side in [Side::Train, Side::Test] {
        let ids: Vec<ParticipantId> = assignment
            .iter()
            .filter(|(_, s)| *s == side)
            .map(|(id, _)| *id)
            .collect();
        for chunk in ids.chunks(PARTICIPANT_CHUNK) {
            diesel::update(participants::table.filter(participants::id.eq_any(chunk)))
                .set(participants::split.eq(side))
                .execute(conn)?;
        }
    }
    Ok(())
}

/// A participant on one side of a split, with the situation they imagined.
#[derive(Debug, Clone, Queryable)]
pub struct SplitMember {
    pub id: ParticipantId,
    pub export_id: String,
    pub source_ref: Option<String>,
    pub situation_key: Option<String>,
    pub situation_text: Option<String>,
}

/// The completed participants of a study on one side (`train`/`test`) of its split, by id.
pub fn split_members(
    conn: &mut DbConnection,
    study_id: StudyId,
    side: Side,
) -> QueryResult<Vec<SplitMember>> {
    use super::schema::situations;
    participants::table
        .left_join(situations::table)
        .filter(participants::study_id.eq(study_id))
        .filter(participants::status.eq(ParticipantStatus::Completed))
        .filter(participants::pilot.eq(false))
        .filter(participants::split.eq(side))
        .order(participants::id)
        .select((
            participants::id,
            participants::export_id,
            participants::source_ref,
            situations::key.nullable(),
            situations::text.nullable(),
        ))
        .load(conn)
}
