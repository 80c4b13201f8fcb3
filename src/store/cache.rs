//! The response cache (`response_cache`, #17): successful reply bodies by the hash of what was
//! asked ([`CacheAddress::key`]). The runner looks a trial's first request up here before it
//! sends it, and stores the reply of every trial that reads; `cache export` / `cache import`
//! move entries between installations as JSON lines.

use diesel::prelude::*;

use super::db::per_backend;
use super::schema::response_cache;
use super::{DbConnection, now};
pub use crate::domain::cache::{CacheAddress, CacheEntry};

/// A cached reply: its status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedReply {
    pub http_status: i32,
    pub reply: String,
}

/// The reply stored for this address, if any.
pub fn get(
    conn: &mut DbConnection,
    address: &CacheAddress<'_>,
) -> QueryResult<Option<CachedReply>> {
    let row: Option<(i32, String)> = response_cache::table
        .find(address.key())
        .select((response_cache::http_status, response_cache::reply))
        .first(conn)
        .optional()?;
    Ok(row.map(|(http_status, reply)| CachedReply { http_status, reply }))
}

/// Stores an entry. `replace`: a fresh answer takes the place of the cached one (`--fresh`);
/// otherwise the first answer stored for an address stays (two workers racing on one key
/// keep the same one).
pub fn put(conn: &mut DbConnection, e: &CacheEntry, replace: bool) -> QueryResult<()> {
    let values = (
        response_cache::key.eq(&e.key),
        response_cache::provider_kind.eq(&e.provider_kind),
        response_cache::base_url.eq(&e.base_url),
        response_cache::model.eq(&e.model),
        response_cache::request.eq(&e.request),
        response_cache::repeat_index.eq(e.repeat_index),
        response_cache::http_status.eq(e.http_status),
        response_cache::reply.eq(&e.reply),
        response_cache::created_at.eq(now()),
    );
    if replace {
        let upsert = diesel::insert_into(response_cache::table)
            .values(values)
            .on_conflict(response_cache::key)
            .do_update()
            .set((
                response_cache::http_status.eq(e.http_status),
                response_cache::reply.eq(&e.reply),
                response_cache::created_at.eq(now()),
            ));
        // ON CONFLICT is written per backend: the MultiConnection's backend has no upsert.
        per_backend!(conn, |c| upsert.execute(c))?;
    } else {
        let insert = diesel::insert_into(response_cache::table)
            .values(values)
            .on_conflict(response_cache::key)
            .do_nothing();
        per_backend!(conn, |c| insert.execute(c))?;
    }
    Ok(())
}

/// A row of `response_cache` without its time.
#[derive(Queryable, Selectable)]
#[diesel(table_name = response_cache)]
struct Row {
    key: String,
    provider_kind: String,
    base_url: String,
    model: String,
    request: String,
    repeat_index: i32,
    http_status: i32,
    reply: String,
}

/// Every entry, by key (the exported file's order).
pub fn all(conn: &mut DbConnection) -> QueryResult<Vec<CacheEntry>> {
    let rows: Vec<Row> = response_cache::table
        .order(response_cache::key)
        .select(Row::as_select())
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|r| CacheEntry {
            key: r.key,
            provider_kind: r.provider_kind,
            base_url: r.base_url,
            model: r.model,
            request: r.request,
            repeat_index: r.repeat_index,
            http_status: r.http_status,
            reply: r.reply,
        })
        .collect())
}

/// Takes in checked entries in one transaction; entries already present stay as they are.
/// Returns how many were new.
pub fn import(conn: &mut DbConnection, entries: &[CacheEntry]) -> QueryResult<usize> {
    conn.write_transaction(|conn| {
        let before: i64 = response_cache::table.count().get_result(conn)?;
        for e in entries {
            put(conn, e, false)?;
        }
        let after: i64 = response_cache::table.count().get_result(conn)?;
        Ok(usize::try_from(after - before).unwrap_or(0))
    })
}
