//! The SQL mapping of typed columns: the domain's stored enums (statuses, pages, measures,
//! error classes) as `Text`, and JSON columns as [`Json`]. The stored text is each enum's
//! `as_str`; reading a value its `parse` does not know is an error ([`BadValue`]), never a
//! default. Queries that know which row they read turn that error into
//! [`StoreError::Corrupt`](super::StoreError::Corrupt) naming table, row and column
//! ([`corrupt_row`]).

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::expression::AsExpression;
use diesel::pg::Pg;
use diesel::result::DeserializeFieldError;
use diesel::serialize::{self, IsNull, Output, ToSql};
use diesel::sql_types::Text;
use diesel::sqlite::Sqlite;

use super::db::MultiBackend;
use crate::domain::account::Role;
use crate::domain::distribution::Distributions;
use crate::domain::measure::Measure;
use crate::domain::run::{ErrorClass, RunManifest, RunStatus, TrialMethod, TrialStatus};
use crate::domain::split::Side;
use crate::domain::study::StudyStatus;
use crate::domain::survey::{Page, PageEvent, ParticipantStatus};

/// A stored value that does not decode: which type it should have been, and what it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a {what}")]
pub struct BadValue {
    pub what: &'static str,
    pub value: String,
}

/// Gives an enum with `as_str(self) -> &'static str` and `parse(&str) -> Option<Self>` its
/// `Text` mapping on SQLite, Postgres and the `MultiConnection`.
macro_rules! text_enum {
    ($($ty:ident => $proxy:ident, $what:literal;)*) => {$(
        #[derive(AsExpression, FromSqlRow)]
        #[diesel(foreign_derive)]
        #[diesel(sql_type = Text)]
        #[expect(dead_code, reason = "only carries the derives for the foreign type")]
        struct $proxy($ty);

        impl<DB: Backend> ToSql<Text, DB> for $ty
        where
            str: ToSql<Text, DB>,
        {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, DB>) -> serialize::Result {
                <str as ToSql<Text, DB>>::to_sql(self.as_str(), out)
            }
        }

        impl<DB: Backend> FromSql<Text, DB> for $ty
        where
            String: FromSql<Text, DB>,
        {
            fn from_sql(bytes: DB::RawValue<'_>) -> deserialize::Result<Self> {
                let s = <String as FromSql<Text, DB>>::from_sql(bytes)?;
                $ty::parse(&s).ok_or_else(|| BadValue { what: $what, value: s }.into())
            }
        }
    )*};
}

text_enum! {
    StudyStatus => StudyStatusProxy, "study status";
    ParticipantStatus => ParticipantStatusProxy, "participant status";
    Page => PageProxy, "survey page";
    Measure => MeasureProxy, "measure";
    RunStatus => RunStatusProxy, "run status";
    TrialStatus => TrialStatusProxy, "trial status";
    Role => RoleProxy, "account role";
    Side => SideProxy, "split side";
    PageEvent => PageEventProxy, "page event";
    ErrorClass => ErrorClassProxy, "error class";
    TrialMethod => TrialMethodProxy, "trial method";
}

/// A value stored as JSON text.
pub trait JsonValue:
    serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static
{
    /// What the value is, for [`BadValue`].
    const WHAT: &'static str;
}

impl JsonValue for Vec<u32> {
    const WHAT: &'static str = "item order";
}

impl JsonValue for Vec<i32> {
    const WHAT: &'static str = "score list";
}

impl JsonValue for Vec<String> {
    const WHAT: &'static str = "list of names";
}

impl JsonValue for serde_json::Map<String, serde_json::Value> {
    const WHAT: &'static str = "demographic answers";
}

/// A participant's demographic answers: field name -> answer (a JSON object).
pub type DemographicAnswers = Json<serde_json::Map<String, serde_json::Value>>;

impl JsonValue for crate::domain::protocol::Persona {
    const WHAT: &'static str = "persona";
}

impl JsonValue for Distributions {
    const WHAT: &'static str = "answer distributions";
}

impl JsonValue for Vec<crate::domain::language::Lang> {
    const WHAT: &'static str = "language list";
}

impl JsonValue for Vec<crate::domain::situation::Valence> {
    const WHAT: &'static str = "valence list";
}

impl JsonValue for Option<crate::domain::study::FreeTextField> {
    const WHAT: &'static str = "free-text field";
}

impl JsonValue
    for std::collections::BTreeMap<crate::domain::language::Lang, crate::domain::study::StudyTexts>
{
    const WHAT: &'static str = "translated study texts";
}

impl JsonValue for Option<RunManifest> {
    const WHAT: &'static str = "run parameters";
}

/// A JSON column, decoded into `T` on load (an undecodable text is a [`BadValue`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, AsExpression, FromSqlRow, serde::Serialize)]
#[diesel(sql_type = Text)]
#[serde(transparent)]
pub struct Json<T>(pub T);

/// The item order shown, as display position → item number (`[3, 1, 2]`).
pub type ItemOrder = Json<Vec<u32>>;

/// Item scores in canonical item order.
pub type Scores = Json<Vec<i32>>;

impl<T: JsonValue> Json<T> {
    /// The stored text.
    pub fn to_text(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(&self.0)
    }

    /// Decodes stored text.
    pub fn from_text(s: &str) -> Result<Self, BadValue> {
        serde_json::from_str(s).map(Json).map_err(|_| BadValue {
            what: T::WHAT,
            value: s.to_owned(),
        })
    }
}

impl<DB, T> FromSql<Text, DB> for Json<T>
where
    DB: Backend,
    String: FromSql<Text, DB>,
    T: JsonValue,
{
    fn from_sql(bytes: DB::RawValue<'_>) -> deserialize::Result<Self> {
        let s = <String as FromSql<Text, DB>>::from_sql(bytes)?;
        Ok(Json::from_text(&s)?)
    }
}

impl<T: JsonValue> ToSql<Text, Sqlite> for Json<T> {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Sqlite>) -> serialize::Result {
        out.set_value(self.to_text()?);
        Ok(IsNull::No)
    }
}

impl<T: JsonValue> ToSql<Text, Pg> for Json<T> {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
        use std::io::Write;
        out.write_all(self.to_text()?.as_bytes())?;
        Ok(IsNull::No)
    }
}

impl<T: JsonValue> ToSql<Text, MultiBackend> for Json<T> {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, MultiBackend>) -> serialize::Result {
        out.set_value((Text, self));
        Ok(IsNull::No)
    }
}

/// The columns of a table that hold a typed value, with the type's name as [`BadValue`]
/// gives it: which column a decoding error came from.
fn column_of(table: &str, what: &str) -> &'static str {
    use super::schema::{model_runs, model_trials, participants, studies};
    use diesel::Column;
    match (table, what) {
        (_, "study status" | "participant status" | "run status" | "trial status") => "status",
        ("page_events" | "participants", "survey page") => "page",
        ("page_events", "page event") => "event",
        ("participants", "split side") => "split",
        ("responses", "measure") => "phase",
        (_, "measure") => "measure",
        (_, "error class") => "error_class",
        (_, "trial method") => "method",
        ("model_trials", "answer distributions") => model_trials::distributions::NAME,
        (_, "account role") => "role",
        ("studies", "list of names") => studies::demographics::NAME,
        ("studies", "language list") => studies::languages::NAME,
        ("studies", "valence list") => studies::valences::NAME,
        ("studies", "free-text field") => studies::free_text::NAME,
        ("participants", "demographic answers") => participants::demographics::NAME,
        ("model_runs", "run parameters") => model_runs::params::NAME,
        ("model_trials", "item order") => model_trials::item_order::NAME,
        ("model_trials", "score list") => model_trials::scores::NAME,
        ("participants", "item order") => "order_default or order_evoked",
        _ => "unknown",
    }
}

/// Where a stored value failed to decode: carried inside diesel's `DeserializationError` so
/// that queries keep returning `QueryResult`, and turned into
/// [`StoreError::Corrupt`](super::StoreError::Corrupt) on the way out of the store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{table} row {row}, column {column}: {detail}")]
pub struct CorruptRow {
    pub table: &'static str,
    /// The row's id, or the key it was looked up by.
    pub row: String,
    pub column: String,
    pub detail: String,
}

/// Names the row (of `table`) in the decoding error of a query that read it; other errors
/// pass unchanged.
pub fn corrupt_row(
    table: &'static str,
    row: impl std::fmt::Display,
) -> impl FnOnce(diesel::result::Error) -> diesel::result::Error {
    move |e| match e {
        diesel::result::Error::DeserializationError(cause) => {
            // diesel names the result column when it knows it (rows read by field).
            let (field, cause) = match cause.downcast::<DeserializeFieldError>() {
                Ok(f) => (f.field_name, f.error),
                Err(cause) => (None, cause),
            };
            let (column, detail) = match cause.downcast_ref::<BadValue>() {
                Some(bad) => (
                    field.unwrap_or_else(|| column_of(table, bad.what).to_owned()),
                    bad.to_string(),
                ),
                None => (
                    field.unwrap_or_else(|| "unknown".to_owned()),
                    cause.to_string(),
                ),
            };
            diesel::result::Error::DeserializationError(Box::new(CorruptRow {
                table,
                row: row.to_string(),
                column,
                detail,
            }))
        }
        other => other,
    }
}
