//! Accounts: what a researcher or an admin may do.

/// What an account may do: researchers read and export; admins also change things.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
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

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "admin" => Some(Role::Admin),
            "researcher" => Some(Role::Researcher),
            _ => None,
        }
    }
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Role::parse(s).ok_or_else(|| format!("unknown role {s:?} (admin or researcher)"))
    }
}

/// Passwords shorter than this (in characters) are refused.
pub const MIN_PASSWORD_CHARS: usize = 10;
/// The longest password (in bytes) sign-in accepts, and therefore the longest one an account
/// may be given: a password that could be set but never typed in would lock its owner out.
pub const MAX_PASSWORD_BYTES: usize = 1024;
/// The longest email address (RFC 5321's path limit); sign-in refuses longer ones too.
pub const MAX_EMAIL_BYTES: usize = 254;

/// Passwords everyone tries first, at least [`MIN_PASSWORD_CHARS`] long, compared after
/// [`normalise`] (lower case, no whitespace). A short list on purpose: it stops the guesses an
/// online attacker makes in the first minutes, not a dictionary attack on a stolen hash.
const COMMON_PASSWORDS: &[&str] = &[
    "password12",
    "password123",
    "password1234",
    "password1!",
    "passw0rd12",
    "passw0rd123",
    "1234567890",
    "0123456789",
    "12345678910",
    "123456789a",
    "a123456789",
    "0987654321",
    "qwertyuiop",
    "qwerty1234",
    "qwerty12345",
    "qwerty123456",
    "1q2w3e4r5t",
    "q1w2e3r4t5",
    "1qaz2wsx3edc",
    "qazwsxedc123",
    "zaq12wsxcde3",
    "asdfghjkl1",
    "abcdefghij",
    "abcd123456",
    "abc1234567",
    "iloveyou12",
    "letmein123",
    "welcome123",
    "changeme12",
    "changeme123",
    "administrator",
    "admin12345",
    "admin123456",
    "adminadmin",
    "princess12",
    "football12",
    "sunshine12",
    "trustno1234",
    "emotionbench",
    "emotionbench1",
    "correcthorsebatterystaple",
];

fn normalise(password: &str) -> String {
    password
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Why a new password is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PasswordProblem {
    #[error("the password must have at least {MIN_PASSWORD_CHARS} characters")]
    TooShort,
    #[error("the password may have at most {MAX_PASSWORD_BYTES} bytes (sign-in accepts no more)")]
    TooLong,
    #[error("the password must not be only spaces")]
    OnlyWhitespace,
    #[error("that password is one of the first an attacker tries; choose another")]
    Common,
}

/// Whether `password` may be given to the account `email`: long enough, no longer than sign-in
/// accepts, not only whitespace, not one character repeated, not on the common list, not the
/// account's own address.
pub fn check_password(password: &str, email: &str) -> Result<(), PasswordProblem> {
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(PasswordProblem::TooLong);
    }
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(PasswordProblem::TooShort);
    }
    let plain = normalise(password);
    if plain.is_empty() {
        return Err(PasswordProblem::OnlyWhitespace);
    }
    let mut chars = plain.chars();
    let first = chars.next();
    let one_repeated = chars.all(|c| Some(c) == first);
    if one_repeated || COMMON_PASSWORDS.contains(&plain.as_str()) || plain == normalise(email) {
        return Err(PasswordProblem::Common);
    }
    Ok(())
}

/// Whether `email` can be an account's address: one `@` with something on both sides, no
/// whitespace, control characters or angle brackets (the address is shown on pages and in the
/// audit log, and `a <b@c>` is a display name, not an address), at most [`MAX_EMAIL_BYTES`].
pub fn check_email(email: &str) -> Result<(), String> {
    let refuse = |why: &str| Err(format!("{email:?} is not an email address: {why}"));
    if email.len() > MAX_EMAIL_BYTES {
        return refuse("it is longer than 254 bytes");
    }
    if email
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>'))
    {
        return refuse("it contains spaces, control characters or angle brackets");
    }
    match email.split_once('@') {
        Some((local, domain))
            if !local.is_empty() && !domain.is_empty() && !domain.contains('@') =>
        {
            if domain.starts_with('.') || domain.ends_with('.') || domain.contains("..") {
                return refuse("its domain is malformed");
            }
            Ok(())
        }
        _ => refuse("it needs exactly one @ with a name before it and a domain after it"),
    }
}

/// Where to send a browser after sign-in: `next` when it is one of our own admin pages, else
/// `/admin`. Only visible ASCII is kept: a CR or LF (or any byte a `Location` header cannot
/// carry) would make the redirect itself fail after the session was already created.
pub fn return_path(next: Option<&str>) -> &str {
    match next {
        Some(n)
            if n.starts_with("/admin")
                && !n.starts_with("//")
                && !n.contains("://")
                && !n.contains('\\')
                && n.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            n
        }
        _ => "/admin",
    }
}

/// How long an invitation link stays valid (the invitee sets a password through it).
pub const INVITE_HOURS: i64 = 72;

/// What an invitation link is worth when someone opens it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InviteLink {
    /// Unused and unexpired: the invitee may set a password.
    Valid,
    /// Already used to create the account.
    Used,
    /// Unused, but older than [`INVITE_HOURS`].
    Expired,
}

/// The state of a stored invitation at `now`. Used wins over expired: a link that did its job
/// says so, whenever it is opened again.
pub fn invite_link(
    used_at: Option<chrono::NaiveDateTime>,
    expires_at: chrono::NaiveDateTime,
    now: chrono::NaiveDateTime,
) -> InviteLink {
    match used_at {
        Some(_) => InviteLink::Used,
        None if expires_at <= now => InviteLink::Expired,
        None => InviteLink::Valid,
    }
}

/// A change to an account that may take its admin rights away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountChange {
    Disable,
    Enable,
    SetRole(Role),
}

/// Whether applying `change` to an account (now `role`, `disabled`) leaves at least one
/// enabled admin, when `enabled_admins` exist before it. Nobody can lock the installation out
/// of its own administration from the browser (the CLI can still create an admin, but a
/// researcher team without shell access could not).
pub fn leaves_an_admin(
    role: Role,
    disabled: bool,
    change: AccountChange,
    enabled_admins: i64,
) -> bool {
    let removes_admin = role == Role::Admin
        && !disabled
        && matches!(
            change,
            AccountChange::Disable | AccountChange::SetRole(Role::Researcher)
        );
    !removes_admin || enabled_admins > 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invite_links_are_used_expired_or_valid() {
        let t = chrono::NaiveDate::from_ymd_opt(2026, 12, 1)
            .and_then(|d| d.and_hms_opt(12, 0, 0))
            .unwrap_or_default();
        let later = t + chrono::Duration::hours(INVITE_HOURS);
        assert_eq!(invite_link(None, later, t), InviteLink::Valid);
        assert_eq!(invite_link(None, later, later), InviteLink::Expired);
        assert_eq!(invite_link(Some(t), later, t), InviteLink::Used);
        assert_eq!(invite_link(Some(t), t, later), InviteLink::Used);
    }

    #[test]
    fn the_last_enabled_admin_stays_an_enabled_admin() {
        use AccountChange::*;
        let (a, r) = (Role::Admin, Role::Researcher);
        assert!(!leaves_an_admin(a, false, Disable, 1));
        assert!(!leaves_an_admin(a, false, SetRole(r), 1));
        assert!(leaves_an_admin(a, false, Disable, 2));
        assert!(leaves_an_admin(a, false, SetRole(r), 2));
        assert!(leaves_an_admin(a, false, SetRole(a), 1));
        assert!(leaves_an_admin(a, false, Enable, 1));
        // A disabled admin or a researcher was not counted: changing them removes nobody.
        assert!(leaves_an_admin(a, true, SetRole(r), 1));
        assert!(leaves_an_admin(r, false, Disable, 1));
    }

    #[test]
    fn weak_passwords_are_refused_and_reasonable_ones_pass() {
        let e = "rita@example.org";
        assert_eq!(check_password("short", e), Err(PasswordProblem::TooShort));
        assert_eq!(
            check_password("          ", e),
            Err(PasswordProblem::OnlyWhitespace)
        );
        assert_eq!(
            check_password(" \t \n      ", e),
            Err(PasswordProblem::OnlyWhitespace)
        );
        for common in [
            "password12",
            "Password12",
            "PASSWORD 123",
            "1234567890",
            "qwertyuiop",
        ] {
            assert_eq!(
                check_password(common, e),
                Err(PasswordProblem::Common),
                "{common}"
            );
        }
        assert_eq!(
            check_password("aaaaaaaaaaaa", e),
            Err(PasswordProblem::Common)
        );
        assert_eq!(
            check_password("Rita@Example.org", e),
            Err(PasswordProblem::Common)
        );
        assert_eq!(
            check_password(&"x".repeat(5000), e),
            Err(PasswordProblem::TooLong)
        );
        // Exactly what sign-in accepts is still allowed; one byte more is not.
        let long: String = "ab".repeat(MAX_PASSWORD_BYTES / 2);
        assert_eq!(check_password(&long, e), Ok(()));
        assert_eq!(
            check_password(&format!("{long}c"), e),
            Err(PasswordProblem::TooLong)
        );
        assert_eq!(check_password("correct horse battery", e), Ok(()));
        assert_eq!(check_password("a long enough secret", e), Ok(()));
    }

    #[test]
    fn emails_need_one_at_and_no_spaces_or_brackets() {
        for good in ["rita@example.org", "a.b+c@sub.example.org", "x@localhost"] {
            assert_eq!(check_email(good), Ok(()), "{good}");
        }
        for bad in [
            "rita",
            "@example.org",
            "rita@",
            "a@b@c",
            "rita @example.org",
            "Rita <rita@example.org>",
            "rita@example.org\n",
            "rita@<b>x</b>",
            "rita@.org",
            "rita@example..org",
        ] {
            assert!(check_email(bad).is_err(), "{bad:?}");
        }
        assert!(check_email(&format!("{}@example.org", "a".repeat(250))).is_err());
    }

    #[test]
    fn only_our_admin_pages_in_plain_ascii_are_returned_to() {
        assert_eq!(return_path(Some("/admin/studies/x")), "/admin/studies/x");
        assert_eq!(return_path(Some("/admin?tab=1")), "/admin?tab=1");
        for bad in [
            "/admin\r\nSet-Cookie: x=y",
            "/admin\n",
            "/admin\t",
            "/admin/é",
            "/admin x",
            "//evil.example",
            "https://evil.example/admin",
            "/admin/https://evil.example",
            "/admin\\evil",
            "/s/study",
            "",
        ] {
            assert_eq!(return_path(Some(bad)), "/admin", "{bad:?}");
        }
        assert_eq!(return_path(None), "/admin");
    }
}
