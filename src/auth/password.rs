//! Argon2id password hashes (PHC strings) and random secrets.

use argon2::Argon2;
use argon2::password_hash::{PasswordHasher, PasswordVerifier, phc::PasswordHash};
use rand::Rng;
use rand::distr::Alphanumeric;

#[derive(Debug, thiserror::Error)]
#[error("password hashing failed: {0}")]
pub struct HashError(String);

/// Hashes with Argon2id (the crate's default parameters) and a random salt.
pub fn hash(password: &str) -> Result<String, HashError> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| HashError(e.to_string()))
}

/// True when `password` matches the PHC string `stored`. A malformed stored hash never matches.
pub fn verify(password: &str, stored: &str) -> bool {
    match PasswordHash::new(stored) {
        Ok(parsed) => Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

/// A random alphanumeric secret from the OS-seeded thread RNG (passwords, tokens).
pub fn random_secret(len: usize) -> String {
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_is_argon2id_salted_and_verifies_only_its_password() {
        let a = hash("correct horse").unwrap_or_else(|e| panic!("{e}"));
        let b = hash("correct horse").unwrap_or_else(|e| panic!("{e}"));
        assert!(a.starts_with("$argon2id$"), "{a}");
        assert_ne!(a, b, "salts differ");
        assert!(verify("correct horse", &a));
        assert!(!verify("correct horse!", &a));
        assert!(!verify("correct horse", "not a hash"));
    }

    #[test]
    fn secrets_are_random_and_alphanumeric() {
        let s = random_secret(24);
        assert_eq!(s.len(), 24);
        assert!(s.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(s, random_secret(24));
    }
}
