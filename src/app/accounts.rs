//! Accounts of researchers and admins: create one, set its password, disable it. Passwords are
//! stored only as Argon2id hashes; each change records its audit entry in the same transaction.

use super::error::{Result, invalid};
use crate::auth::password;
use crate::store::users::{self, Role};
use crate::store::{DbConnection, audit};

/// Passwords shorter than this are refused.
pub const MIN_PASSWORD_CHARS: usize = 10;

fn check_password(password: &str) -> Result<()> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(invalid(format!(
            "the password must have at least {MIN_PASSWORD_CHARS} characters"
        )));
    }
    Ok(())
}

/// An account's email must look like one.
pub fn check_email(email: &str) -> Result<()> {
    if !email.contains('@') || email.len() > 254 {
        return Err(invalid(format!("{email:?} is not an email address")));
    }
    Ok(())
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
    check_password(password)?;
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
    check_password(password)?;
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
