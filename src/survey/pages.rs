//! One GET and one POST handler for the pages of the state machine, and withdrawal. A request
//! for any page but the participant's current one is redirected there; a POST is stored in one
//! transaction that first checks the participant is still on that page.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;

use super::context::{SurveyContext, prolific_completion_url};
use crate::app::survey::{self, PageForm, Posted};
use crate::domain::freetext;
use crate::domain::instrument::Instrument;
use crate::domain::protocol;
use crate::domain::survey::{
    ATTENTION_CHECK, FormErrors, Outcome, Page, UNANSWERED, demographic_field, reminder,
};
use crate::domain::survey::{ParticipantStatus, SessionKey};
use crate::store::participants::{self, Participant};
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::i18n::Tr;
use crate::web::render::{render, render_status, see_other};
use crate::web::state::AppState;

/// What every survey page shows around its content.
pub struct Frame {
    pub study_title: String,
    pub slug: String,
    pub page: &'static str,
    pub step: usize,
    pub steps: usize,
    pub csrf: String,
    /// Show the "withdraw" link (not before consent, where declining is the way out; not on
    /// final pages, nor to a browser that resumed the participant by Prolific id).
    pub can_withdraw: bool,
    /// Show the progress bar: not on the pages of a survey that ended unfinished (withdrawn,
    /// declined, screened out), where a full bar would say it was completed.
    pub show_progress: bool,
    /// The page's messages, in the participant's language.
    pub tr: Tr,
}

impl Frame {
    fn new(ctx: &SurveyContext, page: Page, csrf: &str) -> Frame {
        let (step, steps) = page.step();
        Frame {
            study_title: ctx.study.title_in(ctx.tr.language()).to_owned(),
            slug: ctx.study.slug.clone(),
            page: page.as_str(),
            step,
            steps,
            csrf: csrf.to_owned(),
            can_withdraw: page != Page::Consent
                && !page.is_terminal()
                && ctx.key.as_ref().is_some_and(SessionKey::may_withdraw),
            show_progress: !matches!(page, Page::Withdrawn | Page::Ended),
            tr: ctx.tr.clone(),
        }
    }

    /// "Step 2 of 7" in the page's language.
    pub fn step_label(&self) -> String {
        self.tr.n2(
            "step-of",
            ("step", self.step as i64),
            ("steps", self.steps as i64),
        )
    }

    pub fn percent(&self) -> usize {
        (self.step * 100).checked_div(self.steps).unwrap_or(0)
    }
}

fn paragraphs(text: &str) -> Vec<String> {
    text.split("\n\n")
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

#[derive(Template)]
#[template(path = "survey/consent.html")]
pub(super) struct ConsentPage {
    frame: Frame,
    paragraphs: Vec<String>,
    /// For a browser without a participant: what its answer will make one of.
    visit: Option<Visit>,
    /// The language switcher (empty for a study in one language, and once consent is given).
    languages: Vec<LangLink>,
}

/// One link of the consent page's language switcher.
pub struct LangLink {
    pub tag: String,
    /// The language's own name ("Deutsch").
    pub name: String,
    pub url: String,
    pub current: bool,
}

/// The hidden fields of a consent form shown to a browser without a participant: a random
/// one-off id for this form (the same id sent twice makes one participant, not two) and the
/// Prolific ids the link carried (kept in the form, not a cookie, so two tabs opened with two
/// different ids each keep their own).
pub(super) struct Visit {
    pub id: String,
    pub prolific_pid: Option<String>,
    pub prolific_study_id: Option<String>,
    pub prolific_session_id: Option<String>,
    /// The study's pilot token, when the page came through its pilot link.
    pub pilot: Option<String>,
    /// The door's MAC of this visit and its verified Prolific id (`survey::door`), when the
    /// study requires Prolific's token.
    pub door: Option<String>,
}

/// The consent page, for a browser with no participant yet.
pub(super) fn visitor_consent(
    ctx: &SurveyContext,
    csrf: &str,
    visit: Visit,
    languages: Vec<LangLink>,
) -> ConsentPage {
    ConsentPage {
        frame: Frame::new(ctx, Page::Consent, csrf),
        paragraphs: paragraphs(ctx.study.consent_in(ctx.tr.language())),
        visit: Some(visit),
        languages,
    }
}

pub struct Choice {
    pub value: String,
    pub label: String,
    pub checked: bool,
}

pub struct FieldView {
    pub name: String,
    pub label: String,
    pub options: Vec<Choice>,
    pub error: Option<String>,
}

#[derive(Template)]
#[template(path = "survey/demographics.html")]
struct DemographicsPage {
    frame: Frame,
    fields: Vec<FieldView>,
    has_errors: bool,
}

pub struct ItemView {
    pub number: u32,
    pub position: usize,
    pub text: String,
    pub options: Vec<Choice>,
    pub error: Option<String>,
}

#[derive(Template)]
#[template(path = "survey/questionnaire.html")]
struct QuestionnairePage {
    frame: Frame,
    heading: String,
    /// Items with an error (the summary's plural).
    open_items: i64,
    instructions: String,
    items: Vec<ItemView>,
    errors: Vec<(String, String)>,
    /// On the second questionnaire: the situation in one line, and the whole text when that
    /// line had to cut it.
    reminder: Option<(String, Option<String>)>,
}

impl QuestionnairePage {
    /// The error summary's heading, its plural by the number of items with an error.
    fn errors_heading(&self) -> String {
        self.frame.tr.n("errors-heading", "count", self.open_items)
    }
}

/// How long the one-line reminder of the situation may be (about a line at 1280 px, two on a
/// phone).
const REMINDER_CHARS: usize = 110;

fn situation_reminder(text: Option<&str>) -> Option<(String, Option<String>)> {
    let text = text?;
    let (line, cut) = reminder(text, REMINDER_CHARS);
    Some((line, cut.then(|| text.to_owned())))
}

#[derive(Template)]
#[template(path = "survey/situation.html")]
struct SituationPage {
    frame: Frame,
    heading: String,
    intro: String,
    text: String,
    min_seconds: i32,
    wait_note: String,
    /// The study's free-text field (#18), if it has one.
    free_text: Option<TextFieldView>,
}

/// The situation page's free-text field as shown: the prompt (its label), the limit (the
/// hint the field is described by), and what was typed when the page comes back refused.
pub struct TextFieldView {
    pub name: &'static str,
    pub prompt: String,
    pub required: bool,
    pub max_chars: u32,
    pub hint: String,
    pub value: String,
    pub error: Option<String>,
}

/// The situation page: its text and, when the study has one, the free-text field with what was
/// typed (`submitted`) and the message of `errors` (a refused submit).
fn situation_page(
    ctx: &SurveyContext,
    csrf: &str,
    text: String,
    field: Option<&survey::TextField>,
    submitted: &[(String, String)],
    errors: &FormErrors,
) -> SituationPage {
    let free_text = field.map(|f| {
        let value = submitted
            .iter()
            .find(|(k, _)| k == freetext::HUMAN_FIELD)
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let error = errors.items.get(&survey::TEXT_ERROR).map(|id| {
            if id == survey::TEXT_TOO_LONG {
                // As the server counted it: line breaks once, whatever the browser sent.
                let chars = value.replace("\r\n", "\n").trim().chars().count();
                ctx.tr.n2(
                    "free-text-too-long",
                    ("chars", chars as i64),
                    ("max", i64::from(f.max_chars)),
                )
            } else {
                ctx.tr.t(id)
            }
        });
        TextFieldView {
            name: freetext::HUMAN_FIELD,
            prompt: f.prompt.clone(),
            required: f.required,
            max_chars: f.max_chars,
            hint: ctx.tr.n(
                if f.required {
                    "free-text-hint-required"
                } else {
                    "free-text-hint-optional"
                },
                "max",
                i64::from(f.max_chars),
            ),
            value,
            error,
        }
    });
    SituationPage {
        frame: Frame::new(ctx, Page::Situation, csrf),
        heading: ctx.tr.t("situation-heading"),
        intro: ctx.tr.t("situation-intro"),
        text,
        min_seconds: ctx.study.min_situation_seconds,
        wait_note: ctx.tr.n(
            "situation-wait",
            "seconds",
            i64::from(ctx.study.min_situation_seconds),
        ),
        free_text,
    }
}

#[derive(Template)]
#[template(path = "survey/check.html")]
struct CheckPage {
    frame: Frame,
    question: String,
    options: Vec<Choice>,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "survey/debrief.html")]
struct DebriefPage {
    frame: Frame,
    paragraphs: Vec<String>,
}

#[derive(Template)]
#[template(path = "survey/done.html")]
struct DonePage {
    frame: Frame,
    heading: String,
    message: String,
    code: Option<String>,
    prolific_url: Option<String>,
}

#[derive(Template)]
#[template(path = "survey/withdraw.html")]
struct WithdrawPage {
    frame: Frame,
    back: String,
}

/// A form error in the page's language: "choose an answer" is the catalogues'; the rest
/// (answers out of range, fields twice: forms our pages never send) stays as the parser said.
fn item_error(tr: &Tr, error: &str) -> String {
    if error == UNANSWERED {
        tr.t("error-choose")
    } else {
        error.to_owned()
    }
}

fn choices(instrument: &Instrument, number: u32, chosen: Option<i32>) -> Vec<Choice> {
    let own = instrument
        .item(number)
        .map(|i| &i.options)
        .filter(|o| !o.is_empty());
    match own {
        Some(options) => options
            .iter()
            .map(|o| Choice {
                value: o.value.to_string(),
                label: o.text.clone(),
                checked: chosen == Some(o.value),
            })
            .collect(),
        None => (instrument.min..=instrument.max)
            .map(|v| Choice {
                value: v.to_string(),
                label: protocol::answer_label(instrument, v),
                checked: chosen == Some(v),
            })
            .collect(),
    }
}

fn instructions(instrument: &Instrument, before: bool) -> String {
    protocol::questionnaire_instructions(instrument, before)
}

fn questionnaire(
    ctx: &SurveyContext,
    p: &Participant,
    page: Page,
    csrf: &str,
    submitted: &[(String, String)],
    errors: &FormErrors,
    situation: Option<&str>,
) -> QuestionnairePage {
    let inst = &ctx.instrument;
    let order = p.order(page, inst.items.len());
    let items = order
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let chosen = submitted
                .iter()
                .find(|(k, _)| *k == format!("item-{n}"))
                .and_then(|(_, v)| v.parse::<i32>().ok());
            let item = inst.item(*n);
            // An item that carries its own options (BDI) is those options: they are the radio
            // labels, so the legend names the group instead of repeating them.
            let text = match item {
                Some(it) if !it.options.is_empty() => ctx.tr.t("choose-one-statement"),
                Some(it) => it.text.clone(),
                None => String::new(),
            };
            ItemView {
                number: *n,
                position: i + 1,
                text,
                options: choices(inst, *n, chosen),
                error: errors.items.get(n).map(|e| item_error(&ctx.tr, e)),
            }
        })
        .collect::<Vec<_>>();
    let mut summary: Vec<(String, String)> = items
        .iter()
        .filter_map(|i| {
            i.error.as_ref().map(|e| {
                (
                    format!("item-{}", i.number),
                    format!("{}. {}: {e}", i.position, i.text),
                )
            })
        })
        .collect();
    summary.extend(errors.general.iter().map(|g| (String::new(), g.clone())));
    let before = page == Page::PanasBefore;
    QuestionnairePage {
        frame: Frame::new(ctx, page, csrf),
        heading: ctx.tr.t(if before {
            "panas-before-heading"
        } else {
            "panas-after-heading"
        }),
        open_items: items.iter().filter(|i| i.error.is_some()).count() as i64,
        instructions: instructions(inst, before),
        items,
        errors: summary,
        reminder: situation_reminder(situation).filter(|_| !before),
    }
}

fn demographics(
    ctx: &SurveyContext,
    csrf: &str,
    submitted: &[(String, String)],
    errors: &FormErrors,
) -> DemographicsPage {
    let year = survey::this_year();
    let fields = ctx
        .study
        .demographic_fields()
        .iter()
        .filter_map(|n| demographic_field(n, year))
        .enumerate()
        .map(|(i, d)| {
            let chosen = submitted
                .iter()
                .find(|(k, _)| k == d.name)
                .map(|(_, v)| v.as_str());
            FieldView {
                name: d.name.to_owned(),
                label: ctx.tr.label("field", d.name),
                options: d
                    .options
                    .iter()
                    .map(|o| Choice {
                        value: o.clone(),
                        label: ctx.tr.label("option", o),
                        checked: chosen == Some(o.as_str()),
                    })
                    .collect(),
                error: errors
                    .items
                    .get(&(i as u32))
                    .map(|e| item_error(&ctx.tr, e)),
            }
        })
        .collect();
    DemographicsPage {
        frame: Frame::new(ctx, Page::Demographics, csrf),
        fields,
        has_errors: !errors.is_empty(),
    }
}

fn check_page(
    ctx: &SurveyContext,
    csrf: &str,
    chosen: Option<&str>,
    error: Option<String>,
) -> CheckPage {
    CheckPage {
        frame: Frame::new(ctx, Page::Check, csrf),
        question: ctx.tr.t("check-question"),
        options: ATTENTION_CHECK
            .options
            .iter()
            .map(|o| Choice {
                value: (*o).to_owned(),
                label: ctx.tr.label("check-option", o),
                checked: chosen == Some(*o),
            })
            .collect(),
        error,
    }
}

fn final_page(ctx: &SurveyContext, p: &Participant, page: Page, csrf: &str) -> DonePage {
    let prolific = p.prolific_pid.is_some();
    // The catalogue ids of the heading and the message (`final-…` in locales/*.ftl).
    let (outcome, heading, message) = match (page, p.status) {
        (Page::Withdrawn, _) => (None, "final-withdrawn-heading", "final-withdrawn-message"),
        (_, ParticipantStatus::Completed) => (
            Some(Outcome::Completed),
            "final-completed-heading",
            "final-completed-message",
        ),
        (_, ParticipantStatus::NoConsent) => (
            Some(Outcome::NoConsent),
            "final-no-consent-heading",
            "final-no-consent-message",
        ),
        (_, ParticipantStatus::FailedCheck) => (
            Some(Outcome::FailedAttentionCheck),
            "final-failed-check-heading",
            "final-failed-check-message",
        ),
        _ => (
            Some(Outcome::ScreenedOut),
            "final-full-heading",
            "final-full-message",
        ),
    };
    let (heading, message) = (ctx.tr.t(heading), ctx.tr.t(message));
    let code = outcome
        .and_then(|o| ctx.study.code_for(o))
        .map(str::to_owned);
    DonePage {
        frame: Frame::new(ctx, page, csrf),
        heading,
        message,
        prolific_url: code
            .as_deref()
            .filter(|_| prolific)
            .map(prolific_completion_url),
        code,
    }
}

/// The page to send a participant to after a page moved (or ended) their session: Prolific's
/// completion URL once the final write is committed, else our own page.
pub(super) fn after_submit(ctx: &SurveyContext, p: &Participant) -> String {
    let page = p.page();
    if page.is_terminal() && p.prolific_pid.is_some() {
        if let Some(code) = p.status.outcome().and_then(|o| ctx.study.code_for(o)) {
            return prolific_completion_url(code);
        }
    }
    ctx.page_url(page)
}

pub(super) fn with_csrf(
    mut resp: HttpResponse,
    req: &HttpRequest,
    token: &str,
    new: bool,
) -> HttpResponse {
    if new {
        let _ = resp.add_cookie(&csrf::cookie(req, token));
    }
    resp
}

fn render_page(
    ctx: &SurveyContext,
    p: &Participant,
    page: Page,
    csrf: &str,
    text: Option<&str>,
) -> Result<HttpResponse, AppError> {
    let none = FormErrors::default();
    match page {
        Page::Consent => render(ConsentPage {
            frame: Frame::new(ctx, page, csrf),
            paragraphs: paragraphs(ctx.study.consent_in(ctx.tr.language())),
            visit: None,
            languages: Vec::new(),
        }),
        Page::Demographics => render(demographics(ctx, csrf, &[], &none)),
        Page::PanasBefore | Page::PanasAfter => {
            render(questionnaire(ctx, p, page, csrf, &[], &none, text))
        }
        Page::Situation => Err(AppError::internal(
            "situation page rendered without its text",
        )),
        Page::Check => render(check_page(ctx, csrf, None, None)),
        Page::Debrief => render(DebriefPage {
            frame: Frame::new(ctx, page, csrf),
            paragraphs: paragraphs(ctx.study.debrief_in(ctx.tr.language())),
        }),
        Page::Done | Page::Ended | Page::Withdrawn => render(final_page(ctx, p, page, csrf)),
    }
}

/// The text of the participant's situation.
async fn situation_text(state: &AppState, p: &Participant) -> Result<Option<String>, AppError> {
    let p = p.clone();
    state
        .survey_db(move |conn| Ok(participants::situation_of(conn, &p)?.map(|(_, text)| text)))
        .await
}

async fn participant_or_entry(ctx: &SurveyContext) -> Result<Participant, HttpResponse> {
    match &ctx.participant {
        Some(p) => Ok(p.clone()),
        None => Err(see_other(&ctx.entry_url())),
    }
}

pub async fn get(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, AppError> {
    let (slug, page_name) = path.into_inner();
    show(&state, &req, &slug, &page_name).await
}

/// A page of the participant this browser's cookie names (or a redirect to their page).
pub(super) async fn show(
    state: &AppState,
    req: &HttpRequest,
    slug: &str,
    page_name: &str,
) -> Result<HttpResponse, AppError> {
    let (mut ctx, key) = SurveyContext::start(state, req, slug).await?;
    let Some(key) = key else {
        return Ok(see_other(&ctx.entry_url()));
    };
    // One trip to the database: the participant, the "shown" timestamp and, on the situation
    // page and the second questionnaire (which repeats it in one line), its text.
    let requested = Page::parse(page_name);
    let study = ctx.study.clone();
    let Some((p, text, field)) = state
        .survey_db(move |conn| {
            let Some((p, text)) = participants::open_page(conn, study.id, &key, requested)? else {
                return Ok(None);
            };
            let field = match p.page() {
                Page::Situation => survey::text_field(conn, &study)?,
                _ => None,
            };
            Ok(Some((p, text, field)))
        })
        .await?
    else {
        return Ok(see_other(&ctx.entry_url()));
    };
    let current = p.page();
    if requested != Some(current) {
        return Ok(see_other(&ctx.page_url(current)));
    }
    ctx.adopt(state, &p).await?;
    let (csrf, new) = csrf::token(req);
    let resp = if current == Page::Situation {
        let text = text.ok_or_else(|| {
            AppError::internal("participant without a situation on the situation page")
        })?;
        let none = FormErrors::default();
        render(situation_page(
            &ctx,
            &csrf,
            text,
            field.as_ref(),
            &[],
            &none,
        ))?
    } else {
        render_page(&ctx, &p, current, &csrf, text.as_deref())?
    };
    Ok(with_csrf(resp, req, &csrf, new))
}

pub async fn post(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    let (slug, page_name) = path.into_inner();
    let fields = form.into_inner();
    csrf::check_double_submit(&req, &fields)?;
    submit(&state, &req, &slug, &page_name, fields).await
}

/// A page's form of the participant this browser's cookie names (its CSRF token checked).
pub(super) async fn submit(
    state: &AppState,
    req: &HttpRequest,
    slug: &str,
    page_name: &str,
    fields: Vec<(String, String)>,
) -> Result<HttpResponse, AppError> {
    let csrf = fields
        .iter()
        .find(|(k, _)| k == csrf::FIELD)
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let (mut ctx, key) = SurveyContext::start(state, req, slug).await?;
    let Some(key) = key else {
        return Ok(see_other(&ctx.entry_url()));
    };
    let (study, instrument) = (ctx.study.clone(), ctx.instrument.clone());
    let requested = Page::parse(page_name);
    // Committed before any redirect is sent: an error here becomes an error page, never a
    // completion redirect.
    let form = PageForm {
        key,
        page: requested,
        fields,
    };
    let posted = state
        .survey_db(move |conn| survey::submit_page(conn, &study, &instrument, form, &[csrf::FIELD]))
        .await?;
    match posted {
        Posted::NoParticipant => Ok(see_other(&ctx.entry_url())),
        Posted::Moved(p) => Ok(see_other(&after_submit(&ctx, &p))),
        Posted::BadRequest(m) => Err(AppError::BadRequest(m)),
        Posted::Invalid(p, fields, e) => {
            ctx.adopt(state, &p).await?;
            match p.page() {
                Page::Demographics => render_status(
                    demographics(&ctx, &csrf, &fields, &e),
                    StatusCode::UNPROCESSABLE_ENTITY,
                ),
                current @ (Page::PanasBefore | Page::PanasAfter) => {
                    let text = match current {
                        Page::PanasAfter => situation_text(state, &p).await?,
                        _ => None,
                    };
                    render_status(
                        questionnaire(&ctx, &p, current, &csrf, &fields, &e, text.as_deref()),
                        StatusCode::UNPROCESSABLE_ENTITY,
                    )
                }
                // The free text refused (missing or too long): the page again with it as typed.
                Page::Situation => {
                    let study = ctx.study.clone();
                    let p2 = p.clone();
                    let (text, field) = state
                        .survey_db(move |conn| {
                            let text = participants::situation_of(conn, &p2)?.map(|(_, t)| t);
                            Ok((text, survey::text_field(conn, &study)?))
                        })
                        .await?;
                    let text = text.ok_or_else(|| {
                        AppError::internal("participant without a situation on the situation page")
                    })?;
                    render_status(
                        situation_page(&ctx, &csrf, text, field.as_ref(), &fields, &e),
                        StatusCode::UNPROCESSABLE_ENTITY,
                    )
                }
                _ => render_status(
                    check_page(&ctx, &csrf, None, Some(ctx.tr.t("error-choose"))),
                    StatusCode::UNPROCESSABLE_ENTITY,
                ),
            }
        }
    }
}

/// Withdrawing deletes every answer, so only the browser that started the survey may: one that
/// resumed it by Prolific id proves only that it knows the id (issue #14, point 5).
fn refuse_resumed(ctx: &SurveyContext) -> Result<(), AppError> {
    match &ctx.key {
        Some(key) if key.may_withdraw() => Ok(()),
        _ => Err(AppError::Forbidden(
            "You can withdraw only on the device where you started this study. Please withdraw \
             there, or contact the researchers through Prolific."
                .into(),
        )),
    }
}

/// `GET /s/{study}/withdraw`: asks for confirmation (withdrawing deletes the answers).
pub async fn withdraw_form(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let ctx = SurveyContext::load(&state, &req, &slug).await?;
    let p = match participant_or_entry(&ctx).await {
        Ok(p) => p,
        Err(redirect) => return Ok(redirect),
    };
    if p.page().is_terminal() {
        return Ok(see_other(&ctx.page_url(p.page())));
    }
    refuse_resumed(&ctx)?;
    let (csrf, new) = csrf::token(&req);
    let resp = render(WithdrawPage {
        back: ctx.page_url(p.page()),
        frame: Frame::new(&ctx, p.page(), &csrf),
    })?;
    Ok(with_csrf(resp, &req, &csrf, new))
}

/// `POST /s/{study}/withdraw`: deletes the participant's answers.
pub async fn withdraw(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_double_submit(&req, &form)?;
    let ctx = SurveyContext::load(&state, &req, &slug).await?;
    let p = match participant_or_entry(&ctx).await {
        Ok(p) => p,
        Err(redirect) => return Ok(redirect),
    };
    refuse_resumed(&ctx)?;
    if matches!(
        p.status,
        ParticipantStatus::Active | ParticipantStatus::Completed | ParticipantStatus::FailedCheck
    ) {
        let id = p.id;
        state
            .survey_db(move |conn| participants::withdraw(conn, id))
            .await?;
    }
    Ok(see_other(&ctx.page_url(Page::Withdrawn)))
}
