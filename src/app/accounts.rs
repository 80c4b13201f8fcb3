//! Accounts of researchers and admins: create one, set its password, disable it, sign in.
//! Passwords are stored only as Argon2id hashes; each change records its audit entry in the
//! same transaction.

use chrono::Duration;

use super::error::{Result, invalid};
use crate::auth::{self, password};
use crate::domain::account;
use crate::store::users::{self, Role, User};
use crate::store::{DbConnection, Pool, audit, sessions};

pub use crate::domain::account::{MAX_EMAIL_BYTES, MAX_PASSWORD_BYTES, MIN_PASSWORD_CHARS};

fn check_password(password: &str, email: &str) -> Result<()> {
    account::check_password(password, email).map_err(|p| invalid(p.to_string()))
}

/// An account's email must look like one (`domain::account::check_email`).
pub fn check_email(email: &str) -> Result<()> {
    account::check_email(email).map_err(invalid)
}

/// Creates an account.
pub fn create(
    conn: &mut DbConnection,
    email: &str,
    role: Role,
    password: &str,
    actor: &audit::Actor,
) -> Result<()> {
    check_email(email)?;
    check_password(password, email)?;
    let hash = password::hash(password)?;
    conn.write_transaction(|conn| {
        users::create(conn, email, &hash, role)?;
        audit::record(conn, actor, "user.create", Some(email), None)?;
        Ok(())
    })
}

/// Sets a new password; ends the account's sessions.
pub fn set_password(
    conn: &mut DbConnection,
    email: &str,
    password: &str,
    actor: &audit::Actor,
) -> Result<()> {
    check_password(password, email)?;
    let hash = password::hash(password)?;
    conn.write_transaction(|conn| {
        users::set_password(conn, email, &hash)?;
        audit::record(conn, actor, "user.set-password", Some(email), None)?;
        Ok(())
    })
}

/// Disables an account; ends its sessions.
pub fn disable(conn: &mut DbConnection, email: &str, actor: &audit::Actor) -> Result<()> {
    conn.write_transaction(|conn| {
        users::disable(conn, email)?;
        audit::record(conn, actor, "user.disable", Some(email), None)?;
        Ok(())
    })
}

/// The name of the key that signs the double-submit CSRF tokens (`web::csrf`).
const FORM_KEY: &str = "csrf-token-key";

/// The installation's key for signing CSRF tokens: made at the first start-up and stored, so
/// that every `serve` process on the database signs and checks with the same one.
pub fn form_key(conn: &mut DbConnection) -> Result<String> {
    let fresh = password::random_secret(43);
    conn.write_transaction(|conn| Ok(sessions::server_secret(conn, FORM_KEY, &fresh)?))
}

/// A sign-in attempt, as the login form and the connection gave it.
pub struct SignIn {
    /// As typed; compared in lower case.
    pub email: String,
    pub password: String,
    /// The client's address (`web::request::client_addr`).
    pub client_ip: String,
    pub user_agent: Option<String>,
}

/// What a sign-in attempt came to.
pub enum SignedIn {
    /// A new session: its token goes into the cookie (only its hash is stored).
    Session { token: String, user: User },
    /// Wrong email or password, or a disabled account (one answer for all three).
    Refused,
    /// Too many recent failures for this account from this address, or from this address: the
    /// password was not even looked at.
    Throttled,
}

fn since() -> chrono::NaiveDateTime {
    crate::store::now() - Duration::minutes(auth::THROTTLE_WINDOW_MINUTES)
}

/// How long an attempt at `email` should wait before [`sign_in`]: it grows with the account's
/// recent failures from other addresses ([`auth::login_delay`]). Reads only.
pub fn sign_in_delay(
    conn: &mut DbConnection,
    email: &str,
    client_ip: &str,
) -> Result<std::time::Duration> {
    let failures = sessions::recent_failures(conn, email, client_ip, since())?;
    Ok(auth::login_delay(failures.account_elsewhere))
}

/// Signs in: reserves the attempt, verifies the password, opens the session.
///
/// The attempt is counted and recorded as a failure in one serialised transaction *before*
/// the password is verified (Argon2 takes tens of milliseconds), so of any number of
/// concurrent attempts at most the limit is ever verified; a success then marks its record
/// (and so frees its place: the limit is on failures).
/// No connection is held during the verification: it goes back to the pool in between.
/// An unknown or disabled account is verified against `dummy_hash`, so it costs the same.
pub fn sign_in(pool: &Pool, attempt: SignIn, dummy_hash: &str) -> Result<SignedIn> {
    let email = attempt.email.trim().to_lowercase();
    let ip = attempt.client_ip.as_str();
    let reserved = {
        let mut conn = pool.get().map_err(crate::store::StoreError::from)?;
        conn.write_transaction(|conn| -> Result<_> {
            sessions::lock_attempts(conn, &email, ip)?;
            if sessions::recent_failures(conn, &email, ip, since())?.blocked() {
                return Ok(None);
            }
            let id = sessions::reserve_attempt(conn, &email, ip)?;
            Ok(Some((id, users::for_login(conn, &email)?)))
        })?
    };
    let Some((attempt_id, account)) = reserved else {
        return Ok(SignedIn::Throttled);
    };
    let verified = match account {
        Some((user, hash)) if !user.disabled => {
            password::verify(&attempt.password, &hash).then_some(user)
        }
        Some(_) | None => {
            let _ = password::verify(&attempt.password, dummy_hash);
            None
        }
    };
    let mut conn = pool.get().map_err(crate::store::StoreError::from)?;
    let detail = serde_json::json!({ "ip": ip });
    match verified {
        Some(user) => {
            let token = password::random_secret(32);
            let session_csrf = password::random_secret(32);
            conn.write_transaction(|conn| -> Result<()> {
                sessions::attempt_succeeded(conn, attempt_id)?;
                sessions::create(
                    conn,
                    user.id,
                    &auth::token_hash(&token),
                    &session_csrf,
                    Duration::hours(auth::SESSION_HOURS),
                    Some(ip),
                    attempt.user_agent.as_deref(),
                )?;
                let who = audit::Actor::User {
                    id: user.id,
                    email: user.email.clone(),
                };
                audit::record_from(conn, &who, "login", None, Some(&detail), ip)?;
                Ok(())
            })?;
            Ok(SignedIn::Session { token, user })
        }
        None => {
            conn.write_transaction(|conn| {
                audit::record_from(
                    conn,
                    &audit::Actor::Anonymous,
                    "login.failed",
                    Some(&email),
                    Some(&detail),
                    ip,
                )
            })?;
            Ok(SignedIn::Refused)
        }
    }
}

/// Ends a session (logout), with its audit entry.
pub fn sign_out(
    conn: &mut DbConnection,
    session: crate::store::SessionId,
    actor: &audit::Actor,
) -> Result<()> {
    conn.write_transaction(|conn| {
        sessions::end(conn, session)?;
        audit::record(conn, actor, "logout", None, None)?;
        Ok(())
    })
}
