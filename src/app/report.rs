//! The alignment report: read a study's completed participants and model trials, score them
//! and compute the statistics (`domain::report`).

use super::error::{Error, Result, invalid};
use super::report_groups as groups;
use std::collections::HashMap;

use crate::domain::evidence::Signal;
use crate::domain::groups::Member;
use crate::domain::instrument::{Convention, Instrument};
use crate::domain::measure::Measure;
use crate::domain::provenance::{self, CohortSource, Provenance, RunSource, Software};
use crate::domain::reliability::{Keying, Prompt, Response, psychometrics};
use crate::domain::report::{
    AnswerScale, Condition, Factor, HumanObservation, Inputs, Layout, Mode, ModelInput, Report,
    Trial, build,
};
use crate::domain::run::TrialStatus;
use crate::domain::survey::ParticipantStatus;
use crate::domain::valence;
use crate::store::report::TrialFilter;
use crate::store::studies::Study;
use crate::store::{self, DbConnection, InstrumentId, instruments, runs, situations, studies};
use chrono::SecondsFormat;

/// Which models a report includes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSelection {
    All,
    Only(Vec<String>),
}

impl std::str::FromStr for ModelSelection {
    type Err = String;
    /// `all` or a comma-separated list of model names.
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "all" || s.trim().is_empty() {
            return Ok(ModelSelection::All);
        }
        Ok(ModelSelection::Only(
            s.split(',')
                .map(|m| m.trim().to_owned())
                .filter(|m| !m.is_empty())
                .collect(),
        ))
    }
}

/// What a report covers besides the statistical options.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportRequest {
    pub study: String,
    /// Model cohorts, by name (each pools all its runs on the instrument).
    pub models: ModelSelection,
    /// Instead of models: one cohort per run. With exactly two runs the report also compares
    /// them (the prompt-variant comparison).
    pub runs: Vec<store::RunId>,
    /// The instrument (key) the trials were answered on; default: the study's. Humans are
    /// included only when it is the study's instrument (theirs).
    pub instrument: Option<String>,
    /// Only the humans on this side of the study's split (train/test).
    pub split: Option<crate::domain::split::Side>,
    pub options: crate::domain::report::Options,
    /// The generation time the report states; `None`: `source_date_epoch`, else now.
    pub generated_at: Option<chrono::DateTime<chrono::Utc>>,
    /// `SOURCE_DATE_EPOCH` (reproducible-builds.org): the default generation time, and every
    /// recorded time later than it (imports, trials, completions) is stated as it; the block
    /// says so. With it and a `build_label`, the same data regenerate byte for byte.
    pub source_date_epoch: Option<chrono::DateTime<chrono::Utc>>,
    /// Named instead of the build's commit in the provenance (`--build-label`).
    pub build_label: Option<String>,
}

/// α must be a number strictly between 0 and 1 (the command line's `--alpha` and the report
/// page's `alpha` both read it so).
pub fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err(format!("α must be a number between 0 and 1, not {s:?}")),
    }
}

impl ReportRequest {
    /// All models, all humans, the study's instrument.
    pub fn new(study: &str, options: crate::domain::report::Options) -> ReportRequest {
        ReportRequest {
            study: study.to_owned(),
            models: ModelSelection::All,
            runs: Vec::new(),
            instrument: None,
            split: None,
            options,
            generated_at: None,
            source_date_epoch: None,
            build_label: None,
        }
    }
}

/// A free-text task's answers are texts: they have their own report.
fn not_free_text(instrument: &crate::domain::instrument::Instrument) -> Result<()> {
    if instrument.is_free_text() {
        return Err(invalid(format!(
            "{} is a free-text task: its answers are texts, reported by `emotionbench runs \
             text-report --runs ID --scorer NAME`",
            instrument.key
        )));
    }
    Ok(())
}

/// Reads a study's completed participants and model trials, scores them and computes the
/// alignment report (`domain::report`). Paper mode scores with the paper's convention, the
/// default mode with the instrument authors' (identical for PANAS).
pub fn report(conn: &mut DbConnection, request: &ReportRequest) -> Result<Report> {
    let slug = request.study.as_str();
    let options = request.options;
    let study = studies::load(conn, slug)?.ok_or_else(|| Error::NoStudy(slug.to_owned()))?;
    let set = study
        .situation_set_id
        .ok_or_else(|| Error::NoSituationSet(slug.to_owned()))?;
    let instrument_id = match &request.instrument {
        None => study.instrument_id,
        Some(key) => {
            instruments::load(conn, key)?
                .ok_or_else(|| Error::NoInstrument(key.clone()))?
                .0
        }
    };
    let instrument = instruments::get(conn, instrument_id)?;
    not_free_text(&instrument)?;
    let humans_answer_it = instrument_id == study.instrument_id;
    let convention = match options.mode {
        Mode::Paper => Convention::Paper,
        Mode::Default => Convention::Authored,
    };
    let (layout, factor_of, key_of) = layout(conn, set, &instrument)?;
    let variants = Variants::read(conn, set, &factor_of)?;
    let scorer = Scorer {
        instrument: &instrument,
        convention,
    };
    if request.split.is_some() && !store::report::has_split(conn, study.id)? {
        return Err(Error::NoSplit(slug.to_owned()));
    }
    let (stored_rules, excluded) = rule_exclusions(conn, &study, humans_answer_it)?;
    let (humans, human_responses, human_rows, scored, by_rules) = if humans_answer_it {
        humans(
            conn,
            &study,
            request,
            (&variants.originals, &key_of),
            &scorer,
            &excluded,
        )?
    } else {
        (
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            RuleExclusions::default(),
        )
    };
    let (cohort_names, filter) = cohorts(conn, &study, request, instrument_id, &instrument)?;
    let epoch = request
        .source_date_epoch
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true));
    let epoch = epoch.as_deref();
    let sources = run_sources(conn, &study, instrument_id, &cohort_names, &filter, epoch)?;
    let (mut models, model_responses, model_rows, personas, runs_of) = model_inputs(
        conn,
        &study,
        instrument_id,
        cohort_names,
        &filter,
        (&factor_of, &key_of),
        &scorer,
    )?;
    let by_language = super::report_languages::section(
        conn,
        &study,
        &layout.categories,
        super::report_languages::Observed {
            humans: humans_answer_it.then_some((humans.as_slice(), scored.as_slice())),
            models: &models,
            runs_of: &runs_of,
        },
        |t| !variants.is_variant(t),
        options,
    )?;
    let valence = variants.compare(&mut models, &layout.categories, options.alpha);
    let humans_from = humans_from(
        conn,
        (&study, request),
        (&instrument, humans_answer_it),
        &stored_rules,
    )?;
    let compare = (request.runs.len() == 2).then_some((0, 1));
    let with_humans = !humans.is_empty();
    let census = humans_answer_it
        .then(|| human_census(conn, &study, request, (humans.len(), &by_rules), epoch))
        .transpose()?;
    let inputs: Vec<provenance::Input> = with_humans
        .then(|| provenance::input("humans", "participants", human_rows))
        .into_iter()
        .chain(
            models
                .iter()
                .zip(model_rows)
                .map(|(m, rows)| provenance::input(&m.name, "trials", rows)),
        )
        .collect();
    let mut report = build(
        &Inputs {
            study: slug.to_owned(),
            instrument: instrument.key.clone(),
            scoring: instrument.scoring_note(convention),
            humans_from,
            layout,
            humans,
            models,
            compare,
            scale: Some(AnswerScale {
                instrument: instrument.clone(),
                convention,
            }),
        },
        options,
    );
    // The cohorts come humans first (when there are any), then the models in input order.
    let keying = Keying::of(&instrument);
    let responses = with_humans
        .then_some(human_responses)
        .into_iter()
        .chain(model_responses);
    for (cohort, responses) in report.cohorts.iter_mut().zip(responses) {
        cohort.psychometrics = Some(psychometrics(&keying, &responses));
    }
    report.valence = valence;
    report.by_language = by_language;
    report.groups = groups::comparisons(conn, &study, &instrument, &report, &scored, personas)?;
    report.provenance = Some(Provenance {
        software: Software::labelled(request.build_label.as_deref()),
        generated_at: request
            .generated_at
            .or(request.source_date_epoch)
            .unwrap_or_else(chrono::Utc::now)
            .to_rfc3339_opts(SecondsFormat::Secs, true),
        times_clamped_to: epoch.map(str::to_owned),
        seed: options.seed,
        resamples: options.resamples,
        inputs,
        cohorts: sources,
        humans: census,
    });
    Ok(report)
}

/// The report header's words on which humans it includes (none when they answered another
/// instrument than the report's), with the study's exclusion rules.
fn humans_from(
    conn: &mut DbConnection,
    (study, request): (&Study, &ReportRequest),
    (instrument, humans_answer_it): (&Instrument, bool),
    stored_rules: &store::evidence::StoredRules,
) -> Result<String> {
    if !humans_answer_it {
        return Ok(format!(
            "no humans: they answered {}, not {}",
            instruments::get(conn, study.instrument_id)?.key,
            instrument.key
        ));
    }
    let which = match request.split {
        None => "all completed participants".to_owned(),
        Some(side) => format!(
            "the completed participants on the {} side of the study's split",
            side.as_str()
        ),
    };
    Ok(format!("{which}{}", rules_note(stored_rules)))
}

fn rfc3339(t: chrono::NaiveDateTime) -> String {
    t.and_utc().to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The study's exclusion rules (#15, point 4) and whom they exclude. The evidence is computed
/// only when there are rules to apply (and humans in the report), so a report without them
/// costs what it did.
fn rule_exclusions(
    conn: &mut DbConnection,
    study: &Study,
    humans_answer_it: bool,
) -> Result<(
    store::evidence::StoredRules,
    HashMap<store::ParticipantId, Vec<Signal>>,
)> {
    let stored = store::evidence::rules(conn, study.id)?;
    if !humans_answer_it || stored.rules.signals.is_empty() {
        return Ok((stored, HashMap::new()));
    }
    let evidence = super::evidence::study_evidence(conn, study, store::evidence::Scope::All)?;
    let excluded = evidence
        .people
        .iter()
        .map(|p| (store::ParticipantId(p.id), evidence.excluded_by(p.id)))
        .filter(|(_, by)| !by.is_empty())
        .collect();
    Ok((stored, excluded))
}

/// The report header's words on the exclusion rules: which, and when a change came after the
/// study opened.
fn rules_note(stored: &store::evidence::StoredRules) -> String {
    // Without rules the header stays as it was (the committed example report regenerates
    // byte for byte).
    if stored.rules.signals.is_empty() {
        return String::new();
    }
    let changed = match (stored.changed_after_opening, stored.updated_at) {
        (true, Some(t)) => format!(" (changed after the study opened, last on {})", rfc3339(t)),
        _ => String::new(),
    };
    format!(
        "; excluded by the study's rules: participants with evidence of {}{changed}",
        stored.rules.describe()
    )
}

/// The humans the exclusion rules left out: per rule (a participant under every rule that
/// applies) and in all.
#[derive(Debug, Clone, Default)]
struct RuleExclusions {
    per_rule: std::collections::BTreeMap<Signal, usize>,
    total: usize,
}

/// The humans included and excluded, and why (`included`: how many the report scored, and
/// those its exclusion rules left out).
fn human_census(
    conn: &mut DbConnection,
    study: &Study,
    request: &ReportRequest,
    (included, by_rules): (usize, &RuleExclusions),
    epoch: Option<&str>,
) -> Result<provenance::Humans> {
    let rows = store::report::census(conn, study.id)?;
    let participants: Vec<provenance::Participant> = rows
        .into_iter()
        .map(
            |(status, pilot, split, failed_check, straightline, fast, completed_at)| {
                provenance::Participant {
                    status: match status {
                        ParticipantStatus::Active => "still answering",
                        ParticipantStatus::Completed => "completed",
                        ParticipantStatus::Withdrawn => "withdrew",
                        ParticipantStatus::NoConsent => "did not consent",
                        ParticipantStatus::FailedCheck => "failed the attention check",
                        ParticipantStatus::ScreenedOut => "screened out",
                    }
                    .to_owned(),
                    completed: status == ParticipantStatus::Completed,
                    pilot,
                    on_split: request.split.is_none_or(|side| split == Some(side)),
                    failed_check,
                    straightline,
                    fast,
                    completed_at: provenance::clamp(completed_at.map(rfc3339), epoch),
                }
            },
        )
        .collect();
    let rules: Vec<provenance::Count> = by_rules
        .per_rule
        .iter()
        .map(|(s, n)| provenance::Count {
            reason: format!("excluded by the study's rules: {s}"),
            participants: *n,
        })
        .collect();
    Ok(provenance::humans(
        &participants,
        included,
        (&rules, by_rules.total),
    ))
}

/// A run's language as the methods block states it: its own, else the study's default when the
/// study has several (a run that named none asked in it); nothing in a study of one language.
fn run_language_note(run: &runs::Run, study: &Study) -> Result<Option<String>> {
    let langs = study.languages();
    Ok(match (run.language()?, langs) {
        (Some(l), _) => Some(l.to_string()),
        (None, [default, _, ..]) => Some(format!("{default} (the study's default)")),
        (None, _) => None,
    })
}

/// Each model cohort's runs as the methods block names them.
fn run_sources(
    conn: &mut DbConnection,
    study: &Study,
    instrument_id: InstrumentId,
    cohort_names: &[String],
    filter: &TrialFilter,
    epoch: Option<&str>,
) -> Result<Vec<CohortSource>> {
    let mut by_cohort: Vec<Vec<RunSource>> = vec![Vec::new(); cohort_names.len()];
    for id in store::report::runs_of(conn, study.id, instrument_id, filter)? {
        let Some(run) = runs::get(conn, id)? else {
            continue;
        };
        let cohort = match filter {
            TrialFilter::Models(names) => names.iter().position(|m| *m == run.model),
            TrialFilter::Runs(ids) => ids.iter().position(|r| *r == run.id),
        };
        let Some(slot) = cohort.and_then(|c| by_cohort.get_mut(c)) else {
            continue;
        };
        let progress = runs::progress(conn, id)?;
        let imported = run.source == "import";
        let (first, last) = if imported {
            (Some(run.created_at), Some(run.created_at))
        } else {
            store::report::trial_span(conn, id)?
        };
        let params = run.params.0.as_ref().map(|m| &m.requested);
        slot.push(RunSource {
            run: id.0,
            source: if imported {
                "imported results"
            } else {
                "model run"
            }
            .to_owned(),
            model: run.model.clone(),
            provider: run.provider.clone(),
            template: run.template.clone(),
            language: run_language_note(&run, study)?,
            temperature: params.map(|p| p.temperature),
            top_p: params.map(|p| p.top_p),
            seed: run.seed,
            item_order: if imported {
                "as recorded in the imported file"
            } else {
                "shuffled per trial, seeded from the run seed"
            }
            .to_owned(),
            first: provenance::clamp(first.map(rfc3339), epoch),
            last: provenance::clamp(last.map(rfc3339), epoch),
            trials_done: progress.done,
            trials_failed: progress.failed,
        });
    }
    Ok(cohort_names
        .iter()
        .zip(by_cohort)
        .map(|(name, runs)| CohortSource {
            cohort: name.clone(),
            source: provenance::cohort_source(&runs),
            runs,
        })
        .collect())
}

/// Each situation's key by row id.
type SituationKeys = HashMap<i64, String>;

/// Scores answers on the report's instrument under its convention.
struct Scorer<'a> {
    instrument: &'a Instrument,
    convention: Convention,
}

impl Scorer<'_> {
    fn score(&self, answers: &[i32]) -> Option<Vec<f64>> {
        self.instrument
            .score(answers, self.convention)
            .ok()
            .map(|v| v.into_iter().map(|c| c.value).collect())
    }
}

/// Valence variants (#18) are the control, compared in their own section: the main tables
/// keep to the originals, for models and for participants assigned a variant alike.
struct Variants {
    /// What the valence comparison needs of each situation of the set.
    members: Vec<valence::Member>,
    /// The variants' row ids.
    ids: std::collections::HashSet<i64>,
    /// The factor of each situation that is not a variant.
    originals: HashMap<i64, usize>,
}

impl Variants {
    fn read(
        conn: &mut DbConnection,
        set: store::SituationSetId,
        factor_of: &HashMap<i64, usize>,
    ) -> Result<Variants> {
        let members: Vec<valence::Member> = situations::list(conn, set)?
            .into_iter()
            .map(|s| valence::Member {
                id: s.id.0,
                key: s.situation.key,
                valence: s.situation.valence,
                variant_of: s.situation.variant_of,
            })
            .collect();
        let ids: std::collections::HashSet<i64> =
            valence::variant_ids(&members).into_iter().collect();
        let mut originals = factor_of.clone();
        originals.retain(|id, _| !ids.contains(id));
        Ok(Variants {
            members,
            ids,
            originals,
        })
    }

    /// The valence section over every trial, then the variants' trials left out of `models`.
    fn compare(
        &self,
        models: &mut [ModelInput],
        categories: &[String],
        alpha: f64,
    ) -> Option<valence::Comparison> {
        let section = valence::compare(&self.members, models, categories, alpha);
        for m in models {
            m.trials.retain(|t| !self.is_variant(t));
        }
        section
    }

    /// A trial on a variant: left out of every table but the valence section's.
    fn is_variant(&self, t: &Trial) -> bool {
        matches!(t.condition, Condition::Evoked { situation, .. } if self.ids.contains(&situation))
    }
}

/// Emotions and factors in the set's file order (the paper's table order), each situation's
/// factor, and each situation's key (the provenance names rows by key, not by row id).
fn layout(
    conn: &mut DbConnection,
    set: store::SituationSetId,
    instrument: &Instrument,
) -> Result<(Layout, HashMap<i64, usize>, SituationKeys)> {
    let mut layout = Layout {
        categories: instrument
            .categories
            .iter()
            .map(|c| c.name.clone())
            .collect(),
        emotions: Vec::new(),
        factors: Vec::new(),
    };
    let mut factor_of: HashMap<i64, usize> = HashMap::new();
    let mut key_of: HashMap<i64, String> = HashMap::new();
    let mut factor_index: HashMap<(String, u32), usize> = HashMap::new();
    for s in situations::list(conn, set)? {
        let e = match layout
            .emotions
            .iter()
            .position(|e| *e == s.situation.emotion)
        {
            Some(e) => e,
            None => {
                layout.emotions.push(s.situation.emotion.clone());
                layout.emotions.len() - 1
            }
        };
        let key = (s.situation.emotion.clone(), s.situation.factor_index);
        let f = *factor_index.entry(key).or_insert_with(|| {
            layout.factors.push(Factor {
                emotion: e,
                index: i32::try_from(s.situation.factor_index).unwrap_or(i32::MAX),
                name: s.situation.factor_name.clone(),
            });
            layout.factors.len() - 1
        });
        factor_of.insert(s.id.0, f);
        key_of.insert(s.id.0, s.situation.key.clone());
    }
    Ok((layout, factor_of, key_of))
}

/// The humans' observations (only on their own instrument), and their two answered
/// questionnaires each for the psychometrics: rows come ordered by participant, phase, item.
///
/// The third part: one canonical line per participant read (situation key, then each answer
/// as phase:item:value@position), for the provenance's digest of the inputs.
fn humans(
    conn: &mut DbConnection,
    study: &Study,
    request: &ReportRequest,
    (factor_of, key_of): (&HashMap<i64, usize>, &HashMap<i64, String>),
    scorer: &Scorer,
    excluded: &HashMap<store::ParticipantId, Vec<Signal>>,
) -> Result<HumanParts> {
    use std::fmt::Write;
    let rows = store::report::completed_answers(conn, study.id, request.split)?;
    let mut humans = Vec::new();
    let mut responses = Vec::new();
    let mut lines = Vec::new();
    let mut scored = Vec::new();
    let mut by_rules = RuleExclusions::default();
    let mut i = 0;
    while i < rows.len() {
        let (pid, situation) = (rows[i].0, rows[i].1);
        if let Some(by) = excluded.get(&pid) {
            by_rules.total += 1;
            for s in by {
                *by_rules.per_rule.entry(*s).or_default() += 1;
            }
            while i < rows.len() && rows[i].0 == pid {
                i += 1;
            }
            continue;
        }
        let (mut before, mut after) = (Vec::new(), Vec::new());
        // (display position, item) of each answer, per phase.
        let (mut shown_before, mut shown_after) = (Vec::new(), Vec::new());
        let mut line = situation_key(situation.map(|s| s.0), key_of);
        while i < rows.len() && rows[i].0 == pid {
            let item = u32::try_from(rows[i].3).unwrap_or(0);
            // Writing to a String cannot fail.
            let _ = write!(
                line,
                " {}:{}:{}@{}",
                rows[i].2.as_str(),
                rows[i].3,
                rows[i].4,
                rows[i].5
            );
            match rows[i].2 {
                Measure::Default => {
                    before.push(rows[i].4);
                    shown_before.push((rows[i].5, item));
                }
                Measure::Evoked => {
                    after.push(rows[i].4);
                    shown_after.push((rows[i].5, item));
                }
            }
            i += 1;
        }
        lines.push(line);
        let factor = situation.and_then(|s| factor_of.get(&s.0).copied());
        if let (Some(factor), Some(before_scores), Some(after_scores)) =
            (factor, scorer.score(&before), scorer.score(&after))
        {
            responses.push(human_response(
                Measure::Default,
                before,
                &before_scores,
                shown_before,
            ));
            responses.push(human_response(
                Measure::Evoked,
                after,
                &after_scores,
                shown_after,
            ));
            scored.push((pid, before_scores.clone(), after_scores.clone()));
            humans.push(HumanObservation {
                factor,
                before: before_scores,
                after: after_scores,
            });
        }
    }
    Ok((humans, responses, lines, scored, by_rules))
}

/// The humans' observations, their responses and their canonical lines (see [`humans`]), and
/// who the exclusion rules left out.
type HumanParts = (
    Vec<HumanObservation>,
    Vec<Response>,
    Vec<String>,
    Vec<groups::Scored>,
    RuleExclusions,
);

/// A situation as the provenance's lines name it: its key, "-" for none or one not in the set.
fn situation_key(situation: Option<i64>, key_of: &HashMap<i64, String>) -> String {
    situation
        .and_then(|s| key_of.get(&s))
        .map_or_else(|| "-".to_owned(), Clone::clone)
}

/// One phase of a participant as a [`Response`]: the item order is the items sorted by the
/// position each was shown at.
fn human_response(
    measure: Measure,
    answers: Vec<i32>,
    scores: &[f64],
    mut shown: Vec<(i32, u32)>,
) -> Response {
    shown.sort_unstable();
    Response {
        measure,
        answers,
        scores: scores.to_vec(),
        shown: Some(shown.into_iter().map(|(_, item)| item).collect()),
        prompt: None,
    }
}

/// The model cohorts: by model name, or one per requested run.
fn cohorts(
    conn: &mut DbConnection,
    study: &Study,
    request: &ReportRequest,
    instrument_id: InstrumentId,
    instrument: &Instrument,
) -> Result<(Vec<String>, TrialFilter)> {
    let slug = request.study.as_str();
    if request.runs.is_empty() {
        let have = store::report::models(conn, study.id, instrument_id)?;
        let names = match &request.models {
            ModelSelection::All => have.clone(),
            ModelSelection::Only(list) => {
                if let Some(m) = list.iter().find(|m| !have.contains(m)) {
                    return Err(Error::UnknownModel {
                        study: slug.to_owned(),
                        model: m.clone(),
                        have: if have.is_empty() {
                            "none".to_owned()
                        } else {
                            have.join(", ")
                        },
                    });
                }
                list.clone()
            }
        };
        return Ok((names.clone(), TrialFilter::Models(names)));
    }
    let mut names = Vec::with_capacity(request.runs.len());
    for &id in &request.runs {
        let run = runs::get(conn, id)?
            .filter(|r| r.study_id == Some(study.id))
            .ok_or_else(|| Error::UnknownRun {
                study: slug.to_owned(),
                run: id,
            })?;
        if run.instrument_id != instrument_id {
            return Err(Error::RunInstrument {
                run: id,
                has: instruments::get(conn, run.instrument_id)?.key,
                wanted: instrument.key.clone(),
            });
        }
        names.push(format!("{} [{}, run {id}]", run.model, run.template));
    }
    Ok((names, TrialFilter::Runs(request.runs.clone())))
}

/// The model cohorts' trials, scored, their responses, and one canonical line per trial
/// read (model, measure, situation key, repeat, status, answers, order shown) for the
/// provenance's digest of the inputs.
fn model_inputs(
    conn: &mut DbConnection,
    study: &Study,
    instrument_id: InstrumentId,
    cohort_names: Vec<String>,
    filter: &TrialFilter,
    (factor_of, key_of): (&HashMap<i64, usize>, &HashMap<i64, String>),
    scorer: &Scorer,
) -> Result<ModelParts> {
    let mut inputs: Vec<ModelInput> = cohort_names
        .into_iter()
        .map(|name| ModelInput {
            name,
            trials: Vec::new(),
        })
        .collect();
    let mut responses: Vec<Vec<Response>> = vec![Vec::new(); inputs.len()];
    let mut lines: Vec<Vec<String>> = vec![Vec::new(); inputs.len()];
    let mut personas: Vec<Vec<Member>> = vec![Vec::new(); inputs.len()];
    let mut runs_of: Vec<Vec<store::RunId>> = vec![Vec::new(); inputs.len()];
    for row in store::report::trials(conn, study.id, instrument_id, filter)? {
        let cohort = match filter {
            TrialFilter::Models(names) => names.iter().position(|m| *m == row.model),
            TrialFilter::Runs(ids) => ids.iter().position(|r| *r == row.run_id),
        };
        let (Some(input), Some(answered), Some(read), Some(members), Some(run_of)) = (
            cohort.and_then(|c| inputs.get_mut(c)),
            cohort.and_then(|c| responses.get_mut(c)),
            cohort.and_then(|c| lines.get_mut(c)),
            cohort.and_then(|c| personas.get_mut(c)),
            cohort.and_then(|c| runs_of.get_mut(c)),
        ) else {
            continue;
        };
        read.push(format!(
            "{} {} {} {} {:?} {:?} {:?}",
            row.model,
            row.measure.as_str(),
            situation_key(row.situation.map(|s| s.0), key_of),
            row.repeat_index,
            row.status,
            row.scores.as_ref().map(|a| &a.0),
            row.item_order.0
        ));
        let condition = match row.measure {
            Measure::Default => Condition::Default,
            Measure::Evoked => match row
                .situation
                .and_then(|s| Some((s.0, *factor_of.get(&s.0)?)))
            {
                Some((situation, factor)) => Condition::Evoked { factor, situation },
                None => continue,
            },
        };
        // A failed trial counts as a failure; a done one is scored (None when its answers do
        // not fit the instrument).
        let scores = match (row.status, &row.scores) {
            (TrialStatus::Done, Some(answers)) => scorer.score(&answers.0),
            _ => None,
        };
        // A conversation's first questionnaire is its default measure (#17).
        let before = match (&scores, &row.before_scores) {
            (Some(_), Some(answers)) => scorer.score(&answers.0).map(|s| (s, answers.0.clone())),
            _ => None,
        };
        if let (Some((before, _)), Some(after), Some(p)) = (&before, &scores, &row.persona) {
            members.push(Member {
                gender: p.0.gender.clone(),
                age: p.0.age,
                before: before.clone(),
                after: after.clone(),
            });
        }
        if let Some((before, answers)) = before {
            answered.push(Response {
                measure: Measure::Default,
                answers,
                scores: before.clone(),
                shown: row.before_order.map(|o| o.0),
                prompt: Some(Prompt {
                    run: row.run_id.0,
                    situation: None,
                    repeat: row.repeat_index,
                }),
            });
            input.trials.push(Trial {
                condition: Condition::Default,
                scores: Some(before),
            });
            run_of.push(row.run_id);
        }
        if let (Some(scores), Some(answers)) = (&scores, row.scores) {
            answered.push(Response {
                measure: row.measure,
                answers: answers.0,
                scores: scores.clone(),
                shown: Some(row.item_order.0),
                prompt: Some(Prompt {
                    run: row.run_id.0,
                    situation: row.situation.map(|s| s.0),
                    repeat: row.repeat_index,
                }),
            });
        }
        input.trials.push(Trial { condition, scores });
        run_of.push(row.run_id);
    }
    Ok((inputs, responses, lines, personas, runs_of))
}

/// The model cohorts, their responses and their canonical lines (see [`model_inputs`]), the
/// persona trials' members, and each cohort's trials' runs (index for index).
type ModelParts = (
    Vec<ModelInput>,
    Vec<Vec<Response>>,
    Vec<Vec<String>>,
    Vec<Vec<Member>>,
    Vec<Vec<store::RunId>>,
);

/// What the report page offers to choose from: the study's models (on the chosen instrument),
/// its runs, the instruments its humans or runs answered, and whether it has a split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choices {
    pub models: Vec<String>,
    /// Run id and a label (`run 3: gpt-4 [eb-code] on PANAS`, then ` in de` for a run in a
    /// language), newest first.
    pub runs: Vec<(store::RunId, String)>,
    /// Instrument keys, the study's own first.
    pub instruments: Vec<String>,
    pub split: bool,
}

/// The choices of study `slug`'s report page; `instrument` (a key) picks whose models are
/// listed, the study's own when absent or unknown (the page then says the key is unknown).
pub fn choices(conn: &mut DbConnection, slug: &str, instrument: Option<&str>) -> Result<Choices> {
    let study = studies::load(conn, slug)?.ok_or_else(|| Error::NoStudy(slug.to_owned()))?;
    let own = instruments::get(conn, study.instrument_id)?.key;
    let mut keys = vec![own.clone()];
    let mut runs = Vec::new();
    for run in runs::list(conn)?
        .into_iter()
        .filter(|r| r.study_id == Some(study.id))
    {
        let key = instruments::get(conn, run.instrument_id)?.key;
        let language = run
            .language()?
            .map_or_else(String::new, |l| format!(" in {l}"));
        runs.push((
            run.id,
            format!(
                "run {}: {} [{}] on {key}{language}",
                run.id, run.model, run.template
            ),
        ));
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let chosen = match instrument.filter(|k| keys.iter().any(|x| x == k)) {
        Some(k) => instruments::load(conn, k)?.map_or(study.instrument_id, |(id, _)| id),
        None => study.instrument_id,
    };
    Ok(Choices {
        models: store::report::models(conn, study.id, chosen)?,
        runs,
        instruments: keys,
        split: store::report::has_split(conn, study.id)?,
    })
}
