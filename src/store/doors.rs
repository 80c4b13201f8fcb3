//! Identity at the door per study (`study_doors`, `study_door_exclusions`; #15 point 2).

use diesel::prelude::*;

use super::db::per_backend;
use super::schema::{participants, studies, study_door_exclusions, study_doors};
use super::{DbConnection, StoreError, StudyId, now};
use crate::domain::door::DoorSettings;

/// A `study_doors` row: require_token, token_audience, token_workspace_id, prolific_only,
/// address_limit.
type DoorRow = (bool, Option<String>, Option<String>, bool, Option<i32>);

/// A study's door (the default when it has no row).
pub fn load(conn: &mut DbConnection, study: StudyId) -> Result<DoorSettings, StoreError> {
    let row: Option<DoorRow> = study_doors::table
        .find(study)
        .select((
            study_doors::require_token,
            study_doors::token_audience,
            study_doors::token_workspace_id,
            study_doors::prolific_only,
            study_doors::address_limit,
        ))
        .first(conn)
        .optional()?;
    let exclude_studies: Vec<String> = study_door_exclusions::table
        .inner_join(studies::table.on(studies::id.eq(study_door_exclusions::excluded_study_id)))
        .filter(study_door_exclusions::study_id.eq(study))
        .order(studies::slug)
        .select(studies::slug)
        .load(conn)?;
    let Some((require_token, token_audience, token_workspace_id, prolific_only, limit)) = row
    else {
        return Ok(DoorSettings {
            exclude_studies,
            ..DoorSettings::default()
        });
    };
    let address_limit = limit
        .map(|n| {
            u32::try_from(n).map_err(|_| StoreError::Corrupt {
                table: "study_doors",
                row: study.to_string(),
                column: "address_limit".into(),
                detail: format!("{n} is negative"),
            })
        })
        .transpose()?;
    Ok(DoorSettings {
        require_token,
        token_audience,
        token_workspace_id,
        prolific_only,
        address_limit,
        exclude_studies,
    })
}

/// Writes a study's door; `excluded` are the ids of the studies named in
/// `door.exclude_studies` (resolved by the caller).
pub fn save(
    conn: &mut DbConnection,
    study: StudyId,
    door: &DoorSettings,
    excluded: &[StudyId],
) -> Result<(), StoreError> {
    let limit = door
        .address_limit
        .map(|n| i32::try_from(n).map_err(|_| StoreError::Conflict("limit too large".into())))
        .transpose()?;
    let t = now();
    let values = || {
        (
            study_doors::require_token.eq(door.require_token),
            study_doors::token_audience.eq(door.token_audience.as_deref()),
            study_doors::token_workspace_id.eq(door.token_workspace_id.as_deref()),
            study_doors::prolific_only.eq(door.prolific_only),
            study_doors::address_limit.eq(limit),
            study_doors::updated_at.eq(t),
        )
    };
    let upsert = diesel::insert_into(study_doors::table)
        .values((study_doors::study_id.eq(study), values()))
        .on_conflict(study_doors::study_id)
        .do_update()
        .set(values());
    // ON CONFLICT is written per backend: the MultiConnection's backend has no upsert.
    per_backend!(conn, |c| upsert.execute(c))?;
    diesel::delete(study_door_exclusions::table.filter(study_door_exclusions::study_id.eq(study)))
        .execute(conn)?;
    for other in excluded {
        diesel::insert_into(study_door_exclusions::table)
            .values((
                study_door_exclusions::study_id.eq(study),
                study_door_exclusions::excluded_study_id.eq(*other),
            ))
            .execute(conn)?;
    }
    Ok(())
}

/// Whether Prolific id `pid` took part in one of the studies `study` excludes (any status:
/// someone who started an earlier study has seen its situations). One indexed lookup per
/// excluded study (participants' unique (study_id, prolific_pid)).
pub fn took_part_in_excluded(
    conn: &mut DbConnection,
    study: StudyId,
    pid: &str,
) -> Result<bool, StoreError> {
    let excluded = study_door_exclusions::table
        .filter(study_door_exclusions::study_id.eq(study))
        .select(study_door_exclusions::excluded_study_id);
    let n: i64 = participants::table
        .filter(participants::study_id.eq_any(excluded))
        .filter(participants::prolific_pid.eq(pid))
        .count()
        .get_result(conn)?;
    Ok(n > 0)
}
