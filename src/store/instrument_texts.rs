//! Instruments' item texts and labels in other languages (issue #20): an instrument has its own
//! texts (a study's default language) and one row here per other language, as JSON checked
//! against the instrument on import and again on reading.

use diesel::prelude::*;

use super::schema::instrument_texts;
use super::{DbConnection, InstrumentId, StoreError, instruments};
use crate::domain::instrument::{Instrument, ScaleLabel};
use crate::domain::instrument_text::{self, ItemText, Translation, TranslationRecord};
use crate::domain::language::Lang;

/// Stores each record's texts as its instrument's texts in `lang`, replacing an earlier
/// translation in that language, in one transaction. Returns (instrument key, items) per
/// record. An instrument that does not exist, or a record that does not match its instrument
/// (see [`instrument_text::check`]), is refused naming the record and field; nothing is stored.
pub fn import(
    conn: &mut DbConnection,
    lang: &Lang,
    records: &[TranslationRecord],
) -> Result<Vec<(String, usize)>, StoreError> {
    conn.write_transaction(|conn| {
        let mut done = Vec::with_capacity(records.len());
        for (i, record) in records.iter().enumerate() {
            let key = record.name.trim();
            let Some((id, inst)) = instruments::load(conn, key)? else {
                return Err(StoreError::Conflict(format!(
                    "record {} ({key}), field \"name\": there is no instrument {key}: import \
                     the instrument first, then its texts in {lang}",
                    i + 1
                )));
            };
            let t = instrument_text::check(&inst, i + 1, record)
                .map_err(|e| StoreError::Conflict(e.to_string()))?;
            let items = serde_json::to_string(&t.items).map_err(|e| corrupt("items", e))?;
            let labels = serde_json::to_string(&t.labels).map_err(|e| corrupt("labels", e))?;
            diesel::delete(
                instrument_texts::table
                    .filter(instrument_texts::instrument_id.eq(id.0))
                    .filter(instrument_texts::language.eq(lang.as_str())),
            )
            .execute(conn)?;
            diesel::insert_into(instrument_texts::table)
                .values((
                    instrument_texts::instrument_id.eq(id.0),
                    instrument_texts::language.eq(lang.as_str()),
                    instrument_texts::items.eq(items),
                    instrument_texts::labels.eq(labels),
                ))
                .execute(conn)?;
            done.push((key.to_owned(), t.items.len()));
        }
        Ok(done)
    })
}

fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Inconsistent(format!("instrument_texts.{what}: {e}"))
}

/// The translation of `inst` (stored as `id`) in `lang`, if it has one. A stored row that does
/// not decode, or no longer has the instrument's item numbers and labelled values, is an error:
/// showing it, or silently the instrument's own texts instead, would mislabel answers.
pub fn translation(
    conn: &mut DbConnection,
    id: InstrumentId,
    inst: &Instrument,
    lang: &str,
) -> Result<Option<Translation>, StoreError> {
    let row: Option<(String, String)> = instrument_texts::table
        .find((id.0, lang))
        .select((instrument_texts::items, instrument_texts::labels))
        .first(conn)
        .optional()?;
    let Some((items, labels)) = row else {
        return Ok(None);
    };
    let undecodable = |column: &str, e: serde_json::Error| StoreError::Corrupt {
        table: "instrument_texts",
        row: format!("{} {lang}", inst.key),
        column: column.to_owned(),
        detail: e.to_string(),
    };
    let items: Vec<ItemText> = serde_json::from_str(&items).map_err(|e| undecodable("items", e))?;
    let labels: Vec<ScaleLabel> =
        serde_json::from_str(&labels).map_err(|e| undecodable("labels", e))?;
    let t = Translation { items, labels };
    if !t.fits(inst) {
        return Err(StoreError::Inconsistent(format!(
            "instrument_texts: the {lang} texts of {} do not have its item numbers and labelled \
             values",
            inst.key
        )));
    }
    Ok(Some(t))
}

/// The instrument `id` as shown in `lang`: its translation there when it has one, else as
/// imported (a study's default language, or a language it has no translation in).
pub fn get_in(
    conn: &mut DbConnection,
    id: InstrumentId,
    lang: Option<&str>,
) -> Result<Instrument, StoreError> {
    let inst = instruments::get(conn, id)?;
    match lang {
        Some(lang) => Ok(match translation(conn, id, &inst, lang)? {
            Some(t) => t.apply(&inst),
            None => inst,
        }),
        None => Ok(inst),
    }
}

/// Which of `langs` the instrument `id` has no translation in, in `langs`' order.
pub fn missing(
    conn: &mut DbConnection,
    id: InstrumentId,
    langs: &[Lang],
) -> QueryResult<Vec<Lang>> {
    if langs.is_empty() {
        return Ok(Vec::new());
    }
    let have: Vec<String> = instrument_texts::table
        .filter(instrument_texts::instrument_id.eq(id.0))
        .select(instrument_texts::language)
        .load(conn)?;
    Ok(langs
        .iter()
        .filter(|l| !have.iter().any(|h| h == l.as_str()))
        .cloned()
        .collect())
}
