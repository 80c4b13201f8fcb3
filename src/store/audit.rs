//! The audit log: who did what, when. Written in the same transaction as the change it records.

use diesel::prelude::*;

use super::schema::audit_log;
use super::{DbConnection, UserId, now};

/// Who acted: a signed-in user, or the command line.
#[derive(Debug, Clone)]
pub enum Actor {
    User { id: UserId, email: String },
    Cli,
}

pub fn record(
    conn: &mut DbConnection,
    actor: &Actor,
    action: &str,
    target: Option<&str>,
    detail: Option<&serde_json::Value>,
) -> QueryResult<()> {
    let (user_id, name) = match actor {
        Actor::User { id, email } => (Some(id.0), email.as_str()),
        Actor::Cli => (None, "cli"),
    };
    diesel::insert_into(audit_log::table)
        .values((
            audit_log::at.eq(now()),
            audit_log::user_id.eq(user_id),
            audit_log::actor.eq(name),
            audit_log::action.eq(action),
            audit_log::target.eq(target),
            audit_log::detail.eq(detail.map(|d| d.to_string())),
        ))
        .execute(conn)?;
    Ok(())
}
