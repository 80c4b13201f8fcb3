//! One SQLite connection on a thread of its own for the survey's hot path, committing the
//! work of every request waiting for it in one transaction ("group commit").
//!
//! Why: SQLite takes one writer at a time, and with a pool every page request paid for a
//! commit of its own (WAL frames, the shared-memory locks, a share of checkpointing), started
//! on a connection whose page cache another connection's commit had just invalidated, and
//! crossed threads twice. Here the connection stays warm, requests that arrive while a batch
//! runs are committed together by the next one, and the thread drains its queue without
//! sleeping while there is work.
//!
//! What stays as before: each job runs inside its own savepoint, so a job that fails (a stale
//! submit, a validation error) rolls back only its own work; a job's result reaches its caller
//! only after the commit that holds its work succeeded (commit before acknowledgement, as
//! with a transaction per request); if the batch does not commit, every caller in it gets an
//! error and nothing of theirs is stored. Postgres has no writer: many connections write
//! there in parallel.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;

use diesel::Connection;
use diesel::connection::SimpleConnection;

use super::db::{ConnectionManager, DatabaseUrl};
use super::{DbConnection, DbError, StoreError};

/// Called after the batch committed: sends the job's result to its caller.
type Ack = Box<dyn FnOnce() + Send>;
/// One request's database work; returns its acknowledgement.
type Job = Box<dyn FnOnce(&mut DbConnection) -> Ack + Send>;

/// At most this many jobs share a commit, so one commit never holds the write lock long.
const MAX_BATCH: usize = 64;

/// Handle to the writer thread; cheap to clone. The thread ends when the last handle is dropped.
#[derive(Clone)]
pub struct Writer {
    jobs: mpsc::Sender<Job>,
}

impl Writer {
    /// Opens the connection (so a bad path fails now) and starts the thread. `None` for a
    /// Postgres URL.
    pub fn start(url: &str) -> Result<Option<Self>, DbError> {
        Self::start_with(url, WAL_RESET_BYTES)
    }

    /// [`Writer::start`] with the WAL reset at `wal_reset_bytes` (tests use a small one).
    fn start_with(url: &str, wal_reset_bytes: u64) -> Result<Option<Self>, DbError> {
        let url = DatabaseUrl::parse(url)?;
        let DatabaseUrl::Sqlite(path) = &url else {
            return Ok(None);
        };
        // SQLite names the WAL after the database file.
        let wal = std::path::PathBuf::from(format!("{path}-wal"));
        let manager = ConnectionManager::new(url);
        let conn = open_writer(&manager, wal_reset_bytes)?;
        let checkpoints = manager.open()?;
        let (jobs, queue) = mpsc::channel::<Job>();
        let (alive, gone) = mpsc::channel::<()>();
        let thread_error = |e: std::io::Error| DbError::Connect {
            backend: "sqlite",
            target: "writer thread".into(),
            source: diesel::ConnectionError::BadConnection(e.to_string()),
        };
        std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || checkpoint(checkpoints, &wal, wal_reset_bytes, &gone))
            .map_err(thread_error)?;
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || {
                let _alive = alive; // the checkpointer stops when this thread does
                serve(&manager, wal_reset_bytes, conn, &queue);
            })
            .map_err(thread_error)?;
        Ok(Some(Self { jobs }))
    }

    /// Queues `f` at once, to run on the writer's connection inside a savepoint of the next
    /// batch; the future resolves once that batch committed.
    pub fn run<T, F>(&self, f: F) -> impl Future<Output = Result<T, StoreError>> + use<T, F>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConnection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let out = conn.transaction(f);
            Box::new(move || {
                let _ = reply.send(out);
            })
        });
        let sent = self.jobs.send(job);
        async move {
            sent.map_err(|_| StoreError::NotCommitted("the database writer has stopped".into()))?;
            answer.await.map_err(|_| {
                StoreError::NotCommitted("the database did not commit this request's work".into())
            })?
        }
    }
}

/// How often the checkpointer copies committed pages from the WAL into the database file.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// The WAL's content past which the checkpointer makes it rewind. Under continuous load a PASSIVE checkpoint never
/// lets the WAL rewind: the writer appends while the checkpoint copies, so the WAL is never
/// fully copied at the moment a transaction starts, and the file grew by ~34 MB/s for as long
/// as the load lasted (10 GB in five minutes, issue #23). Each reset holds the write lock for
/// 25-100 ms (measured with `LOG=warn,emotionbench::wal=info bash scripts/bench_soak.sh`, and
/// longer as the database grows): the last frames are copied, the database file synced, and
/// readers still on the WAL waited for. 160 MiB halved the resets under the soak's load but
/// each held the lock longer, the p99 was no better, and the file reached 201 MiB
/// (BENCHMARKS.md, "Soak"), so the reset stays at 64 MiB, which keeps the file under 110 MiB.
pub const WAL_RESET_BYTES: u64 = 64 * 1024 * 1024;

/// The file size a rewind keeps (`journal_size_limit`): twice the reset size, above what the WAL
/// reaches between resets under load (at most 91 MiB in the soaks, BENCHMARKS.md), so a rewind
/// under load reuses the file instead of cutting it on the writer's path (the first commit after
/// a rewind truncates to the limit) and growing it again; once idle, the TRUNCATE cuts it to
/// zero.
fn wal_keep_bytes(reset_bytes: u64) -> u64 {
    reset_bytes.saturating_mul(2)
}

/// At most this many passive passes before a RESTART: each copies what the writer appended
/// during the one before, so the RESTART, which holds the write lock while it copies and syncs,
/// finds next to nothing left.
const MAX_PASSIVE_PASSES: usize = 4;

/// A pass that copied fewer frames than this (1 MiB) was short enough that the writer appended
/// little during it: the RESTART can follow.
const CONVERGED_FRAMES: u64 = 256;

/// How long a resetting checkpoint is retried while the writer or readers keep it busy; when the
/// time runs out the next tick tries again.
const RESET_WAIT_MS: u64 = 50;

/// The writer's connection never checkpoints itself: a checkpoint writes pages back and syncs
/// the file, and every survey request would wait behind it. The
/// checkpointer thread does it beside the writer instead.
fn open_writer(manager: &ConnectionManager, wal_reset_bytes: u64) -> Result<DbConnection, DbError> {
    let mut conn = manager.open()?;
    conn.batch_execute(&format!(
        "PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = {}",
        wal_keep_bytes(wal_reset_bytes)
    ))
    .map_err(DbError::Setup)?;
    Ok(conn)
}

/// Every [`CHECKPOINT_EVERY`] until the writer thread ends: a PASSIVE checkpoint, which never
/// blocks the writer (nor waits for it) and copies what was committed so far. Then, when the
/// WAL holds more than `reset_bytes` ([`WAL_RESET_BYTES`]) since it last rewound, more passive
/// passes ([`converge`]) and a RESTART checkpoint, which takes the write lock for the little
/// left and makes the writer's next transaction rewind the WAL (cutting the file only when it
/// is larger than [`wal_keep_bytes`]); and when the writer was idle for a tick and the file is still larger
/// than that, a TRUNCATE, which cuts it to zero. Either is retried for at most
/// [`RESET_WAIT_MS`] ([`reset_now`]).
fn checkpoint(
    mut conn: DbConnection,
    wal: &std::path::Path,
    reset_bytes: u64,
    writer_gone: &mpsc::Receiver<()>,
) {
    // No busy handler: `reset_now` retries on its own, without sleeping under the lock.
    if let Err(e) = conn.batch_execute("PRAGMA busy_timeout = 0") {
        tracing::warn!(error = %e, "setting the checkpointer's busy timeout");
    }
    let mut last_frames = 0;
    while let Err(mpsc::RecvTimeoutError::Timeout) = writer_gone.recv_timeout(CHECKPOINT_EVERY) {
        let first = match passive(&mut conn) {
            Ok(pass) => pass,
            Err(e) => {
                tracing::warn!(error = %e, "WAL checkpoint");
                continue;
            }
        };
        let frames = first.frames;
        let idle = frames == last_frames;
        last_frames = frames;
        let mut passes = 1;
        let size = std::fs::metadata(wal).map_or(0, |m| m.len());
        let reset = if idle && size > reset_bytes {
            // Nothing was written since the last tick: cut the file now; there is no request
            // to stall, and the writer would only cut it at its next write.
            "PRAGMA wal_checkpoint(TRUNCATE)"
        } else if frames.saturating_mul(PAGE_BYTES) > reset_bytes {
            // Under load: more passive passes copy what the writer appended during the one
            // before, so the RESTART, which holds the write lock, has next to nothing left to
            // copy and sync. RESTART does not cut the file (a TRUNCATE's cut of a 64 MiB file
            // held the lock long enough to triple the survey's p99 at concurrency 200,
            // BENCHMARKS.md); the writer's next transaction rewinds the WAL.
            passes += converge(&mut conn, &first);
            "PRAGMA wal_checkpoint(RESTART)"
        } else {
            continue;
        };
        let started = std::time::Instant::now();
        match reset_now(&mut conn, reset) {
            // What an attempt held the write lock for is what it can add to a survey request.
            Ok(r) => tracing::info!(
                target: "emotionbench::wal",
                mode = reset,
                busy = r.busy,
                passes,
                attempts = r.attempts,
                longest_attempt_ms = r.longest.as_secs_f64() * 1e3,
                ms = started.elapsed().as_secs_f64() * 1e3,
                wal_bytes = size,
                "WAL reset"
            ),
            Err(e) => tracing::warn!(error = %e, wal_bytes = size, "WAL reset"),
        }
    }
}

/// How a reset went: still busy when the time ran out, after how many attempts, and the
/// longest one (an attempt holds the write lock at most for its own length).
struct Reset {
    busy: bool,
    attempts: u32,
    longest: std::time::Duration,
}

/// The pause between two reset attempts.
const RESET_RETRY: std::time::Duration = std::time::Duration::from_micros(100);

/// Runs the resetting checkpoint `sql` until it is not busy, for at most [`RESET_WAIT_MS`].
/// The checkpointer's connection has no busy timeout: with one, a RESTART that finds a reader
/// still on the WAL keeps the write lock while SQLite's busy handler sleeps (1, 2, 5, 10 ms…)
/// between its tries, and the writer waits all that time. Without it an attempt that finds the
/// writer or a reader busy returns at once (SQLITE_BUSY comes back as a row, not an error),
/// releasing the lock, and the next one comes [`RESET_RETRY`] later; when the time runs out the
/// next tick tries again. In a soak a third of the resets needed 2–4 attempts. What an attempt
/// itself holds the lock for is mostly two syncs (the WAL before copying its last frames, the
/// database after), ~4.5 ms each on this machine's disk (BENCHMARKS.md, "Soak").
fn reset_now(conn: &mut DbConnection, sql: &str) -> Result<Reset, diesel::result::Error> {
    let started = std::time::Instant::now();
    let mut r = Reset {
        busy: true,
        attempts: 0,
        longest: std::time::Duration::ZERO,
    };
    while r.busy && started.elapsed() < std::time::Duration::from_millis(RESET_WAIT_MS) {
        if r.attempts > 0 {
            std::thread::sleep(RESET_RETRY);
        }
        let attempt = std::time::Instant::now();
        let row: CheckpointRow =
            diesel::RunQueryDsl::get_result(diesel::sql_query(sql), &mut *conn)?;
        r.longest = r.longest.max(attempt.elapsed());
        r.attempts += 1;
        r.busy = row.busy != 0;
    }
    Ok(r)
}

/// SQLite's default page size; the WAL holds one page (and a 24-byte header) per frame.
const PAGE_BYTES: u64 = 4096;

#[derive(diesel::QueryableByName)]
struct CheckpointRow {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    busy: i32,
    #[diesel(sql_type = diesel::sql_types::Integer)]
    log: i32,
    #[diesel(sql_type = diesel::sql_types::Integer)]
    checkpointed: i32,
}

/// What one checkpoint pass saw: the frames in the WAL (since it last rewound) and how many of
/// them are now copied into the database file.
struct Pass {
    frames: u64,
    copied: u64,
}

/// A PASSIVE checkpoint.
fn passive(conn: &mut DbConnection) -> Result<Pass, diesel::result::Error> {
    use diesel::RunQueryDsl;
    let row: CheckpointRow =
        diesel::sql_query("PRAGMA wal_checkpoint(PASSIVE)").get_result(conn)?;
    // SQLite reports -1 for both when the database is not in WAL mode.
    Ok(Pass {
        frames: u64::try_from(row.log).unwrap_or(0),
        copied: u64::try_from(row.checkpointed).unwrap_or(0),
    })
}

/// After `first`, passive passes until one copies fewer than [`CONVERGED_FRAMES`] (or after
/// [`MAX_PASSIVE_PASSES`]); a pass that fails ends them. Returns the passes made.
fn converge(conn: &mut DbConnection, first: &Pass) -> usize {
    let mut copied_before = first.copied;
    for pass_number in 1..=MAX_PASSIVE_PASSES {
        match passive(conn) {
            Ok(pass) => {
                let copied_now = pass.copied.saturating_sub(copied_before);
                copied_before = pass.copied;
                if copied_now < CONVERGED_FRAMES {
                    return pass_number;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "WAL checkpoint");
                return pass_number;
            }
        }
    }
    MAX_PASSIVE_PASSES
}

fn serve(
    manager: &ConnectionManager,
    wal_reset_bytes: u64,
    mut conn: DbConnection,
    queue: &mpsc::Receiver<Job>,
) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let failure = match run_batch(&mut conn, batch) {
            Ok(acks) => {
                acks.into_iter().for_each(|ack| ack());
                continue;
            }
            Err(failure) => failure,
        };
        // The acknowledgements were dropped with the batch: every caller gets an error and
        // nothing of theirs is stored. Then start over on a fresh connection rather than trust
        // this one's transaction state: a panic leaves a savepoint open in diesel's books, and
        // after a rollback that itself failed diesel refuses every later transaction.
        match failure {
            Failure::Query(e) => {
                tracing::error!(error = %e, "a batch of survey writes did not commit")
            }
            Failure::Panicked => {
                tracing::error!("a survey write panicked; its batch was rolled back")
            }
        }
        // End whatever is still open first, so the old connection holds no lock while the
        // new one opens; dropping it afterwards would otherwise be the only release.
        let _ = conn.batch_execute("ROLLBACK");
        conn = loop {
            match open_writer(manager, wal_reset_bytes) {
                Ok(c) => break c,
                Err(e) => {
                    tracing::error!(error = %e, "reopening the writer's connection");
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
            }
        };
    }
}

enum Failure {
    Query(diesel::result::Error),
    Panicked,
}

impl From<diesel::result::Error> for Failure {
    fn from(e: diesel::result::Error) -> Self {
        Failure::Query(e)
    }
}

fn run_batch(conn: &mut DbConnection, batch: Vec<Job>) -> Result<Vec<Ack>, Failure> {
    conn.write_transaction(|conn| {
        let mut acks = Vec::with_capacity(batch.len());
        for job in batch {
            let ack =
                catch_unwind(AssertUnwindSafe(|| job(conn))).map_err(|_| Failure::Panicked)?;
            acks.push(ack);
        }
        Ok(acks)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::connection::SimpleConnection;
    use diesel::prelude::*;
    use diesel::sql_types::BigInt;

    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }

    fn count(conn: &mut DbConnection) -> i64 {
        count_of(conn, "t")
    }

    fn count_of(conn: &mut DbConnection, table: &str) -> i64 {
        diesel::sql_query(format!("SELECT COUNT(*) AS n FROM {table}"))
            .get_result::<Count>(conn)
            .map(|c| c.n)
            .unwrap_or(-1)
    }

    fn open(url: &str) -> DbConnection {
        let url = DatabaseUrl::parse(url).unwrap_or_else(|e| panic!("{e}"));
        ConnectionManager::new(url)
            .open()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A fresh database with one table, and its writer.
    fn setup() -> (tempfile::TempDir, String, Writer) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let url = format!("sqlite://{}", dir.path().join("w.db").display());
        open(&url)
            .batch_execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)")
            .unwrap_or_else(|e| panic!("{e}"));
        let writer = Writer::start(&url)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("sqlite has a writer"));
        (dir, url, writer)
    }

    fn insert(v: &'static str) -> impl FnOnce(&mut DbConnection) -> Result<usize, StoreError> {
        move |conn| {
            Ok(diesel::sql_query(format!("INSERT INTO t (v) VALUES ('{v}')")).execute(conn)?)
        }
    }

    type Call = std::pin::Pin<Box<dyn Future<Output = Result<usize, StoreError>>>>;

    fn block_on<T>(f: impl Future<Output = T>) -> T {
        actix_web::rt::System::new().block_on(f)
    }

    #[test]
    fn concurrent_jobs_commit_and_a_failing_job_rolls_back_only_its_own_work() {
        block_on(concurrent_jobs());
    }

    async fn concurrent_jobs() {
        let (_dir, url, writer) = setup();
        // Many at once, so batches form; "dup" twice: exactly one of the two fails (UNIQUE),
        // and only its own savepoint is rolled back.
        let mut calls: Vec<Call> = Vec::new();
        for v in ["a", "b", "dup", "c", "dup", "d"] {
            calls.push(Box::pin(writer.run(insert(v))));
        }
        // A job that writes and then fails: its insert must not survive.
        calls.push(Box::pin(writer.run(|conn| {
            insert("e")(conn)?;
            Err(StoreError::Conflict("no".into()))
        })));
        // All seven are queued before any is awaited, so they share batches.
        let mut results = Vec::new();
        for call in calls {
            results.push(call.await);
        }
        let failed: Vec<usize> = results
            .iter()
            .enumerate()
            .filter(|(_, r)| r.is_err())
            .map(|(i, _)| i)
            .collect();
        assert_eq!(failed, vec![4, 6], "{results:?}");
        let n = writer
            .run(|conn| Ok(count(conn)))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(n, 5);
        // And it was committed: another connection sees it.
        assert_eq!(count(&mut open(&url)), 5);
    }

    #[test]
    fn a_panicking_job_fails_its_batch_and_the_writer_carries_on() {
        block_on(panicking_job());
    }

    async fn panicking_job() {
        let (_dir, _url, writer) = setup();
        let r = writer
            .run(|conn| -> Result<(), StoreError> {
                insert("x")(conn)?;
                panic!("a bug")
            })
            .await;
        assert!(matches!(r, Err(StoreError::NotCommitted(_))), "{r:?}");
        writer
            .run(insert("y"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let n = writer
            .run(|conn| Ok(count(conn)))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            n, 1,
            "the panicked job's insert was rolled back, the next one stored"
        );
    }

    #[test]
    fn postgres_urls_have_no_writer() {
        assert!(matches!(
            Writer::start("postgres://nobody@127.0.0.1:1/none"),
            Ok(None)
        ));
    }

    #[test]
    fn a_batch_that_fails_to_commit_fails_its_callers_stores_nothing_and_the_writer_carries_on() {
        block_on(failed_commit());
    }

    async fn failed_commit() {
        let (_dir, url, writer) = setup();
        // A deferred foreign key is checked at COMMIT: the job itself succeeds, the commit fails.
        open(&url)
            .batch_execute(
                "CREATE TABLE parent (id INTEGER PRIMARY KEY);
                 CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL
                     REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);",
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let r = writer
            .run(|conn| {
                Ok(diesel::sql_query("INSERT INTO child (parent_id) VALUES (42)").execute(conn)?)
            })
            .await;
        assert!(matches!(r, Err(StoreError::NotCommitted(_))), "{r:?}");
        assert_eq!(count_of(&mut open(&url), "child"), 0);
        writer
            .run(insert("after"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(count(&mut open(&url)), 1, "the next batch commits");
    }

    /// Issue #23: under continuous writes a PASSIVE checkpoint alone never let the WAL rewind,
    /// so the file only ever grew, by everything written. With a 256 KiB reset size, writes
    /// without a pause for five checkpoint ticks must see the file cut back while they go on,
    /// and once they stop it must shrink to the reset size at most.
    #[test]
    fn the_wal_stays_bounded_under_continuous_writes_and_shrinks_after() {
        block_on(bounded_wal());
    }

    async fn bounded_wal() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("w.db");
        let url = format!("sqlite://{}", path.display());
        open(&url)
            .batch_execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
            .unwrap_or_else(|e| panic!("{e}"));
        let reset = 256 * 1024;
        let writer = Writer::start_with(&url, reset)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("sqlite has a writer"));
        let wal = dir.path().join("w.db-wal");
        let wal_size = || std::fs::metadata(&wal).map_or(0, |m| m.len());
        let started = std::time::Instant::now();
        let (mut largest, mut cut_back) = (0_u64, false);
        while started.elapsed() < CHECKPOINT_EVERY * 5 {
            writer
                .run(|conn| {
                    Ok(
                        diesel::sql_query("INSERT INTO t (v) VALUES (printf('%.2000c', 'x'))")
                            .execute(conn)?,
                    )
                })
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let size = wal_size();
            cut_back |= size < largest;
            largest = largest.max(size);
        }
        assert!(
            largest > reset,
            "the load never filled the WAL past {reset} bytes"
        );
        assert!(cut_back, "the WAL only grew under load, to {largest} bytes");
        let settled = std::time::Instant::now();
        while wal_size() > reset && settled.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert!(
            wal_size() <= reset,
            "the WAL stayed at {} bytes after the load",
            wal_size()
        );
    }
}
