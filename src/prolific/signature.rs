//! Webhook signatures. "Hook requests will contain two headers, X-Prolific-Request-Signature
//! and X-Prolific-Request-Timestamp … sign the request body and timestamp with your secret key
//! using SHA256 and then base64 encode the resulting digest"; the reference's Python example
//! signs `timestamp + body` (the two strings joined) with HMAC-SHA256 and compares with
//! `hmac.compare_digest` (<https://docs.prolific.com/api-reference/webhooks/verifying>).
//!
//! The comparison here is ring's `hmac::verify` over the decoded bytes: constant time.

use ring::hmac;

pub const SIGNATURE_HEADER: &str = "X-Prolific-Request-Signature";
pub const TIMESTAMP_HEADER: &str = "X-Prolific-Request-Timestamp";
/// "X-Event-ID is added as a header to the request … The X-Event-ID will remain the same across
/// retries" (<https://docs.prolific.com/api-reference/webhooks/idempotency-and-the-x-event-id-header>).
pub const EVENT_ID_HEADER: &str = "X-Event-ID";

/// The signature Prolific sends for this timestamp and body (what the fake and tests send).
pub fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut ctx = hmac::Context::with_key(&key);
    ctx.update(timestamp.as_bytes());
    ctx.update(body);
    base64_encode(ctx.sign().as_ref())
}

/// True when `signature` is the base64 HMAC-SHA256 of `timestamp + body` under `secret`.
pub fn verify(secret: &str, timestamp: &str, body: &[u8], signature: &str) -> bool {
    let Some(tag) = base64_decode(signature.trim()) else {
        return false;
    };
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut msg = Vec::with_capacity(timestamp.len() + body.len());
    msg.extend_from_slice(timestamp.as_bytes());
    msg.extend_from_slice(body);
    hmac::verify(&key, &msg, &tag).is_ok()
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (Python's `base64.b64encode`).
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard base64, padding required; `None` for anything else.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if bytes.is_empty() || bytes.len() % 4 != 0 {
        return None;
    }
    let value = |c: u8| ALPHABET.iter().position(|a| *a == c).map(|p| p as u32);
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let last = bytes.len() / 4 - 1;
    for (i, quad) in bytes.chunks(4).enumerate() {
        let pad = quad.iter().rev().take_while(|c| **c == b'=').count();
        if pad > 2 || (pad > 0 && i != last) {
            return None;
        }
        let mut n = 0u32;
        for (j, c) in quad.iter().enumerate() {
            let v = if j >= 4 - pad { 0 } else { value(*c)? };
            n = (n << 6) | v;
        }
        let three = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&three[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_and_matches_known_values() {
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_encode(b"fooba"), "Zm9vYmE=");
        assert_eq!(base64_encode(b"foob"), "Zm9vYg==");
        for s in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            if !s.is_empty() {
                assert_eq!(
                    base64_decode(&base64_encode(s.as_bytes())).unwrap(),
                    s.as_bytes()
                );
            }
        }
        assert_eq!(base64_decode("Zm9v!mFy"), None);
        assert_eq!(base64_decode("Zm9"), None);
        assert_eq!(base64_decode("Zg==Zm9v"), None);
    }

    #[test]
    fn signatures_match_the_reference_computation() {
        // RFC 4231 test case 2: HMAC-SHA256("Jefe", "what do ya want for nothing?").
        let sig = sign("Jefe", "what do ya want ", b"for nothing?");
        let hex: Vec<u8> = base64_decode(&sig).unwrap();
        let hex: String = hex.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert!(verify("Jefe", "what do ya want ", b"for nothing?", &sig));
        assert!(!verify("jefe", "what do ya want ", b"for nothing?", &sig));
        assert!(!verify("Jefe", "what do ya want!", b"for nothing?", &sig));
        assert!(!verify(
            "Jefe",
            "what do ya want ",
            b"for nothing?",
            "not base64"
        ));
    }
}
