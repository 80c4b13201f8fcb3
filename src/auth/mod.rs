//! Authentication: password hashes, session tokens, login throttling rules.

pub mod password;

use blake2::{Blake2s256, Digest};

/// How a session token is stored: its BLAKE2s hash in hex. Tokens are 32 random alphanumerics
/// (~190 bits), so a fast hash is enough; only password hashes need Argon2.
pub fn token_hash(token: &str) -> String {
    Blake2s256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// BLAKE2s over a domain label, the key and `text`, in hex, 32 digits (128
/// bits). A keyed prefix is a sound MAC with BLAKE2, which has no length extension; the key's
/// length is fixed per installation. The one MAC of the application: CSRF tokens (`web::csrf`), and
/// through `AppState::keyed` the survey's visit ids and pilot tokens, each with its own label.
pub fn keyed_mac(key: &[u8], label: &[u8], text: &str) -> String {
    Blake2s256::new()
        .chain_update(label)
        .chain_update(b"\0")
        .chain_update(key)
        .chain_update(b"\0")
        .chain_update(text.as_bytes())
        .finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Compares in time independent of where the inputs differ (tokens are secrets).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Login throttling. Every attempt is recorded (as a failure) before its password is verified
/// and marked a success afterwards, so attempts still being verified count too.
///
/// - An account from one client address: [`MAX_FAILURES_PER_ACCOUNT`] failures in the window
///   block that pair, even with the right password (guessing from one place stops).
/// - One client address over every account: [`MAX_FAILURES_PER_ADDRESS`] failures block it.
/// - An account's failures from *other* addresses never block it (anyone could lock a known
///   account out that way); past [`DELAY_AFTER_FAILURES`] of them each further attempt at the
///   account waits [`login_delay`], growing, so distributed guessing slows down while its owner
///   still gets in.
pub const THROTTLE_WINDOW_MINUTES: i64 = 15;
pub const MAX_FAILURES_PER_ACCOUNT: i64 = 5;
pub const MAX_FAILURES_PER_ADDRESS: i64 = 20;
pub const DELAY_AFTER_FAILURES: i64 = 5;
/// The first delay; each further failure doubles it up to [`MAX_LOGIN_DELAY_MS`].
pub const LOGIN_DELAY_BASE_MS: u64 = 250;
pub const MAX_LOGIN_DELAY_MS: u64 = 8_000;

/// Recent failed sign-in attempts (in the throttle window) that concern one attempt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecentFailures {
    /// At this account from this address.
    pub account_here: i64,
    /// From this address at any account.
    pub address: i64,
    /// At this account from every other address.
    pub account_elsewhere: i64,
}

impl RecentFailures {
    /// Whether the attempt is refused outright (429) instead of being verified.
    pub fn blocked(&self) -> bool {
        self.account_here >= MAX_FAILURES_PER_ACCOUNT || self.address >= MAX_FAILURES_PER_ADDRESS
    }
}

/// How long an attempt at an account waits before it is verified, given the account's recent
/// failures from other addresses: nothing up to [`DELAY_AFTER_FAILURES`], then
/// [`LOGIN_DELAY_BASE_MS`] doubling with each failure, at most [`MAX_LOGIN_DELAY_MS`].
pub fn login_delay(failures_elsewhere: i64) -> std::time::Duration {
    let over = failures_elsewhere - DELAY_AFTER_FAILURES;
    if over < 0 {
        return std::time::Duration::ZERO;
    }
    let doublings = u32::try_from(over.min(16)).unwrap_or(16);
    let ms = LOGIN_DELAY_BASE_MS
        .saturating_mul(1u64 << doublings)
        .min(MAX_LOGIN_DELAY_MS);
    std::time::Duration::from_millis(ms)
}

/// Sessions last this long from login.
pub const SESSION_HOURS: i64 = 12;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_hashes_are_stable_hex_and_distinct() {
        let a = token_hash("abc");
        assert_eq!(a.len(), 64);
        assert_eq!(a, token_hash("abc"));
        assert_ne!(a, token_hash("abd"));
    }

    #[test]
    fn the_pair_and_the_address_block_other_places_only_slow_down() {
        let f = |account_here, address, account_elsewhere| RecentFailures {
            account_here,
            address,
            account_elsewhere,
        };
        assert!(!f(4, 4, 1000).blocked(), "failures elsewhere never block");
        assert!(f(5, 5, 0).blocked());
        assert!(f(0, 20, 0).blocked());
        assert!(!f(0, 19, 0).blocked());
        let ms = |n| login_delay(n).as_millis();
        assert_eq!(ms(0), 0);
        assert_eq!(ms(4), 0);
        assert_eq!(ms(5), 250);
        assert_eq!(ms(6), 500);
        assert_eq!(ms(7), 1000);
        assert_eq!(ms(100), 8000);
        assert_eq!(ms(i64::MAX), 8000);
    }
}
