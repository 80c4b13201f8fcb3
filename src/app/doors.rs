//! A study's door settings (#15 point 2): validated, written with their audit entry in one
//! transaction.

use super::{Error, Result};
use crate::domain::door::DoorSettings;
use crate::store::audit::{self, Actor};
use crate::store::{DbConnection, StoreError, StudyId, doors, studies};

/// Saves `door` for study `id` (`slug`): every problem at once as [`Error::Invalid`], an
/// excluded study that does not exist included; the audit entry `study.door` holds the new
/// settings.
pub fn update(
    conn: &mut DbConnection,
    id: StudyId,
    slug: &str,
    door: &DoorSettings,
    actor: &Actor,
) -> Result<()> {
    let mut problems = door.validate(slug);
    conn.write_transaction(|conn| {
        let mut excluded = Vec::with_capacity(door.exclude_studies.len());
        for other in &door.exclude_studies {
            match studies::load(conn, other)? {
                Some(s) => excluded.push(s.id),
                None => problems.push(format!("There is no study {other:?} to exclude.")),
            }
        }
        if !problems.is_empty() {
            return Err(Error::Invalid(problems.join(" ")));
        }
        doors::save(conn, id, door, &excluded)?;
        let detail = serde_json::to_value(door)
            .map_err(|e| StoreError::Inconsistent(format!("door settings: {e}")))?;
        audit::record(conn, actor, "study.door", Some(slug), Some(&detail))?;
        Ok(())
    })
}

/// Gives the new study `id` (a duplicate or an imported definition) the door `door`, inside
/// the caller's transaction. Excluded studies this installation does not have are left out:
/// their slugs are returned, for the caller's audit entry.
pub(crate) fn copy_into(
    conn: &mut DbConnection,
    id: StudyId,
    door: &DoorSettings,
) -> Result<Vec<String>> {
    if door.is_default() {
        return Ok(Vec::new());
    }
    let mut kept = door.clone();
    let mut ids = Vec::new();
    let mut missing = Vec::new();
    kept.exclude_studies.clear();
    for other in &door.exclude_studies {
        match studies::load(conn, other)? {
            Some(s) if s.id != id => {
                ids.push(s.id);
                kept.exclude_studies.push(other.clone());
            }
            _ => missing.push(other.clone()),
        }
    }
    doors::save(conn, id, &kept, &ids)?;
    Ok(missing)
}
