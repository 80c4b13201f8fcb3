//! Prolific's signed participant token (`prolific_token` in the study link): an RS256 JWT that
//! Prolific signs when it sends a participant to the study, so that a link typed by hand (any
//! Prolific id in it) can be told from one Prolific made (issue #15, point 2).
//!
//! What is checked is what Prolific's reference of its key set asks
//! (<https://docs.prolific.com/api-reference/well-known-endpoints/get-study-jwks>, "To verify
//! the signature of a JWT you must verify the following"):
//! - the signature, with the key of the JWKS whose `kid` the token's header names (RS256 only:
//!   the header's `alg` must be exactly `RS256`, so no `none` or HMAC-with-the-public-key
//!   confusion is possible);
//! - `exp` (a number; a missing or non-numeric `exp` is refused, never skipped);
//! - `aud` is our domain (a string or a list containing it);
//! - the `prolific` claim: it "always includes `workspace_id`", which must be the study's when
//!   the study names one; ids it carries under the study's link parameter names must equal the
//!   link's.
//!
//! And the token's short life: at most [`MAX_LIFETIME_SECONDS`] (two minutes) between `iat` and
//! `exp`, and `exp` no further than that ahead of now, with [`LEEWAY_SECONDS`] for clocks.
//!
//! Pure: the key set is fetched and cached by `web::jwks`; the clock is passed in.
//!
//! Why ring directly and not the `jsonwebtoken` crate: its ring-based line (9.x) carries
//! CVE-2026-25537 / GHSA-h395-gr6q-cpjc (a malformed `exp`/`nbf` skipped), fixed only in 10.3,
//! whose crypto backends are aws-lc (a C build) or the RustCrypto stack (about thirty new
//! crates, `rsa` with RUSTSEC-2023-0071). ring 0.17 is already built for rustls, and RS256
//! verification is one call of it; the parsing here is strict instead.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

/// Prolific's tokens live two minutes.
pub const MAX_LIFETIME_SECONDS: i64 = 120;
/// Allowed clock difference between Prolific and us.
pub const LEEWAY_SECONDS: i64 = 30;
/// Longer query values are not tokens (a 2048-bit RS256 JWT with a few claims is ~700 bytes).
pub const MAX_TOKEN_LEN: usize = 8_192;

/// The `prolific_token` query parameter of the link.
pub const TOKEN_PARAM: &str = "prolific_token";

/// One RSA verification key of a JWKS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jwk {
    pub kid: String,
    /// Modulus and exponent, big-endian bytes.
    pub n: Vec<u8>,
    pub e: Vec<u8>,
}

/// A key set, as Prolific publishes it at `/.well-known/study/jwks.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Jwks {
    pub keys: Vec<Jwk>,
}

impl Jwks {
    /// Parses a JWKS document, keeping the RSA signature keys (`kty` RSA, `alg` RS256 or
    /// absent, `use` sig or absent); other keys are skipped, a malformed RSA key is an error.
    pub fn parse(json: &str) -> Result<Jwks, String> {
        let doc: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
        let keys = doc
            .get("keys")
            .and_then(Value::as_array)
            .ok_or("no \"keys\" array")?;
        let mut out = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            let s = |name: &str| k.get(name).and_then(Value::as_str);
            if s("kty") != Some("RSA")
                || s("alg").is_some_and(|a| a != "RS256")
                || s("use").is_some_and(|u| u != "sig")
            {
                continue;
            }
            let kid = s("kid").ok_or(format!("key {i} has no kid"))?;
            let part = |name: &str| {
                s(name)
                    .and_then(|v| URL_SAFE_NO_PAD.decode(v).ok())
                    .filter(|b| !b.is_empty())
                    .ok_or(format!("key {kid:?}: {name} is not base64url"))
            };
            out.push(Jwk {
                kid: kid.to_owned(),
                n: part("n")?,
                e: part("e")?,
            });
        }
        Ok(Jwks { keys: out })
    }

    pub fn key(&self, kid: &str) -> Option<&Jwk> {
        self.keys.iter().find(|k| k.kid == kid)
    }
}

/// What the study expects of a token.
#[derive(Debug, Clone)]
pub struct Expected<'a> {
    /// The `aud` our tokens carry (our domain).
    pub audience: &'a str,
    /// The Prolific workspace the study belongs to, when the study names one.
    pub workspace_id: Option<&'a str>,
    /// The link's ids under the study's parameter names, `(name, value)`: a value the
    /// `prolific` claim carries under the same name must be equal.
    pub link: Vec<(&'a str, Option<&'a str>)>,
    /// Now, Unix seconds.
    pub now: i64,
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the token is malformed: {0}")]
    Malformed(&'static str),
    /// The header's `kid` is not in the key set (rotated keys: the caller may refetch once).
    #[error("the token names a key Prolific does not publish")]
    UnknownKey(String),
    #[error("the token's signature does not verify")]
    BadSignature,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token lives longer than Prolific's tokens do")]
    TooLong,
    #[error("the token is for another site")]
    WrongAudience,
    #[error("the token is for another Prolific workspace")]
    WrongWorkspace,
    #[error("the token is for another participant or study ({0})")]
    WrongIds(String),
}

/// A verified token's `prolific` claim: every string value in it, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub workspace_id: String,
    pub values: Vec<(String, String)>,
}

impl Verified {
    /// The claim's value under `name` (e.g. the study's participant id parameter).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The header's `kid`, without verifying anything (which key to look up or fetch).
pub fn key_id(token: &str) -> Result<String, TokenError> {
    let (header, _, _) = split(token)?;
    header_kid(&decode_json(header)?)
}

fn split(token: &str) -> Result<(&str, &str, &str), TokenError> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(TokenError::Malformed("too long"));
    }
    let mut parts = token.split('.');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(h), Some(p), Some(s), None) if !h.is_empty() && !p.is_empty() && !s.is_empty() => {
            Ok((h, p, s))
        }
        _ => Err(TokenError::Malformed("not three dot-separated parts")),
    }
}

fn decode_json(part: &str) -> Result<Value, TokenError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| TokenError::Malformed("a part is not base64url"))?;
    let v: Value =
        serde_json::from_slice(&bytes).map_err(|_| TokenError::Malformed("a part is not JSON"))?;
    if v.is_object() {
        Ok(v)
    } else {
        Err(TokenError::Malformed("a part is not a JSON object"))
    }
}

fn header_kid(header: &Value) -> Result<String, TokenError> {
    if header.get("alg").and_then(Value::as_str) != Some("RS256") {
        return Err(TokenError::Malformed("alg is not RS256"));
    }
    if header.get("crit").is_some() {
        return Err(TokenError::Malformed("critical header extensions"));
    }
    header
        .get("kid")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or(TokenError::Malformed("no kid"))
}

/// A NumericDate claim: a JSON number (fractions allowed), or the error for anything else.
fn seconds(claims: &Value, name: &'static str) -> Result<Option<i64>, TokenError> {
    match claims.get(name) {
        None => Ok(None),
        Some(v) => v
            .as_i64()
            .or_else(|| {
                v.as_f64()
                    .filter(|f| f.is_finite())
                    .map(|f| f.floor() as i64)
            })
            .map(Some)
            .ok_or(TokenError::Malformed(match name {
                "exp" => "exp is not a number",
                "iat" => "iat is not a number",
                _ => "nbf is not a number",
            })),
    }
}

/// Verifies `token` against `keys` and `expected`: the claim, or why not.
pub fn verify(token: &str, keys: &Jwks, expected: &Expected<'_>) -> Result<Verified, TokenError> {
    let (h, p, s) = split(token)?;
    let kid = header_kid(&decode_json(h)?)?;
    let key = keys.key(&kid).ok_or(TokenError::UnknownKey(kid))?;
    let signature = URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| TokenError::Malformed("the signature is not base64url"))?;
    let message = &token.as_bytes()[..h.len() + 1 + p.len()];
    ring::signature::RsaPublicKeyComponents {
        n: &key.n,
        e: &key.e,
    }
    .verify(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        message,
        &signature,
    )
    .map_err(|_| TokenError::BadSignature)?;
    // Only now is anything in the claims believed.
    let claims = decode_json(p)?;
    check_times(&claims, expected.now)?;
    check_audience(&claims, expected.audience)?;
    check_prolific(&claims, expected)
}

fn check_times(claims: &Value, now: i64) -> Result<(), TokenError> {
    let exp = seconds(claims, "exp")?.ok_or(TokenError::Malformed("no exp"))?;
    if exp.saturating_add(LEEWAY_SECONDS) < now {
        return Err(TokenError::Expired);
    }
    if exp > now.saturating_add(MAX_LIFETIME_SECONDS + LEEWAY_SECONDS) {
        return Err(TokenError::TooLong);
    }
    if let Some(iat) = seconds(claims, "iat")? {
        if exp.saturating_sub(iat) > MAX_LIFETIME_SECONDS {
            return Err(TokenError::TooLong);
        }
    }
    if let Some(nbf) = seconds(claims, "nbf")? {
        if nbf > now.saturating_add(LEEWAY_SECONDS) {
            return Err(TokenError::NotYetValid);
        }
    }
    Ok(())
}

fn check_audience(claims: &Value, audience: &str) -> Result<(), TokenError> {
    let ok = match claims.get("aud") {
        Some(Value::String(a)) => a == audience,
        Some(Value::Array(list)) => list.iter().any(|a| a.as_str() == Some(audience)),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(TokenError::WrongAudience)
    }
}

fn check_prolific(claims: &Value, expected: &Expected<'_>) -> Result<Verified, TokenError> {
    let claim = claims
        .get("prolific")
        .and_then(Value::as_object)
        .ok_or(TokenError::Malformed("no prolific claim"))?;
    let values: Vec<(String, String)> = claim
        .iter()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
        .collect();
    let verified = Verified {
        workspace_id: claim
            .get("workspace_id")
            .and_then(Value::as_str)
            .ok_or(TokenError::Malformed("no prolific.workspace_id"))?
            .to_owned(),
        values,
    };
    if let Some(w) = expected.workspace_id {
        if verified.workspace_id != w {
            return Err(TokenError::WrongWorkspace);
        }
    }
    for (name, link) in &expected.link {
        if let (Some(claimed), Some(link)) = (verified.get(name), link) {
            if claimed != *link {
                return Err(TokenError::WrongIds((*name).to_owned()));
            }
        }
    }
    Ok(verified)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(v: &Value) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap_or_default())
    }

    /// A token with a signature that is not checked by the claim tests below (they call the
    /// claim checks directly); signature tests are in tests/api/door.rs with a real key.
    fn claims(exp: i64, iat: Option<i64>) -> Value {
        let mut c = serde_json::json!({
            "aud": "survey.example.org",
            "exp": exp,
            "prolific": {"workspace_id": "w1", "PROLIFIC_PID": "p1"},
        });
        if let Some(iat) = iat {
            c["iat"] = serde_json::json!(iat);
        }
        c
    }

    fn expected(now: i64) -> Expected<'static> {
        Expected {
            audience: "survey.example.org",
            workspace_id: Some("w1"),
            link: vec![("PROLIFIC_PID", Some("p1"))],
            now,
        }
    }

    #[test]
    fn times_follow_the_two_minute_life() {
        let now = 1_000_000;
        assert_eq!(check_times(&claims(now + 100, Some(now - 20)), now), Ok(()));
        assert_eq!(
            check_times(&claims(now - LEEWAY_SECONDS - 1, None), now),
            Err(TokenError::Expired)
        );
        assert_eq!(
            check_times(&claims(now + 3600, None), now),
            Err(TokenError::TooLong),
            "an hour-long token is not Prolific's"
        );
        assert_eq!(
            check_times(&claims(now + 60, Some(now - 600)), now),
            Err(TokenError::TooLong)
        );
        let mut c = claims(now + 60, None);
        c["exp"] = serde_json::json!("99999999999");
        assert_eq!(
            check_times(&c, now),
            Err(TokenError::Malformed("exp is not a number")),
            "a string exp is refused, not skipped (CVE-2026-25537's shape)"
        );
        let mut c = claims(now + 60, None);
        c.as_object_mut().map(|o| o.remove("exp"));
        assert_eq!(check_times(&c, now), Err(TokenError::Malformed("no exp")));
    }

    #[test]
    fn audience_workspace_and_ids_must_match() {
        let now = 1_000_000;
        let c = claims(now + 60, None);
        assert_eq!(check_audience(&c, "survey.example.org"), Ok(()));
        assert_eq!(
            check_audience(&c, "other.example.org"),
            Err(TokenError::WrongAudience)
        );
        let mut list = c.clone();
        list["aud"] = serde_json::json!(["a", "survey.example.org"]);
        assert_eq!(check_audience(&list, "survey.example.org"), Ok(()));
        let v = check_prolific(&c, &expected(now)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v.get("PROLIFIC_PID"), Some("p1"));
        let mut other = expected(now);
        other.workspace_id = Some("w2");
        assert_eq!(check_prolific(&c, &other), Err(TokenError::WrongWorkspace));
        let mut other = expected(now);
        other.link = vec![("PROLIFIC_PID", Some("p2"))];
        assert_eq!(
            check_prolific(&c, &other),
            Err(TokenError::WrongIds("PROLIFIC_PID".into()))
        );
    }

    #[test]
    fn headers_other_than_rs256_with_a_kid_are_malformed() {
        let keys = Jwks::default();
        let body = b64(&claims(0, None));
        for header in [
            serde_json::json!({"alg": "none", "kid": "k"}),
            serde_json::json!({"alg": "HS256", "kid": "k"}),
            serde_json::json!({"alg": "RS256"}),
        ] {
            let t = format!("{}.{body}.c2ln", b64(&header));
            assert!(
                matches!(
                    verify(&t, &keys, &expected(0)),
                    Err(TokenError::Malformed(_))
                ),
                "{header}"
            );
        }
        let t = format!(
            "{}.{body}.c2ln",
            b64(&serde_json::json!({"alg": "RS256", "kid": "k"}))
        );
        assert_eq!(
            verify(&t, &keys, &expected(0)),
            Err(TokenError::UnknownKey("k".into()))
        );
        assert!(matches!(
            verify("a.b", &keys, &expected(0)),
            Err(TokenError::Malformed(_))
        ));
    }

    #[test]
    fn a_jwks_keeps_rsa_signature_keys() {
        let doc = r#"{"keys":[
            {"kty":"RSA","kid":"a","alg":"RS256","use":"sig","n":"AQAB","e":"AQAB"},
            {"kty":"EC","kid":"b","crv":"P-256","x":"AA","y":"AA"},
            {"kty":"RSA","kid":"c","use":"enc","n":"AQAB","e":"AQAB"}]}"#;
        let keys = Jwks::parse(doc).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(keys.keys.len(), 1);
        assert_eq!(keys.key("a").map(|k| k.e.clone()), Some(vec![1, 0, 1]));
        assert!(Jwks::parse(r#"{"keys":[{"kty":"RSA","kid":"x","n":"!","e":"AQAB"}]}"#).is_err());
        assert!(Jwks::parse("[]").is_err());
    }
}
