//! The survey's page requests on Postgres, each in one statement (issue #19).
//!
//! Why: on Postgres every statement is a round trip to another process, and a page request
//! made several. A GET read the participant, then inserted its "shown" event (a second trip and
//! a commit), and on the situation and second questionnaire pages read the situation's text; a
//! POST read the participant, then `BEGIN`, the guarded move, its "submitted" event, what the
//! page stores, `COMMIT`, and read the participant again: 87 statements per participant in all
//! (BENCHMARKS.md, "Postgres: statements per participant"). Here a GET is one statement and a
//! questionnaire, demographics, situation or check submit is two (the read that the form is
//! parsed against, then one statement that moves and stores). SQLite keeps the separate
//! statements: it runs in-process behind the writer, where a statement costs no trip.
//!
//! What stays as before: one statement is one transaction, so a submit's move, its event and
//! what it stores commit together or not at all, before the reply; the move is still guarded
//! by `page = from AND status = active` (0 rows: a double submit or another tab got there first,
//! nothing is stored); the writes fire the same triggers. Postgres runs the data-modifying parts
//! of a `WITH` on one snapshot, and the INSERTs take their participant from the UPDATE's
//! `RETURNING`, so nothing is inserted for a move that did not happen.
//!
//! The statements return the row type they are given (`participants::Participant`), so this
//! module does not import the participants module that calls it. Each statement is its own
//! type with a static query id, so a pooled connection prepares it
//! once (diesel's statement cache is keyed by that id: two SQL texts must never share a type,
//! which is why the submit is generic over what the page stores).

use std::marker::PhantomData;

use chrono::NaiveDateTime;
use diesel::dsl::AsSelect;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::{Array, BigInt, Bool, Integer, Nullable, Text, Timestamp};
use diesel::{PgConnection, QueryResult, RunQueryDsl, Selectable, SelectableHelper};

use super::{ParticipantId, StudyId};
use crate::domain::measure::Measure;
use crate::domain::survey::{Page, PageEvent, ParticipantStatus};

/// What every statement type here is besides its SQL: a query id of its own (diesel keys its
/// cache of prepared statements by it, so each pooled connection prepares the statement once),
/// the row it returns, and `get_result` on a Postgres connection. The types are generic over
/// the row (`R`) and one more parameter (`$p`, bounded by `$bound`).
macro_rules! statement {
    ($name:ident<$p:ident: $bound:path>, $row:ty) => {
        impl<$p: $bound, R: Selectable<Pg> + 'static> QueryId for $name<$p, R> {
            type QueryId = Self;
            const HAS_STATIC_QUERY_ID: bool = true;
        }

        impl<$p: $bound, R: Selectable<Pg>> Query for $name<$p, R> {
            type SqlType = $row;
        }

        impl<$p: $bound, R: Selectable<Pg>> RunQueryDsl<PgConnection> for $name<$p, R> {}
    };
}

/// The unique column a survey cookie's key is looked up in.
pub trait KeyColumn: 'static {
    const COLUMN: &'static str;
}

/// A participant's own session secret (`participants.public_id`).
pub struct PublicId;
impl KeyColumn for PublicId {
    const COLUMN: &'static str = "public_id";
}

/// The shared key of a participant resumed by Prolific id (`participants.resume_id`).
pub struct ResumeId;
impl KeyColumn for ResumeId {
    const COLUMN: &'static str = "resume_id";
}

/// A participant's Prolific id (`participants.prolific_pid`), unique within a study.
pub struct ProlificPid;
impl KeyColumn for ProlificPid {
    const COLUMN: &'static str = "prolific_pid";
}

statement!(OpenPage<K: KeyColumn>, (AsSelect<R, Pg>, Nullable<Text>));

/// A page request: the participant of `key` in `study` and, in the same statement, the "shown"
/// event of `show` recorded when that is the participant's current page, and the situation's
/// text when `with_text` and the current page is `show`.
pub struct OpenPage<K: KeyColumn, R: Selectable<Pg>> {
    study: StudyId,
    key: String,
    /// The page requested, when it is one that records "shown" (not a final page).
    show: Option<Page>,
    with_text: bool,
    at: NaiveDateTime,
    columns: AsSelect<R, Pg>,
    key_column: PhantomData<K>,
}

impl<K: KeyColumn, R: Selectable<Pg>> OpenPage<K, R> {
    pub fn new(
        study: StudyId,
        key: String,
        show: Option<Page>,
        with_text: bool,
        at: NaiveDateTime,
    ) -> Self {
        Self {
            study,
            key,
            show,
            with_text,
            at,
            columns: R::as_select(),
            key_column: PhantomData,
        }
    }
}

impl<K: KeyColumn, R: Selectable<Pg>> QueryFragment<Pg> for OpenPage<K, R>
where
    AsSelect<R, Pg>: QueryFragment<Pg>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("WITH ");
        by_key::<K, R>(&self.columns, &self.study, &self.key, out.reborrow())?;
        // NULL never equals a page: nothing is recorded for a final page.
        out.push_sql(
            ", shown AS (INSERT INTO page_events (participant_id, page, event, at) \
             SELECT id, page, ",
        );
        out.push_bind_param::<Text, _>(&PageEvent::Shown)?;
        out.push_sql(", ");
        out.push_bind_param::<Timestamp, _>(&self.at)?;
        out.push_sql(" FROM p WHERE page = ");
        out.push_bind_param::<Nullable<Text>, _>(&self.show)?;
        out.push_sql(
            // The participant's language's text when the situation has one (#20), else its own.
            ") SELECT p.*, (SELECT COALESCE((SELECT t.text FROM situation_texts t \
             WHERE t.situation_id = s.id AND t.language = p.language), s.text) \
             FROM situations s WHERE s.id = p.situation_id AND ",
        );
        out.push_bind_param::<Bool, _>(&self.with_text)?;
        out.push_sql(" AND p.page = ");
        out.push_bind_param::<Nullable<Text>, _>(&self.show)?;
        // This statement is its own transaction, and its commit does not wait for the WAL
        // flush (`set_config(…, true)` holds until that commit, which reads it: Postgres's
        // "synchronous_commit", "the behavior for any one transaction is determined by the
        // setting in effect when it commits"). Why that is safe here: what it writes is a
        // "shown" event, not an answer, and no acknowledgement of an answer waits on it. The
        // WAL is one sequence, so the next commit that does wait (any submit, of any
        // participant) makes it durable too, and the WAL writer does within 3 ×
        // `wal_writer_delay` (600 ms by default) when none comes. A clean restart keeps it
        // (the shutdown checkpoint). What a crash of Postgres or of its host in that window
        // can lose is that event alone: the page is shown again when the participant next
        // asks for it, and a situation page whose "shown" is gone is flagged too fast
        // (`app::survey::decide`), the safe side. A GET was 6 of a participant's 14 commits
        // (BENCHMARKS.md, "Postgres: a page view's commit does not wait for the WAL flush").
        out.push_sql(") FROM p WHERE set_config('synchronous_commit', 'off', true) = 'off'");
        Ok(())
    }
}

/// `k AS MATERIALIZED (… WHERE key = $k), p AS (SELECT * FROM k WHERE study_id = $s)`: the
/// participant of `key` in `study`, found through the key's own index whatever the plan.
///
/// Why the fence: Postgres plans a prepared statement generically after five executions and
/// keeps that plan for the connection's life unless the table is analysed (never, with
/// autovacuum off). Planned on a nearly empty `participants`, `study_id = $1 AND public_id =
/// $2` costs the same through any index that starts with `study_id`, and the generic plan took
/// `participants_study_id`: every page request then walked every participant of the study (0.49
/// to 0.56 ms a lookup after 3,000 participants, growing with the study; BENCHMARKS.md,
/// "Postgres: the key's own index"). A `MATERIALIZED` CTE is not merged with the outer query, so
/// the only condition its scan can use is the key's, which only the key's index serves.
fn by_key<'b, K: KeyColumn, R: Selectable<Pg>>(
    columns: &'b AsSelect<R, Pg>,
    study: &'b StudyId,
    key: &'b String,
    mut out: AstPass<'_, 'b, Pg>,
) -> QueryResult<()>
where
    AsSelect<R, Pg>: QueryFragment<Pg>,
{
    out.push_sql("k AS MATERIALIZED (SELECT ");
    columns.walk_ast(out.reborrow())?;
    out.push_sql(" FROM participants WHERE ");
    out.push_sql(K::COLUMN);
    out.push_sql(" = ");
    out.push_bind_param::<Text, _>(key)?;
    out.push_sql("), p AS (SELECT * FROM k WHERE study_id = ");
    out.push_bind_param::<BigInt, _>(study)?;
    out.push_sql(")");
    Ok(())
}

statement!(ByKey<K: KeyColumn>, AsSelect<R, Pg>);

/// The participant of `key` in `study` (a POST's read, the Prolific entry's): the lookup of
/// [`OpenPage`] alone, through the key's own index (see [`by_key`]).
pub struct ByKey<K: KeyColumn, R: Selectable<Pg>> {
    study: StudyId,
    key: String,
    columns: AsSelect<R, Pg>,
    key_column: PhantomData<K>,
}

impl<K: KeyColumn, R: Selectable<Pg>> ByKey<K, R> {
    pub fn new(study: StudyId, key: String) -> Self {
        Self {
            study,
            key,
            columns: R::as_select(),
            key_column: PhantomData,
        }
    }
}

impl<K: KeyColumn, R: Selectable<Pg>> QueryFragment<Pg> for ByKey<K, R>
where
    AsSelect<R, Pg>: QueryFragment<Pg>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("WITH ");
        by_key::<K, R>(&self.columns, &self.study, &self.key, out.reborrow())?;
        out.push_sql(" SELECT * FROM p");
        Ok(())
    }
}

/// What a page stores besides the move, as SQL added to the submit statement: assignments to
/// the participant's row, and further `WITH` parts that insert rows for the participant the
/// UPDATE returned (`moved`).
pub trait Stores: Send + 'static {
    /// `, column = value` parts of the UPDATE's SET list (none unless given).
    fn set<'b>(&'b self, _: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        Ok(())
    }
    /// `, name AS (INSERT ... FROM moved)` parts (none unless given).
    fn insert<'b>(&'b self, _: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        Ok(())
    }
}

/// The demographic answers, as a JSON object.
pub struct Demographics(pub String);

impl Stores for Demographics {
    fn set<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(", demographics = ");
        out.push_bind_param::<Text, _>(&self.0)
    }
}

/// A questionnaire page's answers: one row per item, from three parallel arrays (one bind each
/// whatever the number of items, so the statement text stays the same).
pub struct Answers {
    pub phase: Measure,
    pub items: Vec<i32>,
    pub values: Vec<i32>,
    pub positions: Vec<i32>,
    pub at: NaiveDateTime,
}

impl Answers {
    /// From `(item number, display position, value)` triples.
    pub fn new(phase: Measure, answers: &[(u32, u32, i32)], at: NaiveDateTime) -> Self {
        // Item numbers and positions are small (an instrument's item count): they fit.
        let int = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
        Self {
            phase,
            items: answers.iter().map(|a| int(a.0)).collect(),
            positions: answers.iter().map(|a| int(a.1)).collect(),
            values: answers.iter().map(|a| a.2).collect(),
            at,
        }
    }
}

impl Stores for Answers {
    fn insert<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(
            ", answers AS (INSERT INTO responses \
             (participant_id, phase, item_number, value, display_position, created_at) \
             SELECT moved.id, ",
        );
        out.push_bind_param::<Text, _>(&self.phase)?;
        out.push_sql(", a.item, a.value, a.position, ");
        out.push_bind_param::<Timestamp, _>(&self.at)?;
        out.push_sql(" FROM moved, unnest(");
        out.push_bind_param::<Array<Integer>, _>(&self.items)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Integer>, _>(&self.values)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Integer>, _>(&self.positions)?;
        out.push_sql(") AS a(item, value, position))");
        Ok(())
    }
}

/// The situation page: flags a participant who left it before its minimum time, and one
/// whose hidden "leave this empty" field came back filled (a flag once set stays set). Both
/// in the move's own UPDATE: still one statement for the page.
pub struct Situation {
    pub too_fast: bool,
    pub honeypot: bool,
}

impl Stores for Situation {
    fn set<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(", flag_fast = flag_fast OR ");
        out.push_bind_param::<Bool, _>(&self.too_fast)?;
        out.push_sql(", flag_honeypot = flag_honeypot OR ");
        out.push_bind_param::<Bool, _>(&self.honeypot)
    }
}

/// The consent's draw (#19): the situation the participant is assigned and the record of the
/// draw, set by the move's own UPDATE. It was a second UPDATE of the same row in the consent's
/// transaction, and the participant was read again after the commit; now the row is written
/// once and `RETURNING` is the read.
pub struct Assigned {
    pub situation: super::SituationId,
    pub record: String,
}

impl Stores for Assigned {
    fn set<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(", situation_id = ");
        out.push_bind_param::<BigInt, _>(&self.situation)?;
        out.push_sql(", assignment = ");
        out.push_bind_param::<Text, _>(&self.record)
    }
}

/// The attention check's answer, and the flag when it failed.
pub struct Check {
    pub key: String,
    pub answer: String,
    pub passed: bool,
    pub failed: bool,
    pub at: NaiveDateTime,
}

impl Stores for Check {
    fn set<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(", flag_failed_check = flag_failed_check OR ");
        out.push_bind_param::<Bool, _>(&self.failed)
    }
    fn insert<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(
            ", checked AS (INSERT INTO attention_checks \
             (participant_id, check_key, answer, passed, created_at) SELECT moved.id, ",
        );
        out.push_bind_param::<Text, _>(&self.key)?;
        out.push_sql(", ");
        out.push_bind_param::<Text, _>(&self.answer)?;
        out.push_sql(", ");
        out.push_bind_param::<Bool, _>(&self.passed)?;
        out.push_sql(", ");
        out.push_bind_param::<Timestamp, _>(&self.at)?;
        out.push_sql(" FROM moved)");
        Ok(())
    }
}

/// The last page's submit: the participant completed, with the straight-lining flag (every
/// answer of a questionnaire page the same, as `domain::survey::is_straightlined` decides for
/// SQLite) computed from the stored answers in the same statement.
pub struct Complete {
    pub id: ParticipantId,
    pub at: NaiveDateTime,
}

impl Stores for Complete {
    fn set<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(", status = ");
        // The status `Outcome::Completed.status()` names.
        out.push_bind_param::<Text, _>(&ParticipantStatus::Completed)?;
        out.push_sql(", completed_at = ");
        out.push_bind_param::<Timestamp, _>(&self.at)?;
        out.push_sql(
            ", flag_straightline = COALESCE((SELECT bool_or(n > 1 AND lo = hi) FROM \
             (SELECT count(*) AS n, min(value) AS lo, max(value) AS hi FROM responses \
             WHERE participant_id = ",
        );
        out.push_bind_param::<BigInt, _>(&self.id)?;
        out.push_sql(" AND phase IN (");
        out.push_bind_param::<Text, _>(&Measure::Default)?;
        out.push_sql(", ");
        out.push_bind_param::<Text, _>(&Measure::Evoked)?;
        out.push_sql(") GROUP BY phase) AS pages), false)");
        Ok(())
    }
}

statement!(Submit<S: Stores>, AsSelect<R, Pg>);

/// A page submit: moves the participant from `from` to `to` while still active on `from`,
/// records the "submitted" event and stores `stores`, returning the participant as the move
/// left it (nothing when the guard found them elsewhere).
pub struct Submit<S: Stores, R: Selectable<Pg>> {
    pub id: ParticipantId,
    pub from: Page,
    pub to: Page,
    pub at: NaiveDateTime,
    /// Until when the participant's situation stays reserved (`None`: no longer, at the end).
    pub reserve: Option<NaiveDateTime>,
    pub stores: S,
    columns: AsSelect<R, Pg>,
}

impl<S: Stores, R: Selectable<Pg>> Submit<S, R> {
    pub fn new(
        id: ParticipantId,
        from: Page,
        to: Page,
        at: NaiveDateTime,
        reserve: Option<NaiveDateTime>,
        stores: S,
    ) -> Self {
        Self {
            id,
            from,
            to,
            at,
            reserve,
            stores,
            columns: R::as_select(),
        }
    }
}

impl<S: Stores, R: Selectable<Pg>> QueryFragment<Pg> for Submit<S, R>
where
    AsSelect<R, Pg>: QueryFragment<Pg>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("WITH moved AS (UPDATE participants SET page = ");
        out.push_bind_param::<Text, _>(&self.to)?;
        out.push_sql(", updated_at = ");
        out.push_bind_param::<Timestamp, _>(&self.at)?;
        out.push_sql(", reserved_until = ");
        out.push_bind_param::<Nullable<Timestamp>, _>(&self.reserve)?;
        self.stores.set(&mut out)?;
        out.push_sql(" WHERE id = ");
        out.push_bind_param::<BigInt, _>(&self.id)?;
        out.push_sql(" AND page = ");
        out.push_bind_param::<Text, _>(&self.from)?;
        out.push_sql(" AND status = ");
        out.push_bind_param::<Text, _>(&ParticipantStatus::Active)?;
        out.push_sql(" RETURNING ");
        self.columns.walk_ast(out.reborrow())?;
        out.push_sql(
            "), submitted AS (INSERT INTO page_events (participant_id, page, event, at) \
             SELECT id, ",
        );
        out.push_bind_param::<Text, _>(&self.from)?;
        out.push_sql(", ");
        out.push_bind_param::<Text, _>(&PageEvent::Submitted)?;
        out.push_sql(", ");
        out.push_bind_param::<Timestamp, _>(&self.at)?;
        out.push_sql(" FROM moved)");
        self.stores.insert(&mut out)?;
        out.push_sql(" SELECT * FROM moved");
        Ok(())
    }
}

/// An arrival (#19): the participant's INSERT (`insert`, which returns the new row) and, in
/// the same statement, its consent page's "shown" event at `at`. They were two statements and
/// two commits; the event was always written right after the row, so now a crash cannot fall
/// between them either. The INSERT's `ON CONFLICT DO NOTHING` returns no row for a participant
/// who already exists, and then no event is inserted: the caller reads that participant.
pub struct Arrive<Q> {
    insert: Q,
    at: NaiveDateTime,
}

impl<Q> Arrive<Q> {
    pub fn new(insert: Q, at: NaiveDateTime) -> Self {
        Self { insert, at }
    }
}

impl<Q: QueryId> QueryId for Arrive<Q> {
    type QueryId = Arrive<Q::QueryId>;
    const HAS_STATIC_QUERY_ID: bool = Q::HAS_STATIC_QUERY_ID;
}

impl<Q: Query> Query for Arrive<Q> {
    type SqlType = Q::SqlType;
}

impl<Q: QueryFragment<Pg>> QueryFragment<Pg> for Arrive<Q> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("WITH arrived AS (");
        self.insert.walk_ast(out.reborrow())?;
        out.push_sql(
            "), shown AS (INSERT INTO page_events (participant_id, page, event, at) \
             SELECT id, ",
        );
        out.push_bind_param::<Text, _>(&Page::Consent)?;
        out.push_sql(", ");
        out.push_bind_param::<Text, _>(&PageEvent::Shown)?;
        out.push_sql(", ");
        out.push_bind_param::<Timestamp, _>(&self.at)?;
        out.push_sql(" FROM arrived) SELECT * FROM arrived");
        Ok(())
    }
}

impl<Q> RunQueryDsl<PgConnection> for Arrive<Q> {}
