//! Server-side sessions of researchers and admins, and the login-attempt record used for
//! throttling. Only a hash of the session token is stored: a leaked database does not leak
//! live sessions.

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;

use super::columns::corrupt_row;
use super::schema::{login_attempts, sessions, users};
use super::users::{Role, User};
use super::{DbConnection, UserId, now};

/// A live session with its account.
#[derive(Debug, Clone)]
pub struct Session {
    pub id: i64,
    pub user: User,
    pub csrf_token: String,
    pub expires_at: NaiveDateTime,
}

pub fn create(
    conn: &mut DbConnection,
    user: UserId,
    token_hash: &str,
    csrf_token: &str,
    lifetime: Duration,
    client_ip: Option<&str>,
    user_agent: Option<&str>,
) -> QueryResult<()> {
    let t = now();
    diesel::insert_into(sessions::table)
        .values((
            sessions::token_hash.eq(token_hash),
            sessions::user_id.eq(user.0),
            sessions::csrf_token.eq(csrf_token),
            sessions::created_at.eq(t),
            sessions::expires_at.eq(t + lifetime),
            sessions::last_seen_at.eq(t),
            sessions::client_ip.eq(client_ip),
            sessions::user_agent.eq(user_agent),
        ))
        .execute(conn)?;
    Ok(())
}

/// The live session for a token hash: not expired, account enabled, and created after the
/// last password change.
pub fn find(conn: &mut DbConnection, token_hash: &str) -> QueryResult<Option<Session>> {
    let t = now();
    let row = sessions::table
        .inner_join(users::table)
        .filter(sessions::token_hash.eq(token_hash))
        .filter(sessions::expires_at.gt(t))
        .filter(users::disabled.eq(false))
        .filter(sessions::created_at.ge(users::password_changed_at))
        .select((
            sessions::id,
            sessions::csrf_token,
            sessions::expires_at,
            users::id,
            users::email,
            users::role,
            users::created_at,
        ))
        .first::<(i64, String, NaiveDateTime, i64, String, Role, NaiveDateTime)>(conn)
        .optional()
        .map_err(corrupt_row("users", "of a signed-in session"))?;
    Ok(row.map(
        |(id, csrf_token, expires_at, uid, email, role, created_at)| Session {
            id,
            csrf_token,
            expires_at,
            user: User {
                id: UserId(uid),
                email,
                role,
                disabled: false,
                created_at,
            },
        },
    ))
}

pub fn end(conn: &mut DbConnection, session_id: i64) -> QueryResult<()> {
    diesel::delete(sessions::table.find(session_id)).execute(conn)?;
    Ok(())
}

pub fn record_attempt(
    conn: &mut DbConnection,
    email: &str,
    client_ip: &str,
    succeeded: bool,
) -> QueryResult<()> {
    diesel::insert_into(login_attempts::table)
        .values((
            login_attempts::email.eq(email.trim().to_lowercase()),
            login_attempts::client_ip.eq(client_ip),
            login_attempts::succeeded.eq(succeeded),
            login_attempts::at.eq(now()),
        ))
        .execute(conn)?;
    Ok(())
}

/// Failed attempts since `since` for an account and for a client address.
pub fn recent_failures(
    conn: &mut DbConnection,
    email: &str,
    client_ip: &str,
    since: NaiveDateTime,
) -> QueryResult<(i64, i64)> {
    let by_email = login_attempts::table
        .filter(login_attempts::email.eq(email.trim().to_lowercase()))
        .filter(login_attempts::succeeded.eq(false))
        .filter(login_attempts::at.gt(since))
        .count()
        .get_result(conn)?;
    let by_ip = login_attempts::table
        .filter(login_attempts::client_ip.eq(client_ip))
        .filter(login_attempts::succeeded.eq(false))
        .filter(login_attempts::at.gt(since))
        .count()
        .get_result(conn)?;
    Ok((by_email, by_ip))
}
