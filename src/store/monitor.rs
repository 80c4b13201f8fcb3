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

/// How far participants got (issue #15, point 5): per survey page from consent on, how many
/// reached it and how many are on it now. Live participants only (not pilots, not imported).
#[derive(Debug, Clone, serde::Serialize)]
pub struct FunnelStep {
    pub page: Page,
    pub reached: i64,
    /// Active participants whose current page this is (some still answering, some gone
    /// without a word: their places are released when their reservation runs out).
    pub here_now: i64,
}

/// Live completions per time bucket, oldest first, without gaps (empty buckets are 0).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Timeline {
    /// The bucket width in seconds (a minute up to a week, chosen for at most
    /// [`TIMELINE_BUCKETS`] buckets).
    pub width_seconds: i64,
    pub buckets: Vec<(NaiveDateTime, i64)>,
}

/// The evidence counts on the monitor: one block, fed by [`evidence_counts`] alone, so more
/// signals (issue #15, point 3) join it there. Non-pilot participants.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct EvidenceCounts {
    pub straightline: i64,
    pub fast: i64,
    /// Failed the attention check and went on (the study does not end the survey on it).
    pub failed_check_continued: i64,
    /// Failed the attention check and the survey ended there.
    pub failed_check_ended: i64,
    /// Filled the situation page's hidden "leave this empty" field (`domain::evidence`).
    pub honeypot: i64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Monitor {
    pub counts: StatusCounts,
    pub situations: Vec<SituationProgress>,
    pub factors: Vec<FactorProgress>,
    pub median_seconds: Option<i64>,
    pub evidence: EvidenceCounts,
    pub latest: Vec<Completion>,
    pub funnel: Vec<FunnelStep>,
    pub timeline: Timeline,
    /// Participants who withdrew (their answers are deleted, and so is where they stopped).
    pub withdrawn_live: i64,
    /// A study of imported participants only, never opened: no target, no link.
    pub imported_only: bool,
}

/// At most this many bars in the completions-over-time chart.
pub const TIMELINE_BUCKETS: i64 = 60;

/// The survey pages a consenting participant goes through, in order (the funnel's rows).
pub const FUNNEL_PAGES: [Page; 7] = [
    Page::Demographics,
    Page::PanasBefore,
    Page::Situation,
    Page::PanasAfter,
    Page::Check,
    Page::Debrief,
    Page::Done,
];

/// The median completion time is taken over this many latest completions.
pub const MEDIAN_OF_LATEST: i64 = 2_000;

pub fn load(conn: &mut DbConnection, study: &Study) -> QueryResult<Monitor> {
    let (counts, funnel, withdrawn_live) = status_counts(conn, study)?;
    let (situations, factors) = progress(conn, study)?;
    let median_seconds = median_seconds(conn, study)?;
    let evidence = evidence_counts(conn, study)?;
    let live = counts.active
        + counts.completed
        + counts.withdrawn
        + counts.no_consent
        + counts.failed_check
        + counts.screened_out
        - counts.imported;
    let imported_only = counts.imported > 0 && live == 0 && study.opened_at.is_none();
    let latest = latest_completions(conn, study, imported_only)?;
    let timeline = timeline(conn, study)?;
    Ok(Monitor {
        counts,
        situations,
        factors,
        median_seconds,
        evidence,
        latest,
        funnel,
        timeline,
        withdrawn_live,
        imported_only,
    })
}

/// Counts by status, the funnel and the live withdrawals, from one grouped scan of the study's
/// participants (status, page, imported).
fn status_counts(
    conn: &mut DbConnection,
    study: &Study,
) -> QueryResult<(StatusCounts, Vec<FunnelStep>, i64)> {
    let mut counts = StatusCounts::default();
    // "Active" counts from consent on (issue #14, point 6): a participant still on the consent
    // page (made by an older version, when opening the link made one) has agreed to nothing.
    let groups: Vec<(ParticipantStatus, Page, bool, i64)> = participants::table
        .filter(participants::study_id.eq(study.id))
        .filter(participants::page.ne(Page::Consent))
        // Pilots count nowhere but in their own line (issue #13, point 4).
        .filter(participants::pilot.eq(false))
        .group_by((
            participants::status,
            participants::page,
            participants::imported,
        ))
        .select((
            participants::status,
            participants::page,
            participants::imported,
            diesel::dsl::count_star(),
        ))
        .load(conn)
        .map_err(corrupt_row(
            "participants",
            format!("of study {}", study.id),
        ))?;
    let mut furthest: Vec<(usize, i64, bool)> = Vec::new();
    let mut withdrawn_live = 0;
    for &(status, page, imported, n) in &groups {
        let slot = match status {
            ParticipantStatus::Active => &mut counts.active,
            ParticipantStatus::Completed => &mut counts.completed,
            ParticipantStatus::Withdrawn => &mut counts.withdrawn,
            ParticipantStatus::NoConsent => &mut counts.no_consent,
            ParticipantStatus::FailedCheck => &mut counts.failed_check,
            ParticipantStatus::ScreenedOut => &mut counts.screened_out,
        };
        *slot += n;
        if imported {
            counts.imported += n;
            continue;
        }
        // The furthest page each live participant reached: where an active one is now, the
        // check for one who failed it there, the end for one who completed. Declined and
        // screened-out participants never got past consent; a withdrawal keeps no page.
        let reached = match status {
            ParticipantStatus::Active => FUNNEL_PAGES.iter().position(|p| *p == page),
            ParticipantStatus::FailedCheck => FUNNEL_PAGES.iter().position(|p| *p == Page::Check),
            ParticipantStatus::Completed => Some(FUNNEL_PAGES.len() - 1),
            ParticipantStatus::Withdrawn => {
                withdrawn_live += n;
                None
            }
            ParticipantStatus::NoConsent | ParticipantStatus::ScreenedOut => None,
        };
        if let Some(i) = reached {
            furthest.push((i, n, status == ParticipantStatus::Active));
        }
    }
    let funnel = FUNNEL_PAGES
        .iter()
        .enumerate()
        .map(|(i, &page)| FunnelStep {
            page,
            reached: furthest.iter().filter(|f| f.0 >= i).map(|f| f.1).sum(),
            here_now: furthest
                .iter()
                .filter(|f| f.0 == i && f.2)
                .map(|f| f.1)
                .sum(),
        })
        .collect();
    counts.pilot = participants::table
        .filter(participants::study_id.eq(study.id))
        .filter(participants::pilot.eq(true))
        .count()
        .get_result(conn)?;
    Ok((counts, funnel, withdrawn_live))
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

/// The evidence block's counts: one grouped scan over the flags and the status.
pub fn evidence_counts(conn: &mut DbConnection, study: &Study) -> QueryResult<EvidenceCounts> {
    let groups: Vec<(bool, bool, bool, bool, ParticipantStatus, i64)> = participants::table
        .filter(participants::study_id.eq(study.id))
        .filter(participants::pilot.eq(false))
        .group_by((
            participants::flag_straightline,
            participants::flag_fast,
            participants::flag_failed_check,
            participants::flag_honeypot,
            participants::status,
        ))
        .select((
            participants::flag_straightline,
            participants::flag_fast,
            participants::flag_failed_check,
            participants::flag_honeypot,
            participants::status,
            diesel::dsl::count_star(),
        ))
        .load(conn)
        .map_err(corrupt_row(
            "participants",
            format!("of study {}", study.id),
        ))?;
    let mut e = EvidenceCounts::default();
    for (straight, fast, check, honeypot, status, n) in groups {
        if straight {
            e.straightline += n;
        }
        if honeypot {
            e.honeypot += n;
        }
        if fast {
            e.fast += n;
        }
        if status == ParticipantStatus::FailedCheck {
            e.failed_check_ended += n;
        } else if check {
            e.failed_check_continued += n;
        }
    }
    Ok(e)
}

/// Bucket widths for the completions chart: a minute up to a week.
const WIDTHS: [i64; 9] = [
    60,
    300,
    900,
    3600,
    3 * 3600,
    6 * 3600,
    86_400,
    2 * 86_400,
    7 * 86_400,
];

#[derive(diesel::QueryableByName)]
struct BucketRow {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    bucket: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// Live completions over time: the first and last completion (the (study, completed_at)
/// index), a width for at most [`TIMELINE_BUCKETS`] buckets, then one grouped scan.
fn timeline(conn: &mut DbConnection, study: &Study) -> QueryResult<Timeline> {
    use diesel::sql_types::{BigInt, Bool, Text};
    let edge = |conn: &mut DbConnection, first: bool| {
        let q = participants::table
            .filter(participants::study_id.eq(study.id))
            .filter(participants::completed_at.is_not_null())
            .filter(participants::status.eq(ParticipantStatus::Completed))
            .filter(participants::imported.eq(false))
            .filter(participants::pilot.eq(false))
            .select(participants::completed_at)
            .into_boxed();
        let q = if first {
            q.order(participants::completed_at.asc())
        } else {
            q.order(participants::completed_at.desc())
        };
        q.first::<Option<NaiveDateTime>>(conn)
            .optional()
            .map(Option::flatten)
    };
    let (Some(first), Some(last)) = (edge(conn, true)?, edge(conn, false)?) else {
        return Ok(Timeline::default());
    };
    let span = (last - first).num_seconds().max(1);
    let width = WIDTHS
        .into_iter()
        .find(|w| span / w < TIMELINE_BUCKETS)
        .unwrap_or(WIDTHS[WIDTHS.len() - 1]);
    let rows: Vec<BucketRow> = match conn {
        DbConnection::Sqlite(c) => diesel::sql_query(
            "SELECT CAST(strftime('%s', completed_at) AS INTEGER) / ?1 AS bucket, \
                    COUNT(*) AS n \
             FROM participants \
             WHERE study_id = ?2 AND status = ?3 AND completed_at IS NOT NULL \
               AND imported = ?4 AND pilot = ?4 \
             GROUP BY bucket ORDER BY bucket",
        )
        .bind::<BigInt, _>(width)
        .bind::<BigInt, _>(study.id)
        .bind::<Text, _>(ParticipantStatus::Completed)
        .bind::<Bool, _>(false)
        .load(c)?,
        DbConnection::Postgresql(c) => diesel::sql_query(
            "SELECT FLOOR(EXTRACT(EPOCH FROM completed_at))::BIGINT / $1 AS bucket, \
                    COUNT(*) AS n \
             FROM participants \
             WHERE study_id = $2 AND status = $3 AND completed_at IS NOT NULL \
               AND imported = $4 AND pilot = $4 \
             GROUP BY bucket ORDER BY bucket",
        )
        .bind::<BigInt, _>(width)
        .bind::<BigInt, _>(study.id)
        .bind::<Text, _>(ParticipantStatus::Completed)
        .bind::<Bool, _>(false)
        .load(c)?,
    };
    let start = first.and_utc().timestamp() / width;
    let end = last.and_utc().timestamp() / width;
    let mut buckets = Vec::with_capacity(usize::try_from(end - start + 1).unwrap_or(0));
    for b in start..=end {
        let n = rows.iter().find(|r| r.bucket == b).map_or(0, |r| r.n);
        let at = chrono::DateTime::from_timestamp(b * width, 0)
            .map(|t| t.naive_utc())
            .unwrap_or(first);
        buckets.push((at, n));
    }
    Ok(Timeline {
        width_seconds: width,
        buckets,
    })
}

/// The ten latest live completions, newest first; of an imported study, its imported ones.
fn latest_completions(
    conn: &mut DbConnection,
    study: &Study,
    imported: bool,
) -> QueryResult<Vec<Completion>> {
    Ok(participants::table
        .left_join(situations::table)
        .filter(participants::study_id.eq(study.id))
        .filter(participants::completed_at.is_not_null())
        .filter(participants::status.eq(ParticipantStatus::Completed))
        .filter(participants::imported.eq(imported))
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
