//! Accounts of researchers and admins.

use diesel::prelude::*;

use super::schema::users;
use super::{DbConnection, StoreError, UserId, now};

/// What an account may do: researchers read and export; admins also change things.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin,
    Researcher,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Researcher => "researcher",
        }
    }
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "admin" => Ok(Role::Admin),
            "researcher" => Ok(Role::Researcher),
            other => Err(format!("unknown role {other:?} (admin or researcher)")),
        }
    }
}

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
            users::role.eq(role.as_str()),
            users::disabled.eq(false),
            users::created_at.eq(t),
            users::updated_at.eq(t),
            users::password_changed_at.eq(t),
        ))
        .returning(users::id)
        .get_result::<i64>(conn)?;
    Ok(UserId(id))
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
