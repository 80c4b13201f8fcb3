//! Model runs: turn a researcher's request into a stored run (resolve the study, its instrument
//! and situations, the template, plan the trials), change a run's state, render a trial's
//! prompt. Each write records its audit entry in the same transaction.

use std::path::Path;

use super::error::{Error, Result, invalid};
use crate::config::Settings;
use crate::domain::instrument::Instrument;
use crate::domain::language::Lang;
use crate::domain::prompt::canonical_order;
use crate::domain::prompt::{ChatMessage, Measure, Template, parse_custom_template, render};
use crate::domain::protocol::{Persona, Protocol};
use crate::domain::run::{
    PersonaSeat, PlannedTrial, RunParams, Selection, TESTED_SET, plan_personas, plan_trials,
    plan_within_session, trial_order,
};
use crate::domain::situation::Valence;
use crate::llm::profiles::{self, RunManifest};
use crate::store::Json;
use crate::store::runs::{self, NewRun, NewTrial};
use crate::store::situations::StoredSituation;
use crate::store::studies::{self, Study};
use crate::store::{
    DbConnection, InstrumentId, RunId, SituationSetId, audit, instruments, personas,
    situation_texts, situations,
};
use chrono::Datelike;

/// A template by built-in name (`eb-code`, `paper`, `stability`) or a custom template file.
pub fn resolve_template(name_or_file: &str) -> Result<Template> {
    if let Some(t) = Template::builtin(name_or_file) {
        return Ok(t);
    }
    let path = Path::new(name_or_file);
    let text = std::fs::read_to_string(path).map_err(|e| {
        invalid(format!(
            "template {name_or_file:?} is neither eb-code, paper, stability nor a readable \
             custom template file: {e}"
        ))
    })?;
    parse_custom_template(&text)
        .map(Template::Custom)
        .map_err(|e| invalid(format!("{}: {}: {}", path.display(), e.location, e.reason)))
}

fn study(conn: &mut DbConnection, slug: &str) -> Result<Study> {
    studies::load(conn, slug)?.ok_or_else(|| invalid(format!("no study {slug:?}")))
}

fn set_named(conn: &mut DbConnection, name: &str) -> Result<SituationSetId> {
    situations::find_set(conn, name)?.ok_or_else(|| {
        invalid(format!(
            "no situation set {name:?} (import it with `emotionbench import situations … --set {name}`)"
        ))
    })
}

/// The set and situations a selection picks for a study.
///
/// With an emotion-specific scale (AGQ for Anger, BDI for Depression, …; see
/// `instrument::SCALE_EMOTIONS`), a whole-set selection (`all`, `tested`, `set:NAME`) takes only
/// that emotion's situations of the set, as the paper's section 4.3 does; `emotion:`, `factor:`
/// and `keys:` are taken as given (e.g. to give AGQ Fear situations as a control).
fn select(
    conn: &mut DbConnection,
    study: &Study,
    (selection, valences): (&Selection, &[Valence]),
    instrument: &Instrument,
) -> Result<(Option<SituationSetId>, Vec<StoredSituation>), Error> {
    let set = match selection {
        Selection::Tested => Some(set_named(conn, TESTED_SET)?),
        Selection::Set(name) => Some(set_named(conn, name)?),
        _ => study.situation_set_id,
    };
    let Some(set) = set else {
        return Ok((None, Vec::new()));
    };
    let whole_set = matches!(
        selection,
        Selection::All | Selection::Tested | Selection::Set(_)
    );
    let emotion = instrument.target_emotion().filter(|_| whole_set);
    let chosen: Vec<StoredSituation> = situations::list(conn, set)?
        .into_iter()
        .filter(|s| selection.matches(&s.situation))
        .filter(|s| emotion.is_none_or(|e| s.situation.emotion.eq_ignore_ascii_case(e)))
        .collect();
    if let Selection::Keys(keys) = selection {
        for k in keys {
            if !chosen.iter().any(|s| &s.situation.key == k) {
                return Err(invalid(format!("no situation {k:?} in the study's set")));
            }
        }
    }
    // The valence filter (#18) narrows whatever the selection chose.
    let chosen = chosen
        .into_iter()
        .filter(|s| Selection::valence_matches(valences, &s.situation))
        .collect();
    Ok((Some(set), chosen))
}

/// The instrument named by `key`, else the study's own.
fn instrument_for(
    conn: &mut DbConnection,
    study: &Study,
    key: Option<&str>,
) -> Result<(InstrumentId, Instrument)> {
    match key {
        Some(key) => instruments::load(conn, key)?.ok_or_else(|| {
            invalid(format!(
                "no instrument {key:?} (see `emotionbench instruments list`; import \
                 questionnaires.json with `emotionbench import instruments`)"
            ))
        }),
        None => {
            let id = study.instrument_id;
            Ok((id, instruments::get(conn, id)?))
        }
    }
}

/// What `emotionbench run` asks for.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub study: String,
    /// An instrument key to use instead of the study's (e.g. one of the eight challenging
    /// scales on a PANAS study's situations).
    pub instrument: Option<String>,
    pub provider: String,
    pub model: String,
    pub template: String,
    pub repeats: u32,
    pub default_repeats: u32,
    pub selection: Selection,
    pub seed: Option<u64>,
    pub params: RunParams,
    /// One of the study's languages (#20, `--language`): every trial's situation in its text in
    /// that language, as `prompt show --language` shows it. `None`: the study's default.
    pub language: Option<String>,
}

/// A created run.
#[derive(Debug, Clone)]
pub struct Created {
    pub run: RunId,
    pub trials: usize,
    pub seed: u64,
    pub instrument: String,
    /// The language the run asks in, when one was named.
    pub language: Option<crate::domain::language::Lang>,
    /// The emotion whose situations an emotion-specific scale took by default.
    pub scale_emotion: Option<&'static str>,
    /// Where the model's requests differ from what was asked (a model that takes no
    /// temperature, a raised token cap), to show before the run starts.
    pub notes: Vec<String>,
}

/// Creates a run with all its trials and records the provider's config and the audit entry, in
/// one transaction.
pub fn create(
    conn: &mut DbConnection,
    settings: &Settings,
    req: &RunRequest,
    actor: &audit::Actor,
) -> Result<Created> {
    let provider = settings.provider(&req.provider).map_err(invalid)?;
    if req.model.trim().is_empty() {
        return Err(invalid("the model name is empty"));
    }
    if req.params.max_cost_micros.is_some() && !has_prices(provider) {
        return Err(invalid(no_prices(provider)));
    }
    if req.params.batch && !crate::llm::batch::supported(provider.kind) {
        return Err(invalid(format!(
            "--batch: provider {:?} is {}; batches go to OpenAI-compatible and Anthropic \
             providers (their batch APIs)",
            provider.name,
            provider.kind.as_str()
        )));
    }
    let protocol = req.params.protocol;
    if protocol.is_conversation() && req.params.batch {
        // A batch holds requests known in advance; a conversation's second request carries
        // the model's first reply.
        return Err(invalid(format!(
            "--batch sends requests known in advance; the {protocol} protocol's second request \
             needs the model's first reply: run it without --batch"
        )));
    }
    let template = resolve_template(&req.template)?;
    if protocol.is_conversation() && matches!(template, Template::Custom(_)) {
        return Err(invalid(format!(
            "a custom template words the paper's separate prompts; the {protocol} protocol asks \
             with the survey's own texts"
        )));
    }
    let study = study(conn, &req.study)?;
    let language = study_language(&study, req.language.as_deref())?;
    let (instrument_id, instrument) = instrument_for(conn, &study, req.instrument.as_deref())?;
    if instrument.is_free_text() && protocol != Protocol::Paper {
        return Err(invalid(format!(
            "{} is a free-text task: it is asked as separate prompts (the paper protocol),              not as a {protocol} conversation",
            instrument.key
        )));
    }
    if protocol == Protocol::Persona {
        return create_persona(
            conn,
            settings,
            (req, language),
            &study,
            (instrument_id, instrument),
            actor,
        );
    }
    let (set, chosen) = if req.repeats > 0 {
        select(
            conn,
            &study,
            (&req.selection, &req.params.valences),
            &instrument,
        )?
    } else {
        (study.situation_set_id, Vec::new())
    };
    if protocol == Protocol::WithinSession && req.repeats == 0 {
        return Err(invalid(
            "a within-session run needs --repeats: conversations per situation",
        ));
    }
    if req.repeats > 0 && chosen.is_empty() {
        let scale = match instrument.target_emotion() {
            Some(e) => format!(" ({} takes {e} situations)", instrument.key),
            None => String::new(),
        };
        let valence = if req.params.valences.is_empty() {
            String::new()
        } else {
            let v: Vec<&str> = req.params.valences.iter().map(|v| v.as_str()).collect();
            format!(" with valence {}", v.join(","))
        };
        return Err(invalid(format!(
            "no situations match {}{valence} in study {}{scale}",
            req.selection, req.study
        )));
    }
    if req.repeats == 0 && req.default_repeats == 0 {
        return Err(invalid("a run with no repeats has no trials"));
    }
    // Seeds are stored as BIGINT: keep them in i64's positive range.
    let seed = req.seed.unwrap_or_else(|| u64::from(rand::random::<u32>())) & (i64::MAX as u64);
    let keys: Vec<&str> = chosen.iter().map(|s| s.situation.key.as_str()).collect();
    let (plan, default_repeats) = match protocol {
        // One trial per target: its item order is the target it asks about.
        _ if instrument.is_free_text() => (
            crate::domain::freetext::plan(
                &keys,
                req.repeats,
                req.default_repeats,
                u32::try_from(instrument.items.len()).unwrap_or(u32::MAX),
            ),
            req.default_repeats,
        ),
        Protocol::WithinSession => (
            plan_within_session(&keys, req.repeats, seed, instrument.items.len()),
            // The first questionnaire of each conversation is its default measure.
            0,
        ),
        _ => (
            plan_trials(
                &keys,
                req.repeats,
                req.default_repeats,
                seed,
                instrument.items.len(),
            ),
            req.default_repeats,
        ),
    };
    let trials = new_trials(&plan, &chosen);
    check_texts(conn, &study, set, language.as_ref(), &trials)?;
    let shape = Shape {
        set,
        template,
        repeats: req.repeats,
        default_repeats,
        seed,
        free_text: instrument.is_free_text(),
        language: language.clone(),
    };
    let (new, notes) = new_run(provider, req, &study, instrument_id, shape)?;
    let run = insert(conn, provider, req, &new, &trials, actor)?;
    let whole_set = matches!(
        req.selection,
        Selection::All | Selection::Tested | Selection::Set(_)
    );
    Ok(Created {
        run,
        trials: trials.len(),
        seed,
        scale_emotion: instrument
            .target_emotion()
            .filter(|_| whole_set && req.repeats > 0),
        instrument: instrument.key,
        language,
        notes,
    })
}

/// Refuses a run in a language other than the study's default when a situation one of its
/// trials shows has no text in it, naming the situations (the runner would fail those trials).
fn check_texts(
    conn: &mut DbConnection,
    study: &Study,
    set: Option<SituationSetId>,
    language: Option<&Lang>,
    trials: &[NewTrial],
) -> Result<()> {
    // Without a set (a run of default-measure trials only) no situation is shown.
    let (Some(set), Some(lang)) = (
        set,
        crate::domain::language::translation(language, study.languages()),
    ) else {
        return Ok(());
    };
    let missing: Vec<String> = situation_texts::missing(conn, set, std::slice::from_ref(lang))
        .map_err(crate::store::StoreError::from)?
        .into_iter()
        .map(|(_, key)| key)
        .filter(|key| trials.iter().any(|t| t.situation_key == *key))
        .collect();
    match missing.as_slice() {
        [] => Ok(()),
        [one] => Err(invalid(format!(
            "the situation {one} has no text in {lang} (import the set's texts in {lang} with \
             `emotionbench import situations FILE --set NAME --language {lang}`)"
        ))),
        many => Err(invalid(format!(
            "{} situations of the run have no text in {lang}: {} (import the set's texts in \
             {lang} with `emotionbench import situations FILE --set NAME --language {lang}`)",
            many.len(),
            many.join(", ")
        ))),
    }
}

/// The rows of planned trials over the run's situations.
fn new_trials(plan: &[PlannedTrial], chosen: &[StoredSituation]) -> Vec<NewTrial> {
    plan.iter()
        .map(|p| NewTrial {
            measure: p.measure,
            situation_id: p.situation.and_then(|i| chosen.get(i)).map(|s| s.id),
            situation_key: p.situation_key.clone(),
            repeat: i32::try_from(p.repeat).unwrap_or(i32::MAX),
            item_order: Json(p.item_order.clone()),
            before_order: p.before_order.clone().map(Json),
            persona: p.persona.clone().map(Json),
        })
        .collect()
}

/// What a run is made of besides its request.
struct Shape {
    set: Option<SituationSetId>,
    template: Template,
    repeats: u32,
    default_repeats: u32,
    seed: u64,
    /// A free-text task's run: worded by the task, not a template.
    free_text: bool,
    /// The language asked for (recorded even when it is the study's default).
    language: Option<Lang>,
}

/// The run row and the notes on what its requests send.
fn new_run(
    provider: &crate::config::ProviderConfig,
    req: &RunRequest,
    study: &Study,
    instrument_id: InstrumentId,
    shape: Shape,
) -> Result<(NewRun, Vec<String>)> {
    let mut params = req.params.clone();
    if let Template::Custom(c) = &shape.template {
        params.custom_template = Some(c.clone());
    }
    let sent = profiles::plan(provider, &req.model, &params).map_err(invalid)?;
    let notes = sent.notes.clone();
    let protocol = params.protocol;
    let manifest = RunManifest {
        requested: params,
        sent: Some(sent),
    };
    // A conversation is worded by the survey's texts, not a template: the column names the
    // protocol, so lists and reports say how the run asked.
    let template = if protocol.is_conversation() {
        protocol.as_str().to_owned()
    } else if shape.free_text {
        crate::domain::freetext::RUN_TEMPLATE.to_owned()
    } else {
        shape.template.name()
    };
    let new = NewRun {
        study_id: Some(study.id),
        provider: provider.name.clone(),
        model: req.model.trim().to_owned(),
        instrument_id,
        situation_set_id: shape.set,
        template,
        params: Json(Some(manifest)),
        selection: serde_json::to_string(&req.selection).map_err(|e| invalid(e.to_string()))?,
        repeats: i32::try_from(shape.repeats).map_err(|_| invalid("too many repeats"))?,
        default_repeats: i32::try_from(shape.default_repeats)
            .map_err(|_| invalid("too many default repeats"))?,
        seed: shape.seed as i64,
        language: shape.language.map(String::from),
    };
    Ok((new, notes))
}

/// Stores the run and its trials with the audit entry, in one transaction.
fn insert(
    conn: &mut DbConnection,
    provider: &crate::config::ProviderConfig,
    req: &RunRequest,
    new: &NewRun,
    trials: &[NewTrial],
    actor: &audit::Actor,
) -> Result<RunId> {
    conn.write_transaction(|conn| {
        runs::upsert_provider(conn, provider)?;
        let run = runs::create(conn, new, trials)?;
        audit::record(
            conn,
            actor,
            "run.create",
            Some(&run.0.to_string()),
            Some(&serde_json::json!({
                "study": req.study,
                "provider": req.provider,
                "model": req.model,
                "protocol": req.params.protocol,
                "language": new.language,
                "trials": trials.len(),
            })),
        )?;
        Ok::<_, Error>(run)
    })
}

/// A persona run: one conversation per completed participant of the study who answered the
/// demographic questions, on the situation they saw, in the item orders they were shown.
fn create_persona(
    conn: &mut DbConnection,
    settings: &Settings,
    (req, language): (&RunRequest, Option<Lang>),
    study: &Study,
    (instrument_id, instrument): (InstrumentId, Instrument),
    actor: &audit::Actor,
) -> Result<Created> {
    let provider = settings.provider(&req.provider).map_err(invalid)?;
    let set = study
        .situation_set_id
        .ok_or_else(|| invalid(format!("study {} has no situations", req.study)))?;
    let situations = situations::list(conn, set)?;
    let seats = persona_seats(conn, study, &situations, instrument.items.len())?;
    if seats.is_empty() {
        return Err(invalid(format!(
            "study {} has no completed participant with demographic answers to take as a persona",
            req.study
        )));
    }
    let seed = req.seed.unwrap_or_else(|| u64::from(rand::random::<u32>())) & (i64::MAX as u64);
    let plan = plan_personas(seats);
    let trials = new_trials(&plan, &situations);
    check_texts(conn, study, Some(set), language.as_ref(), &trials)?;
    let shape = Shape {
        set: Some(set),
        template: Template::EbCode,
        repeats: 1,
        default_repeats: 0,
        seed,
        free_text: false,
        language: language.clone(),
    };
    let (new, notes) = new_run(provider, req, study, instrument_id, shape)?;
    let run = insert(conn, provider, req, &new, &trials, actor)?;
    Ok(Created {
        run,
        trials: trials.len(),
        seed,
        scale_emotion: None,
        instrument: instrument.key,
        language,
        notes,
    })
}

/// The study's participants as personas, each with the index of their situation in
/// `situations` and the orders they were shown (canonical where none was stored, or the run
/// uses another instrument than the one they answered).
fn persona_seats(
    conn: &mut DbConnection,
    study: &Study,
    situations: &[StoredSituation],
    items: usize,
) -> Result<Vec<PersonaSeat>> {
    let order = |o: &Option<crate::store::columns::ItemOrder>| {
        o.as_ref()
            .map(|o| o.0.clone())
            .filter(|o| o.len() == items)
            .unwrap_or_else(|| canonical_order(items))
    };
    let mut seats = Vec::new();
    for source in personas::sources(conn, study.id)? {
        let Some(index) = situations.iter().position(|s| s.id == source.situation_id) else {
            return Err(invalid(format!(
                "participant {}'s situation is not in the study's situation set",
                source.export_id
            )));
        };
        let year = source.completed_at.unwrap_or(source.created_at).year();
        let persona = Persona::from_json(&source.export_id, &source.demographics.0, year);
        if persona.is_empty() {
            continue;
        }
        seats.push(PersonaSeat {
            persona,
            situation: index,
            situation_key: situations[index].situation.key.clone(),
            before_order: order(&source.order_default),
            after_order: order(&source.order_evoked),
        });
    }
    Ok(seats)
}

/// The notes `create` would give for this request, without making the run: a form shows them
/// for confirmation first, since a server's workers start on a new run at once. Err: the
/// request cannot be sent as asked (an unknown provider, a temperature outside the API's range).
pub fn notes(settings: &Settings, req: &RunRequest) -> Result<Vec<String>> {
    let provider = settings.provider(&req.provider).map_err(invalid)?;
    Ok(profiles::plan(provider, &req.model, &req.params)
        .map_err(invalid)?
        .notes)
}

/// The notes recorded when the run was made. Runs made before profiles recorded none.
pub fn recorded_notes(run: &runs::Run) -> Result<Vec<String>> {
    // The column decoded when the run was loaded (an undecodable one is `Corrupt` there).
    Ok(run
        .params
        .0
        .as_ref()
        .and_then(|m| m.sent.as_ref())
        .map(|s| s.notes.clone())
        .unwrap_or_default())
}

/// A change of a run's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunAction {
    /// Stop claiming new trials (trials in flight finish).
    Pause,
    /// Queue a paused, interrupted, failed or cancelled run again.
    Resume,
    /// Its pending trials are never sent.
    Cancel,
}

impl RunAction {
    pub fn as_str(self) -> &'static str {
        match self {
            RunAction::Pause => "pause",
            RunAction::Resume => "resume",
            RunAction::Cancel => "cancel",
        }
    }

    /// `pause`, `resume` or `cancel`.
    pub fn parse(s: &str) -> Option<RunAction> {
        [RunAction::Pause, RunAction::Resume, RunAction::Cancel]
            .into_iter()
            .find(|a| a.as_str() == s)
    }
}

/// Pauses, resumes or cancels run `id` and records it in the audit log, in one transaction.
/// A run that does not exist is [`Error::NoRun`].
pub fn change(
    conn: &mut DbConnection,
    id: RunId,
    action: RunAction,
    actor: &audit::Actor,
) -> Result<runs::Run> {
    conn.write_transaction(|conn| {
        if runs::get(conn, id)?.is_none() {
            return Err(Error::NoRun(id.0));
        }
        let run = match action {
            RunAction::Pause => runs::pause(conn, id)?,
            RunAction::Resume => runs::resume(conn, id)?,
            RunAction::Cancel => runs::cancel(conn, id)?,
        };
        audit::record(
            conn,
            actor,
            &format!("run.{}", action.as_str()),
            Some(&id.0.to_string()),
            None,
        )?;
        Ok(run)
    })
}

/// A budget counts recorded costs, which need the provider's prices: without them every
/// trial costs "unknown" and the limit would never be reached.
fn has_prices(p: &crate::config::ProviderConfig) -> bool {
    p.price_input_per_mtok.is_some() || p.price_output_per_mtok.is_some()
}

fn no_prices(p: &crate::config::ProviderConfig) -> String {
    format!(
        "a budget needs provider {:?}'s prices: set price_input_per_mtok and \
         price_output_per_mtok (USD per million tokens) in its [[providers]] entry",
        p.name
    )
}

/// Sets run `id`'s budget (micro-USD) and records it in the audit log; the run's workers read
/// it before their next claim.
pub fn set_budget(
    conn: &mut DbConnection,
    id: RunId,
    micros: i64,
    actor: &audit::Actor,
) -> Result<()> {
    conn.write_transaction(|conn| {
        if runs::get(conn, id)?.is_none() {
            return Err(Error::NoRun(id.0));
        }
        runs::set_max_cost(conn, id, micros)?;
        audit::record(
            conn,
            actor,
            "run.budget",
            Some(&id.0.to_string()),
            Some(&serde_json::json!({ "max_cost_micros": micros })),
        )?;
        Ok(())
    })
}

/// What `emotionbench prompt show` asks for.
#[derive(Debug, Clone)]
pub struct PromptRequest {
    pub study: String,
    /// An instrument key instead of the study's, as `run --instrument`.
    pub instrument: Option<String>,
    pub measure: Measure,
    /// Default: the first situation of the study's set (evoked measure only).
    pub situation: Option<String>,
    pub template: String,
    /// None: the canonical item order (upstream's order 0); Some: the order a run with this
    /// seed gives repeat `repeat` of the trial.
    pub seed: Option<u64>,
    pub repeat: u32,
    /// One of the study's languages (#20): the situation's text in it. `None`: the study's
    /// default, the set's own texts.
    pub language: Option<String>,
}

/// The language asked for (`--language`), checked: one of the study's, else refused naming
/// them. Runs, prompts and exports all check it so.
pub(crate) fn study_language(study: &Study, asked: Option<&str>) -> Result<Option<Lang>> {
    let Some(asked) = asked else {
        return Ok(None);
    };
    let lang = Lang::parse(asked).map_err(invalid)?;
    let langs = study.languages();
    if !langs.contains(&lang) {
        let list: Vec<&str> = langs.iter().map(|l| l.as_str()).collect();
        return Err(invalid(format!(
            "the study {} is not in {lang}; its languages: {}",
            study.slug,
            list.join(", ")
        )));
    }
    Ok(Some(lang))
}

/// The language a prompt is asked for, when it is one of the study's other languages (the
/// default's texts are the set's own); refused when the study does not have it.
fn prompt_language(study: &Study, asked: Option<&str>) -> Result<Option<Lang>> {
    let lang = study_language(study, asked)?;
    Ok(crate::domain::language::translation(lang.as_ref(), study.languages()).cloned())
}

/// The exact messages of one trial.
pub fn prompt_messages(conn: &mut DbConnection, req: &PromptRequest) -> Result<Vec<ChatMessage>> {
    let template = resolve_template(&req.template)?;
    let study = study(conn, &req.study)?;
    let (id, own) = instrument_for(conn, &study, req.instrument.as_deref())?;
    let lang = prompt_language(&study, req.language.as_deref())?;
    // The instrument's items and labels in the language when it has a translation there
    // (#20), as the runner asks them.
    let instrument = match &lang {
        Some(l) => match crate::store::instrument_texts::translation(conn, id, &own, l.as_str())? {
            Some(t) => t.apply(&own),
            None => own,
        },
        None => own,
    };
    let (key, text) = match req.measure {
        Measure::Default => (String::new(), None),
        Measure::Evoked => {
            let set = study
                .situation_set_id
                .ok_or_else(|| invalid(format!("study {} has no situations", req.study)))?;
            let list = situations::list(conn, set)?;
            let emotion = instrument.target_emotion();
            let found = match &req.situation {
                Some(k) => list.into_iter().find(|s| &s.situation.key == k),
                // An emotion-specific scale's first situation of its own emotion.
                None => list
                    .into_iter()
                    .find(|s| emotion.is_none_or(|e| s.situation.emotion.eq_ignore_ascii_case(e))),
            }
            .ok_or_else(|| {
                invalid(format!(
                    "no situation {:?} in the study's set",
                    req.situation.as_deref().unwrap_or("")
                ))
            })?;
            let text = match &lang {
                None => found.situation.text,
                Some(lang) => situation_texts::text_in(conn, found.id.0, lang.as_str())
                    .map_err(crate::store::StoreError::from)?
                    .ok_or_else(|| {
                        invalid(format!(
                            "the situation {} has no text in {lang}",
                            found.situation.key
                        ))
                    })?,
            };
            (found.situation.key, Some(text))
        }
    };
    let n = instrument.items.len();
    let order = match req.seed {
        None => canonical_order(n),
        Some(seed) => trial_order(seed & (i64::MAX as u64), req.measure, &key, req.repeat, n),
    };
    render(&instrument, &template, req.measure, text.as_deref(), &order)
        .map_err(|e| invalid(e.to_string()))
}
