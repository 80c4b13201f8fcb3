//! The audit log: who did what, when. Written in the same transaction as the change it records.

use diesel::prelude::*;

use super::schema::audit_log;
use super::{DbConnection, UserId, now};

/// Who acted: a signed-in user, or the command line.
#[derive(Debug, Clone)]
pub enum Actor {
    User {
        id: UserId,
        email: String,
    },
    Cli,
    /// Not signed in (e.g. a failed login).
    Anonymous,
    /// Prolific, through a signed webhook call.
    ProlificWebhook,
}

pub fn record(
    conn: &mut DbConnection,
    actor: &Actor,
    action: &str,
    target: Option<&str>,
    detail: Option<&serde_json::Value>,
) -> QueryResult<()> {
    insert(conn, actor, action, target, detail, None)
}

/// [`record`] for an action a web client took, with the client's address (sign-in: the one
/// `web::request::client_addr` found, behind a trusted proxy the forwarded one).
pub fn record_from(
    conn: &mut DbConnection,
    actor: &Actor,
    action: &str,
    target: Option<&str>,
    detail: Option<&serde_json::Value>,
    client_ip: &str,
) -> QueryResult<()> {
    insert(conn, actor, action, target, detail, Some(client_ip))
}

fn insert(
    conn: &mut DbConnection,
    actor: &Actor,
    action: &str,
    target: Option<&str>,
    detail: Option<&serde_json::Value>,
    client_ip: Option<&str>,
) -> QueryResult<()> {
    let (user_id, name) = match actor {
        Actor::User { id, email } => (Some(id.0), email.as_str()),
        Actor::Cli => (None, "cli"),
        Actor::Anonymous => (None, "anonymous"),
        Actor::ProlificWebhook => (None, "prolific-webhook"),
    };
    diesel::insert_into(audit_log::table)
        .values((
            audit_log::at.eq(now()),
            audit_log::user_id.eq(user_id),
            audit_log::actor.eq(name),
            audit_log::action.eq(action),
            audit_log::target.eq(target),
            audit_log::detail.eq(detail.map(|d| d.to_string())),
            audit_log::client_ip.eq(client_ip),
        ))
        .execute(conn)?;
    Ok(())
}

/// One entry as shown to admins.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Entry {
    pub at: chrono::NaiveDateTime,
    pub actor: String,
    pub action: String,
    pub target: Option<String>,
    pub detail: Option<String>,
}

/// The most recent entries, newest first.
pub fn recent(conn: &mut DbConnection, limit: i64) -> QueryResult<Vec<Entry>> {
    Ok(audit_log::table
        .order(audit_log::id.desc())
        .limit(limit)
        .select((
            audit_log::at,
            audit_log::actor,
            audit_log::action,
            audit_log::target,
            audit_log::detail,
        ))
        .load::<(
            chrono::NaiveDateTime,
            String,
            String,
            Option<String>,
            Option<String>,
        )>(conn)?
        .into_iter()
        .map(|(at, actor, action, target, detail)| Entry {
            at,
            actor,
            action,
            target,
            detail,
        })
        .collect())
}
