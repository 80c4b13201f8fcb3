//! Studies: the list, create and edit (admins), lifecycle (admins), the live monitor
//! (researchers), deletion of a participant or a whole study (admins, typed confirmation).

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use chrono::NaiveDate;

use super::{Admin, Nav, Researcher, actor, field};
use crate::app::{self, studies::StudyInput};
use crate::domain::language::Lang;
use crate::domain::study::{
    CONSENT_TEMPLATE, CheckItem, DEBRIEF_TEMPLATE, DEFAULT_FREE_TEXT_CHARS, FreeTextField,
    MAX_FREE_TEXT_CHARS, MAX_TEXT_BYTES, MAX_TITLE_BYTES, StudyConfig, StudyStatus, StudyTexts,
    launch_checklist,
};
use crate::store::StoreError;
use crate::store::instruments::{self, InstrumentSummary};
use crate::store::monitor::{self, Monitor};
use crate::store::participants::ParticipantBrief;
use crate::store::situations::{self, SetSummary};
use crate::store::studies::{self, Study, StudySummary};
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::render::{render, render_status, see_other};
use crate::web::state::AppState;

#[derive(Template)]
#[template(path = "admin/studies.html")]
struct ListPage {
    nav: Nav,
    studies: Vec<StudySummary>,
}

pub async fn list(state: web::Data<AppState>, user: Researcher) -> Result<HttpResponse, AppError> {
    let studies = state.db(|conn| Ok(studies::list_all(conn)?)).await?;
    render(ListPage {
        nav: Nav::of(user.session()),
        studies,
    })
}

/// The values shown in the study form.
#[derive(Clone)]
pub struct FormValues {
    pub slug: String,
    pub title: String,
    pub consent_text: String,
    pub debrief_text: String,
    pub instrument: String,
    pub set: String,
    pub target: String,
    pub shuffle: bool,
    pub check_ends: bool,
    pub pid_param: String,
    pub study_id_param: String,
    pub session_id_param: String,
    pub code_completed: String,
    pub code_no_consent: String,
    pub code_failed_check: String,
    pub code_screened_out: String,
    pub min_seconds: String,
    pub reservation_minutes: String,
    pub retention: String,
    /// The study's languages as typed (`en, de`), the default first (#20).
    pub languages: String,
    /// The valences participants are assigned, as typed (`negative`); empty for all (#18).
    pub valences: String,
    /// The free-text task asked on the situation page (#18), its key; empty for none.
    pub free_text_task: String,
    pub free_text_required: bool,
    /// The free-text limit in characters, as typed.
    pub free_text_max: String,
    /// The consent and debrief texts in the other languages as they stand or were posted, by
    /// tag (fields `consent_text_TAG`, `debrief_text_TAG`).
    pub translations: Vec<(String, StudyTexts)>,
}

/// The fields of one other language's consent and debrief texts in the study form.
pub struct TranslationField {
    pub tag: String,
    pub title: String,
    pub consent: String,
    pub debrief: String,
}

/// The form fields of a language's title, consent and debrief: the prefix, then its tag.
const TITLE_PREFIX: &str = "title_";
const CONSENT_PREFIX: &str = "consent_text_";
const DEBRIEF_PREFIX: &str = "debrief_text_";

impl FormValues {
    fn of(
        c: &StudyConfig,
        instrument: &str,
        set: &str,
        retention: Option<chrono::NaiveDateTime>,
    ) -> Self {
        Self {
            slug: c.slug.clone(),
            title: c.title.clone(),
            consent_text: c.consent_text.clone(),
            debrief_text: c.debrief_text.clone(),
            instrument: instrument.to_owned(),
            set: set.to_owned(),
            target: c.target_per_situation.to_string(),
            shuffle: c.shuffle_items,
            check_ends: c.attention_check_ends,
            pid_param: c.pid_param.clone(),
            study_id_param: c.study_id_param.clone(),
            session_id_param: c.session_id_param.clone(),
            code_completed: c.code_completed.clone().unwrap_or_default(),
            code_no_consent: c.code_no_consent.clone().unwrap_or_default(),
            code_failed_check: c.code_failed_check.clone().unwrap_or_default(),
            code_screened_out: c.code_screened_out.clone().unwrap_or_default(),
            min_seconds: c.min_situation_seconds.to_string(),
            reservation_minutes: c.reservation_minutes.to_string(),
            retention: retention.map(|d| d.date().to_string()).unwrap_or_default(),
            languages: c
                .languages
                .iter()
                .map(|l| l.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            valences: c
                .valences
                .iter()
                .map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            free_text_task: c
                .free_text
                .as_ref()
                .map(|f| f.task.clone())
                .unwrap_or_default(),
            free_text_required: c.free_text.as_ref().is_some_and(|f| f.required),
            free_text_max: c
                .free_text
                .as_ref()
                .map_or(DEFAULT_FREE_TEXT_CHARS, |f| f.max_chars)
                .to_string(),
            translations: c
                .translations
                .iter()
                .map(|(l, t)| (l.to_string(), t.clone()))
                .collect(),
        }
    }

    /// The other languages' text fields the form shows: one pair for each language after the
    /// first of the languages as typed, holding what is stored or was posted for it; while the
    /// typed list does not parse, those that were posted (so nothing typed is lost).
    pub fn translation_fields(&self) -> Vec<TranslationField> {
        let field = |tag: &str| {
            let t = self
                .translations
                .iter()
                .find(|(t, _)| t == tag)
                .map(|(_, t)| t.clone())
                .unwrap_or_default();
            TranslationField {
                tag: tag.to_owned(),
                title: t.title,
                consent: t.consent,
                debrief: t.debrief,
            }
        };
        match crate::domain::language::split_list(self.languages.trim()) {
            Ok(langs) => langs.iter().skip(1).map(|l| field(l.as_str())).collect(),
            Err(_) => self.translations.iter().map(|(t, _)| field(t)).collect(),
        }
    }

    /// The configuration's translations from the form's: those of the other languages of
    /// `languages`, line ends normalised; a language with both texts blank has none.
    fn translations_for(&self, languages: &[Lang]) -> BTreeMap<Lang, StudyTexts> {
        languages
            .iter()
            .skip(1)
            .filter_map(|l| {
                let (_, t) = self.translations.iter().find(|(t, _)| t == l.as_str())?;
                let t = StudyTexts {
                    title: t.title.trim().to_owned(),
                    consent: t.consent.replace("\r\n", "\n"),
                    debrief: t.debrief.replace("\r\n", "\n"),
                };
                let blank = [&t.title, &t.consent, &t.debrief]
                    .iter()
                    .all(|s| s.trim().is_empty());
                (!blank).then(|| (l.clone(), t))
            })
            .collect()
    }

    fn from_form(f: &[(String, String)]) -> Self {
        let g = |n: &str| field(f, n).unwrap_or("").to_owned();
        Self {
            slug: g("slug"),
            title: g("title"),
            consent_text: g("consent_text"),
            debrief_text: g("debrief_text"),
            instrument: g("instrument"),
            set: g("set"),
            target: g("target"),
            shuffle: field(f, "shuffle") == Some("on"),
            check_ends: field(f, "check_ends") == Some("on"),
            pid_param: g("pid_param"),
            study_id_param: g("study_id_param"),
            session_id_param: g("session_id_param"),
            code_completed: g("code_completed"),
            code_no_consent: g("code_no_consent"),
            code_failed_check: g("code_failed_check"),
            code_screened_out: g("code_screened_out"),
            min_seconds: g("min_seconds"),
            reservation_minutes: g("reservation_minutes"),
            retention: g("retention"),
            languages: g("languages"),
            valences: g("valences"),
            free_text_task: g("free_text_task"),
            free_text_required: field(f, "free_text_required") == Some("on"),
            free_text_max: g("free_text_max"),
            translations: posted_translations(f),
        }
    }

    /// The launch checklist of the values as typed (a value that does not parse counts as
    /// missing), so the form shows what opening will need.
    fn checklist(&self) -> Vec<CheckItem> {
        let mut c = StudyConfig::new(self.slug.trim(), self.title.trim());
        c.consent_text = self.consent_text.clone();
        c.debrief_text = self.debrief_text.clone();
        if let Ok(l) = crate::domain::language::split_list(self.languages.trim()) {
            c.translations = self.translations_for(&l);
            c.languages = l;
        }
        c.pid_param = self.pid_param.trim().to_owned();
        c.code_completed = Some(self.code_completed.trim().to_owned()).filter(|s| !s.is_empty());
        let retention = NaiveDate::parse_from_str(self.retention.trim(), "%Y-%m-%d").ok();
        launch_checklist(&c, retention, app::studies::today())
    }

    /// Parses into a configuration, or the list of problems.
    fn parse(&self) -> Result<(StudyConfig, Option<NaiveDate>), Vec<String>> {
        let mut errors = Vec::new();
        let int = |v: &str, what: &str, errors: &mut Vec<String>| -> i32 {
            v.trim().parse().unwrap_or_else(|_| {
                errors.push(format!("{what} must be a whole number."));
                0
            })
        };
        let code = |v: &str| Some(v.trim().to_owned()).filter(|s| !s.is_empty());
        let param_ok = |v: &str| {
            !v.is_empty()
                && v.len() <= 64
                && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        let mut c = StudyConfig::new(self.slug.trim(), self.title.trim());
        c.consent_text = self.consent_text.replace("\r\n", "\n");
        c.debrief_text = self.debrief_text.replace("\r\n", "\n");
        c.target_per_situation = int(&self.target, "The target per situation", &mut errors);
        c.shuffle_items = self.shuffle;
        c.attention_check_ends = self.check_ends;
        for (v, what) in [
            (&self.pid_param, "participant"),
            (&self.study_id_param, "study"),
            (&self.session_id_param, "session"),
        ] {
            if !param_ok(v.trim()) {
                errors.push(format!(
                    "The {what} id parameter name must be letters, digits or '_'."
                ));
            }
        }
        c.pid_param = self.pid_param.trim().to_owned();
        c.study_id_param = self.study_id_param.trim().to_owned();
        c.session_id_param = self.session_id_param.trim().to_owned();
        c.code_completed = code(&self.code_completed);
        c.code_no_consent = code(&self.code_no_consent);
        c.code_failed_check = code(&self.code_failed_check);
        c.code_screened_out = code(&self.code_screened_out);
        for v in [
            &c.code_completed,
            &c.code_no_consent,
            &c.code_failed_check,
            &c.code_screened_out,
        ]
        .into_iter()
        .flatten()
        {
            if v.len() > 64
                || !v
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_')
            {
                errors.push(format!(
                    "Completion code {v:?} may use only letters, digits, '-' and '_'."
                ));
            }
        }
        c.min_situation_seconds = int(&self.min_seconds, "The minimum situation time", &mut errors);
        c.reservation_minutes = int(
            &self.reservation_minutes,
            "The reservation timeout",
            &mut errors,
        );
        // Empty: the default, English (a form from before languages had no such field).
        match self.languages.trim() {
            "" => {}
            typed => match crate::domain::language::split_list(typed) {
                Ok(l) => c.languages = l,
                Err(e) => errors.push(format!("Languages: {e}.")),
            },
        }
        // Empty: every situation of the set (a form from before valences had no such field).
        match self.valences.trim() {
            "" => c.valences = Vec::new(),
            typed => match crate::domain::situation::Valence::parse_list(typed) {
                Ok(v) => c.valences = v,
                Err(e) => errors.push(format!("Valences: {e}.")),
            },
        }
        // No task: no field (a form from before free text had none of these fields).
        c.free_text = match self.free_text_task.trim() {
            "" => None,
            task => match self.free_text_max.trim() {
                "" => Some(DEFAULT_FREE_TEXT_CHARS),
                typed => typed.parse::<u32>().ok(),
            }
            .map(|max_chars| FreeTextField {
                task: task.to_owned(),
                required: self.free_text_required,
                max_chars,
            })
            .or_else(|| {
                errors.push(format!(
                    "The free-text limit must be a whole number of characters, at most \
                     {MAX_FREE_TEXT_CHARS}."
                ));
                None
            }),
        };
        c.translations = self.translations_for(&c.languages);
        let too_long = |t: &str| t.len() > MAX_TEXT_BYTES;
        if too_long(&c.consent_text)
            || too_long(&c.debrief_text)
            || c.translations.values().any(|t| {
                too_long(&t.consent) || too_long(&t.debrief) || t.title.len() > MAX_TITLE_BYTES
            })
            || c.title.len() > MAX_TITLE_BYTES
        {
            errors.push("A text is too long.".into());
        }
        let retention = match self.retention.trim() {
            "" => None,
            d => match NaiveDate::parse_from_str(d, "%Y-%m-%d") {
                Ok(d) => Some(d),
                Err(_) => {
                    errors.push("The retention date must look like 2027-12-31.".into());
                    None
                }
            },
        };
        if let Err(e) = c.validate() {
            errors.push(e);
        }
        if errors.is_empty() {
            Ok((c, retention))
        } else {
            Err(errors)
        }
    }
}

/// The other languages' consent and debrief fields of a posted form, by tag, in the order
/// they came (a tag is whatever follows the field's prefix; [`FormValues::translations_for`]
/// keeps only the study's languages).
fn posted_translations(f: &[(String, String)]) -> Vec<(String, StudyTexts)> {
    let mut out: Vec<(String, StudyTexts)> = Vec::new();
    for (name, value) in f {
        let pick: fn(&mut StudyTexts) -> &mut String;
        let tag = if let Some(tag) = name.strip_prefix(CONSENT_PREFIX) {
            pick = |t| &mut t.consent;
            tag
        } else if let Some(tag) = name.strip_prefix(DEBRIEF_PREFIX) {
            pick = |t| &mut t.debrief;
            tag
        } else if let Some(tag) = name.strip_prefix(TITLE_PREFIX) {
            pick = |t| &mut t.title;
            tag
        } else {
            continue;
        };
        let i = match out.iter().position(|(t, _)| t == tag) {
            Some(i) => i,
            None => {
                out.push((tag.to_owned(), StudyTexts::default()));
                out.len() - 1
            }
        };
        *pick(&mut out[i].1) = value.clone();
    }
    out
}

#[derive(Template)]
#[template(path = "admin/study_form.html")]
struct FormPage {
    nav: Nav,
    creating: bool,
    checklist: Vec<CheckItem>,
    values: FormValues,
    instruments: Vec<InstrumentSummary>,
    sets: Vec<SetSummary>,
    errors: Vec<String>,
}

async fn choices(state: &AppState) -> Result<(Vec<InstrumentSummary>, Vec<SetSummary>), AppError> {
    state
        .db(|conn| {
            // Both kinds: the form offers the rated questionnaires as the study's instrument
            // and the free-text tasks for the situation page's field (#18).
            Ok((instruments::list(conn)?, situations::sets(conn)?))
        })
        .await
}

pub async fn new_form(state: web::Data<AppState>, admin: Admin) -> Result<HttpResponse, AppError> {
    let (instruments, sets) = choices(&state).await?;
    let mut c = StudyConfig::new("", "");
    c.consent_text = CONSENT_TEMPLATE.to_owned();
    c.debrief_text = DEBRIEF_TEMPLATE.to_owned();
    let values = FormValues::of(
        &c,
        "PANAS",
        sets.first().map(|s| s.name.as_str()).unwrap_or(""),
        None,
    );
    render(FormPage {
        nav: Nav::of(admin.session()),
        creating: true,
        checklist: values.checklist(),
        values,
        instruments,
        sets,
        errors: Vec::new(),
    })
}

pub async fn create(
    state: web::Data<AppState>,
    admin: Admin,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    save(state, admin, form, None).await
}

/// Creates a study (`existing` None, as a draft) or changes one: parse the form, resolve the
/// instrument and set, write with an audit entry in one transaction, then show the study — or
/// the form again with what is wrong.
async fn save(
    state: web::Data<AppState>,
    admin: Admin,
    form: web::Form<Vec<(String, String)>>,
    existing: Option<Study>,
) -> Result<HttpResponse, AppError> {
    csrf::check_session(&admin.session().csrf_token, &form)?;
    let mut values = FormValues::from_form(&form);
    if let Some(study) = &existing {
        // The slug stays (links have been shared), and so do the demographic fields.
        values.slug = study.slug.clone();
    }
    let who = actor(admin.session());
    let outcome = match values.parse() {
        Err(errors) => Err(errors),
        Ok((mut config, retention)) => {
            if let Some(study) = &existing {
                config.demographics = study.demographic_fields();
            }
            let id = existing.as_ref().map(|s| s.id);
            let input = StudyInput {
                config,
                instrument: values.instrument.clone(),
                set: values.set.clone(),
                retention,
            };
            let saved = state
                .db(move |conn| {
                    Ok(match id {
                        None => app::studies::create(conn, &input, &who),
                        Some(id) => app::studies::update(conn, id, &input, &who),
                    })
                })
                .await?;
            // What is wrong with the form goes back to the form; the rest is an error.
            match saved {
                Ok(slug) => Ok(slug),
                Err(app::Error::Invalid(m) | app::Error::Store(StoreError::Conflict(m))) => {
                    Err(vec![m])
                }
                Err(e) => return Err(e.into()),
            }
        }
    };
    match outcome {
        Ok(slug) => {
            state.forget_study(&slug);
            Ok(see_other(&format!("/admin/studies/{slug}")))
        }
        Err(errors) => {
            let (instruments, sets) = choices(&state).await?;
            render_status(
                FormPage {
                    nav: Nav::of(admin.session()),
                    creating: existing.is_none(),
                    checklist: values.checklist(),
                    values,
                    instruments,
                    sets,
                    errors,
                },
                StatusCode::UNPROCESSABLE_ENTITY,
            )
        }
    }
}

pub(super) async fn load_study(state: &AppState, slug: &str) -> Result<Study, AppError> {
    let slug = slug.to_owned();
    state
        .db(move |conn| Ok(studies::load(conn, &slug)?))
        .await?
        .ok_or(AppError::NotFound)
}

pub async fn edit_form(
    state: web::Data<AppState>,
    admin: Admin,
    slug: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let study = load_study(&state, &slug).await?;
    let (instruments, sets) = choices(&state).await?;
    let inst = instruments
        .iter()
        .find(|i| i.id == study.instrument_id)
        .map(|i| i.key.clone())
        .unwrap_or_default();
    let set = sets
        .iter()
        .find(|s| Some(s.id) == study.situation_set_id)
        .map(|s| s.name.clone())
        .unwrap_or_default();
    let values = FormValues::of(&study.config(), &inst, &set, study.retention_until);
    render(FormPage {
        nav: Nav::of(admin.session()),
        creating: false,
        checklist: values.checklist(),
        values,
        instruments,
        sets,
        errors: Vec::new(),
    })
}

pub async fn update(
    state: web::Data<AppState>,
    admin: Admin,
    slug: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    let study = load_study(&state, &slug).await?;
    save(state, admin, form, Some(study)).await
}

pub async fn set_status(
    state: web::Data<AppState>,
    req: HttpRequest,
    admin: Admin,
    slug: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_session(&admin.session().csrf_token, &form)?;
    let study = load_study(&state, &slug).await?;
    let status: StudyStatus = field(&form, "status")
        .unwrap_or("")
        .parse()
        .map_err(AppError::BadRequest)?;
    let who = actor(admin.session());
    let (id, slug2) = (study.id, study.slug.clone());
    let done = state
        .db(move |conn| Ok(app::studies::set_status(conn, id, &slug2, status, &who)))
        .await?;
    state.forget_study(&study.slug);
    match done {
        Ok(()) => Ok(see_other(&format!("/admin/studies/{}", study.slug))),
        // Not ready to open: the monitor again, its checklist naming what is missing (the
        // use case's message lists the same items, for the command line).
        Err(app::Error::Invalid(_)) => {
            let page = monitor_page(&state, &req, Nav::of(admin.session()), study).await?;
            render_status(
                MonitorPage {
                    error: Some(
                        "The study cannot open yet: the launch checklist below names what is \
                         missing."
                            .into(),
                    ),
                    ..page
                },
                StatusCode::UNPROCESSABLE_ENTITY,
            )
        }
        Err(e) => Err(e.into()),
    }
}

#[derive(Template)]
#[template(path = "admin/monitor.html")]
struct MonitorPage {
    nav: Nav,
    study: Study,
    monitor: Monitor,
    /// Evidence counts over the latest completions (`app::evidence::monitor_counts`).
    evidence: app::evidence::MonitorEvidence,
    checklist: Vec<CheckItem>,
    /// The absolute participant link, and the same with Prolific's placeholders.
    participant_url: String,
    prolific_url: String,
    /// The study's pilot link (issue #13, point 4).
    pilot_url: String,
    error: Option<String>,
}

impl MonitorPage {
    fn ready(&self) -> bool {
        self.checklist.iter().all(|i| i.ok)
    }

    /// The headline: completions that count towards the target (the per-situation counts).
    fn done(&self) -> i64 {
        self.monitor.factors.iter().map(|f| f.completed).sum()
    }

    fn target(&self) -> i64 {
        self.monitor.factors.iter().map(|f| f.target).sum()
    }

    /// Whole percent of the target, at most 100 (past it, the numbers say so).
    fn percent(&self) -> i64 {
        match self.target() {
            t if t > 0 => (self.done() * 100 / t).min(100),
            _ => 0,
        }
    }

    /// Active participants holding a place: the sum of the per-situation column.
    fn in_progress(&self) -> i64 {
        self.monitor.situations.iter().map(|s| s.active).sum()
    }

    /// Active participants whose reservation ran out (they may still come back).
    fn stalled(&self) -> i64 {
        (self.monitor.counts.active - self.in_progress()).max(0)
    }

    fn chart(&self) -> Option<String> {
        super::monitor_chart::completions_svg(&self.monitor.timeline)
    }

    fn per_bucket(&self) -> String {
        super::monitor_chart::width_words(self.monitor.timeline.width_seconds)
    }

    /// A funnel row's name.
    fn page_label(&self, page: &crate::domain::survey::Page) -> &'static str {
        use crate::domain::survey::Page;
        match page {
            Page::Demographics => "About you (demographics)",
            Page::PanasBefore => "Feelings now (first questionnaire)",
            Page::Situation => "The situation",
            Page::PanasAfter => "Feelings after imagining (second questionnaire)",
            Page::Check => "Attention check",
            Page::Debrief => "Debrief",
            Page::Done => "Completed",
            _ => "Other",
        }
    }

    /// A funnel step's share of those who started (reached the first page after consent).
    fn share(&self, reached: &i64) -> i64 {
        match self.monitor.funnel.first().map(|f| f.reached) {
            Some(started) if started > 0 => reached * 100 / started,
            _ => 0,
        }
    }
}

async fn monitor_page(
    state: &AppState,
    req: &HttpRequest,
    nav: Nav,
    study: Study,
) -> Result<MonitorPage, AppError> {
    let s = study.clone();
    let inputs = state.monitor_inputs.clone();
    let (monitor, evidence) = state
        .db(move |conn| {
            let m = monitor::load(conn, &s)?;
            Ok((m, app::evidence::monitor_counts(conn, &s, &inputs)?))
        })
        .await?;
    let base = crate::web::request::public_base(
        req,
        &state.settings.trusted_proxies,
        state.settings.public_url.as_deref(),
    );
    let participant_url = format!("{base}/s/{}", study.slug);
    let prolific_url = format!(
        "{participant_url}?{}={{{{%PROLIFIC_PID%}}}}&{}={{{{%STUDY_ID%}}}}&{}={{{{%SESSION_ID%}}}}",
        study.pid_param, study.study_id_param, study.session_id_param
    );
    let pilot_url = format!("{participant_url}/pilot/{}", state.pilot_token(study.id));
    Ok(MonitorPage {
        nav,
        pilot_url,
        checklist: study.launch_checklist(app::studies::today()),
        study,
        monitor,
        evidence,
        participant_url,
        prolific_url,
        error: None,
    })
}

pub async fn monitor(
    state: web::Data<AppState>,
    req: HttpRequest,
    user: Researcher,
    slug: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let study = load_study(&state, &slug).await?;
    render(monitor_page(&state, &req, Nav::of(user.session()), study).await?)
}

#[derive(Template)]
#[template(path = "admin/delete_study.html")]
struct DeletePage {
    nav: Nav,
    study: Study,
    error: Option<&'static str>,
}

pub async fn delete_form(
    state: web::Data<AppState>,
    admin: Admin,
    slug: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let study = load_study(&state, &slug).await?;
    render(DeletePage {
        nav: Nav::of(admin.session()),
        study,
        error: None,
    })
}

pub async fn delete(
    state: web::Data<AppState>,
    admin: Admin,
    slug: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_session(&admin.session().csrf_token, &form)?;
    let study = load_study(&state, &slug).await?;
    if field(&form, "confirm").map(str::trim) != Some(study.slug.as_str()) {
        return render_status(
            DeletePage {
                nav: Nav::of(admin.session()),
                study,
                error: Some("Type the study's slug exactly to confirm."),
            },
            StatusCode::UNPROCESSABLE_ENTITY,
        );
    }
    let who = actor(admin.session());
    let slug = study.slug.clone();
    state
        .db(move |conn| Ok(app::studies::delete(conn, study.id, &study.slug, &who)))
        .await??;
    state.forget_study(&slug);
    Ok(see_other("/admin"))
}

/// The participant deletion page: the participant asked for and, after the POST, the result.
#[derive(Template)]
#[template(path = "admin/delete_participant.html")]
struct DeleteParticipantPage {
    nav: Nav,
    study: Study,
    /// What was typed (an export id or a Prolific id).
    which: String,
    found: Option<ParticipantBrief>,
    deleted: bool,
}

/// What the deletion form sent: the participant, by the exports' id or the Prolific id.
fn which_participant(fields: &[(String, String)]) -> Result<String, AppError> {
    let which = field(fields, "participant").unwrap_or("").trim();
    if which.is_empty() || which.len() > 64 {
        return Err(AppError::BadRequest(
            "Give the participant id of the exports or a Prolific id (at most 64 characters)."
                .into(),
        ));
    }
    Ok(which.to_owned())
}

/// The page (404 when nobody matched, so scripts see it too).
fn participant_page(page: DeleteParticipantPage) -> Result<HttpResponse, AppError> {
    let status = if page.found.is_some() {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    };
    render_status(page, status)
}

/// Shows who a deletion would remove (status, situation, started), to confirm; or that the
/// study has no such participant.
pub async fn confirm_delete_participant(
    state: web::Data<AppState>,
    admin: Admin,
    slug: web::Path<String>,
    query: web::Query<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    let which = which_participant(&query)?;
    let study = load_study(&state, &slug).await?;
    let (id, w) = (study.id, which.clone());
    let found = state
        .db(move |conn| {
            Ok(crate::store::participants::find_by_export_or_pid(
                conn, id, &w,
            )?)
        })
        .await?;
    participant_page(DeleteParticipantPage {
        nav: Nav::of(admin.session()),
        study,
        which,
        found,
        deleted: false,
    })
}

/// Deletes one participant's data, found by the exports' participant id or the Prolific id,
/// and says whose.
pub async fn delete_participant(
    state: web::Data<AppState>,
    admin: Admin,
    slug: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_session(&admin.session().csrf_token, &form)?;
    let which = which_participant(&form)?;
    let study = load_study(&state, &slug).await?;
    let who = actor(admin.session());
    let (id, slug2, w) = (study.id, study.slug.clone(), which.clone());
    let found = state
        .db(move |conn| Ok(app::studies::delete_participant(conn, id, &slug2, &w, &who)))
        .await??;
    participant_page(DeleteParticipantPage {
        nav: Nav::of(admin.session()),
        study,
        which,
        deleted: found.is_some(),
        found,
    })
}

/// `POST /admin/studies/{study}/pilots/delete`: deletes the study's pilot participants
/// (audited), back to the study page.
pub async fn delete_pilots(
    state: web::Data<AppState>,
    admin: Admin,
    slug: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_session(&admin.session().csrf_token, &form)?;
    let study = load_study(&state, &slug).await?;
    let who = actor(admin.session());
    let (id, slug2) = (study.id, study.slug.clone());
    state
        .db(move |conn| Ok(app::studies::delete_pilots(conn, id, &slug2, &who)))
        .await??;
    state.forget_study(&study.slug);
    Ok(see_other(&format!("/admin/studies/{}", study.slug)))
}
