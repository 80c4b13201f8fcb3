//! Accounts of researchers and admins.

use diesel::prelude::*;

use super::columns::corrupt_row;
use super::schema::{sessions, users};
use super::{DbConnection, StoreError, UserId, now};

pub use crate::domain::account::Role;

/// Creates an account. `password_hash` must be a PHC string (see `crate::auth::password`).
pub fn create(
    conn: &mut DbConnection,
    email: &str,
    password_hash: &str,
    role: Role,
) -> Result<UserId, StoreError> {
    let email = email.trim().to_lowercase();
    let exists = users::table
        .filter(users::email.eq(&email))
        .count()
        .get_result::<i64>(conn)?;
    if exists > 0 {
        return Err(StoreError::Conflict(format!(
            "an account for {email} exists already"
        )));
    }
    let t = now();
    let id = diesel::insert_into(users::table)
        .values((
            users::email.eq(&email),
            users::password_hash.eq(password_hash),
            users::role.eq(role),
            users::disabled.eq(false),
            users::created_at.eq(t),
            users::updated_at.eq(t),
            users::password_changed_at.eq(t),
        ))
        .returning(users::id)
        .get_result::<UserId>(conn)?;
    Ok(id)
}

/// Enabled admin accounts.
pub fn count_admins(conn: &mut DbConnection) -> QueryResult<i64> {
    users::table
        .filter(users::role.eq(Role::Admin.as_str()))
        .filter(users::disabled.eq(false))
        .count()
        .get_result(conn)
}

/// The stored hash of an account, for tests and login.
pub fn password_hash(conn: &mut DbConnection, email: &str) -> QueryResult<Option<String>> {
    users::table
        .filter(users::email.eq(email.trim().to_lowercase()))
        .select(users::password_hash)
        .first(conn)
        .optional()
}

/// An account as the application sees it (never with its hash).
#[derive(Debug, Clone, serde::Serialize)]
pub struct User {
    pub id: UserId,
    pub email: String,
    pub role: Role,
    pub disabled: bool,
    pub created_at: chrono::NaiveDateTime,
}

type UserRow = (UserId, String, Role, bool, chrono::NaiveDateTime);

fn user(row: UserRow) -> User {
    let (id, email, role, disabled, created_at) = row;
    User {
        id,
        email,
        role,
        disabled,
        created_at,
    }
}

pub fn list(conn: &mut DbConnection) -> QueryResult<Vec<User>> {
    Ok(users::table
        .order(users::email)
        .select((
            users::id,
            users::email,
            users::role,
            users::disabled,
            users::created_at,
        ))
        .load::<UserRow>(conn)
        .map_err(corrupt_row("users", "in the account list"))?
        .into_iter()
        .map(user)
        .collect())
}

/// The account and its hash, for login.
pub fn for_login(conn: &mut DbConnection, email: &str) -> QueryResult<Option<(User, String)>> {
    Ok(users::table
        .filter(users::email.eq(email.trim().to_lowercase()))
        .select((
            (
                users::id,
                users::email,
                users::role,
                users::disabled,
                users::created_at,
            ),
            users::password_hash,
        ))
        .first::<(UserRow, String)>(conn)
        .optional()
        .map_err(corrupt_row("users", "of the account signing in"))?
        .map(|(row, hash)| (user(row), hash)))
}

/// Sets a new password hash and ends every session of the account.
pub fn set_password(
    conn: &mut DbConnection,
    email: &str,
    password_hash: &str,
) -> Result<UserId, StoreError> {
    conn.write_transaction(|conn| {
        let t = now();
        let id = users::table
            .filter(users::email.eq(email.trim().to_lowercase()))
            .select(users::id)
            .first::<UserId>(conn)
            .optional()?
            .ok_or_else(|| StoreError::Conflict(format!("no account for {email}")))?;
        diesel::update(users::table.find(id))
            .set((
                users::password_hash.eq(password_hash),
                users::password_changed_at.eq(t),
                users::updated_at.eq(t),
            ))
            .execute(conn)?;
        end_sessions(conn, id)?;
        Ok(id)
    })
}

/// The account with this id.
pub fn find(conn: &mut DbConnection, id: UserId) -> QueryResult<Option<User>> {
    Ok(users::table
        .find(id)
        .select((
            users::id,
            users::email,
            users::role,
            users::disabled,
            users::created_at,
        ))
        .first::<UserRow>(conn)
        .optional()
        .map_err(corrupt_row("users", id))?
        .map(user))
}

/// The id of the account of an address.
pub fn id_of(conn: &mut DbConnection, email: &str) -> QueryResult<Option<UserId>> {
    users::table
        .filter(users::email.eq(email.trim().to_lowercase()))
        .select(users::id)
        .first::<UserId>(conn)
        .optional()
}

/// Disables or enables an account; disabling ends its sessions.
pub fn set_disabled(conn: &mut DbConnection, id: UserId, disabled: bool) -> QueryResult<()> {
    diesel::update(users::table.find(id))
        .set((users::disabled.eq(disabled), users::updated_at.eq(now())))
        .execute(conn)?;
    if disabled {
        end_sessions(conn, id)?;
    }
    Ok(())
}

/// Gives an account another role. Its sessions stay: each request reads the role afresh.
pub fn set_role(conn: &mut DbConnection, id: UserId, role: Role) -> QueryResult<()> {
    diesel::update(users::table.find(id))
        .set((users::role.eq(role), users::updated_at.eq(now())))
        .execute(conn)?;
    Ok(())
}

/// Serialises changes that could leave no enabled admin (`app::accounts`) until the
/// transaction ends: two admins demoting each other at once must not both see the other one
/// still there. SQLite needs nothing (`BEGIN IMMEDIATE` runs one writer at a time); Postgres
/// takes an advisory lock of its own class (`sessions::lock_attempts` uses 1 and 2).
pub fn lock_admins(conn: &mut DbConnection) -> QueryResult<()> {
    if let DbConnection::Postgresql(_) = conn {
        diesel::sql_query("SELECT pg_advisory_xact_lock(3, 0)").execute(conn)?;
    }
    Ok(())
}

/// Ends every session of an account (its password changed or it was disabled). Here rather than
/// in `sessions`, which reads accounts: the two modules would import each other.
fn end_sessions(conn: &mut DbConnection, user: UserId) -> QueryResult<usize> {
    diesel::delete(sessions::table.filter(sessions::user_id.eq(user.0))).execute(conn)
}
