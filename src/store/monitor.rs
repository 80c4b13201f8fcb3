//! Aggregates for the live monitor: grouped counts only, so the page stays fast however many
//! participants a study has.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::columns::corrupt_row;
use super::schema::{emotions, factors, participants, situations};
use super::studies::Study;
use super::{DbConnection, now};
use crate::domain::survey::{Page, ParticipantStatus};

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct StatusCounts {
    pub active: i64,
    pub completed: i64,
    pub withdrawn: i64,
    pub no_consent: i64,
    pub failed_check: i64,
    pub screened_out: i64,
    pub imported: i64,
    /// Pilot participants (any status), counted in none of the above.
    pub pilot: i64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct SituationProgress {
    pub key: String,
    pub emotion: String,
    pub factor: String,
    pub completed: i64,
    pub active: i64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct FactorProgress {
    pub emotion: String,
    pub factor: String,
    pub situations: i64,
    pub completed: i64,
    pub target: i64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Completion {
    /// The participant id of the exports (what the deletion form takes).
    pub export_id: String,
    pub prolific_pid: Option<String>,
    pub situation: Option<String>,
    pub completed_at: NaiveDateTime,
    pub seconds: i64,
    pub flags: Vec<&'static str>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Monitor {
    pub counts: StatusCounts,
    pub situations: Vec<SituationProgress>,
    pub factors: Vec<FactorProgress>,
    pub median_seconds: Option<i64>,
    pub flag_straightline: i64,
    pub flag_fast: i64,
    pub flag_failed_check: i64,
    pub latest: Vec<Completion>,
}

/// The median completion time is taken over this many latest completions.
pub const MEDIAN_OF_LATEST: i64 = 2_000;

pub fn load(conn: &mut DbConnection, study: &Study) -> QueryResult<Monitor> {
    let counts = status_counts(conn, study)?;
    let (situations, factors) = progress(conn, study)?;
    let median_seconds = median_seconds(conn, study)?;
    let flag_straightline = flag_count(conn, study, Flag::Straightline)?;
    let flag_fast = flag_count(conn, study, Flag::Fast)?;
    let flag_failed_check = flag_count(conn, study, Flag::FailedCheck)?;
    let latest = latest_completions(conn, study)?;
    Ok(Monitor {
        counts,
        situations,
        factors,
        median_seconds,
        flag_straightline,
        flag_fast,
        flag_failed_check,
        latest,
    })
}

fn status_counts(conn: &mut DbConnection, study: &Study) -> QueryResult<StatusCounts> {
    let mut counts = StatusCounts::default();
    // "Active" counts from consent on (issue #14, point 6): a participant still on the consent
    // page (made by an older version, when opening the link made one) has agreed to nothing.
    let by_status: Vec<(ParticipantStatus, i64)> = participants::table
        .filter(participants::study_id.eq(study.id))
        .filter(participants::page.ne(Page::Consent))
        // Pilots count nowhere but in their own line (issue #13, point 4).
        .filter(participants::pilot.eq(false))
        .group_by(participants::status)
        .select((participants::status, diesel::dsl::count_star()))
        .load(conn)
        .map_err(corrupt_row(
            "participants",
            format!("of study {}", study.id),
        ))?;
    for (status, n) in by_status {
        let slot = match status {
            ParticipantStatus::Active => &mut counts.active,
            ParticipantStatus::Completed => &mut counts.completed,
            ParticipantStatus::Withdrawn => &mut counts.withdrawn,
            ParticipantStatus::NoConsent => &mut counts.no_consent,
            ParticipantStatus::FailedCheck => &mut counts.failed_check,
            ParticipantStatus::ScreenedOut => &mut counts.screened_out,
        };
        *slot = n;
    }
    counts.imported = participants::table
        .filter(participants::study_id.eq(study.id))
        .filter(participants::imported.eq(true))
        .count()
        .get_result(conn)?;
    counts.pilot = participants::table
        .filter(participants::study_id.eq(study.id))
        .filter(participants::pilot.eq(true))
        .count()
        .get_result(conn)?;
    Ok(counts)
}

/// Key, emotion, factor, emotion position and factor index of each situation of the set.
type SituationMeta = BTreeMap<i64, (String, String, String, i32, i32)>;

fn situation_meta(conn: &mut DbConnection, study: &Study) -> QueryResult<SituationMeta> {
    let Some(set) = study.situation_set_id else {
        return Ok(BTreeMap::new());
    };
    Ok(situations::table
        .inner_join(factors::table.inner_join(emotions::table))
        .filter(situations::set_id.eq(set))
        .select((
            situations::id,
            (
                situations::key,
                emotions::name,
                factors::name,
                emotions::position,
                factors::factor_index,
            ),
        ))
        .load::<(i64, (String, String, String, i32, i32))>(conn)?
        .into_iter()
        .collect())
}

/// Completions per situation, and summed per factor (in emotion, factor order).
fn progress(
    conn: &mut DbConnection,
    study: &Study,
) -> QueryResult<(Vec<SituationProgress>, Vec<FactorProgress>)> {
    let cells = super::participants::cells(conn, study, now())?;
    let meta = situation_meta(conn, study)?;
    let mut situations_out = Vec::with_capacity(cells.len());
    let mut by_factor: BTreeMap<(i32, i32), FactorProgress> = BTreeMap::new();
    for c in &cells {
        let Some((key, emotion, factor, ep, fi)) = meta.get(&c.situation_id) else {
            continue;
        };
        situations_out.push(SituationProgress {
            key: key.clone(),
            emotion: emotion.clone(),
            factor: factor.clone(),
            completed: i64::from(c.completed),
            active: i64::from(c.active),
        });
        let f = by_factor
            .entry((*ep, *fi))
            .or_insert_with(|| FactorProgress {
                emotion: emotion.clone(),
                factor: factor.clone(),
                situations: 0,
                completed: 0,
                target: 0,
            });
        f.situations += 1;
        f.completed += i64::from(c.completed);
        f.target += i64::from(study.target_per_situation);
    }
    Ok((situations_out, by_factor.into_values().collect()))
}

fn median_seconds(conn: &mut DbConnection, study: &Study) -> QueryResult<Option<i64>> {
    // Live participants only (imported cohorts have no meaningful durations), and the latest
    // 2,000 of them: a recent median that stays cheap at any study size (index on
    // study_id, completed_at).
    let mut durations: Vec<i64> = participants::table
        .filter(participants::study_id.eq(study.id))
        .filter(participants::completed_at.is_not_null())
        .filter(participants::status.eq(ParticipantStatus::Completed))
        .filter(participants::imported.eq(false))
        .filter(participants::pilot.eq(false))
        .order(participants::completed_at.desc())
        .limit(MEDIAN_OF_LATEST)
        .select((participants::created_at, participants::completed_at))
        .load::<(NaiveDateTime, Option<NaiveDateTime>)>(conn)?
        .into_iter()
        .filter_map(|(a, b)| b.map(|b| (b - a).num_seconds()))
        .collect();
    durations.sort_unstable();
    Ok(match durations.len() {
        0 => None,
        n if n % 2 == 1 => Some(durations[n / 2]),
        n => Some((durations[n / 2 - 1] + durations[n / 2]) / 2),
    })
}

/// The quality flags a participant can carry.
#[derive(Debug, Clone, Copy)]
enum Flag {
    Straightline,
    Fast,
    FailedCheck,
}

fn flag_count(conn: &mut DbConnection, study: &Study, which: Flag) -> QueryResult<i64> {
    let q = participants::table
        .filter(participants::study_id.eq(study.id))
        .filter(participants::pilot.eq(false))
        .into_boxed();
    let q = match which {
        Flag::Straightline => q.filter(participants::flag_straightline.eq(true)),
        Flag::Fast => q.filter(participants::flag_fast.eq(true)),
        Flag::FailedCheck => q.filter(participants::flag_failed_check.eq(true)),
    };
    q.count().get_result(conn)
}

/// The ten latest live completions, newest first.
fn latest_completions(conn: &mut DbConnection, study: &Study) -> QueryResult<Vec<Completion>> {
    Ok(participants::table
        .left_join(situations::table)
        .filter(participants::study_id.eq(study.id))
        .filter(participants::completed_at.is_not_null())
        .filter(participants::status.eq(ParticipantStatus::Completed))
        .filter(participants::imported.eq(false))
        .filter(participants::pilot.eq(false))
        .order(participants::completed_at.desc())
        .limit(10)
        .select((
            participants::export_id,
            participants::prolific_pid,
            situations::key.nullable(),
            participants::created_at,
            participants::completed_at,
            participants::flag_straightline,
            participants::flag_fast,
            participants::flag_failed_check,
        ))
        .load::<(
            String,
            Option<String>,
            Option<String>,
            NaiveDateTime,
            Option<NaiveDateTime>,
            bool,
            bool,
            bool,
        )>(conn)?
        .into_iter()
        .filter_map(
            |(export_id, prolific_pid, situation, created, done, s, f, c)| {
                let done = done?;
                let mut flags = Vec::new();
                if s {
                    flags.push("straight-lining");
                }
                if f {
                    flags.push("fast");
                }
                if c {
                    flags.push("failed check");
                }
                Some(Completion {
                    export_id,
                    prolific_pid,
                    situation,
                    completed_at: done,
                    seconds: (done - created).num_seconds(),
                    flags,
                })
            },
        )
        .collect())
}
