//! Accounts of researchers and admins: create one, invite someone to create one, set a
//! password, disable or enable one, change its role, sign in.
//! Passwords are stored only as Argon2id hashes; each change records its audit entry in the
//! same transaction.

use chrono::Duration;

use super::error::{Result, invalid};
use crate::auth::{self, password};
use crate::domain::account::{self, AccountChange, InviteLink};
use crate::store::invites::{self, Invite};
use crate::store::users::{self, Role, User};
use crate::store::{DbConnection, Pool, UserId, audit, sessions};

pub use crate::domain::account::{
    INVITE_HOURS, MAX_EMAIL_BYTES, MAX_PASSWORD_BYTES, MIN_PASSWORD_CHARS,
};

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

/// Disables an account (by address, as the CLI names it); ends its sessions.
pub fn disable(conn: &mut DbConnection, email: &str, actor: &audit::Actor) -> Result<User> {
    let id =
        users::id_of(conn, email)?.ok_or_else(|| invalid(format!("no account for {email}")))?;
    change(conn, id, AccountChange::Disable, actor)
}

/// Disables, enables or changes the role of an account, with its audit entry. Refused when it
/// would leave no enabled admin ([`account::leaves_an_admin`]). Returns the account as it is
/// now.
pub fn change(
    conn: &mut DbConnection,
    id: UserId,
    change: AccountChange,
    actor: &audit::Actor,
) -> Result<User> {
    conn.write_transaction(|conn| {
        users::lock_admins(conn)?;
        let user = users::find(conn, id)?.ok_or_else(|| invalid(format!("no account {id}")))?;
        if !account::leaves_an_admin(user.role, user.disabled, change, users::count_admins(conn)?) {
            return Err(invalid(format!(
                "{} is the last enabled admin: make another account an admin first, so that \
                 someone can still manage the accounts",
                user.email
            )));
        }
        let (action, detail) = match change {
            AccountChange::Disable => {
                users::set_disabled(conn, id, true)?;
                ("user.disable", None)
            }
            AccountChange::Enable => {
                users::set_disabled(conn, id, false)?;
                ("user.enable", None)
            }
            AccountChange::SetRole(role) => {
                users::set_role(conn, id, role)?;
                let detail = serde_json::json!({ "from": user.role.as_str(), "to": role.as_str() });
                ("user.set-role", Some(detail))
            }
        };
        audit::record(conn, actor, action, Some(&user.email), detail.as_ref())?;
        users::find(conn, id)?.ok_or_else(|| invalid(format!("no account {id}")))
    })
}

/// A new invitation: the link's secret, shown once to the admin who sends it.
pub struct Invited {
    pub token: String,
    pub email: String,
    pub role: Role,
    pub expires_at: chrono::NaiveDateTime,
}

/// Invites `email` to create an account of `role`: a single-use token valid
/// [`account::INVITE_HOURS`], stored only as its hash. A newer invitation to the same address
/// replaces the unused ones. Refused when the address has an account already.
pub fn invite(
    conn: &mut DbConnection,
    email: &str,
    role: Role,
    actor: &audit::Actor,
) -> Result<Invited> {
    let email = email.trim().to_lowercase();
    check_email(&email)?;
    let token = password::random_secret(32);
    let expires_at = crate::store::now() + Duration::hours(account::INVITE_HOURS);
    let by = match actor {
        audit::Actor::User { id, .. } => Some(*id),
        audit::Actor::Cli | audit::Actor::Anonymous | audit::Actor::ProlificWebhook => None,
    };
    conn.write_transaction(|conn| {
        if users::id_of(conn, &email)?.is_some() {
            return Err(invalid(format!("an account for {email} exists already")));
        }
        invites::delete_unused(conn, &email)?;
        invites::create(
            conn,
            &auth::token_hash(&token),
            &email,
            role,
            by,
            expires_at,
        )?;
        let detail = serde_json::json!({ "role": role.as_str(), "expires_at": expires_at });
        audit::record(conn, actor, "user.invite", Some(&email), Some(&detail))?;
        Ok(())
    })?;
    Ok(Invited {
        token,
        email,
        role,
        expires_at,
    })
}

/// What an invitation link opens on.
pub enum InviteLookup {
    /// The link works: the address and role the account will have.
    Valid(Invite),
    Used,
    Expired,
    /// No such link (mistyped, or replaced by a newer invitation).
    Unknown,
}

/// The invitation a link's token names. Reads only.
pub fn invitation(conn: &mut DbConnection, token: &str) -> Result<InviteLookup> {
    let Some(found) = invites::find(conn, &auth::token_hash(token))? else {
        return Ok(InviteLookup::Unknown);
    };
    Ok(
        match account::invite_link(found.used_at, found.expires_at, crate::store::now()) {
            InviteLink::Valid => InviteLookup::Valid(found),
            InviteLink::Used => InviteLookup::Used,
            InviteLink::Expired => InviteLookup::Expired,
        },
    )
}

/// An invitee's answer on the link's page.
pub struct Acceptance {
    pub token: String,
    pub password: String,
    /// The second entry of the password; it must match.
    pub repeated: String,
    pub client_ip: String,
}

/// What accepting an invitation came to.
pub enum Accepted {
    /// The account exists now; its owner signs in with the new password.
    Created(User),
    /// The link does not work (used, expired, unknown): nothing was stored.
    Link(InviteLookup),
    /// The password does not meet the policy or the two entries differ (the reason, for the
    /// form); nothing was stored.
    Refused(String),
    /// The address has an account already (made meanwhile, e.g. with the CLI).
    AccountExists(String),
    /// Too many recent bad links or failed sign-ins from this address.
    Throttled,
}

/// The `login_attempts` address that failed acceptances are recorded under: a bad link counts
/// against the client address's sign-in limits like a wrong password (one limit for both), so
/// links cannot be guessed faster than passwords.
const INVITE_ATTEMPT: &str = "(invitation link)";

/// Accepts an invitation: checks the password against the same policy as every account's
/// (`domain::account::check_password`), then creates the account and uses the link up in one
/// transaction, with its audit entry. The Argon2 hash is computed with no connection held.
pub fn accept_invite(pool: &Pool, answer: Acceptance) -> Result<Accepted> {
    let ip = answer.client_ip.as_str();
    let looked_up = {
        let mut conn = pool.get().map_err(crate::store::StoreError::from)?;
        conn.write_transaction(|conn| -> Result<_> {
            sessions::lock_attempts(conn, INVITE_ATTEMPT, ip)?;
            if sessions::recent_failures(conn, INVITE_ATTEMPT, ip, since())?.blocked() {
                return Ok(None);
            }
            let found = invitation(conn, &answer.token)?;
            if !matches!(found, InviteLookup::Valid(_)) {
                sessions::reserve_attempt(conn, INVITE_ATTEMPT, ip)?;
            }
            Ok(Some(found))
        })?
    };
    let invite = match looked_up {
        None => return Ok(Accepted::Throttled),
        Some(InviteLookup::Valid(invite)) => invite,
        Some(other) => return Ok(Accepted::Link(other)),
    };
    if let Err(problem) = account::check_password(&answer.password, &invite.email) {
        return Ok(Accepted::Refused(sentence(&problem.to_string())));
    }
    if answer.password != answer.repeated {
        return Ok(Accepted::Refused("The two passwords differ.".into()));
    }
    let hash = password::hash(&answer.password)?;
    let mut conn = pool.get().map_err(crate::store::StoreError::from)?;
    conn.write_transaction(|conn| {
        if users::id_of(conn, &invite.email)?.is_some() {
            return Ok(Accepted::AccountExists(invite.email.clone()));
        }
        // Used up first: of two acceptances racing on one link, the second finds it used.
        if !invites::use_up(conn, invite.id, crate::store::now())? {
            return Ok(Accepted::Link(invitation(conn, &answer.token)?));
        }
        let id = users::create(conn, &invite.email, &hash, invite.role)?;
        let who = audit::Actor::User {
            id,
            email: invite.email.clone(),
        };
        let detail = serde_json::json!({ "role": invite.role.as_str(), "ip": ip });
        audit::record_from(
            conn,
            &who,
            "user.accept-invite",
            Some(&invite.email),
            Some(&detail),
            ip,
        )?;
        let user = users::find(conn, id)?.ok_or_else(|| invalid("the new account is gone"))?;
        Ok(Accepted::Created(user))
    })
}

/// The policy's reason as a sentence for a form: capital first letter, full stop.
fn sentence(reason: &str) -> String {
    let mut chars = reason.chars();
    match chars.next() {
        Some(first) => format!("{}{}.", first.to_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

/// Whether the installation has no enabled admin yet (`serve` and the sign-in page then say
/// how to create one). Reads only.
pub fn needs_first_admin(conn: &mut DbConnection) -> Result<bool> {
    Ok(users::count_admins(conn)? == 0)
}

/// How an operator creates the first admin, as `serve` prints it and the sign-in page shows it.
pub const FIRST_ADMIN_HINT: &str = "emotionbench admin create-user EMAIL --role admin";

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
