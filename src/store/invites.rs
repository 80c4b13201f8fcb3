//! Invitations to create an account from the browser. Only a hash of the link's token is
//! stored (as for sessions, `crate::auth::token_hash`): a leaked database holds no usable link.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::columns::corrupt_row;
use super::schema::{invites, users};
use super::users::Role;
use super::{DbConnection, InviteId, UserId, now};

/// One invitation as stored (never with its token).
#[derive(Debug, Clone)]
pub struct Invite {
    pub id: InviteId,
    pub email: String,
    pub role: Role,
    pub created_at: NaiveDateTime,
    pub expires_at: NaiveDateTime,
    pub used_at: Option<NaiveDateTime>,
    /// Who sent it, when that account still exists.
    pub invited_by: Option<String>,
}

type InviteRow = (
    InviteId,
    String,
    Role,
    NaiveDateTime,
    NaiveDateTime,
    Option<NaiveDateTime>,
    Option<String>,
);

fn invite(row: InviteRow) -> Invite {
    let (id, email, role, created_at, expires_at, used_at, invited_by) = row;
    Invite {
        id,
        email,
        role,
        created_at,
        expires_at,
        used_at,
        invited_by,
    }
}

macro_rules! select_invites {
    () => {
        invites::table.left_join(users::table).select((
            invites::id,
            invites::email,
            invites::role,
            invites::created_at,
            invites::expires_at,
            invites::used_at,
            users::email.nullable(),
        ))
    };
}

/// Stores a new invitation; `email` is stored in lower case, as accounts are.
pub fn create(
    conn: &mut DbConnection,
    token_hash: &str,
    email: &str,
    role: Role,
    created_by: Option<UserId>,
    expires_at: NaiveDateTime,
) -> QueryResult<InviteId> {
    diesel::insert_into(invites::table)
        .values((
            invites::token_hash.eq(token_hash),
            invites::email.eq(email.trim().to_lowercase()),
            invites::role.eq(role),
            invites::created_by.eq(created_by.map(|u| u.0)),
            invites::created_at.eq(now()),
            invites::expires_at.eq(expires_at),
        ))
        .returning(invites::id)
        .get_result(conn)
}

/// Deletes the unused invitations of an address (a new one replaces them: only the newest
/// link sent to someone works). Returns how many went.
pub fn delete_unused(conn: &mut DbConnection, email: &str) -> QueryResult<usize> {
    diesel::delete(
        invites::table
            .filter(invites::email.eq(email.trim().to_lowercase()))
            .filter(invites::used_at.is_null()),
    )
    .execute(conn)
}

/// The invitation of a token hash, used or not, expired or not.
pub fn find(conn: &mut DbConnection, token_hash: &str) -> QueryResult<Option<Invite>> {
    Ok(select_invites!()
        .filter(invites::token_hash.eq(token_hash))
        .first::<InviteRow>(conn)
        .optional()
        .map_err(corrupt_row("invites", "of an invitation link"))?
        .map(invite))
}

/// Marks an invitation used, if it still is unused and unexpired at `at`; whether it was.
/// One conditional UPDATE: of two concurrent acceptances of one link only one succeeds.
pub fn use_up(conn: &mut DbConnection, id: InviteId, at: NaiveDateTime) -> QueryResult<bool> {
    let n = diesel::update(
        invites::table
            .find(id)
            .filter(invites::used_at.is_null())
            .filter(invites::expires_at.gt(at)),
    )
    .set(invites::used_at.eq(at))
    .execute(conn)?;
    Ok(n == 1)
}

/// Invitations neither used nor expired, newest first (the accounts page lists them).
pub fn pending(conn: &mut DbConnection) -> QueryResult<Vec<Invite>> {
    Ok(select_invites!()
        .filter(invites::used_at.is_null())
        .filter(invites::expires_at.gt(now()))
        .order(invites::id.desc())
        .load::<InviteRow>(conn)
        .map_err(corrupt_row("invites", "in the pending list"))?
        .into_iter()
        .map(invite)
        .collect())
}
