//! What the evidence against bots reads (`domain::evidence`, `app::evidence`): a study's
//! participants with their stored flags, answers and page times, and its exclusion rules
//! (`study_exclusions`).
//!
//! Answers and page events are read for 500 participants at a time (`eq_any` on the ids),
//! so no statement binds more than SQLite allows and memory grows with the study only by
//! what the assessment keeps.

use std::collections::HashMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::columns::corrupt_row;
use super::schema::{page_events, participants, responses, study_exclusions};
use super::{DbConnection, ParticipantId, SituationId, StoreError, StudyId, now};
use crate::domain::evidence::{ExclusionRules, StoredFlags};
use crate::domain::measure::Measure;
use crate::domain::survey::{Page, PageEvent, ParticipantStatus};

/// Ids bound per statement.
const CHUNK: usize = 500;

/// One participant as the evidence reads them.
#[derive(Debug, Clone)]
pub struct Subject {
    pub id: ParticipantId,
    pub export_id: String,
    pub situation: Option<SituationId>,
    pub imported: bool,
    /// Completed (the others are still answering, or were ended by the attention check).
    pub completed: bool,
    /// Completed or ended by the check: their answers and page times no longer change (a
    /// withdrawal takes them out of the assessed statuses, a deletion out of the table).
    pub finished: bool,
    pub flags: StoredFlags,
    /// Answers by phase, canonical order (`None` where an item is missing).
    pub before: Vec<Option<i32>>,
    pub after: Vec<Option<i32>>,
    /// Milliseconds from a page's first "shown" to its "submitted", per page.
    pub pages: Vec<(Page, i64)>,
}

/// Which completed participants to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// All of them (exports, the report, a participant's page).
    All,
    /// The latest `n` participants (the monitor: bounded at any study size).
    Latest(i64),
}

type SubjectRow = (
    ParticipantId,
    String,
    Option<SituationId>,
    bool,
    ParticipantStatus,
    (bool, bool, bool, bool),
);

/// The statuses assessed: everyone who answered and did not withdraw (withdrawing deletes the
/// answers) or decline.
const ASSESSED: [ParticipantStatus; 3] = [
    ParticipantStatus::Completed,
    ParticipantStatus::Active,
    ParticipantStatus::FailedCheck,
];

/// The study's non-pilot participants past consent who completed, are still answering or were
/// ended by the check, with their answers (`items` per block) and page times.
pub fn subjects(
    conn: &mut DbConnection,
    study: StudyId,
    items: usize,
    scope: Scope,
) -> Result<Vec<Subject>, StoreError> {
    let mut out = heads(conn, study, items, scope)?;
    let all: Vec<usize> = (0..out.len()).collect();
    fill(conn, study, &mut out, &all)?;
    Ok(out)
}

/// The participants of [`subjects`] with their stored flags but without answers and page
/// times (`before`/`after` all `None`, `pages` empty): one indexed read, which [`fill`]
/// completes for those a caller does not already know.
pub fn heads(
    conn: &mut DbConnection,
    study: StudyId,
    items: usize,
    scope: Scope,
) -> Result<Vec<Subject>, StoreError> {
    let base = participants::table
        .filter(participants::study_id.eq(study))
        .filter(participants::status.eq_any(ASSESSED))
        .filter(participants::page.ne(Page::Consent))
        .filter(participants::pilot.eq(false))
        .select((
            participants::id,
            participants::export_id,
            participants::situation_id,
            participants::imported,
            participants::status,
            (
                participants::flag_straightline,
                participants::flag_fast,
                participants::flag_failed_check,
                participants::flag_honeypot,
            ),
        ));
    let rows: Vec<SubjectRow> = match scope {
        Scope::All => base.order(participants::id).load(conn),
        Scope::Latest(n) => {
            // The latest participants by id (imported ones have no completion time),
            // bounded whatever the study's size; then back in id order.
            let mut rows: Vec<SubjectRow> =
                base.order(participants::id.desc()).limit(n).load(conn)?;
            rows.reverse();
            Ok(rows)
        }
    }
    .map_err(corrupt_row("participants", format!("of study {study}")))?;
    Ok(rows
        .into_iter()
        .map(|(id, export_id, situation, imported, status, flags)| {
            let (straightline, fast, failed_check, honeypot) = flags;
            Subject {
                id,
                export_id,
                situation,
                imported,
                completed: status == ParticipantStatus::Completed,
                finished: status != ParticipantStatus::Active,
                flags: StoredFlags {
                    straightline,
                    fast,
                    failed_check,
                    honeypot,
                },
                before: vec![None; items],
                after: vec![None; items],
                pages: Vec::new(),
            }
        })
        .collect())
}

/// Reads the answers and page times of `out[i]` for each `i` in `which` (500 participants a
/// statement).
pub fn fill(
    conn: &mut DbConnection,
    study: StudyId,
    out: &mut [Subject],
    which: &[usize],
) -> Result<(), StoreError> {
    let index: HashMap<ParticipantId, usize> = which
        .iter()
        .filter_map(|&i| out.get(i).map(|s| (s.id, i)))
        .collect();
    let ids: Vec<ParticipantId> = which
        .iter()
        .filter_map(|&i| out.get(i).map(|s| s.id))
        .collect();
    for chunk in ids.chunks(CHUNK) {
        let answers: Vec<(ParticipantId, Measure, i32, i32)> = responses::table
            .filter(responses::participant_id.eq_any(chunk))
            .select((
                responses::participant_id,
                responses::phase,
                responses::item_number,
                responses::value,
            ))
            .load(conn)
            .map_err(corrupt_row("responses", format!("of study {study}")))?;
        for (p, phase, item, value) in answers {
            let Some(s) = index.get(&p).map(|i| &mut out[*i]) else {
                continue;
            };
            let block = match phase {
                Measure::Default => &mut s.before,
                Measure::Evoked => &mut s.after,
            };
            if let Some(slot) = usize::try_from(item)
                .ok()
                .and_then(|i| i.checked_sub(1))
                .and_then(|i| block.get_mut(i))
            {
                *slot = Some(value);
            }
        }
        let events: Vec<(ParticipantId, Page, PageEvent, NaiveDateTime)> = page_events::table
            .filter(page_events::participant_id.eq_any(chunk))
            .order((page_events::participant_id, page_events::id))
            .select((
                page_events::participant_id,
                page_events::page,
                page_events::event,
                page_events::at,
            ))
            .load(conn)
            .map_err(corrupt_row("page_events", format!("of study {study}")))?;
        let mut shown: HashMap<(ParticipantId, Page), NaiveDateTime> = HashMap::new();
        for (p, page, event, at) in events {
            match event {
                PageEvent::Shown => {
                    shown.entry((p, page)).or_insert(at);
                }
                PageEvent::Submitted => {
                    let (Some(first), Some(i)) = (shown.get(&(p, page)), index.get(&p)) else {
                        continue;
                    };
                    let s = &mut out[*i];
                    if !s.pages.iter().any(|(x, _)| *x == page) {
                        s.pages
                            .push((page, (at - *first).num_milliseconds().max(0)));
                    }
                }
            }
        }
    }
    Ok(())
}

/// A study's exclusion rules and when they last changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredRules {
    pub rules: ExclusionRules,
    pub updated_at: Option<NaiveDateTime>,
    /// A change made while the study was open or after it had opened.
    pub changed_after_opening: bool,
}

/// The study's exclusion rules (none when never set). A stored list that does not decode is
/// `Corrupt`.
pub fn rules(conn: &mut DbConnection, study: StudyId) -> Result<StoredRules, StoreError> {
    let row: Option<(String, NaiveDateTime, bool)> = study_exclusions::table
        .find(study.0)
        .select((
            study_exclusions::signals,
            study_exclusions::updated_at,
            study_exclusions::changed_after_opening,
        ))
        .get_result(conn)
        .optional()?;
    let Some((signals, updated_at, after)) = row else {
        return Ok(StoredRules::default());
    };
    let rules: ExclusionRules =
        serde_json::from_str(&signals).map_err(|e| StoreError::Corrupt {
            table: "study_exclusions",
            row: study.to_string(),
            column: "signals".to_owned(),
            detail: e.to_string(),
        })?;
    Ok(StoredRules {
        rules,
        updated_at: Some(updated_at),
        changed_after_opening: after,
    })
}

/// Stores the study's rules; `after_opening` marks a change made once the study had opened
/// (kept once set: the report says the rules changed during data collection).
pub fn set_rules(
    conn: &mut DbConnection,
    study: StudyId,
    rules: &ExclusionRules,
    after_opening: bool,
) -> Result<(), StoreError> {
    let json = serde_json::to_string(rules).map_err(|e| StoreError::Inconsistent(e.to_string()))?;
    let before = self::rules(conn, study)?;
    let after = after_opening || before.changed_after_opening;
    let t = now();
    let n = diesel::update(study_exclusions::table.find(study.0))
        .set((
            study_exclusions::signals.eq(&json),
            study_exclusions::updated_at.eq(t),
            study_exclusions::changed_after_opening.eq(after),
        ))
        .execute(conn)?;
    if n == 0 {
        diesel::insert_into(study_exclusions::table)
            .values((
                study_exclusions::study_id.eq(study.0),
                study_exclusions::signals.eq(&json),
                study_exclusions::updated_at.eq(t),
                study_exclusions::changed_after_opening.eq(after),
            ))
            .execute(conn)?;
    }
    Ok(())
}
