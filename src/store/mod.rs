//! Persistence: diesel over one schema for SQLite and Postgres. Queries are plain functions
//! taking `&mut DbConnection`; per-backend `match` only where the SQL truly differs.

pub mod audit;
pub mod batches;
pub mod cache;
pub mod cohorts;
pub mod columns;
pub mod db;
pub mod doors;
pub mod evidence;
pub mod instrument_texts;
pub mod instruments;
pub mod invites;
pub mod model_runs;
pub mod monitor;
pub mod participants;
pub mod personas;
mod pg_pages;
pub mod prolific;
pub mod report;
pub mod runs;
pub mod schema;
pub mod sessions;
pub mod situation_texts;
pub mod situations;
pub mod studies;
pub mod text_scores;
pub mod users;
pub mod writer;

pub use columns::{DemographicAnswers, ItemOrder, Json, Scores};
pub use db::{DbConnection, DbError, Pool, PooledConnection};

use chrono::{NaiveDateTime, Utc};

/// Errors of the store layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("database: {0}")]
    Query(#[source] diesel::result::Error),
    /// The request conflicts with stored data (the message says how).
    #[error("{0}")]
    Conflict(String),
    /// Stored data that our own code should never have written.
    #[error("stored data is inconsistent: {0}")]
    Inconsistent(String),
    /// A stored value that does not decode into its type.
    #[error("stored value does not decode: {table} row {row}, column {column}: {detail}")]
    Corrupt {
        table: &'static str,
        /// The row's id, or the key it was looked up by.
        row: String,
        column: String,
        detail: String,
    },
    /// The work was not committed (the SQLite writer's batch failed): nothing of it is stored.
    #[error("not stored: {0}")]
    NotCommitted(String),
}

impl From<diesel::result::Error> for StoreError {
    /// A row that did not decode (see [`columns::corrupt_row`]) is `Corrupt`.
    fn from(e: diesel::result::Error) -> Self {
        if let diesel::result::Error::DeserializationError(cause) = &e
            && let Some(c) = cause.downcast_ref::<columns::CorruptRow>()
        {
            return StoreError::Corrupt {
                table: c.table,
                row: c.row.clone(),
                column: c.column.clone(),
                detail: c.detail.clone(),
            };
        }
        StoreError::Query(e)
    }
}

impl From<diesel::r2d2::PoolError> for StoreError {
    fn from(e: diesel::r2d2::PoolError) -> Self {
        StoreError::Db(DbError::Pool(e))
    }
}

/// Current time as stored: UTC without zone.
pub fn now() -> NaiveDateTime {
    Utc::now().naive_utc()
}

/// Row ids: one newtype per table, stored as `BigInt` on both backends, so a participant's id
/// cannot be passed where a study's is expected. The SQL mapping is generic over the backend
/// (as the text enums' in `columns`), which covers SQLite, Postgres and the `MultiConnection`.
macro_rules! id_type {
    ($($(#[$m:meta])* $name:ident),* $(,)?) => {$(
        $(#[$m])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize,
            serde::Deserialize, diesel::expression::AsExpression, diesel::deserialize::FromSqlRow,
        )]
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        #[serde(transparent)]
        pub struct $name(pub i64);
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { self.0.fmt(f) }
        }
        /// As typed on a command line or in a URL: the number.
        impl std::str::FromStr for $name {
            type Err = std::num::ParseIntError;
            fn from_str(s: &str) -> Result<Self, Self::Err> { s.trim().parse().map($name) }
        }
        impl<DB: diesel::backend::Backend> diesel::serialize::ToSql<diesel::sql_types::BigInt, DB>
            for $name
        where
            i64: diesel::serialize::ToSql<diesel::sql_types::BigInt, DB>,
        {
            fn to_sql<'b>(
                &'b self,
                out: &mut diesel::serialize::Output<'b, '_, DB>,
            ) -> diesel::serialize::Result {
                <i64 as diesel::serialize::ToSql<diesel::sql_types::BigInt, DB>>::to_sql(&self.0, out)
            }
        }
        impl<DB: diesel::backend::Backend>
            diesel::deserialize::FromSql<diesel::sql_types::BigInt, DB> for $name
        where
            i64: diesel::deserialize::FromSql<diesel::sql_types::BigInt, DB>,
        {
            fn from_sql(bytes: DB::RawValue<'_>) -> diesel::deserialize::Result<Self> {
                <i64 as diesel::deserialize::FromSql<diesel::sql_types::BigInt, DB>>::from_sql(bytes)
                    .map($name)
            }
        }
    )*};
}

id_type!(
    /// A row of `situation_sets`.
    SituationSetId,
    /// A row of `situations`.
    SituationId,
    /// A row of `instruments`.
    InstrumentId,
    /// A row of `studies`.
    StudyId,
    /// A row of `participants`.
    ParticipantId,
    /// A row of `users`.
    UserId,
    /// A row of `sessions`.
    SessionId,
    /// A row of `login_attempts`.
    LoginAttemptId,
    /// A row of `invites`.
    InviteId,
    /// A row of `model_runs`.
    RunId,
    /// A row of `model_trials`.
    TrialId,
    /// A row of `text_scores`.
    TextScoreId,
);

/// What an import did to one kind of row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub created: usize,
    pub updated: usize,
    pub unchanged: usize,
}

impl Counts {
    pub fn total(&self) -> usize {
        self.created + self.updated + self.unchanged
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} created, {} updated, {} unchanged)",
            self.total(),
            self.created,
            self.updated,
            self.unchanged
        )
    }
}
