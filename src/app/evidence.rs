//! Evidence per participant (`domain::evidence`) from what the store holds, and the study's
//! exclusion rules: which signals leave a participant out of the analysis (changes audited;
//! one made after the study opened is shown in the report's header).
//!
//! Nothing here changes a participant: the evidence is computed when asked for (the monitor,
//! the evidence and participant pages, the exports, the report), from the stored page times,
//! answers and flags, so it always reflects the study's current humans and model runs.

use std::collections::HashMap;

use super::error::{Error, Result};
use crate::domain::evidence::{
    self, Assessed, ExclusionRules, ModelAnswers, PageTime, Person, Scale, StudyEvidence,
};
use crate::domain::instrument::Instrument;
use crate::domain::measure::Measure;
use crate::domain::protocol;
use crate::domain::run::TrialStatus;
use crate::domain::survey::{ATTENTION_CHECK, Page};
use crate::store::audit::{self, Actor};
use crate::store::evidence::{Scope, StoredRules, Subject};
use crate::store::report::TrialFilter;
use crate::store::studies::Study;
use crate::store::{self, DbConnection, ParticipantId, SituationId, StoreError, StudyId, studies};

/// The reading floors of a study's pages (`domain::evidence::floor_ms` of the words each
/// shows): the questionnaire pages and the check for everyone, the situation page per
/// situation.
pub struct Floors {
    before: i64,
    after: i64,
    check: i64,
    situation: HashMap<SituationId, i64>,
}

impl Floors {
    fn of(instrument: &Instrument, situations: &[(SituationId, String)]) -> Floors {
        let items: u64 = instrument
            .items
            .iter()
            .map(|i| {
                evidence::words(&i.text)
                    + i.options
                        .iter()
                        .map(|o| evidence::words(&o.text))
                        .sum::<u64>()
            })
            .sum();
        let labels: u64 = instrument
            .labels
            .iter()
            .map(|l| evidence::words(&l.label))
            .sum();
        let answers = instrument.items.len() as u64;
        let page = |heading: &str, before: bool| {
            let words = evidence::words(heading)
                + evidence::words(&protocol::questionnaire_instructions(instrument, before))
                + items
                + labels;
            evidence::floor_ms(words, answers)
        };
        let check_words = evidence::words(ATTENTION_CHECK.question)
            + ATTENTION_CHECK
                .options
                .iter()
                .map(|o| evidence::words(o))
                .sum::<u64>();
        let intro = evidence::words(protocol::SITUATION_HEADING)
            + evidence::words(protocol::SITUATION_INTRO);
        Floors {
            before: page(protocol::BEFORE_HEADING, true),
            after: page(protocol::AFTER_HEADING, false),
            check: evidence::floor_ms(check_words, 1),
            situation: situations
                .iter()
                .map(|(id, text)| (*id, evidence::floor_ms(intro + evidence::words(text), 0)))
                .collect(),
        }
    }

    /// The floor of `page` in milliseconds (the situation page's depends on the situation).
    pub fn floor(&self, page: Page, situation: Option<SituationId>) -> Option<i64> {
        match page {
            Page::PanasBefore => Some(self.before),
            Page::PanasAfter => Some(self.after),
            Page::Check => Some(self.check),
            Page::Situation => situation.and_then(|s| self.situation.get(&s).copied()),
            _ => None,
        }
    }
}

/// The study's model answers on its instrument, per model.
fn model_answers(
    conn: &mut DbConnection,
    study: &Study,
    n: usize,
) -> std::result::Result<Vec<ModelAnswers>, StoreError> {
    let names = store::report::models(conn, study.id, study.instrument_id)?;
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let trials = store::report::trials(
        conn,
        study.id,
        study.instrument_id,
        &TrialFilter::Models(names.clone()),
    )?;
    let mut by: HashMap<String, ModelAnswers> = names
        .iter()
        .map(|m| {
            (
                m.clone(),
                ModelAnswers {
                    model: m.clone(),
                    ..Default::default()
                },
            )
        })
        .collect();
    for t in trials {
        if t.status != TrialStatus::Done {
            continue;
        }
        let Some(m) = by.get_mut(&t.model) else {
            continue;
        };
        let complete =
            |s: &Option<store::Scores>| s.as_ref().map(|s| s.0.clone()).filter(|v| v.len() == n);
        // A conversation's first questionnaire is the model's answer before any situation.
        if let Some(b) = complete(&t.before_scores) {
            m.default.push(b);
        }
        let Some(scores) = complete(&t.scores) else {
            continue;
        };
        match (t.measure, t.situation) {
            (Measure::Default, _) => m.default.push(scores),
            (Measure::Evoked, Some(s)) => m.evoked.entry(s.0).or_default().push(scores),
            (Measure::Evoked, None) => {}
        }
    }
    Ok(names.into_iter().filter_map(|n| by.remove(&n)).collect())
}

fn person(s: &Subject, floors: &Floors) -> Person {
    let complete = |v: &[Option<i32>]| -> Option<Vec<i32>> {
        (!v.is_empty()).then(|| v.iter().copied().collect::<Option<Vec<i32>>>())?
    };
    Person {
        export_id: s.export_id.clone(),
        situation: s.situation.map(|x| x.0),
        before: complete(&s.before),
        after: complete(&s.after),
        pages: s
            .pages
            .iter()
            .map(|(page, ms)| PageTime {
                page: *page,
                ms: *ms,
                floor_ms: floors.floor(*page, s.situation),
            })
            .collect(),
        flags: s.flags,
        reference: s.completed,
    }
}

/// The study's reading floors, from its instrument and situation texts.
pub fn page_floors(
    conn: &mut DbConnection,
    study: &Study,
) -> std::result::Result<Floors, StoreError> {
    let instrument = store::instruments::get(conn, study.instrument_id)?;
    let situations: Vec<(SituationId, String)> = match study.situation_set_id {
        Some(set) => store::situations::list(conn, set)?
            .into_iter()
            .map(|s| (s.id, s.situation.text))
            .collect(),
        None => Vec::new(),
    };
    Ok(Floors::of(&instrument, &situations))
}

/// The evidence about the study's participants (`scope`: all, or the latest for the monitor),
/// with its exclusion rules.
pub fn study_evidence(
    conn: &mut DbConnection,
    study: &Study,
    scope: Scope,
) -> std::result::Result<StudyEvidence, StoreError> {
    let instrument = store::instruments::get(conn, study.instrument_id)?;
    let subjects = store::evidence::subjects(conn, study.id, instrument.items.len(), scope)?;
    assess(conn, study, &instrument, subjects)
}

/// Assesses `subjects` against the study's floors, humans and model runs.
fn assess(
    conn: &mut DbConnection,
    study: &Study,
    instrument: &Instrument,
    subjects: Vec<Subject>,
) -> std::result::Result<StudyEvidence, StoreError> {
    let n = instrument.items.len();
    let floors = page_floors(conn, study)?;
    let models = model_answers(conn, study, n)?;
    let people: Vec<Person> = subjects.iter().map(|s| person(s, &floors)).collect();
    let scale = Scale {
        min: instrument.min,
        max: instrument.max,
    };
    let assessments = evidence::assess(&people, &models, scale);
    let people: Vec<Assessed> = subjects
        .into_iter()
        .zip(assessments)
        .map(|(s, assessment)| Assessed {
            id: s.id.0,
            export_id: s.export_id,
            imported: s.imported,
            completed: s.completed,
            assessment,
        })
        .collect();
    Ok(StudyEvidence::new(
        people,
        store::evidence::rules(conn, study.id)?.rules,
        models.into_iter().map(|m| m.model).collect(),
    ))
}

/// What the monitor's evidence keeps between loads: the answers and page times of the
/// finished participants (completed, or ended by the check) in each study's window. Those
/// never change, so a load reads only the participants new to the window or still answering,
/// and the rest from here; the flags and statuses are read afresh every load, and everything
/// else (floors, humans' distributions, model runs, rules) is computed afresh from them, so
/// the counts are the same as without it. Per process, like the other caches in `AppState`.
#[derive(Default)]
pub struct MonitorInputs {
    studies: std::sync::Mutex<HashMap<StudyId, HashMap<ParticipantId, Known>>>,
}

/// A finished participant's inputs, with the export id that makes a reused row id (SQLite
/// hands out a deleted highest id again) a different participant.
struct Known {
    export_id: String,
    before: Vec<Option<i32>>,
    after: Vec<Option<i32>>,
    pages: Vec<(Page, i64)>,
}

/// At most this many studies are kept; past it the map starts again (a bound, not a policy:
/// an installation watches a handful of studies at once).
const KEPT_STUDIES: usize = 64;

impl MonitorInputs {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<StudyId, HashMap<ParticipantId, Known>>> {
        // A panic elsewhere while holding the lock leaves only whole entries behind.
        self.studies.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The window's subjects: the known ones from here, the others read (and kept once
    /// finished); participants who left the window are dropped.
    fn subjects(
        &self,
        conn: &mut DbConnection,
        study: StudyId,
        items: usize,
    ) -> std::result::Result<Vec<Subject>, StoreError> {
        let mut out = store::evidence::heads(conn, study, items, Scope::Latest(MONITOR_LATEST))?;
        let mut missing = Vec::new();
        {
            let studies = self.lock();
            let known = studies.get(&study);
            for (i, s) in out.iter_mut().enumerate() {
                match known.and_then(|k| k.get(&s.id)) {
                    Some(k) if s.finished && k.export_id == s.export_id => {
                        s.before.clone_from(&k.before);
                        s.after.clone_from(&k.after);
                        s.pages.clone_from(&k.pages);
                    }
                    _ => missing.push(i),
                }
            }
        }
        store::evidence::fill(conn, study, &mut out, &missing)?;
        let mut studies = self.lock();
        if !studies.contains_key(&study) && studies.len() >= KEPT_STUDIES {
            studies.clear();
        }
        let known = studies.entry(study).or_default();
        let window: std::collections::HashSet<ParticipantId> = out.iter().map(|s| s.id).collect();
        known.retain(|id, _| window.contains(id));
        for &i in &missing {
            let s = &out[i];
            if s.finished {
                known.insert(
                    s.id,
                    Known {
                        export_id: s.export_id.clone(),
                        before: s.before.clone(),
                        after: s.after.clone(),
                        pages: s.pages.clone(),
                    },
                );
            }
        }
        Ok(out)
    }

    /// How many participants' inputs are kept for `study` (for tests and the benchmark).
    pub fn kept(&self, study: StudyId) -> usize {
        self.lock().get(&study).map_or(0, HashMap::len)
    }
}

/// Sets a study's exclusion rules, audited (`study.exclusions`, with the signals and whether
/// the study had already opened: such a change is shown in the report's header).
pub fn set_rules(
    conn: &mut DbConnection,
    slug: &str,
    rules: &ExclusionRules,
    actor: &Actor,
) -> Result<StoredRules> {
    conn.write_transaction(|conn| {
        let study = studies::load(conn, slug)?.ok_or_else(|| Error::NoStudy(slug.to_owned()))?;
        let after_opening = study.opened_at.is_some();
        store::evidence::set_rules(conn, study.id, rules, after_opening)?;
        audit::record(
            conn,
            actor,
            "study.exclusions",
            Some(slug),
            Some(&serde_json::json!({
                "signals": rules.signals.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                "after_opening": after_opening,
            })),
        )?;
        Ok(store::evidence::rules(conn, study.id)?)
    })
}

/// The monitor's evidence block: counts per signal over the latest participants.
#[derive(Debug, Clone, Default)]
pub struct MonitorEvidence {
    /// How many participants (completed, answering, ended by the check) the counts cover.
    pub assessed: usize,
    pub counts: Vec<(crate::domain::evidence::Signal, usize)>,
    /// Excluded by the study's rules, among them.
    pub excluded: usize,
}

/// The participants the monitor's evidence covers: the window of its median time, so the page
/// costs the same at any study size.
pub const MONITOR_LATEST: i64 = store::monitor::MEDIAN_OF_LATEST;

/// The evidence about the latest [`MONITOR_LATEST`] participants, the finished ones' answers
/// and page times from `inputs` where known: the same as
/// `study_evidence(conn, study, Scope::Latest(MONITOR_LATEST))`.
pub fn monitor_evidence(
    conn: &mut DbConnection,
    study: &Study,
    inputs: &MonitorInputs,
) -> std::result::Result<StudyEvidence, StoreError> {
    let instrument = store::instruments::get(conn, study.instrument_id)?;
    let subjects = inputs.subjects(conn, study.id, instrument.items.len())?;
    assess(conn, study, &instrument, subjects)
}

/// The evidence counts the monitor shows (the latest [`MONITOR_LATEST`] participants).
pub fn monitor_counts(
    conn: &mut DbConnection,
    study: &Study,
    inputs: &MonitorInputs,
) -> std::result::Result<MonitorEvidence, StoreError> {
    let evidence = monitor_evidence(conn, study, inputs)?;
    Ok(MonitorEvidence {
        assessed: evidence.people.len(),
        counts: evidence.signal_counts(),
        excluded: evidence.exclusions().1,
    })
}
