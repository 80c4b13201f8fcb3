//! Balanced assignment through the real store, with dropouts: 175 situations, a target per
//! situation, ~50 participants in flight, 20 % abandoning mid-survey. Arrivals go through the
//! same store functions the pages call (`participants::create`, then
//! `participants::submit_and_get` for each page of the protocol; consent assigns), until `participants::study_is_full`.
//!
//! The domain simulation in `src/domain/assignment.rs` proves the rule on cells in memory; this
//! test proves what the database ends with: every situation's completed count is within one of
//! every other's, and at least the target.

use std::collections::BTreeMap;
use std::time::Instant;

use chrono::Duration;
use diesel::prelude::*;
use emotionbench::domain::measure::Measure;
use emotionbench::domain::situation::{EMOTIONS, Situation, Valence};
use emotionbench::domain::study::{StudyConfig, StudyStatus};
use emotionbench::domain::survey::{Outcome, Page, PageEvent, SessionKey};
use emotionbench::store::participants::{self, Arrival, Effect, Submitted};
use emotionbench::store::{self, instruments, schema, situations, studies};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::helpers::TestDb;
use crate::on_both_backends;

const SITUATIONS: usize = 175;
/// With 20 % dropouts, 175 × 6 completions take about 1,400 arrivals (the figure).
const TARGET: i32 = 6;
const IN_FLIGHT: usize = 50;
const ABANDON_PERCENT: u32 = 20;

/// 175 synthetic situations: 8 emotions × 4 factors × up to 6 scenarios.
fn synthetic_situations() -> Vec<Situation> {
    (0..SITUATIONS)
        .map(|i| {
            let emotion = EMOTIONS[i % 8];
            let factor = (i / 8) % 4;
            let scenario = i / 32;
            Situation {
                key: format!("{emotion}-{factor}_scenario-{scenario}"),
                emotion: emotion.to_owned(),
                factor_index: factor as u32,
                factor_name: format!("Synthetic factor {factor}"),
                scenario_index: scenario as u32,
                text: format!("Synthetic situation {i} about {emotion}."),
                variant_of: None,
                valence: Valence::Negative,
            }
        })
        .collect()
}

/// The protocol's submits after consent, each with what the page stores.
fn step(page: Page, rng: &mut ChaCha8Rng) -> (Page, Effect) {
    let panas = |phase: Measure, rng: &mut ChaCha8Rng| Effect::Answers {
        phase,
        answers: (1..=20).map(|n| (n, n, rng.random_range(1..=5))).collect(),
    };
    match page {
        Page::Consent => (Page::Demographics, Effect::Consent),
        Page::Demographics => (
            Page::PanasBefore,
            Effect::Demographics(vec![("gender".into(), "Prefer not to say".into())]),
        ),
        Page::PanasBefore => (Page::Situation, panas(Measure::Default, rng)),
        Page::Situation => (
            Page::PanasAfter,
            Effect::Situation {
                too_fast: false,
                honeypot: false,
                text: None,
            },
        ),
        Page::PanasAfter => (Page::Check, panas(Measure::Evoked, rng)),
        Page::Check => (
            Page::Debrief,
            Effect::Check {
                key: "instructed-1".into(),
                answer: "A little".into(),
                passed: true,
            },
        ),
        Page::Debrief => (Page::Done, Effect::Complete),
        other => panic!("no submit from {other:?}"),
    }
}

struct InFlight {
    id: emotionbench::store::ParticipantId,
    page: Page,
    /// Walks away (never comes back) when reaching this page; None = completes.
    abandons_at: Option<Page>,
}

#[derive(Debug, Default)]
struct Tally {
    arrivals: usize,
    completed: usize,
    abandoned: usize,
    screened_out: usize,
}

/// The pages a participant may walk away from: any after consent (they hold a reservation).
const AFTER_CONSENT: [Page; 6] = [
    Page::Demographics,
    Page::PanasBefore,
    Page::Situation,
    Page::PanasAfter,
    Page::Check,
    Page::Debrief,
];

/// The state of the simulation between events.
struct Sim {
    study: studies::Study,
    rng: ChaCha8Rng,
    flight: Vec<InFlight>,
    /// Walked away, reservation still live until the tick given.
    leaving: Vec<(emotionbench::store::ParticipantId, usize)>,
    tick: usize,
    arriving: bool,
    tally: Tally,
}

impl Sim {
    fn done(&self) -> bool {
        !self.arriving && self.flight.is_empty()
    }

    /// One event: an arrival, or one participant in flight submitting a page or walking away.
    fn event(&mut self, conn: &mut store::DbConnection) {
        self.tick += 1;
        assert!(
            self.tick < 100 * SITUATIONS * TARGET as usize,
            "{:?}",
            self.tally
        );
        // Reservations of those who left go stale `reservation_minutes` after their last page:
        // here, some events later (in the database: reserved_until moves into the past).
        let tick = self.tick;
        for (id, _) in self.leaving.iter().filter(|(_, due)| *due <= tick) {
            diesel::update(schema::participants::table.find(*id))
                .set(
                    schema::participants::reserved_until
                        .eq(Some(store::now() - Duration::minutes(1))),
                )
                .execute(conn)
                .unwrap();
        }
        self.leaving.retain(|(_, due)| *due > tick);

        // A new arrival whenever fewer than IN_FLIGHT are taking part, as the entry page does
        // it: refused once the study is full.
        if self.arriving && self.flight.len() < IN_FLIGHT {
            if participants::study_is_full(conn, &self.study).unwrap() {
                self.arriving = false;
                return;
            }
            self.tally.arrivals += 1;
            let p = arrive(conn, &self.study, &format!("sim-{}", self.tally.arrivals));
            let abandons_at = (self.rng.random_range(0..100) < ABANDON_PERCENT)
                .then(|| AFTER_CONSENT[self.rng.random_range(0..AFTER_CONSENT.len())]);
            self.flight.push(InFlight {
                id: p.id,
                page: Page::Consent,
                abandons_at,
            });
            return;
        }
        if self.flight.is_empty() {
            return;
        }
        // Otherwise one participant in flight, chosen at random, does one thing.
        let i = self.rng.random_range(0..self.flight.len());
        let p = &mut self.flight[i];
        if p.abandons_at == Some(p.page) {
            // The tab is closed; the reservation still counts for a while.
            let stale_at = tick + self.rng.random_range(1..=200);
            self.leaving.push((p.id, stale_at));
            self.tally.abandoned += 1;
            self.flight.swap_remove(i);
            return;
        }
        let (to, effect) = step(p.page, &mut self.rng);
        let (outcome, _) =
            participants::submit_and_get(conn, &self.study, p.id, p.page, to, effect).unwrap();
        match outcome {
            Submitted::Moved if to == Page::Done => {
                self.tally.completed += 1;
                self.flight.swap_remove(i);
            }
            Submitted::Moved => p.page = to,
            // Every situation still short holds one spare reservation: turned away now.
            Submitted::Full => {
                self.tally.screened_out += 1;
                self.flight.swap_remove(i);
            }
            Submitted::Stale => panic!("participant {} was not on {:?}", p.id, p.page),
        }
    }
}

/// The study of 175 situations filled by the simulation, with its situation set and tally.
fn simulate(conn: &mut store::DbConnection) -> (studies::Study, store::SituationSetId, Tally) {
    situations::import(conn, "synthetic-175", "test", &synthetic_situations()).unwrap();
    let set = situations::find_set(conn, "synthetic-175")
        .unwrap()
        .unwrap();
    let inst = instruments::ensure_builtin(conn).unwrap();
    let mut config = StudyConfig::new("balance", "Balance");
    config.target_per_situation = TARGET;
    studies::create(
        conn,
        &config,
        StudyStatus::Open,
        studies::Sources::new(inst, Some(set)),
        2024,
    )
    .unwrap();
    let study = studies::load(conn, "balance").unwrap().unwrap();

    let mut sim = Sim {
        study: study.clone(),
        rng: ChaCha8Rng::seed_from_u64(7),
        flight: Vec::new(),
        leaving: Vec::new(),
        tick: 0,
        arriving: true,
        tally: Tally::default(),
    };
    // One connection, so events are strictly sequential whatever the batching: each submit is
    // its own (nested) transaction as in production, and 100 events share one commit only to
    // spare ~10,000 fsyncs.
    while !sim.done() {
        conn.transaction::<_, diesel::result::Error, _>(|conn| {
            for _ in 0..100 {
                if sim.done() {
                    break;
                }
                sim.event(conn);
            }
            Ok(())
        })
        .unwrap();
    }
    (study, set, sim.tally)
}

fn assignment_stays_balanced_with_dropouts(db: TestDb) {
    let started = Instant::now();
    let pool = db.pool();
    let mut conn = pool.get().unwrap();
    let (study, set, tally) = simulate(&mut conn);

    assert!(participants::study_is_full(&mut conn, &study).unwrap());
    // Completed participants per situation, from the database.
    let rows: Vec<(Option<i64>, i64)> = schema::participants::table
        .filter(schema::participants::study_id.eq(study.id))
        .filter(schema::participants::status.eq(Outcome::Completed.status()))
        .group_by(schema::participants::situation_id)
        .select((
            schema::participants::situation_id,
            diesel::dsl::count_star(),
        ))
        .load(&mut conn)
        .unwrap();
    let per_situation: BTreeMap<i64, i64> =
        rows.into_iter().map(|(s, n)| (s.unwrap(), n)).collect();
    assert_eq!(per_situation.len(), SITUATIONS, "every situation completed");
    let min = *per_situation.values().min().unwrap();
    let max = *per_situation.values().max().unwrap();
    let mut histogram: BTreeMap<i64, usize> = BTreeMap::new();
    for n in per_situation.values() {
        *histogram.entry(*n).or_default() += 1;
    }
    let total: i64 = per_situation.values().sum();
    assert_eq!(total as usize, tally.completed);
    eprintln!(
        "assignment ({:?}): {tally:?}; completed per situation → number of situations: \
         {histogram:?}; {:.1} s",
        db.backend,
        started.elapsed().as_secs_f64()
    );
    assert!(
        min >= i64::from(TARGET),
        "a situation below the target: {histogram:?}"
    );
    assert!(max - min <= 1, "unbalanced: {histogram:?}");
    // About a fifth walked away, and the arrivals are of the size the issue names.
    assert!(
        (tally.arrivals / 7..=tally.arrivals / 3).contains(&tally.abandoned),
        "{tally:?}"
    );
    assert!(tally.arrivals >= 1_400, "{tally:?}");
    // Everyone who completed went through every page: 40 answers each.
    let answers: i64 = schema::responses::table
        .inner_join(schema::participants::table)
        .filter(schema::participants::study_id.eq(study.id))
        .filter(schema::participants::status.eq(Outcome::Completed.status()))
        .count()
        .get_result(&mut conn)
        .unwrap();
    assert_eq!(answers as usize, 40 * tally.completed);

    // The assignment read these counts; they must equal the participants they count, and keep
    // doing so through every other kind of change a participant can undergo.
    assert_counts_follow(&mut conn, study.id, "after the survey");
    let completed_ids = |conn: &mut store::DbConnection, n: i64| -> Vec<i64> {
        schema::participants::table
            .filter(schema::participants::study_id.eq(study.id))
            .filter(schema::participants::status.eq(Outcome::Completed.status()))
            .order(schema::participants::id)
            .limit(n)
            .select(schema::participants::id)
            .load(conn)
            .unwrap()
    };
    let some = completed_ids(&mut conn, 10);
    diesel::update(schema::participants::table.filter(schema::participants::id.eq_any(&some)))
        .set(schema::participants::status.eq("withdrawn"))
        .execute(&mut conn)
        .unwrap();
    assert_counts_follow(&mut conn, study.id, "after completed ones left");
    let moved = completed_ids(&mut conn, 1)[0];
    let elsewhere: i64 = schema::situations::table
        .filter(schema::situations::set_id.eq(set.0))
        .order(schema::situations::id.desc())
        .select(schema::situations::id)
        .first(&mut conn)
        .unwrap();
    diesel::update(schema::participants::table.find(moved))
        .set(schema::participants::situation_id.eq(Some(elsewhere)))
        .execute(&mut conn)
        .unwrap();
    assert_counts_follow(&mut conn, study.id, "after one moved to another situation");
    for id in completed_ids(&mut conn, 10) {
        participants::delete(&mut conn, study.id, store::ParticipantId(id)).unwrap();
    }
    assert_counts_follow(&mut conn, study.id, "after deletions");
    // Inserted as completed, as `import humans` does.
    diesel::sql_query(format!(
        "INSERT INTO participants (study_id, public_id, export_id, status, page, situation_id, \
         imported, created_at, updated_at, completed_at) \
         SELECT study_id, public_id || '-copy', export_id || '-copy', status, page, situation_id, \
         imported, \
         created_at, updated_at, completed_at FROM participants \
         WHERE study_id = {} AND status = 'completed' AND id < {}",
        study.id,
        some[0] + 200
    ))
    .execute(&mut conn)
    .unwrap();
    assert_counts_follow(&mut conn, study.id, "after inserting completed ones");
    studies::delete(&mut conn, study.id).unwrap();
    let left: i64 = schema::situation_counts::table
        .filter(schema::situation_counts::study_id.eq(study.id))
        .count()
        .get_result(&mut conn)
        .unwrap();
    assert_eq!(left, 0, "a deleted study's counts go with it");
}

/// `situation_counts` (kept by triggers) equals a count of the study's completed participants
/// per situation; situations without any are absent or zero.
fn assert_counts_follow(conn: &mut store::DbConnection, study: store::StudyId, when: &str) {
    let counted: BTreeMap<i64, i64> = schema::participants::table
        .filter(schema::participants::study_id.eq(study))
        .filter(schema::participants::status.eq(Outcome::Completed.status()))
        .group_by(schema::participants::situation_id)
        .select((
            schema::participants::situation_id,
            diesel::dsl::count_star(),
        ))
        .load::<(Option<i64>, i64)>(conn)
        .unwrap()
        .into_iter()
        .filter_map(|(s, n)| Some((s?, n)))
        .collect();
    let kept: BTreeMap<i64, i64> = schema::situation_counts::table
        .filter(schema::situation_counts::study_id.eq(study))
        .filter(schema::situation_counts::completed.ne(0))
        .select((
            schema::situation_counts::situation_id,
            schema::situation_counts::completed,
        ))
        .load::<(i64, i64)>(conn)
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(kept, counted, "situation_counts {when}");
}

on_both_backends!(assignment_stays_balanced_with_dropouts);

/// Issue #23: the survey's per-request work must not grow with the study. One participant goes
/// through every page (entry lookup, arrival, each page shown and submitted, the full check)
/// and another withdraws, on a study the simulation filled with ~1,400 participants; every
/// statement they ran is explained, and on a table that grows with the study each step must be
/// bounded (see [`bounded`]). SQLite plans only: Postgres has the same indexes but the one on
/// `reserved_until` (ARCHITECTURE.md says why), and its plans are not checked here.
#[test]
fn every_survey_query_is_answered_from_an_index_however_large_the_study() {
    use diesel::connection::{Connection, InstrumentationEvent};
    use std::sync::{Arc, Mutex};

    let db = TestDb::sqlite();
    let pool = db.pool();
    let mut conn = pool.get().unwrap();
    let (study, _, tally) = simulate(&mut conn);
    assert!(tally.completed > 1_000, "{tally:?}");
    // Room for more, so the next participant goes all the way through.
    diesel::update(schema::studies::table.find(study.id))
        .set(schema::studies::target_per_situation.eq(1_000))
        .execute(&mut conn)
        .unwrap();
    let study = studies::load(&mut conn, "balance").unwrap().unwrap();

    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = Arc::clone(&seen);
    let store::DbConnection::Sqlite(sqlite) = &mut *conn else {
        panic!("a SQLite test database")
    };
    sqlite.set_instrumentation(move |event: InstrumentationEvent<'_>| {
        if let InstrumentationEvent::StartQuery { query, .. } = event {
            sink.lock().unwrap().push(query.to_string());
        }
    });
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    assert!(
        participants::by_pid(&mut conn, study.id, "explain-1")
            .unwrap()
            .is_none()
    );
    let p = arrive(&mut conn, &study, "explain-1");
    let mut page = Page::Consent;
    while page != Page::Done {
        participants::open_page(
            &mut conn,
            study.id,
            &SessionKey::Owner("explain-1".into()),
            Some(page),
        )
        .unwrap()
        .unwrap();
        let (to, effect) = step(page, &mut rng);
        let moved = participants::submit(&mut conn, &study, p.id, page, to, effect).unwrap();
        assert!(matches!(moved, Submitted::Moved), "{page:?}: {moved:?}");
        page = to;
    }
    participants::study_is_full(&mut conn, &study).unwrap();
    let q = arrive(&mut conn, &study, "explain-2");
    participants::withdraw(&mut conn, q.id).unwrap();
    let statements: std::collections::BTreeSet<String> = seen.lock().unwrap().drain(..).collect();

    #[derive(QueryableByName)]
    struct Plan {
        #[diesel(sql_type = diesel::sql_types::Text)]
        detail: String,
    }
    let growing = [
        "participants",
        "responses",
        "page_events",
        "attention_checks",
        "participant_texts",
    ];
    let mut explained = 0;
    for sql in &statements {
        let verb = sql.split_whitespace().next().unwrap_or("").to_uppercase();
        if !matches!(
            verb.as_str(),
            "SELECT" | "UPDATE" | "DELETE" | "INSERT" | "WITH"
        ) {
            continue; // BEGIN, SAVEPOINT, RELEASE, COMMIT
        }
        let plan: Vec<Plan> = diesel::sql_query(format!("EXPLAIN QUERY PLAN {sql}"))
            .load(&mut conn)
            .unwrap_or_else(|e| panic!("{e}: {sql}"));
        for step in &plan {
            assert!(
                bounded(&step.detail, &growing),
                "{}\n  in: {sql}",
                step.detail
            );
        }
        explained += 1;
    }
    // Lookups, the arrival, each page's events and answers, the assignment, the withdrawal.
    assert!(
        explained >= 10,
        "only {explained} statements: {statements:#?}"
    );
}

/// Whether one step of an SQLite query plan visits a bounded number of rows of the `growing`
/// tables: never `SCAN t` (every row, with or without a covering index), and a `SEARCH t` only
/// when its index terms name one participant (its id, public id or Prolific id, or the
/// participant's rows in a child table) or the running reservations (`reserved_until>?`). A
/// search on `study_id` and `status` alone visits every completed participant of the study: the
/// count that made consent cost grow (issue #23).
fn bounded(detail: &str, growing: &[&str]) -> bool {
    let mut words = detail.split(' ');
    let (Some(kind), Some(table)) = (words.next(), words.next()) else {
        return true;
    };
    if !growing.contains(&table) {
        return true;
    }
    match kind {
        "SCAN" => false,
        "SEARCH" => {
            let terms = detail
                .rsplit_once('(')
                .map_or("", |(_, t)| t.trim_end_matches(')'));
            terms.split(" AND ").any(|term| {
                let column = term.split(['=', '>', '<']).next().unwrap_or("");
                matches!(
                    column,
                    "rowid"
                        | "id"
                        | "public_id"
                        | "prolific_pid"
                        | "participant_id"
                        | "reserved_until"
                )
            })
        }
        _ => true,
    }
}

/// Issue #19: on Postgres a participant is found through their own key, however the statement
/// is planned. Postgres plans a prepared statement generically after five executions and keeps
/// that plan for the connection's life unless the table is analysed; planned on a nearly empty
/// table, `study_id = $1 AND public_id = $2` went through `participants_study_id`, so every page
/// request read every participant of the study. `plan_cache_mode = force_generic_plan` makes
/// that plan from the first execution; each lookup a page makes (by session secret, by resumed
/// key, by Prolific id, and the GET's statement by either key) must then read a few of the
/// participants table's rows and index entries (the backend's own statistics), not the study's
/// 1,000.
#[test]
fn postgres_finds_a_participant_through_their_key_under_a_generic_plan() {
    let Some(db) = TestDb::postgres() else {
        return;
    };
    let pool = db.pool();
    let mut conn = pool.get().unwrap();
    let study = open_study(&mut conn, "keys");
    let order: Vec<u32> = (1..=20).collect();
    let make = |conn: &mut store::DbConnection, from: usize, to: usize| -> Vec<String> {
        conn.transaction::<_, diesel::result::Error, _>(|conn| {
            let mut keys = Vec::new();
            for i in from..to {
                let arrival = Arrival {
                    prolific_pid: Some(format!("pid-{i}")),
                    ..Arrival::default()
                };
                let p = participants::create(
                    conn,
                    &study,
                    &format!("secret-{i}"),
                    &arrival,
                    (order.clone(), order.clone()),
                    emotionbench::store::now(),
                )
                .unwrap()
                .participant();
                keys.push(participants::resume_key(conn, p.id)?);
            }
            Ok(keys)
        })
        .unwrap()
    };
    let resumed = make(&mut conn, 0, 5).remove(2);

    #[derive(QueryableByName)]
    struct Reads {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    // Rows read by sequential scans plus index entries read, this transaction so far.
    let reads = |conn: &mut store::DbConnection| -> i64 {
        diesel::sql_query(
            "SELECT (SELECT COALESCE(SUM(pg_stat_get_xact_tuples_returned(indexrelid)), 0) \
             FROM pg_index WHERE indrelid = 'participants'::regclass)::bigint \
             + (SELECT COALESCE(SUM(seq_tup_read), 0) FROM pg_stat_xact_user_tables \
             WHERE relname = 'participants')::bigint AS n",
        )
        .get_result::<Reads>(conn)
        .unwrap()
        .n
    };
    diesel::sql_query("SET plan_cache_mode = force_generic_plan")
        .execute(&mut conn)
        .unwrap();
    let owner = SessionKey::Owner("secret-3".into());
    let resumed = SessionKey::Resumed(resumed);
    type Lookup<'a> = Box<dyn Fn(&mut store::DbConnection) -> QueryResult<bool> + 'a>;
    let lookups: Vec<(&str, Lookup)> = vec![
        (
            "by session secret",
            Box::new(|c| Ok(participants::by_key(c, study.id, &owner)?.is_some())),
        ),
        (
            "by resumed key",
            Box::new(|c| Ok(participants::by_key(c, study.id, &resumed)?.is_some())),
        ),
        (
            "by Prolific id",
            Box::new(|c| Ok(participants::by_pid(c, study.id, "pid-4")?.is_some())),
        ),
        (
            "a page shown, by session secret",
            Box::new(|c| {
                Ok(participants::open_page(c, study.id, &owner, Some(Page::Consent))?.is_some())
            }),
        ),
        (
            "a page shown, by resumed key",
            Box::new(|c| {
                Ok(participants::open_page(c, study.id, &resumed, Some(Page::Consent))?.is_some())
            }),
        ),
    ];
    // Planned now, on a study of five: the plans this connection then keeps.
    for (what, lookup) in &lookups {
        let found = lookup(&mut conn).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(found, "{what}: nobody found");
    }
    let mut other = pool.get().unwrap();
    make(&mut other, 5, 1_005);
    drop(other);
    for (what, lookup) in &lookups {
        // Each in a transaction of its own, rolled back (a page shown records an event).
        let mut measured = None;
        let _ = conn.transaction::<(), diesel::result::Error, _>(|c| {
            // Pending statistics reach the shared ones at most once a second, at the end of a
            // transaction, so these may hold earlier transactions' too: the difference counts.
            let before = reads(c);
            measured = Some(lookup(c).map(|found| (found, reads(c) - before)));
            Err(diesel::result::Error::RollbackTransaction)
        });
        let (found, n) = measured
            .unwrap_or_else(|| panic!("{what}: not run"))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(found, "{what}: nobody found");
        assert!(
            n <= 5,
            "{what} read {n} participant rows or index entries of the study's 1,000"
        );
    }
}

/// A new participant of `study` with session secret `key`, items in their numbered order.
fn arrive(
    conn: &mut store::DbConnection,
    study: &studies::Study,
    key: &str,
) -> participants::Participant {
    let order: Vec<u32> = (1..=20).collect();
    participants::create(
        conn,
        study,
        key,
        &Arrival::default(),
        (order.clone(), order),
        emotionbench::store::now(),
    )
    .unwrap()
    .participant()
}

/// An open study of the synthetic situations, made through the store.
fn open_study(conn: &mut store::DbConnection, slug: &str) -> studies::Study {
    let inst = instruments::ensure_builtin(conn).unwrap();
    situations::import(conn, "synthetic-175", "test", &synthetic_situations()).unwrap();
    let set = situations::find_set(conn, "synthetic-175")
        .unwrap()
        .unwrap();
    studies::create(
        conn,
        &StudyConfig::new(slug, "A study"),
        StudyStatus::Open,
        studies::Sources::new(inst, Some(set)),
        2024,
    )
    .unwrap();
    studies::load(conn, slug).unwrap().unwrap()
}

/// A page view on Postgres commits without waiting for the WAL flush (what it writes is a
/// "shown" event, never an answer: `store::pg_pages::OpenPage`), and only its own commit: the
/// setting must not stay on the pooled connection, where the next request may be a submit
/// whose reply promises its answers are on disk. Inside a transaction the statement's setting
/// is visible until that transaction ends (it holds until the commit that reads it); after it,
/// the connection is back to the server's `synchronous_commit = on`. A submit leaves it on.
#[test]
fn a_page_view_on_postgres_commits_without_the_wal_flush_and_a_submit_with_it() {
    let Some(db) = TestDb::postgres() else {
        return;
    };
    let pool = db.pool();
    let mut conn = pool.get().unwrap();
    let study = open_study(&mut conn, "views");
    let p = arrive(&mut conn, &study, "viewer");
    #[derive(QueryableByName)]
    struct Setting {
        #[diesel(sql_type = diesel::sql_types::Text)]
        synchronous_commit: String,
    }
    let setting = |c: &mut store::DbConnection| -> String {
        diesel::sql_query("SHOW synchronous_commit")
            .get_result::<Setting>(c)
            .unwrap()
            .synchronous_commit
    };
    let viewer = SessionKey::Owner("viewer".into());
    let shown = |c: &mut store::DbConnection| -> i64 {
        schema::page_events::table
            .filter(schema::page_events::participant_id.eq(p.id))
            .filter(schema::page_events::event.eq(PageEvent::Shown))
            .count()
            .get_result(c)
            .unwrap()
    };
    let before = shown(&mut conn);
    let in_view = conn
        .transaction::<_, diesel::result::Error, _>(|c| {
            participants::open_page(c, study.id, &viewer, Some(Page::Consent))?.unwrap();
            Ok(setting(c))
        })
        .unwrap();
    assert_eq!(
        in_view, "off",
        "the page view's commit waits for the WAL flush"
    );
    assert_eq!(
        setting(&mut conn),
        "on",
        "the connection kept the page view's setting"
    );
    // Outside a transaction (as a request runs it): its own commit, the event stored.
    participants::open_page(&mut conn, study.id, &viewer, Some(Page::Consent))
        .unwrap()
        .unwrap();
    assert_eq!(
        setting(&mut conn),
        "on",
        "the connection kept the page view's setting"
    );
    assert_eq!(
        shown(&mut conn),
        before + 2,
        "each view records its \"shown\" event"
    );
    let in_submit = conn
        .transaction::<_, store::StoreError, _>(|c| {
            let (moved, _) = participants::submit_and_get(
                c,
                &study,
                p.id,
                Page::Consent,
                Page::Demographics,
                Effect::Consent,
            )?;
            assert!(matches!(moved, Submitted::Moved), "{moved:?}");
            Ok(setting(c))
        })
        .unwrap();
    assert_eq!(
        in_submit, "on",
        "a submit's commit must wait for the WAL flush"
    );
}
