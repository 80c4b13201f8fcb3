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

/// The evidence counts on the monitor: one block, fed by `evidence_counts` alone, so more
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
    let groups = scan(conn, study)?;
    let (counts, funnel, withdrawn_live) = status_counts(&groups);
    let (situations, factors) = progress(conn, study)?;
    let median_seconds = median_seconds(conn, study)?;
    let evidence = evidence_counts(&groups);
    let live = counts.active
        + counts.completed
        + counts.withdrawn
        + counts.no_consent
        + counts.failed_check
        + counts.screened_out
        - counts.imported;
    let imported_only = counts.imported > 0 && live == 0 && study.opened_at.is_none();
    let latest = latest_completions(conn, study, imported_only)?;
    let timeline = match completion_edges(conn, study)? {
        Some((first, last)) => {
            let width = bucket_width(first, last);
            timeline(
                &completions_per_bucket(conn, study, width)?,
                first,
                last,
                width,
            )
        }
        None => Timeline::default(),
    };
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

/// One group of the monitor's scan: participants alike in everything the page counts.
#[derive(Debug, Clone, PartialEq, diesel::QueryableByName)]
struct Group {
    #[diesel(sql_type = diesel::sql_types::Text)]
    status: ParticipantStatus,
    #[diesel(sql_type = diesel::sql_types::Text)]
    page: Page,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    imported: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    pilot: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    straightline: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    fast: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    failed_check: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    honeypot: bool,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// The study's participants grouped by status, page, origin and flags: the counts, the funnel
/// and the evidence block all come from this one scan (they were three scans, and each read
/// every participant of the study: at 100,000 that is what the page costs).
fn scan(conn: &mut DbConnection, study: &Study) -> QueryResult<Vec<Group>> {
    use diesel::sql_types::BigInt;
    const COLUMNS: &str = "status, page, imported, pilot, flag_straightline AS straightline, \
        flag_fast AS fast, flag_failed_check AS failed_check, flag_honeypot AS honeypot, \
        COUNT(*) AS n";
    const GROUPS: &str = "GROUP BY status, page, imported, pilot, flag_straightline, \
        flag_fast, flag_failed_check, flag_honeypot";
    let rows = match conn {
        // SQLite picks an index of (study_id, status, …) for `study_id = ?` and then reads
        // the rows in that index's order, all over the table (measured with sqlite3 on a
        // generated 100,000: 0.2 s of system time, the pages read one by one); the
        // (study_id, id) index reads them in table order.
        DbConnection::Sqlite(c) => diesel::sql_query(format!(
            "SELECT {COLUMNS} FROM participants INDEXED BY participants_study_id \
             WHERE study_id = ?1 {GROUPS}"
        ))
        .bind::<BigInt, _>(study.id)
        .load(c),
        DbConnection::Postgresql(c) => diesel::sql_query(format!(
            "SELECT {COLUMNS} FROM participants WHERE study_id = $1 {GROUPS}"
        ))
        .bind::<BigInt, _>(study.id)
        .load(c),
    };
    rows.map_err(corrupt_row(
        "participants",
        format!("of study {}", study.id),
    ))
}

/// Counts by status, the funnel and the live withdrawals.
fn status_counts(groups: &[Group]) -> (StatusCounts, Vec<FunnelStep>, i64) {
    let mut counts = StatusCounts::default();
    let mut furthest: Vec<(usize, i64, bool)> = Vec::new();
    let mut withdrawn_live = 0;
    for g in groups {
        let n = g.n;
        // Pilots count nowhere but in their own line (issue #13, point 4).
        if g.pilot {
            counts.pilot += n;
            continue;
        }
        // "Active" counts from consent on (issue #14, point 6): a participant still on the
        // consent page (made by an older version, when opening the link made one) has agreed
        // to nothing.
        if g.page == Page::Consent {
            continue;
        }
        let slot = match g.status {
            ParticipantStatus::Active => &mut counts.active,
            ParticipantStatus::Completed => &mut counts.completed,
            ParticipantStatus::Withdrawn => &mut counts.withdrawn,
            ParticipantStatus::NoConsent => &mut counts.no_consent,
            ParticipantStatus::FailedCheck => &mut counts.failed_check,
            ParticipantStatus::ScreenedOut => &mut counts.screened_out,
        };
        *slot += n;
        if g.imported {
            counts.imported += n;
            continue;
        }
        // The furthest page each live participant reached: where an active one is now, the
        // check for one who failed it there, the end for one who completed. Declined and
        // screened-out participants never got past consent; a withdrawal keeps no page.
        let reached = match g.status {
            ParticipantStatus::Active => FUNNEL_PAGES.iter().position(|p| *p == g.page),
            ParticipantStatus::FailedCheck => FUNNEL_PAGES.iter().position(|p| *p == Page::Check),
            ParticipantStatus::Completed => Some(FUNNEL_PAGES.len() - 1),
            ParticipantStatus::Withdrawn => {
                withdrawn_live += n;
                None
            }
            ParticipantStatus::NoConsent | ParticipantStatus::ScreenedOut => None,
        };
        if let Some(i) = reached {
            furthest.push((i, n, g.status == ParticipantStatus::Active));
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
    (counts, funnel, withdrawn_live)
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

/// The evidence block's counts (non-pilot participants, any page).
fn evidence_counts(groups: &[Group]) -> EvidenceCounts {
    let mut e = EvidenceCounts::default();
    for g in groups.iter().filter(|g| !g.pilot) {
        if g.straightline {
            e.straightline += g.n;
        }
        if g.honeypot {
            e.honeypot += g.n;
        }
        if g.fast {
            e.fast += g.n;
        }
        if g.status == ParticipantStatus::FailedCheck {
            e.failed_check_ended += g.n;
        } else if g.failed_check {
            e.failed_check_continued += g.n;
        }
    }
    e
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

/// The first and last live completion (the (study, completed_at) index).
fn completion_edges(
    conn: &mut DbConnection,
    study: &Study,
) -> QueryResult<Option<(NaiveDateTime, NaiveDateTime)>> {
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
    Ok(match (edge(conn, true)?, edge(conn, false)?) {
        (Some(first), Some(last)) => Some((first, last)),
        _ => None,
    })
}

/// The narrowest width that gives at most [`TIMELINE_BUCKETS`] buckets from `first` to `last`.
fn bucket_width(first: NaiveDateTime, last: NaiveDateTime) -> i64 {
    let span = (last - first).num_seconds().max(1);
    WIDTHS
        .into_iter()
        .find(|w| span / w < TIMELINE_BUCKETS)
        .unwrap_or(WIDTHS[WIDTHS.len() - 1])
}

#[derive(diesel::QueryableByName)]
struct BucketRow {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    bucket: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// Live completions per bucket of `width` seconds (completion time / width), one grouped scan.
fn completions_per_bucket(
    conn: &mut DbConnection,
    study: &Study,
    width: i64,
) -> QueryResult<BTreeMap<i64, i64>> {
    use diesel::sql_types::{BigInt, Bool, Text};
    let rows: Vec<BucketRow> = match conn {
        // `unixepoch` rather than `strftime('%s')`: the same whole seconds, half the time
        // (sqlite3 on a generated 100,000).
        DbConnection::Sqlite(c) => diesel::sql_query(
            "SELECT unixepoch(completed_at) / ?1 AS bucket, COUNT(*) AS n \
             FROM participants \
             WHERE study_id = ?2 AND status = ?3 AND completed_at IS NOT NULL \
               AND imported = ?4 AND pilot = ?4 \
             GROUP BY bucket",
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
             GROUP BY bucket",
        )
        .bind::<BigInt, _>(width)
        .bind::<BigInt, _>(study.id)
        .bind::<Text, _>(ParticipantStatus::Completed)
        .bind::<Bool, _>(false)
        .load(c)?,
    };
    Ok(rows.into_iter().map(|r| (r.bucket, r.n)).collect())
}

/// Live completions over time, every bucket from the first completion's to the last's (empty
/// ones 0). A completion that arrived between the edge lookups and the count falls past the
/// last bucket and waits for the next load.
fn timeline(
    per_bucket: &BTreeMap<i64, i64>,
    first: NaiveDateTime,
    last: NaiveDateTime,
    width: i64,
) -> Timeline {
    let start = first.and_utc().timestamp() / width;
    let end = last.and_utc().timestamp() / width;
    let mut buckets = Vec::with_capacity(usize::try_from(end - start + 1).unwrap_or(0));
    for b in start..=end {
        let n = per_bucket.get(&b).copied().unwrap_or(0);
        let at = chrono::DateTime::from_timestamp(b * width, 0)
            .map(|t| t.naive_utc())
            .unwrap_or(first);
        buckets.push((at, n));
    }
    Timeline {
        width_seconds: width,
        buckets,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn group(status: ParticipantStatus, page: Page, n: i64) -> Group {
        Group {
            status,
            page,
            imported: false,
            pilot: false,
            straightline: false,
            fast: false,
            failed_check: false,
            honeypot: false,
            n,
        }
    }

    fn at(seconds: i64) -> NaiveDateTime {
        chrono::DateTime::from_timestamp(seconds, 0)
            .map(|t| t.naive_utc())
            .unwrap_or_default()
    }

    #[test]
    fn pilots_count_only_as_pilots_and_the_consent_page_counts_nowhere() {
        let pilot = Group {
            pilot: true,
            ..group(ParticipantStatus::Completed, Page::Done, 3)
        };
        let groups = [
            pilot,
            group(ParticipantStatus::Active, Page::Consent, 5),
            group(ParticipantStatus::Active, Page::Situation, 2),
            group(ParticipantStatus::Completed, Page::Done, 7),
            Group {
                imported: true,
                ..group(ParticipantStatus::Completed, Page::Done, 11)
            },
            group(ParticipantStatus::Withdrawn, Page::PanasBefore, 1),
        ];
        let (counts, funnel, withdrawn_live) = status_counts(&groups);
        assert_eq!(counts.pilot, 3);
        assert_eq!(counts.active, 2);
        assert_eq!(counts.completed, 18);
        assert_eq!(counts.imported, 11);
        assert_eq!(counts.withdrawn, 1);
        assert_eq!(withdrawn_live, 1);
        // The funnel: live participants only; 2 are on the situation page, 7 reached the end.
        let reached: Vec<i64> = funnel.iter().map(|s| s.reached).collect();
        assert_eq!(reached, [9, 9, 9, 7, 7, 7, 7]);
        let situation = funnel.iter().find(|s| s.page == Page::Situation);
        assert_eq!(situation.map(|s| s.here_now), Some(2));
    }

    #[test]
    fn the_evidence_block_skips_pilots_and_tells_a_failed_check_that_ended_from_one_that_went_on() {
        let groups = [
            Group {
                failed_check: true,
                fast: true,
                ..group(ParticipantStatus::Completed, Page::Done, 4)
            },
            Group {
                failed_check: true,
                ..group(ParticipantStatus::FailedCheck, Page::Check, 2)
            },
            Group {
                honeypot: true,
                straightline: true,
                pilot: true,
                ..group(ParticipantStatus::Completed, Page::Done, 9)
            },
            Group {
                honeypot: true,
                ..group(ParticipantStatus::Active, Page::Consent, 1)
            },
        ];
        let e = evidence_counts(&groups);
        assert_eq!(e.failed_check_continued, 4);
        assert_eq!(e.failed_check_ended, 2);
        assert_eq!(e.fast, 4);
        assert_eq!(e.honeypot, 1);
        assert_eq!(e.straightline, 0);
    }

    #[test]
    fn the_timeline_fills_empty_buckets_and_leaves_a_late_completion_for_the_next_load() {
        let width = bucket_width(at(0), at(600));
        assert_eq!(width, 60);
        // Bucket 11: completed after the edges were read, past the last bucket.
        let per_bucket = BTreeMap::from([(0, 3), (10, 4), (11, 5)]);
        let t = timeline(&per_bucket, at(0), at(600), width);
        assert_eq!(t.width_seconds, 60);
        let counts: Vec<i64> = t.buckets.iter().map(|b| b.1).collect();
        assert_eq!(counts, [3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4]);
        assert_eq!(t.buckets.first().map(|b| b.0), Some(at(0)));
        assert_eq!(t.buckets.last().map(|b| b.0), Some(at(600)));
    }

    #[test]
    fn a_span_of_years_is_bucketed_by_weeks_at_most() {
        assert_eq!(bucket_width(at(0), at(0)), 60);
        assert_eq!(bucket_width(at(0), at(3 * 365 * 86_400)), 7 * 86_400);
    }
}
