//! The response cache's addressing and its exchange format (#17): a reply is found again by the
//! hash of what was asked, and a lab's cache travels as JSON lines that are checked one by one
//! before any is taken in.

use blake2::{Blake2s256, Digest};
use serde::{Deserialize, Serialize};

/// What a cached reply answered: everything that decides the reply, and the repeat index, so
/// that repeats of one prompt keep their own answers (a cache keyed by the request alone hands
/// every repeat the first one's answer: promptfoo #360, #1431).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheAddress<'a> {
    /// The wire format (`openai`, `anthropic`, `gemini`).
    pub provider_kind: &'a str,
    pub base_url: &'a str,
    pub model: &'a str,
    /// The exact request body sent.
    pub request: &'a str,
    pub repeat_index: i32,
}

impl CacheAddress<'_> {
    /// BLAKE2s-256 in hex of the canonical description: a JSON array of the five parts (JSON
    /// so that no part's text can run into the next), the base URL without trailing slashes.
    pub fn key(&self) -> String {
        let canonical = serde_json::json!([
            self.provider_kind,
            self.base_url.trim_end_matches('/'),
            self.model,
            self.request,
            self.repeat_index,
        ])
        .to_string();
        Blake2s256::digest(canonical.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// One cached reply, as stored and as one line of an exported file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheEntry {
    pub key: String,
    pub provider_kind: String,
    pub base_url: String,
    pub model: String,
    pub request: String,
    pub repeat_index: i32,
    pub http_status: i32,
    /// The reply body as the provider sent it.
    pub reply: String,
}

impl CacheEntry {
    pub fn address(&self) -> CacheAddress<'_> {
        CacheAddress {
            provider_kind: &self.provider_kind,
            base_url: &self.base_url,
            model: &self.model,
            request: &self.request,
            repeat_index: self.repeat_index,
        }
    }

    /// Reads one line of an exported file: valid JSON of exactly these fields, a known
    /// provider kind, a request that is JSON, a 2xx status, and a key that is the hash of the
    /// rest (a line edited by hand, or cut, does not pass for another request's answer).
    /// `reply_reads` says whether the reply is a completion of its wire format.
    pub fn from_line(
        line: &str,
        reply_reads: impl Fn(&str, &str) -> Result<(), String>,
    ) -> Result<CacheEntry, String> {
        let e: CacheEntry = serde_json::from_str(line).map_err(|e| format!("not an entry: {e}"))?;
        if !["openai", "anthropic", "gemini"].contains(&e.provider_kind.as_str()) {
            return Err(format!("unknown provider kind {:?}", e.provider_kind));
        }
        serde_json::from_str::<serde_json::Value>(&e.request)
            .map_err(|err| format!("the request is not JSON: {err}"))?;
        if !(200..300).contains(&e.http_status) {
            return Err(format!(
                "status {} is not a successful reply",
                e.http_status
            ));
        }
        if e.address().key() != e.key {
            return Err("the key is not the hash of the entry's request".into());
        }
        reply_reads(&e.provider_kind, &e.reply)?;
        Ok(e)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn address(repeat: i32) -> CacheAddress<'static> {
        CacheAddress {
            provider_kind: "openai",
            base_url: "http://127.0.0.1:1/v1",
            model: "m",
            request: r#"{"model":"m"}"#,
            repeat_index: repeat,
        }
    }

    #[test]
    fn each_part_and_the_repeat_index_change_the_key() {
        let base = address(0).key();
        assert_eq!(base.len(), 64);
        assert_eq!(base, address(0).key());
        assert_ne!(base, address(1).key());
        let slash = CacheAddress {
            base_url: "http://127.0.0.1:1/v1/",
            ..address(0)
        };
        assert_eq!(base, slash.key());
        for changed in [
            CacheAddress {
                provider_kind: "anthropic",
                ..address(0)
            },
            CacheAddress {
                base_url: "http://127.0.0.1:2/v1",
                ..address(0)
            },
            CacheAddress {
                model: "m2",
                ..address(0)
            },
            CacheAddress {
                request: r#"{"model":"m" }"#,
                ..address(0)
            },
        ] {
            assert_ne!(base, changed.key(), "{changed:?}");
        }
    }

    fn entry() -> CacheEntry {
        let a = address(2);
        CacheEntry {
            key: a.key(),
            provider_kind: a.provider_kind.into(),
            base_url: a.base_url.into(),
            model: a.model.into(),
            request: a.request.into(),
            repeat_index: 2,
            http_status: 200,
            reply: "{}".into(),
        }
    }

    #[test]
    fn lines_are_checked_before_they_are_taken() {
        let ok = |_: &str, _: &str| Ok(());
        let line = serde_json::to_string(&entry()).unwrap();
        assert_eq!(CacheEntry::from_line(&line, ok).unwrap(), entry());
        let bad = |e: CacheEntry| serde_json::to_string(&e).unwrap();
        let cases = [
            ("{".to_owned(), "not an entry"),
            (
                line.replace("\"reply\"", "\"extra\":1,\"reply\""),
                "not an entry",
            ),
            (
                bad(CacheEntry {
                    repeat_index: 3,
                    ..entry()
                }),
                "the key is not the hash",
            ),
            (
                bad(CacheEntry {
                    http_status: 429,
                    ..entry()
                }),
                "not a successful reply",
            ),
            (
                bad(CacheEntry {
                    provider_kind: "x".into(),
                    ..entry()
                }),
                "unknown provider kind",
            ),
        ];
        for (line, why) in cases {
            let e = CacheEntry::from_line(&line, ok).unwrap_err();
            assert!(e.contains(why), "{line}: {e}");
        }
        let unreadable = |_: &str, _: &str| Err("not a completion".to_owned());
        assert_eq!(
            CacheEntry::from_line(&line, unreadable).unwrap_err(),
            "not a completion"
        );
    }
}
