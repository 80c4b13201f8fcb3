//! Connections: one diesel `MultiConnection` over SQLite and Postgres, chosen by URL scheme.
//!
//! We write our own r2d2 manager instead of the derive's `establish` so a wrong URL or an
//! unreachable server is reported at once with the real cause (the pool would retry it for 30 s
//! and then say only "timed out").

use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::r2d2::{self, ManageConnection};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

pub const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/sqlite");
pub const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/postgres");

#[derive(diesel::MultiConnection)]
pub enum DbConnection {
    Postgresql(diesel::PgConnection),
    Sqlite(diesel::SqliteConnection),
}

/// Runs `$body` with `$c` bound to the backend's own connection, for queries on the survey's
/// hot path. Through the `MultiConnection` every query is wrapped in a type without a static
/// query id, so diesel writes out its SQL text again on every call just to look it up in the
/// statement cache (~6 % of server CPU in the profile); on the backend's connection the
/// cached statement is found by type.
macro_rules! per_backend {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            $crate::store::DbConnection::Sqlite($c) => $body,
            $crate::store::DbConnection::Postgresql($c) => $body,
        }
    };
}
pub(crate) use per_backend;

pub type Pool = r2d2::Pool<ConnectionManager>;
pub type PooledConnection = r2d2::PooledConnection<ConnectionManager>;

/// Which backend a `DATABASE_URL` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// A libpq URL (`postgres://` or `postgresql://`).
    Postgres(String),
    /// A file path (from `sqlite://PATH`, `sqlite:PATH` or `file:PATH`).
    Sqlite(String),
}

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error(
        "unsupported DATABASE_URL {0:?}: use postgres://user@host/db or sqlite://path/to/file.db"
    )]
    BadUrl(String),
    #[error("cannot connect to {backend} database {target}: {source}")]
    Connect {
        backend: &'static str,
        target: String,
        #[source]
        source: diesel::ConnectionError,
    },
    #[error("cannot configure the connection: {0}")]
    Setup(#[source] diesel::result::Error),
    #[error("connection pool: {0}")]
    Pool(#[from] r2d2::PoolError),
    #[error("migrations failed: {0}")]
    Migration(String),
    /// A SQLite file that does not exist, for a command that must not create it.
    #[error("there is no database at {0}: create it with `emotionbench migrate`")]
    Missing(String),
    /// The schema is older than this binary's: it has migrations to apply.
    #[error(
        "the database {target} is behind this emotionbench ({} migration(s) not applied: {}); \
         run `emotionbench migrate` first",
        pending.len(),
        pending.join(", ")
    )]
    Behind {
        target: String,
        pending: Vec<String>,
    },
    #[error(transparent)]
    Query(#[from] diesel::result::Error),
}

impl DatabaseUrl {
    pub fn parse(url: &str) -> Result<Self, DbError> {
        let url = url.trim();
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Self::Postgres(url.to_owned()));
        }
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .or_else(|| url.strip_prefix("file:"));
        match path {
            Some(p) if !p.is_empty() && p != ":memory:" => Ok(Self::Sqlite(p.to_owned())),
            // `:memory:` behind a pool is one database per connection: never what anyone wants.
            _ => Err(DbError::BadUrl(url.to_owned())),
        }
    }

    pub fn backend(&self) -> &'static str {
        match self {
            Self::Postgres(_) => "postgres",
            Self::Sqlite(_) => "sqlite",
        }
    }

    /// Where the data lives, without any password, for messages and logs.
    pub fn redacted(&self) -> String {
        match self {
            Self::Sqlite(p) => p.clone(),
            Self::Postgres(u) => redact_password(u),
        }
    }
}

fn redact_password(url: &str) -> String {
    // postgres://user:secret@host/db -> postgres://user:***@host/db
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((userinfo, host)) = rest.split_once('@') else {
        return url.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

#[derive(Debug, Clone)]
pub struct ConnectionManager {
    url: DatabaseUrl,
}

impl ConnectionManager {
    pub fn new(url: DatabaseUrl) -> Self {
        Self { url }
    }

    pub(crate) fn open(&self) -> Result<DbConnection, DbError> {
        match &self.url {
            DatabaseUrl::Postgres(u) => {
                tls_without_exit_cleanup();
                // Without a connect timeout libpq waits for the kernel (minutes) on a dead host.
                let u = if u.contains("connect_timeout=") {
                    u.clone()
                } else if u.contains('?') {
                    format!("{u}&connect_timeout=10")
                } else {
                    format!("{u}?connect_timeout=10")
                };
                diesel::PgConnection::establish(&u)
                    .map(DbConnection::Postgresql)
                    .map_err(|source| DbError::Connect {
                        backend: "postgres",
                        target: self.url.redacted(),
                        source,
                    })
            }
            DatabaseUrl::Sqlite(path) => {
                create_owner_only(path);
                let mut conn = diesel::SqliteConnection::establish(path).map_err(|source| {
                    DbError::Connect {
                        backend: "sqlite",
                        target: path.clone(),
                        source,
                    }
                })?;
                // On every connection: these are per-connection settings in SQLite (WAL persists
                // in the file, but setting it again is cheap and covers a fresh file).
                // busy_timeout comes first: `journal_mode` takes a lock on the file and, set
                // before the timeout, fails at once with "database is locked" while another
                // process (a worker, a checkpoint) holds it.
                conn.batch_execute(
                    "PRAGMA busy_timeout = 30000;
                     PRAGMA journal_mode = WAL;
                     PRAGMA foreign_keys = ON;
                     PRAGMA synchronous = NORMAL;",
                )
                .map_err(DbError::Setup)?;
                Ok(DbConnection::Sqlite(conn))
            }
        }
    }
}

/// Creates a missing SQLite database file empty and readable by its owner only (0600).
///
/// Left to SQLite, a new database is created with the process umask (0644 under the usual 022)
/// and its `-wal`, `-shm` and journal files copy the database file's permissions: participants'
/// answers were world-readable. Created here first, all of them are owner-only. We do not set
/// the process umask instead: it is process-wide state that a library must not change behind
/// its caller's back (a test harness, an embedding program, other threads creating files), and
/// it would take the unsafe code this crate forbids; the systemd units set `UMask=0077` for
/// everything else the service writes. An existing file keeps the mode its owner gave it.
/// Errors are left to SQLite's own open, which reports them with their cause.
fn create_owner_only(path: &str) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A URI filename with parameters is SQLite's to interpret.
        if !path.contains('?') {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path);
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

impl ManageConnection for ConnectionManager {
    type Connection = DbConnection;
    type Error = DbError;

    fn connect(&self) -> Result<DbConnection, DbError> {
        self.open()
    }

    fn is_valid(&self, conn: &mut DbConnection) -> Result<(), DbError> {
        conn.batch_execute("SELECT 1").map_err(DbError::Query)
    }

    /// Runs as each connection goes back to the pool, so it must not touch the network. A
    /// Postgres connection whose server went away (restarted, the connection killed, the network
    /// down) is dropped, and the pool opens a fresh one when it is next needed: the query that
    /// met the loss left libpq's transaction status "unknown", which diesel records as a broken
    /// transaction manager (`R2D2Connection::is_broken`), as it does for a connection left
    /// inside a transaction. The pool used to run `SELECT 1` on every checkout instead
    /// (`test_on_check_out`): 15 of the 87 statements a participant cost (issue #19,
    /// BENCHMARKS.md "Postgres: statements per participant"), to catch what is now seen at no
    /// cost by the request that meets it. That request fails (the visitor gets the 503 page and
    /// nothing of theirs was acknowledged), as one did before whenever the server went away
    /// between the check and the query (`crash::a_postgres_restart_under_load_…`).
    fn has_broken(&self, conn: &mut DbConnection) -> bool {
        use diesel::r2d2::R2D2Connection;
        match conn {
            DbConnection::Postgresql(c) => c.is_broken(),
            DbConnection::Sqlite(_) => false,
        }
    }
}

/// Initialises OpenSSL, which libpq uses for TLS, without its clean-up at process exit. Why:
/// the pool opens connections on its own threads (r2d2 adds one when a checkout finds none
/// idle, and finishes it even if the checkout was served by a returned one), so a command can
/// end while a thread is inside `PQconnectdb`. With the default initialisation, `exit` then runs
/// `OPENSSL_cleanup` under it, which frees the locks that thread is taking: a SIGSEGV in the
/// `r2d2-worker` thread (seen here in `runs::a_429_with_retry_after_is_waited_out_then_the_trial_succeeds`,
/// 2 runs of 7; core dump: `OPENSSL_cleanup` in `exit` on the main thread, `RAND_bytes_ex` on a
/// freed lock in `SSL_CTX_new_ex` under `PQconnectdb` on the worker). `openssl_sys::init` asks
/// for `OPENSSL_INIT_NO_ATEXIT` (the rust-openssl crate's fix for openssl/openssl#3505); it must
/// come before libpq's first connection, whose own initialisation would register the clean-up,
/// hence here, before every connection this crate opens. The OS frees the memory at exit.
pub fn tls_without_exit_cleanup() {
    openssl_sys::init();
}

/// Opens a pool, connecting once first so a bad URL or a dead server fails now, clearly.
pub fn connect(url: &str, max_size: u32) -> Result<Pool, DbError> {
    let url = DatabaseUrl::parse(url)?;
    if let DatabaseUrl::Sqlite(path) = &url {
        if let Some(dir) = std::path::Path::new(path).parent() {
            if !dir.as_os_str().is_empty() && !dir.exists() {
                std::fs::create_dir_all(dir).map_err(|e| DbError::Connect {
                    backend: "sqlite",
                    target: path.clone(),
                    source: diesel::ConnectionError::BadConnection(e.to_string()),
                })?;
            }
        }
    }
    // A Postgres server can go away under open connections: the first query that meets it
    // breaks its connection, which the pool then drops (`has_broken`), so a restarted server is
    // picked up again without a liveness query on every checkout. Wait only briefly for a
    // connection so visitors get a clear 503 page instead of a hanging request.
    let postgres = matches!(url, DatabaseUrl::Postgres(_));
    let manager = ConnectionManager::new(url);
    let first = manager.open()?;
    let pool = r2d2::Pool::builder()
        .max_size(max_size.max(1))
        .min_idle(Some(0))
        .connection_timeout(Duration::from_secs(if postgres { 3 } else { 10 }))
        .test_on_check_out(false)
        .build_unchecked(manager);
    // Hand the connection we already have to nobody: dropping it is cheap, and the pool opens
    // its own lazily. What mattered is that opening worked.
    drop(first);
    Ok(pool)
}

/// Applies pending migrations; returns the names applied. Serialised across processes on
/// Postgres (several `serve` replicas may start at once).
pub fn migrate(conn: &mut DbConnection) -> Result<Vec<String>, DbError> {
    let applied = match conn {
        DbConnection::Postgresql(c) => {
            c.batch_execute("SELECT pg_advisory_lock(720431)")?;
            let r = c.run_pending_migrations(POSTGRES_MIGRATIONS).map(names);
            c.batch_execute("SELECT pg_advisory_unlock(720431)")?;
            r
        }
        DbConnection::Sqlite(c) => c.run_pending_migrations(SQLITE_MIGRATIONS).map(names),
    };
    applied.map_err(|e| DbError::Migration(e.to_string()))
}

/// The migrations of this binary not applied to the database, oldest first. Reads only: unlike
/// `MigrationHarness::applied_migrations`, it does not create the migrations table of an empty
/// database.
pub fn pending_migrations(conn: &mut DbConnection) -> Result<Vec<String>, DbError> {
    use diesel::migration::MigrationSource;
    #[derive(QueryableByName)]
    struct Version {
        #[diesel(sql_type = diesel::sql_types::Text)]
        version: String,
    }
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let exists_sql = match conn {
        DbConnection::Sqlite(_) => {
            "SELECT COUNT(*) AS n FROM sqlite_master \
             WHERE type = 'table' AND name = '__diesel_schema_migrations'"
        }
        DbConnection::Postgresql(_) => {
            "SELECT COUNT(*) AS n FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_name = '__diesel_schema_migrations'"
        }
    };
    let has_table = diesel::sql_query(exists_sql).get_result::<Count>(conn)?.n > 0;
    let applied: Vec<String> = if has_table {
        diesel::sql_query("SELECT version FROM __diesel_schema_migrations")
            .load::<Version>(conn)?
            .into_iter()
            .map(|v| v.version)
            .collect()
    } else {
        Vec::new()
    };
    let known: Vec<String> = match conn {
        DbConnection::Sqlite(_) => {
            MigrationSource::<diesel::sqlite::Sqlite>::migrations(&SQLITE_MIGRATIONS)
                .map(|m| m.iter().map(|m| m.name().version().to_string()).collect())
        }
        DbConnection::Postgresql(_) => {
            MigrationSource::<diesel::pg::Pg>::migrations(&POSTGRES_MIGRATIONS)
                .map(|m| m.iter().map(|m| m.name().version().to_string()).collect())
        }
    }
    .map_err(|e| DbError::Migration(e.to_string()))?;
    let mut pending: Vec<String> = known.into_iter().filter(|v| !applied.contains(v)).collect();
    pending.sort();
    Ok(pending)
}

/// Fails with [`DbError::Behind`] (or [`DbError::Missing`]) unless the database at `url` has
/// every migration of this binary, changing nothing: a missing SQLite file is not created and
/// the connection is opened without the pool's settings (setting WAL on a fresh file writes).
pub fn check_current(url: &str) -> Result<(), DbError> {
    let url = DatabaseUrl::parse(url)?;
    let target = url.redacted();
    let mut conn = match &url {
        DatabaseUrl::Sqlite(path) => {
            if !std::path::Path::new(path).is_file() {
                return Err(DbError::Missing(path.clone()));
            }
            diesel::SqliteConnection::establish(path)
                .map(DbConnection::Sqlite)
                .map_err(|source| DbError::Connect {
                    backend: "sqlite",
                    target: path.clone(),
                    source,
                })?
        }
        DatabaseUrl::Postgres(_) => ConnectionManager::new(url.clone()).open()?,
    };
    let pending = pending_migrations(&mut conn)?;
    if pending.is_empty() {
        Ok(())
    } else {
        Err(DbError::Behind { target, pending })
    }
}

fn names(v: Vec<diesel::migration::MigrationVersion<'_>>) -> Vec<String> {
    v.into_iter().map(|m| m.to_string()).collect()
}

impl DbConnection {
    pub fn backend(&self) -> &'static str {
        match self {
            Self::Postgresql(_) => "postgres",
            Self::Sqlite(_) => "sqlite",
        }
    }

    /// A transaction that reads, then writes what it read: use it instead of `transaction`
    /// whenever the writes depend on the reads.
    ///
    /// SQLite: a plain (deferred) transaction reads from a snapshot; when another connection
    /// commits before this one's first write, that write fails at once with "database is
    /// locked" (busy_timeout cannot help: waiting would not make the snapshot current). This
    /// one starts with `BEGIN IMMEDIATE`, which takes the write lock up front and waits for it
    /// under busy_timeout. Postgres: an ordinary transaction (row locks and the statements'
    /// own conditions do the rest).
    pub fn write_transaction<T, E>(
        &mut self,
        f: impl FnOnce(&mut DbConnection) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<diesel::result::Error>,
    {
        use diesel::connection::{AnsiTransactionManager, TransactionManager};
        type Manager = <DbConnection as Connection>::TransactionManager;
        // Nested inside another transaction it is a savepoint, like `transaction`.
        let outermost_sqlite = match self {
            Self::Sqlite(c) => AnsiTransactionManager::transaction_manager_status_mut(c)
                .transaction_depth()?
                .is_none(),
            Self::Postgresql(_) => false,
        };
        match self {
            Self::Sqlite(c) if outermost_sqlite => {
                AnsiTransactionManager::begin_transaction_sql(c, "BEGIN IMMEDIATE")?
            }
            _ => Manager::begin_transaction(self)?,
        }
        match f(self) {
            Ok(value) => {
                Manager::commit_transaction(self)?;
                Ok(value)
            }
            Err(e) => {
                // The caller's error is the one that matters; a failed rollback leaves the
                // connection broken, which the pool notices.
                let _ = Manager::rollback_transaction(self);
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_pick_the_backend_by_scheme() {
        assert_eq!(
            DatabaseUrl::parse("sqlite://data/x.db").ok(),
            Some(DatabaseUrl::Sqlite("data/x.db".into()))
        );
        assert_eq!(
            DatabaseUrl::parse("sqlite:/abs/x.db").ok(),
            Some(DatabaseUrl::Sqlite("/abs/x.db".into()))
        );
        assert!(matches!(
            DatabaseUrl::parse("postgresql://u@h/db"),
            Ok(DatabaseUrl::Postgres(_))
        ));
        assert!(matches!(
            DatabaseUrl::parse("mysql://x"),
            Err(DbError::BadUrl(_))
        ));
        assert!(matches!(
            DatabaseUrl::parse("sqlite://:memory:"),
            Err(DbError::BadUrl(_))
        ));
        assert!(matches!(DatabaseUrl::parse(""), Err(DbError::BadUrl(_))));
    }

    #[test]
    fn passwords_never_reach_messages() {
        let u = DatabaseUrl::parse("postgres://bob:hunter2@db:5432/eb").unwrap_or_else(|e| {
            panic!("{e}");
        });
        assert_eq!(u.redacted(), "postgres://bob:***@db:5432/eb");
    }

    /// Two connections to one SQLite file: A reads, B commits a write, A writes what it read.
    /// In a plain transaction A's write fails at once ("database is locked"); in a write
    /// transaction B waits for A instead, and both writes land.
    #[test]
    fn a_write_transaction_on_sqlite_survives_a_concurrent_writer() {
        use std::sync::mpsc;
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let pool = connect(&url, 2).unwrap_or_else(|e| panic!("{e}"));
        let mut setup = pool.get().unwrap_or_else(|e| panic!("{e}"));
        setup
            .batch_execute("CREATE TABLE n (v INTEGER NOT NULL); INSERT INTO n VALUES (0);")
            .unwrap_or_else(|e| panic!("{e}"));
        drop(setup);
        #[derive(QueryableByName)]
        struct V {
            #[diesel(sql_type = diesel::sql_types::Integer)]
            v: i32,
        }
        let read = |c: &mut DbConnection| -> QueryResult<i32> {
            Ok(diesel::sql_query("SELECT v FROM n").get_result::<V>(c)?.v)
        };
        let run = |immediate: bool| -> (QueryResult<()>, i32) {
            let (read_done, go_b) = mpsc::channel::<()>();
            let (b_started, go_a) = mpsc::channel::<()>();
            let p = pool.clone();
            let b = std::thread::spawn(move || {
                let mut c = p.get().unwrap_or_else(|e| panic!("{e}"));
                let _ = go_b.recv();
                let _ = b_started.send(());
                c.batch_execute("UPDATE n SET v = v + 100")
                    .unwrap_or_else(|e| panic!("{e}"));
            });
            let mut pooled = pool.get().unwrap_or_else(|e| panic!("{e}"));
            let a: &mut DbConnection = &mut pooled;
            let body = |c: &mut DbConnection| -> QueryResult<()> {
                let v = read(c)?;
                let _ = read_done.send(());
                let _ = go_a.recv();
                // Give B the time to commit (plain) or to block on the lock (immediate).
                std::thread::sleep(Duration::from_millis(200));
                diesel::sql_query(format!("UPDATE n SET v = {}", v + 1)).execute(c)?;
                Ok(())
            };
            let r = if immediate {
                a.write_transaction(body)
            } else {
                a.transaction(body)
            };
            b.join().unwrap_or_else(|_| panic!("B panicked"));
            let v = read(a).unwrap_or_else(|e| panic!("{e}"));
            (r, v)
        };
        let (plain, _) = run(false);
        let err = plain.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("locked"), "{err:?}");
        // Nested, a write transaction is a savepoint.
        let mut c = pool.get().unwrap_or_else(|e| panic!("{e}"));
        let nested: QueryResult<i32> = c.write_transaction(|c| c.write_transaction(|c| read(c)));
        assert!(nested.is_ok(), "{nested:?}");
        drop(c);
        let (immediate, v) = run(true);
        assert!(immediate.is_ok(), "{immediate:?}");
        // B's +100 after A's read-and-increment: nothing lost.
        let before = v - 101;
        assert!(before >= 0 && (v - before) == 101, "v = {v}");
    }

    #[test]
    fn both_backends_have_the_same_migration_names() {
        let list = |dir: &str| {
            let mut v: Vec<String> = std::fs::read_dir(dir)
                .map(|rd| {
                    rd.filter_map(Result::ok)
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            v.sort();
            v
        };
        let root = env!("CARGO_MANIFEST_DIR");
        let sqlite = list(&format!("{root}/migrations/sqlite"));
        assert!(!sqlite.is_empty());
        assert_eq!(sqlite, list(&format!("{root}/migrations/postgres")));
    }
}
