//! Instruments: rows of `instruments`, `instrument_items`, `instrument_categories`, assembled
//! into the domain `Instrument` and back.

use diesel::prelude::*;

use super::schema::{
    instrument_categories, instrument_items, instrument_texts, instruments, studies,
};
use super::{DbConnection, InstrumentId, StoreError, now};
use crate::domain::instrument::{
    Category, Instrument, Item, ItemOption, ScaleLabel, ScoreMode, Scoring,
};

/// What an upsert did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Created,
    Updated,
    Unchanged,
}

/// A stored instrument as listed for people.
#[derive(Debug, Clone, serde::Serialize)]
pub struct InstrumentSummary {
    pub id: InstrumentId,
    pub key: String,
    pub items: usize,
    pub min: i32,
    pub max: i32,
    pub categories: Vec<String>,
    pub builtin: bool,
    /// A free-text task (#18), not a rated questionnaire.
    pub free_text: bool,
}

type InstrumentRow = (
    i64,
    String,
    i32,
    i32,
    String,
    String,
    i32,
    i32,
    bool,
    String,
    String,
    bool,
);

fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Inconsistent(format!("{what}: {e}"))
}

fn assemble(
    conn: &mut DbConnection,
    row: InstrumentRow,
) -> Result<(InstrumentId, Instrument, bool), StoreError> {
    let (
        id,
        key,
        min,
        max,
        labels,
        scoring,
        multiplier,
        reverse_constant,
        paper_raw_sum,
        prompt,
        system_prompt,
        builtin,
    ) = row;
    let labels: Vec<ScaleLabel> =
        serde_json::from_str(&labels).map_err(|e| corrupt("labels", e))?;
    let mode: ScoreMode = scoring.parse().map_err(|e: String| corrupt("scoring", e))?;
    let items = instrument_items::table
        .filter(instrument_items::instrument_id.eq(id))
        .order(instrument_items::number)
        .select((
            instrument_items::number,
            instrument_items::text,
            instrument_items::reverse,
            instrument_items::options,
        ))
        .load::<(i32, String, bool, Option<String>)>(conn)?
        .into_iter()
        .map(|(number, text, reverse, options)| {
            let options: Vec<ItemOption> = match options {
                Some(o) => serde_json::from_str(&o).map_err(|e| corrupt("item options", e))?,
                None => Vec::new(),
            };
            Ok(Item {
                number: u32::try_from(number).map_err(|e| corrupt("item number", e))?,
                text,
                reverse,
                options,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let categories = instrument_categories::table
        .filter(instrument_categories::instrument_id.eq(id))
        .order(instrument_categories::position)
        .select((instrument_categories::name, instrument_categories::items))
        .load::<(String, String)>(conn)?
        .into_iter()
        .map(|(name, items)| {
            Ok(Category {
                name,
                items: serde_json::from_str(&items).map_err(|e| corrupt("category items", e))?,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    Ok((
        InstrumentId(id),
        Instrument {
            key,
            min,
            max,
            labels,
            items,
            categories,
            scoring: Scoring {
                mode,
                multiplier,
                reverse_constant,
            },
            paper_raw_sum,
            prompt,
            system_prompt,
        },
        builtin,
    ))
}

macro_rules! instrument_columns {
    () => {
        (
            instruments::id,
            instruments::key,
            instruments::min_value,
            instruments::max_value,
            instruments::labels,
            instruments::scoring,
            instruments::multiplier,
            instruments::reverse_constant,
            instruments::paper_raw_sum,
            instruments::prompt,
            instruments::system_prompt,
            instruments::builtin,
        )
    };
}

/// Loads one instrument by key.
pub fn load(
    conn: &mut DbConnection,
    key: &str,
) -> Result<Option<(InstrumentId, Instrument)>, StoreError> {
    let row = instruments::table
        .filter(instruments::key.eq(key))
        .select(instrument_columns!())
        .first::<InstrumentRow>(conn)
        .optional()?;
    match row {
        Some(row) => assemble(conn, row).map(|(id, i, _)| Some((id, i))),
        None => Ok(None),
    }
}

/// Loads one instrument by id.
pub fn get(conn: &mut DbConnection, id: InstrumentId) -> Result<Instrument, StoreError> {
    let row = instruments::table
        .find(id.0)
        .select(instrument_columns!())
        .first::<InstrumentRow>(conn)?;
    assemble(conn, row).map(|(_, i, _)| i)
}

/// Every instrument, by key.
pub fn list(conn: &mut DbConnection) -> Result<Vec<InstrumentSummary>, StoreError> {
    let rows = instruments::table
        .order(instruments::key)
        .select(instrument_columns!())
        .load::<InstrumentRow>(conn)?;
    rows.into_iter()
        .map(|row| {
            let (id, i, builtin) = assemble(conn, row)?;
            Ok(InstrumentSummary {
                id,
                items: i.items.len(),
                min: i.min,
                max: i.max,
                categories: i.categories.iter().map(|c| c.name.clone()).collect(),
                free_text: i.is_free_text(),
                key: i.key,
                builtin,
            })
        })
        .collect()
}

/// Stores `inst` under its key: inserts it, or replaces the stored definition when it differs.
/// Refuses to change the items of an instrument that studies already use (stored answers refer to
/// items by number; changing what a number means would silently corrupt them). Call inside a
/// transaction when importing several.
pub fn upsert(
    conn: &mut DbConnection,
    inst: &Instrument,
    builtin: bool,
) -> Result<(InstrumentId, Outcome), StoreError> {
    inst.validate()
        .map_err(|e| StoreError::Conflict(format!("instrument {}: {e}", inst.key)))?;
    let t = now();
    let existing = load(conn, &inst.key)?;
    let labels = serde_json::to_string(&inst.labels).map_err(|e| corrupt("labels", e))?;
    let values = (
        instruments::min_value.eq(inst.min),
        instruments::max_value.eq(inst.max),
        instruments::labels.eq(labels),
        instruments::scoring.eq(inst.scoring.mode.as_str()),
        instruments::multiplier.eq(inst.scoring.multiplier),
        instruments::reverse_constant.eq(inst.scoring.reverse_constant),
        instruments::paper_raw_sum.eq(inst.paper_raw_sum),
        instruments::prompt.eq(&inst.prompt),
        instruments::system_prompt.eq(&inst.system_prompt),
        instruments::updated_at.eq(t),
    );
    let (id, outcome) = match existing {
        Some((id, stored)) if stored == *inst => return Ok((id, Outcome::Unchanged)),
        Some((id, stored)) => {
            let items_differ = stored.items.len() != inst.items.len()
                || stored
                    .items
                    .iter()
                    .zip(&inst.items)
                    .any(|(a, b)| a.text != b.text || a.reverse != b.reverse);
            if items_differ {
                let used_by = studies::table
                    .filter(studies::instrument_id.eq(id.0))
                    .select(studies::slug)
                    .first::<String>(conn)
                    .optional()?;
                if let Some(slug) = used_by {
                    return Err(StoreError::Conflict(format!(
                        "instrument {} is used by study {slug}; its items cannot change (import it under another name)",
                        inst.key
                    )));
                }
            }
            // A translation (#20) is of the item texts and labels it was checked against;
            // once they change it would show participants other questions under the same
            // numbers, so it goes and must be imported again.
            if items_differ || stored.labels != inst.labels {
                diesel::delete(
                    instrument_texts::table.filter(instrument_texts::instrument_id.eq(id.0)),
                )
                .execute(conn)?;
            }
            diesel::update(instruments::table.find(id.0))
                .set(values)
                .execute(conn)?;
            diesel::delete(
                instrument_items::table.filter(instrument_items::instrument_id.eq(id.0)),
            )
            .execute(conn)?;
            diesel::delete(
                instrument_categories::table.filter(instrument_categories::instrument_id.eq(id.0)),
            )
            .execute(conn)?;
            (id, Outcome::Updated)
        }
        None => {
            let id = diesel::insert_into(instruments::table)
                .values((
                    instruments::key.eq(&inst.key),
                    values,
                    instruments::builtin.eq(builtin),
                    instruments::created_at.eq(t),
                ))
                .returning(instruments::id)
                .get_result::<i64>(conn)?;
            (InstrumentId(id), Outcome::Created)
        }
    };
    for item in &inst.items {
        let options = if item.options.is_empty() {
            None
        } else {
            Some(serde_json::to_string(&item.options).map_err(|e| corrupt("options", e))?)
        };
        diesel::insert_into(instrument_items::table)
            .values((
                instrument_items::instrument_id.eq(id.0),
                instrument_items::number
                    .eq(i32::try_from(item.number).map_err(|e| corrupt("item number", e))?),
                instrument_items::text.eq(&item.text),
                instrument_items::reverse.eq(item.reverse),
                instrument_items::options.eq(options),
            ))
            .execute(conn)?;
    }
    for (position, c) in inst.categories.iter().enumerate() {
        diesel::insert_into(instrument_categories::table)
            .values((
                instrument_categories::instrument_id.eq(id.0),
                instrument_categories::position
                    .eq(i32::try_from(position).map_err(|e| corrupt("category", e))?),
                instrument_categories::name.eq(&c.name),
                instrument_categories::items
                    .eq(serde_json::to_string(&c.items).map_err(|e| corrupt("category", e))?),
            ))
            .execute(conn)?;
    }
    Ok((id, outcome))
}

/// Imports several instruments atomically: all of them or none.
pub fn import(
    conn: &mut DbConnection,
    list: &[Instrument],
) -> Result<Vec<(String, Outcome)>, StoreError> {
    conn.write_transaction(|conn| {
        list.iter()
            .map(|i| upsert(conn, i, false).map(|(_, o)| (i.key.clone(), o)))
            .collect()
    })
}

/// Makes sure the built-in instruments exist. Never overwrites: an imported PANAS (with the
/// upstream prompt wording) stays as imported.
pub fn ensure_builtin(conn: &mut DbConnection) -> Result<InstrumentId, StoreError> {
    let panas = Instrument::panas();
    match load(conn, &panas.key)? {
        Some((id, _)) => Ok(id),
        None => upsert(conn, &panas, true).map(|(id, _)| id),
    }
}
