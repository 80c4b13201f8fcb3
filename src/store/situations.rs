//! Situation sets, factors and situations.

use std::collections::HashMap;

use diesel::prelude::*;

use super::schema::{emotions, factors, situation_sets, situations};
use super::{Counts, DbConnection, SituationId, SituationSetId, StoreError, now};
use crate::domain::situation::{Situation, Valence};

/// What an import of a situation file did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ImportSummary {
    pub set: String,
    pub set_created: bool,
    pub emotions: usize,
    pub factors: Counts,
    pub situations: Counts,
    /// Situations of the set that the file did not mention; they are kept (participants and
    /// trials may refer to them).
    pub kept_not_in_file: usize,
}

/// A set as listed for people.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SetSummary {
    pub id: SituationSetId,
    pub name: String,
    pub source: String,
    pub emotions: i64,
    pub factors: i64,
    pub situations: i64,
}

/// A stored situation with its set-local identity.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoredSituation {
    pub id: SituationId,
    pub position: i32,
    pub situation: Situation,
}

/// Checks a set name: it appears in URLs and command lines.
pub fn valid_set_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid set name {name:?}: use 1-64 letters, digits, '-', '_' or '.'"
        ))
    }
}

fn emotion_ids(conn: &mut DbConnection) -> QueryResult<HashMap<String, i64>> {
    Ok(emotions::table
        .select((emotions::name, emotions::id))
        .load::<(String, i64)>(conn)?
        .into_iter()
        .collect())
}

pub fn find_set(conn: &mut DbConnection, name: &str) -> QueryResult<Option<SituationSetId>> {
    situation_sets::table
        .filter(situation_sets::name.eq(name))
        .select(situation_sets::id)
        .first::<i64>(conn)
        .optional()
        .map(|o| o.map(SituationSetId))
}

/// Creates or updates the set `set_name` from `file`, in one transaction: an error leaves the
/// database exactly as it was. Situations are matched by key, factors by (emotion, index).
pub fn import(
    conn: &mut DbConnection,
    set_name: &str,
    source: &str,
    file: &[Situation],
) -> Result<ImportSummary, StoreError> {
    valid_set_name(set_name).map_err(StoreError::Conflict)?;
    conn.write_transaction(|conn| import_in_tx(conn, set_name, source, file))
}

fn import_in_tx(
    conn: &mut DbConnection,
    set_name: &str,
    source: &str,
    file: &[Situation],
) -> Result<ImportSummary, StoreError> {
    let t = now();
    let (set_id, set_created) = upsert_set(conn, set_name, source, t)?;
    let factors = import_factors(conn, set_id, file)?;
    let (situations, kept_not_in_file) =
        import_situations(conn, set_id, file, &factors.factor_of, t)?;
    Ok(ImportSummary {
        set: set_name.to_owned(),
        set_created,
        emotions: factors.emotions,
        factors: factors.counts,
        situations,
        kept_not_in_file,
    })
}

/// The set's id, and whether it was created now.
fn upsert_set(
    conn: &mut DbConnection,
    set_name: &str,
    source: &str,
    t: chrono::NaiveDateTime,
) -> QueryResult<(i64, bool)> {
    match find_set(conn, set_name)? {
        Some(id) => {
            diesel::update(situation_sets::table.find(id.0))
                .set((
                    situation_sets::updated_at.eq(t),
                    situation_sets::source.eq(source),
                ))
                .execute(conn)?;
            Ok((id.0, false))
        }
        None => {
            let id = diesel::insert_into(situation_sets::table)
                .values((
                    situation_sets::name.eq(set_name),
                    situation_sets::source.eq(source),
                    situation_sets::created_at.eq(t),
                    situation_sets::updated_at.eq(t),
                ))
                .returning(situation_sets::id)
                .get_result::<i64>(conn)?;
            Ok((id, true))
        }
    }
}

/// What importing the factors of a file did.
struct ImportedFactors {
    counts: Counts,
    /// Distinct emotions the file names.
    emotions: usize,
    /// The factor id of each situation of the file, in file order.
    factor_of: Vec<i64>,
}

fn import_factors(
    conn: &mut DbConnection,
    set_id: i64,
    file: &[Situation],
) -> Result<ImportedFactors, StoreError> {
    let emotion_ids = emotion_ids(conn)?;
    // Factors: (emotion, index) -> (id, name) for what is stored now.
    let mut stored_factors: HashMap<(i64, i32), (i64, String)> = factors::table
        .filter(factors::set_id.eq(set_id))
        .select((
            factors::emotion_id,
            factors::factor_index,
            factors::id,
            factors::name,
        ))
        .load::<(i64, i32, i64, String)>(conn)?
        .into_iter()
        .map(|(e, i, id, n)| ((e, i), (id, n)))
        .collect();
    let mut counts = Counts::default();
    let mut factor_seen: HashMap<(i64, i32), i64> = HashMap::new();
    let mut emotions_seen = std::collections::BTreeSet::new();
    let mut factor_of = Vec::with_capacity(file.len());
    for s in file {
        let emotion_id = *emotion_ids.get(&s.emotion).ok_or_else(|| {
            StoreError::Conflict(format!(
                "situation {}: unknown emotion {:?}",
                s.key, s.emotion
            ))
        })?;
        emotions_seen.insert(emotion_id);
        let index = to_i32(s.factor_index, &s.key)?;
        let k = (emotion_id, index);
        if let Some(id) = factor_seen.get(&k) {
            factor_of.push(*id);
            continue;
        }
        let id = match stored_factors.get(&k) {
            Some((id, name)) if *name == s.factor_name => {
                counts.unchanged += 1;
                *id
            }
            Some((id, _)) => {
                diesel::update(factors::table.find(*id))
                    .set(factors::name.eq(&s.factor_name))
                    .execute(conn)?;
                counts.updated += 1;
                *id
            }
            None => {
                let id = diesel::insert_into(factors::table)
                    .values((
                        factors::set_id.eq(set_id),
                        factors::emotion_id.eq(emotion_id),
                        factors::factor_index.eq(index),
                        factors::name.eq(&s.factor_name),
                    ))
                    .returning(factors::id)
                    .get_result::<i64>(conn)?;
                counts.created += 1;
                stored_factors.insert(k, (id, s.factor_name.clone()));
                id
            }
        };
        factor_seen.insert(k, id);
        factor_of.push(id);
    }
    Ok(ImportedFactors {
        counts,
        emotions: emotions_seen.len(),
        factor_of,
    })
}

/// A stored situation by key: id, factor id, scenario index, position, text, the original's
/// key (for a valence variant), valence.
type StoredRow = (i64, i64, i32, i32, String, Option<String>, String);

/// Creates or updates the situations of the file; returns their counts and how many stored
/// situations the file did not mention.
fn import_situations(
    conn: &mut DbConnection,
    set_id: i64,
    file: &[Situation],
    factor_of: &[i64],
    t: chrono::NaiveDateTime,
) -> Result<(Counts, usize), StoreError> {
    let stored: HashMap<String, StoredRow> = situations::table
        .filter(situations::set_id.eq(set_id))
        .select((
            situations::key,
            (
                situations::id,
                situations::factor_id,
                situations::scenario_index,
                situations::position,
                situations::text,
                situations::variant_of,
                situations::valence,
            ),
        ))
        .load::<(String, StoredRow)>(conn)?
        .into_iter()
        .collect();
    let mut counts = Counts::default();
    let mut seen_keys = std::collections::HashSet::new();
    for (position, (s, &factor_id)) in file.iter().zip(factor_of).enumerate() {
        if !seen_keys.insert(s.key.as_str()) {
            return Err(StoreError::Conflict(format!(
                "duplicate situation key {}",
                s.key
            )));
        }
        let position = to_i32(position, &s.key)?;
        let scenario_index = to_i32(s.scenario_index, &s.key)?;
        match stored.get(&s.key) {
            Some((_, f, si, p, text, variant_of, valence))
                if *f == factor_id
                    && *si == scenario_index
                    && *p == position
                    && *text == s.text
                    && *variant_of == s.variant_of
                    && valence == s.valence.as_str() =>
            {
                counts.unchanged += 1;
            }
            Some((id, ..)) => {
                diesel::update(situations::table.find(*id))
                    .set((
                        situations::factor_id.eq(factor_id),
                        situations::scenario_index.eq(scenario_index),
                        situations::position.eq(position),
                        situations::text.eq(&s.text),
                        situations::variant_of.eq(&s.variant_of),
                        situations::valence.eq(s.valence.as_str()),
                        situations::updated_at.eq(t),
                    ))
                    .execute(conn)?;
                counts.updated += 1;
            }
            None => {
                diesel::insert_into(situations::table)
                    .values((
                        situations::set_id.eq(set_id),
                        situations::factor_id.eq(factor_id),
                        situations::key.eq(&s.key),
                        situations::scenario_index.eq(scenario_index),
                        situations::position.eq(position),
                        situations::text.eq(&s.text),
                        situations::variant_of.eq(&s.variant_of),
                        situations::valence.eq(s.valence.as_str()),
                        situations::created_at.eq(t),
                        situations::updated_at.eq(t),
                    ))
                    .execute(conn)?;
                counts.created += 1;
            }
        }
    }
    let kept_not_in_file = stored
        .keys()
        .filter(|k| !seen_keys.contains(k.as_str()))
        .count();
    Ok((counts, kept_not_in_file))
}

fn to_i32<T: TryInto<i32>>(v: T, key: &str) -> Result<i32, StoreError> {
    v.try_into()
        .map_err(|_| StoreError::Conflict(format!("situation {key}: index out of range")))
}

/// All sets with their sizes, by name.
pub fn sets(conn: &mut DbConnection) -> QueryResult<Vec<SetSummary>> {
    let rows = situation_sets::table
        .order(situation_sets::name)
        .select((
            situation_sets::id,
            situation_sets::name,
            situation_sets::source,
        ))
        .load::<(i64, String, String)>(conn)?;
    let mut out = Vec::with_capacity(rows.len());
    for (id, name, source) in rows {
        let situations = situations::table
            .filter(situations::set_id.eq(id))
            .count()
            .get_result::<i64>(conn)?;
        let factors = factors::table
            .filter(factors::set_id.eq(id))
            .count()
            .get_result::<i64>(conn)?;
        let emotions = factors::table
            .filter(factors::set_id.eq(id))
            .select(factors::emotion_id)
            .distinct()
            .load::<i64>(conn)?
            .len() as i64;
        out.push(SetSummary {
            id: SituationSetId(id),
            name,
            source,
            emotions,
            factors,
            situations,
        });
    }
    Ok(out)
}

/// The situations of a set in file order.
pub fn list(conn: &mut DbConnection, set: SituationSetId) -> QueryResult<Vec<StoredSituation>> {
    let rows = situations::table
        .inner_join(factors::table.inner_join(emotions::table))
        .filter(situations::set_id.eq(set.0))
        .order(situations::position)
        .select((
            situations::id,
            situations::position,
            situations::key,
            emotions::name,
            factors::factor_index,
            factors::name,
            situations::scenario_index,
            situations::text,
            situations::variant_of,
            situations::valence,
        ))
        .load::<ListedRow>(conn)?;
    rows.into_iter().map(listed).collect()
}

/// A row of [`list`]: id, position, key, emotion, factor index and name, scenario index, text,
/// the original's key, valence.
type ListedRow = (
    i64,
    i32,
    String,
    String,
    i32,
    String,
    i32,
    String,
    Option<String>,
    String,
);

fn listed(
    (id, position, key, emotion, fi, fname, si, text, variant_of, valence): ListedRow,
) -> QueryResult<StoredSituation> {
    // A valence the code does not know is a corrupt row, not a negative situation.
    let valence = Valence::parse(&valence).ok_or_else(|| {
        diesel::result::Error::DeserializationError(Box::new(super::columns::CorruptRow {
            table: "situations",
            row: id.to_string(),
            column: "valence".to_owned(),
            detail: format!("unknown valence {valence:?}"),
        }))
    })?;
    Ok(StoredSituation {
        id: SituationId(id),
        position,
        situation: Situation {
            key,
            emotion,
            factor_index: u32::try_from(fi).unwrap_or_default(),
            factor_name: fname,
            scenario_index: u32::try_from(si).unwrap_or_default(),
            text,
            variant_of,
            valence,
        },
    })
}
