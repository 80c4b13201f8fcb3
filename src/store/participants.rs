//! Participants and everything they submit. Each page submit is one transaction that first
//! moves the participant from the page it answers to the next one with a conditional UPDATE:
//! a double click, a resubmitted POST or a second tab finds the page already moved and changes
//! nothing.
//!
//! Lookups of at most one row (by a unique key) use `get_result`, not `first`: `first` adds
//! `LIMIT ?`, and SQLite (3.4x) treats a bound LIMIT as able to change the query plan, so a
//! statement with one is compiled again each time it is run with its value bound; without it
//! the cached prepared statement is reused.

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;

use super::columns::{ItemOrder, Json, corrupt_row};
use super::db::per_backend;
use super::pg_pages;
use super::schema::{
    attention_checks, page_events, participant_texts, participants, responses, situation_counts,
    situations,
};
use super::studies::Study;
use super::{
    DbConnection, DemographicAnswers, ParticipantId, SituationId, StoreError, StudyId, now,
};
use crate::domain::assignment::{self, Assignment, Cell};
use crate::domain::language::Lang;
use crate::domain::measure::Measure;
use crate::domain::situation::Valence;
use crate::domain::survey::{Outcome, Page, PageEvent, ParticipantStatus, SessionKey};

#[derive(Debug, Clone, Queryable, Selectable, serde::Serialize)]
#[diesel(table_name = participants)]
pub struct Participant {
    pub id: ParticipantId,
    pub study_id: StudyId,
    pub public_id: String,
    pub prolific_pid: Option<String>,
    pub prolific_study_id: Option<String>,
    pub prolific_session_id: Option<String>,
    pub status: ParticipantStatus,
    pub page: Page,
    pub situation_id: Option<SituationId>,
    pub assignment: Option<String>,
    pub reserved_until: Option<NaiveDateTime>,
    pub order_default: Option<ItemOrder>,
    pub order_evoked: Option<ItemOrder>,
    pub demographics: Option<DemographicAnswers>,
    pub flag_straightline: bool,
    pub flag_fast: bool,
    pub flag_failed_check: bool,
    pub imported: bool,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
    pub completed_at: Option<NaiveDateTime>,
    /// Made through the study's pilot link: runs the real pages, counts nowhere.
    pub pilot: bool,
    /// The language tag the participant took the study in (#20); `None` for participants
    /// made before languages existed, who saw English.
    pub language: Option<String>,
}

impl Participant {
    pub fn page(&self) -> Page {
        self.page
    }

    /// The language the participant took the study in (`None`: made before languages, so
    /// English); a stored text that is not a tag is [`StoreError::Corrupt`].
    pub fn language(&self) -> Result<Option<Lang>, StoreError> {
        self.language
            .as_deref()
            .map(|t| {
                Lang::parse(t).map_err(|detail| StoreError::Corrupt {
                    table: "participants",
                    row: self.id.to_string(),
                    column: participants::language::NAME.to_owned(),
                    detail,
                })
            })
            .transpose()
    }

    /// The item order shown on a questionnaire page (canonical when none was stored, or the
    /// stored one is for another number of items).
    pub fn order(&self, page: Page, n: usize) -> Vec<u32> {
        let stored = match page {
            Page::PanasBefore => self.order_default.as_ref(),
            Page::PanasAfter => self.order_evoked.as_ref(),
            _ => None,
        };
        stored
            .map(|o| o.0.clone())
            .filter(|o| o.len() == n)
            .unwrap_or_else(|| (1..=n as u32).collect())
    }
}

/// Identifiers a participant arrived with.
#[derive(Debug, Clone, Default)]
pub struct Arrival {
    pub prolific_pid: Option<String>,
    pub prolific_study_id: Option<String>,
    pub prolific_session_id: Option<String>,
    pub user_agent: Option<String>,
    /// Came through the study's pilot link ([`Participant::pilot`]).
    pub pilot: bool,
    /// The language chosen on the consent page, one of the study's (#20).
    pub language: Option<String>,
}

/// The participant of a study with `column = value` (a unique key): one query on the backend's
/// own connection, and a row that does not decode named by its id (see [`decoded`]).
/// On Postgres the statement of [`pg_pages::ByKey`] for `$key` (its column), so its plan goes
/// through the key's own index.
macro_rules! unique_participant {
    ($conn:expr, $study:expr, $column:expr, $key:ty, $value:expr) => {{
        let query = participants::table
            .filter(participants::study_id.eq($study))
            .filter($column.eq($value));
        let found = match &mut *$conn {
            DbConnection::Sqlite(c) => query
                .select(Participant::as_select())
                .get_result(c)
                .optional(),
            DbConnection::Postgresql(c) => {
                pg_pages::ByKey::<$key, Participant>::new($study, $value.to_owned())
                    .get_result(c)
                    .optional()
            }
        };
        decoded($conn, found, |conn| {
            query.select(participants::id).get_result(conn)
        })
    }};
}

pub fn by_public_id(
    conn: &mut DbConnection,
    study_id: StudyId,
    public_id: &str,
) -> QueryResult<Option<Participant>> {
    unique_participant!(
        conn,
        study_id,
        participants::public_id,
        pg_pages::PublicId,
        public_id
    )
}

/// The participant a survey cookie names.
pub fn by_key(
    conn: &mut DbConnection,
    study_id: StudyId,
    key: &SessionKey,
) -> QueryResult<Option<Participant>> {
    match key {
        SessionKey::Owner(secret) => by_public_id(conn, study_id, secret),
        SessionKey::Resumed(key) => {
            unique_participant!(
                conn,
                study_id,
                participants::resume_id,
                pg_pages::ResumeId,
                key.as_str()
            )
        }
    }
}

/// The key a browser gets when it resumes a participant by Prolific id (see [`SessionKey`]):
/// made once per participant and kept, so every such browser shares it.
pub fn resume_key(conn: &mut DbConnection, participant: ParticipantId) -> QueryResult<String> {
    let fresh = crate::auth::password::random_secret(24);
    diesel::update(
        participants::table
            .find(participant)
            .filter(participants::resume_id.is_null()),
    )
    .set(participants::resume_id.eq(&fresh))
    .execute(conn)?;
    participants::table
        .find(participant)
        .select(participants::resume_id.assume_not_null())
        .get_result(conn)
}

pub fn by_pid(
    conn: &mut DbConnection,
    study_id: StudyId,
    pid: &str,
) -> QueryResult<Option<Participant>> {
    unique_participant!(
        conn,
        study_id,
        participants::prolific_pid,
        pg_pages::ProlificPid,
        pid
    )
}

pub fn get(conn: &mut DbConnection, id: ParticipantId) -> QueryResult<Participant> {
    let query = participants::table.find(id);
    per_backend!(conn, |c| query
        .select(Participant::as_select())
        .get_result(c))
    .map_err(corrupt_row("participants", id))
}

/// A participant row that did not decode names its id (looked up again only then, so the
/// hot path keeps its one query).
fn decoded<T>(
    conn: &mut DbConnection,
    found: QueryResult<T>,
    id_of: impl FnOnce(&mut DbConnection) -> QueryResult<ParticipantId>,
) -> QueryResult<T> {
    match found {
        Err(e @ diesel::result::Error::DeserializationError(_)) => {
            let row = id_of(conn).map_or_else(|_| "?".to_owned(), |id| id.to_string());
            Err(corrupt_row("participants", row)(e))
        }
        other => other,
    }
}

/// Situation cells of a study: completed and live reservations per situation of its set.
pub fn cells(conn: &mut DbConnection, study: &Study, at: NaiveDateTime) -> QueryResult<Vec<Cell>> {
    let ids = assignable(conn, study)?;
    counted(conn, study, ids, at)
}

/// The situations a study assigns: those of its set, of its valences when it names any.
fn assignable(conn: &mut DbConnection, study: &Study) -> QueryResult<Vec<SituationId>> {
    let Some(set) = study.situation_set_id else {
        return Ok(Vec::new());
    };
    // Run at every consent: on the backend's own connection (see `per_backend!`).
    let ids = situations::table
        .filter(situations::set_id.eq(set))
        .select((situations::id, situations::valence));
    let ids: Vec<(SituationId, String)> = per_backend!(conn, |c| ids.load(c))?;
    // A study that selects by valence (#18) assigns only those situations; a few rows per set,
    // so filtered here rather than with a query per selection.
    let chosen = &study.valences.0;
    let mut kept = Vec::with_capacity(ids.len());
    for (id, valence) in ids {
        let valence = Valence::parse(&valence).ok_or_else(|| {
            diesel::result::Error::DeserializationError(Box::new(super::columns::CorruptRow {
                table: "situations",
                row: id.0.to_string(),
                column: "valence".to_owned(),
                detail: format!("unknown valence {valence:?}"),
            }))
        })?;
        if chosen.is_empty() || chosen.contains(&valence) {
            kept.push(id);
        }
    }
    Ok(kept)
}

/// The cells of `ids`: their completed participants and running reservations at `at`.
fn counted(
    conn: &mut DbConnection,
    study: &Study,
    ids: Vec<SituationId>,
    at: NaiveDateTime,
) -> QueryResult<Vec<Cell>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    use diesel::sql_types::Bool;
    // Kept by triggers (migration `situation_counts`): one row per situation, however many
    // participants the study has.
    let completed = situation_counts::table
        .filter(situation_counts::study_id.eq(study.id))
        .select((
            situation_counts::situation_id.nullable(),
            situation_counts::completed,
            false.into_sql::<Bool>(),
        ));
    let active = participants::table
        .filter(participants::study_id.eq(study.id))
        .filter(participants::status.eq(ParticipantStatus::Active))
        .filter(participants::reserved_until.gt(at))
        // A pilot holds no place (its completion does not count either: the triggers).
        .filter(participants::pilot.eq(false))
        .group_by(participants::situation_id)
        .select((
            participants::situation_id,
            diesel::dsl::count_star(),
            true.into_sql::<Bool>(),
        ));
    // One statement, each part planned as when they were two (one round trip fewer while the
    // consent holds the study's assignment lock on Postgres, issue #19).
    let both = completed.union_all(active);
    let counts: Vec<(Option<SituationId>, i64, bool)> = per_backend!(conn, |c| both.load(c))?;
    let get = |running: bool, id: SituationId| {
        counts
            .iter()
            .find(|(s, _, r)| *s == Some(id) && *r == running)
            .map_or(0, |(_, c, _)| u32::try_from(*c).unwrap_or(u32::MAX))
    };
    Ok(ids
        .into_iter()
        .map(|id| Cell {
            situation_id: id.0,
            completed: get(false, id),
            active: get(true, id),
        })
        .collect())
}

/// True when every situation has reached the study's target of completed participants.
pub fn study_is_full(conn: &mut DbConnection, study: &Study) -> QueryResult<bool> {
    let cells = cells(conn, study, now())?;
    let target = u32::try_from(study.target_per_situation).ok();
    Ok(assignment::is_full(&cells, target))
}

/// Whether [`create`] made the participant or found them.
pub enum Created {
    /// Made now, with the consent page's "shown" event recorded.
    New(Participant),
    /// Already there: nothing was written.
    Found(Participant),
}

impl Created {
    /// The participant, made or found.
    pub fn participant(self) -> Participant {
        match self {
            Created::New(p) | Created::Found(p) => p,
        }
    }
}

/// Creates a participant on the consent page, with that page's "shown" event at `shown`.
/// Returns the existing one when the same session key (a double submit of one consent form)
/// or the same Prolific id (two tabs at once) got here first (`ON CONFLICT DO NOTHING`: no
/// failed statement, which on Postgres would abort a surrounding transaction).
pub fn create(
    conn: &mut DbConnection,
    study: &Study,
    public_id: &str,
    arrival: &Arrival,
    orders: (Vec<u32>, Vec<u32>),
    shown: NaiveDateTime,
) -> Result<Created, StoreError> {
    let t = now();
    let insert = diesel::insert_into(participants::table)
        .values((
            participants::study_id.eq(study.id),
            participants::public_id.eq(public_id),
            participants::export_id.eq(crate::auth::password::random_secret(24)),
            participants::prolific_pid.eq(&arrival.prolific_pid),
            participants::prolific_study_id.eq(&arrival.prolific_study_id),
            participants::prolific_session_id.eq(&arrival.prolific_session_id),
            participants::status.eq(ParticipantStatus::Active),
            participants::page.eq(Page::Consent),
            participants::order_default.eq(Json(orders.0)),
            participants::order_evoked.eq(Json(orders.1)),
            participants::user_agent.eq(&arrival.user_agent),
            participants::pilot.eq(arrival.pilot),
            participants::language.eq(&arrival.language),
            participants::created_at.eq(t),
            participants::updated_at.eq(t),
        ))
        .on_conflict_do_nothing();
    // The new row itself, not its id and then a read of it (a round trip on Postgres).
    let inserted: QueryResult<Participant> = match conn {
        // The row and its event in one statement (see `pg_pages::Arrive`).
        DbConnection::Postgresql(c) => {
            let insert = insert.returning(Participant::as_returning());
            pg_pages::Arrive::new(insert, shown).get_result(c)
        }
        DbConnection::Sqlite(c) => insert.returning(Participant::as_returning()).get_result(c),
    };
    match inserted {
        Ok(p) => {
            if let DbConnection::Sqlite(_) = conn {
                record_event_at(conn, p.id, Page::Consent, PageEvent::Shown, shown)?;
            }
            Ok(Created::New(p))
        }
        Err(diesel::result::Error::NotFound) => {
            if let Some(p) = by_public_id(conn, study.id, public_id)? {
                return Ok(Created::Found(p));
            }
            match &arrival.prolific_pid {
                Some(pid) => by_pid(conn, study.id, pid)?
                    .map(Created::Found)
                    .ok_or_else(|| StoreError::Conflict("participant vanished".into())),
                None => Err(StoreError::Conflict("duplicate participant id".into())),
            }
        }
        Err(e) => Err(e.into()),
    }
}

pub fn record_event(
    conn: &mut DbConnection,
    participant: ParticipantId,
    page: Page,
    event: PageEvent,
) -> QueryResult<()> {
    record_event_at(conn, participant, page, event, now())
}

/// Records a page event at `at` (a submit stamps its event with the time of its transaction,
/// the same time as the writes it makes, e.g. `completed_at`).
pub fn record_event_at(
    conn: &mut DbConnection,
    participant: ParticipantId,
    page: Page,
    event: PageEvent,
    at: NaiveDateTime,
) -> QueryResult<()> {
    let insert = diesel::insert_into(page_events::table).values((
        page_events::participant_id.eq(participant),
        page_events::page.eq(page),
        page_events::event.eq(event),
        page_events::at.eq(at),
    ));
    per_backend!(conn, |c| insert.execute(c))?;
    Ok(())
}

/// A page request in one trip: the participant of `public_id` and, when `requested` is their
/// current page, the "shown" event recorded (not on final pages) and, on the situation page,
/// the situation's text. `None` when there is no such participant.
pub fn open_page(
    conn: &mut DbConnection,
    study_id: StudyId,
    key: &SessionKey,
    requested: Option<Page>,
) -> QueryResult<Option<(Participant, Option<String>)>> {
    // The pages that show the situation: its own, and the second questionnaire (in one line).
    let with_text = matches!(requested, Some(Page::Situation | Page::PanasAfter));
    if let DbConnection::Postgresql(c) = conn {
        let show = requested.filter(|p| !p.is_terminal());
        let at = now();
        let found = match key {
            SessionKey::Owner(k) => pg_pages::OpenPage::<pg_pages::PublicId, Participant>::new(
                study_id,
                k.clone(),
                show,
                with_text,
                at,
            )
            .get_result(c)
            .optional(),
            SessionKey::Resumed(k) => pg_pages::OpenPage::<pg_pages::ResumeId, Participant>::new(
                study_id,
                k.clone(),
                show,
                with_text,
                at,
            )
            .get_result(c)
            .optional(),
        };
        return match found {
            // A row that does not decode is named by the plain lookup's error.
            Err(diesel::result::Error::DeserializationError(_)) => {
                by_key(conn, study_id, key).map(|p| p.map(|p| (p, None)))
            }
            other => other,
        };
    }
    let Some(p) = by_key(conn, study_id, key)? else {
        return Ok(None);
    };
    let current = p.page();
    let mut text = None;
    if requested == Some(current) {
        if !current.is_terminal() {
            record_event(conn, p.id, current, PageEvent::Shown)?;
        }
        if with_text {
            text = situation_of(conn, &p)?.map(|(_, text)| text);
        }
    }
    Ok(Some((p, text)))
}

/// When the participant was first shown a page.
pub fn first_shown(
    conn: &mut DbConnection,
    participant: ParticipantId,
    page: Page,
) -> QueryResult<Option<NaiveDateTime>> {
    page_events::table
        .filter(page_events::participant_id.eq(participant))
        .filter(page_events::page.eq(page))
        .filter(page_events::event.eq(PageEvent::Shown))
        .select(diesel::dsl::min(page_events::at))
        .get_result(conn)
}

/// What a page submit stores besides moving the participant on.
#[derive(Debug, Clone)]
pub enum Effect {
    /// Consent given: assign a situation.
    Consent,
    /// Consent declined, check failed with "end", or screened out.
    End(Outcome),
    Demographics(Vec<(String, String)>),
    /// (item number, display position, value).
    Answers {
        phase: Measure,
        answers: Vec<(u32, u32, i32)>,
    },
    Situation {
        too_fast: bool,
        /// The hidden "leave this empty" field came back filled (`domain::evidence`).
        honeypot: bool,
        /// The free-text answer, when the study asks one and it was given (#18).
        text: Option<FreeTextAnswer>,
    },
    Check {
        key: String,
        answer: String,
        passed: bool,
    },
    Complete,
}

/// A participant's free-text answer (#18) with the task and the prompt it answered, as the
/// situation page's submit stores it in `participant_texts`.
#[derive(Clone, PartialEq, Eq)]
pub struct FreeTextAnswer {
    pub task: String,
    pub prompt: String,
    pub body: String,
}

/// Never the participant's words: an `Effect` may end up in a log line or an error's context.
impl std::fmt::Debug for FreeTextAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FreeTextAnswer")
            .field("task", &self.task)
            .field("chars", &self.body.chars().count())
            .finish_non_exhaustive()
    }
}

/// Why a submit did not move the participant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitted {
    /// Stored and moved on.
    Moved,
    /// The participant was no longer on that page (double submit, Back + resubmit): nothing changed.
    Stale,
    /// Consent given but every situation is full: ended as screened out.
    Full,
}

/// [`submit`], and the participant as it then is (moved on, or wherever a stale submit found
/// them). On Postgres the pages that store only their own answers do it in one statement
/// ([`pg_pages::Submit`]) that returns the moved participant; everything else is `submit`
/// followed by a read.
pub fn submit_and_get(
    conn: &mut DbConnection,
    study: &Study,
    participant: ParticipantId,
    from: Page,
    to: Page,
    effect: Effect,
) -> Result<(Submitted, Participant), StoreError> {
    if let (DbConnection::Postgresql(_), Effect::Consent) = (&*conn, &effect) {
        return pg_consent(conn, study, participant, from, to);
    }
    let effect = match conn {
        DbConnection::Postgresql(c) => match pg_submit(c, study, participant, from, to, effect) {
            Ok(Some(p)) => return Ok((Submitted::Moved, p)),
            // Stale: the participant is read below, wherever they now are.
            Ok(None) => None,
            Err(PgSubmit::Other(effect)) => Some(effect),
            Err(PgSubmit::Failed(e @ diesel::result::Error::DeserializationError(_))) => {
                return Err(corrupt_row("participants", participant)(e).into());
            }
            Err(PgSubmit::Failed(e)) => return Err(e.into()),
        },
        DbConnection::Sqlite(_) => Some(effect),
    };
    let submitted = match effect {
        Some(effect) => submit(conn, study, participant, from, to, effect)?,
        None => Submitted::Stale,
    };
    Ok((submitted, get(conn, participant)?))
}

/// The consent on Postgres (#19): the study's assignment lock, its counts, then the move, its
/// "submitted" event and the draw in one statement that returns the participant ([`submit`]
/// moved, recorded, drew under the lock, wrote the draw with a second UPDATE of the row, and
/// the participant was read after the commit: six statements where this has three). The
/// guard is the same `page = from AND status = active` UPDATE, now under the lock: a double
/// submit waits its turn and then moves nothing. When every situation is full the draw
/// screens the participant out, through [`submit_in_tx`] in the same transaction (its lock
/// is this one again; rare enough to keep one way of ending a participant).
fn pg_consent(
    conn: &mut DbConnection,
    study: &Study,
    participant: ParticipantId,
    from: Page,
    to: Page,
) -> Result<(Submitted, Participant), StoreError> {
    let ids = assignable(conn, study)?;
    let done = conn.transaction(|conn| {
        let t = now();
        let Some((situation, record)) = draw_under_lock(conn, study, participant, ids, t)? else {
            let submitted = submit_in_tx(conn, study, participant, from, to, Effect::Consent)?;
            return Ok((submitted, None));
        };
        let stores = pg_pages::Assigned { situation, record };
        let reserve = reserved_until(study, t);
        let DbConnection::Postgresql(c) = conn else {
            return Err(StoreError::Inconsistent("consent: not Postgres".into()));
        };
        let moved = pg_pages::Submit::<_, Participant>::new(
            participant,
            from,
            to,
            t,
            Some(reserve),
            stores,
        )
        .get_result(c)
        .optional()
        .map_err(corrupt_row("participants", participant))?;
        Ok::<_, StoreError>(match moved {
            Some(p) => (Submitted::Moved, Some(p)),
            None => (Submitted::Stale, None),
        })
    })?;
    match done {
        (submitted, Some(p)) => Ok((submitted, p)),
        // Stale or screened out: the participant as they now are.
        (submitted, None) => Ok((submitted, get(conn, participant)?)),
    }
}

/// The consent's draw among `ids` (the study's assignable situations): under the study's
/// assignment lock, the least-filled situation by the cells' counts at `t`, and the record of
/// the draw stored with it; `None` when every situation is full.
fn draw_under_lock(
    conn: &mut DbConnection,
    study: &Study,
    participant: ParticipantId,
    ids: Vec<SituationId>,
    t: NaiveDateTime,
) -> Result<Option<(SituationId, String)>, StoreError> {
    assignment_lock(conn, study)?;
    let cells = counted(conn, study, ids, t)?;
    let target = u32::try_from(study.target_per_situation).ok();
    let seed = assignment::mix_seed(study.seed as u64, participant.0 as u64);
    match assignment::assign(&cells, target, seed) {
        Assignment::Assigned(draw) => {
            let record = serde_json::to_string(&draw)
                .map_err(|e| StoreError::Inconsistent(e.to_string()))?;
            Ok(Some((SituationId(draw.situation_id), record)))
        }
        Assignment::Full => Ok(None),
    }
}

/// Until when a participant who moves on at `t` keeps their situation reserved.
fn reserved_until(study: &Study, t: NaiveDateTime) -> NaiveDateTime {
    t + Duration::minutes(i64::from(study.reservation_minutes.max(1)))
}

/// Serialises a study's assignments on Postgres so two arrivals cannot both take the same
/// least-filled situation: a transaction-scoped advisory lock on the study (shared by every
/// replica on this database), not a lock on its row. Every arriving participant's INSERT
/// checks its foreign key with `FOR KEY SHARE` on that row; `FOR UPDATE` made each arrival wait
/// for the consent before it (7 ms an INSERT at concurrency 200), and `FOR NO KEY UPDATE`
/// beside the key sharers turned the row's lock into a multixact on every arrival (Postgres's
/// CPU per participant up by half): BENCHMARKS.md, "Postgres: consents". On SQLite the
/// transaction's write lock already serialises them.
fn assignment_lock(conn: &mut DbConnection, study: &Study) -> QueryResult<()> {
    if let DbConnection::Postgresql(_) = conn {
        diesel::sql_query("SELECT pg_advisory_xact_lock($1, ($2 % 2147483647)::int)")
            .bind::<diesel::sql_types::Integer, _>(ASSIGNMENT_LOCK)
            .bind::<diesel::sql_types::BigInt, _>(study.id)
            .execute(conn)?;
    }
    Ok(())
}

/// Why [`pg_submit`] did not store the page.
enum PgSubmit {
    /// Consent (which assigns a situation) and the ends: `submit`'s.
    Other(Effect),
    Failed(diesel::result::Error),
}

/// The one-statement submit of the pages that store only their answers (see [`pg_pages`]).
fn pg_submit(
    conn: &mut diesel::PgConnection,
    study: &Study,
    participant: ParticipantId,
    from: Page,
    to: Page,
    effect: Effect,
) -> Result<Option<Participant>, PgSubmit> {
    use pg_pages::Submit;
    let t = now();
    let reserve = reserved_until(study, t);
    let reserve = Some(reserve);
    let done = match effect {
        Effect::Complete => {
            let stores = pg_pages::Complete {
                id: participant,
                at: t,
            };
            Submit::<_, Participant>::new(participant, from, to, t, None, stores)
                .get_result(conn)
                .optional()
        }
        Effect::Demographics(d) => {
            let json = demographics_json(d);
            Submit::<_, Participant>::new(
                participant,
                from,
                to,
                t,
                reserve,
                pg_pages::Demographics(json),
            )
            .get_result(conn)
            .optional()
        }
        Effect::Answers { phase, answers } => {
            let stores = pg_pages::Answers::new(phase, &answers, t);
            Submit::<_, Participant>::new(participant, from, to, t, reserve, stores)
                .get_result(conn)
                .optional()
        }
        // With a free text: two tables, so `submit`'s transaction (rare enough not to need a
        // statement of its own).
        effect @ Effect::Situation { text: Some(_), .. } => return Err(PgSubmit::Other(effect)),
        Effect::Situation {
            too_fast,
            honeypot,
            text: None,
        } => {
            let stores = pg_pages::Situation { too_fast, honeypot };
            Submit::<_, Participant>::new(participant, from, to, t, reserve, stores)
                .get_result(conn)
                .optional()
        }
        Effect::Check {
            key,
            answer,
            passed,
        } => {
            let stores = pg_pages::Check {
                key,
                answer,
                passed,
                failed: !passed,
                at: t,
            };
            Submit::<_, Participant>::new(participant, from, to, t, reserve, stores)
                .get_result(conn)
                .optional()
        }
        other @ (Effect::Consent | Effect::End(_)) => {
            return Err(PgSubmit::Other(other));
        }
    };
    done.map_err(PgSubmit::Failed)
}

/// The demographic answers as the JSON object stored in `participants.demographics`.
fn demographics_json(d: Vec<(String, String)>) -> String {
    let map: serde_json::Map<String, serde_json::Value> = d
        .into_iter()
        .map(|(k, v)| (k, serde_json::Value::String(v)))
        .collect();
    serde_json::Value::Object(map).to_string()
}

/// The first key of the advisory lock that serialises a study's assignments on Postgres
/// (the second is the study's id, modulo 2^31 - 1: two studies whose ids collide there only
/// take turns at assigning); no other advisory lock of ours uses it.
const ASSIGNMENT_LOCK: i32 = 1901;

/// Moves `participant` from `from` to `to` and stores `effect`, all in one transaction.
pub fn submit(
    conn: &mut DbConnection,
    study: &Study,
    participant: ParticipantId,
    from: Page,
    to: Page,
    effect: Effect,
) -> Result<Submitted, StoreError> {
    conn.transaction(|conn| submit_in_tx(conn, study, participant, from, to, effect))
}

fn submit_in_tx(
    conn: &mut DbConnection,
    study: &Study,
    participant: ParticipantId,
    from: Page,
    to: Page,
    effect: Effect,
) -> Result<Submitted, StoreError> {
    let t = now();
    let reserve = reserved_until(study, t);
    // The guard: only the request that finds the participant still on `from` proceeds. On
    // SQLite this UPDATE also takes the write lock, serialising the rest of the transaction.
    let moved = hot::MovePage {
        id: participant,
        from,
        to,
        at: t,
        reserve,
    }
    .execute(conn)?;
    if moved == 0 {
        return Ok(Submitted::Stale);
    }
    record_event_at(conn, participant, from, PageEvent::Submitted, t)?;
    let mut result = Submitted::Moved;
    match effect {
        Effect::Consent => {
            // Read before the lock below: no consent changes which situations a study assigns,
            // and every statement under the lock is one more that the next consent waits for.
            let ids = assignable(conn, study)?;
            match draw_under_lock(conn, study, participant, ids, t)? {
                Some((situation, record)) => {
                    hot::Assign {
                        id: participant,
                        situation,
                        record,
                    }
                    .execute(conn)?;
                }
                None => {
                    end(conn, participant, Outcome::ScreenedOut, t)?;
                    result = Submitted::Full;
                }
            }
        }
        Effect::End(outcome) => {
            if outcome == Outcome::FailedAttentionCheck {
                diesel::update(participants::table.find(participant))
                    .set(participants::flag_failed_check.eq(true))
                    .execute(conn)?;
            }
            end(conn, participant, outcome, t)?;
        }
        Effect::Demographics(d) => {
            hot::Demographics {
                id: participant,
                json: demographics_json(d),
            }
            .execute(conn)?;
        }
        Effect::Answers { phase, answers } => {
            let rows: Vec<_> = answers
                .iter()
                .map(|(item, pos, value)| {
                    (
                        responses::participant_id.eq(participant),
                        responses::phase.eq(phase),
                        responses::item_number.eq(*item as i32),
                        responses::value.eq(*value),
                        responses::display_position.eq(*pos as i32),
                        responses::created_at.eq(t),
                    )
                })
                .collect();
            // Multi-row INSERT: one statement for the page (MultiBackend lacks batch inserts).
            let insert = diesel::insert_into(responses::table).values(rows);
            per_backend!(conn, |c| insert.execute(c))?;
        }
        Effect::Situation {
            too_fast,
            honeypot,
            text,
        } => {
            flag_situation(conn, participant, too_fast, honeypot)?;
            if let Some(text) = text {
                insert_text(conn, participant, text, t)?;
            }
        }
        Effect::Check {
            key,
            answer,
            passed,
        } => {
            diesel::insert_into(attention_checks::table)
                .values((
                    attention_checks::participant_id.eq(participant),
                    attention_checks::check_key.eq(key),
                    attention_checks::answer.eq(answer),
                    attention_checks::passed.eq(passed),
                    attention_checks::created_at.eq(t),
                ))
                .execute(conn)?;
            if !passed {
                diesel::update(participants::table.find(participant))
                    .set(participants::flag_failed_check.eq(true))
                    .execute(conn)?;
            }
        }
        Effect::Complete => complete(conn, participant, t)?,
    }
    Ok(result)
}

/// Completion: the straight-lining flag from the stored answers, then the status.
fn complete(
    conn: &mut DbConnection,
    participant: ParticipantId,
    t: NaiveDateTime,
) -> Result<(), StoreError> {
    let values = responses::table
        .filter(responses::participant_id.eq(participant))
        .select((responses::phase, responses::value));
    let values: Vec<(Measure, i32)> = per_backend!(conn, |c| values.load(c)).map_err(
        corrupt_row("responses", format!("of participant {participant}")),
    )?;
    let straight = [Measure::Default, Measure::Evoked].iter().any(|ph| {
        let v: Vec<i32> = values
            .iter()
            .filter(|(p, _)| p == ph)
            .map(|(_, v)| *v)
            .collect();
        crate::domain::survey::is_straightlined(&v)
    });
    hot::Complete {
        id: participant,
        status: Outcome::Completed.status(),
        at: t,
        straight,
    }
    .execute(conn)?;
    Ok(())
}

/// The situation page's free text (#18). Once: the submit's guard let only this request
/// through, and the UNIQUE participant column would refuse a second row anyway.
fn insert_text(
    conn: &mut DbConnection,
    participant: ParticipantId,
    text: FreeTextAnswer,
    t: NaiveDateTime,
) -> QueryResult<()> {
    diesel::insert_into(participant_texts::table)
        .values((
            participant_texts::participant_id.eq(participant),
            participant_texts::task_key.eq(text.task),
            participant_texts::prompt.eq(text.prompt),
            participant_texts::body.eq(text.body),
            participant_texts::created_at.eq(t),
        ))
        .execute(conn)?;
    Ok(())
}

/// The situation page's flags (a flag once set stays set): one UPDATE at most, and none for
/// the usual human (neither flag).
fn flag_situation(
    conn: &mut DbConnection,
    participant: ParticipantId,
    too_fast: bool,
    honeypot: bool,
) -> QueryResult<()> {
    if too_fast || honeypot {
        diesel::update(participants::table.find(participant))
            .set((
                participants::flag_fast
                    .eq(participants::flag_fast.or(too_fast.into_sql::<diesel::sql_types::Bool>())),
                participants::flag_honeypot
                    .eq(participants::flag_honeypot
                        .or(honeypot.into_sql::<diesel::sql_types::Bool>())),
            ))
            .execute(conn)?;
    }
    Ok(())
}

/// The UPDATEs every participant's submits run, written as our own query fragments: diesel
/// never caches the prepared statement of an `update()` (its SET list may vary with the
/// values), so each would be compiled again on every page submit. These have one fixed SQL
/// text each (plain identifiers, valid on both backends) and a static query id, so each
/// pooled connection prepares them once.
mod hot {
    use chrono::NaiveDateTime;
    use diesel::query_builder::{AstPass, QueryFragment, QueryId};
    use diesel::sql_types::{BigInt, Bool, Text, Timestamp};
    use diesel::{QueryResult, RunQueryDsl};

    use crate::domain::survey::{Page, ParticipantStatus};
    use crate::store::db::MultiBackend;
    use crate::store::{DbConnection, ParticipantId, SituationId};

    /// The submit guard: moves the participant from `from` to `to` only while still active on
    /// `from` (0 rows: a double submit or another tab got there first).
    #[derive(QueryId)]
    pub struct MovePage {
        pub id: ParticipantId,
        pub from: Page,
        pub to: Page,
        pub at: NaiveDateTime,
        pub reserve: NaiveDateTime,
    }

    impl QueryFragment<MultiBackend> for MovePage {
        fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, MultiBackend>) -> QueryResult<()> {
            out.push_sql("UPDATE participants SET page = ");
            out.push_bind_param::<Text, _>(&self.to)?;
            out.push_sql(", updated_at = ");
            out.push_bind_param::<Timestamp, _>(&self.at)?;
            out.push_sql(", reserved_until = ");
            out.push_bind_param::<Timestamp, _>(&self.reserve)?;
            out.push_sql(" WHERE id = ");
            out.push_bind_param::<BigInt, _>(&self.id)?;
            out.push_sql(" AND page = ");
            out.push_bind_param::<Text, _>(&self.from)?;
            out.push_sql(" AND status = ");
            out.push_bind_param::<Text, _>(&ParticipantStatus::Active)?;
            Ok(())
        }
    }

    impl RunQueryDsl<DbConnection> for MovePage {}

    /// The situation drawn at consent, with the record of the draw.
    #[derive(QueryId)]
    pub struct Assign {
        pub id: ParticipantId,
        pub situation: SituationId,
        pub record: String,
    }

    impl QueryFragment<MultiBackend> for Assign {
        fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, MultiBackend>) -> QueryResult<()> {
            out.push_sql("UPDATE participants SET situation_id = ");
            out.push_bind_param::<BigInt, _>(&self.situation)?;
            out.push_sql(", assignment = ");
            out.push_bind_param::<Text, _>(&self.record)?;
            out.push_sql(" WHERE id = ");
            out.push_bind_param::<BigInt, _>(&self.id)?;
            Ok(())
        }
    }

    impl RunQueryDsl<DbConnection> for Assign {}

    /// The demographic answers, as a JSON object.
    #[derive(QueryId)]
    pub struct Demographics {
        pub id: ParticipantId,
        pub json: String,
    }

    impl QueryFragment<MultiBackend> for Demographics {
        fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, MultiBackend>) -> QueryResult<()> {
            out.push_sql("UPDATE participants SET demographics = ");
            out.push_bind_param::<Text, _>(&self.json)?;
            out.push_sql(" WHERE id = ");
            out.push_bind_param::<BigInt, _>(&self.id)?;
            Ok(())
        }
    }

    impl RunQueryDsl<DbConnection> for Demographics {}

    /// Completion: status, time, no more reservation, the straight-lining flag.
    #[derive(QueryId)]
    pub struct Complete {
        pub id: ParticipantId,
        pub status: ParticipantStatus,
        pub at: NaiveDateTime,
        pub straight: bool,
    }

    impl QueryFragment<MultiBackend> for Complete {
        fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, MultiBackend>) -> QueryResult<()> {
            out.push_sql("UPDATE participants SET status = ");
            out.push_bind_param::<Text, _>(&self.status)?;
            out.push_sql(", completed_at = ");
            out.push_bind_param::<Timestamp, _>(&self.at)?;
            out.push_sql(", reserved_until = NULL, flag_straightline = ");
            out.push_bind_param::<Bool, _>(&self.straight)?;
            out.push_sql(" WHERE id = ");
            out.push_bind_param::<BigInt, _>(&self.id)?;
            Ok(())
        }
    }

    impl RunQueryDsl<DbConnection> for Complete {}
}

fn end(
    conn: &mut DbConnection,
    participant: ParticipantId,
    outcome: Outcome,
    t: NaiveDateTime,
) -> QueryResult<()> {
    if outcome == Outcome::NoConsent {
        // Declining stores no answers (there are none yet; be sure).
        delete_answers(conn, participant)?;
    }
    diesel::update(participants::table.find(participant))
        .set((
            participants::status.eq(outcome.status()),
            participants::page.eq(Page::Ended),
            participants::reserved_until.eq(None::<NaiveDateTime>),
            participants::updated_at.eq(t),
            participants::completed_at.eq(Some(t)),
        ))
        .execute(conn)?;
    Ok(())
}

fn delete_answers(conn: &mut DbConnection, participant: ParticipantId) -> QueryResult<()> {
    diesel::delete(responses::table.filter(responses::participant_id.eq(participant)))
        .execute(conn)?;
    diesel::delete(
        attention_checks::table.filter(attention_checks::participant_id.eq(participant)),
    )
    .execute(conn)?;
    diesel::delete(page_events::table.filter(page_events::participant_id.eq(participant)))
        .execute(conn)?;
    diesel::delete(
        participant_texts::table.filter(participant_texts::participant_id.eq(participant)),
    )
    .execute(conn)?;
    Ok(())
}

/// Withdraws a participant: deletes every answer (the free text too), the demographics and
/// the timings. The row
/// stays (status `withdrawn`) so the same Prolific id returning is not counted as new.
pub fn withdraw(conn: &mut DbConnection, participant: ParticipantId) -> Result<(), StoreError> {
    conn.transaction(|conn| {
        delete_answers(conn, participant)?;
        diesel::update(participants::table.find(participant))
            .set((
                participants::status.eq(ParticipantStatus::Withdrawn),
                participants::page.eq(Page::Withdrawn),
                participants::demographics.eq(None::<DemographicAnswers>),
                participants::reserved_until.eq(None::<NaiveDateTime>),
                participants::updated_at.eq(now()),
            ))
            .execute(conn)?;
        Ok(())
    })
}

/// Stored answers of a participant: (phase, item, value), for tests and exports.
pub fn answers(
    conn: &mut DbConnection,
    participant: ParticipantId,
) -> QueryResult<Vec<(Measure, i32, i32)>> {
    responses::table
        .filter(responses::participant_id.eq(participant))
        .order((responses::phase, responses::item_number))
        .select((responses::phase, responses::item_number, responses::value))
        .load(conn)
}

/// A participant's stored free-text answer (#18): (task key, prompt, text).
pub fn free_text(
    conn: &mut DbConnection,
    participant: ParticipantId,
) -> QueryResult<Option<(String, String, String)>> {
    participant_texts::table
        .filter(participant_texts::participant_id.eq(participant))
        .select((
            participant_texts::task_key,
            participant_texts::prompt,
            participant_texts::body,
        ))
        .first(conn)
        .optional()
}

/// The situation text and key a participant was assigned.
pub fn situation_of(
    conn: &mut DbConnection,
    participant: &Participant,
) -> QueryResult<Option<(String, String)>> {
    let Some(id) = participant.situation_id else {
        return Ok(None);
    };
    let query = situations::table
        .find(id)
        .select((situations::key, situations::text));
    let found: Option<(String, String)> = per_backend!(conn, |c| query.get_result(c).optional())?;
    // The participant's language's text when the situation has one (#20), else its own.
    match (found, participant.language.as_deref()) {
        (Some((key, own)), Some(lang)) => {
            let text = super::situation_texts::text_in(conn, id.0, lang)?.unwrap_or(own);
            Ok(Some((key, text)))
        }
        (found, _) => Ok(found),
    }
}

/// Who a deletion would remove, as its confirmation page shows them.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ParticipantBrief {
    pub id: ParticipantId,
    /// The participant id of the exports.
    pub export_id: String,
    pub prolific_pid: Option<String>,
    pub status: ParticipantStatus,
    /// The key of the situation assigned, if any.
    pub situation: Option<String>,
    pub created_at: NaiveDateTime,
}

/// The participant of a study whose export id or Prolific id is `which` (an export id first:
/// it is what the exports show; both are unique within a study).
pub fn find_by_export_or_pid(
    conn: &mut DbConnection,
    study_id: StudyId,
    which: &str,
) -> QueryResult<Option<ParticipantBrief>> {
    let found = participants::table
        .left_join(situations::table)
        .filter(participants::study_id.eq(study_id))
        .filter(
            participants::export_id
                .eq(which)
                .or(participants::prolific_pid.eq(which)),
        )
        .order(participants::export_id.eq(which).desc())
        .select((
            participants::id,
            participants::export_id,
            participants::prolific_pid,
            participants::status,
            situations::key.nullable(),
            participants::created_at,
        ))
        .load::<(
            ParticipantId,
            String,
            Option<String>,
            ParticipantStatus,
            Option<String>,
            NaiveDateTime,
        )>(conn)
        .map_err(corrupt_row("participants", format!("study {study_id}")))?;
    Ok(found.into_iter().next().map(
        |(id, export_id, prolific_pid, status, situation, created_at)| ParticipantBrief {
            id,
            export_id,
            prolific_pid,
            status,
            situation,
            created_at,
        },
    ))
}

/// Deletes one participant of a study and, by cascade, everything they submitted.
pub fn delete(
    conn: &mut DbConnection,
    study_id: StudyId,
    participant: ParticipantId,
) -> QueryResult<usize> {
    diesel::delete(
        participants::table
            .filter(participants::study_id.eq(study_id))
            .filter(participants::id.eq(participant)),
    )
    .execute(conn)
}

/// Deletes a study's pilot participants (answers, events and checks go by cascade); returns
/// how many.
pub fn delete_pilots(conn: &mut DbConnection, study_id: StudyId) -> QueryResult<usize> {
    diesel::delete(
        participants::table
            .filter(participants::study_id.eq(study_id))
            .filter(participants::pilot.eq(true)),
    )
    .execute(conn)
}
