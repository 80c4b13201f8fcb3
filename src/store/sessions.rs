//! Server-side sessions of researchers and admins, and the login-attempt record used for
//! throttling. Only a hash of the session token is stored: a leaked database does not leak
//! live sessions.

use chrono::{Duration, NaiveDateTime};
use diesel::prelude::*;

use super::columns::corrupt_row;
use super::db::per_backend;
use super::schema::{login_attempts, server_secrets, sessions, users};
use super::users::{Role, User};
use super::{DbConnection, LoginAttemptId, SessionId, UserId, now};
use crate::auth::RecentFailures;

/// A live session with its account.
#[derive(Debug, Clone)]
pub struct Session {
    pub id: SessionId,
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
        .first::<(
            SessionId,
            String,
            NaiveDateTime,
            UserId,
            String,
            Role,
            NaiveDateTime,
        )>(conn)
        .optional()
        .map_err(corrupt_row("users", "of a signed-in session"))?;
    Ok(row.map(
        |(id, csrf_token, expires_at, uid, email, role, created_at)| Session {
            id,
            csrf_token,
            expires_at,
            user: User {
                id: uid,
                email,
                role,
                disabled: false,
                created_at,
            },
        },
    ))
}

pub fn end(conn: &mut DbConnection, session_id: SessionId) -> QueryResult<()> {
    diesel::delete(sessions::table.find(session_id)).execute(conn)?;
    Ok(())
}

/// Serialises the reservations of attempts for one address and for one account (see
/// `app::accounts::sign_in`) until the transaction ends. SQLite needs nothing: the transaction
/// is `BEGIN IMMEDIATE`, which already runs one at a time. On Postgres two advisory locks,
/// always the address's first, so two transactions never wait on each other in a circle.
pub fn lock_attempts(conn: &mut DbConnection, email: &str, client_ip: &str) -> QueryResult<()> {
    if let DbConnection::Postgresql(_) = conn {
        for (class, key) in [(1, client_ip), (2, email)] {
            diesel::sql_query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                .bind::<diesel::sql_types::Integer, _>(class)
                .bind::<diesel::sql_types::Text, _>(key)
                .execute(conn)?;
        }
    }
    Ok(())
}

/// Records an attempt as failed before its password is verified (so that attempts being
/// verified count against the limits); [`attempt_succeeded`] corrects it. Returns its id.
pub fn reserve_attempt(
    conn: &mut DbConnection,
    email: &str,
    client_ip: &str,
) -> QueryResult<LoginAttemptId> {
    diesel::insert_into(login_attempts::table)
        .values((
            login_attempts::email.eq(email.trim().to_lowercase()),
            login_attempts::client_ip.eq(client_ip),
            login_attempts::succeeded.eq(false),
            login_attempts::at.eq(now()),
        ))
        .returning(login_attempts::id)
        .get_result(conn)
}

/// Marks a reserved attempt as the successful sign-in it turned out to be.
pub fn attempt_succeeded(conn: &mut DbConnection, attempt: LoginAttemptId) -> QueryResult<()> {
    diesel::update(login_attempts::table.find(attempt))
        .set(login_attempts::succeeded.eq(true))
        .execute(conn)?;
    Ok(())
}

/// Failed attempts since `since` that concern an attempt at `email` from `client_ip`.
pub fn recent_failures(
    conn: &mut DbConnection,
    email: &str,
    client_ip: &str,
    since: NaiveDateTime,
) -> QueryResult<RecentFailures> {
    let email = email.trim().to_lowercase();
    let failed = || {
        login_attempts::table
            .filter(login_attempts::succeeded.eq(false))
            .filter(login_attempts::at.gt(since))
    };
    let account_here = failed()
        .filter(login_attempts::email.eq(&email))
        .filter(login_attempts::client_ip.eq(client_ip))
        .count()
        .get_result(conn)?;
    let account_elsewhere = failed()
        .filter(login_attempts::email.eq(&email))
        .filter(login_attempts::client_ip.ne(client_ip))
        .count()
        .get_result(conn)?;
    let address = failed()
        .filter(login_attempts::client_ip.eq(client_ip))
        .count()
        .get_result(conn)?;
    Ok(RecentFailures {
        account_here,
        address,
        account_elsewhere,
    })
}

/// The secret named `name`, created from `fresh` the first time it is asked for. Several
/// processes may start at once: the insert does nothing when another one's is already there,
/// and every process then reads the one stored.
pub fn server_secret(conn: &mut DbConnection, name: &str, fresh: &str) -> QueryResult<String> {
    let insert = diesel::insert_into(server_secrets::table)
        .values((
            server_secrets::name.eq(name),
            server_secrets::secret.eq(fresh),
            server_secrets::created_at.eq(now()),
        ))
        .on_conflict(server_secrets::name)
        .do_nothing();
    // ON CONFLICT is written per backend: the MultiConnection's backend has no upsert clause.
    per_backend!(conn, |c| insert.execute(c))?;
    server_secrets::table
        .find(name)
        .select(server_secrets::secret)
        .get_result(conn)
}
