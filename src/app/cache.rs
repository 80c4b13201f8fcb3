//! Sharing the response cache (#17): a lab exports the answers its runs were given and another
//! imports them, so that an identical run there costs no provider calls.

use std::path::Path;

use crate::config::ProviderKind;
use crate::llm::wire;
use crate::store::DbConnection;
use crate::store::audit::{self, Actor};
use crate::store::cache::{self, CacheEntry};

use super::error::{Error, Result, invalid};

/// Every entry as JSON lines (one [`CacheEntry`] per line, by key).
pub fn export(conn: &mut DbConnection) -> Result<(String, usize)> {
    let entries = cache::all(conn)?;
    let mut out = String::new();
    for e in &entries {
        let line = serde_json::to_string(e)
            .map_err(|err| invalid(format!("cache entry {}: {err}", e.key)))?;
        out.push_str(&line);
        out.push('\n');
    }
    Ok((out, entries.len()))
}

/// How many lines are named in a refusal before "and N more".
const NAMED: usize = 10;

/// Checks every line of an exported file (see [`CacheEntry::from_line`]; the reply must read
/// as a completion of its wire format) and takes them all in, or none: a refusal names each
/// malformed line by its number. Returns (lines read, entries new here).
pub fn import(
    conn: &mut DbConnection,
    path: &Path,
    text: &str,
    actor: &Actor,
) -> Result<(usize, usize)> {
    let reads = |kind: &str, reply: &str| {
        let kind = [
            ProviderKind::Openai,
            ProviderKind::Anthropic,
            ProviderKind::Gemini,
        ]
        .into_iter()
        .find(|k| k.as_str() == kind)
        .ok_or_else(|| format!("unknown provider kind {kind:?}"))?;
        wire::parse_completion(kind, reply)
            .map(|_| ())
            .map_err(|p| format!("the reply is not a completion: {}", p.message))
    };
    let mut entries = Vec::new();
    let mut bad = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match CacheEntry::from_line(line, reads) {
            Ok(e) => entries.push(e),
            Err(why) => bad.push(format!("line {}: {why}", i + 1)),
        }
    }
    if !bad.is_empty() {
        let more = bad.len().saturating_sub(NAMED);
        let mut message = format!(
            "{}: {} malformed line(s), nothing imported\n  {}",
            path.display(),
            bad.len(),
            bad[..bad.len().min(NAMED)].join("\n  ")
        );
        if more > 0 {
            message.push_str(&format!("\n  and {more} more"));
        }
        return Err(Error::Invalid(message));
    }
    let added = conn.write_transaction(|conn| {
        let added = cache::import(conn, &entries)?;
        audit::record(
            conn,
            actor,
            "cache.import",
            None,
            Some(&serde_json::json!({"lines": entries.len(), "new": added})),
        )?;
        Ok::<_, Error>(added)
    })?;
    Ok((entries.len(), added))
}
