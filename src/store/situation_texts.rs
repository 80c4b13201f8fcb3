//! Situations' texts in other languages (issue #20): a set's situation has its own text (the
//! study's default language) and one row here per other language, under the same key.

use diesel::prelude::*;

use super::schema::{situation_texts, situations};
use super::{DbConnection, SituationSetId, StoreError};
use crate::domain::language::Lang;
use crate::domain::situation::Situation;

/// What an import of one language's texts did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextsImported {
    /// Texts written (new or replaced).
    pub texts: usize,
    /// Situations of the set the file did not name (still without a text in the language,
    /// unless an earlier import gave them one).
    pub not_in_file: usize,
}

/// Stores `file`'s texts as the `lang` texts of the situations of `set` with the same keys,
/// replacing earlier ones, in one transaction. A key the set does not have is refused (a
/// translation is of the set's situations, not new ones).
pub fn import(
    conn: &mut DbConnection,
    set: SituationSetId,
    set_name: &str,
    lang: &Lang,
    file: &[Situation],
) -> Result<TextsImported, StoreError> {
    conn.write_transaction(|conn| {
        let ids: Vec<(i64, String)> = situations::table
            .filter(situations::set_id.eq(set.0))
            .select((situations::id, situations::key))
            .load(conn)?;
        let mut rows = Vec::with_capacity(file.len());
        for s in file {
            let Some((id, _)) = ids.iter().find(|(_, k)| *k == s.key) else {
                return Err(StoreError::Conflict(format!(
                    "the situation {} is not in the set {set_name}: import the set's own \
                     situations first, then their texts in {lang} under the same keys",
                    s.key
                )));
            };
            rows.push((*id, s.text.trim().to_owned()));
        }
        let situation_ids: Vec<i64> = rows.iter().map(|(id, _)| *id).collect();
        diesel::delete(
            situation_texts::table
                .filter(situation_texts::language.eq(lang.as_str()))
                .filter(situation_texts::situation_id.eq_any(&situation_ids)),
        )
        .execute(conn)?;
        for (id, text) in &rows {
            diesel::insert_into(situation_texts::table)
                .values((
                    situation_texts::situation_id.eq(id),
                    situation_texts::language.eq(lang.as_str()),
                    situation_texts::text.eq(text),
                ))
                .execute(conn)?;
        }
        Ok(TextsImported {
            texts: rows.len(),
            not_in_file: ids.len().saturating_sub(rows.len()),
        })
    })
}

/// The situations of `set` without a text in each of `langs`, as (language, key), in the
/// set's order.
pub fn missing(
    conn: &mut DbConnection,
    set: SituationSetId,
    langs: &[Lang],
) -> QueryResult<Vec<(Lang, String)>> {
    if langs.is_empty() {
        return Ok(Vec::new());
    }
    let keys: Vec<(i64, String)> = situations::table
        .filter(situations::set_id.eq(set.0))
        .order(situations::position)
        .select((situations::id, situations::key))
        .load(conn)?;
    let tags: Vec<&str> = langs.iter().map(Lang::as_str).collect();
    let have: Vec<(i64, String)> = situation_texts::table
        .inner_join(situations::table)
        .filter(situations::set_id.eq(set.0))
        .filter(situation_texts::language.eq_any(&tags))
        .select((situation_texts::situation_id, situation_texts::language))
        .load(conn)?;
    let mut out = Vec::new();
    for lang in langs {
        for (id, key) in &keys {
            if !have.iter().any(|(i, l)| i == id && l == lang.as_str()) {
                out.push((lang.clone(), key.clone()));
            }
        }
    }
    Ok(out)
}

/// A situation's text in `lang`, if it has one.
pub fn text_in(conn: &mut DbConnection, situation: i64, lang: &str) -> QueryResult<Option<String>> {
    situation_texts::table
        .find((situation, lang))
        .select(situation_texts::text)
        .first(conn)
        .optional()
}

/// The texts in `lang` of the situations of `set`, as (key, text); a situation without one is
/// not listed. A model run in that language reads its prompts' situations from here (#20).
pub fn texts_of_set(
    conn: &mut DbConnection,
    set: SituationSetId,
    lang: &Lang,
) -> QueryResult<Vec<(String, String)>> {
    situation_texts::table
        .inner_join(situations::table)
        .filter(situations::set_id.eq(set.0))
        .filter(situation_texts::language.eq(lang.as_str()))
        .order(situations::position)
        .select((situations::key, situation_texts::text))
        .load(conn)
}
