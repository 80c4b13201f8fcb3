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

/// Login throttling: failed attempts allowed per account and per client address in the window.
pub const THROTTLE_WINDOW_MINUTES: i64 = 15;
pub const MAX_FAILURES_PER_ACCOUNT: i64 = 5;
pub const MAX_FAILURES_PER_ADDRESS: i64 = 20;

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
}
